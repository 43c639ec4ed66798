"""Storage types, storage-unit fields and operations (Ganeti's ``ST_*``/``SF_*``/``SO_*``).

A *storage unit* is a storage type plus the key that names the place on a node
(a volume group, a file storage directory): seed 001 "storage units".  The
node serves the lvm-pv, lvm-vg, file and sharedfile types
(:mod:`ganeti.noded.bdev.storage`); the master lists, modifies and repairs them
through ``OP_NODE_QUERY_STORAGE``, ``OP_NODE_MODIFY_STORAGE`` and
``OP_REPAIR_NODE_STORAGE``.
"""

from __future__ import annotations

from ganeti.core import constants

ST_BLOCK = "blockdev"
ST_DISKLESS = "diskless"
ST_EXT = "ext"
ST_FILE = "file"
ST_GLUSTER = "gluster"
ST_LVM_PV = "lvm-pv"
ST_LVM_VG = "lvm-vg"
ST_RADOS = "rados"
ST_SHARED_FILE = "sharedfile"
STORAGE_TYPES = frozenset({ST_BLOCK, ST_DISKLESS, ST_EXT, ST_FILE, ST_GLUSTER, ST_LVM_PV,
                           ST_LVM_VG, ST_RADOS, ST_SHARED_FILE})

SF_NAME = "name"
SF_NODE = "node"
SF_TYPE = "type"
SF_SIZE = "size"
SF_USED = "used"
SF_FREE = "free"
SF_ALLOCATABLE = "allocatable"
VALID_STORAGE_FIELDS = frozenset({SF_NAME, SF_NODE, SF_TYPE, SF_SIZE, SF_USED, SF_FREE,
                                  SF_ALLOCATABLE})
#: The fields a node computes (node and type are added by the master).
NODE_STORAGE_FIELDS = (SF_NAME, SF_SIZE, SF_USED, SF_FREE, SF_ALLOCATABLE)

SO_FIX_CONSISTENCY = "fix-consistency"
MODIFIABLE_STORAGE_FIELDS: dict[str, frozenset[str]] = {ST_LVM_PV: frozenset({SF_ALLOCATABLE})}
VALID_STORAGE_OPERATIONS: dict[str, frozenset[str]] = {
    ST_LVM_VG: frozenset({SO_FIX_CONSISTENCY})}

#: The storage type of each disk template (Ganeti's ``MAP_DISK_TEMPLATE_STORAGE_TYPE``).
DISK_TEMPLATE_STORAGE_TYPE: dict[str, str] = {
    constants.DT_BLOCK: ST_BLOCK, constants.DT_DISKLESS: ST_DISKLESS,
    constants.DT_DRBD8: ST_LVM_VG, constants.DT_EXT: ST_EXT, constants.DT_FILE: ST_FILE,
    constants.DT_GLUSTER: ST_GLUSTER, constants.DT_PLAIN: ST_LVM_VG,
    constants.DT_RBD: ST_RADOS, constants.DT_SHARED_FILE: ST_SHARED_FILE,
}

# Fields of OP_NODE_QUERYVOLS (``gnt-node volumes``).
VF_NODE = "node"
VF_PHYS = "phys"
VF_VG = "vg"
VF_NAME = "name"
VF_SIZE = "size"
VF_INSTANCE = "instance"
VOLUME_FIELDS = frozenset({VF_NODE, VF_PHYS, VF_VG, VF_NAME, VF_SIZE, VF_INSTANCE})

# Disk templates by kind.
DTS_FILEBASED = frozenset({constants.DT_FILE, constants.DT_SHARED_FILE, constants.DT_GLUSTER})
#: The templates whose disks this project can create (ext, rbd, gluster: not yet).
DTS_CREATABLE = frozenset({constants.DT_DISKLESS, constants.DT_FILE, constants.DT_SHARED_FILE,
                           constants.DT_PLAIN, constants.DT_BLOCK, constants.DT_DRBD8})
#: Templates whose disks may be adopted (existing volumes or devices).
DTS_MAY_ADOPT = frozenset({constants.DT_PLAIN, constants.DT_BLOCK})

# File drivers (Ganeti's FD_*) and the block device driver of adopted devices.
FD_LOOP = "loop"
FD_BLKTAP = "blktap"
FD_BLKTAP2 = "blktap2"
FD_DEFAULT = FD_LOOP
FILE_DRIVERS = frozenset({FD_LOOP, FD_BLKTAP, FD_BLKTAP2})
BLOCKDEV_DRIVER_MANUAL = "manual"
#: Where adoptable block devices live (Ganeti's ``ADOPTABLE_BLOCKDEV_ROOT``).
ADOPTABLE_BLOCKDEV_ROOT = "/dev/disk/"

# Local-disk status of blockdev_find (Ganeti's LDS_*).
LDS_OKAY = 1
LDS_SYNC = 2
LDS_UNKNOWN = 3
LDS_FAULTY = 4
#: How verify names a local-disk status (Ganeti's ``LDS_NAMES``).
LDS_NAMES = {LDS_OKAY: "ok", LDS_SYNC: "syncing", LDS_UNKNOWN: "unknown", LDS_FAULTY: "faulty"}


def storage_type_templates(storage_type: str) -> list[str]:
    """The disk templates that use ``storage_type``."""
    return sorted(t for t, st in DISK_TEMPLATE_STORAGE_TYPE.items() if st == storage_type)
