"""The RAPI request-processing core and its thin twisted.web adapter.

:class:`RapiApp` turns ``(method, path, query, headers, body, client)`` into a
:class:`Response` without any socket, in this order:

1. the route (404 if the path matches none), the method (**501** "Method X
   is unsupported for path Y" for GET/PUT/POST/DELETE not declared, as
   Ganeti answers; **405** with ``Allow`` for any other verb; HEAD is GET
   without the body);
2. authentication and access (401 with ``WWW-Authenticate``, 403), before the
   body is looked at; repeated failed logins from one address are answered
   slowly (:class:`ganeti.rapi.auth.LoginThrottle`);
3. the query string (400 for parameters the method does not declare) and the
   body (413 over the limit, 400 for a body on a method that takes none, 415
   unless ``application/json``, 400 for bad JSON; empty means ``None``);
4. the handler; its value (plain, Deferred or coroutine) is sent as compact
   JSON.  Errors become Ganeti's ``{code, message, explain}`` bodies with the
   status of :func:`http_error_for`.  Identical read-only GETs read in one
   reactor turn share one handler run (:mod:`ganeti.rapi.coalesce`), so that
   many clients polling the same resource cost masterd one LUXI call.

Two routes are built in (:data:`BUILTIN_ROUTES`): the WebSocket feed
``/2/feed`` (handed to the feed resource once access is granted) and the
dashboard's files under ``/dashboard/``.

:class:`RapiResource` and :func:`make_site` adapt the app to twisted.web: a
request announcing a body over the limit is answered 413 and its connection
closed before the body is read; every request is written to the access log.
"""

from __future__ import annotations

import html
import inspect
import json
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, resource, server
from twisted.web.http_headers import Headers
from twisted.web.resource import IResource

from ganeti.core import errors as gerrors
from ganeti.rapi import errors
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import Authenticator, LoginThrottle, UserEntry, UsersFile
from ganeti.rapi.coalesce import Coalescer
from ganeti.rapi.routing import Luxi, Method, Request, Route
from ganeti.rapi.staticfiles import StaticFiles

log = Logger()

DEFAULT_MAX_BODY = 1024 * 1024
#: The methods Ganeti's RAPI knows; others get 405.
KNOWN_METHODS = frozenset({"GET", "PUT", "POST", "DELETE"})
JSON_TYPE = "application/json"
#: At most this many query parameters are parsed.
MAX_QUERY_FIELDS = 100
FEED_PATH = "/2/feed"
DASHBOARD_PATH = "/dashboard"


def _builtin(request: Request) -> Any:
    raise errors.HttpInternalServerError("built-in route without a handler")


#: The routes this module serves itself; appended to the resource routes.
BUILTIN_ROUTES: list[Route] = [
    Route(FEED_PATH, {"GET": Method(_builtin, "Job event feed (WebSocket)")},
          doc="WebSocket feed of job events", kind="websocket"),
    Route(DASHBOARD_PATH, {"GET": Method(_builtin, "Redirect to /dashboard/")},
          doc="The web dashboard", kind="static"),
    Route(DASHBOARD_PATH + "/{static_path}",
          {"GET": Method(_builtin, "The web dashboard's files")},
          doc="The web dashboard's files", kind="static"),
]


@dataclass
class Response:
    """One answer: status, headers, body; ``resource`` takes over (WebSocket)."""

    status: int
    body: bytes = b""
    headers: Sequence[tuple[str, str]] = ()
    user: str | None = None
    resource: IResource | None = None


class HeaderView(Mapping[str, str]):
    """twisted.web's request headers as a case-insensitive ``Mapping[str, str]``
    (the first value of each header)."""

    def __init__(self, headers: Headers) -> None:
        self._headers = headers

    def __getitem__(self, name: str) -> str:
        values = self._headers.getRawHeaders(name.encode("latin-1"))
        if not values:
            raise KeyError(name)
        return values[0].decode("latin-1")

    def __iter__(self) -> Iterator[str]:
        for name, _ in self._headers.getAllRawHeaders():
            yield name.decode("latin-1").lower()

    def __len__(self) -> int:
        return sum(1 for _ in self._headers.getAllRawHeaders())


def _ganeti_message(err: BaseException) -> str:
    if err.args:
        first = err.args[0]
        return first if isinstance(first, str) else str(first)
    return type(err).__name__


