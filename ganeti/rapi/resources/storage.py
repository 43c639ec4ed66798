"""The storage-unit resources of a node (Ganeti's RAPI v2):
``/2/nodes/{node_name}/storage`` (GET: OP_NODE_QUERY_STORAGE), ``.../storage/modify``
and ``.../storage/repair`` (PUT: OP_NODE_MODIFY_STORAGE, OP_REPAIR_NODE_STORAGE).

All three submit a job and answer its id, as Ganeti's; the GET needs write
access because the query takes node locks (Ganeti's ``GET_ACCESS``).  Their
parameters come from the query string; a body may only carry ``depends``.
"""

from __future__ import annotations

from typing import Any

from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    JOB_RESULT,
    REASON,
    OpcodeBody,
    build_opcode,
    refuse_body_params,
    submit,
)
from ganeti.rapi.routing import WRITE, Method, Request, Route

_QUERY = OpcodeBody("OP_NODE_QUERY_STORAGE", "nodes_name_storage", body_params=False)
_MODIFY = OpcodeBody("OP_NODE_MODIFY_STORAGE", "nodes_name_storage_modify",
                     body_params=False)
_REPAIR = OpcodeBody("OP_REPAIR_NODE_STORAGE", "nodes_name_storage_repair",
                     body_params=False)


def _required(request: Request, name: str) -> str:
    value = request.arg(name)
    if not value:
        raise http.HttpBadRequest(f"Missing the required '{name}' parameter")
    return value


async def get_storage(request: Request) -> int:
    """List a node's storage units of a type (a job; its result is the rows)."""
    refuse_body_params(request)
    fields = _required(request, "output_fields")
    op = build_opcode(request, _QUERY, {}, {
        "nodes": [request.params["node_name"]], "storage_type": request.arg("storage_type"),
        "output_fields": fields.split(",")})
    return await submit(request, [op])


async def put_modify(request: Request) -> int:
    """Change a storage unit (``allocatable=0|1``)."""
    refuse_body_params(request)
    name = _required(request, "name")
    changes: dict[str, Any] = {}
    if "allocatable" in request.query:
        changes["allocatable"] = request.flag("allocatable", True)
    op = build_opcode(request, _MODIFY, {}, {
        "node_name": request.params["node_name"], "storage_type": request.arg("storage_type"),
        "name": name, "changes": changes})
    return await submit(request, [op])


async def put_repair(request: Request) -> int:
    """Repair a storage unit (a volume group)."""
    refuse_body_params(request)
    name = _required(request, "name")
    op = build_opcode(request, _REPAIR, {}, {
        "node_name": request.params["node_name"], "storage_type": request.arg("storage_type"),
        "name": name})
    return await submit(request, [op])


_WRITE = frozenset({WRITE})

ROUTES = [
    Route("/2/nodes/{node_name}/storage", {"GET": Method(
        get_storage, "List the node's storage units (a job running OP_NODE_QUERY_STORAGE; "
                     "?output_fields= is required)",
        access=_WRITE, query=("storage_type", "output_fields", REASON),
        opcode="OP_NODE_QUERY_STORAGE", result="job", schema=JOB_RESULT)},
          "A node's storage units"),
    Route("/2/nodes/{node_name}/storage/modify", {"PUT": Method(
        put_modify, "Change a storage unit (OP_NODE_MODIFY_STORAGE; ?name= is required)",
        access=_WRITE, query=("storage_type", "name", "allocatable", REASON), body="json",
        opcode="OP_NODE_MODIFY_STORAGE", result="job", schema=JOB_RESULT)},
          "Changing a storage unit"),
    Route("/2/nodes/{node_name}/storage/repair", {"PUT": Method(
        put_repair, "Repair a storage unit (OP_REPAIR_NODE_STORAGE; ?name= is required)",
        access=_WRITE, query=("storage_type", "name", REASON), body="json",
        opcode="OP_REPAIR_NODE_STORAGE", result="job", schema=JOB_RESULT)},
          "Repairing a storage unit"),
]
