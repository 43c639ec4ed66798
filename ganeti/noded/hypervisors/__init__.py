"""Hypervisors on a node: what runs instances.

:mod:`.base` is the one interface every hypervisor implements (Ganeti's
``hv_base``), with ``HypervisorError``; :mod:`.registry` is the table from
Ganeti's hypervisor name to class and the hypervisors of one node daemon.
:mod:`.fake` is Ganeti's ``fake`` hypervisor (no virtual machine; the state
of each running instance is a file), used by tests, simulations and virtual
clusters without KVM.  :mod:`.kvm` is Ganeti's ``kvm`` hypervisor through
libvirt: :mod:`.virt` owns the libvirt connection, :mod:`.kvmcalls` holds the
calls run in its thread, :mod:`.kvmmigration` the migration steps,
:mod:`.domainxml` makes the domain documents, :mod:`.accel` decides between
KVM and QEMU's TCG.
"""

__all__ = ["accel", "base", "domainxml", "fake", "kvm", "kvmcalls", "kvmmigration",
           "registry", "virt"]
