"""Queries over instance exports: ``Query("export")`` and the old-style LUXI
``QueryExports(nodes, use_locking)``.

The rows come from ``export_list`` on the nodes (offline nodes fail at once):
one per export and node, in node then export order; a node whose call failed
gives a row without an export name (Ganeti's no-data status).
``QueryExports`` answers Ganeti's ``{node name: [export, ...] or false}`` for
the named nodes (all when none are named).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.errors import ECODE_NOENT, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.query import Field
from ganeti.core.queryfields.exports import EXPORT_FIELDS as EXPORT_DECLS
from ganeti.master.config.nodes import target
from ganeti.master.query.queryregistry import QuerySource
from ganeti.rpc.noderpc import NodeRpc

#: ``nodes -> {node uuid: export names, or None where the call failed}``.
ListExports = Callable[[list[Node]], Awaitable[Mapping[str, list[str] | None]]]
#: A row: node name and export name (None: the node failed).
ExportRow = tuple[str, "str | None"]

EXPORT_GETTERS: dict[str, Callable[[ExportRow], Any]] = {
    "node": lambda r: r[0],
    "export": lambda r: query.NODATA if r[1] is None else r[1],
}

EXPORT_FIELDS: dict[str, Field[ExportRow]] = query.bind(EXPORT_DECLS, EXPORT_GETTERS)


def rpc_list_exports(rpc: Callable[[], NodeRpc]) -> ListExports:
    """A :data:`ListExports` calling ``export_list`` through the node RPC client."""
    async def list_exports(nodes: list[Node]) -> dict[str, list[str] | None]:
        if not nodes:
            return {}
        results = await rpc().call([target(n) for n in nodes], "export_list", [])
        out: dict[str, list[str] | None] = {}
        for n in nodes:
            payload = results[n.name].payload if results[n.name].success else None
            out[n.uuid] = [str(x) for x in payload] if isinstance(payload, list) else None
        return out
    return list_exports


class ExportQueries:
    """Answers export queries from the nodes' ``export_list``."""

    def __init__(self, config: Callable[[], ConfigData], list_exports: ListExports) -> None:
        self._config = config
        self._list = list_exports

    def source(self) -> QuerySource:
        """The query resource "export" with ``QueryExports``."""
        return QuerySource(c.QR_EXPORT, EXPORT_FIELDS, self.query_exports,
                           ("QueryExports", self.old_style))

    async def query_exports(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("export", fields, filter)``."""
        q = query.Query(EXPORT_FIELDS, fields, qfilter)
        nodes = sorted(self._config().nodes.values(), key=lambda n: query.nice_sort_key(n.name))
        lists = await self._list(nodes)
        rows: list[ExportRow] = []
        for node in nodes:
            names = lists.get(node.uuid)
            if names is None:
                rows.append((node.name, None))
            else:
                rows.extend((node.name, e) for e in sorted(names))
        return q.response(rows)

    async def old_style(self, nodes: Any, use_locking: Any = False) -> dict[str, Any]:
        """``QueryExports(nodes, use_locking)``: per node its exports, false on failure."""
        cfg = self._config()
        if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
            raise OpPrereqError("QueryExports takes a list of node names", "wrong_input")
        by_name = {n.name: n for n in cfg.nodes.values()}
        wanted: list[Node] = []
        for name in nodes:
            node = by_name.get(name) or cfg.nodes.get(name)
            if node is None:
                raise OpPrereqError(f"Node '{name}' not known", ECODE_NOENT)
            wanted.append(node)
        if not wanted:
            wanted = sorted(cfg.nodes.values(), key=lambda n: query.nice_sort_key(n.name))
        lists = await self._list(wanted)
        return {n.name: (lists.get(n.uuid) if lists.get(n.uuid) is not None else False)
                for n in wanted}


__all__ = ["EXPORT_FIELDS", "EXPORT_GETTERS", "ExportQueries", "rpc_list_exports"]
