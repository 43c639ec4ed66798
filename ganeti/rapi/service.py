"""The service tree of ganeti-rapi: log, SIGHUP, access log, users file, feed, listener.

Start order: the daemon's log and SIGHUP hooks (:mod:`ganeti.daemon`), the
access log is opened and the users file read, the optional feed starts
(``on_start``), and only then the daemon listens (backlog
:data:`ganeti.daemon.LISTEN_BACKLOG`), so that no request arrives before the
users are known.  SIGHUP re-reads the users file and reopens the access log
and the daemon's log.  Stop runs in reverse: stop listening, stop the feed,
close the LUXI connections, close the access log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL
from twisted.internet import defer
from twisted.internet.error import CannotListenError, ReactorNotRunning
from twisted.internet.interfaces import (
    IListeningPort,
    IOpenSSLContextFactory,
    IProtocolFactory,
)
from twisted.internet.protocol import Factory
from twisted.internet.ssl import ContextFactory
from twisted.logger import Logger
from twisted.protocols.policies import WrappingFactory
from twisted.protocols.tls import TLSMemoryBIOFactory

from ganeti.daemon import LISTEN_BACKLOG, DaemonLog, DaemonService, SignalInstaller
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import UsersFile

log = Logger()


class RapiContextFactory(ContextFactory):
    """The server side of RAPI's TLS: ``rapi.pem``'s key and certificate (plus any
    chain certificates after it), TLS 1.2 or newer, no client certificate asked for.

    One context is shared by every connection, with a session cache so that
    clients resuming a session skip the full handshake.
    """

    isClient = 0
    SESSION_ID_CONTEXT = b"ganeti-rapi"

    def __init__(self, pem: bytes) -> None:
        """Raises ValueError if ``pem`` lacks a key, a certificate, or they do not match."""
        try:
            key = serialization.load_pem_private_key(pem, password=None)
            certs = x509.load_pem_x509_certificates(pem)
            ctx = SSL.Context(SSL.TLS_METHOD)
            ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
            ctx.set_options(SSL.OP_NO_COMPRESSION | SSL.OP_CIPHER_SERVER_PREFERENCE)
            ctx.use_certificate(certs[0])
            for extra in certs[1:]:
                ctx.add_extra_chain_cert(extra)
            ctx.use_privatekey(key)  # type: ignore[arg-type]
            ctx.check_privatekey()
        except (TypeError, UnsupportedAlgorithm, SSL.Error) as err:
            raise ValueError(str(err) or type(err).__name__) from None
        ctx.set_session_id(self.SESSION_ID_CONTEXT)
        ctx.set_session_cache_mode(SSL.SESS_CACHE_SERVER)
        self.certificate = certs[0]
        self._ctx = ctx

    def getContext(self) -> SSL.Context:
        """The shared server context."""
        return self._ctx


class _ConnectionLimit:
    """Mixin for wrapping factories: refuse connections past ``limit`` open ones."""

    limit = 0
    protocols: dict[Any, Any]

    def buildProtocol(self, addr: Any) -> Any:
        if self.limit and len(self.protocols) >= self.limit:
            log.warn("Refusing a connection from {peer}: {limit} clients connected "
                     "(--max-clients)", peer=getattr(addr, "host", addr), limit=self.limit)
            return None
        return super().buildProtocol(addr)  # type: ignore[misc]


class LimitedTLSFactory(_ConnectionLimit, TLSMemoryBIOFactory):
    """TLS over the site, with a connection limit."""


class LimitedFactory(_ConnectionLimit, WrappingFactory):
    """Plain HTTP (``--no-ssl``), with a connection limit."""


def listening_factory(site: IProtocolFactory, tls: IOpenSSLContextFactory | None,
                      max_clients: int) -> Factory:
    """The factory to listen with: TLS (unless ``tls`` is None) and the client limit."""
    factory: _ConnectionLimit
    if tls is not None:
        factory = LimitedTLSFactory(tls, False, site)
    else:
        factory = LimitedFactory(site)
    factory.limit = max_clients
    assert isinstance(factory, Factory)
    return factory


class RapiDaemon(DaemonService):
    """ganeti-rapi; see the module docstring for the start and stop order."""

    def __init__(self, reactor: Any, site: IProtocolFactory, users: UsersFile,
                 access_log: AccessLog, port: int, bind: str, tls: IOpenSSLContextFactory | None,
                 max_clients: int = 0, luxi: Any = None,
                 on_start: Callable[[], object] | None = None,
                 on_stop: Callable[[], object] | None = None,
                 install_signal: SignalInstaller | None = None,
                 daemon_log: DaemonLog | None = None) -> None:
        """``install_signal`` installs the SIGHUP handler (none on fake reactors)."""
        super().__init__(reactor, daemon_log, install_signal)
        self.reactor = reactor
        self.site = site
        self.users = users
        self.access_log = access_log
        self.port = port
        self.bind = bind
        self.tls = tls
        self.max_clients = max_clients
        self.luxi = luxi
        self.on_start = on_start
        self.on_stop = on_stop
        self.listening: IListeningPort | None = None
        # UsersFile.load reads the file even if its stamp looks unchanged (an
        # edit within the same second and size is only seen this way).
        self.reloader.add_hook("re-read the RAPI users file", self.users.load)
        self.reloader.add_hook("reopen the access log", self.access_log.reopen)

    def reload(self) -> None:
        """What SIGHUP does: run every reload hook now."""
        self.reloader.reload()

    def startService(self) -> None:
        super().startService()
        self.access_log.open()
        self.users.load()
        if self.on_start is not None:
            self.on_start()
        factory = listening_factory(self.site, self.tls, self.max_clients)
        try:
            self.listening = self.reactor.listenTCP(self.port, factory, backlog=LISTEN_BACKLOG,
                                                    interface=self.bind)
        except CannotListenError as err:
            log.error("ganeti-rapi cannot listen on {bind}:{port}: {error}", bind=self.bind,
                      port=self.port, error=err)
            # twistd starts services before the reactor runs; stop it once it runs
            self.reactor.callWhenRunning(self._stop_reactor)
            return
        scheme = "https" if self.tls is not None else "http (no TLS: --no-ssl)"
        log.info("ganeti-rapi listening on {bind}:{port} ({scheme})", bind=self.bind,
                 port=getattr(self.listening.getHost(), "port", self.port), scheme=scheme)

    def _stop_reactor(self) -> None:
        try:
            self.reactor.stop()
        except ReactorNotRunning:
            pass

    def stopService(self) -> defer.Deferred[None]:
        return defer.Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if self.listening is not None:
            port, self.listening = self.listening, None
            await defer.maybeDeferred(port.stopListening)
        if self.on_stop is not None:
            await defer.maybeDeferred(self.on_stop)
        close = getattr(self.luxi, "close", None)
        if close is not None:
            close()
        await defer.maybeDeferred(super().stopService)
        self.access_log.close()
