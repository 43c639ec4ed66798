"""A QMP client on Twisted: QEMU's machine protocol over a UNIX socket.

QMP is one JSON object a line each way.  The server greets (``{"QMP": ...}``),
the client negotiates (``qmp_capabilities``), then sends commands, each with
an ``id`` the answer echoes (``{"return": ...}`` or ``{"error": {"class",
"desc"}}``), while the server sends events (``{"event": NAME, "data": ...}``)
at any time.  :class:`QMPProtocol` keeps one Deferred per command id, hands
every event to its listeners and fails what is pending when the connection
is lost.  Every wait is bounded on the injected clock; nothing blocks the
reactor.  :func:`connect` opens a socket and negotiates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, endpoints, protocol
from twisted.internet.interfaces import IReactorTime, IReactorUNIX
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()

#: Seconds a command may take before its Deferred fails with QMPTimeout.
DEFAULT_TIMEOUT = 30.0
#: The longest line the server may send (a query of a big graph stays far below).
MAX_LINE = 16 * 1024 * 1024

EventListener = Callable[[str, dict[str, Any]], None]


class QMPError(Exception):
    """QEMU answered a command with an error: its ``class`` and ``desc``."""

    def __init__(self, command: str, error_class: str, desc: str) -> None:
        super().__init__(f"{command}: {desc} ({error_class})")
        self.command = command
        self.error_class = error_class
        self.desc = desc


class QMPTimeout(Exception):
    """A command (or the greeting) got no answer in time."""


class QMPDisconnected(Exception):
    """The connection to QEMU was lost before the answer came."""


class QMPProtocol(protocol.Protocol):
    """One QMP connection: commands with ids, events to listeners."""

    def __init__(self, clock: IReactorTime, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.clock = clock
        self.timeout = timeout
        self.greeting: defer.Deferred[dict[str, Any]] = defer.Deferred()
        self.pending: dict[str, tuple[str, defer.Deferred[Any]]] = {}
        self.listeners: list[EventListener] = []
        self.lost: defer.Deferred[None] = defer.Deferred()
        self.connected_ = False
        self._buffer = b""
        self._next_id = 0

    # -- protocol ---------------------------------------------------------------------

    def connectionMade(self) -> None:
        self.connected_ = True

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        while b"\n" in self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
            if line.strip():
                self._line(line)
        if len(self._buffer) > MAX_LINE:
            log.warn("QMP line too long; closing the connection")
            self._buffer = b""
            if self.transport is not None:
                self.transport.loseConnection()

    def _line(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            log.warn("Unparsable QMP line: {line!r:.200}", line=line)
            return
        if not isinstance(msg, dict):
            return
        if "QMP" in msg:
            if not self.greeting.called:
                self.greeting.callback(msg)
            return
        if "event" in msg:
            for listener in list(self.listeners):
                try:
                    listener(str(msg["event"]), msg.get("data") or {})
                except Exception:  # a listener's bug must not break the connection
                    log.failure("QMP event listener failed")
            return
        entry = self.pending.pop(str(msg.get("id")), None)
        if entry is None:
            return
        command, d = entry
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            d.errback(QMPError(command, str(err.get("class", "")), str(err.get("desc", ""))))
        else:
            d.callback(msg.get("return"))

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.connected_ = False
        pending, self.pending = self.pending, {}
        for command, d in pending.values():
            d.errback(QMPDisconnected(f"{command}: connection to QEMU lost"))
        if not self.greeting.called:
            self.greeting.errback(QMPDisconnected("connection to QEMU lost before its greeting"))
        if not self.lost.called:
            self.lost.callback(None)

    # -- API --------------------------------------------------------------------------

    def execute(self, command: str, arguments: dict[str, Any] | None = None,
                timeout: float | None = None) -> defer.Deferred[Any]:
        """Send ``command``; the Deferred fires with its ``return`` value, or fails with
        QMPError (QEMU's error), QMPTimeout or QMPDisconnected."""
        if not self.connected_ or self.transport is None:
            return defer.fail(QMPDisconnected(f"{command}: not connected to QEMU"))
        self._next_id += 1
        ident = str(self._next_id)
        msg: dict[str, Any] = {"execute": command, "id": ident}
        if arguments:
            msg["arguments"] = arguments
        def forget(_: defer.Deferred[Any]) -> None:
            self.pending.pop(ident, None)
        d: defer.Deferred[Any] = defer.Deferred(forget)
        self.pending[ident] = (command, d)
        self.transport.write(json.dumps(msg).encode() + b"\n")
        limit = self.timeout if timeout is None else timeout
        return d.addTimeout(limit, self.clock,
                            onTimeoutCancel=lambda *_: _timed_out(command, limit))

    def close(self) -> None:
        """Close the connection (pending commands fail)."""
        if self.transport is not None:
            self.transport.loseConnection()


def _timed_out(command: str, limit: float) -> None:
    raise QMPTimeout(f"{command}: no answer from QEMU in {limit:g} s")


async def connect(reactor: IReactorUNIX, clock: IReactorTime, path: str,
                  timeout: float = DEFAULT_TIMEOUT) -> QMPProtocol:
    """Connect to the QMP socket ``path``, wait for the greeting and negotiate."""
    proto = QMPProtocol(clock, timeout)
    endpoint = endpoints.UNIXClientEndpoint(reactor, path, timeout=int(max(timeout, 1)))
    await endpoints.connectProtocol(endpoint, proto)
    try:
        await proto.greeting.addTimeout(
            timeout, clock, onTimeoutCancel=lambda *_: _timed_out("greeting", timeout))
        await proto.execute("qmp_capabilities")
    except BaseException:
        proto.close()
        raise
    return proto
