"""The job filter rule resources: ``/2/filters`` and ``/2/filters/{filter_uuid}``.

Filter rules are changed at once by the master (LUXI ``ReplaceFilter`` and
``DeleteFilter``), not through the job queue: a rule that drains the queue
must not wait in it.  So these writes answer the rule's uuid (or null), not a
job id.  The body is checked here as Ganeti's RAPI checks it (only the keys
``priority``, ``predicates``, ``action`` and ``reason``, with their JSON
types); what the values mean (a known action, well-formed predicates, a
valid reason trail, a parseable uuid) is the master's to check, and its
``OpPrereqError`` comes back as a 400 (404 for an unknown rule).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ganeti.core import jobfilters
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    BULK,
    SchemaHandler,
    json_type,
    map_fields,
    not_found_if_unknown,
    refuse_unknown_keys,
    require_dict,
    uri_list,
)
from ganeti.rapi.routing import Method, Request, Route, default_access

#: The fields of a rule in ``/2/filters?bulk=1`` and ``/2/filters/{filter_uuid}``.
FILTER_RULE_FIELDS = jobfilters.RULE_FIELDS

#: The only keys a POST or PUT body may have (Ganeti's).
BODY_KEYS = ("priority", "predicates", "action", "reason")

UUID = "filter_uuid"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def rule_arguments(body: Any) -> tuple[Any, Any, Any, Any]:
    """``(priority, predicates, action, reason)`` of a POST/PUT body; 400 if the body
    is not an object, has other keys, or a value of the wrong JSON type."""
    body = require_dict(body)
    refuse_unknown_keys(body, BODY_KEYS)
    priority = body.get("priority", 0)
    if not _is_int(priority):
        raise http.HttpBadRequest(f"'priority' parameter: expected an integer, got "
                                  f"{json_type(priority)}")
    predicates = body.get("predicates", [])
    if not isinstance(predicates, list):
        raise http.HttpBadRequest(f"'predicates' parameter: expected a list, got "
                                  f"{json_type(predicates)}")
    action = body.get("action", jobfilters.CONTINUE)
    if not isinstance(action, (str, list)):
        raise http.HttpBadRequest(f"'action' parameter: expected a string or a list, got "
                                  f"{json_type(action)}")
    reason = body.get("reason", [])
    if not isinstance(reason, list):
        raise http.HttpBadRequest(f"'reason' parameter: expected a list, got "
                                  f"{json_type(reason)}")
    return priority, predicates, action, reason


async def get_filters(request: Request) -> list[dict[str, Any]]:
    """``[{uuid, uri}]``, or with ``?bulk=1`` every rule's fields; both sorted by uuid
    (as the master lists them)."""
    if request.flag(BULK):
        rows = await request.luxi.call("QueryFilters", None, list(FILTER_RULE_FIELDS))
        return [map_fields(FILTER_RULE_FIELDS, row) for row in rows]
    rows = await request.luxi.call("QueryFilters", None, ["uuid"])
    return uri_list((row[0] for row in rows), "/2/filters/{}", "uuid")


async def add_filter(request: Request) -> str:
    """Add a rule (``ReplaceFilter`` with no uuid); its new uuid."""
    priority, predicates, action, reason = rule_arguments(request.body)
    return str(await request.luxi.call("ReplaceFilter", None, priority, predicates,
                                       action, reason))


def _unknown_rule(uuid: str) -> http.HttpNotFound:
    return http.HttpNotFound(f"Filter rule with UUID {uuid} does not exist")


async def get_filter(request: Request) -> dict[str, Any]:
    """One rule's fields; 404 if there is no such rule (the master leaves unknown
    uuids out of its answer, as Ganeti's luxid; Ganeti's RAPI then fails with 500)."""
    uuid = request.params[UUID]
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryFilters", [uuid], list(FILTER_RULE_FIELDS)), empty_ok=True)
    if not rows:
        raise _unknown_rule(uuid)
    return map_fields(FILTER_RULE_FIELDS, rows[0])


async def replace_filter(request: Request) -> str:
    """Replace the rule with the URL's uuid, or add it under that uuid; the uuid."""
    priority, predicates, action, reason = rule_arguments(request.body)
    return str(await request.luxi.call("ReplaceFilter", request.params[UUID], priority,
                                       predicates, action, reason))


