"""Real TLS on 127.0.0.1: a noded site on an OS-chosen port, and test clients."""

import os

from OpenSSL import SSL
from twisted.internet import defer, reactor
from twisted.internet.endpoints import SSL4ServerEndpoint
from twisted.python.threadpool import ThreadPool
from twisted.web import client as webclient
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

from ganeti.core import crypto
from ganeti.noded.backend.context import NodeContext, thread_runner
from ganeti.noded.backend.registry import handlers
from ganeti.noded.server import make_site
from ganeti.noded.tls import ClusterServerContextFactory
from ganeti.rpc.tls import ClusterCertificate, _ClientCreator

_CERTS = {}


def cert(name):
    """A cached self-signed certificate (RSA key generation is slow)."""
    if name not in _CERTS:
        _CERTS[name] = ClusterCertificate.from_pem(crypto.generate_self_signed(name))
    return _CERTS[name]


class RealNode:
    """A noded site served with real TLS; counts and tracks its TCP connections."""

    def __init__(self, testcase, paths, cluster):
        self.testcase = testcase
        self.pool = ThreadPool(minthreads=1, maxthreads=2, name="test-noded")
        self.pool.start()
        self.ctx = NodeContext(paths=paths, clock=reactor, run=thread_runner(reactor, self.pool))
        self.site = make_site(self.ctx, handlers(), reactor=reactor)
        self.connections = 0
        self.open = set()
        self.requests = 0
        self.closed = {}
        original_build = self.site.buildProtocol

        def build(addr):
            proto = original_build(addr)
            self.connections += 1
            self.open.add(proto)
            lost = proto.connectionLost
            done = defer.Deferred()
            self.closed[proto] = done

            def connection_lost(reason):
                self.open.discard(proto)
                lost(reason)
                done.callback(None)
            proto.connectionLost = connection_lost
            return proto
        self.site.buildProtocol = build
        self.cluster = cluster

    async def start(self):
        endpoint = SSL4ServerEndpoint(reactor, 0, ClusterServerContextFactory(self.cluster),
                                      interface="127.0.0.1")
        self.port = await endpoint.listen(self.site)
        self.testcase.addCleanup(self.stop)
        return self.port.getHost().port

    async def stop(self):
        try:
            await self.port.stopListening()
            for proto in list(self.open):
                channel = getattr(proto, "_channel", proto)
                channel.transport.abortConnection()
            await defer.DeferredList(list(self.closed.values()))
        finally:
            self.pool.stop()


@implementer(IPolicyForHTTPS)
class CustomPolicy:
    """A client presenting ``client_cert`` (or nothing) and trusting any server."""

    def __init__(self, client_cert=None):
        ctx = SSL.Context(SSL.TLS_METHOD)
        if client_cert is not None:
            ctx = client_cert.make_context(server=False)
        ctx.set_verify(SSL.VERIFY_NONE, lambda *a: True)
        self.creator = _ClientCreator(ctx)

    def creatorForNetloc(self, hostname, port):
        return self.creator


def agent(testcase, policy):
    pool = webclient.HTTPConnectionPool(reactor, persistent=False)
    testcase.addCleanup(pool.closeCachedConnections)
    return webclient.Agent(reactor, contextFactory=policy, pool=pool)


def tmp_exists(path):
    return os.path.exists(path)
