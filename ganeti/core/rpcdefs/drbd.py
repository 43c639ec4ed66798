"""Mirror (drbd) calls: the status of mirrored disks, their roles (open, close),
their network (disconnect, attach, wait for sync, which need activation) and their
local volumes (add and remove children, replace-disks).  Served by
ganeti/noded/backend/drbd.py.

Names, argument order, timeouts and answers are Ganeti's (its ``rpc_defs.py``
and ``backend.py``).  Disks travel as in :mod:`.disks`: each node gets its own
dynamic parameters (local and remote address and minor).
"""

from __future__ import annotations

from typing import Any

from ganeti.core.objects import ConfigData
from ganeti.core.rpcdefs.base import (
    RPC_TMO_NORMAL,
    RPC_TMO_SLOW,
    RPC_TMO_URGENT,
    EncodeContext,
    RpcArg,
    call,
)
from ganeti.core.rpcdefs.disks import disk_arg, disk_list, disks_arg, is_disk_list


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_name(v: Any) -> bool:
    return isinstance(v, str)


def node_disks(value: Any, ctx: EncodeContext) -> list[dict[str, Any]]:
    """``{node: [disks]}`` (by node name or UUID) as the target node's own list
    (Ganeti's ``ED_NODE_TO_DISK_DICT_DP``); a list is taken as that node's."""
    if isinstance(value, list):
        return disk_list(value, ctx)
    if not isinstance(value, dict):
        raise TypeError("expected {node: [disks]}")
    keys = [ctx.node]
    if isinstance(ctx.config, ConfigData) and ctx.node is not None:
        keys.append(ctx.config.name_index("nodes").get(ctx.node))
    for key in keys:
        if key is not None and key in value:
            return disk_list(value[key], ctx)
    return []


def _is_status_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(r, list) and len(r) == 2 and isinstance(r[0], bool) for r in v)


def _status_list(v: Any) -> list[list[Any]]:
    if not _is_status_list(v):
        raise ValueError("expected a list of [success, status or message]")
    return [list(r) for r in v]


CALLS = [
    call("blockdev_getmirrorstatus", RPC_TMO_NORMAL,
         "The status of each disk merged with its children's (blockdev_find's dict); "
         "fails if one is missing.",
         disks_arg("disks")),
    call("blockdev_getmirrorstatus_multi", RPC_TMO_NORMAL,
         "[success, status dict or message] of each of the node's disks (cluster "
         "verify); the master passes {node: [disks]}, each node gets its own.",
         RpcArg("node_disks", is_disk_list, "a list of disk objects", encode=node_disks,
                per_node=True),
         decode=_status_list),
    call("blockdev_close", RPC_TMO_NORMAL,
         "Switch disks to secondary (no I/O here); the instance's disk links are "
         "removed when it is named.",
         RpcArg("instance_name", _is_name, "an instance name or ''"),
         disks_arg("disks")),
    call("blockdev_open", RPC_TMO_NORMAL,
         "Switch disks to primary, linked as the instance's disks (exclusive: refused "
         "while the peer is primary).",
         RpcArg("instance_name", _is_name, "an instance name"),
         disks_arg("disks"),
         RpcArg("exclusive", _is_bool, "a boolean")),
    call("drbd_disconnect_net", RPC_TMO_NORMAL,
         "Disconnect the network of drbd disks (StandAlone).",
         disks_arg("disks")),
    call("drbd_attach_net", RPC_TMO_NORMAL,
         "Connect drbd disks to their peers (multimaster: dual-primary) and wait until "
         "they are connected.",
         disks_arg("disks"),
         RpcArg("multimaster", _is_bool, "a boolean")),
    call("drbd_wait_sync", RPC_TMO_SLOW,
         "[alldone, min_resync] of drbd disks (fails for one neither connected nor "
         "resyncing).",
         disks_arg("disks")),
    call("drbd_needs_activation", RPC_TMO_NORMAL,
         "The uuids of the drbd disks that are missing, StandAlone or diskless.",
         disks_arg("disks")),
    call("drbd_helper", RPC_TMO_URGENT,
         "The DRBD usermode helper of the node's mirror (Ganeti's "
         "GetDrbdUsermodeHelper; here the emulated module's, /bin/true)."),
    call("blockdev_addchildren", RPC_TMO_NORMAL,
         "Attach new local volumes to a mirrored disk (it resyncs them).",
         disk_arg("bdev"), disks_arg("ndevs")),
    call("blockdev_removechildren", RPC_TMO_NORMAL,
         "Detach local volumes from a mirrored disk (it goes diskless).",
         disk_arg("bdev"), disks_arg("ndevs")),
]
