"""The opcode -> logical unit table the processor dispatches from."""

from __future__ import annotations

from ganeti.master.lu import (
    backup,
    evacuate,
    instance,
    instance_migration,
    instance_move,
    instance_replace_disks,
    masterip,
    network,
    node_migrate,
    os_lu,
    storage,
)
from ganeti.master.lu.allocator_debug import LUTestAllocator
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.cluster import LUClusterQuery, LUClusterSetParams
from ganeti.master.lu.group import (
    LUGroupAdd,
    LUGroupAssignNodes,
    LUGroupRemove,
    LUGroupRename,
    LUGroupSetParams,
)
from ganeti.master.lu.instance_multi_alloc import LUInstanceMultiAlloc
from ganeti.master.lu.node import LUNodeAdd, LUNodeRemove
from ganeti.master.lu.node_modify import LUNodeSetParams
from ganeti.master.lu.oob import LUOobCommand
from ganeti.master.lu.query import LUQuery, LUQueryFields
from ganeti.master.lu.tags import LUTagsDel, LUTagsGet, LUTagsSearch, LUTagsSet
from ganeti.master.lu.test import LUTestDelay, LUTestJqueue, LUTestOsParams
from ganeti.master.lu.verify import (
    LUClusterRedistConf,
    LUClusterVerify,
    LUClusterVerifyConfig,
)
from ganeti.master.lu.verify_disks import LUClusterVerifyDisks, LUGroupVerifyDisks
from ganeti.master.lu.verify_group import LUClusterVerifyGroup

# (typed once: mypy joins classes and unpacked tuples in a display to "object")
_UNITS: tuple[type[LogicalUnit], ...] = (
    LUTestDelay, LUTestJqueue, LUTestOsParams, LUClusterQuery, LUClusterSetParams,
    LUTagsGet, LUTagsSet, LUTagsDel, LUTagsSearch, LUQuery, LUQueryFields, LUNodeAdd,
    LUNodeRemove, LUNodeSetParams,
    LUGroupAdd, LUGroupRemove, LUGroupRename, LUGroupSetParams, LUGroupAssignNodes,
    LUClusterRedistConf, LUClusterVerify, LUClusterVerifyConfig, LUClusterVerifyGroup,
    LUClusterVerifyDisks, LUGroupVerifyDisks, LUOobCommand, LUTestAllocator,
    LUInstanceMultiAlloc,
    *instance.LUS, *instance_migration.LUS, *node_migrate.LUS, *network.LUS, *os_lu.LUS,
    *storage.LUS, *backup.LUS, *masterip.LUS, *evacuate.LUS, *instance_move.LUS,
    *instance_replace_disks.LUS,
)
REGISTRY: dict[str, type[LogicalUnit]] = {lu.OP_ID: lu for lu in _UNITS}

__all__ = ["REGISTRY"]
