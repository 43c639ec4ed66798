"""Cluster logical units."""

from __future__ import annotations

from typing import Any

from ganeti.master.lu.base import LogicalUnit
from ganeti.master.queries import cluster_info


class LUClusterQuery(LogicalUnit):
    """OP_CLUSTER_QUERY: the cluster's parameters (the QueryClusterInfo dict)."""

    OP_ID = "OP_CLUSTER_QUERY"
    REQ_BGL = False

    async def exec(self) -> Any:
        return cluster_info(self.ctx.config.config)
