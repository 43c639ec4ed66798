"""The service tree of ganeti-rapi: log, SIGHUP, access log, users file, feed, listener.

Start order: the daemon's log and SIGHUP hooks (:mod:`ganeti.daemon`), the
access log is opened and the users file read, the optional feed starts
(``on_start``), and only then the daemon listens (backlog
:data:`ganeti.daemon.LISTEN_BACKLOG`), so that no request arrives before the
users are known; a port that cannot be listened on fails the start (exit
status 1).  SIGHUP re-reads the users file and reopens the access log and the
daemon's log.  Stop runs in reverse: stop listening, stop the feed, close the
LUXI connections, close the access log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from OpenSSL import SSL
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

from ganeti.daemon import (
    LISTEN_BACKLOG,
    DaemonLog,
    DaemonService,
    ListenService,
    ProcessExit,
    SignalInstaller,
    StepService,
)
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
    """ganeti-rapi; see the module docstring for the start and stop order.

    Every step is a child service (:mod:`ganeti.daemon`); a port that cannot be
    listened on fails the start, after the steps before it were undone.
    """

    program = "ganeti-rapi"

    def __init__(self, reactor: Any, site: IProtocolFactory, users: UsersFile,
                 access_log: AccessLog, port: int, bind: str, tls: IOpenSSLContextFactory | None,
                 max_clients: int = 0, luxi: Any = None,
                 on_start: Callable[[], object] | None = None,
                 on_stop: Callable[[], object] | None = None,
                 install_signal: SignalInstaller | None = None,
                 daemon_log: DaemonLog | None = None,
                 process_exit: ProcessExit | None = None) -> None:
        """``install_signal`` installs the SIGHUP handler (none on fake reactors)."""
        super().__init__(reactor, daemon_log, install_signal, process_exit)
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
        # UsersFile.load reads the file even if its stamp looks unchanged (an
        # edit within the same second and size is only seen this way).
        self.reloader.add_hook("re-read the RAPI users file", self.users.load)
        self.reloader.add_hook("reopen the access log", self.access_log.reopen)
        StepService("access log", start=access_log.open,
                    stop=access_log.close).setServiceParent(self)
        StepService("users file", start=users.load).setServiceParent(self)
        StepService("LUXI connections", stop=getattr(luxi, "close", None)).setServiceParent(self)
        StepService("job feed", start=on_start, stop=on_stop).setServiceParent(self)
        scheme = "TCP, TLS" if tls is not None else "TCP, no TLS"
        self.listener = ListenService(
            f"{bind}:{port} ({scheme})",
            lambda: reactor.listenTCP(port, listening_factory(site, tls, max_clients),
                                      backlog=LISTEN_BACKLOG, interface=bind),
            announce=self._listening)
        self.listener.setServiceParent(self)

    @property
    def listening(self) -> IListeningPort | None:
        """The listening port while listening."""
        return self.listener.port

    def reload(self) -> None:
        """What SIGHUP does: run every reload hook now."""
        self.reloader.reload()

    def _listening(self, port: IListeningPort) -> None:
        scheme = "https" if self.tls is not None else "http (no TLS: --no-ssl)"
        log.info("ganeti-rapi listening on {bind}:{port} ({scheme})", bind=self.bind,
                 port=getattr(port.getHost(), "port", self.port), scheme=scheme)
