"""The RAPI route table's building blocks, and the request handlers see.

Every resource is declared once, as a :class:`Route` with one
:class:`Method` per HTTP method.  The HTTP server dispatches from the table
(``ganeti.rapi.routes.ROUTES``), checks access and the query parameters
against it, and the OpenAPI document is generated from it: nothing about a
resource is written twice.

Handlers are ``handler(request) -> value | Deferred[value] | coroutine``; the
value is sent as JSON (bare scalars included, as Ganeti does).  They raise
:class:`ganeti.rapi.errors.HttpError` subclasses for HTTP errors; Ganeti
errors coming back from LUXI are mapped to statuses by the server.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.luxi.wire import RawJson
from ganeti.rapi import errors

#: Access options a users-file entry can carry.
READ = "read"
WRITE = "write"
#: Query parameters several resources share (Ganeti's names).
REASON = "reason"
DRY_RUN = "dry-run"
FORCE = "force"
BULK = "bulk"
LOCK = "lock"
FIELDS = "fields"
#: How query parameters are read, for telling when two GETs ask the same thing
#: (:func:`query_key`): flags are read with :meth:`Request.flag`, field lists
#: are comma-separated names, and a reason goes into opcodes only, so it does
#: not change what a GET answers.
FLAG_PARAMETERS = frozenset({BULK, LOCK, DRY_RUN, FORCE})
LIST_PARAMETERS = frozenset({FIELDS})
READ_IGNORED_PARAMETERS = frozenset({REASON})
#: ``{name}`` placeholders in route patterns: names of objects, and job ids.
NAME_PATTERN = r"[\w._-]+"
JOB_ID_PATTERN = r"[0-9]+"
INDEX_PATTERN = r"[0-9]+"
#: ``{static_path}``: the rest of a path below a ``"static"`` route's prefix, slashes
#: included (the file server refuses ``..`` and anything outside its directory).
STATIC_PATH_PATTERN = r"[\w./-]*"
_PLACEHOLDERS = {"job_id": JOB_ID_PATTERN, "disk_index": INDEX_PATTERN,
                 "static_path": STATIC_PATH_PATTERN}


class Luxi(Protocol):
    """What handlers call: the RAPI daemon's asynchronous LUXI client."""

    def call(self, method: str, *args: Any) -> defer.Deferred[Any]:
        """Call a LUXI method on masterd; fails with the decoded Ganeti error."""

    def call_raw(self, method: str, *args: Any) -> defer.Deferred[RawJson]:
        """Like :meth:`call`, the result left as the JSON text masterd sent (a
        handler returning it has it sent as the body unchanged)."""


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
    ``body``: ``"none"`` (a body is checked as JSON and ignored, as Ganeti),
    ``"json"`` (any JSON), or ``"opcode"`` (a JSON object of the parameters of
    ``opcode``).
    ``result``: what the response is, for the OpenAPI document: ``"job"``
    (a bare job id), or a short JSON-schema-ish description via ``schema``.
    ``heavy``: the answer grows with the cluster (lists of every object,
    queries); such reads are bounded per client address and run a few at a
    time (:class:`ganeti.rapi.limits.HeavyReads`).
    """

    handler: Handler
    summary: str
    access: frozenset[str] = frozenset()
    query: tuple[str, ...] = ()
    body: str = "none"
    opcode: str | None = None
    result: str = "json"
    schema: Mapping[str, Any] = field(default_factory=dict)
    heavy: bool = False


def _canonical_value(name: str, value: str) -> Hashable:
    if name in FLAG_PARAMETERS:
        try:
            return bool(int(value))  # as Request.flag reads it
        except ValueError:
            return value  # answered 400 by the handler; keep it apart
    if name in LIST_PARAMETERS:
        return tuple(item.strip() for item in value.split(","))
    return value


def query_key(query: Mapping[str, list[str]]) -> tuple[Hashable, ...]:
    """What a read-only request's parsed query asks for, as a hashable key.

    Requests whose queries mean the same get the same key: parameter order
    does not matter, only the first value of a parameter counts (as
    :meth:`Request.arg` reads it), flags compare by their value (``bulk=1``,
    ``bulk=01`` and ``bulk=20`` are all true) and parameters that do not
    change a read's answer are left out.
    """
    return tuple(sorted(
        (name, _canonical_value(name, values[0]) if values else None)
        for name, values in query.items() if name not in READ_IGNORED_PARAMETERS))


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
