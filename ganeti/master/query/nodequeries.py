"""Queries over nodes and node groups: ``Query("node"|"group")``, QueryNodes, QueryGroups.

The fields are declared in :mod:`ganeti.core.queryfields.nodes`; here each
gets its getter.  Config fields come from the committed config; live fields
(memory, disk, CPU) come from a ``node_info`` call made only when a selected
or filtered field needs it.  A live field is ``offline`` for an offline node
and ``no data`` for a node that did not answer; otherwise it always has a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.errors import ECODE_NOENT, OpPrereqError
from ganeti.core.objects import ConfigData, Node, NodeGroup
from ganeti.core.params_fill import fill_ipolicy, fill_nd
from ganeti.core.params_merge import ordered_ipolicy
from ganeti.core.qlang import hostname_matches
from ganeti.core.query import NODATA, OFFLINE, UNAVAIL, Field
from ganeti.core.queryfields import nodes as decls
from ganeti.master.config.nodes import find_group, find_node, instance_nodes
from ganeti.master.query.queryregistry import QuerySource

T = TypeVar("T")

# --- nodes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeItem:
    """A node as queries see it: the config it is in and its live data, if any."""

    cfg: ConfigData
    node: Node
    live: dict[str, Any] | None = None  # node_info payload; None: not asked or no answer


def _role(item: NodeItem) -> str:
    return item.cfg.node_role(item.node)


@dataclass(frozen=True)
class _NodeUse:
    """Per node: its primary and secondary instances (nicely sorted names) and the
    spindles its disks use -- computed once per committed version of the instances
    and disks (a node list at 20,000 instances then costs one pass, not one per node)."""

    primary: dict[str, list[str]]
    secondary: dict[str, list[str]]
    spindles: dict[str, int]


def _node_use(cfg: ConfigData) -> _NodeUse:
    insts, disks = cfg.instances, cfg.disks
    cached = cfg.__dict__.get("_cache_node_use")
    if cached is not None and cached[0] is insts and cached[1] == len(insts) \
            and cached[2] is disks and cached[3] == len(disks):
        use: _NodeUse = cached[4]
        return use
    primary: dict[str, list[str]] = {}
    secondary: dict[str, list[str]] = {}
    for inst in insts.values():
        primary.setdefault(inst.primary_node, []).append(inst.name)
        for node in instance_nodes(cfg, inst) - {inst.primary_node}:
            secondary.setdefault(node, []).append(inst.name)
    for table in (primary, secondary):
        for names in table.values():
            names.sort(key=query.nice_sort_key)
    spindles: dict[str, int] = {}
    for disk in disks.values():
        for node in disk.nodes:
            spindles[node] = spindles.get(node, 0) + int(disk.spindles or 0)
    use = _NodeUse(primary, secondary, spindles)
    cfg.__dict__["_cache_node_use"] = (insts, len(insts), disks, len(disks), use)
    return use


def _instances(item: NodeItem, secondary: bool) -> list[str]:
    use = _node_use(item.cfg)
    return list((use.secondary if secondary else use.primary).get(item.node.uuid, []))


def merged_ndparams(cfg: ConfigData, node: Node) -> dict[str, Any]:
    """Node parameters: defaults, then the cluster's, the group's and the node's own."""
    return fill_nd(cfg.cluster, cfg.nodegroups.get(node.group), node)


def _spindles_used(item: NodeItem) -> int:
    return _node_use(item.cfg).spindles.get(item.node.uuid, 0)


def _live(fn: Callable[[NodeItem, dict[str, Any]], Any]) -> Callable[[NodeItem], Any]:
    def getter(item: NodeItem) -> Any:
        if item.node.offline:
            return OFFLINE
        if item.live is None:
            return NODATA
        value = fn(item, item.live)
        return NODATA if value is None else value
    return getter


def _key(name: str) -> Callable[[NodeItem, dict[str, Any]], Any]:
    return lambda item, live: live.get(name)


def _mnode(item: NodeItem, live: dict[str, Any]) -> Any:
    if "memory_dom0" in live:
        return live["memory_dom0"]
    total, free = live.get("memory_total"), live.get("memory_free")
    return None if total is None or free is None else max(0, total - free)


#: Templates on LVM: only with one enabled does Ganeti ask a node for its lvm-pv unit.
_LVM_TEMPLATES = frozenset({c.DT_PLAIN, c.DT_DRBD8})


