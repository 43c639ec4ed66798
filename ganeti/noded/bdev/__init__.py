"""Block devices on a node: the disks of instances, one module per disk template.

:mod:`.paths` says where a disk (as the master sends it, a dict) lives on the
node; :mod:`.files` serves the ``file`` and ``sharedfile`` templates, :mod:`.lvm`
the ``plain`` template, :mod:`.blockdev` adopted block devices; :mod:`.devices`
dispatches a disk dict to the right one.  The RPC handlers are in
:mod:`ganeti.noded.backend.blockdev` and :mod:`ganeti.noded.backend.storage`.
"""

__all__ = ["base", "blockdev", "devices", "files", "lvm", "paths", "storage"]
