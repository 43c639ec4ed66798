"""The live serial console over RAPI (our extension):
``GET /2/instances/<name>/console/websocket`` with a WebSocket upgrade.

Each browser connection is relayed to the console WebSocket of the
instance's primary node (``/console/<name>`` on noded's port, mutual TLS on
the cluster certificate, :mod:`ganeti.noded.console`), which attaches to the
instance's serial socket.  Bytes go both ways: binary messages from the
node are sent on as binary messages; the browser's messages (binary, or
text taken as UTF-8) are typed into the console.

Access: typing into a root console is a write, so only users with the
``write`` option are attached.  Everyone else gets the WebSocket opened and
closed at once with a reason a browser can show (an HTTP 403 in the handshake
reaches a page only as "connection failed"): :data:`CLOSE_UNAUTHENTICATED`
for an anonymous client, :data:`CLOSE_FORBIDDEN` for a read-only user.  The
node's close code and reason (console busy, instance stopped) are passed on.

Flow control both ways: while the browser does not read, the node's
connection is not read (the node then stops reading the serial socket), and
while the node does not read, the browser's connection is not read.  Input
that arrives before the node end is open is kept up to :data:`MAX_PENDING`
bytes; more closes the console.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from autobahn.twisted.resource import WebSocketResource
from autobahn.twisted.websocket import (
    WebSocketClientFactory,
    WebSocketClientProtocol,
    WebSocketServerFactory,
    WebSocketServerProtocol,
)
from autobahn.websocket.types import ConnectionDeny, ConnectionRequest
from twisted.internet import defer
from twisted.internet.endpoints import HostnameEndpoint, wrapClientTLS
from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.resource import IResource
from zope.interface import implementer

from ganeti.core import constants, errors, origins
from ganeti.rpc.tls import ClusterCertificate, ClusterTLSPolicy

MAX_MESSAGE = 64 * 1024
MAX_PENDING = 64 * 1024
CONNECT_TIMEOUT = 10.0
CLOSE_TIMEOUT = 5.0
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MUCH = 4413
CLOSE_UNAVAILABLE = 4503
CLOSE_NODE_FAILED = 4502

log = Logger()


class ConsoleUnavailable(Exception):
    """The console cannot be attached; ``code`` is the close code to send."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _set_producer(transport: Any, producer: Any) -> None:
    """Register ``producer`` as the streaming producer of ``transport``."""
    try:
        transport.registerProducer(producer, True)
    except RuntimeError:  # twisted.web's channel registered itself for the request
        transport.unregisterProducer()
        transport.registerProducer(producer, True)


def _pause(proto: Any) -> None:
    transport = getattr(proto, "transport", None)
    if transport is not None:
        transport.pauseProducing()


def _resume(proto: Any) -> None:
    transport = getattr(proto, "transport", None)
    if transport is not None:
        transport.resumeProducing()


class _NodeSide(WebSocketClientProtocol):
    """The connection to the primary node's console WebSocket."""

    factory: _NodeFactory

    def onOpen(self) -> None:
        browser = self.factory.browser
        _set_producer(self.transport, _NodePauser(browser))
        browser.node_open(self)

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        self.factory.browser.from_node(payload)

    def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:
        self.factory.browser.node_closed(code, reason)


@implementer(IPushProducer)
class _NodePauser:
    """On the node's transport: while the node does not read, the browser is not read."""

    def __init__(self, browser: ConsoleProtocol) -> None:
        self.browser = browser

    def pauseProducing(self) -> None:
        _pause(self.browser)

    def resumeProducing(self) -> None:
        _resume(self.browser)

    def stopProducing(self) -> None:
        pass  # the connection is lost: _NodeSide.onClose passes its code on


class _NodeFactory(WebSocketClientFactory):
    protocol = _NodeSide  # type: ignore[assignment]

    def __init__(self, browser: ConsoleProtocol, url: str) -> None:
        super().__init__(url, useragent="ganeti-rapi console relay")
        self.browser = browser
        self.setProtocolOptions(maxFramePayloadSize=MAX_MESSAGE,
                                maxMessagePayloadSize=MAX_MESSAGE,
                                openHandshakeTimeout=0, closeHandshakeTimeout=0,
                                autoPingInterval=0, failByDrop=False)


