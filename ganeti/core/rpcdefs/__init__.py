"""The node RPC call table: every call the master makes to a node daemon, declared once.

ganeti-noded builds its HTTP resources from :data:`CALLS` and checks every
request against it; the master's RPC client (``ganeti.rpc``) takes each call's
timeout, argument encoders and result decoder from it and checks its own
arguments before sending anything.

The declarations live in one module per domain (:mod:`.cluster`,
:mod:`.files`, :mod:`.jobqueue`, :mod:`.instances`, :mod:`.disks`, :mod:`.drbd`,
:mod:`.hooks`, :mod:`.oob`, :mod:`.test`); the building blocks in :mod:`.base`, the
master-side argument encoders in :mod:`.encoders`, the wire helpers in :mod:`.wire`.

Wire format (Ganeti's noded convention): ``PUT /<call name>`` with a JSON list
of the positional arguments as the body; the reply body is ``[true, result]``
or ``[false, "error message"]``.
"""

from __future__ import annotations

from ganeti.core.rpcdefs.base import (
    ENCODING_NONE,
    ENCODING_ZLIB_BASE64,
    MAX_TIMEOUT,
    RPC_TMO_1DAY,
    RPC_TMO_4HRS,
    RPC_TMO_FAST,
    RPC_TMO_NORMAL,
    RPC_TMO_SLOW,
    RPC_TMO_URGENT,
    TMO_FAST,
    TMO_NORMAL,
    TMO_SLOW,
    EncodeContext,
    Encoder,
    RpcArg,
    RpcArgumentError,
    RpcCall,
    RpcReplyError,
    Timeout,
    check_timeout,
    is_wire_path,
)
from ganeti.core.rpcdefs.calls import CALLS, DOMAINS, build_table, get_call
from ganeti.core.rpcdefs.cluster import VERIFY_CHECKS
from ganeti.core.rpcdefs.wire import (
    decode_content,
    decode_reply,
    decode_request,
    encode_content,
    encode_reply,
    encode_request,
    from_wire_path,
    to_wire_path,
)

__all__ = [
    "CALLS", "DOMAINS", "ENCODING_NONE", "ENCODING_ZLIB_BASE64", "MAX_TIMEOUT",
    "RPC_TMO_1DAY", "RPC_TMO_4HRS", "RPC_TMO_FAST", "RPC_TMO_NORMAL", "RPC_TMO_SLOW",
    "RPC_TMO_URGENT", "TMO_FAST", "TMO_NORMAL", "TMO_SLOW", "VERIFY_CHECKS",
    "EncodeContext", "Encoder", "RpcArg", "RpcArgumentError", "RpcCall", "RpcReplyError",
    "Timeout", "build_table", "check_timeout", "decode_content", "decode_reply",
    "decode_request", "encode_content", "encode_reply", "encode_request", "from_wire_path",
    "get_call", "is_wire_path", "to_wire_path",
]