def http_error_for(err: BaseException) -> errors.HttpError | None:
    """The HTTP error for a handler's exception; None if it is a bug (500, logged)."""
    if isinstance(err, errors.HttpError):
        return err
    if not isinstance(err, gerrors.GenericError):
        return None
    message = _ganeti_message(err)
    if isinstance(err, gerrors.OpPrereqError):
        ecode = gerrors.error_code(err)
        if ecode == gerrors.ECODE_NOENT:
            return errors.HttpNotFound(message)
        return errors.HttpBadRequest(f"{message} ({ecode})" if ecode else message)
    if isinstance(err, (gerrors.ParameterError, gerrors.OpCodeUnknown)):
        return errors.HttpBadRequest(message)
    if isinstance(err, gerrors.JobQueueFull):
        return errors.HttpServiceUnavailable("Job queue is full, needs archiving")
    if isinstance(err, gerrors.JobQueueDrainError):
        return errors.HttpServiceUnavailable("Job queue is drained, cannot submit")
    if isinstance(err, gerrors.JobLost):
        return errors.HttpNotFound(message)
    if isinstance(err, gerrors.TimeoutError):
        return errors.HttpGatewayTimeout(f"Timeout while talking to the master daemon: "
                                         f"{message}")
    if isinstance(err, gerrors.PermissionError):
        return errors.HttpInternalServerError(f"Not allowed to talk to the master daemon: "
                                              f"{message}")
    if isinstance(err, gerrors.ProtocolError):
        return errors.HttpBadGateway(f"Cannot talk to the master daemon: {message}")
    return errors.HttpInternalServerError(message)


def error_response(err: errors.HttpError, user: str | None = None) -> Response:
    """Ganeti's JSON error body (message HTML-escaped) with the error's headers."""
    body = {"code": err.code, "message": html.escape(err.message, quote=False),
            "explain": err.explain}
    headers = [("Content-Type", JSON_TYPE), *err.headers.items()]
    return Response(err.code, json.dumps(body).encode(), headers, user)


#: Compact JSON; LUXI results hold no cycles, so the cycle check is skipped (a
#: handler bug making one fails with RecursionError, answered 500).
_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)
_JSON_HEADERS = (("Content-Type", JSON_TYPE),)


def _json_response(value: Any, user: str | None) -> Response:
    return Response(200, _ENCODER.encode(value).encode(), _JSON_HEADERS, user)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _RouteIndex:
    """``routing.match`` semantics (first route in table order wins), without trying
    every pattern: literal paths are a dict lookup, patterns are bucketed by their
    first two path segments when those are literal."""

    def __init__(self, routes: list[Route]) -> None:
        self.literal: dict[str, tuple[int, Route]] = {}
        buckets: dict[tuple[str, ...], list[tuple[int, Route]]] = {}
        wildcard: list[tuple[int, Route]] = []
        for index, route in enumerate(routes):
            if not route.placeholders:
                self.literal.setdefault(route.pattern, (index, route))
                continue
            key = self._key(route.pattern)
            if "{" in "".join(key):
                wildcard.append((index, route))
            else:
                buckets.setdefault(key, []).append((index, route))
        self.wildcard = wildcard
        self.buckets = {key: sorted(entries + wildcard, key=lambda e: e[0])
                        for key, entries in buckets.items()}

    @staticmethod
    def _key(path: str) -> tuple[str, ...]:
        return tuple(path.split("/", 3)[1:3])

    def match(self, path: str) -> tuple[Route, dict[str, str]] | None:
        literal = self.literal.get(path)
        for index, route in self.buckets.get(self._key(path), self.wildcard):
            if literal is not None and index > literal[0]:
                break
            m = route.regex.match(path)
            if m:
                return route, m.groupdict()
        return (literal[1], {}) if literal is not None else None


