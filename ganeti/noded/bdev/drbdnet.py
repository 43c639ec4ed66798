"""The emulated mirror's network: a TCP listener per net-attached minor and the
handshake that tells each side its peer's state.

While its network is attached a device listens on ``local-ip:port`` (both
sides use the resource's port, each on its own address, as DRBD does).  A side
learns whether it is connected by asking: it connects from ``local-ip`` to
``remote-ip:port`` and sends one JSON line (which minor it is, which minor it
expects, a proof that it knows the resource's secret, its own state); the peer
checks all of that and answers one JSON line with its role, disk state and
resync progress, or refuses.  No answer within :data:`HANDSHAKE_TIMEOUT`
seconds on the node's clock (refused, reset, unreachable, a peer that is not
listening because its network is down or its daemon stopped) means "not
connected".  An answer also wakes whoever waits on that minor
(``drbd_attach_net`` waiting for its peer), so a waiter does not depend on
its clock being advanced.

:class:`MirrorNet` is one per node daemon: it holds the listeners, a lock per
minor for the read-modify-write of its record (:mod:`.drbdstate`), and the
start-up re-listening of minors whose record says their net is attached.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from twisted.internet import defer, error
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.interfaces import IListeningPort, IReactorTCP, IReactorTime
from twisted.internet.protocol import Factory, connectionDone
from twisted.logger import Logger
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure

from ganeti.noded.bdev import drbdstate
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.drbdstate import MinorState

log = Logger()

#: Seconds (node clock) a handshake may take before the peer counts as absent.
HANDSHAKE_TIMEOUT = 5.0
#: The longest line either side sends.
MAX_LINE = 16384

Runner = Callable[..., "defer.Deferred[Any]"]


def proof(secret: str, port: int | None) -> str:
    """What shows the peer that this side knows the resource's secret."""
    return hmac.new(secret.encode("utf-8"), f"ganeti-drbd:{port}".encode(),
                    hashlib.sha256).hexdigest()


