"""The network resources: ``/2/networks`` and
``/2/networks/{network_name}[/modify|/connect|/disconnect|/tags]``."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import object_schema
from ganeti.core.queryfields.networks import NETWORK_FIELDS as NETWORK_DECLS
from ganeti.rapi.resources.common import (
    BULK,
    DRY_RUN,
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
from ganeti.rapi.resources.groups import NAME_LIST
from ganeti.rapi.resources.nodes import COMMON_FIELDS
from ganeti.rapi.routing import Method, Request, Route

#: Fields of a network in ``/2/networks?bulk=1`` and ``/2/networks/{network_name}``.
NET_FIELDS = ("name", "network", "gateway", "network6", "gateway6", "mac_prefix",
              "free_count", "reserved_count", "map", "group_list", "inst_list",
              "external_reservations", *COMMON_FIELDS)

NETWORK_NAME = {"network_name": path("network_name")}


async def get_networks(request: Request) -> list[dict[str, Any]]:
    """``[{name, uri}]`` sorted by name, or with ``?bulk=1`` every network's NET_FIELDS."""
    if request.flag(BULK):
        rows = await request.luxi.call("QueryNetworks", [], list(NET_FIELDS), False)
        return [map_fields(NET_FIELDS, row) for row in rows]
    rows = await request.luxi.call("QueryNetworks", [], ["name"], False)
    return uri_list((row[0] for row in rows), "/2/networks/{}", "name")


async def get_network(request: Request) -> dict[str, Any]:
    """One network's NET_FIELDS; 404 if unknown."""
    rows = await not_found_if_unknown(request.luxi.call(
        "QueryNetworks", [request.params["network_name"]], list(NET_FIELDS),
        request.flag(LOCK)))
    return map_fields(NET_FIELDS, rows[0])


#: Value schemas from the field declarations (ganeti.core.queryfields.networks).
NETWORK = object_schema(NETWORK_DECLS, NET_FIELDS)

ROUTES = [
    Route("/2/networks", {
        "GET": Method(get_networks, "Every network: [{name, uri}], or with ?bulk=1 their "
                      "fields", query=(BULK, REASON), heavy=True,
                      schema={"oneOf": [NAME_LIST, {"type": "array", "items": NETWORK}]}),
        "POST": opcode_method("POST", OpcodeBody(
            "OP_NETWORK_ADD", "networks", {"dry_run": flag(DRY_RUN)},
            rename={"name": "network_name"}),
            "Add a network (OP_NETWORK_ADD; 'name' is accepted for 'network_name')",
            (DRY_RUN,)),
    }, "The IP networks"),
    Route("/2/networks/{network_name}", {
        "GET": Method(get_network, "A network's fields", query=(LOCK, REASON),
                      schema=NETWORK),
        "DELETE": opcode_method("DELETE", OpcodeBody(
            "OP_NETWORK_REMOVE", "networks_name",
            {**NETWORK_NAME, "dry_run": flag(DRY_RUN)}),
            "Remove a network no group is connected to (OP_NETWORK_REMOVE; body: force)",
            (DRY_RUN,)),
    }, "One network"),
    Route("/2/networks/{network_name}/modify", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_NETWORK_SET_PARAMS", "networks_name_modify", NETWORK_NAME),
        "Change a network's parameters (OP_NETWORK_SET_PARAMS)")}, "Network parameters"),
    Route("/2/networks/{network_name}/connect", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_NETWORK_CONNECT", "networks_name_connect",
                          {**NETWORK_NAME, "dry_run": flag(DRY_RUN)}),
        "Connect the network to a node group (OP_NETWORK_CONNECT; body: group_name, "
        "network_mode, network_link, network_vlan)", (DRY_RUN,))},
          "Connecting a network to a group"),
    Route("/2/networks/{network_name}/disconnect", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_NETWORK_DISCONNECT", "networks_name_disconnect",
                          {**NETWORK_NAME, "dry_run": flag(DRY_RUN)}),
        "Disconnect the network from a node group (OP_NETWORK_DISCONNECT; body: "
        "group_name)", (DRY_RUN,))}, "Disconnecting a network from a group"),
    Route("/2/networks/{network_name}/tags",
          tag_methods(c.TAG_NETWORK, "network_name", "networks_name_tags", "the network"),
          "Network tags"),
]
