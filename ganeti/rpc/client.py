"""The master's node RPC client: one call to many nodes at once, a result per node.

Calls and their timeouts come from :data:`ganeti.core.rpcdefs.CALLS`; the
arguments are checked against the table before anything is sent.  Offline
nodes are answered at once without contact.  Connections are kept in a
persistent pool, so a node is usually reached over an existing TLS session.
Answers are input from another machine: a reply body is read up to
:data:`MAX_REPLY_BODY` bytes and parsed with a bounded nesting depth, so a
broken or hostile node daemon gives a failed :class:`RpcResult`, never an
exception or unbounded memory in the master.

Arguments go through the call's master-side encoders first (with the
config from the client's ``config`` source), per node where the call says
so; a successful payload goes through the call's decoder.  Cancelling the
Deferred of :meth:`RpcClient.call` aborts every request still running (the
node daemon then ends what it started for it) and fails with
CancelledError, unlike a call's own timeout, which gives failed results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from twisted.internet import defer, error, protocol
from twisted.internet.interfaces import IPushProducer
from twisted.python.failure import Failure
from twisted.web import client as webclient
from twisted.web.http_headers import Headers
from twisted.web.iweb import IBodyProducer
from zope.interface import implementer

from ganeti.core import rpcdefs
from ganeti.rpc import exchange
from ganeti.rpc.exchange import OFFLINE_MSG, ConfigSource
from ganeti.rpc.noderpc import NodeTarget, OneNodeCalls
from ganeti.rpc.result import RpcResult
from ganeti.rpc.tls import ClusterCertificate, ClusterTLSPolicy

__all__ = ["CONNECT_TIMEOUT", "MAX_REPLY_BODY", "OFFLINE_MSG", "NodeTarget", "ReplyTooLarge",
           "RpcClient", "RpcResult", "read_body"]

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
    body: _BoundedBody | None = None

    def cancel(d: defer.Deferred[bytes]) -> None:
        # drop the connection: the rest of the body is never read
        if body is not None and body.transport is not None:
            body.done = None
            cast(IPushProducer, body.transport).stopProducing()

    done: defer.Deferred[bytes] = defer.Deferred(cancel)
    body = _BoundedBody(limit, done)
    response.deliverBody(body)
    return done


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


class _CallState:
    """Whether the caller cancelled a call (as opposed to the call's own timeout)."""

    cancelled = False


class RpcClient(OneNodeCalls):
    """Make node RPC calls with mutual TLS on the cluster certificate.

    ``reactor`` must provide TCP and time; ``cluster`` is the loaded
    ``server.pem``.  ``config`` returns the current config for the calls'
    master-side encoders (none: encoders see ``config=None``); ``calls`` is
    the table (default :data:`ganeti.core.rpcdefs.CALLS`).  Call
    :meth:`close` when done (it drops pooled connections and their timers).
    """

    def __init__(self, reactor: Any, cluster: ClusterCertificate,
                 port: int, connect_timeout: float = CONNECT_TIMEOUT,
                 max_per_node: int = 8, max_reply: int = MAX_REPLY_BODY,
                 config: ConfigSource | None = None,
                 calls: Mapping[str, rpcdefs.RpcCall] | None = None) -> None:
        self.reactor = reactor
        self.port = port
        self.max_reply = max_reply
        self.config = config
        self.calls = rpcdefs.CALLS if calls is None else calls
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
            return exchange.interpret(node, call, response.code, b"", too_large=str(err))
        return exchange.interpret(node, call, response.code, data)

    def _one(self, node: NodeTarget, call: rpcdefs.RpcCall, body: bytes,
             timeout: float, state: _CallState) -> defer.Deferred[RpcResult]:
        if node.offline:
            return defer.succeed(exchange.offline(node, call))
        d = defer.Deferred.fromCoroutine(self._request(node, call, body))
        d.addTimeout(timeout, self.reactor)

        def failed(f: Failure) -> RpcResult:
            if state.cancelled:
                f.raiseException()  # the caller cancelled: no result, the call fails whole
            return exchange.failed(node, call, f"{call.name} on {node.name}: "
                                               f"{_describe(f, timeout)}")
        return d.addErrback(failed)

    def call(self, nodes: Iterable[NodeTarget | Sequence[Any]], call_name: str,
             args: Sequence[Any] = (), timeout: float | None = None
             ) -> defer.Deferred[dict[str, RpcResult]]:
        """Run ``call_name`` on every node concurrently; one RpcResult per node name.

        ``nodes`` holds NodeTargets or ``(name, ip, offline)`` tuples.  The
        timeout defaults to the call's declaration (seconds, or a function of
        the arguments); ``timeout`` overrides it (up to a day, Ganeti's
        longest).  Bad arguments or a bad timeout raise RpcArgumentError at
        once; node failures never fail the Deferred.  Cancelling it aborts
        the requests still running and fails it with CancelledError.
        """
        prepared = exchange.prepare(self.calls, call_name, nodes, args, timeout, self.config)
        state = _CallState()
        ds = [self._one(n, prepared.call, prepared.bodies[n.name], prepared.timeout, state)
              for n in prepared.targets]

        def cancel(_: defer.Deferred[dict[str, RpcResult]]) -> None:
            state.cancelled = True
            for d in ds:
                d.cancel()

        result: defer.Deferred[dict[str, RpcResult]] = defer.Deferred(cancel)

        def gathered(outcomes: list[tuple[bool, Any]]) -> None:
            if result.called or state.cancelled:
                return  # cancel() errbacks the result itself
            failures = [value for ok, value in outcomes if not ok]
            if failures:  # a bug, not a node problem: _one turns those into results
                result.errback(failures[0])
                return
            result.callback({r.node: r for _, r in outcomes})

        defer.DeferredList(ds, consumeErrors=True).addCallback(gathered)
        return result

    def close(self) -> defer.Deferred[None]:
        """Close pooled connections."""
        return self.pool.closeCachedConnections()