@implementer(IPushProducer)
class ConsoleProtocol(WebSocketServerProtocol):
    """One browser's console: checks, finds the node, relays both ways."""

    factory: ConsoleFactory

    def __init__(self) -> None:
        super().__init__()
        self.node: _NodeSide | None = None
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.closing = False
        self._attaching: defer.Deferred[Any] | None = None
        self._deadline: Any = None

    def onConnect(self, request: ConnectionRequest) -> None:
        origin = request.headers.get("origin")
        if origin is not None and not self.factory.relay.origin_allowed(
                origin, request.headers.get("host", "")):
            raise ConnectionDeny(ConnectionDeny.FORBIDDEN,
                                 "WebSocket requests from this origin are not allowed")

    def onOpen(self) -> None:
        _set_producer(self.transport, self)
        if self.factory.refusal is not None:
            self.close_console(*self.factory.refusal)
            return
        self._attaching = defer.Deferred.fromCoroutine(self._attach())
        self._attaching.addErrback(self._attach_failed)

    async def _attach(self) -> None:
        relay = self.factory.relay
        name = self.factory.instance
        ip = await relay.node_address(name)
        if self.closing:
            return
        host = f"[{ip}]" if ":" in ip else ip  # an IPv6 node address
        url = f"wss://{host}:{relay.noded_port}/console/{quote(name, safe='')}"
        factory = _NodeFactory(self, url)
        endpoint = wrapClientTLS(relay.tls.creatorForNetloc(ip.encode(), relay.noded_port),
                                 HostnameEndpoint(relay.reactor, ip, relay.noded_port,
                                                  timeout=CONNECT_TIMEOUT))
        await endpoint.connect(factory)

    def _attach_failed(self, failure: Failure) -> None:
        self._attaching = None
        if failure.check(defer.CancelledError):
            return
        if failure.check(ConsoleUnavailable):
            err: ConsoleUnavailable = failure.value  # type: ignore[assignment]
            self.close_console(err.code, str(err))
            return
        self.close_console(CLOSE_NODE_FAILED, "cannot reach the instance's node: "
                                              f"{failure.getErrorMessage()}")

    # Both directions

    def node_open(self, node: _NodeSide) -> None:
        if self.closing:
            node.sendClose(CLOSE_NORMAL, "console closed")
            return
        self.node = node
        log.info("Console of {instance} attached for user {user} (node {node})",
                 instance=self.factory.instance, user=self.factory.user,
                 node=node.factory.url)
        for data in self.pending:
            node.sendMessage(data, isBinary=True)
        self.pending = []
        self.pending_bytes = 0

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        if self.closing:
            return
        if self.node is not None:
            self.node.sendMessage(payload, isBinary=True)
            return
        self.pending_bytes += len(payload)
        if self.pending_bytes > MAX_PENDING:
            self.close_console(CLOSE_TOO_MUCH, "too much input before the console was "
                                               "attached")
            return
        self.pending.append(payload)

    def from_node(self, data: bytes) -> None:
        if self.state == self.STATE_OPEN and not self.closing:
            self.sendMessage(data, isBinary=True)

    def node_closed(self, code: int | None, reason: str | None) -> None:
        self.node = None
        if code is None or code in (1005, 1006):
            self.close_console(CLOSE_NODE_FAILED, reason or "connection to the node lost")
        else:
            self.close_console(code, reason or "console closed")

    # Closing

    def close_console(self, code: int, reason: str) -> None:
        """Close the browser's end with ``code`` and ``reason``, and the node's (once)."""
        if self.closing:
            return
        self.closing = True
        if self.state == self.STATE_OPEN:
            if not (code == CLOSE_NORMAL or 3000 <= code <= 4999):
                code = CLOSE_NODE_FAILED
            self.sendClose(code, reason.encode()[:120].decode("utf-8", "ignore"))
            self._deadline = self.factory.relay.reactor.callLater(
                CLOSE_TIMEOUT, self.dropConnection, True)
        self._end_node()

    def _end_node(self) -> None:
        if self._attaching is not None:
            self._attaching.cancel()
        node, self.node = self.node, None
        if node is not None and node.state == node.STATE_OPEN:
            node.sendClose(CLOSE_NORMAL, "console client left")

    def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:
        self.closing = True
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None
        self._end_node()

    # IPushProducer on the browser's transport: the node is not read while the
    # browser does not read

    def pauseProducing(self) -> None:
        _pause(self.node)

    def resumeProducing(self) -> None:
        _resume(self.node)

    def stopProducing(self) -> None:
        self._end_node()


