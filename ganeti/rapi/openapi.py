"""The OpenAPI 3.0.3 document of the remote API, generated from the route table.

Everything comes from the declarations: paths and their placeholders from
the :class:`~ganeti.rapi.routing.Route` patterns, query parameters, access
and result schemas from each :class:`~ganeti.rapi.routing.Method`, and the
request body of an opcode-backed method from the opcode's parameter
declarations (minus the parameters the URL sets, plus renamed keys).

The route table itself (:mod:`ganeti.rapi.routes`) includes the route
serving this document (:func:`document_route`), given the table to describe;
``python -m ganeti.rapi.routes > docs/rapi-openapi.json`` writes the document
that is kept in the repository; a test checks that it is current.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ganeti.core import opcodes
from ganeti.core.opcodes import Kind, KindMismatch, Param, kinds
from ganeti.rapi.resources.common import OpcodeBody
from ganeti.rapi.routing import JOB_ID_PATTERN, NAME_PATTERN, Method, Request, Route

OPENAPI_VERSION = "3.0.3"
ERROR_REF = {"$ref": "#/components/schemas/Error"}

# --- opcode parameter kinds -> JSON schema -------------------------------------------

_BASE_KINDS: dict[int, dict[str, Any]] = {
    id(kinds.ANY): {},
    id(kinds.BOOL): {"type": "boolean"},
    id(kinds.INT): {"type": "integer"},
    id(kinds.STRING): {"type": "string"},
    id(kinds.NON_EMPTY_STRING): {"type": "string", "minLength": 1},
    id(kinds.OBJECT): {"type": "object"},
    id(kinds.FLOAT): {"type": "number"},
}

#: Values tried on kinds whose structure cannot be seen, to learn their JSON types.
_PROBES: tuple[tuple[str, Any], ...] = (
    ("boolean", True), ("integer", 1), ("number", 1.5), ("string", "x"),
    ("string", "127.0.0.1"), ("string", "1"), ("array", []), ("object", {}),
)


def _closure(fn: Callable[..., Any]) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    return {name: cell.cell_contents for name, cell in zip(code.co_freevars, cells,
                                                             strict=False)}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object"


def _probe(kind: Kind) -> dict[str, Any]:
    accepted = []
    for json_type, sample in _PROBES:
        try:
            kind.check(sample)
        except (KindMismatch, TypeError, ValueError):
            continue
        if json_type not in accepted:
            accepted.append(json_type)
    if "number" in accepted and "integer" in accepted:
        accepted.remove("integer")
    if not accepted:
        return {}
    if len(accepted) == 1:
        return {"type": accepted[0]}
    return {"oneOf": [{"type": t} for t in accepted]}


def _structured(kind: Kind) -> dict[str, Any] | None:
    """The schema of kinds built by ``ganeti.core.opcodes.kinds``' constructors.

    A :class:`Kind` is only a name and a check function, so the structure is
    read from the check's closure (the constructor's arguments: the element
    kind of ``list_of``, the choices of ``one_of``, ...).  If the constructors
    change, this answers None and the kind is probed instead: the schema gets
    less precise, the document stays valid, and the tests of this module show
    the loss.
    """
    fn = kind.check
    maker = getattr(fn, "__qualname__", "").split(".<locals>.")[0]
    cells = _closure(fn)
    if maker == "maybe" and "kind" in cells:
        return {**kind_schema(cells["kind"]), "nullable": True}
    if maker == "refine" and "kind" in cells:
        return kind_schema(cells["kind"])
    if maker == "list_of" and "kind" in cells:
        return {"type": "array", "items": kind_schema(cells["kind"])}
    if maker == "tuple_of" and "kinds" in cells:
        items = [kind_schema(k) for k in cells["kinds"]]
        distinct = [s for i, s in enumerate(items) if s not in items[:i]]
        return {"type": "array", "minItems": len(items), "maxItems": len(items),
                "items": distinct[0] if len(distinct) == 1 else {"oneOf": distinct}}
    if maker == "dict_of" and "value_kind" in cells:
        value = kind_schema(cells["value_kind"])
        keys = _structured(cells["key"]) if "key" in cells else None
        if keys is not None and "enum" in keys:
            return {"type": "object", "properties": {str(k): value for k in keys["enum"]},
                    "additionalProperties": False}
        return {"type": "object", "additionalProperties": value}
    if maker == "one_of" and "choices" in cells:
        choices = list(cells["choices"])
        types = {_json_type(v) for v in choices}
        schema: dict[str, Any] = {"enum": choices}
        if len(types) == 1:
            schema["type"] = types.pop()
        return schema
    if maker == "int_range":
        schema = {"type": "integer"}
        if cells.get("low") is not None:
            schema["minimum"] = cells["low"]
        if cells.get("high") is not None:
            schema["maximum"] = cells["high"]
        return schema
    if maker == "float_kind":
        schema = {"type": "number"}
        if cells.get("low") is not None:
            schema["minimum"] = cells["low"]
        return schema
    if maker == "regexp":
        return {"type": "string", "format": "regex", "minLength": 1}
    return None


def kind_schema(kind: Kind) -> dict[str, Any]:
    """A JSON schema (OpenAPI 3.0 dialect) for values of an opcode parameter kind.

    Kinds made by the constructors of ``ganeti.core.opcodes.kinds`` map
    structurally (lists, objects, enums, ranges, nullability); any other
    kind is probed with sample values to learn its JSON types (a kind that
    accepts none of them is ``{}``, any value) and keeps its name as the
    description.
    """
    base = _BASE_KINDS.get(id(kind))
    if base is not None:
        schema = dict(base)
    else:
        structured = _structured(kind)
        schema = structured if structured is not None else {
            **_probe(kind), "description": kind.name}
    if kind.nullable and set(schema) - {"description"}:
        schema["nullable"] = True
    return schema


def _common_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{COMMON_PREFIX}{name}"}


COMMON_PREFIX = "opcode."
_COMMON_NAMES = frozenset(p.name for p in opcodes.COMMON_PARAMS)


def _param_schema(param: Param) -> dict[str, Any]:
    if param.reserved:
        return {"nullable": True, "description": f"{param.doc}; accepted only as null or "
                                                 "an empty value"}
    schema = kind_schema(param.kind)
    schema["description"] = param.doc if "description" not in schema else (
        f"{param.doc} ({schema['description']})")
    if not param.required:
        default = param.default_value()
        if default is not None:
            schema["default"] = default
    return schema


def common_param_schemas() -> dict[str, Any]:
    """The schemas of the parameters every opcode takes (shared by reference), but
    ``reason``: RAPI always builds the reason trail itself."""
    return {f"{COMMON_PREFIX}{p.name}": _param_schema(p) for p in opcodes.COMMON_PARAMS
            if p.name != "reason"}


def opcode_body_schema(spec: OpcodeBody) -> dict[str, Any]:
    """The request body of an opcode method: the opcode's parameters that the
    body may set, under their RAPI names, and nothing else."""
    decl = opcodes.get(spec.op_id)
    renamed_from = {new: old for old, new in spec.rename.items()}
    properties: dict[str, Any] = {}
    required = []
    if spec.body_params:
        for param in decl.all_params:
            if param.name in spec.static_names or param.name in spec.forbidden:
                continue
            properties[param.name] = (_common_ref(param.name)
                                      if param.name in _COMMON_NAMES else _param_schema(param))
            if param.name in renamed_from:
                alias = renamed_from[param.name]
                properties[alias] = {**properties[param.name],
                                     "description": f"Another name of {param.name}"}
            elif param.required:
                required.append(param.name)
    else:
        properties["depends"] = _common_ref("depends")
    schema: dict[str, Any] = {
        "type": "object", "properties": dict(sorted(properties.items())),
        "additionalProperties": False,
        "description": f"Parameters of {spec.op_id}",
    }
    if required:
        schema["required"] = sorted(required)
    return schema


# --- parameters -----------------------------------------------------------------------

_FLAG = {"type": "integer", "description": "0 or 1 (parsed as an integer)"}

#: Query parameters: (description, schema).
QUERY_PARAMETERS: dict[str, tuple[str, dict[str, Any]]] = {
    "bulk": ("1: return every item's fields instead of [{id or name, uri}]", _FLAG),
    "dry-run": ("1: only check whether the operation could be done (opcode dry_run)",
                _FLAG),
    "force": ("1: force the operation (opcode force)", _FLAG),
    "lock": ("1: query with locks (accepted; queries never need locks here)", _FLAG),
    "auto-promote": ("1: promote other nodes to master candidates if needed", _FLAG),
    "reason": ("Reason for the operation, recorded first in the reason trail",
               {"type": "string"}),
    "tag": ("A tag (repeat for several tags)",
            {"type": "array", "items": {"type": "string"}}),
    "fields": ("Comma-separated field names", {"type": "string"}),
    "remote_node": ("The new secondary node (older form of the body's)", {"type": "string"}),
    "disks": ("Comma-separated disk indices (older form of the body's list)",
              {"type": "string"}),
    "iallocator": ("The allocator choosing the new secondary (older form of the body's)",
                   {"type": "string"}),
    "early_release": ("Sent by Ganeti's client; not used (as Ganeti's RAPI)",
                      {"type": "string"}),
}


def _path_parameter(name: str) -> dict[str, Any]:
    pattern = JOB_ID_PATTERN if name == "job_id" else NAME_PATTERN
    schema: dict[str, Any] = {"type": "string", "pattern": f"^{pattern}$"}
    return {"name": name, "in": "path", "required": True, "schema": schema,
            "description": name.replace("_", " ").capitalize()}


def _query_parameter(name: str) -> dict[str, Any]:
    doc, schema = QUERY_PARAMETERS.get(name, ("", {"type": "string"}))
    param: dict[str, Any] = {"name": name, "in": "query", "required": False,
                             "schema": schema, "description": doc or name}
    if schema.get("type") == "array":
        param.update(style="form", explode=True)
    return param


# --- operations -----------------------------------------------------------------------

def _request_body(method: Method) -> dict[str, Any] | None:
    if method.body == "none":
        return None
    explicit = getattr(method.handler, "request_schema", None)
    spec = getattr(method.handler, "opcode_body", None)
    if explicit is not None:
        schema, required = dict(explicit), bool(getattr(method.handler, "body_required", True))
    elif isinstance(spec, OpcodeBody):
        schema, required = opcode_body_schema(spec), False
    else:
        schema, required = {}, False
    return {"required": required,
            "content": {"application/json": {"schema": schema}}}


#: Error responses, shared by reference: (status, component name, description).
ERRORS = (
    ("400", "BadRequest", "Bad request: a query parameter or the body is invalid"),
    ("401", "Unauthorized", "Authentication is needed, or the credentials are wrong"),
    ("403", "Forbidden", "The user lacks the access this method needs, or a parameter "
                         "may not be set over RAPI"),
    ("404", "NotFound", "Unknown path, or unknown object"),
    ("415", "UnsupportedMediaType", "The body is not application/json"),
    ("429", "TooManyRequests", "Too many failed logins from the client's address, or (for "
                               "lists and queries) too many large reads in flight from it; "
                               "see Retry-After"),
    ("503", "ServiceUnavailable", "The job queue is full or drained"),
)
_ERROR_NAMES = {status: name for status, name, _ in ERRORS}


def _error(status: str) -> dict[str, Any]:
    return {"$ref": f"#/components/responses/{_ERROR_NAMES[status]}"}


def _responses(route: Route, method: Method) -> dict[str, Any]:
    result = dict(method.schema) if method.schema else {}
    responses: dict[str, Any] = {
        "200": {"description": "The job id" if method.result == "job" else "Success",
                "content": {"application/json": {"schema": result}}},
        "400": _error("400"),
        "401": _error("401"),
    }
    spec = getattr(method.handler, "opcode_body", None)
    if method.access or (isinstance(spec, OpcodeBody) and spec.forbidden):
        responses["403"] = _error("403")
    responses["404"] = _error("404")
    if method.body != "none":
        responses["415"] = _error("415")
    responses["429"] = _error("429")
    if method.result == "job":
        responses["503"] = _error("503")
    return responses


_TAGS = ("nodes", "groups", "instances", "jobs", "filters", "query")


def _tag(pattern: str) -> str:
    parts = pattern.split("/")
    return parts[2] if len(parts) > 2 and parts[2] in _TAGS else "cluster"


def _operation(route: Route, http_method: str, method: Method) -> dict[str, Any]:
    slug = route.pattern.strip("/").replace("/", "_").replace("{", "").replace("}", "")
    op: dict[str, Any] = {
        "operationId": f"{http_method.lower()}_{slug or 'root'}".replace("-", "_").replace(
            ".", "_"),
        "summary": method.summary,
        "tags": [_tag(route.pattern)],
        "x-ganeti-access": sorted(method.access),
    }
    if method.opcode:
        op["x-ganeti-opcode"] = method.opcode
    if method.access:
        op["security"] = [{"basicAuth": []}]
        needed = " or ".join(sorted(method.access))
        op["description"] = f"Needs a user with the '{needed}' option."
    else:
        op["security"] = [{}, {"basicAuth": []}]
        op["description"] = ("Open to anonymous clients unless the daemon runs with "
                             "--require-authentication.")
    params = [_path_parameter(name) for name in route.placeholders]
    params += [_query_parameter(name) for name in method.query]
    if params:
        op["parameters"] = params
    body = _request_body(method)
    if body is not None:
        op["requestBody"] = body
    op["responses"] = _responses(route, method)
    return op


ERROR_SCHEMA = {
    "type": "object", "required": ["code", "message", "explain"],
    "properties": {
        "code": {"type": "integer", "description": "The HTTP status"},
        "message": {"type": "string", "description": "What went wrong"},
        "explain": {"type": "string", "description": "The status's long description"},
    },
}

_DESCRIPTION = (
    "Ganeti's remote API, version 2, as served by ganeti-twisted's ganeti-rapi. "
    "Answers are JSON; plain values (a job id, a role, null) are sent bare. "
    "Methods that change something submit a job and answer its id; follow it with "
    "GET /2/jobs/{job_id} or /2/jobs/{job_id}/wait. x-ganeti-access lists the users-file "
    "options of which a user needs one (empty: any user, or anonymous).")


def build_document(routes: Iterable[Route]) -> dict[str, Any]:
    """The OpenAPI 3.0.3 document of ``routes``."""
    paths: dict[str, Any] = {}
    for route in routes:
        if route.kind != "rest":
            continue
        item: dict[str, Any] = {}
        if route.doc:
            item["summary"] = route.doc
        for http_method, method in route.methods.items():
            item[http_method.lower()] = _operation(route, http_method, method)
        paths[route.pattern] = item
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "Ganeti remote API (RAPI) v2", "version": "2",
                 "description": _DESCRIPTION},
        "servers": [{"url": "https://{host}:{port}", "variables": {
            "host": {"default": "localhost"}, "port": {"default": "5080"}}}],
        "paths": paths,
        "components": {
            "securitySchemes": {"basicAuth": {"type": "http", "scheme": "basic"}},
            "schemas": {"Error": ERROR_SCHEMA, **common_param_schemas()},
            "responses": {name: {"description": text, "content": {
                "application/json": {"schema": ERROR_REF}}} for _, name, text in ERRORS},
        },
    }


def render(document: Mapping[str, Any]) -> str:
    """The document as the text kept in docs/rapi-openapi.json."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def document_route(routes: Callable[[], Sequence[Route]]) -> Route:
    """``/2/openapi.json``: the document of ``routes()`` (the whole table, this route
    included), built on the first request."""
    document: dict[str, Any] = {}

    async def get_openapi(request: Request) -> dict[str, Any]:
        """The OpenAPI 3.0 document of this API (built once)."""
        if not document:
            document.update(build_document(routes()))
        return document

    return Route("/2/openapi.json", {"GET": Method(
        get_openapi, "This API as an OpenAPI 3.0 document",
        schema={"type": "object", "description": "An OpenAPI 3.0.3 document"})},
        "The OpenAPI document")
