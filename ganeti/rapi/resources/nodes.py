"""The node resources: ``/2/nodes`` and
``/2/nodes/{node_name}[/role|/modify|/migrate|/tags]``."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.nodes import NODE_FIELDS as NODE_DECLS
from ganeti.rapi import errors as http
from ganeti.rapi.resources.common import (
    BULK,
    DRY_RUN,
    FORCE,
    JOB_RESULT,
    LOCK,
    REASON,
    OpcodeBody,
    OpcodeHandler,
    SchemaHandler,
    build_opcode,
    flag,
    json_type,
    map_fields,
    not_found_if_unknown,
    opcode_method,
    path,
    submit,
    tag_methods,
    uri_list,
)
from ganeti.rapi.routing import WRITE, Method, Request, Route

COMMON_FIELDS = ("ctime", "mtime", "uuid", "serial_no", "tags")
#: Fields of a node in ``/2/nodes?bulk=1`` and ``/2/nodes/{node_name}``.
N_FIELDS = ("name", "offline", "master_candidate", "drained", "dtotal", "dfree", "sptotal",
            "spfree", "mtotal", "mnode", "mfree", "pinst_cnt", "sinst_cnt", "ctotal", "cnos",
            "cnodes", "csockets", "pip", "sip", "role", "pinst_list", "sinst_list",
            "master_capable", "vm_capable", "ndparams", "group.uuid", *COMMON_FIELDS)

#: Query role letters -> the words of ``/role``.
ROLE_WORDS = {c.NR_MASTER: "master", c.NR_MCANDIDATE: "master-candidate",
              c.NR_DRAINED: "drained", c.NR_OFFLINE: "offline", c.NR_REGULAR: "regular"}
#: Role words ``PUT /role`` accepts -> (master_candidate, offline, drained).
ROLE_FLAGS: dict[str, tuple[bool | None, bool | None, bool | None]] = {
    "regular": (False, False, False),
    "master-candidate": (True, None, None),
    "drained": (None, None, True),
    "offline": (None, True, None),
}


def _name(request: Request) -> str:
    return request.params["node_name"]


async def get_nodes(request: Request) -> list[dict[str, Any]]:
    """``[{id, uri}]`` sorted by name, or with ``?bulk=1`` every node's N_FIELDS."""
    if request.flag(BULK):
        rows = await request.luxi.call("QueryNodes", [], list(N_FIELDS), False)
        return [map_fields(N_FIELDS, row) for row in rows]
    rows = await request.luxi.call("QueryNodes", [], ["name"], False)
    return uri_list((row[0] for row in rows), "/2/nodes/{}", "id")


async def get_node(request: Request) -> dict[str, Any]:
    """One node's N_FIELDS (plus ``secondary_ip``, an alias of ``sip``); 404 if unknown."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryNodes", [_name(request)], list(N_FIELDS), request.flag(LOCK)))
    node = map_fields(N_FIELDS, rows[0])
    node["secondary_ip"] = node["sip"]
    return node


async def get_role(request: Request) -> str:
    """The node's role as a word (``master``, ``master-candidate``, ...)."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryNodes", [_name(request)], ["role"], request.flag(LOCK)))
    letter = rows[0][0]
    if letter not in ROLE_WORDS:
        raise http.HttpBadGateway(f"The master answered an unknown node role {letter!r}")
    return ROLE_WORDS[letter]


ROLE_SPEC = OpcodeBody("OP_NODE_SET_PARAMS", "nodes_name_role",
                       {"node_name": path("node_name"), "force": flag(FORCE),
                        "auto_promote": flag("auto-promote")}, body_params=False)


async def put_role(request: Request) -> int:
    """Set the role (the body is a bare JSON string) with OP_NODE_SET_PARAMS."""
    role = request.body
    if not isinstance(role, str):
        raise http.HttpBadRequest(f"Body contents: expected a string (the role), got "
                                  f"{json_type(role)}")
    if role not in ROLE_FLAGS:
        raise http.HttpBadRequest(f"Can't set '{role}' role (possible: "
                                  + ", ".join(sorted(ROLE_FLAGS)) + ")")
    candidate, offline, drained = ROLE_FLAGS[role]
    op = build_opcode(request, ROLE_SPEC, {}, {
        "master_candidate": candidate, "offline": offline, "drained": drained})
    return await submit(request, [op])


