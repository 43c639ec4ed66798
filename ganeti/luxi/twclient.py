"""Asynchronous LUXI clients for daemons (ganeti-rapi): calls, and the event stream.

:class:`AsyncLuxiClient` keeps a small pool of connections to masterd's
socket.  masterd answers the requests of one connection strictly one after
another, so a call never queues behind another on the same connection (a
10-second ``WaitForJobChange`` would block everything after it): each call
takes an idle connection, opens a new one while the pool is below its size,
or waits for one to become free.  Connections are opened lazily, so when
masterd restarts the next call simply connects again; until then calls fail
with :class:`~ganeti.core.errors.NoMasterError`.  A full listen backlog
(``EAGAIN``: masterd busy for a moment) is retried for up to the connect
timeout, as the blocking client does.

:class:`EventStreamClient` holds one ``SubscribeEvents`` stream and hands the
events of each read to its consumer as a batch.  When the connection breaks it
reconnects with growing delays and resubscribes from the last serial it saw,
so the consumer misses nothing that masterd still keeps (masterd says
``resync`` otherwise).
"""

from __future__ import annotations

import errno
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, error, task
from twisted.internet.endpoints import UNIXClientEndpoint
from twisted.internet.interfaces import IDelayedCall
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core import constants, errors
from ganeti.core.serializer import load_json
from ganeti.luxi import wire
from ganeti.luxi.client import BacklogRetry, backlog_full, unreachable
from ganeti.luxi.methods import METHODS

#: Largest response accepted (a bulk job query can be large).
MAX_RESPONSE = 64 * 1024 * 1024
DEFAULT_POOL_SIZE = 16
DEFAULT_CALL_TIMEOUT = float(constants.LUXI_DEF_RWTO)
DEFAULT_CONNECT_TIMEOUT = float(constants.LUXI_DEF_CTMO)


