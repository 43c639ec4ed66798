"""Cluster-wide resources: ``/``, ``/2``, ``/version``, ``/2/info``,
``/2/features``, ``/2/modify``, ``/2/redistribute-config`` and ``/2/tags``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ganeti.core import constants as c
from ganeti.rapi.resources.common import (
    RAPI_VERSION,
    REASON,
    OpcodeBody,
    opcode_method,
    tag_methods,
)
from ganeti.rapi.routing import Method, Request, Route

#: Ganeti's optional RAPI features (``rlib2.ALL_FEATURES``), each with the resource and
#: method it is about: a feature is advertised only where that resource exists, so a
#: client never picks a request format for a resource that answers 404.
FEATURE_RESOURCES: dict[str, tuple[str, str]] = {
    "instance-create-reqv1": ("/2/instances", "POST"),
    "instance-reinstall-reqv1": ("/2/instances/{instance_name}/reinstall", "POST"),
    "node-migrate-reqv1": ("/2/nodes/{node_name}/migrate", "POST"),
    "node-evac-res1": ("/2/nodes/{node_name}/evacuate", "POST"),
}

#: ``/2/info`` repeats these keys under Ganeti's older names.
INFO_ALIASES = {"volume_group_name": "vg_name", "drbd_usermode_helper": "drbd_helper"}


async def get_root(request: Request) -> None:
    """``/`` and ``/2`` answer null (kept for old clients)."""
    return None


async def get_version(request: Request) -> int:
    """The RAPI version."""
    return RAPI_VERSION


async def get_info(request: Request) -> dict[str, Any]:
    """QueryClusterInfo, plus the aliases older clients read."""
    info = dict(await request.luxi.call("QueryClusterInfo"))
    for key, alias in INFO_ALIASES.items():
        if key in info:
            info[alias] = info[key]
    return info


def features(routes: Sequence[Route]) -> list[str]:
    """The features of :data:`FEATURE_RESOURCES` whose resource is in ``routes``."""
    served = {(route.pattern, method) for route in routes for method in route.methods}
    return [name for name, resource in FEATURE_RESOURCES.items() if resource in served]


def features_route(routes: Callable[[], Sequence[Route]]) -> Route:
    """``/2/features``: the optional features of ``routes()`` (the whole table)."""

    async def get_features(request: Request) -> list[str]:
        """The optional features the served resources understand."""
        return features(routes())

    return Route("/2/features", {"GET": Method(
        get_features, "Optional features (request formats) the server understands",
        schema={"type": "array",
                "items": {"type": "string", "enum": list(FEATURE_RESOURCES)}})},
        "Optional features")


INFO_SCHEMA = {
    "type": "object",
    "description": "Cluster parameters and versions (QueryClusterInfo), plus the aliases "
                   "vg_name and drbd_helper",
    "properties": {
        "name": {"type": "string"}, "master": {"type": "string"},
        "software_version": {"type": "string"}, "protocol_version": {"type": "integer"},
        "config_version": {"type": "integer"}, "os_api_version": {"type": "integer"},
        "export_version": {"type": "integer"}, "architecture": {"type": "array"},
        "default_hypervisor": {"type": "string", "nullable": True},
        "enabled_hypervisors": {"type": "array", "items": {"type": "string"}},
        "ipolicy": {"type": "object"}, "ndparams": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "uuid": {"type": "string"}, "ctime": {"type": "number"}, "mtime": {"type": "number"},
        "vg_name": {"type": "string", "nullable": True},
        "drbd_helper": {"type": "string", "nullable": True},
    },
    "additionalProperties": True,
}

ROUTES = [
    Route("/", {"GET": Method(get_root, "Answers null (for old clients)",
                              schema={"nullable": True, "enum": [None]})},
          "The root resource"),
    Route("/2", {"GET": Method(get_root, "Answers null (for old clients)",
                               schema={"nullable": True, "enum": [None]})},
          "The RAPI v2 root"),
    Route("/version", {"GET": Method(get_version, "The remote API version (2)",
                                     schema={"type": "integer", "enum": [RAPI_VERSION]})},
          "The remote API version"),
    Route("/2/info", {"GET": Method(get_info, "Cluster information", query=(REASON,),
                                    schema=INFO_SCHEMA)},
          "Cluster information"),
    Route("/2/modify", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_CLUSTER_SET_PARAMS", "cluster_modify",
                          forbidden=frozenset({"compression_tools"})),
        "Change cluster parameters (OP_CLUSTER_SET_PARAMS)")},
          "Cluster parameters"),
    Route("/2/redistribute-config", {"PUT": opcode_method(
        "PUT", OpcodeBody("OP_CLUSTER_REDIST_CONF", "redist_config"),
        "Push the configuration to the nodes (OP_CLUSTER_REDIST_CONF)")},
          "Configuration redistribution"),
    Route("/2/tags", tag_methods(c.TAG_CLUSTER, None, "tags", "the cluster"),
          "Cluster tags"),
]