class MigrateHandler(OpcodeHandler):
    """POST .../migrate: OP_NODE_MIGRATE from the body (``node-migrate-reqv1``), or,
    as Ganeti's older clients send it, from the query parameters ``live`` (an
    integer, default 1) or ``mode`` -- then the body is not read.

    Unlike Ganeti's rlib2, ``?dry-run=1`` is honoured and does not switch to the
    older form (Ganeti's ignores it, and its client sends it with a body: a dry
    run that migrates every instance)."""

    async def __call__(self, request: Request) -> int:
        extra = {"dry_run": True} if request.flag(DRY_RUN) else {}
        if request.query.keys() & {"live", "mode"}:
            if "live" in request.query and "mode" in request.query:
                raise http.HttpBadRequest("Only one of 'live' and 'mode' should be passed")
            mode: str | None = request.arg("mode")
            if "live" in request.query:
                live = request.flag("live", default=True)
                mode = c.HT_MIGRATION_LIVE if live else c.HT_MIGRATION_NONLIVE
            body: Any = {"mode": mode}
        else:
            body = request.body
        return await submit(request, [build_opcode(request, self.opcode_body, body,
                                                   extra)])


# Value schemas come from the field declarations (ganeti.core.queryfields.nodes).
NODE = object_schema(NODE_DECLS, N_FIELDS,
                     description="Live values (dtotal, mfree, ...) are null for offline or "
                                 "unreachable nodes")
NODE_ONE = object_schema(NODE_DECLS, N_FIELDS)
NODE_ONE["properties"]["secondary_ip"] = NODE_DECLS["sip"].value_schema()
ID_LIST = {"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "string"}, "uri": {"type": "string"}}}}
ROLE = {"type": "string", "enum": sorted(ROLE_WORDS.values())}

ROUTES = [
    Route("/2/nodes", {"GET": Method(
        get_nodes, "Every node: [{id, uri}], or with ?bulk=1 their fields",
        query=(BULK, REASON), heavy=True,
        schema={"oneOf": [ID_LIST, {"type": "array", "items": NODE}]})},
          "The nodes"),
    Route("/2/nodes/{node_name}", {"GET": Method(
        get_node, "A node's fields", query=(LOCK, REASON), schema=NODE_ONE)}, "One node"),
    Route("/2/nodes/{node_name}/role", {
        "GET": Method(get_role, "The node's role", query=(LOCK, REASON), schema=ROLE),
        "PUT": Method(SchemaHandler(put_role, {
            "type": "string", "enum": sorted(ROLE_FLAGS),
            "description": "The new role (a bare JSON string; 'master' cannot be set)"}),
            "Set the node's role (OP_NODE_SET_PARAMS)", access=frozenset({WRITE}),
            query=(FORCE, "auto-promote", REASON), body="json",
            opcode="OP_NODE_SET_PARAMS", result="job", schema=JOB_RESULT),
    }, "A node's role"),
    Route("/2/nodes/{node_name}/modify", {"POST": opcode_method(
        "POST", OpcodeBody("OP_NODE_SET_PARAMS", "nodes_name_modify",
                           {"node_name": path("node_name")}),
        "Change a node's parameters (OP_NODE_SET_PARAMS)")}, "Node parameters"),
    Route("/2/nodes/{node_name}/migrate", {"POST": Method(
        MigrateHandler(OpcodeBody("OP_NODE_MIGRATE", "nodes_name_migrate",
                                  {"node_name": path("node_name")})),
        "Migrate every primary instance of the node away (OP_NODE_MIGRATE; the job's "
        "result lists the migration jobs it submitted). The body gives mode, "
        "target_node, iallocator, ...; older clients send ?live=0|1 or ?mode= instead",
        access=frozenset({WRITE}), query=("live", "mode", DRY_RUN, REASON), body="opcode",
        opcode="OP_NODE_MIGRATE", result="job", schema=JOB_RESULT)},
          "Node migration"),
    Route("/2/nodes/{node_name}/evacuate", {"POST": opcode_method(
        "POST", OpcodeBody("OP_NODE_EVACUATE", "nodes_name_evacuate",
                           {"node_name": path("node_name"), "dry_run": flag(DRY_RUN)}),
        "Move the node's instances away (OP_NODE_EVACUATE; node-evac-res1: the body gives "
        "mode, iallocator or remote_node, early_release; the job's result lists the jobs "
        "it submitted)", (DRY_RUN,))}, "Node evacuation"),
    Route("/2/nodes/{node_name}/tags",
          tag_methods(c.TAG_NODE, "node_name", "nodes_name_tags", "the node"), "Node tags"),
]
