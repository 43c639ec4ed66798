"""One node RPC exchange without the transport: the request bodies, the reply's meaning.

Both clients build on this: the master's asynchronous :class:`~ganeti.rpc.client.RpcClient`
and the tools' blocking :class:`~ganeti.rpc.blocking.BlockingRpcClient`.  So a
call is checked, encoded and timed the same way whoever makes it, and a reply
means the same (the same :class:`RpcResult` and the same failure texts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import rpcdefs
from ganeti.rpc.noderpc import NodeTarget
from ganeti.rpc.result import RpcResult

__all__ = ["OFFLINE_MSG", "ConfigSource", "Prepared", "failed", "interpret", "offline",
           "prepare", "targets_of"]

OFFLINE_MSG = "Node is marked offline"

#: Gives the config the calls' master-side encoders fill from.
ConfigSource = Callable[[], Any]


@dataclass(frozen=True)
class Prepared:
    """A checked call: its declaration, each target's request body, its timeout."""

    call: rpcdefs.RpcCall
    targets: list[NodeTarget]
    bodies: dict[str, bytes]
    timeout: float


def targets_of(nodes: Iterable[NodeTarget | Sequence[Any]]) -> list[NodeTarget]:
    """NodeTargets from NodeTargets or ``(name, ip, offline)`` tuples."""
    return [n if isinstance(n, NodeTarget) else NodeTarget(n[0], n[1], bool(n[2]))
            for n in nodes]


def _bodies(call: rpcdefs.RpcCall, args: Sequence[Any], targets: list[NodeTarget],
            config: Any) -> dict[str, bytes]:
    """The checked request body of each target (one shared body unless per node)."""
    if not call.per_node:
        wire = call.encode_args(args, rpcdefs.EncodeContext(config))
        body = rpcdefs.encode_request(call, wire)
        return {n.name: body for n in targets}
    bodies: dict[str, bytes] = {}
    for n in targets:
        if n.offline:
            bodies[n.name] = b""
            continue
        wire = call.encode_args(args, rpcdefs.EncodeContext(config, n.name))
        bodies[n.name] = rpcdefs.encode_request(call, wire)
    return bodies


def prepare(calls: Mapping[str, rpcdefs.RpcCall], call_name: str,
            nodes: Iterable[NodeTarget | Sequence[Any]], args: Sequence[Any],
            timeout: float | None, config: ConfigSource | None) -> Prepared:
    """Look the call up, encode and check its arguments, work out its timeout.

    RpcArgumentError for an unknown call, bad arguments or a bad timeout;
    nothing is sent then.  The timeout defaults to the call's declaration;
    ``timeout`` overrides it (up to a day).
    """
    call = calls.get(call_name)
    if call is None:
        raise rpcdefs.RpcArgumentError(f"unknown RPC call {call_name!r}")
    targets = targets_of(nodes)
    bodies = _bodies(call, args, targets, config() if config is not None else None)
    tmo = (call.timeout_for(list(args)) if timeout is None
           else rpcdefs.check_timeout(timeout, f"{call_name}: timeout"))
    return Prepared(call, targets, bodies, tmo)


def failed(node: NodeTarget, call: rpcdefs.RpcCall, message: str) -> RpcResult:
    """A failed result of ``call`` on ``node``."""
    return RpcResult(node.name, False, fail_msg=message, call=call.name)


def offline(node: NodeTarget, call: rpcdefs.RpcCall) -> RpcResult:
    """The result of an offline node, which is never contacted."""
    return RpcResult(node.name, False, fail_msg=OFFLINE_MSG, offline=True, call=call.name)


def interpret(node: NodeTarget, call: rpcdefs.RpcCall, status: int, data: bytes,
              too_large: str | None = None) -> RpcResult:
    """What a node's reply (HTTP ``status``, the body ``data``) means.

    ``too_large``: the reply body was over the client's limit (the message);
    ``data`` is then ignored.
    """
    if too_large is not None:
        return failed(node, call, f"HTTP {status}: {too_large}")
    try:
        success, payload = rpcdefs.decode_reply(data)
    except rpcdefs.RpcReplyError as err:
        return failed(node, call, f"HTTP {status}: {err}")
    if status != 200:
        return failed(node, call, f"HTTP {status}: {payload}")
    if not success:
        return failed(node, call, str(payload))
    try:
        value = call.decode_payload(payload)
    except rpcdefs.RpcReplyError as err:
        return failed(node, call, str(err))
    return RpcResult(node.name, True, payload=value, call=call.name)
