"""What the RAPI resources share: request bodies turned into opcodes, job
submission, bulk and URI lists, tag resources, and small validation helpers.

An opcode-backed method is declared by an :class:`OpcodeBody`: the opcode,
the parameters taken from the URL or the query string (the *static*
parameters, which the body may not set), renamed body keys and forbidden
parameters.  :func:`build_opcode` applies it to a request exactly once,
before anything is sent to the master: a bad body never creates a job.  The
same declaration feeds the OpenAPI document (``ganeti.rapi.openapi``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants as c
from ganeti.core import errors, opcodes
from ganeti.rapi import errors as http
from ganeti.rapi.routing import BULK as BULK  # the shared query parameter names
from ganeti.rapi.routing import DRY_RUN as DRY_RUN
from ganeti.rapi.routing import FORCE as FORCE
from ganeti.rapi.routing import LOCK as LOCK
from ganeti.rapi.routing import REASON as REASON
from ganeti.rapi.routing import Method, Request, default_access

#: The RAPI version ``/version`` answers.
RAPI_VERSION = 2


# --- small checks ------------------------------------------------------------------

_JSON_TYPES: dict[type, str] = {dict: "an object", list: "a list", str: "a string",
                                bool: "a boolean", int: "a number", float: "a number"}


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def require_dict(value: Any, what: str = "Body contents") -> dict[str, Any]:
    """``value`` if it is a JSON object, else 400."""
    if not isinstance(value, dict):
        raise http.HttpBadRequest(f"{what}: expected a JSON object, got {json_type(value)}")
    return value


def refuse_unknown_keys(body: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """400 if ``body`` has keys other than ``allowed``."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise http.HttpBadRequest("Invalid body parameters: unknown parameter(s) "
                                  + ", ".join(repr(k) for k in unknown))


def is_str_list(value: Any) -> bool:
    """Whether ``value`` is a list of strings."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def split_fields(text: str) -> list[str]:
    """``a, b,c`` -> ``["a", "b", "c"]`` (Ganeti strips each name)."""
    return [name.strip() for name in text.split(",")]


async def not_found_if_unknown(call: Awaitable[Any], empty_ok: bool = False) -> Any:
    """Await a single-object query; 404 for an unknown object (or, unless
    ``empty_ok``, an empty answer)."""
    try:
        result = await call
    except errors.OpPrereqError as err:
        if len(err.args) >= 2 and err.args[1] == errors.ECODE_NOENT:
            raise http.HttpNotFound(str(err.args[0])) from None
        raise
    if not result and not empty_ok:
        raise http.HttpNotFound()
    return result


# --- lists -------------------------------------------------------------------------

def map_fields(fields: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """One old-style query row as ``{field: value}``."""
    if len(fields) != len(row):
        raise http.HttpBadGateway("The master answered with a row of the wrong length")
    return dict(zip(fields, row, strict=True))


def uri_list(ids: Iterable[Any], uri_format: str, key: str) -> list[dict[str, Any]]:
    """``[{key: id, "uri": ...}]`` sorted by id, as Ganeti's index resources answer."""
    return [{key: ident, "uri": uri_format.format(ident)} for ident in sorted(ids)]


# --- opcodes -----------------------------------------------------------------------

@dataclass(frozen=True)
class Static:
    """Where a static opcode parameter comes from: a path placeholder, a
    bool-ish query parameter, every value of a query parameter, or a constant."""

    source: str  # "path" | "flag" | "query-list" | "const"
    name: str = ""
    value: Any = None

    def resolve(self, request: Request) -> Any:
        """The parameter's value for ``request`` (400 for a bad query value)."""
        if self.source == "path":
            return request.params[self.name]
        if self.source == "flag":
            return request.flag(self.name)
        if self.source == "query-list":
            return list(request.query.get(self.name, []))
        return self.value


def path(name: str) -> Static:
    """A static parameter from the URL placeholder ``name``."""
    return Static("path", name)


def flag(name: str) -> Static:
    """A static parameter from the bool-ish query parameter ``name`` (``0``/``1``)."""
    return Static("flag", name)


def query_list(name: str) -> Static:
    """A static parameter holding every value of query parameter ``name``."""
    return Static("query-list", name)


