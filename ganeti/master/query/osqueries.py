"""Queries over operating systems: ``Query("os")``, ``OP_QUERY``/``OP_OS_DIAGNOSE``.

The rows come from ``os_diagnose`` on the online vm-capable nodes, merged as
Ganeti's ``OsQuery`` merges them: a node whose call failed does not count; an
OS is valid if its first definition on every answering node is valid; its
variants, parameters and API versions are those all nodes agree on (up to the
first invalid one); it is trusted unless a node's definition is untrusted.
``node_status`` is keyed by node UUID, as Ganeti 3.0's.  ``hidden``,
``blacklisted``, ``os_hvp`` and ``osparams`` come from the cluster (the
per-OS parameters of each ``name+variant``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.objects import ConfigData, Node
from ganeti.core.query import Field
from ganeti.core.queryfields.os import OS_FIELDS as OS_DECLS
from ganeti.master.config.nodes import target
from ganeti.master.query.queryregistry import QuerySource
from ganeti.rpc.noderpc import NodeRpc

#: ``nodes -> {node uuid: os_diagnose payload, or None where the call failed}``.
Diagnose = Callable[[list[Node]], Awaitable[Mapping[str, Any]]]


@dataclass
class OsInfo:
    """One OS as the query shows it (Ganeti's ``query.OsInfo``)."""

    name: str
    valid: bool = True
    hidden: bool = False
    blacklisted: bool = False
    variants: list[str] = field(default_factory=list)
    api_versions: list[int] = field(default_factory=list)
    parameters: list[list[str]] = field(default_factory=list)
    node_status: dict[str, list[list[Any]]] = field(default_factory=dict)
    os_hvp: dict[str, Any] = field(default_factory=dict)
    osparams: dict[str, Any] = field(default_factory=dict)
    trusted: bool = True


OS_GETTERS: dict[str, Callable[[OsInfo], Any]] = {
    "api_versions": lambda i: sorted(i.api_versions),
    "blacklisted": lambda i: i.blacklisted,
    "hidden": lambda i: i.hidden,
    "name": lambda i: i.name,
    "node_status": lambda i: i.node_status,
    "os_hvp": lambda i: i.os_hvp,
    "osparams": lambda i: i.osparams,
    "parameters": lambda i: sorted((list(p) for p in i.parameters),
                                   key=lambda p: query.nice_sort_key(p[0])),
    "trusted": lambda i: i.trusted,
    "valid": lambda i: i.valid,
    "variants": lambda i: sorted(i.variants, key=query.nice_sort_key),
}

OS_FIELDS: dict[str, Field[OsInfo]] = query.bind(OS_DECLS, OS_GETTERS)


def diagnose_nodes(cfg: ConfigData) -> list[Node]:
    """The nodes asked: online and vm-capable, in name order."""
    return sorted((n for n in cfg.nodes.values() if not n.offline and n.vm_capable),
                  key=lambda n: query.nice_sort_key(n.name))


def _entry(row: Any) -> tuple[str, list[Any]] | None:
    """``(name, [path, status, diagnose, variants, parameters, api_versions, trusted])``
    of one os_diagnose row; None for a row of the wrong shape (a node's answer is input)."""
    if not (isinstance(row, list) and len(row) == 8 and isinstance(row[0], str)
            and isinstance(row[2], bool) and all(isinstance(x, list) for x in row[4:7])):
        return None
    params = [list(p) for p in row[5] if isinstance(p, list) and len(p) == 2]
    return row[0], [row[1], row[2], row[3], list(row[4]), params, list(row[6]),
                    bool(row[7])]


def by_os(results: Mapping[str, Any]) -> dict[str, dict[str, list[list[Any]]]]:
    """Per OS, per answering node, its definitions in search-path order (Ganeti's
    ``_DiagnoseByOS``); nodes that failed are left out, answering nodes without the
    OS get an empty list."""
    good = [uuid for uuid, payload in results.items() if isinstance(payload, list)]
    all_os: dict[str, dict[str, list[list[Any]]]] = {}
    for uuid in good:
        for row in results[uuid]:
            entry = _entry(row)
            if entry is None:
                continue
            name, status = entry
            per_node = all_os.setdefault(name, {u: [] for u in good})
            per_node[uuid].append(status)
    return all_os


def os_infos(cfg: ConfigData, results: Mapping[str, Any]) -> dict[str, OsInfo]:
    """Every OS some node reported, merged over the nodes (Ganeti's
    ``OsQuery._GetQueryData``)."""
    cluster = cfg.cluster
    data: dict[str, OsInfo] = {}
    for name, per_node in by_os(results).items():
        info = OsInfo(name, hidden=name in cluster.hidden_os,
                      blacklisted=name in cluster.blacklisted_os, node_status=per_node)
        variants: set[str] = set()
        params: set[tuple[str, ...]] = set()
        apis: set[int] = set()
        for idx, entries in enumerate(per_node.values()):
            info.valid = bool(info.valid and entries and entries[0][1])
            if not info.valid:
                break
            node_variants, node_params, node_api, node_trusted = entries[0][3:7]
            if idx == 0:
                variants.update(node_variants)
                params.update(tuple(p) for p in node_params)
                apis.update(node_api)
            else:
                variants.intersection_update(node_variants)
                params.intersection_update(tuple(p) for p in node_params)
                apis.intersection_update(node_api)
            if not node_trusted:
                info.trusted = False
        info.variants = list(variants)
        info.parameters = [list(p) for p in params]
        info.api_versions = list(apis)
        for variant in variants:
            full = f"{name}+{variant}"
            if full in cluster.os_hvp:
                info.os_hvp[full] = cluster.os_hvp[full]
            if full in cluster.osparams:
                info.osparams[full] = cluster.osparams[full]
        data[name] = info
    return data


def name_filter(names: Iterable[str]) -> list[Any] | None:
    """``name == n1 or ...`` (Ganeti's ``MakeSimpleFilter``), None for no names."""
    names = list(names)
    if not names:
        return None
    return [c.QLANG_OP_OR, *([c.QLANG_OP_EQUAL, "name", n] for n in names)]


def diagnose_filter(fields: Iterable[str], names: Iterable[str]) -> list[Any] | None:
    """OP_OS_DIAGNOSE's filter (Ganeti's ``LUOsDiagnose._BuildFilter``): the named OSes,
    and hidden, blacklisted and invalid ones only where that field is asked for."""
    fields = list(fields)
    by_name = name_filter(names)
    status: list[Any] = [[c.QLANG_OP_NOT, [c.QLANG_OP_TRUE, f]]
                         for f in ("hidden", "blacklisted") if f not in fields]
    if "valid" not in fields:
        status.append([c.QLANG_OP_TRUE, "valid"])
    status_filter = [c.QLANG_OP_AND, *status] if status else None
    if by_name and status_filter:
        return [c.QLANG_OP_AND, by_name, status_filter]
    return by_name or status_filter


def ordered(infos: Mapping[str, OsInfo], names: list[str] | None) -> list[OsInfo]:
    """All OSes in name order, or the named ones in the order asked (unknown names
    give no row), as Ganeti orders them."""
    if names is None:
        return [infos[n] for n in sorted(infos, key=query.nice_sort_key)]
    return [infos[n] for n in names if n in infos]


class OsQueries:
    """Answers OS queries: the nodes' ``os_diagnose`` answers plus the config."""

    def __init__(self, config: Callable[[], ConfigData], diagnose: Diagnose) -> None:
        self._config = config
        self._diagnose = diagnose

    def source(self) -> QuerySource:
        """The query resource "os" (:mod:`ganeti.master.query.queryregistry`)."""
        return QuerySource(c.QR_OS, OS_FIELDS, self.query_os)

    async def infos(self) -> tuple[ConfigData, dict[str, OsInfo]]:
        """The config of the moment and every OS the nodes report."""
        cfg = self._config()
        results = await self._diagnose(diagnose_nodes(cfg))
        return cfg, os_infos(cfg, results)

    async def query_os(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("os", fields, filter)``."""
        q = query.Query(OS_FIELDS, fields, qfilter)
        _, infos = await self.infos()
        return q.response(ordered(infos, requested_names(qfilter)))

    async def diagnose(self, output_fields: list[str], names: list[str]) -> list[list[Any]]:
        """OP_OS_DIAGNOSE's answer: old-style rows of ``output_fields``."""
        q = query.Query(OS_FIELDS, output_fields, diagnose_filter(output_fields, names))
        q.old_style([])  # unknown fields are refused before any node is asked
        _, infos = await self.infos()
        only_names = names and set(output_fields) >= {"hidden", "blacklisted", "valid"}
        return q.old_style(ordered(infos, list(names) if only_names else None))


def rpc_diagnose(rpc: Callable[[], NodeRpc]) -> Diagnose:
    """A :data:`Diagnose` calling ``os_diagnose`` through the node RPC client."""
    async def diagnose(nodes: list[Node]) -> dict[str, Any]:
        if not nodes:
            return {}
        results = await rpc().call([target(n) for n in nodes], "os_diagnose", [])
        return {n.uuid: results[n.name].payload if results[n.name].success else None
                for n in nodes}
    return diagnose


def requested_names(qfilter: Any) -> list[str] | None:
    """The names of a filter that only names OSes (``|`` of ``name == x``), else None."""
    if (isinstance(qfilter, list) and qfilter and qfilter[0] == c.QLANG_OP_OR
            and all(isinstance(t, list) and len(t) == 3 and t[0] == c.QLANG_OP_EQUAL
                    and t[1] == "name" and isinstance(t[2], str) for t in qfilter[1:])):
        return [t[2] for t in qfilter[1:]]
    return None


__all__ = ["OS_FIELDS", "OS_GETTERS", "OsInfo", "OsQueries", "by_os", "diagnose_filter",
           "diagnose_nodes", "os_infos", "rpc_diagnose"]