class _Server(LineOnlyReceiver):
    """The listening side of one handshake: one line in, one line out, closed."""

    delimiter = b"\n"
    MAX_LENGTH = MAX_LINE

    def __init__(self, net: MirrorNet, minor: int) -> None:
        self.net = net
        self.minor = minor
        self._timer: Any = None
        self._asked = False

    def connectionMade(self) -> None:
        self.net.servers.add(self)
        self._timer = self.net.clock.callLater(HANDSHAKE_TIMEOUT, self._expire)

    def _expire(self) -> None:
        self._timer = None
        _abort(self.transport)

    def lineReceived(self, line: bytes) -> None:
        if self._asked:
            return  # one question per connection
        self._asked = True
        self.net.served(logged_deferred(self._answer(line)))

    async def _answer(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError:
            answer: dict[str, Any] = {"ok": False, "error": "malformed handshake"}
        else:
            peer = self.transport.getPeer() if self.transport is not None else None
            peer_host = getattr(peer, "host", None)
            answer = await self.net.answer(self.minor, request, peer_host)
        if self.transport is not None and self.connected:
            self.transport.write(json.dumps(answer).encode() + b"\n")
            self.transport.loseConnection()

    def lineLengthExceeded(self, line: bytes) -> None:
        _abort(self.transport)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self.net.servers.discard(self)
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None


def _abort(transport: Any) -> None:
    if transport is not None:
        transport.abortConnection()


def logged_deferred(coro: Any) -> defer.Deferred[Any]:
    """A coroutine as a Deferred whose failure is logged, not lost."""
    d = defer.Deferred.fromCoroutine(coro)
    d.addErrback(lambda f: log.failure("drbd handshake", f))
    return d


class _Client(LineOnlyReceiver):
    """The asking side: sends its line, fires ``done`` with the answer (or None) once
    the connection is closed."""

    delimiter = b"\n"
    MAX_LENGTH = MAX_LINE

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.answer: dict[str, Any] | None = None
        self.done: defer.Deferred[dict[str, Any] | None] = defer.Deferred()

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(json.dumps(self.request).encode() + b"\n")

    def lineReceived(self, line: bytes) -> None:
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        self.answer = value if isinstance(value, dict) else None
        if self.transport is not None:
            self.transport.loseConnection()

    def lineLengthExceeded(self, line: bytes) -> None:
        _abort(self.transport)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if not self.done.called:
            self.done.callback(self.answer)


class MirrorNet:
    """The mirror listeners and handshakes of one node daemon (see the module doc).

    ``tcp`` is the reactor that listens and connects; None where the node has no
    network for mirrors (then attaching a network fails).  ``clock`` bounds the
    handshakes and times the resync; ``run`` runs the blocking file work.
    """

    def __init__(self, run_dir: str, clock: IReactorTime, run: Runner,
                 tcp: IReactorTCP | None) -> None:
        self.run_dir = run_dir
        self.clock = clock
        self.run = run
        self.tcp = tcp
        self.ports: dict[int, tuple[str, int, IListeningPort]] = {}
        self.servers: set[_Server] = set()
        self._locks: dict[int, defer.DeferredLock] = {}
        self._waiters: dict[int, list[defer.Deferred[None]]] = {}
        self._pending: set[defer.Deferred[Any]] = set()
        self.stopped = False

    # -- records ------------------------------------------------------------------------

    @asynccontextmanager
    async def locked(self, minor: int) -> AsyncIterator[None]:
        """Hold the lock of ``minor`` (one read-modify-write of its record at a time)."""
        lock = self._locks.setdefault(minor, defer.DeferredLock())
        await lock.acquire()
        try:
            yield
        finally:
            lock.release()

    async def load(self, minor: int) -> MinorState | None:
        """The record of ``minor`` (None: not configured)."""
        state: MinorState | None = await self.run(drbdstate.load, self.run_dir, minor)
        return state

    async def save(self, state: MinorState) -> None:
        """Write the record of ``state.minor``."""
        try:
            await self.run(drbdstate.save, self.run_dir, state)
        except OSError as err:
            raise BlockDeviceError(f"drbd{state.minor}: can't save its state: {err}") \
                from None

    async def delete(self, minor: int) -> None:
        """Close the minor's listener and free it."""
        await self.unlisten(minor)
        await self.run(drbdstate.delete, self.run_dir, minor)

    # -- listening ----------------------------------------------------------------------

    async def listen(self, state: MinorState) -> None:
        """Listen for the peer of ``state`` on its ``local_ip:port`` (kept if it does
        already)."""
        if state.local_ip is None or state.port is None:
            raise BlockDeviceError(f"drbd{state.minor}: no local address to listen on")
        current = self.ports.get(state.minor)
        if current is not None and current[:2] == (state.local_ip, state.port):
            return
        await self.unlisten(state.minor)
        if self.tcp is None or self.stopped:
            raise BlockDeviceError(f"drbd{state.minor}: this node has no network for "
                                   "mirrors")
        factory: Any = Factory.forProtocol(lambda: _Server(self, state.minor))
        try:
            port = self.tcp.listenTCP(state.port, factory, interface=state.local_ip)
        except error.CannotListenError as err:
            raise BlockDeviceError(f"drbd{state.minor}: can't listen on "
                                   f"{state.local_ip}:{state.port}: {err.socketError}") \
                from None
        self.ports[state.minor] = (state.local_ip, state.port, port)

    async def unlisten(self, minor: int) -> None:
        """Stop listening for the peer of ``minor`` (nothing if it does not)."""
        entry = self.ports.pop(minor, None)
        if entry is not None:
            await defer.maybeDeferred(entry[2].stopListening)

    def listening(self, minor: int) -> tuple[str, int] | None:
        """The address ``minor`` listens on, if it does."""
        entry = self.ports.get(minor)
        return None if entry is None else (entry[0], entry[1])

    # -- handshakes ---------------------------------------------------------------------

    async def ask_peer(self, state: MinorState) -> dict[str, Any] | None:
        """The peer's answer to a handshake from ``state`` (None: not connected)."""
        if (not state.net or self.tcp is None or self.stopped or state.remote_ip is None
                or state.port is None or self.listening(state.minor) is None):
            return None
        request = {"v": 1, "minor": state.minor, "peer_minor": state.remote_minor,
                   "proof": proof(state.secret, state.port), "state": state.peer_view()}
        client = _Client(request)
        bind = (state.local_ip, 0) if state.local_ip else None
        endpoint = TCP4ClientEndpoint(self.tcp, state.remote_ip, state.port,
                                      timeout=int(HANDSHAKE_TIMEOUT), bindAddress=bind)
        d = endpoint.connect(Factory.forProtocol(lambda: client))
        d.addCallback(lambda _: client.done)
        d.addTimeout(HANDSHAKE_TIMEOUT, self.clock)
        self._pending.add(d)
        try:
            answer = await d
        except (error.ConnectError, error.ConnectingCancelledError, error.ConnectionLost,
                defer.TimeoutError, defer.CancelledError, OSError):
            return None
        finally:
            self._pending.discard(d)
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            return None
        return answer

    async def answer(self, minor: int, request: dict[str, Any],
                     peer_host: str | None) -> dict[str, Any]:
        """The listening side's answer to a handshake for ``minor``."""
        async with self.locked(minor):
            state = await self.load(minor)
            refusal = _refusal(state, request, peer_host)
            if refusal is not None or state is None:
                return {"ok": False, "error": refusal}
            peer = request.get("state")
            peer = peer if isinstance(peer, dict) else {}
            if drbdstate.advance(state, peer, self.clock.seconds()):
                await self.save(state)
            answer = {"ok": True, **state.peer_view()}
        self.wake(minor)
        return answer

    def served(self, d: defer.Deferred[Any]) -> None:
        """Track an answer in progress (ended when the node stops)."""
        if not d.called:
            self._pending.add(d)

            def done(result: Any) -> Any:
                self._pending.discard(d)
                return result
            d.addBoth(done)

    # -- waiting ------------------------------------------------------------------------

    def wake(self, minor: int) -> None:
        """Wake whoever waits for news of ``minor``."""
        for d in self._waiters.pop(minor, []):
            if not d.called:
                d.callback(None)

    async def wait(self, minors: list[int], delay: float) -> None:
        """Wait ``delay`` seconds on the clock or until a peer of one of ``minors``
        asks, whichever comes first."""
        d: defer.Deferred[None] = defer.Deferred()
        for minor in minors:
            self._waiters.setdefault(minor, []).append(d)
        def expire() -> None:
            if not d.called:
                d.callback(None)
        timer = self.clock.callLater(delay, expire)
        try:
            await d
        finally:
            if timer.active():
                timer.cancel()
            for minor in minors:
                waiting = self._waiters.get(minor, [])
                if d in waiting:
                    waiting.remove(d)

    # -- the daemon ---------------------------------------------------------------------

    async def restart(self) -> None:
        """Listen again for every minor whose record says its net is attached (the
        node daemon starts; the peers see this side again)."""
        self.stopped = False
        states: list[MinorState] = await self.run(drbdstate.load_all, self.run_dir)
        for state in states:
            if not state.net:
                continue
            async with self.locked(state.minor):
                state.net_since = self.clock.seconds()
                try:
                    await self.save(state)
                    await self.listen(state)
                except BlockDeviceError as err:
                    log.error("Can't re-listen for drbd{minor}: {err}", minor=state.minor,
                              err=str(err))

    def start(self) -> defer.Deferred[None]:
        """:meth:`restart` as a Deferred (a daemon start-up step)."""
        return logged_deferred(self.restart())

    def stop(self) -> defer.Deferred[Any]:
        """Close every listener and handshake (the node daemon stops); the records
        stay."""
        self.stopped = True
        for d in list(self._pending):
            d.cancel()
        for server in list(self.servers):
            _abort(server.transport)
        ports = [entry[2] for entry in self.ports.values()]
        self.ports.clear()
        return defer.gatherResults([defer.maybeDeferred(p.stopListening) for p in ports],
                                   consumeErrors=True)


def _refusal(state: MinorState | None, request: dict[str, Any],
             peer_host: str | None) -> str | None:
    """Why a handshake is refused (None: it is not)."""
    if state is None or not state.net:
        return "minor not configured for the network"
    if request.get("peer_minor") != state.minor or request.get("minor") != state.remote_minor:
        return "minor mismatch"
    if not hmac.compare_digest(str(request.get("proof")), proof(state.secret, state.port)):
        return "authentication failed"
    if state.remote_ip is not None and peer_host not in (None, state.remote_ip):
        return f"unexpected peer address {peer_host}"
    return None