def const(value: Any) -> Static:
    """A static parameter with a fixed value."""
    return Static("const", value=value)


@dataclass(frozen=True)
class OpcodeBody:
    """How an HTTP method builds its opcode.

    ``suffix`` names the resource in the reason trail
    (``gnt:library:rlib2:<suffix>``, Ganeti's handler class names).
    ``static`` maps opcode parameters to their source outside the body;
    ``rename`` maps body keys to opcode parameters (``name`` -> ``group_name``);
    ``forbidden`` parameters get 403.  With ``body_params`` false the body
    carries no opcode parameters: only ``depends`` is taken from it.
    """

    op_id: str
    suffix: str
    static: Mapping[str, Static] = field(default_factory=dict)
    rename: Mapping[str, str] = field(default_factory=dict)
    forbidden: frozenset[str] = frozenset()
    body_params: bool = True

    @property
    def static_names(self) -> frozenset[str]:
        """Every parameter the body may not set (``reason`` included)."""
        return frozenset(self.static) | {"reason"}


def reason_trail(request: Request, suffix: str) -> list[list[Any]]:
    """The reason trail RAPI gives an opcode: the user's ``?reason=``, then RAPI itself."""
    trail: list[list[Any]] = []
    text = request.arg(REASON)
    if text:
        trail.append([c.OPCODE_REASON_SRC_USER, text, request.now_ns()])
    trail.append([f"{c.OPCODE_REASON_SRC_RLIB2}:{suffix}", "", request.now_ns()])
    return trail


def _check_forbidden(keys: Iterable[str], spec: OpcodeBody) -> None:
    for key in keys:
        if spec.rename.get(key, key) in spec.forbidden:
            raise http.HttpForbidden(
                f"The parameter {spec.rename.get(key, key)} cannot be set via RAPI")