async def delete_filter(request: Request) -> None:
    """Remove a rule; null (404 if there is no such rule).  Ganeti's client sends
    ``{}`` as the body: an empty object (or no body) is accepted, anything else is
    a 400.

    The master answers an unknown uuid with a GenericError, as Ganeti's luxid
    (whose RAPI then answers 500); the rule is looked up first to answer 404.
    """
    if request.body is not None:
        refuse_unknown_keys(require_dict(request.body), ())
    uuid = request.params[UUID]
    if not await not_found_if_unknown(request.luxi.call("QueryFilters", [uuid], ["uuid"]),
                                      empty_ok=True):
        raise _unknown_rule(uuid)
    await not_found_if_unknown(request.luxi.call("DeleteFilter", request.params[UUID]),
                               empty_ok=True)


# --- schemas (the OpenAPI document) ----------------------------------------------------

_RATE_LIMIT = {"type": "array", "minItems": 2, "maxItems": 2,
               "items": {"oneOf": [{"type": "string", "enum": [jobfilters.RATE_LIMIT]},
                                   {"type": "integer", "minimum": 1}]},
               "description": '["RATE_LIMIT", n]: at most n matching jobs run at a time'}
ACTION = {"oneOf": [{"type": "string", "enum": list(jobfilters.SIMPLE_ACTIONS)},
                    _RATE_LIMIT]}
REASON_TRAIL = {"type": "array", "description": "[source, reason, timestamp in ns] entries",
                "items": {"type": "array", "minItems": 3, "maxItems": 3, "items": {
                    "oneOf": [{"type": "string"}, {"type": "integer"}]}}}
PREDICATES = {"type": "array", "description": "[name, filter] pairs: name jobid, opcode or "
              "reason, filter in the query language's list form; all must match",
              "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {}}}
RULE = {"type": "object", "properties": {
    "uuid": {"type": "string"},
    "watermark": {"type": "integer", "description": "The highest job id when the rule "
                  "was added"},
    "priority": {"type": "integer", "minimum": 0, "description": "Lower is evaluated "
                 "first"},
    "predicates": PREDICATES, "action": ACTION, "reason_trail": REASON_TRAIL}}
RULE_BODY = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "priority": {"type": "integer", "minimum": 0, "default": 0},
        "predicates": {**PREDICATES, "default": []},
        "action": {**ACTION, "default": jobfilters.CONTINUE},
        "reason": {**REASON_TRAIL, "default": [],
                   "description": "The rule's reason trail (the master appends its "
                                  "own entry)"},
    },
}
DELETE_BODY = {"type": "object", "additionalProperties": False, "maxProperties": 0,
               "description": "Empty (Ganeti's client sends {})"}
UUID_LIST = {"type": "array", "items": {"type": "object", "properties": {
    "uuid": {"type": "string"}, "uri": {"type": "string"}}}}
UUID_RESULT = {"type": "string", "description": "The rule's uuid"}


def _body_method(http_method: str, fn: Callable[[Request], Awaitable[Any]],
                 body: dict[str, Any], summary: str, schema: dict[str, Any],
                 required: bool = True) -> Method:
    handler = SchemaHandler(fn, body)
    handler.body_required = required
    return Method(handler, summary, access=default_access(http_method), body="json",
                  schema=schema)


ROUTES = [
    Route("/2/filters", {
        "GET": Method(get_filters, "Every job filter rule: [{uuid, uri}], or with ?bulk=1 "
                      "their fields", query=(BULK,), heavy=True,
                      schema={"oneOf": [UUID_LIST, {"type": "array", "items": RULE}]}),
        "POST": _body_method("POST", add_filter, RULE_BODY,
                             "Add a job filter rule (at once, not a job); its uuid",
                             UUID_RESULT),
    }, "The job filter rules"),
    Route(f"/2/filters/{{{UUID}}}", {
        "GET": Method(get_filter, "A job filter rule's fields", schema=RULE),
        "PUT": _body_method("PUT", replace_filter, RULE_BODY,
                            "Replace the job filter rule, or add it with this uuid; the "
                            "uuid", UUID_RESULT),
        "DELETE": _body_method("DELETE", delete_filter, DELETE_BODY,
                               "Remove the job filter rule (null)",
                               {"nullable": True, "description": "null"}, required=False),
    }, "One job filter rule"),
]
