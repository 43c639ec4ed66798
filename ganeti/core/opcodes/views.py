"""Typed, read-only views of opcodes: the class of every opcode, ``VIEWS`` and
:func:`view`.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).  Logical units read their opcode
through these views (``self.op.node_name``); job files and query answers
keep the submitted dict.  The classes are in ``views_base`` and one
``views_<part>`` module per part of the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes.views_backup import (
    OpBackupExport,
    OpBackupPrepare,
    OpBackupQuery,
    OpBackupRemove,
)
from ganeti.core.opcodes.views_base import OpView
from ganeti.core.opcodes.views_core import (
    OpClusterActivateMasterIp,
    OpClusterDeactivateMasterIp,
    OpClusterQuery,
    OpClusterRedistConf,
    OpClusterSetParams,
    OpClusterVerify,
    OpClusterVerifyConfig,
    OpClusterVerifyDisks,
    OpClusterVerifyGroup,
    OpGroupAdd,
    OpGroupAssignNodes,
    OpGroupRemove,
    OpGroupRename,
    OpGroupSetParams,
    OpGroupVerifyDisks,
    OpNodeAdd,
    OpNodeRemove,
    OpNodeSetParams,
    OpOobCommand,
    OpQuery,
    OpQueryFields,
    OpTagsDel,
    OpTagsGet,
    OpTagsSearch,
    OpTagsSet,
    OpTestAllocator,
    OpTestDelay,
    OpTestJqueue,
    OpTestOsParams,
)
from ganeti.core.opcodes.views_evacuate import (
    OpGroupEvacuate,
    OpInstanceChangeGroup,
    OpInstanceMove,
    OpNodeEvacuate,
)
from ganeti.core.opcodes.views_instance import (
    OpInstanceActivateDisks,
    OpInstanceConsole,
    OpInstanceCreate,
    OpInstanceDeactivateDisks,
    OpInstanceFailover,
    OpInstanceGrowDisk,
    OpInstanceMigrate,
    OpInstanceMultiAlloc,
    OpInstanceQueryData,
    OpInstanceReboot,
    OpInstanceRecreateDisks,
    OpInstanceReinstall,
    OpInstanceRemove,
    OpInstanceRename,
    OpInstanceReplaceDisks,
    OpInstanceSetParams,
    OpInstanceShutdown,
    OpInstanceStartup,
    OpNodeMigrate,
)
from ganeti.core.opcodes.views_network import (
    OpNetworkAdd,
    OpNetworkConnect,
    OpNetworkDisconnect,
    OpNetworkRemove,
    OpNetworkSetParams,
)
from ganeti.core.opcodes.views_os import (
    OpExtStorageDiagnose,
    OpOsDiagnose,
)
from ganeti.core.opcodes.views_storage import (
    OpNodeModifyStorage,
    OpNodeQueryStorage,
    OpNodeQueryvols,
    OpRepairNodeStorage,
)

#: OP_ID -> view class, for every declared opcode.
VIEWS: dict[str, type[OpView]] = {
    "OP_BACKUP_EXPORT": OpBackupExport,
    "OP_BACKUP_PREPARE": OpBackupPrepare,
    "OP_BACKUP_QUERY": OpBackupQuery,
    "OP_BACKUP_REMOVE": OpBackupRemove,
    "OP_CLUSTER_ACTIVATE_MASTER_IP": OpClusterActivateMasterIp,
    "OP_CLUSTER_DEACTIVATE_MASTER_IP": OpClusterDeactivateMasterIp,
    "OP_CLUSTER_QUERY": OpClusterQuery,
    "OP_CLUSTER_REDIST_CONF": OpClusterRedistConf,
    "OP_CLUSTER_SET_PARAMS": OpClusterSetParams,
    "OP_CLUSTER_VERIFY": OpClusterVerify,
    "OP_CLUSTER_VERIFY_CONFIG": OpClusterVerifyConfig,
    "OP_CLUSTER_VERIFY_DISKS": OpClusterVerifyDisks,
    "OP_CLUSTER_VERIFY_GROUP": OpClusterVerifyGroup,
    "OP_EXT_STORAGE_DIAGNOSE": OpExtStorageDiagnose,
    "OP_GROUP_ADD": OpGroupAdd,
    "OP_GROUP_ASSIGN_NODES": OpGroupAssignNodes,
    "OP_GROUP_EVACUATE": OpGroupEvacuate,
    "OP_GROUP_REMOVE": OpGroupRemove,
    "OP_GROUP_RENAME": OpGroupRename,
    "OP_GROUP_SET_PARAMS": OpGroupSetParams,
    "OP_GROUP_VERIFY_DISKS": OpGroupVerifyDisks,
    "OP_INSTANCE_ACTIVATE_DISKS": OpInstanceActivateDisks,
    "OP_INSTANCE_CHANGE_GROUP": OpInstanceChangeGroup,
    "OP_INSTANCE_CONSOLE": OpInstanceConsole,
    "OP_INSTANCE_CREATE": OpInstanceCreate,
    "OP_INSTANCE_DEACTIVATE_DISKS": OpInstanceDeactivateDisks,
    "OP_INSTANCE_FAILOVER": OpInstanceFailover,
    "OP_INSTANCE_GROW_DISK": OpInstanceGrowDisk,
    "OP_INSTANCE_MIGRATE": OpInstanceMigrate,
    "OP_INSTANCE_MOVE": OpInstanceMove,
    "OP_INSTANCE_MULTI_ALLOC": OpInstanceMultiAlloc,
    "OP_INSTANCE_QUERY_DATA": OpInstanceQueryData,
    "OP_INSTANCE_REBOOT": OpInstanceReboot,
    "OP_INSTANCE_RECREATE_DISKS": OpInstanceRecreateDisks,
    "OP_INSTANCE_REINSTALL": OpInstanceReinstall,
    "OP_INSTANCE_REMOVE": OpInstanceRemove,
    "OP_INSTANCE_RENAME": OpInstanceRename,
    "OP_INSTANCE_REPLACE_DISKS": OpInstanceReplaceDisks,
    "OP_INSTANCE_SET_PARAMS": OpInstanceSetParams,
    "OP_INSTANCE_SHUTDOWN": OpInstanceShutdown,
    "OP_INSTANCE_STARTUP": OpInstanceStartup,
    "OP_NETWORK_ADD": OpNetworkAdd,
    "OP_NETWORK_CONNECT": OpNetworkConnect,
    "OP_NETWORK_DISCONNECT": OpNetworkDisconnect,
    "OP_NETWORK_REMOVE": OpNetworkRemove,
    "OP_NETWORK_SET_PARAMS": OpNetworkSetParams,
    "OP_NODE_ADD": OpNodeAdd,
    "OP_NODE_EVACUATE": OpNodeEvacuate,
    "OP_NODE_MIGRATE": OpNodeMigrate,
    "OP_NODE_MODIFY_STORAGE": OpNodeModifyStorage,
    "OP_NODE_QUERYVOLS": OpNodeQueryvols,
    "OP_NODE_QUERY_STORAGE": OpNodeQueryStorage,
    "OP_NODE_REMOVE": OpNodeRemove,
    "OP_NODE_SET_PARAMS": OpNodeSetParams,
    "OP_OOB_COMMAND": OpOobCommand,
    "OP_OS_DIAGNOSE": OpOsDiagnose,
    "OP_QUERY": OpQuery,
    "OP_QUERY_FIELDS": OpQueryFields,
    "OP_REPAIR_NODE_STORAGE": OpRepairNodeStorage,
    "OP_TAGS_DEL": OpTagsDel,
    "OP_TAGS_GET": OpTagsGet,
    "OP_TAGS_SEARCH": OpTagsSearch,
    "OP_TAGS_SET": OpTagsSet,
    "OP_TEST_ALLOCATOR": OpTestAllocator,
    "OP_TEST_DELAY": OpTestDelay,
    "OP_TEST_JQUEUE": OpTestJqueue,
    "OP_TEST_OS_PARAMS": OpTestOsParams,
}


def view(op: Mapping[str, Any]) -> OpView:
    """The typed view of ``op`` (a stored or run form, see ``opcodes.base``).

    Keys the view does not declare are ignored; a null given for a field
    that cannot be null takes the default (as validation does); a missing
    required parameter is an ``OpPrereqError``.  An unknown or missing
    ``OP_ID`` gives the common parameters only.
    """
    cls = VIEWS.get(str(op.get("OP_ID")), OpView)
    values: dict[str, Any] = {}
    for f in fields(cls):
        value = op.get(f.name)
        if value is None and (f.name not in op or f.name in cls.NOT_NULL):
            if f.name in cls.REQUIRED:
                raise OpPrereqError(f"Parameter '{cls.OP_ID}.{f.name}' is required but "
                                    "missing", ECODE_INVAL)
            continue
        values[f.name] = value
    return cls(**values)


__all__ = [
    "OpView",
    "VIEWS",
    "view",
    "OpBackupExport",
    "OpBackupPrepare",
    "OpBackupQuery",
    "OpBackupRemove",
    "OpClusterActivateMasterIp",
    "OpClusterDeactivateMasterIp",
    "OpClusterQuery",
    "OpClusterRedistConf",
    "OpClusterSetParams",
    "OpClusterVerify",
    "OpClusterVerifyConfig",
    "OpClusterVerifyDisks",
    "OpClusterVerifyGroup",
    "OpExtStorageDiagnose",
    "OpGroupAdd",
    "OpGroupAssignNodes",
    "OpGroupEvacuate",
    "OpGroupRemove",
    "OpGroupRename",
    "OpGroupSetParams",
    "OpGroupVerifyDisks",
    "OpInstanceActivateDisks",
    "OpInstanceChangeGroup",
    "OpInstanceConsole",
    "OpInstanceCreate",
    "OpInstanceDeactivateDisks",
    "OpInstanceFailover",
    "OpInstanceGrowDisk",
    "OpInstanceMigrate",
    "OpInstanceMove",
    "OpInstanceMultiAlloc",
    "OpInstanceQueryData",
    "OpInstanceReboot",
    "OpInstanceRecreateDisks",
    "OpInstanceReinstall",
    "OpInstanceRemove",
    "OpInstanceRename",
    "OpInstanceReplaceDisks",
    "OpInstanceSetParams",
    "OpInstanceShutdown",
    "OpInstanceStartup",
    "OpNetworkAdd",
    "OpNetworkConnect",
    "OpNetworkDisconnect",
    "OpNetworkRemove",
    "OpNetworkSetParams",
    "OpNodeAdd",
    "OpNodeEvacuate",
    "OpNodeMigrate",
    "OpNodeModifyStorage",
    "OpNodeQueryStorage",
    "OpNodeQueryvols",
    "OpNodeRemove",
    "OpNodeSetParams",
    "OpOobCommand",
    "OpOsDiagnose",
    "OpQuery",
    "OpQueryFields",
    "OpRepairNodeStorage",
    "OpTagsDel",
    "OpTagsGet",
    "OpTagsSearch",
    "OpTagsSet",
    "OpTestAllocator",
    "OpTestDelay",
    "OpTestJqueue",
    "OpTestOsParams",
]
