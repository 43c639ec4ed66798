"""Hypervisors on a node: what runs instances.

:mod:`.fake` is Ganeti's ``fake`` hypervisor (no virtual machine; the state
of each running instance is a file), used by tests, simulations and virtual
clusters without KVM.  :mod:`.kvm` is Ganeti's ``kvm`` hypervisor through
libvirt: :mod:`.virt` owns the libvirt connection, :mod:`.domainxml` makes the
domain documents, :mod:`.accel` decides between KVM and QEMU's TCG.
"""

__all__ = ["accel", "domainxml", "fake", "kvm", "virt"]
