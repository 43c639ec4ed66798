"""An in-memory TCP network on a fake clock, for node daemons that listen and connect
(the drbd mirrors) inside a test whose reactor is a ``MemoryReactorClock``.

:class:`LoopTCP` provides ``listenTCP`` and ``connectTCP`` (what
``TCP4ClientEndpoint`` and ``Factory`` listeners use): a connection to an address
nobody listens on is refused; otherwise both protocols are connected and every
write, close and abort is delivered by the clock (``callLater(0, ...)``), so a test
that advances the clock (``InProcessMaster.finish``) also runs the network, with no
real socket and no real time.  ``partition`` cuts addresses off (their connections
are refused), as an unplugged cable would.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import error
from twisted.internet.address import IPv4Address
from twisted.python.failure import Failure


class _Transport:
    """One end of an in-memory connection."""

    disconnecting = False

    def __init__(self, net: LoopTCP, host: IPv4Address, peer: IPv4Address) -> None:
        self.net = net
        self.host, self.peer = host, peer
        self.protocol: Any = None
        self.other: _Transport | None = None
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed or self.disconnecting or self.other is None:
            return
        other = self.other
        self.net.clock.callLater(0, other._receive, data)

    def writeSequence(self, seq: list[bytes]) -> None:
        self.write(b"".join(seq))

    def _receive(self, data: bytes) -> None:
        if not self.closed:
            self.protocol.dataReceived(data)

    def loseConnection(self) -> None:
        if self.closed or self.disconnecting:
            return
        self.disconnecting = True
        self.net.clock.callLater(0, self._close_both, error.ConnectionDone())

    def abortConnection(self) -> None:
        if not self.closed:
            self.disconnecting = True
            self.net.clock.callLater(0, self._close_both, error.ConnectionAborted())

    def _close_both(self, reason: Exception) -> None:
        for end in (self, self.other):
            if end is not None and not end.closed:
                end.closed = True
                end.protocol.connectionLost(Failure(reason))

    def getHost(self) -> IPv4Address:
        return self.host

    def getPeer(self) -> IPv4Address:
        return self.peer

    def setTcpNoDelay(self, enabled: bool) -> None:
        pass

    def setTcpKeepAlive(self, enabled: bool) -> None:
        pass

    def registerProducer(self, producer: Any, streaming: bool) -> None:
        pass

    def unregisterProducer(self) -> None:
        pass

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        self.loseConnection()


class _Port:
    """A listening address (``IListeningPort``)."""

    def __init__(self, net: LoopTCP, address: IPv4Address, factory: Any) -> None:
        self.net, self.address, self.factory = net, address, factory

    def stopListening(self) -> None:
        key = (self.address.host, self.address.port)
        if self.net.listeners.get(key) is self:
            del self.net.listeners[key]
            self.factory.doStop()

    def getHost(self) -> IPv4Address:
        return self.address


class _Connector:
    """What ``connectTCP`` returns (``IConnector``)."""

    def __init__(self, net: LoopTCP, host: str, port: int, factory: Any,
                 bind: tuple[str, int] | None) -> None:
        self.net, self.host, self.port, self.factory = net, host, port, factory
        self.bind = bind
        self.stopped = False
        self.transport: _Transport | None = None

    def getDestination(self) -> IPv4Address:
        return IPv4Address("TCP", self.host, self.port)

    def stopConnecting(self) -> None:
        self.stopped = True

    def disconnect(self) -> None:
        self.stopped = True
        if self.transport is not None:
            self.transport.loseConnection()

    def connect(self) -> None:
        if self.stopped:
            return
        self.factory.doStart()
        self.factory.startedConnecting(self)
        local = self.bind[0] if self.bind else "127.0.0.1"
        port = self.net.listeners.get((self.host, self.port))
        if port is None or self.host in self.net.cut or local in self.net.cut:
            self.factory.clientConnectionFailed(self, Failure(error.ConnectionRefusedError()))
            self.factory.doStop()
            return
        self.net.next_port += 1
        caddr = IPv4Address("TCP", local, self.net.next_port)
        saddr = IPv4Address("TCP", self.host, self.port)
        client = _Transport(self.net, caddr, saddr)
        server = _Transport(self.net, saddr, caddr)
        client.other, server.other = server, client
        sproto = port.factory.buildProtocol(caddr)
        if sproto is None:
            self.factory.clientConnectionFailed(self, Failure(error.ConnectionRefusedError()))
            return
        cproto = self.factory.buildProtocol(saddr)
        client.protocol, server.protocol = cproto, sproto
        self.transport = client
        sproto.makeConnection(server)
        cproto.makeConnection(client)


class LoopTCP:
    """The network: listeners by (address, port), driven by ``clock``."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.listeners: dict[tuple[str, int], _Port] = {}
        self.cut: set[str] = set()
        self.next_port = 40000

    def listenTCP(self, port: int, factory: Any, backlog: int = 50,
                  interface: str = "") -> _Port:
        key = (interface or "0.0.0.0", port)
        if key in self.listeners:
            raise error.CannotListenError(interface, port, OSError(98, "Address in use"))
        listener = _Port(self, IPv4Address("TCP", key[0], port), factory)
        self.listeners[key] = listener
        factory.doStart()
        return listener

    def connectTCP(self, host: str, port: int, factory: Any, timeout: float = 30,
                   bindAddress: tuple[str, int] | None = None) -> _Connector:  # noqa: N803
        connector = _Connector(self, host, port, factory, bindAddress)
        self.clock.callLater(0, connector.connect)
        return connector

    def partition(self, *hosts: str) -> None:
        """New connections from or to ``hosts`` are refused."""
        self.cut.update(hosts)

    def heal(self) -> None:
        """Every address is reachable again."""
        self.cut.clear()