class ConsoleFactory(WebSocketServerFactory):
    """One browser request's factory: the instance and why it is refused, if it is."""

    protocol = ConsoleProtocol  # type: ignore[assignment]

    def __init__(self, relay: ConsoleRelay, instance: str, user: str | None,
                 refusal: tuple[int, str] | None) -> None:
        super().__init__(server="ganeti-rapi")
        self.relay = relay
        self.instance = instance
        self.user = user
        self.refusal = refusal
        self.setProtocolOptions(maxFramePayloadSize=MAX_MESSAGE,
                                maxMessagePayloadSize=MAX_MESSAGE,
                                openHandshakeTimeout=0, closeHandshakeTimeout=0,
                                autoPingInterval=0, failByDrop=False)


class ConsoleRelay:
    """What every console connection shares: the reactor, masterd (LUXI), the
    cluster certificate to reach the nodes, the node daemons' port."""

    def __init__(self, reactor: Any, luxi: Any, cluster: ClusterCertificate,
                 noded_port: int = constants.DEFAULT_NODED_PORT,
                 allowed_origins: tuple[str, ...] = ()) -> None:
        self.reactor = reactor
        self.luxi = luxi
        self.tls = ClusterTLSPolicy(cluster)
        self.noded_port = noded_port
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)

    def resource(self, instance: str, user: str | None, write: bool) -> IResource:
        """The WebSocket resource for one request by ``user`` (None: anonymous)."""
        refusal: tuple[int, str] | None = None
        if user is None:
            refusal = (CLOSE_UNAUTHENTICATED, "authentication required: the console needs "
                                              "a user with write access")
        elif not write:
            refusal = (CLOSE_FORBIDDEN, f"user {user!r} lacks the 'write' permission the "
                                        "console needs")
        return WebSocketResource(  # type: ignore[no-any-return]
            ConsoleFactory(self, instance, user, refusal))

    async def node_address(self, name: str) -> str:
        """The primary IP of the node ``name`` runs on, after checking that it runs
        and has a serial console; :class:`ConsoleUnavailable` otherwise."""
        try:
            rows = await self.luxi.call("QueryInstances", [name],
                                        ["pnode", "oper_state", "console"], False)
        except errors.OpPrereqError as err:
            if len(err.args) >= 2 and err.args[1] == errors.ECODE_NOENT:
                raise ConsoleUnavailable(CLOSE_NOT_FOUND, str(err.args[0])) from None
            raise ConsoleUnavailable(CLOSE_UNAVAILABLE, f"instance {name}: {err}") from None
        except Exception as err:  # masterd unreachable, or any other error of it
            raise ConsoleUnavailable(CLOSE_UNAVAILABLE, f"cannot ask the master about "
                                                        f"instance {name}: {err}") from None
        if not rows:
            raise ConsoleUnavailable(CLOSE_NOT_FOUND, f"instance {name} does not exist")
        pnode, running, console = rows[0]
        if not running:
            raise ConsoleUnavailable(CLOSE_UNAVAILABLE, f"instance {name} is not running")
        if not isinstance(console, dict) or console.get("kind") != "ssh":
            raise ConsoleUnavailable(CLOSE_UNAVAILABLE, f"instance {name} has no serial "
                                                        "console")
        nodes = await self.luxi.call("QueryNodes", [pnode], ["pip"], False)
        if not nodes or not isinstance(nodes[0][0], str):
            raise ConsoleUnavailable(CLOSE_UNAVAILABLE, f"no address for node {pnode}")
        return str(nodes[0][0])

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Same origin (the Origin's host:port is the Host header), or listed."""
        return origins.origin_allowed(origin, host, self.allowed_origins)
