"""The RAPI route table's building blocks, and the request handlers see.

Every resource is declared once, as a :class:`Route` with one
:class:`Method` per HTTP method.  The HTTP server dispatches from the table
(``ganeti.rapi.resources.ROUTES``), checks access and the query parameters
against it, and the OpenAPI document is generated from it: nothing about a
resource is written twice.

Handlers are ``handler(request) -> value | Deferred[value] | coroutine``; the
value is sent as JSON (bare scalars included, as Ganeti does).  They raise
:class:`ganeti.rapi.errors.HttpError` subclasses for HTTP errors; Ganeti
errors coming back from LUXI are mapped to statuses by the server.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.rapi import errors

#: Access options a users-file entry can carry.
READ = "read"
WRITE = "write"
#: ``{name}`` placeholders in route patterns: names of objects, and job ids.
NAME_PATTERN = r"[\w._-]+"
JOB_ID_PATTERN = r"\d+"
INDEX_PATTERN = r"\d+"
#: ``{static_path}``: the rest of a path below a ``"static"`` route's prefix, slashes
#: included (the file server refuses ``..`` and anything outside its directory).
STATIC_PATH_PATTERN = r"[\w./-]*"
_PLACEHOLDERS = {"job_id": JOB_ID_PATTERN, "disk_index": INDEX_PATTERN,
                 "static_path": STATIC_PATH_PATTERN}


class Luxi(Protocol):
    """What handlers call: the RAPI daemon's asynchronous LUXI client."""

    def call(self, method: str, *args: Any) -> defer.Deferred[Any]:
        """Call a LUXI method on masterd; fails with the decoded Ganeti error."""


@dataclass(frozen=True)
class User:
    """A users-file entry (the password is never kept here)."""

    name: str
    options: frozenset[str]


@dataclass
class Request:
    """What a handler gets: the parsed, validated parts of one HTTP request."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    body: Any
    user: User | None
    luxi: Luxi
    clock: IReactorTime
    route: Route | None = None

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name`` (Ganeti takes the first)."""
        values = self.query.get(name)
        return values[0] if values else default

    def flag(self, name: str, default: bool = False) -> bool:
        """A bool-ish query parameter, parsed with ``int()`` as Ganeti does (``1``/``0``)."""
        value = self.arg(name)
        if value is None:
            return default
        try:
            return bool(int(value))
        except ValueError:
            raise errors.HttpBadRequest(
                f"Invalid value for query parameter '{name}': {value!r} "
                "(expected an integer such as 0 or 1)") from None

    def now_ns(self) -> int:
        """The injected clock's time in nanoseconds (for reason trails)."""
        return int(self.clock.seconds() * 1_000_000_000)


Handler = Callable[[Request], "Any | Awaitable[Any] | defer.Deferred[Any]"]


@dataclass(frozen=True)
class Method:
    """One HTTP method of a resource.

    ``access``: the users-file options of which a user needs one (empty: any
    user, and anonymous users unless ``--require-authentication``).
    ``query``: the query parameters accepted (others get 400).
    ``body``: ``"none"`` (a body is refused), ``"json"`` (any JSON), or
    ``"opcode"`` (a JSON object of the parameters of ``opcode``).
    ``result``: what the response is, for the OpenAPI document: ``"job"``
    (a bare job id), or a short JSON-schema-ish description via ``schema``.
    """

    handler: Handler
    summary: str
    access: frozenset[str] = frozenset()
    query: tuple[str, ...] = ()
    body: str = "none"
    opcode: str | None = None
    result: str = "json"
    schema: Mapping[str, Any] = field(default_factory=dict)


def default_access(http_method: str) -> frozenset[str]:
    """Ganeti's defaults: GET open to every (or anonymous) user, writes need ``write``."""
    return frozenset() if http_method == "GET" else frozenset({WRITE})


@dataclass(frozen=True)
class Route:
    """A path pattern such as ``/2/nodes/{node_name}/role`` and its methods.

    ``kind`` is ``"rest"`` for JSON resources, ``"websocket"`` for the feed
    endpoint (rendered by the feed resource once access was checked), and
    ``"static"`` for the dashboard's files; a static route's pattern may end in
    ``{static_path}``, which matches the rest of the path, slashes included.
    """

    pattern: str
    methods: Mapping[str, Method]
    doc: str = ""
    kind: str = "rest"

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern; placeholders match Ganeti's name and id syntax."""
        return _compile(self.pattern)

    @property
    def placeholders(self) -> list[str]:
        """The names of the pattern's ``{placeholders}``, in order."""
        return re.findall(r"\{(\w+)\}", self.pattern)


_CACHE: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str) -> re.Pattern[str]:
    compiled = _CACHE.get(pattern)
    if compiled is None:
        parts = re.split(r"(\{\w+\})", pattern)
        out = []
        for part in parts:
            m = re.fullmatch(r"\{(\w+)\}", part)
            if m:
                name = m.group(1)
                out.append(f"(?P<{name}>{_PLACEHOLDERS.get(name, NAME_PATTERN)})")
            else:
                out.append(re.escape(part))
        compiled = _CACHE[pattern] = re.compile("".join(out) + r"\Z")
    return compiled


def match(routes: list[Route], path: str) -> tuple[Route, dict[str, str]] | None:
    """The route matching ``path`` and its placeholder values, or None (404)."""
    for route in routes:
        m = route.regex.match(path)
        if m:
            return route, m.groupdict()
    return None
