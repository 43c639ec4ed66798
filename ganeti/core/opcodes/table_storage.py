"""Opcode declarations: storage opcodes (storage units and node volumes).

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
Parameters, defaults and summaries are Ganeti 3.0's.
"""

from __future__ import annotations

from ganeti.core import storagetypes
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req
from ganeti.core.opcodes.table import NAME_LIST, NODE_NAME

STORAGE_TYPE = kinds.one_of(sorted(storagetypes.STORAGE_TYPES), "a storage type:")
_FIELDS = kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of non-empty strings")

OP_NODE_QUERY_STORAGE = OpCode(
    "OP_NODE_QUERY_STORAGE", "Get information on storage units of nodes",
    (
        req("output_fields", _FIELDS, "Selected output fields"),
        opt("storage_type", kinds.maybe(STORAGE_TYPE), "Storage type"),
        opt("nodes", NAME_LIST,
            "Empty list to query all nodes, list of names to query otherwise", []),
        opt("name", kinds.maybe(kinds.NON_EMPTY_STRING), "Storage name"),
    ))

OP_NODE_MODIFY_STORAGE = OpCode(
    "OP_NODE_MODIFY_STORAGE", "Modify the properties of a storage unit",
    (
        req("node_name", NODE_NAME, "A required node name (for single-node LUs)"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING),
            "A node UUID (for single-node LUs)"),
        req("storage_type", STORAGE_TYPE, "Storage type"),
        opt("name", kinds.maybe(kinds.NON_EMPTY_STRING), "Storage name"),
        req("changes", kinds.OBJECT, "Requested storage changes"),
    ),
    summary_param="node_name")

OP_REPAIR_NODE_STORAGE = OpCode(
    "OP_REPAIR_NODE_STORAGE", "Repair a storage unit (a volume group) of a node",
    (
        req("node_name", NODE_NAME, "A required node name (for single-node LUs)"),
        opt("node_uuid", kinds.maybe(kinds.NON_EMPTY_STRING),
            "A node UUID (for single-node LUs)"),
        req("storage_type", STORAGE_TYPE, "Storage type"),
        opt("name", kinds.maybe(kinds.NON_EMPTY_STRING), "Storage name"),
        opt("ignore_consistency", kinds.BOOL, "Whether to ignore disk consistency", False),
    ),
    summary_param="node_name")

OP_NODE_QUERYVOLS = OpCode(
    "OP_NODE_QUERYVOLS", "Get the list of volumes on nodes",
    (
        req("output_fields", _FIELDS, "Selected output fields"),
        opt("nodes", NAME_LIST, "Empty list to query all nodes, node names otherwise", []),
    ))

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = (OP_NODE_QUERY_STORAGE, OP_NODE_MODIFY_STORAGE,
                               OP_REPAIR_NODE_STORAGE, OP_NODE_QUERYVOLS)
