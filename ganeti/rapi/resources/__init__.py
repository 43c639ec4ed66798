"""The RAPI v2 route table: every resource, declared once.

``ROUTES`` is what the HTTP server dispatches from and what the OpenAPI
document (``/2/openapi.json``, docs/rapi-openapi.json) is generated from.
The resources follow Ganeti's RAPI v2 (paths, query parameters, bodies and
answers), limited to what the master daemon implements today.
"""

from __future__ import annotations

from typing import Any

from ganeti.rapi.resources import cluster, filters, groups, jobs, nodes, query
from ganeti.rapi.routing import Method, Request, Route

_DOCUMENT: dict[str, Any] = {}


async def get_openapi(request: Request) -> dict[str, Any]:
    """The OpenAPI 3.0 document of this API (built once)."""
    if not _DOCUMENT:
        from ganeti.rapi import openapi  # imports this package: load it lazily

        _DOCUMENT.update(openapi.build_document(ROUTES))
    return _DOCUMENT


ROUTES: list[Route] = [
    *cluster.ROUTES,
    Route("/2/openapi.json", {"GET": Method(
        get_openapi, "This API as an OpenAPI 3.0 document",
        schema={"type": "object", "description": "An OpenAPI 3.0.3 document"})},
          "The OpenAPI document"),
    *nodes.ROUTES,
    *groups.ROUTES,
    *jobs.ROUTES,
    *filters.ROUTES,
    *query.ROUTES,
]

__all__ = ["ROUTES"]
