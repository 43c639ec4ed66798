"""Helpers of the console tests: a fake QEMU serial chardev (a unix socket server),
a noded console endpoint on real TLS, and a WebSocket test client."""

import base64
import os
import shutil
import tempfile

from autobahn.twisted.websocket import WebSocketClientFactory, WebSocketClientProtocol
from twisted.internet import defer, protocol, reactor
from twisted.internet.endpoints import (
    SSL4ServerEndpoint,
    TCP4ClientEndpoint,
    UNIXServerEndpoint,
    wrapClientTLS,
)
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

from ganeti.core import consoles
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.console import PATH_PREFIX, console_resource
from ganeti.noded.server import make_site
from ganeti.noded.tls import ClusterServerContextFactory
from tests.fakes.configs import node_paths
from tests.noded.tlshelpers import CustomPolicy

CHUNK = 64 * 1024


_PATTERN = bytes(i % 251 for i in range(CHUNK + 251))


def pattern(start, size):
    """The bytes :meth:`_SerialClient.flood` writes from offset ``start``."""
    offset = start % 251
    return _PATTERN[offset:offset + size]


def short_paths(testcase):
    """Paths of a virtual node in a short temporary directory (a unix socket path
    must stay under 108 bytes)."""
    base = tempfile.mkdtemp(prefix="gcon", dir="/tmp")
    testcase.addCleanup(shutil.rmtree, base, True)
    return node_paths(base)


async def quiesce(limit=5.0):
    """Wait until no TCP or unix connection is left open (listeners stay), then abort
    any left: the two ends of a real connection close a few reactor turns apart."""
    from twisted.internet import task, tcp

    def open_connections():
        return [s for s in set(reactor.getReaders()) | set(reactor.getWriters())
                if isinstance(s, tcp.Connection)]
    waited = 0.0
    while open_connections() and waited < limit:
        await task.deferLater(reactor, 0.01, lambda: None)
        waited += 0.01
    for conn in open_connections():
        conn.abortConnection()
    if waited >= limit:
        await task.deferLater(reactor, 0, lambda: None)


async def plateau(fake, step=0.05, limit=20.0):
    """How much a flooding fake serial wrote once it stopped making progress (held
    back by its reader) or finished: its count, read until two readings agree."""
    from twisted.internet import task
    last = -1
    waited = 0.0
    while waited < limit:
        await task.deferLater(reactor, step, lambda: None)
        waited += step
        now = fake.written
        if (now == last and fake.paused) or fake.flooding == 0:
            return now
        last = now
    return fake.written


class Waiter:
    """Bytes received so far; ``until(data)`` fires once they contain ``data``."""

    def __init__(self):
        self.data = b""
        self._waiting = []

    def add(self, data):
        self.data += data
        for want, d in list(self._waiting):
            if want in self.data:
                self._waiting.remove((want, d))
                d.callback(self.data)

    def until(self, want):
        if want in self.data:
            return defer.succeed(self.data)
        d = defer.Deferred()
        self._waiting.append((want, d))
        return d.addTimeout(10, reactor)


@implementer(IPushProducer)
class _SerialClient(protocol.Protocol):
    paused = False
    flooding = 0  # bytes still to write as fast as the reader takes them
    written = 0
    pauses = 0

    def connectionMade(self):
        self.factory.fake.clients.append(self)
        self.factory.fake.connected.add(b"x")
        self.transport.registerProducer(self, True)

    def flood(self, total):
        """Write ``total`` bytes (a counting pattern) as fast as they are taken."""
        self.flooding = total
        self._pump()

    def _pump(self):
        while self.flooding > 0 and not self.paused:
            size = min(CHUNK, self.flooding)
            self.transport.write(pattern(self.written, size))
            self.written += size
            self.flooding -= size
            if self.written % (16 * CHUNK) == 0:
                reactor.callLater(0, self._pump)  # let the reactor turn
                return

    def pauseProducing(self):
        self.paused = True
        self.pauses += 1
        self.factory.fake.paused.add(b"p")

    def resumeProducing(self):
        self.paused = False
        self._pump()

    def stopProducing(self):
        self.flooding = 0

    def dataReceived(self, data):
        self.factory.fake.received.add(data)

    def connectionLost(self, reason=protocol.connectionDone):
        self.factory.fake.lost.add(b"x")