def _connected_unix_socket(address: str) -> socket.socket:
    """A non-blocking socket connected to ``address``; OSError (with its errno) if not.

    Connecting a UNIX socket never waits: it succeeds, or fails at once
    (``EAGAIN`` when the listen backlog is full).  Twisted's own connector
    hides that errno (epoll reports the refused socket as a closed
    connection), so the connection is made here and handed to the reactor.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


class _CallProtocol(Protocol):
    """One connection; at most one request in flight (masterd answers in order)."""

    def __init__(self) -> None:
        self._splitter = wire.FrameSplitter(max_size=MAX_RESPONSE)
        self.waiting: defer.Deferred[Any] | None = None
        self.raw = False  # hand the waiting call the result's JSON text (wire.RawJson)
        self.lost = False
        self.on_lost: Callable[[_CallProtocol], None] | None = None

    def request(self, method: str, args: tuple[Any, ...], raw: bool = False
                ) -> defer.Deferred[Any]:
        assert self.waiting is None and self.transport is not None
        d: defer.Deferred[Any] = defer.Deferred()
        self.waiting = d
        self.raw = raw
        self.transport.write(wire.encode_request(method, args))
        return d

    def dataReceived(self, data: bytes) -> None:
        frames = self._splitter.feed(data)
        for frame in frames:
            d, self.waiting = self.waiting, None
            if d is None:
                self._abort()  # an answer nobody asked for: the stream is out of step
                return
            try:
                result = (wire.parse_response_raw(frame) if self.raw
                          else wire.parse_response(frame))
            except Exception as err:  # the decoded Ganeti error travels on
                d.errback(err)
            else:
                d.callback(result)
        if self._splitter.overflow is not None:
            d, self.waiting = self.waiting, None
            if d is not None:
                d.errback(errors.ProtocolError(str(self._splitter.overflow)))
            self._abort()

    def _abort(self) -> None:
        self.lost = True  # never handed out again, even before the close completes
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure = error.ConnectionDone) -> None:  # type: ignore[assignment]
        self.lost = True
        d, self.waiting = self.waiting, None
        if d is not None:
            d.errback(errors.ConnectionClosedError(
                "The master daemon closed the connection without answering"))
        if self.on_lost is not None:
            self.on_lost(self)


class AsyncLuxiClient:
    """Calls LUXI methods on masterd; ``call`` returns a Deferred of the result."""

    log = Logger()

    def __init__(self, reactor: Any, address: str, pool_size: int = DEFAULT_POOL_SIZE,
                 timeout: float = DEFAULT_CALL_TIMEOUT,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 retry: BacklogRetry | None = None) -> None:
        """``reactor`` must provide IReactorSocket (connections are adopted) and
        IReactorTime; ``retry`` paces the retries on a full listen backlog."""
        self.reactor = reactor
        self.address = address
        self.pool_size = pool_size
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retry = retry if retry is not None else BacklogRetry()
        self._idle: list[_CallProtocol] = []
        self._busy: set[_CallProtocol] = set()
        self._connecting = 0
        self._waiters: deque[defer.Deferred[_CallProtocol]] = deque()
        self._closed = False

    @property
    def connections(self) -> int:
        """Open connections (idle and busy)."""
        return len(self._idle) + len(self._busy)

    def call(self, method: str, *args: Any) -> defer.Deferred[Any]:
        """Call ``method``; fails with the Ganeti error masterd sent, or a transport error."""
        return self._checked(method, args, raw=False)

    def call_raw(self, method: str, *args: Any) -> defer.Deferred[wire.RawJson]:
        """Like :meth:`call`, the result left as the JSON text masterd sent."""
        return self._checked(method, args, raw=True)

    def _checked(self, method: str, args: tuple[Any, ...], raw: bool) -> defer.Deferred[Any]:
        spec = METHODS.get(method)
        if spec is not None:
            try:
                spec.check_args(list(args))
            except errors.GenericError as err:
                return defer.fail(err)
        return defer.Deferred.fromCoroutine(self._call(method, args, raw))

    async def _call(self, method: str, args: tuple[Any, ...], raw: bool = False) -> Any:
        if self._closed:
            raise errors.NoMasterError("The LUXI client is closed")
        proto = await self._acquire()
        timer: IDelayedCall | None = None
        d = proto.request(method, args, raw)
        if self.timeout:
            def expire() -> None:
                nonlocal timer
                timer = None
                if not d.called:
                    proto.waiting = None
                    proto._abort()
                    d.errback(errors.TimeoutError(
                        f"The master daemon did not answer {method} within {self.timeout}s"))
            timer = self.reactor.callLater(self.timeout, expire)
        try:
            return await d
        finally:
            if timer is not None and timer.active():
                timer.cancel()
            self._release(proto)

    async def _acquire(self) -> _CallProtocol:
        while self._idle:
            proto = self._idle.pop()
            if not proto.lost:
                self._busy.add(proto)
                return proto
        if len(self._busy) + self._connecting < self.pool_size:
            self._connecting += 1
            try:
                proto = await self._connect()
            finally:
                self._connecting -= 1
            self._busy.add(proto)
            return proto
        waiter: defer.Deferred[_CallProtocol] = defer.Deferred()
        self._waiters.append(waiter)
        return await waiter

    async def _connect(self) -> _CallProtocol:
        start = self.reactor.seconds()
        delays = self.retry.delays()
        while True:
            try:
                sock = _connected_unix_socket(self.address)
                break
            except OSError as err:
                if err.errno in (errno.EACCES, errno.EPERM):
                    raise errors.PermissionError(
                        f"Permission denied on the master socket {self.address}") from None
                if err.errno != errno.EAGAIN:
                    raise unreachable(self.address, str(err.strerror or err)) from None
            # EAGAIN: the backlog is full; masterd is there, just busy for a moment.
            if self._closed:
                raise errors.NoMasterError("The LUXI client is closed")
            waited = self.reactor.seconds() - start
            if waited >= self.connect_timeout:
                raise backlog_full(self.address, waited)
            await task.deferLater(self.reactor,
                                  min(next(delays), self.connect_timeout - waited))
        built: list[_CallProtocol] = []

        def build() -> _CallProtocol:
            proto = _CallProtocol()
            built.append(proto)
            return proto

        try:
            self.reactor.adoptStreamConnection(sock.fileno(), socket.AF_UNIX,
                                               Factory.forProtocol(build))
        finally:
            sock.close()  # the reactor holds its own duplicate of the descriptor
        (proto,) = built
        proto.on_lost = self._lost
        return proto

    def _release(self, proto: _CallProtocol) -> None:
        self._busy.discard(proto)
        if proto.lost or self._closed:
            self._wake_for_new_connection()
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.called:
                self._busy.add(proto)
                waiter.callback(proto)
                return
        self._idle.append(proto)

    def _lost(self, proto: _CallProtocol) -> None:
        if proto in self._idle:
            self._idle.remove(proto)

    def _wake_for_new_connection(self) -> None:
        # A busy connection went away: a waiter may now open a new one.
        if self._waiters and not self._closed:
            waiter = self._waiters.popleft()
            d = defer.Deferred.fromCoroutine(self._acquire())
            d.chainDeferred(waiter)

    def close(self) -> None:
        """Close every connection; waiting calls fail with NoMasterError."""
        self._closed = True
        for proto in self._idle + list(self._busy):
            proto._abort()
        self._idle.clear()
        while self._waiters:
            self._waiters.popleft().errback(errors.NoMasterError("The LUXI client is closed"))


EventsListener = Callable[[list[dict[str, Any]]], None]
StateListener = Callable[[bool, "dict[str, Any] | None"], None]


class _StreamProtocol(Protocol):
    """A SubscribeEvents connection: the first frame is the reply, then events."""

    def __init__(self, owner: EventStreamClient) -> None:
        self.owner = owner
        self._splitter = wire.FrameSplitter(max_size=MAX_RESPONSE)
        self.subscribed = False

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(wire.encode_request("SubscribeEvents", [self.owner.last_serial]))

    def dataReceived(self, data: bytes) -> None:
        frames = self._splitter.feed(data)
        events: list[dict[str, Any]] = []
        unreadable: str | None
        for frame in frames:
            if not self.subscribed:
                try:
                    reply = wire.parse_response(frame)
                except Exception as err:
                    self.owner.log.error("SubscribeEvents refused by masterd: {err}", err=err)
                    self._drop()
                    return
                self.subscribed = True
                self.owner._subscribed(reply if isinstance(reply, dict) else {})
                continue
            try:
                event = load_json(frame)
            except ValueError:  # not JSON, or nested too deep
                unreadable = "Unreadable event"
                break
            if isinstance(event, dict):
                events.append(event)
        else:
            unreadable = "Oversized event" if self._splitter.overflow is not None else None
        if events:
            self.owner._events(events)
        if unreadable is not None:
            # Resuming from the last serial would replay the same event for ever.
            self.owner._lost_track(unreadable)
            self._drop()

    def _drop(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure = error.ConnectionDone) -> None:  # type: ignore[assignment]
        self.owner._disconnected(self)


class EventStreamClient:
    """One resuming ``SubscribeEvents`` stream from masterd (see the module doc)."""

    log = Logger()

    def __init__(self, reactor: Any, address: str, since: int | None = None,
                 retry_initial: float = 0.1, retry_max: float = 5.0,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self.reactor = reactor
        self.address = address
        self.last_serial = since
        self.retry_initial = retry_initial
        self.retry_max = retry_max
        self.connect_timeout = connect_timeout
        self.connected = False
        self._delay = retry_initial
        self._proto: _StreamProtocol | None = None
        self._retry: IDelayedCall | None = None
        self._running = False
        self._on_events: EventsListener = lambda events: None
        self._on_state: StateListener = lambda up, reply: None

    def start(self, on_events: EventsListener,
              on_state: StateListener | None = None) -> None:
        """Connect and deliver event batches to ``on_events``; state changes to ``on_state``."""
        self._on_events = on_events
        if on_state is not None:
            self._on_state = on_state
        self._running = True
        self._connect()

    def stop(self) -> None:
        """Close the stream and stop reconnecting."""
        self._running = False
        if self._retry is not None and self._retry.active():
            self._retry.cancel()
        self._retry = None
        if self._proto is not None and self._proto.transport is not None:
            self._proto.transport.loseConnection()

    def _connect(self) -> None:
        self._retry = None
        if not self._running:
            return
        endpoint = UNIXClientEndpoint(self.reactor, self.address, timeout=self.connect_timeout)
        d = endpoint.connect(Factory.forProtocol(lambda: _StreamProtocol(self)))
        d.addCallbacks(self._made, self._connect_failed)

    def _made(self, proto: _StreamProtocol) -> None:
        self._proto = proto
        if not self._running and proto.transport is not None:
            proto.transport.loseConnection()

    def _connect_failed(self, failure: Failure) -> None:
        self.log.debug("Event stream: cannot connect to {address}: {err}",
                       address=self.address, err=failure.value)
        self._schedule_retry()

    def _schedule_retry(self) -> None:
        if self._running and self._retry is None:
            self._retry = self.reactor.callLater(self._delay, self._connect)
            self._delay = min(self._delay * 2, self.retry_max)

    def _subscribed(self, reply: dict[str, Any]) -> None:
        self.connected = True
        self._delay = self.retry_initial
        if self.last_serial is None and isinstance(reply.get("last_serial"), int):
            self.last_serial = reply["last_serial"]
        self.log.info("Event stream from masterd open (serial {serial})",
                      serial=self.last_serial)
        self._on_state(True, reply)

    def _events(self, events: list[dict[str, Any]]) -> None:
        for event in reversed(events):
            serial = event.get("serial")
            if isinstance(serial, int):
                self.last_serial = serial
                break
        self._on_events(events)

    def _lost_track(self, what: str) -> None:
        """An event could not be read: resubscribe from now, and tell the consumer
        to re-read the state (a resync without a serial, as masterd sends one)."""
        self.log.error("{what} from masterd after serial {serial}; resubscribing from now "
                       "(resync)", what=what, serial=self.last_serial)
        self.last_serial = None
        self._on_events([{"kind": "resync", "reason": f"{what.lower()} from masterd"}])

    def _disconnected(self, proto: _StreamProtocol) -> None:
        if self._proto is proto:
            self._proto = None
        was_connected, self.connected = self.connected, False
        if was_connected:
            self.log.warn("Event stream from masterd lost; reconnecting")
            self._on_state(False, None)
        self._schedule_retry()
