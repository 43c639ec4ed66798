"""The RAPI v2 route table: every resource, declared once.

``ROUTES`` is what the HTTP server dispatches from and what the OpenAPI
document (``/2/openapi.json``, docs/rapi-openapi.json) is generated from.
The resources follow Ganeti's RAPI v2 (paths, query parameters, bodies and
answers), limited to what the master daemon implements today.

``python -m ganeti.rapi.routes > docs/rapi-openapi.json`` writes the
document kept in the repository; a test checks that it is current.
"""

from __future__ import annotations

import sys

from ganeti.rapi import openapi
from ganeti.rapi.resources import (
    cluster,
    exports,
    filters,
    groups,
    instances,
    jobs,
    networks,
    nodes,
    placement,
    query,
    storage,
)
from ganeti.rapi.resources import os as osres
from ganeti.rapi.routing import Route

ROUTES: list[Route] = [
    *cluster.ROUTES,
    cluster.features_route(lambda: ROUTES),
    openapi.document_route(lambda: ROUTES),
    *nodes.ROUTES,
    *storage.ROUTES,
    *groups.ROUTES,
    *networks.ROUTES,
    *instances.ROUTES,
    *placement.ROUTES,
    *exports.ROUTES,
    *osres.ROUTES,
    *jobs.ROUTES,
    *filters.ROUTES,
    *query.ROUTES,
]


def main() -> int:
    """Print the OpenAPI document of :data:`ROUTES`."""
    sys.stdout.write(openapi.render(openapi.build_document(ROUTES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["ROUTES", "main"]
