"""The generic query resources: ``/2/query/{resource}`` and its ``/fields``."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields import catalog
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    REASON,
    SchemaHandler,
    is_str_list,
    refuse_unknown_keys,
    require_dict,
    split_fields,
)
from ganeti.rapi.routing import READ, WRITE, Method, Request, Route

#: What Ganeti's RAPI lets clients query (its QR_VIA_RAPI); those our master cannot
#: answer yet get 404.
GANETI_RESOURCES = frozenset({c.QR_GROUP, c.QR_EXPORT, c.QR_INSTANCE, c.QR_JOB, c.QR_LOCK,
                              c.QR_NETWORK, c.QR_NODE, c.QR_FILTER})
#: What the master answers here: every declared query resource (OP_QUERY's, and the
#: job filter rules, which LUXI's Query answers but OP_QUERY does not take).
QUERYABLE = frozenset(catalog.RESOURCES)
QUERY_ACCESS = frozenset({READ, WRITE})


def resource(request: Request) -> str:
    """The ``{resource}`` of the URL if the master can query it, else 404."""
    what = request.params["resource"]
    supported = ", ".join(sorted(QUERYABLE))
    if what not in QUERYABLE:
        if what in GANETI_RESOURCES:
            raise http.HttpNotFound(f"Querying '{what}' is not supported yet (queryable: "
                                    f"{supported})")
        raise http.HttpNotFound(f"Unknown query resource '{what}' (queryable: {supported})")
    return what


def _fields_arg(request: Request) -> list[str]:
    text = request.arg("fields")
    if text is None:
        raise http.HttpBadRequest("Missing 'fields' query argument")
    return split_fields(text)


async def query_get(request: Request) -> dict[str, Any]:
    """Query(resource, ?fields=, no filter)."""
    what = resource(request)
    return dict(await request.luxi.call("Query", what, _fields_arg(request), None))


async def query_put(request: Request) -> dict[str, Any]:
    """Query(resource, body fields (or ?fields=), body qfilter (or the legacy filter))."""
    what = resource(request)
    body = require_dict(request.body)
    refuse_unknown_keys(body, ("fields", "qfilter", "filter"))
    fields = body["fields"] if "fields" in body else _fields_arg(request)
    if not is_str_list(fields):
        raise http.HttpBadRequest("The 'fields' parameter should be a list of strings")
    qfilter = body.get("qfilter")
    if qfilter is None:
        qfilter = body.get("filter")
    return dict(await request.luxi.call("Query", what, fields, qfilter))


async def query_fields(request: Request) -> dict[str, Any]:
    """QueryFields(resource, ?fields= or every field)."""
    what = resource(request)
    text = request.arg("fields")
    fields = None if text is None else split_fields(text)
    return dict(await request.luxi.call("QueryFields", what, fields))


FIELDDEF = {"type": "object", "properties": {
    "name": {"type": "string"}, "title": {"type": "string"},
    "kind": {"type": "string", "enum": sorted(c.QFT_ALL)},
    "doc": {"type": "string"}}}
QUERY_RESULT = {
    "type": "object", "properties": {
        "fields": {"type": "array", "items": FIELDDEF},
        "data": {"type": "array", "description": "Per item, per field: [status, value]",
                 "items": {"type": "array", "items": {"type": "array", "minItems": 2,
                                                      "maxItems": 2, "items": {}}}}}}
FIELDS_RESULT = {"type": "object",
                 "properties": {"fields": {"type": "array", "items": FIELDDEF}}}
QUERY_BODY = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "fields": {"type": "array", "items": {"type": "string"},
                   "description": "Fields to return (default: ?fields=)"},
        "qfilter": {"type": "array", "items": {}, "nullable": True,
                    "description": "Query filter in Ganeti's prefix list form"},
        "filter": {"type": "array", "items": {}, "nullable": True,
                   "description": "Older name of qfilter"},
    },
}

ROUTES = [
    Route("/2/query/{resource}", {
        "GET": Method(query_get, "Query a resource's ?fields= (no filter)",
                      access=QUERY_ACCESS, query=("fields", REASON), schema=QUERY_RESULT,
                      heavy=True),
        "PUT": Method(SchemaHandler(query_put, QUERY_BODY),
                      "Query a resource with fields and a filter in the body",
                      access=QUERY_ACCESS, query=("fields", REASON), body="json",
                      schema=QUERY_RESULT, heavy=True),
    }, "Generic queries (resources: " + ", ".join(sorted(QUERYABLE)) + ")"),
    Route("/2/query/{resource}/fields", {
        "GET": Method(query_fields, "Field definitions of a resource (?fields= or all)",
                      query=("fields", REASON), schema=FIELDS_RESULT),
    }, "Query fields"),
]
