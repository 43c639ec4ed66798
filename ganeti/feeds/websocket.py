"""The WebSocket side of the feeds: an autobahn resource the RAPI daemon serves at ``/2/feed``.

Each connection is a :class:`FeedServerProtocol`, the relay's sink for one
:class:`~ganeti.feeds.relay.FeedClient`.  It registers itself as a streaming
producer on its transport, so that a full send buffer pauses the client in the
relay (over TLS the registration passes through ``TLSMemoryBIOProtocol`` to
the TCP transport, which pauses when its buffer passes 64 KiB).

Nothing is buffered for a client without bound: while its transport is
full, the relay writes nothing (see :mod:`ganeti.feeds.relay`) and pings
from the client are not answered (RFC 6455 lets a pong answer only the
latest ping), so a client that sends pings and never reads cannot make the
server queue pongs.  Client messages are parsed with a bounded nesting depth;
an invalid one is answered with an ``error`` message.  Dropped connections
are logged at most once a minute per client address.

Timers run on the injected clock, never on autobahn's: keepalive pings every
``ping_interval`` seconds (a client that does not answer within
``ping_timeout`` is dropped; a client whose transport is full is neither
pinged nor dropped for a missing pong: it is not reading, and the relay's
``max_pause`` decides how long it may stay so), and a server-initiated close
drops the connection after ``close_timeout`` if the client does not answer it.  The
opening handshake has already been read by twisted.web when the resource
renders, so autobahn's own handshake and auto-ping timers are disabled.

Authentication is the RAPI server's: it renders this resource only for
users with read access.  Browsers send stored credentials with WebSocket
requests, so requests from a page of another origin are refused (403) unless
that origin is listed in ``allowed_origins``.
"""

from __future__ import annotations

from typing import Any

from autobahn.twisted.resource import WebSocketResource
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from autobahn.websocket.types import ConnectionDeny, ConnectionRequest
from twisted.internet.interfaces import IDelayedCall, IPushProducer, IReactorTime
from twisted.logger import Logger
from twisted.web.resource import IResource
from zope.interface import implementer

from ganeti.core import origins
from ganeti.feeds import protocol
from ganeti.feeds.protocol import MAX_MESSAGE_BYTES, FeedProtocolError, Subscribe
from ganeti.feeds.relay import Batch, FeedClient, FeedRelay

DEFAULT_PING_INTERVAL = 30.0
DEFAULT_PING_TIMEOUT = 20.0
DEFAULT_CLOSE_TIMEOUT = 5.0
PING_PAYLOAD = b"ganeti-feed"
#: A dropped connection is logged at most this often per client address.
DROP_LOG_INTERVAL = 60.0
MAX_DROP_LOG_PEERS = 4096
#: WebSocket close codes used by the server.
CLOSE_GOING_AWAY = 1001
CLOSE_UNSUPPORTED_DATA = 1003
CLOSE_POLICY_VIOLATION = 1008


