"""The master's node RPC client: one call to many nodes at once, a result per node.

Calls and their timeouts come from :data:`ganeti.core.rpcdefs.CALLS`; the
arguments are checked against the table before anything is sent.  Offline
nodes are answered at once without contact.  Connections are kept in a
persistent pool, so a node is usually reached over an existing TLS session.
Answers are input from another machine: a reply body is read up to
:data:`MAX_REPLY_BODY` bytes and parsed with a bounded nesting depth, so a
broken or hostile node daemon gives a failed :class:`RpcResult`, never an
exception or unbounded memory in the master.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from twisted.internet import defer, error, protocol
from twisted.internet.interfaces import IPushProducer
from twisted.python.failure import Failure
from twisted.web import client as webclient
from twisted.web.http_headers import Headers
from twisted.web.iweb import IBodyProducer
from zope.interface import implementer

from ganeti.core import rpcdefs
from ganeti.rpc.tls import ClusterCertificate, ClusterTLSPolicy

OFFLINE_MSG = "Node is marked offline"
CONNECT_TIMEOUT = 10.0
#: The largest reply body read from a node (noded's own request limit).
MAX_REPLY_BODY = 64 * 1024 * 1024


class ReplyTooLarge(Exception):
    """A node's reply body exceeds the client's limit."""


class _BoundedBody(protocol.Protocol):
    """Collects a response body up to ``limit`` bytes, then aborts the connection."""

    def __init__(self, limit: int, done: defer.Deferred[bytes]) -> None:
        self.limit = limit
        self.done: defer.Deferred[bytes] | None = done
        self.parts: list[bytes] = []
        self.size = 0

    def dataReceived(self, data: bytes) -> None:
        if self.done is None:
            return
        self.size += len(data)
        if self.size > self.limit:
            done, self.done = self.done, None
            self.parts = []
            if self.transport is not None:
                # deliverBody's transport is a push producer: stopping it drops
                # the connection, so no more of the body is read
                cast(IPushProducer, self.transport).stopProducing()
            done.errback(ReplyTooLarge(f"reply body larger than {self.limit} bytes"))
            return
        self.parts.append(data)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        if self.done is None:
            return
        done, self.done = self.done, None
        if reason.check(webclient.ResponseDone):
            done.callback(b"".join(self.parts))
        else:
            done.errback(reason)


def read_body(response: Any, limit: int = MAX_REPLY_BODY) -> defer.Deferred[bytes]:
    """The body of ``response``; errbacks with :class:`ReplyTooLarge` past ``limit``."""
    done: defer.Deferred[bytes] = defer.Deferred()
    response.deliverBody(_BoundedBody(limit, done))
    return done


@dataclass(frozen=True)
class RpcResult:
    """The outcome of one call on one node.

    ``success`` with ``payload`` when the node ran the call; otherwise
    ``fail_msg`` says why (node error, HTTP error, connection, timeout), and
    ``offline`` is set when the node was not contacted because it is offline.
    """

    node: str
    success: bool
    payload: Any = None
    fail_msg: str | None = None
    offline: bool = False


@dataclass(frozen=True)
class NodeTarget:
    """A node to call: its name, its primary IP and whether it is offline."""

    name: str
    ip: str
    offline: bool = False


@implementer(IBodyProducer)
class _BytesProducer:
    """Writes a small body at once (no cooperator, so no global reactor)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.length = len(body)

    def startProducing(self, consumer: Any) -> defer.Deferred[None]:
        consumer.write(self.body)
        return defer.succeed(None)

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        pass


def _describe(failure: Failure, timeout: float) -> str:
    reasons = getattr(failure.value, "reasons", [])
    if failure.check(defer.TimeoutError, defer.CancelledError) or any(
            r.check(defer.CancelledError) for r in reasons):
        # only the call's own timeout cancels a request
        return f"timed out after {timeout:g} s"
    if failure.check(error.ConnectionRefusedError):
        return "connection refused"
    if failure.check(webclient.ResponseNeverReceived, webclient.RequestTransmissionFailed):
        inner = "; ".join(r.getErrorMessage() for r in reasons) or "no response"
        return f"no response ({inner})"
    return f"{type(failure.value).__name__}: {failure.getErrorMessage()}"


