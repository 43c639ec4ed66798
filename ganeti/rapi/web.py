"""The twisted.web adapter of the RAPI app (:class:`ganeti.rapi.server.RapiApp`).

:class:`RapiSite` (built by :func:`make_site`) serves one
leaf resource that hands every request to the app.  Against clients that
hold connections without using them:

* a connection is admitted only if its address is within its share
  (:class:`ganeti.rapi.limits.ConnectionGate`); others are aborted at once,
  before any TLS work, and logged at most once a minute per address;
* a request must arrive complete within ``request_timeout`` seconds (10):
  counted from the connection (the TLS handshake included) for the first
  request, and from its first byte for later ones on a keep-alive
  connection, so that neither an idle new connection nor a request sent a
  byte at a time holds a place for long.  Idle keep-alive connections close
  after ``timeout`` seconds (60);
* a request announcing a body over the limit is answered 413 and its
  connection closed before the body is read;
* a large answer is written as the client reads it
  (:class:`ganeti.rapi.output.BodyProducer`).

Every request is written to the access log.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IAddress, IDelayedCall, ISSLTransport
from twisted.internet.protocol import Protocol, connectionDone
from twisted.logger import Logger
from twisted.protocols.policies import ProtocolWrapper
from twisted.python.failure import Failure
from twisted.web import http, resource, server
from zope.interface import directlyProvides, providedBy

from ganeti.rapi import errors
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.limits import (
    DEFAULT_MAX_CLIENTS,
    DEFAULT_PER_ADDRESS,
    DEFAULT_RESERVE,
    AddressLog,
    ConnectionGate,
    peer_host,
)
from ganeti.rapi.output import DEFAULT_STALL_TIMEOUT, STREAM_THRESHOLD, BodyProducer
from ganeti.rapi.server import HeaderView, RapiApp, Response, error_response

log = Logger()

#: Seconds to send a complete request (the TLS handshake included for the first).
DEFAULT_REQUEST_TIMEOUT = 10.0


class RapiRequest(server.Request):
    """A request that refuses a body over the site's limit before buffering it.

    A ``Content-Length`` over the limit is answered 413 at once and the
    connection closed (no ``100 Continue`` is sent); a chunked body is cut
    off the same way once it passes the limit.
    """

    _too_large = False
    _received = 0

    def _site(self) -> RapiSite:
        site: RapiSite = getattr(self.channel, "site")  # noqa: B009 (set by the Site)
        return site

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self._site().max_body:
            self.requestHeaders.removeHeader(b"expect")
            super().gotLength(0)
            self._reject_too_large()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._too_large:
            return
        self._received += len(data)
        if self._received > self._site().max_body:
            self._reject_too_large()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._too_large:
            return  # answered already; the connection is closing
        super().requestReceived(command, path, version)

    def _reject_too_large(self) -> None:
        self._too_large = True
        site = self._site()
        channel = self.channel
        err = errors.HttpRequestEntityTooLarge(
            f"The request body exceeds the limit of {site.max_body} bytes")
        response = error_response(err)
        head = [b"HTTP/1.1 413 Request Entity Too Large"]
        head += [f"{k}: {v}".encode("latin-1") for k, v in response.headers]
        head += [b"Content-Length: %d" % len(response.body), b"Connection: close", b"", b""]
        if channel.transport is not None:
            channel.transport.write(b"\r\n".join(head) + response.body)
        channel.loseConnection()
        line = b" ".join([getattr(channel, "_command", b"-"), getattr(channel, "_path", b"-"),
                          getattr(channel, "_version", b"HTTP/1.1")])
        site.access_log.log(client_host(self), None, line.decode("latin-1"), 413,
                            len(response.body))


def client_host(request: server.Request) -> str:
    """The client's address as the access log and the per-address limits see it."""
    return peer_host(request.getClientAddress())