def _spindle_report(item: NodeItem) -> bool | None:
    """What the node's lvm-pv report holds, as Ganeti's: None (no LVM template enabled,
    no report: the fields have no data), False (LVM without exclusive storage: zero
    spindles), True (exclusive storage: its spindles, from ``spindle_count`` here)."""
    if not _LVM_TEMPLATES & set(item.cfg.cluster.enabled_disk_templates):
        return None
    return bool(merged_ndparams(item.cfg, item.node).get(c.ND_EXCLUSIVE_STORAGE, False))


def _sptotal(item: NodeItem, live: dict[str, Any]) -> Any:
    report = _spindle_report(item)
    if not report:
        return None if report is None else 0
    return int(merged_ndparams(item.cfg, item.node).get(c.ND_SPINDLE_COUNT, 1))


def _spfree(item: NodeItem, live: dict[str, Any]) -> Any:
    total = _sptotal(item, live)
    if not total:
        return total
    return max(0, total - _spindles_used(item))


def _group_name(item: NodeItem) -> Any:
    group = item.cfg.nodegroups.get(item.node.group)
    return NODATA if group is None else group.name


def _common_getters(get: Callable[[Any], Any]) -> dict[str, Callable[[Any], Any]]:
    return {
        "ctime": lambda item: get(item).ctime,
        "mtime": lambda item: get(item).mtime,
        "uuid": lambda item: get(item).uuid,
        "serial_no": lambda item: get(item).serial_no,
        "tags": lambda item: sorted(get(item).tags),
    }


def _ndparam_getters(merged: Callable[[Any], dict[str, Any]],
                     ) -> dict[str, Callable[[Any], Any]]:
    def getter(name: str) -> Callable[[Any], Any]:
        return lambda item: merged(item).get(name)
    return {f"ndp/{name}": getter(name) for name in c.NDC_DEFAULTS}


def _merged(item: NodeItem) -> dict[str, Any]:
    return merged_ndparams(item.cfg, item.node)


NODE_GETTERS: dict[str, Callable[[NodeItem], Any]] = {
    "drained": lambda i: i.node.drained,
    "master_candidate": lambda i: i.node.master_candidate,
    "master_capable": lambda i: i.node.master_capable,
    "name": lambda i: i.node.name,
    "offline": lambda i: i.node.offline,
    "vm_capable": lambda i: i.node.vm_capable,
    "pip": lambda i: i.node.primary_ip,
    "sip": lambda i: i.node.secondary_ip or i.node.primary_ip,
    "master": lambda i: i.node.uuid == i.cfg.cluster.master_node,
    "group": _group_name,
    "group.uuid": lambda i: i.node.group,
    "ndparams": _merged,
    "custom_ndparams": lambda i: dict(i.node.ndparams),
    "pinst_cnt": lambda i: len(_instances(i, False)),
    "sinst_cnt": lambda i: len(_instances(i, True)),
    "pinst_list": lambda i: _instances(i, False),
    "sinst_list": lambda i: _instances(i, True),
    "role": _role,
    "powered": lambda i: UNAVAIL if not _merged(i).get(c.ND_OOB_PROGRAM) else i.node.powered,
    "hv_state": lambda i: UNAVAIL,
    "disk_state": lambda i: UNAVAIL,
    "bootid": _live(_key("bootid")),
    "cnodes": _live(_key("cpu_nodes")),
    "cnos": _live(lambda i, live: live.get("cpu_dom0", live.get("cpu_total"))),
    "csockets": _live(_key("cpu_sockets")),
    "ctotal": _live(_key("cpu_total")),
    "dfree": _live(_key("disk_free")),
    "dtotal": _live(_key("disk_total")),
    "spfree": _live(_spfree),
    "sptotal": _live(_sptotal),
    "mfree": _live(_key("memory_free")),
    "mnode": _live(_mnode),
    "mtotal": _live(_key("memory_total")),
    "hv_accel": _live(lambda item, live: live.get("hv_accel", UNAVAIL)),
    **_ndparam_getters(_merged),
    **_common_getters(lambda i: i.node),
}

NODE_FIELDS: dict[str, Field[NodeItem]] = query.bind(decls.NODE_FIELDS, NODE_GETTERS)

#: Fields whose values need the node_info call.
NODE_LIVE_FIELDS = decls.NODE_LIVE_FIELDS