class RapiApp:
    """The request-processing core (no sockets); see the module docstring.

    ``routes`` defaults to ``ganeti.rapi.resources.ROUTES``; the built-in
    feed route is served only with a ``websocket`` factory, the dashboard only
    with a ``static_dir``.
    """

    def __init__(self, routes: list[Route] | None, luxi: Luxi, clock: IReactorTime,
                 users: UsersFile, require_auth: bool = False,
                 max_body: int = DEFAULT_MAX_BODY,
                 websocket: Callable[[], IResource] | None = None,
                 static_dir: str | None = None,
                 throttle: LoginThrottle | None = None, coalesce: bool = True) -> None:
        if routes is None:
            from ganeti.rapi import resources  # written separately; imported when used
            routes = resources.ROUTES
        builtin = [r for r in BUILTIN_ROUTES
                   if (r.kind == "websocket" and websocket is not None)
                   or (r.kind == "static" and static_dir is not None)]
        self.routes = list(routes) + builtin
        self.luxi = luxi
        self.clock = clock
        self.users = users
        self.auth = Authenticator(users, require_auth)
        self.throttle = throttle if throttle is not None else LoginThrottle(clock)
        self.max_body = max_body
        self.websocket = websocket
        self.static = StaticFiles(static_dir) if static_dir is not None else None
        self.coalescer: Coalescer[Response] | None = Coalescer(clock) if coalesce else None
        self._index = _RouteIndex(self.routes)

    def process(self, method: str, path: str | bytes, query_string: bytes | str,
                headers: Mapping[str, str], body: bytes,
                client_ip: str) -> defer.Deferred[Response]:
        """Answer one request; the Deferred fails only with CancelledError."""
        result = self.handle(method, path, query_string, headers, body, client_ip)
        return result if isinstance(result, defer.Deferred) else defer.succeed(result)

    def handle(self, method: str, raw_path: str | bytes, query_string: bytes | str,
               headers: Mapping[str, str], body: bytes,
               client_ip: str) -> Response | defer.Deferred[Response]:
        """:meth:`process`, answering at once when nothing has to be waited for (the
        checks failed, or the handler returned a plain value)."""
        entry: UserEntry | None = None
        try:
            if not isinstance(headers, HeaderView):
                headers = {k.lower(): v for k, v in headers.items()}
            path = self._decode_path(raw_path)
            route, params, spec, http_method = self._dispatch(method, path)
            header = headers.get("authorization")
            try:
                entry = self.auth.authenticate(header)
            except errors.HttpUnauthorized as err:
                delay = self.throttle.failed(client_ip)
                if delay > 0:
                    return task.deferLater(self.clock, delay, error_response, err)
                raise
            self.auth.authorize(entry, spec.access)
            user = entry.name if entry is not None else None
            if route.kind == "websocket":
                assert self.websocket is not None
                return Response(101, user=user, resource=self.websocket())
            if route.kind == "static":
                return self._static(params, path, user)
            query = self._parse_query(query_string, spec)
            value = self._parse_body(spec, headers, body)
            request = Request(method=http_method, path=path, params=params, query=query,
                              body=value, user=entry.user if entry is not None else None,
                              luxi=self.luxi, clock=self.clock, route=route)
        except Exception as err:  # every error becomes an answer
            return self._error(err, entry)
        if (self.coalescer is not None and http_method == "GET" and value is None
                and spec.result != "job"):
            raw_query = (query_string.decode("latin-1") if isinstance(query_string, bytes)
                         else query_string)
            return self.coalescer.join((route.pattern, path, raw_query, user),
                                       lambda: self._run(spec, request, entry))
        return self._run(spec, request, entry)

    def _run(self, spec: Method, request: Request,
             entry: UserEntry | None) -> Response | defer.Deferred[Response]:
        user = entry.name if entry is not None else None
        try:
            result = spec.handler(request)
            if inspect.iscoroutine(result):
                result = defer.Deferred.fromCoroutine(result)
            elif inspect.isawaitable(result) and not isinstance(result, defer.Deferred):
                result = defer.Deferred.fromCoroutine(_awaited(result))
            if isinstance(result, defer.Deferred):
                d: defer.Deferred[Response] = result.addCallback(_json_response, user)
                return d.addErrback(self._failed, entry)
            return _json_response(result, user)
        except Exception as err:  # every error becomes an answer
            return self._error(err, entry)

    def _failed(self, failure: Failure, entry: UserEntry | None) -> Response:
        if failure.check(defer.CancelledError):
            failure.raiseException()  # the client went away: nobody to answer
        err = failure.value
        assert isinstance(err, Exception)
        return self._error(err, entry)

    def _error(self, err: Exception, entry: UserEntry | None) -> Response:
        user = entry.name if entry is not None else None
        mapped = http_error_for(err)
        if mapped is None:
            log.failure("Internal error in a RAPI handler", Failure(err))
            mapped = errors.HttpInternalServerError("Internal error")
        elif mapped.code >= 500:
            log.warn("RAPI request failed: {code} {message}", code=mapped.code,
                     message=mapped.message)
        return error_response(mapped, user)

    @staticmethod
    def _decode_path(raw: str | bytes) -> str:
        try:
            text = raw.decode("ascii") if isinstance(raw, bytes) else raw
            return urllib.parse.unquote(text, errors="strict")
        except UnicodeError:
            raise errors.HttpBadRequest("The URL path is not valid UTF-8") from None

    def _dispatch(self, method: str, path: str) -> tuple[Route, dict[str, str], Method, str]:
        found = self._index.match(path)
        if found is None:
            raise errors.HttpNotFound()
        route, params = found
        http_method = "GET" if method == "HEAD" and route.kind != "websocket" else method
        spec = route.methods.get(http_method)
        if spec is None:
            if http_method in KNOWN_METHODS:
                raise errors.HttpNotImplemented(
                    f"Method {method} is unsupported for path {path}")
            allowed = sorted(route.methods)
            if "GET" in route.methods and route.kind != "websocket":
                allowed.append("HEAD")
            raise errors.HttpMethodNotAllowed(
                f"Method {method} is not allowed for path {path}",
                headers={"Allow": ", ".join(allowed)})
        return route, params, spec, http_method

    @staticmethod
    def _parse_query(query_string: bytes | str, spec: Method) -> dict[str, list[str]]:
        if not query_string:
            return {}
        try:
            text = (query_string.decode("ascii") if isinstance(query_string, bytes)
                    else query_string)
            query = urllib.parse.parse_qs(text, keep_blank_values=True, errors="strict",
                                          max_num_fields=MAX_QUERY_FIELDS)
        except UnicodeError:
            raise errors.HttpBadRequest("The query string is not valid UTF-8") from None
        except ValueError:
            raise errors.HttpBadRequest(
                f"Too many query parameters (at most {MAX_QUERY_FIELDS})") from None
        unknown = sorted(set(query) - set(spec.query))
        if unknown:
            accepted = ", ".join(spec.query) if spec.query else "none"
            raise errors.HttpBadRequest(f"Unknown query parameter(s): {', '.join(unknown)}; "
                                        f"this resource accepts: {accepted}")
        return query

    def _parse_body(self, spec: Method, headers: Mapping[str, str], body: bytes) -> Any:
        if len(body) > self.max_body:
            raise errors.HttpRequestEntityTooLarge(
                f"The request body exceeds the limit of {self.max_body} bytes")
        if not body:
            return None
        if spec.body == "none":
            raise errors.HttpBadRequest("This resource takes no request body")
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != JSON_TYPE:
            raise errors.HttpUnsupportedMediaType(
                f"The request body must be {JSON_TYPE} (Content-Type), not "
                f"{media or 'unspecified'}")
        try:
            value = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise errors.HttpBadRequest(f"Unable to parse JSON data: {err}") from None
        if spec.body == "opcode" and not isinstance(value, dict):
            raise errors.HttpBadRequest("The request body must be a JSON object")
        return value

    def _static(self, params: dict[str, str], path: str, user: str | None) -> Response:
        assert self.static is not None
        if "static_path" not in params:  # the bare prefix: on to its directory
            return Response(301, b"", [("Location", path + "/")], user)
        result = self.static.get(params["static_path"], path)
        if result.status == 404:
            return error_response(errors.HttpNotFound(), user)
        return Response(result.status, result.body, result.headers, user)