class RapiChannel(http.HTTPChannel):
    """An HTTP connection that must deliver each request within ``request_timeout``
    (see the module docstring)."""

    request_timeout = DEFAULT_REQUEST_TIMEOUT
    address = "-"
    _deadline: IDelayedCall | None = None

    def connectionMade(self) -> None:
        super().connectionMade()
        self._start_deadline()

    def dataReceived(self, data: bytes) -> None:
        if self._deadline is None and not self._handlingRequest:
            self._start_deadline()  # the first bytes of the next request
        super().dataReceived(data)

    def allContentReceived(self) -> None:
        self._stop_deadline()
        super().allContentReceived()

    def requestDone(self, request: http.Request) -> None:
        super().requestDone(request)
        # Pipelined bytes of the next request were waiting: its clock runs now.
        if (self._deadline is None and not self._handlingRequest and self.transport is not None
                and (self.requests or getattr(self, "_buffer", None))):
            self._start_deadline()

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._stop_deadline()
        super().connectionLost(reason)

    def timeoutConnection(self) -> None:
        # twisted.web's own version logs every idle connection it closes; clients
        # decide how many there are, so the line is rate-limited per address.
        site: RapiSite = getattr(self, "site")  # noqa: B009 (set by the Site)
        site.client_log.info(self.address, "idle", "Closing idle connections from {address} "
                             "({suppressed} more since the last report)")
        if self.abortTimeout is not None:
            self._abortingCall = self.callLater(self.abortTimeout, self.forceAbortClient)
        self.loseConnection()

    def forceAbortClient(self) -> None:
        self._abortingCall = None
        transport: Any = self.transport
        if transport is not None:
            transport.abortConnection()

    def _start_deadline(self) -> None:
        if self.request_timeout:
            self._deadline = self.callLater(self.request_timeout, self._too_slow)

    def _stop_deadline(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        site: RapiSite = getattr(self, "site")  # noqa: B009 (set by the Site)
        site.client_log.info(
            self.address, "slow", "Closing a connection from {address}: no complete request "
            "within {timeout:g}s ({suppressed} more since the last report)",
            timeout=self.request_timeout)
        transport: Any = self.transport
        if transport is not None:
            transport.abortConnection()


class _Admitted(ProtocolWrapper):
    """An admitted connection: its place is given back when it closes, whatever
    protocol it ends with (a WebSocket feed takes the connection over: autobahn
    replaces this wrapper's protocol, so the wrapper still sees the end).

    It relays every interface of the transport except ``ISSLTransport``:
    autobahn reads TLS channel details only from twisted's own TLS protocol
    and refuses a connection whose transport claims TLS without being that.
    """

    def __init__(self, site: RapiSite, address: str, channel: RapiChannel) -> None:
        super().__init__(site, channel)  # type: ignore[arg-type]  # only (un)registerProtocol
        self.address = address

    def makeConnection(self, transport: Any) -> None:
        directlyProvides(self, *[i for i in providedBy(transport)
                                 if not i.isOrExtends(ISSLTransport)])
        Protocol.makeConnection(self, transport)
        self.factory.registerProtocol(self)
        self.wrappedProtocol.makeConnection(self)  # type: ignore[arg-type]  # relays ITransport

    def logPrefix(self) -> str:
        return "RapiConnection"

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        if self.wrappedProtocol is not None:  # once only
            super().connectionLost(reason)


class _Refused(Protocol):
    """A connection over its address's share: aborted as soon as it is made."""

    def connectionMade(self) -> None:
        transport: Any = self.transport
        transport.abortConnection()


class RapiResource(resource.Resource):
    """The one leaf resource: hands every request to the app and writes its answer."""

    isLeaf = True

    def __init__(self, app: RapiApp, access_log: AccessLog, stall_timeout: float) -> None:
        super().__init__()
        self.app = app
        self.access_log = access_log
        self.stall_timeout = stall_timeout

    def render(self, request: server.Request) -> bytes | int:  # type: ignore[override]
        uri = request.uri
        path, _, query = uri.partition(b"?")
        content = request.content
        body = content.read() if content is not None else b""
        result = self.app.handle(request.method.decode("latin-1"), path, query,
                                 HeaderView(request.requestHeaders), body,
                                 client_host(request))
        if not isinstance(result, defer.Deferred):
            self._respond(result, request)
            return server.NOT_DONE_YET
        d = result
        if not d.called:  # waiting (for masterd): cancel the work if the client goes
            request.notifyFinish().addErrback(lambda _: d.cancel())
        d.addCallback(self._respond, request)
        d.addErrback(self._failed, request)
        return server.NOT_DONE_YET

    def _request_line(self, request: server.Request) -> str:
        return b" ".join([request.method, request.uri,
                          request.clientproto]).decode("latin-1")

    def _respond(self, response: Response, request: server.Request) -> None:
        if request._disconnected or request.finished:
            response.finished()
            return
        if response.resource is not None:
            self.access_log.log(client_host(request), response.user,
                                self._request_line(request), response.status, 0)
            result = response.resource.render(request)
            if result is not server.NOT_DONE_YET:
                request.write(result)
                request.finish()
            response.finished()
            return
        request.setResponseCode(response.status)
        for name, value in response.headers:
            request.setHeader(name, value)
        body = response.body
        request.setHeader(b"content-length", b"%d" % len(body))
        sent = 0 if request.method == b"HEAD" else len(body)
        self.access_log.log(client_host(request), response.user, self._request_line(request),
                            response.status, sent)
        if len(body) > STREAM_THRESHOLD and request.method != b"HEAD":
            site: RapiSite = getattr(request.channel, "site")  # noqa: B009
            BodyProducer(request, body, site.clock, response.finished,
                         self.stall_timeout).start()
            return
        request.write(body)
        request.finish()
        response.finished()

    def _failed(self, failure: Failure, request: server.Request) -> None:
        if failure.check(defer.CancelledError):
            return
        log.failure("RAPI response failed", failure)
        if not (request._disconnected or request.finished):
            self._respond(error_response(errors.HttpInternalServerError("Internal error")),
                          request)


class RapiSite(server.Site):
    """The RAPI site: one leaf resource, body limit, connection shares, request
    deadline; no twisted.web access log (the RAPI writes its own)."""

    requestFactory = RapiRequest
    protocol = RapiChannel  # type: ignore[assignment]
    displayTracebacks = False

    def __init__(self, app: RapiApp, access_log: AccessLog, reactor: Any,
                 timeout: float = 60.0, gate: ConnectionGate | None = None,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 stall_timeout: float = DEFAULT_STALL_TIMEOUT) -> None:
        super().__init__(RapiResource(app, access_log, stall_timeout), reactor=reactor,
                         timeout=timeout)
        self.app = app
        self.clock = reactor
        self.access_log = access_log
        self.max_body = app.max_body
        self.gate = gate if gate is not None else ConnectionGate()
        self.request_timeout = request_timeout
        self.client_log = AddressLog(reactor, log)

    def buildProtocol(self, addr: IAddress | None) -> Protocol | None:  # type: ignore[override]
        """An admitted connection's channel, or a refusal (see :class:`ConnectionGate`)."""
        address = peer_host(addr)
        refusal = self.gate.admit(address)
        if refusal is not None:
            self.client_log.info(
                address, "refused", "Refusing a connection from {address}: {why} "
                "({suppressed} more refused since the last report)", why=refusal)
            return _Refused()
        channel = super().buildProtocol(addr)
        assert isinstance(channel, RapiChannel)
        channel.request_timeout = self.request_timeout
        channel.address = address
        return _Admitted(self, address, channel)

    def registerProtocol(self, protocol: _Admitted) -> None:
        """An admitted connection is made (it was counted when admitted)."""

    def unregisterProtocol(self, protocol: _Admitted) -> None:
        """An admitted connection has closed: its place is free again."""
        self.gate.release(protocol.address)

    def log(self, request: http.Request) -> None:
        """Requests are logged by :class:`RapiResource` in the RAPI access log."""


def make_site(app: RapiApp, access_log: AccessLog, reactor: Any, timeout: float = 60.0,
              max_clients: int = DEFAULT_MAX_CLIENTS, per_address: int | None = None,
              reserve: int | None = None, request_timeout: float | None = None
              ) -> RapiSite:
    """The twisted.web site for ``app``.

    Idle connections close after ``timeout`` s; a request must arrive within
    ``request_timeout`` s (10 by default).  ``max_clients`` should be the
    listener's ``--max-clients``: one address holds at most ``per_address``
    connections, and the last ``reserve`` places are kept for addresses
    without one (both a tenth of ``max_clients`` by default: 100 of 1000).
    """
    share = max(1, max_clients * DEFAULT_PER_ADDRESS // DEFAULT_MAX_CLIENTS)
    kept = max_clients * DEFAULT_RESERVE // DEFAULT_MAX_CLIENTS
    gate = ConnectionGate(max_clients, share if per_address is None else per_address,
                          kept if reserve is None else reserve)
    return RapiSite(app, access_log, reactor, timeout, gate,
                    DEFAULT_REQUEST_TIMEOUT if request_timeout is None else request_timeout)