class _QuietClientFactory(webclient._HTTP11ClientFactory):
    """The pool's connection factory, without "Starting/Stopping factory" lines at info."""

    noisy = False


class RpcClient:
    """Make node RPC calls with mutual TLS on the cluster certificate.

    ``reactor`` must provide TCP and time; ``cluster`` is the loaded
    ``server.pem``.  Call :meth:`close` when done (it drops pooled
    connections and their timers).
    """

    def __init__(self, reactor: Any, cluster: ClusterCertificate,
                 port: int, connect_timeout: float = CONNECT_TIMEOUT,
                 max_per_node: int = 2, max_reply: int = MAX_REPLY_BODY) -> None:
        self.reactor = reactor
        self.port = port
        self.max_reply = max_reply
        self.pool = webclient.HTTPConnectionPool(reactor, persistent=True)
        self.pool._factory = _QuietClientFactory  # no log line per new node connection
        self.pool.maxPersistentPerHost = max_per_node
        self.agent = webclient.Agent(reactor, contextFactory=ClusterTLSPolicy(cluster),
                                     connectTimeout=connect_timeout, pool=self.pool)

    def _url(self, ip: str, name: str) -> bytes:
        host = f"[{ip}]" if ":" in ip else ip
        return f"https://{host}:{self.port}/{name}".encode("ascii")

    async def _request(self, node: NodeTarget, call: rpcdefs.RpcCall, body: bytes) -> RpcResult:
        response = await self.agent.request(
            b"PUT", self._url(node.ip, call.name),
            Headers({b"content-type": [b"application/json"]}),
            _BytesProducer(body))
        try:
            data = await read_body(response, self.max_reply)
        except ReplyTooLarge as err:
            return RpcResult(node.name, False, fail_msg=f"HTTP {response.code}: {err}")
        try:
            success, payload = rpcdefs.decode_reply(data)
        except rpcdefs.RpcReplyError as err:
            return RpcResult(node.name, False, fail_msg=f"HTTP {response.code}: {err}")
        if response.code != 200:
            return RpcResult(node.name, False, fail_msg=f"HTTP {response.code}: {payload}")
        if success:
            return RpcResult(node.name, True, payload=payload)
        return RpcResult(node.name, False, fail_msg=str(payload))

    def _one(self, node: NodeTarget, call: rpcdefs.RpcCall, body: bytes,
             timeout: float) -> defer.Deferred[RpcResult]:
        if node.offline:
            return defer.succeed(RpcResult(node.name, False, fail_msg=OFFLINE_MSG, offline=True))
        d = defer.Deferred.fromCoroutine(self._request(node, call, body))
        d.addTimeout(timeout, self.reactor)

        def failed(f: Failure) -> RpcResult:
            return RpcResult(node.name, False, fail_msg=f"{call.name} on {node.name}: "
                                                       f"{_describe(f, timeout)}")
        return d.addErrback(failed)

    def call(self, nodes: Iterable[NodeTarget | Sequence[Any]], call_name: str,
             args: Sequence[Any] = (), timeout: float | None = None
             ) -> defer.Deferred[dict[str, RpcResult]]:
        """Run ``call_name`` on every node concurrently; one RpcResult per node name.

        ``nodes`` holds NodeTargets or ``(name, ip, offline)`` tuples.  The
        timeout defaults to the call's class in the table.  Bad arguments
        raise RpcArgumentError at once; node failures never fail the Deferred.
        """
        call = rpcdefs.get_call(call_name)
        body = rpcdefs.encode_request(call, list(args))
        tmo = float(call.timeout if timeout is None else timeout)
        targets = [n if isinstance(n, NodeTarget) else NodeTarget(n[0], n[1], bool(n[2]))
                   for n in nodes]
        ds = [self._one(n, call, body, tmo) for n in targets]
        gathered = defer.gatherResults(ds)
        return gathered.addCallback(lambda results: {r.node: r for r in results})

    def close(self) -> defer.Deferred[None]:
        """Close pooled connections."""
        return self.pool.closeCachedConnections()