# --- twisted.web adapter ------------------------------------------------------------------


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
        site.access_log.log(_client_host(self), None, line.decode("latin-1"), 413,
                            len(response.body))


def _client_host(request: server.Request) -> str:
    client = request.getClientAddress()
    return str(getattr(client, "host", "-"))


class RapiResource(resource.Resource):
    """The one leaf resource: hands every request to the app and writes its answer."""

    isLeaf = True

    def __init__(self, app: RapiApp, access_log: AccessLog) -> None:
        super().__init__()
        self.app = app
        self.access_log = access_log

    def render(self, request: server.Request) -> bytes | int:  # type: ignore[override]
        uri = request.uri
        path, _, query = uri.partition(b"?")
        content = request.content
        body = content.read() if content is not None else b""
        result = self.app.handle(request.method.decode("latin-1"), path, query,
                                 HeaderView(request.requestHeaders), body,
                                 _client_host(request))
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
            return
        if response.resource is not None:
            self.access_log.log(_client_host(request), response.user,
                                self._request_line(request), response.status, 0)
            result = response.resource.render(request)
            if result is not server.NOT_DONE_YET:
                request.write(result)
                request.finish()
            return
        request.setResponseCode(response.status)
        for name, value in response.headers:
            request.setHeader(name, value)
        request.setHeader(b"content-length", b"%d" % len(response.body))
        request.write(response.body)
        request.finish()
        sent = 0 if request.method == b"HEAD" else len(response.body)
        self.access_log.log(_client_host(request), response.user, self._request_line(request),
                            response.status, sent)

    def _failed(self, failure: Failure, request: server.Request) -> None:
        if failure.check(defer.CancelledError):
            return
        log.failure("RAPI response failed", failure)
        if not (request._disconnected or request.finished):
            self._respond(error_response(errors.HttpInternalServerError("Internal error")),
                          request)


class RapiSite(server.Site):
    """The RAPI site: one leaf resource, body limit, no twisted.web access log."""

    requestFactory = RapiRequest
    displayTracebacks = False

    def __init__(self, app: RapiApp, access_log: AccessLog, reactor: Any,
                 timeout: float = 60.0) -> None:
        super().__init__(RapiResource(app, access_log), reactor=reactor, timeout=timeout)
        self.app = app
        self.access_log = access_log
        self.max_body = app.max_body

    def log(self, request: http.Request) -> None:
        """Requests are logged by :class:`RapiResource` in the RAPI access log."""


def make_site(app: RapiApp, access_log: AccessLog, reactor: Any,
              timeout: float = 60.0) -> RapiSite:
    """The twisted.web site for ``app``; idle connections close after ``timeout`` s."""
    return RapiSite(app, access_log, reactor, timeout)

