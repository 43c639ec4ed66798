"""Hypervisors on a node: what runs instances.

:mod:`.fake` is Ganeti's ``fake`` hypervisor (no virtual machine; the state
of each running instance is a file), used by tests, simulations and virtual
clusters without KVM.
"""

__all__ = ["fake"]
