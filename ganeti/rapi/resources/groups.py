"""The node group resources: ``/2/groups`` and
``/2/groups/{group_name}[/modify|/rename|/assign-nodes|/tags]``."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.nodes import GROUP_FIELDS as GROUP_DECLS
from ganeti.rapi.resources.common import (
    BULK,
    DRY_RUN,
    FORCE,
    LOCK,
    REASON,
    OpcodeBody,
    flag,
    map_fields,
    not_found_if_unknown,
    opcode_method,
    path,
    tag_methods,
    uri_list,
)
from ganeti.rapi.resources.nodes import COMMON_FIELDS
from ganeti.rapi.routing import Method, Request, Route

#: Fields of a group in ``/2/groups?bulk=1`` and ``/2/groups/{group_name}``.
G_FIELDS = ("alloc_policy", "name", "node_cnt", "node_list", "ipolicy", "custom_ipolicy",
            "diskparams", "custom_diskparams", "ndparams", "custom_ndparams", *COMMON_FIELDS)

GROUP_NAME = {"group_name": path("group_name")}


async def get_groups(request: Request) -> list[dict[str, Any]]:
    """``[{name, uri}]`` sorted by name, or with ``?bulk=1`` every group's G_FIELDS."""
    if request.flag(BULK):
        rows = await request.luxi.call("QueryGroups", [], list(G_FIELDS), False)
        return [map_fields(G_FIELDS, row) for row in rows]
    rows = await request.luxi.call("QueryGroups", [], ["name"], False)
    return uri_list((row[0] for row in rows), "/2/groups/{}", "name")


async def get_group(request: Request) -> dict[str, Any]:
    """One group's G_FIELDS; 404 if unknown."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryGroups", [request.params["group_name"]], list(G_FIELDS), request.flag(LOCK)))
    return map_fields(G_FIELDS, rows[0])


#: Value schemas from the field declarations (ganeti.core.queryfields.nodes).
GROUP = object_schema(GROUP_DECLS, G_FIELDS)
NAME_LIST = {"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "uri": {"type": "string"}}}}

ROUTES = [
    Route("/2/groups", {
        "GET": Method(get_groups, "Every node group: [{name, uri}], or with ?bulk=1 their "
                      "fields", query=(BULK, REASON), heavy=True,
                      schema={"oneOf": [NAME_LIST, {"type": "array", "items": GROUP}]}),
        "POST": opcode_method("POST", OpcodeBody(
            "OP_GROUP_ADD", "groups", {"dry_run": flag(DRY_RUN)},
            rename={"name": "group_name"}),
            "Add a node group (OP_GROUP_ADD; 'name' is accepted for 'group_name')",
            (DRY_RUN,)),
    }, "The node groups"),
    Route("/2/groups/{group_name}", {
        "GET": Method(get_group, "A node group's fields", query=(LOCK, REASON),
                      schema=GROUP),
        "DELETE": opcode_method("DELETE", OpcodeBody(
            "OP_GROUP_REMOVE", "groups_name", {**GROUP_NAME, "dry_run": flag(DRY_RUN)},
            body_params=False), "Remove an empty node group (OP_GROUP_REMOVE)", (DRY_RUN,)),
    }, "One node group"),
    Route("/2/groups/{group_name}/modify", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_GROUP_SET_PARAMS", "groups_name_modify", GROUP_NAME,
                          rename={"custom_ndparams": "ndparams",
                                  "custom_ipolicy": "ipolicy",
                                  "custom_diskparams": "diskparams"}),
        "Change a node group's parameters (OP_GROUP_SET_PARAMS)")}, "Node group parameters"),
    Route("/2/groups/{group_name}/rename", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_GROUP_RENAME", "groups_name_rename",
                          {**GROUP_NAME, "dry_run": flag(DRY_RUN)}),
        "Rename a node group (OP_GROUP_RENAME; body: new_name)", (DRY_RUN,))},
          "Renaming a node group"),
    Route("/2/groups/{group_name}/assign-nodes", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_GROUP_ASSIGN_NODES", "groups_name_assign_nodes",
                          {**GROUP_NAME, "dry_run": flag(DRY_RUN), "force": flag(FORCE)}),
        "Move nodes into the group (OP_GROUP_ASSIGN_NODES; body: nodes)",
        (DRY_RUN, FORCE))}, "Assigning nodes to a group"),
    Route("/2/groups/{group_name}/tags",
          tag_methods(c.TAG_NODEGROUP, "group_name", "groups_name_tags", "the node group"),
          "Node group tags"),
]
