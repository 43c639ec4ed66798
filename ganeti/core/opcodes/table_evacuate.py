"""Opcode declarations: evacuations and moves (node and group evacuation, change-group,
instance move).

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
Parameters, defaults and summaries are Ganeti 3.0's.  The evacuations'
result is Ganeti's job list, ``{"jobs": [[true, job id], ...]}``; a move's is
None.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req
from ganeti.core.opcodes.table import GROUP_NAME, NAME_LIST

#: Ganeti's node evacuation modes (``NODE_EVAC_MODES``).
NODE_EVAC_PRI, NODE_EVAC_SEC, NODE_EVAC_ALL = "primary-only", "secondary-only", "all"
NODE_EVAC_MODES = (NODE_EVAC_ALL, NODE_EVAC_PRI, NODE_EVAC_SEC)
EVAC_MODE = kinds.one_of(NODE_EVAC_MODES, "a node evacuation mode:")


def _name(value: Any) -> str | None:
    return str(value) if value else None


_EARLY_RELEASE = opt("early_release", kinds.BOOL,
                     "Whether to release locks as soon as possible", False)
_IALLOCATOR = opt("iallocator", kinds.maybe(kinds.STRING),
                  "Iallocator for deciding the target node for shared-storage instances")
_TARGET_GROUPS = opt("target_groups", kinds.maybe(NAME_LIST),
                     "Destination group names or UUIDs (defaults to \"all but current "
                     "group\")")
_INSTANCE = (
    req("instance_name", kinds.NON_EMPTY_STRING, "Name of the instance"),
    opt("instance_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "UUID of the instance"),
)

#: Evacuate a node's instances (Ganeti's OpNodeEvacuate): the jobs an allocator (or a
#: new secondary, ``remote_node``) gives, submitted by the master.
OP_NODE_EVACUATE = OpCode(
    "OP_NODE_EVACUATE", "Evacuate instances off a number of nodes",
    (
        _EARLY_RELEASE,
        req("node_name", kinds.NON_EMPTY_STRING, "A required node name (for single-node LUs)"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "A node UUID (for single-node LUs)"),
        opt("remote_node", kinds.maybe(kinds.STRING), "New secondary node"),
        opt("remote_node_uuid", kinds.maybe(kinds.STRING), "New secondary node UUID"),
        _IALLOCATOR,
        req("mode", EVAC_MODE, "Node evacuation mode"),
        opt("ignore_soft_errors", kinds.maybe(kinds.BOOL), "Ignore soft htools errors"),
    ),
    summary_param="node_name", summary_format=_name)

#: Move every instance of a group to other groups (Ganeti's OpGroupEvacuate).
OP_GROUP_EVACUATE = OpCode(
    "OP_GROUP_EVACUATE", "Evacuate a node group in the cluster",
    (
        req("group_name", GROUP_NAME, "Group name"),
        _EARLY_RELEASE, _IALLOCATOR, _TARGET_GROUPS,
        opt("sequential", kinds.BOOL, "Sequential job execution", False),
        opt("force_failover", kinds.BOOL,
            "Disallow migration moves and always use failovers", False),
    ),
    summary_param="group_name", summary_format=_name)

#: Move one instance to another group (Ganeti's OpInstanceChangeGroup).
OP_INSTANCE_CHANGE_GROUP = OpCode(
    "OP_INSTANCE_CHANGE_GROUP", "Moves an instance to another node group",
    (*_INSTANCE, _EARLY_RELEASE, _IALLOCATOR, _TARGET_GROUPS),
    summary_param="instance_name", summary_format=_name)

#: Move an instance by copying its disks (Ganeti's OpInstanceMove).
OP_INSTANCE_MOVE = OpCode(
    "OP_INSTANCE_MOVE", "Move an instance by copying its disks to another node",
    (
        *_INSTANCE,
        opt("shutdown_timeout", kinds.int_range(0),
            "How long to wait for instance to shut down", c.DEFAULT_SHUTDOWN_TIMEOUT),
        opt("ignore_ipolicy", kinds.BOOL, "Whether to ignore ipolicy violations", False),
        req("target_node", kinds.NON_EMPTY_STRING, "Target node for instance move"),
        opt("target_node_uuid", kinds.maybe(kinds.STRING), "Target node UUID for instance move"),
        opt("compress", kinds.STRING, "Compression mode to use during instance moves", "none"),
        opt("ignore_consistency", kinds.BOOL, "Whether to ignore disk consistency", False),
    ),
    summary_param="instance_name", summary_format=_name)

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = (
    OP_NODE_EVACUATE, OP_GROUP_EVACUATE, OP_INSTANCE_CHANGE_GROUP, OP_INSTANCE_MOVE,
)
