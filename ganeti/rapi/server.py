"""The RAPI request-processing core and its thin twisted.web adapter.

:class:`RapiApp` turns ``(method, path, query, headers, body, client)`` into a
:class:`Response` without any socket, in this order:

1. the route (404 if the path matches none), the method (**501** "Method X
   is unsupported for path Y" for any method not declared, whatever the body,
   as Ganeti answers, with an ``Allow`` header; HEAD is GET without the body);
2. authentication and access (401 with ``WWW-Authenticate``, 403), before the
   body is looked at; repeated failed logins from one address are answered
   slowly, and with 429 while a few of them wait
   (:class:`ganeti.rapi.auth.LoginThrottle`);
3. the query string (400 for parameters the method does not declare) and the
   body (413 over the limit, 415 unless ``application/json``, 400 for bad or
   too deeply nested JSON; empty means ``None``; a method that takes no body
   ignores a valid one, as Ganeti does);
4. for a *heavy* read (a list of every object, a query), a ticket of its
   address (429 past :data:`ganeti.rapi.limits.DEFAULT_HEAVY_PER_ADDRESS` in
   flight) and a slot for its run (a few run at once, round-robin by address);
5. the handler; its value (plain, Deferred or coroutine) is sent as compact
   JSON, encoded over several reactor turns when it is a long list
   (:mod:`ganeti.rapi.output`).  Errors become Ganeti's ``{code, message,
   explain}`` bodies with the status of :func:`http_error_for`.  Identical
   read-only GETs read in one reactor turn share one handler run
   (:mod:`ganeti.rapi.coalesce`; "identical" compares the parsed query,
   :func:`ganeti.rapi.routing.query_key`), so that many clients polling the
   same resource cost masterd one LUXI call.

Routes are built in (:data:`BUILTIN_ROUTES`): the WebSocket feed
``/2/feed`` (handed to the feed resource once access is granted), the live
serial console ``/2/instances/<name>/console/websocket`` (handed to the
console relay, :mod:`ganeti.rapi.console`, which refuses users without write
access with a WebSocket close reason), the
dashboard's files under ``/dashboard/`` and, with them,
``/dashboard/access``: what the requesting user may do (the dashboard offers
write actions only to users with write access).

:func:`ganeti.rapi.web.make_site` adapts the app to twisted.web
(per-address connection shares, request deadlines, the body limit, large
answers written as the client reads them, the access log).
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import json
import math
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http_headers import Headers
from twisted.web.resource import IResource

from ganeti.core import errors as gerrors
from ganeti.core.serializer import load_json
from ganeti.luxi.wire import RawJson
from ganeti.rapi import errors
from ganeti.rapi.auth import Authenticator, LoginThrottle, UserEntry, UsersFile, unauthorized
from ganeti.rapi.coalesce import Coalescer
from ganeti.rapi.limits import AddressLog, HeavyReads, Release
from ganeti.rapi.output import encode_json
from ganeti.rapi.routing import WRITE, Luxi, Method, Request, Route, query_key
from ganeti.rapi.staticfiles import StaticFiles

log = Logger()

DEFAULT_MAX_BODY = 1024 * 1024
JSON_TYPE = "application/json"
#: At most this many query parameters are parsed.
MAX_QUERY_FIELDS = 100
FEED_PATH = "/2/feed"
#: The live serial console (our extension; :mod:`ganeti.rapi.console`).
CONSOLE_PATH = "/2/instances/{instance_name}/console/websocket"
DASHBOARD_PATH = "/dashboard"


def _builtin(request: Request) -> Any:
    raise errors.HttpInternalServerError("built-in route without a handler")


def _dashboard_access(request: Request) -> dict[str, Any]:
    """``{"user": name or None, "write": bool}`` for the requesting user; with
    ``?login=1`` an anonymous request is answered 401, so that a browser asks
    for credentials."""
    user = request.user
    if user is None:
        if request.flag("login"):
            raise unauthorized("Authentication required")
        return {"user": None, "write": False}
    return {"user": user.name, "write": WRITE in user.options}


#: The routes this module serves itself; appended to the resource routes.
BUILTIN_ROUTES: list[Route] = [
    Route(FEED_PATH, {"GET": Method(_builtin, "Job event feed (WebSocket)")},
          doc="WebSocket feed of job events", kind="websocket"),
    Route(CONSOLE_PATH, {"GET": Method(_builtin, "Live serial console (WebSocket; users "
                                                 "without write access are closed with "
                                                 "code 4401/4403)")},
          doc="The instance's serial console, relayed through its primary node",
          kind="websocket"),
    Route(DASHBOARD_PATH, {"GET": Method(_builtin, "Redirect to /dashboard/")},
          doc="The web dashboard", kind="static"),
    Route(DASHBOARD_PATH + "/access",
          {"GET": Method(_dashboard_access, "The requesting user's name and write access",
                         query=("login",))},
          doc="What the dashboard's user may do"),
    Route(DASHBOARD_PATH + "/{static_path}",
          {"GET": Method(_builtin, "The web dashboard's files")},
          doc="The web dashboard's files", kind="static"),
]


def _nothing() -> None:
    pass


@dataclass
class Response:
    """One answer: status, headers, body; ``resource`` takes over (WebSocket).

    ``release`` frees what the request holds (a heavy read's ticket); whoever
    sends the answer calls :meth:`finished` once it is sent, or the client gone.
    """

    status: int
    body: bytes = b""
    headers: Sequence[tuple[str, str]] = ()
    user: str | None = None
    resource: IResource | None = None
    release: Callable[[], None] = _nothing

    def finished(self) -> None:
        """The answer was sent (or cannot be): free what the request held."""
        self.release()


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
    body = {"code": err.code, "message": html.escape(err.message),  # quotes too, as Ganeti
            "explain": err.explain}
    headers = [("Content-Type", JSON_TYPE), *err.headers.items()]
    return Response(err.code, json.dumps(body).encode(), headers, user)


_JSON_HEADERS = (("Content-Type", JSON_TYPE),)


def _json_body(body: bytes, user: str | None) -> Response:
    return Response(200, body, _JSON_HEADERS, user)


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

    ``routes`` defaults to ``ganeti.rapi.routes.ROUTES``; the built-in
    feed route is served only with a ``websocket`` factory, the dashboard only
    with a ``static_dir``.
    """

    def __init__(self, routes: list[Route] | None, luxi: Luxi, clock: IReactorTime,
                 users: UsersFile, require_auth: bool = False,
                 max_body: int = DEFAULT_MAX_BODY,
                 websocket: Callable[[], IResource] | None = None,
                 static_dir: str | None = None,
                 throttle: LoginThrottle | None = None, coalesce: bool = True,
                 heavy: HeavyReads | None = None,
                 console: Callable[[str, str | None, bool], IResource] | None = None
                 ) -> None:
        if routes is None:
            from ganeti.rapi import routes as table  # written separately; imported when used
            routes = table.ROUTES
        builtin = [r for r in BUILTIN_ROUTES
                   if (r.pattern == CONSOLE_PATH and console is not None)
                   or (r.pattern == FEED_PATH and websocket is not None)
                   or ((r.kind == "static" or r.pattern.startswith(DASHBOARD_PATH))
                       and static_dir is not None)]
        self.routes = list(routes) + builtin
        self.luxi = luxi
        self.clock = clock
        self.users = users
        self.auth = Authenticator(users, require_auth)
        self.throttle = throttle if throttle is not None else LoginThrottle(clock)
        self.heavy = heavy if heavy is not None else HeavyReads()
        self.max_body = max_body
        self.websocket = websocket
        self.console = console
        self.static = StaticFiles(static_dir) if static_dir is not None else None
        self.coalescer: Coalescer[Response] | None = Coalescer(clock) if coalesce else None
        self.client_log = AddressLog(clock, log)
        self._index = _RouteIndex(self.routes)

    def process(self, method: str, path: str | bytes, query_string: bytes | str,
                headers: Mapping[str, str], body: bytes,
                client_ip: str) -> defer.Deferred[Response]:
        """Answer one request; the Deferred fails only with CancelledError.

        The answer counts as sent when it is produced (nothing in process
        holds a connection): what the request held is freed at once.
        """
        result = self.handle(method, path, query_string, headers, body, client_ip)
        d = result if isinstance(result, defer.Deferred) else defer.succeed(result)
        return d.addCallback(_sent)

    def handle(self, method: str, raw_path: str | bytes, query_string: bytes | str,
               headers: Mapping[str, str], body: bytes,
               client_ip: str) -> Response | defer.Deferred[Response]:
        """:meth:`process`, answering at once when nothing has to be waited for (the
        checks failed, or the handler returned a plain value).  The caller calls
        :meth:`Response.finished` once the answer is sent."""
        entry: UserEntry | None = None
        release: Release | None = None
        try:
            if not isinstance(headers, HeaderView):
                headers = {k.lower(): v for k, v in headers.items()}
            path = self._decode_path(raw_path)
            route, params, spec, http_method = self._dispatch(method, path)
            authenticated = self._authenticate(headers.get("authorization"), client_ip)
            if isinstance(authenticated, defer.Deferred):
                return authenticated  # a failed login, answered late
            entry = authenticated
            self.auth.authorize(entry, spec.access)
            user = entry.name if entry is not None else None
            if route.pattern == CONSOLE_PATH:
                assert self.console is not None
                write = entry is not None and WRITE in entry.options
                return Response(101, user=user, resource=self.console(
                    params["instance_name"], user, write))
            if route.kind == "websocket":
                assert self.websocket is not None
                return Response(101, user=user, resource=self.websocket())
            if route.kind == "static":
                return self._static(params, path, user)
            query = self._parse_query(query_string, spec)
            value = self._parse_body(spec, headers, body, client_ip)
            request = Request(method=http_method, path=path, params=params, query=query,
                              body=value, user=entry.user if entry is not None else None,
                              luxi=self.luxi, clock=self.clock, route=route)
            if spec.heavy:
                release = self.heavy.ticket(client_ip)
        except Exception as err:  # every error becomes an answer
            return self._error(err, entry)
        acquire = (lambda: self.heavy.acquire(client_ip)) if spec.heavy else None
        result: Response | defer.Deferred[Response]
        if (self.coalescer is not None and http_method == "GET" and value is None
                and spec.result != "job"):
            result = self.coalescer.join((route.pattern, path, query_key(query), user),
                                         lambda: self._run(spec, request, entry), acquire)
        elif acquire is not None:
            result = acquire().addCallback(self._run_in_slot, spec, request, entry)
        else:
            result = self._run(spec, request, entry)
        return result if release is None else _holding(result, release)

    def _authenticate(self, header: str | None, client_ip: str
                      ) -> UserEntry | None | defer.Deferred[Response]:
        """The user of ``header``; a failed login raises 401, or (past the
        throttle's threshold) is answered by the returned Deferred, late."""
        if header is None:
            return self.auth.authenticate(None)
        wait = self.throttle.retry_after(client_ip)
        if wait:
            self.client_log.info(
                client_ip, "throttled", "Refusing logins from {address} for now: "
                "{failures} failed logins, the last answers still delayed "
                "({suppressed} more since the last report)",
                failures=self.throttle.failures(client_ip))
            raise errors.HttpTooManyRequests(
                "Too many failed logins from this address; retry later",
                headers={"Retry-After": str(max(1, math.ceil(wait)))})
        try:
            return self.auth.authenticate(header)
        except errors.HttpUnauthorized as err:
            delay = self.throttle.failed(client_ip)
            if delay <= 0:
                raise
            self.client_log.info(
                client_ip, "login", "Failed logins from {address}: {failures}; answering "
                "them late ({suppressed} more since the last report)",
                failures=self.throttle.failures(client_ip))
            return task.deferLater(self.clock, delay, error_response, err)

    def _run_in_slot(self, release: Release, spec: Method, request: Request,
                     entry: UserEntry | None) -> defer.Deferred[Response]:
        d = defer.maybeDeferred(self._run, spec, request, entry)
        return d.addBoth(_passing, release)

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
                d: defer.Deferred[Response] = result.addCallback(self._encode, user)
                return d.addErrback(self._failed, entry)
            answer = self._encode(result, user)
        except Exception as err:  # every error becomes an answer
            return self._error(err, entry)
        if isinstance(answer, defer.Deferred):
            answer.addErrback(self._failed, entry)
        return answer

    def _encode(self, value: Any, user: str | None) -> Response | defer.Deferred[Response]:
        """The 200 answer carrying ``value`` (encoded over several turns if long;
        JSON text from masterd as it came)."""
        if isinstance(value, RawJson):
            return _json_body(value.text, user)
        encoded = encode_json(value, self.clock)
        if isinstance(encoded, bytes):
            return _json_body(encoded, user)
        return encoded.addCallback(_json_body, user)

    def _failed(self, failure: Failure, entry: UserEntry | None) -> Response:
        if failure.check(defer.CancelledError):
            failure.raiseException()  # the client went away: nobody to answer
        err = failure.value
        assert isinstance(err, Exception)
        return self._error(err, entry)

    def _error(self, err: Exception, entry: UserEntry | None) -> Response:
        user = entry.name if entry is not None else None
        mapped = http_error_for(err)
        # Clients decide how often these happen (a request per failure): the lines
        # are rate-limited per kind of failure, each with the count it stands for.
        if mapped is None:
            suppressed = self.client_log.allow("*", f"bug {type(err).__name__}")
            if suppressed is not None:
                log.failure("Internal error in a RAPI handler ({suppressed} more like it "
                            "since the last report)", Failure(err), suppressed=suppressed)
            mapped = errors.HttpInternalServerError("Internal error")
        elif mapped.code >= 500:
            suppressed = self.client_log.allow("*", f"{mapped.code} {mapped.message[:100]}")
            if suppressed is not None:
                log.warn("RAPI request failed: {code} {message} ({suppressed} more like it "
                         "since the last report)", code=mapped.code, message=mapped.message,
                         suppressed=suppressed)
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
            # Ganeti answers 501 for every method a resource lacks, whatever the verb
            # and the body; the Allow header is ours.
            allowed = sorted(route.methods)
            if "GET" in route.methods and route.kind != "websocket":
                allowed.append("HEAD")
            raise errors.HttpNotImplemented(
                f"Method {method} is unsupported for path {path}",
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

    def _parse_body(self, spec: Method, headers: Mapping[str, str], body: bytes,
                    client_ip: str) -> Any:
        if len(body) > self.max_body:
            raise errors.HttpRequestEntityTooLarge(
                f"The request body exceeds the limit of {self.max_body} bytes")
        if not body:
            return None
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != JSON_TYPE:
            raise errors.HttpUnsupportedMediaType(
                f"The request body must be {JSON_TYPE} (Content-Type), not "
                f"{media or 'unspecified'}")
        try:
            value = load_json(body, parse_constant=_reject_constant)
        except ValueError as err:  # UnicodeDecodeError and JsonTooDeep included
            self.client_log.info(client_ip, "body", "Bad request body from {address}: "
                                 "{error} ({suppressed} more since the last report)",
                                 error=str(err)[:200])
            raise errors.HttpBadRequest(f"Unable to parse JSON data: {err}") from None
        if spec.body == "none":
            # As Ganeti: a body is checked as any other (media type, JSON) and then
            # ignored; ganeti.rapi.client sends ``{}`` or ``null`` on some GETs.
            return None
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


def _sent(response: Response) -> Response:
    response.finished()
    return response


def _passing(result: Any, release: Release) -> Any:
    release()
    return result


def _holding(result: Response | defer.Deferred[Response],
             release: Release) -> Response | defer.Deferred[Response]:
    """This request's own copy of ``result`` (coalesced requests share one),
    holding ``release`` until it is sent; released at once if it fails."""
    if isinstance(result, Response):
        return dataclasses.replace(result, release=release)

    def failed(failure: Failure) -> Failure:
        release()
        return failure
    return result.addCallbacks(lambda r: dataclasses.replace(r, release=release), failed)