# --- groups --------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupItem:
    """A node group and the config it is in."""

    cfg: ConfigData
    group: NodeGroup


def _group_nodes(item: GroupItem) -> list[str]:
    return sorted((n.name for n in item.cfg.nodes.values() if n.group == item.group.uuid),
                  key=query.nice_sort_key)


def _group_instances(item: GroupItem) -> list[str]:
    use = _node_use(item.cfg)
    names = [name for n in item.cfg.nodes.values() if n.group == item.group.uuid
             for name in use.primary.get(n.uuid, [])]
    return sorted(names, key=query.nice_sort_key)


def _group_ndparams(item: GroupItem) -> dict[str, Any]:
    return fill_nd(item.cfg.cluster, item.group)


def _group_ipolicy(item: GroupItem) -> dict[str, Any]:
    # Ganeti's fill (std merged key by key), keys in Ganeti's order
    return ordered_ipolicy(fill_ipolicy(item.cfg.cluster, item.group))


def _group_diskparams(item: GroupItem) -> dict[str, Any]:
    merged = {dt: dict(values) for dt, values in item.cfg.cluster.diskparams.items()}
    for dt, values in item.group.diskparams.items():
        merged.setdefault(dt, {}).update(values)
    return merged


GROUP_GETTERS: dict[str, Callable[[GroupItem], Any]] = {
    "alloc_policy": lambda i: i.group.alloc_policy,
    "custom_diskparams": lambda i: dict(i.group.diskparams),
    "custom_ipolicy": lambda i: ordered_ipolicy(i.group.ipolicy),
    "custom_ndparams": lambda i: dict(i.group.ndparams),
    "diskparams": _group_diskparams,
    "ipolicy": _group_ipolicy,
    "name": lambda i: i.group.name,
    "ndparams": _group_ndparams,
    "node_cnt": lambda i: len(_group_nodes(i)),
    "node_list": _group_nodes,
    "pinst_cnt": lambda i: len(_group_instances(i)),
    "pinst_list": _group_instances,
    **_ndparam_getters(_group_ndparams),
    **_common_getters(lambda i: i.group),
}

GROUP_FIELDS: dict[str, Field[GroupItem]] = query.bind(decls.GROUP_FIELDS, GROUP_GETTERS)

# --- answering -----------------------------------------------------------------------

LiveCollector = Callable[[list[Node]], Any]  # -> Deferred[dict[node uuid, payload | None]]


def sorted_nodes(cfg: ConfigData) -> list[Node]:
    """Nodes in Ganeti's "nice" name order."""
    return sorted(cfg.nodes.values(), key=lambda n: query.nice_sort_key(n.name))


def sorted_groups(cfg: ConfigData) -> list[NodeGroup]:
    """Groups in name order."""
    return sorted(cfg.nodegroups.values(), key=lambda g: query.nice_sort_key(g.name))


def needs_live(q: query.Query[Any]) -> bool:
    """Whether answering ``q`` needs node_info."""
    wanted = {n for n in q.names} | set(q.filter_fields())
    return bool(wanted & NODE_LIVE_FIELDS)


def _known(find: Callable[[ConfigData, str], T], cfg: ConfigData, name: str) -> T | None:
    try:
        return find(cfg, name)
    except OpPrereqError:
        return None


def select_nodes(cfg: ConfigData, names: Iterable[str] | None) -> list[Node]:
    """Nodes named (by name or UUID), in name order; unknown names are skipped.

    All nodes if ``names`` is empty.  As Ganeti's classic QueryNodes, which
    ``gnt-node info`` uses: an unknown name simply gives no row.
    """
    if not names:
        return sorted_nodes(cfg)
    found = {n.uuid: n for n in (_known(find_node, cfg, name) for name in names) if n}
    return [n for n in sorted_nodes(cfg) if n.uuid in found]


def select_groups(cfg: ConfigData, names: Iterable[str] | None) -> list[NodeGroup]:
    """Groups named (by name or UUID), in name order; unknown names are skipped."""
    if not names:
        return sorted_groups(cfg)
    found = {g.uuid: g for g in (_known(find_group, cfg, name) for name in names) if g}
    return [g for g in sorted_groups(cfg) if g.uuid in found]


