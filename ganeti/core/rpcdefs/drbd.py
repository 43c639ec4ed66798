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

from ganeti.core.rpcdefs.base import RPC_TMO_NORMAL, RPC_TMO_SLOW, RpcArg, call
from ganeti.core.rpcdefs.disks import disk_arg, disks_arg


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_name(v: Any) -> bool:
    return isinstance(v, str)


CALLS = [
    call("blockdev_getmirrorstatus", RPC_TMO_NORMAL,
         "The status of each disk merged with its children's (blockdev_find's dict); "
         "fails if one is missing.",
         disks_arg("disks")),
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
    call("blockdev_addchildren", RPC_TMO_NORMAL,
         "Attach new local volumes to a mirrored disk (it resyncs them).",
         disk_arg("bdev"), disks_arg("ndevs")),
    call("blockdev_removechildren", RPC_TMO_NORMAL,
         "Detach local volumes from a mirrored disk (it goes diskless).",
         disk_arg("bdev"), disks_arg("ndevs")),
]
