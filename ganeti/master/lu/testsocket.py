"""The Unix socket through which Ganeti's test opcodes talk to a client.

OP_TEST_JQUEUE tells the client (``gnt-debug test-jobqueue``) the path of a
fresh socket in a log message and waits until the client connects and then
closes the connection (or sends a byte); in between, the client checks the
job's status.  OP_TEST_DELAY with ``interruptible`` waits on such a socket
instead of sleeping: a connection, then a byte or the end of it, stops the
delay early.  This is Ganeti's protocol (cmdlib/test.py's TestSocketWrapper);
the socket lives in its own temporary directory, readable by its owner only,
which is removed as soon as the client has connected (or has not, in time).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from typing import Any, cast

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IListeningPort, IReactorTime, IReactorUNIX
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.python.failure import Failure

#: Ganeti's timeouts: for the client to connect, then to confirm (close).
CONNECT_TIMEOUT = 20.0
CONFIRM_TIMEOUT = 60.0


class SocketTimeout(Exception):
    """The client did not connect, or did not confirm, in time."""


class _Peer(Protocol):
    def __init__(self, owner: TestSocket) -> None:
        self.owner = owner

    def connectionMade(self) -> None:
        self.owner._connected(self)

    def dataReceived(self, data: bytes) -> None:
        self.owner._confirmed(self)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self.owner._confirmed(self)


class _PeerFactory(Factory):
    noisy = False

    def __init__(self, owner: TestSocket) -> None:
        self.owner = owner

    def buildProtocol(self, addr: Any) -> Protocol:
        return _Peer(self.owner)


class TestSocket:
    """One listening socket for one client; use :meth:`open`, then the waits."""

    def __init__(self, reactor: Any, run_blocking: Callable[..., defer.Deferred[Any]]) -> None:
        if not IReactorUNIX.providedBy(reactor):
            raise SocketTimeout("this master cannot listen on Unix sockets")
        self._reactor = reactor
        self._clock = cast(IReactorTime, reactor)
        self._run_blocking = run_blocking
        self._dir: str | None = None
        self._port: IListeningPort | None = None
        self._peer: _Peer | None = None
        self._on_connect: defer.Deferred[None] = defer.Deferred()
        self._on_confirm: defer.Deferred[None] = defer.Deferred()
        self.path = ""

    async def open(self) -> str:
        """Listen on a new socket; its path."""
        self._dir = await self._run_blocking(tempfile.mkdtemp)  # /tmp/tmpXXXXXXXX, as Ganeti
        self.path = f"{self._dir}/sock"
        self._port = self._reactor.listenUNIX(self.path, _PeerFactory(self), mode=0o600)
        return self.path

    def _connected(self, peer: _Peer) -> None:
        if self._peer is not None:  # one client only
            if peer.transport is not None:
                peer.transport.loseConnection()
            return
        self._peer = peer
        if not self._on_connect.called:
            self._on_connect.callback(None)

    def _confirmed(self, peer: _Peer) -> None:
        if peer is self._peer and not self._on_confirm.called:
            self._on_confirm.callback(None)

    async def _wait(self, d: defer.Deferred[None], timeout: float) -> bool:
        """Whether ``d`` fired within ``timeout`` seconds."""
        waiter: defer.Deferred[bool] = defer.Deferred()

        def fire(value: bool) -> None:
            if not waiter.called:
                waiter.callback(value)

        def on_result(result: object) -> object:
            fire(True)
            return result

        d.addBoth(on_result)
        timer: IDelayedCall = self._clock.callLater(max(timeout, 0.0), fire, False)
        try:
            return await waiter
        finally:
            if timer.active():
                timer.cancel()

    async def wait_connect(self, timeout: float = CONNECT_TIMEOUT) -> bool:
        """Wait for the client to connect; stop listening either way (the directory
        goes too).  Whether it connected in time."""
        try:
            return await self._wait(self._on_connect, timeout)
        finally:
            await self._stop_listening()

    async def wait_confirm(self, timeout: float = CONFIRM_TIMEOUT) -> bool:
        """Wait for a byte from the client or the end of its connection; whether it
        came in time.  The connection is closed either way."""
        try:
            return await self._wait(self._on_confirm, timeout)
        finally:
            self.close_peer()

    def close_peer(self) -> None:
        if self._peer is not None and self._peer.transport is not None:
            self._peer.transport.loseConnection()

    async def _stop_listening(self) -> None:
        if self._port is not None:
            port, self._port = self._port, None
            await defer.maybeDeferred(port.stopListening)
        if self._dir is not None:
            directory, self._dir = self._dir, None
            await self._run_blocking(shutil.rmtree, directory, True)

    async def close(self) -> None:
        """Release everything (idempotent)."""
        self.close_peer()
        await self._stop_listening()
