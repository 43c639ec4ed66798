"""Opcode declarations: instance exports (Ganeti's OP_BACKUP_*).

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
Parameters, defaults and summaries are Ganeti 3.0's; ``OP_BACKUP_QUERY`` is
Ganeti 2.x's (3.0 answers ``QueryExports`` and ``Query("export")`` only).
Remote (inter-cluster) exports and zeroing free space are declared but
refused by the units with the reason.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req, reserved
from ganeti.core.opcodes.table import NAME_LIST

EXPORT_MODE_LOCAL = "local"
EXPORT_MODE_REMOTE = "remote"
EXPORT_MODES = (EXPORT_MODE_LOCAL, EXPORT_MODE_REMOTE)
EXPORT_MODE = kinds.one_of(EXPORT_MODES, "an export mode:")
#: Ganeti's TExportTarget: a node name (local) or per-disk targets (remote).
EXPORT_TARGET = kinds.simple("a node name or a list of per-disk targets",
                             lambda v: isinstance(v, (str, list)), "Any")


def _name(value: Any) -> str | None:
    return str(value) if value else None


_INSTANCE = (
    req("instance_name", kinds.NON_EMPTY_STRING, "Name of the instance"),
    opt("instance_uuid", kinds.maybe(kinds.NON_EMPTY_STRING), "UUID of the instance"),
)

OP_BACKUP_QUERY = OpCode(
    "OP_BACKUP_QUERY", "Compute the list of exported images",
    (
        opt("nodes", NAME_LIST, "Nodes to ask (all when empty)", []),
        opt("use_locking", kinds.BOOL, "Whether to use synchronization", False),
    ))

OP_BACKUP_PREPARE = OpCode(
    "OP_BACKUP_PREPARE", "Prepare an instance export",
    (*_INSTANCE, req("mode", EXPORT_MODE, "Export mode")),
    summary_param="instance_name", summary_format=_name)

OP_BACKUP_EXPORT = OpCode(
    "OP_BACKUP_EXPORT", "Export an instance",
    (
        *_INSTANCE,
        opt("compress", kinds.STRING, "Compression mode to use for moves during "
            "backups/imports", "none"),
        opt("shutdown_timeout", kinds.int_range(0), "How long to wait for instance to "
            "shut down", c.DEFAULT_SHUTDOWN_TIMEOUT),
        opt("target_node", kinds.maybe(EXPORT_TARGET),
            "Target node (depends on export mode)"),
        opt("target_node_uuid", kinds.maybe(kinds.STRING),
            "Target node UUID (if local export)"),
        opt("shutdown", kinds.BOOL, "Whether to shutdown the instance before export", True),
        opt("remove_instance", kinds.BOOL, "Whether to remove instance after export", False),
        opt("ignore_remove_failures", kinds.BOOL,
            "Whether to ignore failures while removing instances", False),
        opt("mode", EXPORT_MODE, "Export mode", EXPORT_MODE_LOCAL),
        opt("x509_key_name", kinds.maybe(kinds.list_of(kinds.ANY)),
            "Name of X509 key (remote export only)"),
        opt("destination_x509_ca", kinds.maybe(kinds.STRING),
            "Destination X509 CA (remote export only)"),
        reserved("zero_free_space", "Whether to zero the free space on the disks of the "
                 "instance (not supported yet)", False),
        reserved("zeroing_timeout_fixed", "The fixed part of time to wait before declaring "
                 "the zeroing operation to have failed (not supported yet)"),
        reserved("zeroing_timeout_per_mib", "The variable part of time to wait before "
                 "declaring the zeroing operation to have failed (not supported yet)"),
        opt("long_sleep", kinds.BOOL,
            "Whether to allow long instance shutdowns during exports", False),
    ),
    summary_param="instance_name", summary_format=_name)

OP_BACKUP_REMOVE = OpCode(
    "OP_BACKUP_REMOVE", "Remove an instance's export",
    _INSTANCE, summary_param="instance_name", summary_format=_name)

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = (OP_BACKUP_QUERY, OP_BACKUP_PREPARE, OP_BACKUP_EXPORT,
                               OP_BACKUP_REMOVE)