def requested_names(qfilter: Any) -> list[str] | None:
    """The names a Query filter asks for by ``name`` alone, duplicates kept, else None.

    As Ganeti's luxid: a filter that is ``["=", "name", N]`` or an ``|`` of such
    terms names items that must exist; each named item is answered in that
    order, once per mention.
    """
    if not isinstance(qfilter, list) or not qfilter:
        return None
    equal = (c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY)
    terms = ([qfilter] if qfilter[0] in equal
             else qfilter[1:] if qfilter[0] == c.QLANG_OP_OR else None)
    if not terms:
        return None
    names = []
    for term in terms:
        if not (isinstance(term, list) and len(term) == 3 and term[0] in equal
                and term[1] == "name" and isinstance(term[2], str)):
            return None
        names.append(term[2])
    return names


def resolve_requested(items: list[T], names: list[str], name_of: Callable[[T], str],
                      label: str, hostname: bool) -> list[T]:
    """The items named, in order; OpPrereqError(unknown_entity) for the first unknown name.

    ``hostname``: a unique leading part of a name (``node1`` for
    ``node1.example.com``) names the item too.
    """
    found = []
    for want in names:
        match = [i for i in items if name_of(i) == want]
        if not match and hostname:
            match = [i for i in items if hostname_matches(name_of(i), want)]
        if len(match) != 1:
            raise OpPrereqError(f"{label} name {want} not found", ECODE_NOENT)
        found.append(match[0])
    return found


def unknown_names(kind: str, names: list[str]) -> OpPrereqError:
    """The error for names that are not known."""
    return OpPrereqError(f"{kind}(s) not known: {', '.join(names)}", ECODE_NOENT)


class NodeQueries:
    """Answers node and group queries from the committed config and live node data."""

    def __init__(self, config: Callable[[], ConfigData], live: LiveCollector) -> None:
        self._config = config
        self._live = live

    def sources(self) -> list[QuerySource]:
        """The query resources "node" and "group" (:mod:`ganeti.master.query.queryregistry`)."""
        return [
            QuerySource(c.QR_NODE, NODE_FIELDS, self.query_node, ("QueryNodes",
                                                                  self.query_nodes)),
            QuerySource(c.QR_GROUP, GROUP_FIELDS, self.query_group, ("QueryGroups",
                                                                     self.query_groups)),
        ]

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation: the old-style methods of :meth:`sources`
        (Query/QueryFields go through the registry)."""
        return {name: fn for name, fn in (s.old_style for s in self.sources() if s.old_style)}

    async def _node_items(self, cfg: ConfigData, nodes: list[Node],
                          q: query.Query[NodeItem]) -> list[NodeItem]:
        live: dict[str, Any] = {}
        if needs_live(q):
            live = await self._live([n for n in nodes if not n.offline])
        return [NodeItem(cfg, n, live.get(n.uuid)) for n in nodes]

    async def query_node(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("node", fields, filter)``."""
        cfg = self._config()
        nq = query.Query(NODE_FIELDS, fields, qfilter)
        nodes = sorted_nodes(cfg)
        wanted = requested_names(qfilter)
        if wanted is not None:
            nodes = resolve_requested(nodes, wanted, lambda n: n.name, "Node", True)
        return nq.response(await self._node_items(cfg, nodes, nq))

    def query_group(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("group", fields, filter)``."""
        cfg = self._config()
        gq = query.Query(GROUP_FIELDS, fields, qfilter)
        groups = sorted_groups(cfg)
        wanted = requested_names(qfilter)
        if wanted is not None:
            groups = resolve_requested(groups, wanted, lambda g: g.name, "NodeGroup", False)
        return gq.response(GroupItem(cfg, g) for g in groups)

    async def query_nodes(self, names: Any, fields: list[str], use_locking: Any) -> list[Any]:
        """QueryNodes: old-style rows for the named nodes (all if none named)."""
        cfg = self._config()
        nodes = select_nodes(cfg, _names(names))
        nq = query.Query(NODE_FIELDS, fields)
        return nq.old_style(await self._node_items(cfg, nodes, nq))

    async def query_groups(self, names: Any, fields: list[str], use_locking: Any) -> list[Any]:
        """QueryGroups: old-style rows for the named groups (all if none named)."""
        cfg = self._config()
        groups = select_groups(cfg, _names(names))
        return query.Query(GROUP_FIELDS, fields).old_style(GroupItem(cfg, g) for g in groups)


def _names(names: Any) -> list[str] | None:
    if names is None:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise OpPrereqError("Names must be a list of strings or null", "wrong_input")
    return list(names)
