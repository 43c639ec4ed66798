"""Disk data transfer between nodes, chunk by chunk through the master: what an
instance move (OP_INSTANCE_MOVE) copies.  Served by
ganeti/noded/backend/transfer.py.

Ganeti moves an instance's data with its import/export daemons (a socat
stream from node to node); these two calls are this project's own, not
Ganeti's: the master reads a chunk of the source disk's device on the old
node and writes it into the new disk's device on the target node.  Zeros
travel as null with their length: a chunk that is all zeros, or a whole hole
of a sparse source file (however long); a sparse file target skips them, a
volume gets them written.
"""

from __future__ import annotations

from ganeti.core.rpcdefs.base import RPC_TMO_NORMAL, RpcArg, RpcCall, call, is_int
from ganeti.core.rpcdefs.disks import disk_dict

#: The largest chunk a call moves (bytes).
MAX_CHUNK = 8 * 1024 * 1024


def _is_disk(v: object) -> bool:
    return isinstance(v, dict) and isinstance(v.get("dev_type"), str)


def _disk_arg(name: str) -> RpcArg:
    return RpcArg(name, _is_disk, "a disk object", encode=disk_dict)


_OFFSET = RpcArg("offset", lambda v: is_int(v) and v >= 0, "an offset in bytes")
_LENGTH = RpcArg("length", lambda v: is_int(v) and 0 < v <= MAX_CHUNK,
                 f"a length in bytes (at most {MAX_CHUNK})")
_ZEROS = RpcArg("length", lambda v: is_int(v) and v > 0,
                f"a length in bytes (at most {MAX_CHUNK} with data)")

CALLS: list[RpcCall] = [
    call("blockdev_read_chunk", RPC_TMO_NORMAL,
         "A disk's data at offset: [bytes covered, base64 data or null when they are "
         "all zero]: up to length bytes of data, or a run of zeros (a hole of a sparse "
         "file: all of it); [0, null] at the end.",
         _disk_arg("disk"), _OFFSET, _LENGTH),
    call("blockdev_write_chunk", RPC_TMO_NORMAL,
         "Write base64 data (null: length zero bytes) at offset into a disk's device.",
         _disk_arg("disk"), _OFFSET, _ZEROS,
         RpcArg("data", lambda v: v is None or isinstance(v, str), "base64 data or null")),
]

__all__ = ["CALLS", "MAX_CHUNK"]
