"""Block devices on a node: the disks of instances, as objects with children.

:mod:`.device` holds the base class :class:`~.device.BlockDevice` (create,
attach, assemble, open, close, shutdown, remove, grow, rename, sync status,
dimensions) and :class:`~.device.SyncStatus`; :mod:`.files` (``file``,
``sharedfile``), :mod:`.lvm` (``plain``) and :mod:`.blockdev` (adopted devices)
each hold one device class and the work behind it; :mod:`.devices` is the
table from device type to class and the walks over a disk's device tree.
:mod:`.paths` says where a disk lives on the node, :mod:`.convert` copies a
disk's data to another, :mod:`.image` writes an OS image onto one,
:mod:`.storage` serves the storage units.  The RPC
handlers are in :mod:`ganeti.noded.backend.blockdev` and
:mod:`ganeti.noded.backend.storage`.
"""

__all__ = ["base", "blockdev", "convert", "device", "devices", "files", "image", "lvm",
           "paths", "storage"]