class FakeSerial:
    """QEMU's chardev server on ``RUN_DIR/kvm-hypervisor/ctrl/<name>.serial``."""

    def __init__(self, testcase, run_dir, name):
        self.testcase = testcase
        self.path = consoles.serial_socket_path(run_dir, name)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.clients = []
        self.received = Waiter()
        self.connected = Waiter()
        self.lost = Waiter()
        self.paused = Waiter()
        self.port = None

    async def start(self):
        factory = protocol.Factory.forProtocol(_SerialClient)
        factory.fake = self
        self.port = await UNIXServerEndpoint(reactor, self.path).listen(factory)
        self.testcase.addCleanup(self.stop)

    def write(self, data):
        self.clients[-1].transport.write(data)

    async def stop(self):
        """The instance stops: the socket and every connection on it go."""
        if self.port is not None:
            port, self.port = self.port, None
            await port.stopListening()
        for client in self.clients:
            client.transport.loseConnection()


class NodeConsole:
    """A noded site (only the console stream) on 127.0.0.1 with mutual TLS."""

    def __init__(self, testcase, paths, cluster):
        self.testcase = testcase
        self.cluster = cluster
        ctx = NodeContext(paths=paths, clock=reactor, run=defer.maybeDeferred)
        self.site = make_site(ctx, {}, reactor=reactor,
                              streams={PATH_PREFIX: console_resource(reactor, paths.run_dir)})
        self.protocols = []
        build = self.site.buildProtocol

        def tracked(addr):
            proto = build(addr)
            self.protocols.append(proto)
            return proto
        self.site.buildProtocol = tracked

    async def start(self):
        endpoint = SSL4ServerEndpoint(reactor, 0, ClusterServerContextFactory(self.cluster),
                                      interface="127.0.0.1")
        self.port = await endpoint.listen(self.site)
        self.testcase.addCleanup(self.stop)
        return self.port.getHost().port

    async def stop(self):
        await self.port.stopListening()
        for proto in self.protocols:
            transport = getattr(proto, "transport", None) or getattr(
                getattr(proto, "_channel", None), "transport", None)
            if transport is not None and not getattr(transport, "disconnected", False):
                transport.abortConnection()


class _Client(WebSocketClientProtocol):
    def onOpen(self):
        self.factory.opened.callback(self)

    def onMessage(self, payload, is_binary):
        self.factory.binary.append(is_binary)
        if self.factory.counter is not None:
            self.factory.counter.add(payload)
        else:
            self.factory.received.add(payload)

    def onClose(self, was_clean, code, reason):
        if not self.factory.opened.called:
            self.factory.opened.errback(ConnectionError(f"closed {code} {reason}"))
        if not self.factory.closed.called:
            self.factory.closed.callback((code, reason))


class Counter:
    """Counts (and checks against :func:`pattern`) a flood; ``until(n)`` fires at n bytes."""

    def __init__(self):
        self.count = 0
        self.bad = None
        self._waiting = []

    def add(self, data):
        if self.bad is None and data != pattern(self.count, len(data)):
            self.bad = self.count
        self.count += len(data)
        for want, d in list(self._waiting):
            if self.count >= want:
                self._waiting.remove((want, d))
                d.callback(self.count)

    def until(self, want):
        if self.count >= want:
            return defer.succeed(self.count)
        d = defer.Deferred()
        self._waiting.append((want, d))
        return d.addTimeout(30, reactor)


class ConsoleClient:
    """A WebSocket client over TLS (presenting ``cert``, trusting any server)."""

    def __init__(self, testcase, port, path, cert=None, user=None, password=None,
                 origin=None):
        self.testcase = testcase
        headers = {}
        if user is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        self.factory = WebSocketClientFactory(f"wss://127.0.0.1:{port}{path}",
                                              headers=headers, origin=origin)
        self.factory.protocol = _Client
        self.factory.setProtocolOptions(openHandshakeTimeout=0, closeHandshakeTimeout=0,
                                        autoPingInterval=0)
        self.factory.opened = defer.Deferred()
        self.factory.closed = defer.Deferred()
        self.factory.received = Waiter()
        self.factory.binary = []
        self.factory.counter = None
        self.endpoint = wrapClientTLS(CustomPolicy(cert).creatorForNetloc(b"", port),
                                      TCP4ClientEndpoint(reactor, "127.0.0.1", port))
        self.proto = None

    async def connect(self):
        self.proto = await self.endpoint.connect(self.factory)
        self.testcase.addCleanup(self.abort)
        return self

    async def opened(self):
        await self.factory.opened.addTimeout(10, reactor)

    async def closed(self):
        return await self.factory.closed.addTimeout(10, reactor)

    def until(self, data):
        return self.factory.received.until(data)

    def send(self, data, binary=True):
        self.proto.sendMessage(data, isBinary=binary)

    def abort(self):
        transport = self.proto.transport if self.proto is not None else None
        if transport is not None and not self.factory.closed.called \
                and not getattr(transport, "disconnected", False):
            transport.abortConnection()