def build_opcode(request: Request, spec: OpcodeBody, body: Any,
                 extra_static: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The checked opcode (stored form) for ``request``; 400/403 on any bad input.

    ``body`` holds the opcode parameters (None: none).  Static parameters
    are resolved here too, so a bad query value is refused before anything
    is submitted.
    """
    params: dict[str, Any] = {} if body is None else dict(require_dict(body))
    _check_forbidden(request.query, spec)
    _check_forbidden(params, spec)
    for old, new in spec.rename.items():
        if old in params:
            if new in params:
                raise http.HttpBadRequest(f"Parameter '{old}' was renamed to '{new}', "
                                          "but both are specified")
            params[new] = params.pop(old)
    depends = request.body.get("depends") if isinstance(request.body, dict) else None
    if depends:
        params["depends"] = depends
    static: dict[str, Any] = {"reason": reason_trail(request, spec.suffix)}
    static.update((name, source.resolve(request)) for name, source in spec.static.items())
    static.update(extra_static or {})
    overwritten = sorted(set(params) & set(static))
    if overwritten:
        raise http.HttpBadRequest("Can't overwrite static parameters "
                                  + ", ".join(repr(k) for k in overwritten))
    if opcodes.OP_ID_KEY in params:
        raise http.HttpBadRequest("Invalid body parameters: 'OP_ID' is given by the "
                                  "resource, not the body")
    params.update(static)
    try:
        return opcodes.validate({opcodes.OP_ID_KEY: spec.op_id, **params})
    except errors.OpPrereqError as err:
        raise http.HttpBadRequest(f"Invalid body parameters: {err.args[0]}") from None


async def submit(request: Request, ops: list[dict[str, Any]]) -> int:
    """Submit one job; its id (503 while the queue is full or drained)."""
    try:
        job_id = await request.luxi.call("SubmitJob", ops)
    except errors.JobQueueFull:
        raise http.HttpServiceUnavailable("Job queue is full, needs archiving") from None
    except errors.JobQueueDrainError:
        raise http.HttpServiceUnavailable("Job queue is drained, cannot submit") from None
    return int(job_id)


def refuse_body_params(request: Request) -> None:
    """400 unless the body is absent or an object holding ``depends`` only (for
    methods whose body carries no opcode parameters)."""
    if request.body is not None:
        refuse_unknown_keys(require_dict(request.body), ["depends"])


class OpcodeHandler:
    """A handler that submits one job of one opcode built by :func:`build_opcode`."""

    request_schema: Mapping[str, Any] | None = None

    def __init__(self, spec: OpcodeBody) -> None:
        self.opcode_body = spec

    async def __call__(self, request: Request) -> int:
        spec = self.opcode_body
        if not spec.body_params:
            refuse_body_params(request)
        body = request.body if spec.body_params else {}
        return await submit(request, [build_opcode(request, spec, body)])


class SchemaHandler:
    """A handler function plus the JSON schema of its (non-opcode) request body."""

    opcode_body: OpcodeBody | None = None
    body_required = True

    def __init__(self, fn: Callable[[Request], Awaitable[Any]],
                 request_schema: Mapping[str, Any]) -> None:
        self.fn = fn
        self.request_schema = request_schema

    async def __call__(self, request: Request) -> Any:
        return await self.fn(request)


JOB_RESULT = {"type": "integer", "description": "The id of the submitted job"}


def opcode_method(http_method: str, spec: OpcodeBody, summary: str,
                  query: Sequence[str] = ()) -> Method:
    """A method that submits ``spec``'s opcode and answers the job id."""
    return Method(OpcodeHandler(spec), summary, access=default_access(http_method),
                  query=(*query, REASON), body="opcode" if spec.body_params else "json",
                  opcode=spec.op_id, result="job", schema=JOB_RESULT)


# --- tags --------------------------------------------------------------------------

TAGS_SCHEMA = {"type": "array", "items": {"type": "string"}, "description": "Tags, sorted"}


TAG_BODY = {
    "oneOf": [
        {"type": "array", "items": {"type": "string"},
         "description": "The tags, as Ganeti's client also sends them (the same as ?tag=)"},
        {"type": "object", "additionalProperties": False,
         "properties": {"depends": {"$ref": "#/components/schemas/opcode.depends"}}},
    ],
}


class TagsHandler(OpcodeHandler):
    """PUT/DELETE of a ``.../tags`` resource: the tags come from ``?tag=``.

    Ganeti's client also sends them as a JSON list in the body (its PUT), so
    a list body is accepted: used when no ``?tag=`` is given, and otherwise it
    must name the same tags.  A JSON object body may carry ``depends`` only.
    """

    request_schema = TAG_BODY
    body_required = False

    async def __call__(self, request: Request) -> int:
        body = request.body
        extra: dict[str, Any] = {}
        if isinstance(body, list):
            if not is_str_list(body):
                raise http.HttpBadRequest("Body contents: expected a list of tags (strings)")
            given = request.query.get("tag")
            if given is None:
                extra["tags"] = list(body)
            elif sorted(set(given)) != sorted(set(body)):
                raise http.HttpBadRequest("The tags in the body differ from the ?tag= "
                                          "parameters")
        else:
            refuse_body_params(request)
        op = build_opcode(request, self.opcode_body, {}, extra)
        return await submit(request, [op])


def tag_methods(kind: str, placeholder: str | None, suffix: str, what: str
                ) -> dict[str, Method]:
    """GET/PUT/DELETE of a ``.../tags`` resource (tags in ``?tag=``, as Ganeti)."""
    name_static = path(placeholder) if placeholder else const(None)
    static = {"kind": const(kind), "name": name_static, "tags": query_list("tag"),
              "dry_run": flag(DRY_RUN)}

    async def get_tags(request: Request) -> list[str]:
        name = request.params[placeholder] if placeholder else None
        return list(await not_found_if_unknown(request.luxi.call("QueryTags", kind, name),
                                               empty_ok=True))

    def change(http_method: str, op_id: str, summary: str) -> Method:
        spec = OpcodeBody(op_id, suffix, static, body_params=False)
        return Method(TagsHandler(spec), summary, access=default_access(http_method),
                      query=("tag", DRY_RUN, REASON), body="json", opcode=op_id,
                      result="job", schema=JOB_RESULT)

    return {
        "GET": Method(get_tags, f"The tags of {what}", query=(REASON,), schema=TAGS_SCHEMA),
        "PUT": change("PUT", "OP_TAGS_SET", f"Add the ?tag= tags to {what}"),
        "DELETE": change("DELETE", "OP_TAGS_DEL", f"Remove the ?tag= tags from {what}"),
    }