@implementer(IPushProducer)
class FeedServerProtocol(WebSocketServerProtocol):
    """One feed connection: client messages in, relay batches out, keepalive."""

    log = Logger()
    factory: FeedServerFactory

    def __init__(self) -> None:
        super().__init__()
        self.client: FeedClient | None = None
        self._ping_call: IDelayedCall | None = None
        self._pong_deadline: IDelayedCall | None = None
        self._close_deadline: IDelayedCall | None = None

    # Handshake and lifetime

    def onConnect(self, request: ConnectionRequest) -> None:
        origin = request.headers.get("origin")
        if origin is not None and not self.factory.origin_allowed(
                origin, request.headers.get("host", "")):
            raise ConnectionDeny(ConnectionDeny.FORBIDDEN,
                                 "WebSocket requests from this origin are not allowed")

    def onOpen(self) -> None:
        transport: Any = self.transport  # an IConsumer too (TCP or TLS)
        try:
            transport.registerProducer(self, True)
        except RuntimeError:
            # twisted.web's channel registered itself for the HTTP request we took over.
            transport.unregisterProducer()
            transport.registerProducer(self, True)
        self.client = self.factory.relay.connect(self)
        self._schedule_ping()

    def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:
        for call in (self._ping_call, self._pong_deadline, self._close_deadline):
            if call is not None and call.active():
                call.cancel()
        self._ping_call = self._pong_deadline = self._close_deadline = None
        if self.client is not None:
            self.client.disconnect()

    # Client messages

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        client = self.client
        if client is None or client.closed:
            return
        if is_binary:
            self._close(CLOSE_UNSUPPORTED_DATA, "binary messages are not accepted")
            return
        try:
            message = protocol.parse_client_message(payload)
        except FeedProtocolError as err:
            client.send_error(str(err))
            return
        if isinstance(message, Subscribe):
            client.subscribe(message)
        else:
            client.unsubscribe()

    # Keepalive

    def _schedule_ping(self) -> None:
        self._ping_call = self.factory.clock.callLater(self.factory.ping_interval, self._ping)

    def _paused(self) -> bool:
        return self.client is not None and self.client.paused

    def _ping(self) -> None:
        self._ping_call = None
        if self.state != self.STATE_OPEN:
            return
        if self._paused():
            # A full transport would not deliver the ping, and a client that does
            # not read cannot answer: the relay's pause limit judges it instead.
            self._schedule_ping()
            return
        self.sendPing(PING_PAYLOAD)
        self._pong_deadline = self.factory.clock.callLater(self.factory.ping_timeout,
                                                           self._no_pong)

    def onPing(self, payload: bytes) -> None:
        # Answered only while the transport takes output: a pong queued behind a
        # full buffer would make a client that never reads grow our memory.
        if self._paused():
            self.factory.stats["pongs_skipped"] += 1
            return
        super().onPing(payload)

    def onPong(self, payload: bytes) -> None:
        if self._pong_deadline is not None:
            if self._pong_deadline.active():
                self._pong_deadline.cancel()
            self._pong_deadline = None
            self._schedule_ping()

    def _no_pong(self) -> None:
        self._pong_deadline = None
        if self._paused():
            # It stopped reading after the ping went out (the pong may be behind
            # what it has not read): its pause limit applies; pinged again later.
            self._schedule_ping()
            return
        self._drop(f"no pong within {self.factory.ping_timeout:g}s")

    # The relay's sink

    def write_batch(self, batch: Batch) -> None:
        """Write one text message (its frame is built once per batch, for all clients)."""
        if self.state != self.STATE_OPEN or self.transport is None:
            return
        frame = batch.frame
        if frame is None:
            frame = batch.frame = self.factory.prepareMessage(batch.payload).payloadHybi
        # Straight to the transport: autobahn's sendData does per-call logging work
        # that is measurable at thousands of frames per second.
        self.transport.write(frame)

    def close_feed(self, reason: str, abort: bool) -> None:
        """Close for the relay: drop a client that does not read, or close politely."""
        if abort:
            self._drop(reason)
        else:
            self._close(CLOSE_GOING_AWAY, reason)

    # IPushProducer: the transport's buffer fills and drains

    def pauseProducing(self) -> None:
        if self.client is not None:
            self.client.pause()

    def resumeProducing(self) -> None:
        if self.client is not None:
            self.client.resume()

    def stopProducing(self) -> None:
        if self.client is not None:
            self.client.disconnect()

    # Closing

    def _close(self, code: int, reason: str) -> None:
        if self.state == self.STATE_OPEN:
            # sendClose only takes 1000 and 3000-4999; the protocol's codes are valid too.
            self.sendCloseFrame(code, reason.encode()[:123], isReply=False)

    def sendCloseFrame(self, code: int | None = None,
                       reasonUtf8: bytes | None = None,  # noqa: N803 - these by keyword
                       isReply: bool = False) -> None:  # noqa: N803
        # Every close the server starts (ours, or autobahn's for a protocol error such
        # as an oversized message) gets a deadline on the injected clock.
        super().sendCloseFrame(code, reasonUtf8, isReply)
        if not isReply and self.state == self.STATE_CLOSING and self._close_deadline is None:
            self._close_deadline = self.factory.clock.callLater(
                self.factory.close_timeout, self._drop, "no answer to the closing handshake")

    def _drop(self, reason: str) -> None:
        self._close_deadline = None
        if self.state == self.STATE_CLOSED:
            return
        self.factory.log_drop(self.transport, reason)
        self.wasClean = False
        self.wasNotCleanReason = reason
        self.dropConnection(abort=True)


class FeedServerFactory(WebSocketServerFactory):
    """Builds :class:`FeedServerProtocol` for one relay; holds the clock and options."""

    protocol = FeedServerProtocol  # type: ignore[assignment]

    def __init__(self, relay: FeedRelay, clock: IReactorTime,
                 ping_interval: float = DEFAULT_PING_INTERVAL,
                 ping_timeout: float = DEFAULT_PING_TIMEOUT,
                 close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
                 max_message: int = MAX_MESSAGE_BYTES,
                 allowed_origins: tuple[str, ...] = ()) -> None:
        # No URL: twisted.web has already routed the request (a URL with port 0 raises).
        super().__init__(server="ganeti-rapi")
        self.relay = relay
        self.clock = clock
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.close_timeout = close_timeout
        self.allowed_origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.stats: dict[str, int] = {"pongs_skipped": 0, "drops_logged": 0,
                                      "drops_not_logged": 0}
        # peer host -> when its last drop was logged (bounded, oldest first)
        self._drop_logged: dict[str, float] = {}
        self._drops_unreported = 0
        self.setProtocolOptions(
            maxFramePayloadSize=max_message, maxMessagePayloadSize=max_message,
            openHandshakeTimeout=0, closeHandshakeTimeout=0, autoPingInterval=0,
            failByDrop=False)

    def log_drop(self, transport: Any, reason: str) -> None:
        """Log a dropped connection, at most once per :data:`DROP_LOG_INTERVAL` per
        client address (clients decide how often they are dropped)."""
        peer = transport.getPeer() if transport is not None else None
        host = str(getattr(peer, "host", "-"))
        now = self.clock.seconds()
        last = self._drop_logged.get(host)
        if last is not None and now - last < DROP_LOG_INTERVAL:
            self.stats["drops_not_logged"] += 1
            self._drops_unreported += 1
            return
        self._drop_logged.pop(host, None)
        self._drop_logged[host] = now
        while len(self._drop_logged) > MAX_DROP_LOG_PEERS:
            del self._drop_logged[next(iter(self._drop_logged))]
        self.stats["drops_logged"] += 1
        more, self._drops_unreported = self._drops_unreported, 0
        FeedServerProtocol.log.info("Dropping feed connection from {peer}: {reason} ({more} "
                                    "other drops not logged since the last report)",
                                    peer=host, reason=reason[:200], more=more)

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Same origin (the Origin's host:port is the Host header), or listed."""
        return origins.origin_allowed(origin, host, self.allowed_origins)


def feed_resource(relay: FeedRelay, clock: IReactorTime, **options: Any) -> IResource:
    """The ``/2/feed`` resource: ``options`` go to :class:`FeedServerFactory`."""
    return WebSocketResource(FeedServerFactory(relay, clock, **options))  # type: ignore[no-any-return]

