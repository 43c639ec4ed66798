"""An in-memory TCP network on a test clock: ``listenTCP`` and ``connectTCP`` (what
Twisted's TCP endpoints use) between protocols of one process, every delivery a
``callLater(0)`` on the clock, so a test that advances its clock (an
:class:`~tests.fakes.masterd.InProcessMaster` finishing a job) also carries the
bytes; nothing touches a socket or the global reactor.

    tcp = MemoryTcp(clock)
    net.tcp = tcp    # the in-process nodes' mirrors listen and connect through it
    tcp.cut("127.0.1.2")   # that address stops answering (connections refused)
"""

from __future__ import annotations

from typing import Any

from twisted.internet import error
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure


class _Transport:
    """One side of an in-memory connection."""

    disconnecting = False

    def __init__(self, tcp: MemoryTcp, host: IPv4Address, peer: IPv4Address) -> None:
        self.tcp = tcp
        self.host, self.peer = host, peer
        self.protocol: Any = None
        self.other: _Transport | None = None
        self.closed = False

    def getHost(self) -> IPv4Address:
        return self.host

    def getPeer(self) -> IPv4Address:
        return self.peer

    def write(self, data: bytes) -> None:
        if not self.closed and not self.disconnecting:
            self.tcp.clock.callLater(0, self._deliver, data)

    def writeSequence(self, data: list[bytes]) -> None:
        self.write(b"".join(data))

    def _deliver(self, data: bytes) -> None:
        other = self.other
        if other is not None and not other.closed:
            other.protocol.dataReceived(data)

    def loseConnection(self) -> None:
        if not self.disconnecting:
            self.disconnecting = True  # after what was written (FIFO on the clock)
            self.tcp.clock.callLater(0, self.abortConnection)

    def abortConnection(self) -> None:
        for side in (self, self.other):
            if side is not None and not side.closed:
                side.closed = True
                side.tcp.clock.callLater(0, side.protocol.connectionLost,
                                         Failure(error.ConnectionDone()))

    def setTcpNoDelay(self, enabled: bool) -> None:
        pass

    def setTcpKeepAlive(self, enabled: bool) -> None:
        pass

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        self.loseConnection()


class _Port:
    def __init__(self, tcp: MemoryTcp, key: tuple[str, int]) -> None:
        self.tcp, self.key = tcp, key

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", self.key[0], self.key[1])

    def stopListening(self) -> None:
        self.tcp.listeners.pop(self.key, None)

    def startListening(self) -> None:
        pass


class _Connector:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.cancelled = False

    def stopConnecting(self) -> None:
        self.cancelled = True

    def disconnect(self) -> None:
        self.cancelled = True

    def getDestination(self) -> IPv4Address:
        return IPv4Address("TCP", self.host, self.port)


class MemoryTcp:
    """The network (see the module docstring); ``listeners`` maps ``(address, port)``
    to the listening factory, ``down`` holds addresses that answer nothing."""

    def __init__(self, clock: IReactorTime) -> None:
        self.clock = clock
        self.listeners: dict[tuple[str, int], Any] = {}
        self.down: set[str] = set()

    def cut(self, address: str) -> None:
        """``address`` answers nothing any more (until :meth:`mend`)."""
        self.down.add(address)

    def mend(self, address: str) -> None:
        self.down.discard(address)

    def listenTCP(self, port: int, factory: Any, backlog: int = 50,
                  interface: str = "") -> _Port:
        key = (interface, port)
        if key in self.listeners:
            raise error.CannotListenError(interface, port, OSError(98, "Address in use"))
        self.listeners[key] = factory
        factory.doStart()
        return _Port(self, key)

    def connectTCP(self, host: str, port: int, factory: Any, timeout: float = 30,
                   bindAddress: tuple[str, int] | None = None  # noqa: N803 (IReactorTCP)
                   ) -> _Connector:
        connector = _Connector(host, port)
        self.clock.callLater(0, self._connect, connector, factory,
                             (bindAddress or ("127.0.0.1", 0))[0])
        return connector

    def _connect(self, connector: _Connector, factory: Any, source: str) -> None:
        if connector.cancelled:
            return
        host, port = connector.host, connector.port
        server = self.listeners.get((host, port)) or self.listeners.get(("", port))
        if server is None or host in self.down or source in self.down:
            factory.clientConnectionFailed(connector, Failure(error.ConnectionRefusedError()))
            return
        client_addr = IPv4Address("TCP", source, 40000)
        server_addr = IPv4Address("TCP", host, port)
        client_t = _Transport(self, client_addr, server_addr)
        server_t = _Transport(self, server_addr, client_addr)
        client_t.other, server_t.other = server_t, client_t
        server_p = server.buildProtocol(client_addr)
        client_p = factory.buildProtocol(server_addr)
        if server_p is None or client_p is None:
            factory.clientConnectionFailed(connector, Failure(error.ConnectionRefusedError()))
            return
        server_t.protocol, client_t.protocol = server_p, client_p
        server_p.makeConnection(server_t)
        client_p.makeConnection(client_t)
