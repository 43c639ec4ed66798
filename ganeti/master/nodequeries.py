"""Queries over nodes and node groups: ``Query("node"|"group")``, QueryNodes, QueryGroups.

Field names, titles, kinds and meanings are Ganeti's (``gnt-node list-fields``).
Config fields come from the committed config; live fields (memory, disk, CPU)
come from a ``node_info`` call made only when a selected or filtered field
needs it.  A live field is ``offline`` for an offline node and ``no data``
for a node that did not answer; otherwise it always has a value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.errors import ECODE_NOENT, OpPrereqError
from ganeti.core.objects import ConfigData, Node, NodeGroup
from ganeti.core.qlang import hostname_matches
from ganeti.core.query import NODATA, OFFLINE, UNAVAIL, Field
from ganeti.master.nodes import find_group, find_node, instance_nodes

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


def _instances(item: NodeItem, secondary: bool) -> list[str]:
    uuid = item.node.uuid
    names = []
    for inst in item.cfg.instances.values():
        if secondary:
            if uuid in instance_nodes(item.cfg, inst) - {inst.primary_node}:
                names.append(inst.name)
        elif inst.primary_node == uuid:
            names.append(inst.name)
    return sorted(names, key=query.nice_sort_key)


def merged_ndparams(cfg: ConfigData, node: Node) -> dict[str, Any]:
    """Node parameters: defaults, then the cluster's, the group's and the node's own."""
    merged = dict(c.NDC_DEFAULTS)
    merged.update(cfg.cluster.ndparams)
    group = cfg.nodegroups.get(node.group)
    if group is not None:
        merged.update(group.ndparams)
    merged.update(node.ndparams)
    return merged


def _spindles_used(item: NodeItem) -> int:
    used = 0
    for disk in item.cfg.disks.values():
        if item.node.uuid in disk.nodes:
            used += int(disk.spindles or 0)
    return used


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


def _sptotal(item: NodeItem, live: dict[str, Any]) -> Any:
    return int(merged_ndparams(item.cfg, item.node).get(c.ND_SPINDLE_COUNT, 1))


def _spfree(item: NodeItem, live: dict[str, Any]) -> Any:
    return max(0, _sptotal(item, live) - _spindles_used(item))


def _group_name(item: NodeItem) -> Any:
    group = item.cfg.nodegroups.get(item.node.group)
    return NODATA if group is None else group.name


#: Titles and kinds of the ``ndp/*`` fields as Ganeti declares them (a parameter not
#: listed gets its name as title and a kind from its type; strings are "other").
_NDP_META: dict[str, tuple[str, str]] = {
    c.ND_OOB_PROGRAM: ("OutOfBandProgram", c.QFT_OTHER),
    c.ND_SPINDLE_COUNT: ("SpindleCount", c.QFT_NUMBER),
    c.ND_EXCLUSIVE_STORAGE: ("ExclusiveStorage", c.QFT_BOOL),
    c.ND_OVS: ("OpenvSwitch", c.QFT_BOOL),
    c.ND_OVS_NAME: ("OpenvSwitchName", c.QFT_OTHER),
    c.ND_OVS_LINK: ("OpenvSwitchLink", c.QFT_OTHER),
}


def _ndparam_field(name: str) -> Field[NodeItem]:
    kind = {bool: c.QFT_BOOL, int: c.QFT_NUMBER, float: c.QFT_NUMBER_FLOAT}.get(
        type(c.NDC_DEFAULTS[name]), c.QFT_OTHER)
    title, kind = _NDP_META.get(name, (f"ndp/{name}", kind))
    return Field(f"ndp/{name}", title, kind, f"The \"{name}\" node parameter",
                 lambda item: merged_ndparams(item.cfg, item.node).get(name))


def _common_fields(label: str, get: Callable[[Any], Any]) -> list[Field[Any]]:
    return [
        Field("ctime", "CTime", c.QFT_TIMESTAMP, "Creation timestamp",
              lambda item: get(item).ctime),
        Field("mtime", "MTime", c.QFT_TIMESTAMP, "Modification timestamp",
              lambda item: get(item).mtime),
        Field("uuid", "UUID", c.QFT_TEXT, f"{label} UUID", lambda item: get(item).uuid),
        Field("serial_no", "SerialNo", c.QFT_NUMBER,
              f"{label} object serial number, incremented on each modification",
              lambda item: get(item).serial_no),
        Field("tags", "Tags", c.QFT_OTHER, "Tags", lambda item: sorted(get(item).tags)),
    ]


_ROLE_DOC = ("Node role; \"M\" for master, \"C\" for master candidate, \"R\" for regular, "
             "\"D\" for drained, \"O\" for offline")

NODE_FIELDS: dict[str, Field[NodeItem]] = query.field_table([
    Field("drained", "Drained", c.QFT_BOOL, "Whether node is drained",
          lambda i: i.node.drained),
    Field("master_candidate", "MasterC", c.QFT_BOOL, "Whether node is a master candidate",
          lambda i: i.node.master_candidate),
    Field("master_capable", "MasterCapable", c.QFT_BOOL,
          "Whether node can become a master candidate", lambda i: i.node.master_capable),
    Field("name", "Node", c.QFT_TEXT, "Node name", lambda i: i.node.name, hostname=True),
    Field("offline", "Offline", c.QFT_BOOL, "Whether node is marked offline",
          lambda i: i.node.offline),
    Field("vm_capable", "VMCapable", c.QFT_BOOL, "Whether node can host instances",
          lambda i: i.node.vm_capable),
    Field("pip", "PrimaryIP", c.QFT_TEXT, "Primary IP address", lambda i: i.node.primary_ip),
    Field("sip", "SecondaryIP", c.QFT_TEXT, "Secondary IP address",
          lambda i: i.node.secondary_ip or i.node.primary_ip),
    Field("master", "IsMaster", c.QFT_BOOL, "Whether node is master",
          lambda i: i.node.uuid == i.cfg.cluster.master_node),
    Field("group", "Group", c.QFT_TEXT, "Node group", _group_name),
    Field("group.uuid", "GroupUUID", c.QFT_TEXT, "UUID of node group",
          lambda i: i.node.group),
    Field("ndparams", "NodeParameters", c.QFT_OTHER, "Merged node parameters",
          lambda i: merged_ndparams(i.cfg, i.node)),
    Field("custom_ndparams", "CustomNodeParameters", c.QFT_OTHER, "Custom node parameters",
          lambda i: dict(i.node.ndparams)),
    Field("pinst_cnt", "Pinst", c.QFT_NUMBER, "Number of instances with this node as primary",
          lambda i: len(_instances(i, False))),
    Field("sinst_cnt", "Sinst", c.QFT_NUMBER,
          "Number of instances with this node as secondary", lambda i: len(_instances(i, True))),
    Field("pinst_list", "PriInstances", c.QFT_OTHER,
          "List of instances with this node as primary", lambda i: _instances(i, False)),
    Field("sinst_list", "SecInstances", c.QFT_OTHER,
          "List of instances with this node as secondary", lambda i: _instances(i, True)),
    Field("role", "Role", c.QFT_TEXT, _ROLE_DOC, _role),
    Field("powered", "Powered", c.QFT_BOOL, "Whether node is thought to be powered on",
          lambda i: UNAVAIL if not merged_ndparams(i.cfg, i.node).get(c.ND_OOB_PROGRAM)
          else i.node.powered),
    Field("hv_state", "HypervisorState", c.QFT_OTHER, "Hypervisor state",
          lambda i: UNAVAIL),
    Field("disk_state", "DiskState", c.QFT_OTHER, "Disk state", lambda i: UNAVAIL),
    Field("bootid", "BootID", c.QFT_TEXT, "Random UUID renewed for each system reboot, can be "
          "used for detecting reboots by tracking changes", _live(_key("bootid"))),
    Field("cnodes", "CNodes", c.QFT_NUMBER,
          "Number of NUMA domains on node (if exported by hypervisor)",
          _live(_key("cpu_nodes"))),
    Field("cnos", "CNOs", c.QFT_NUMBER,
          "Number of logical processors used by the node OS (dom0 for Xen)",
          _live(lambda i, live: live.get("cpu_dom0", live.get("cpu_total")))),
    Field("csockets", "CSockets", c.QFT_NUMBER,
          "Number of physical CPU sockets (if exported by hypervisor)",
          _live(_key("cpu_sockets"))),
    Field("ctotal", "CTotal", c.QFT_NUMBER, "Number of logical processors",
          _live(_key("cpu_total"))),
    Field("dfree", "DFree", c.QFT_UNIT, "Available storage space on storage unit",
          _live(_key("disk_free"))),
    Field("dtotal", "DTotal", c.QFT_UNIT,
          "Total storage space on storage unit for instance disk allocation",
          _live(_key("disk_total"))),
    Field("spfree", "SpFree", c.QFT_NUMBER,
          "Available spindles in volume group (exclusive storage only)", _live(_spfree)),
    Field("sptotal", "SpTotal", c.QFT_NUMBER,
          "Total spindles in volume group (exclusive storage only)", _live(_sptotal)),
    Field("mfree", "MFree", c.QFT_UNIT, "Memory available for instance allocations",
          _live(_key("memory_free"))),
    Field("mnode", "MNode", c.QFT_UNIT, "Amount of memory used by node (dom0 for Xen)",
          _live(_mnode)),
    Field("mtotal", "MTotal", c.QFT_UNIT, "Total amount of memory of physical machine",
          _live(_key("memory_total"))),
    *(_ndparam_field(name) for name in sorted(c.NDC_DEFAULTS)),
    *_common_fields("Node", lambda i: i.node),
])

#: Fields whose values need the node_info call.
NODE_LIVE_FIELDS = frozenset({"bootid", "cnodes", "cnos", "csockets", "ctotal", "dfree",
                              "dtotal", "spfree", "sptotal", "mfree", "mnode", "mtotal"})

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
    members = {n.uuid for n in item.cfg.nodes.values() if n.group == item.group.uuid}
    return sorted((i.name for i in item.cfg.instances.values() if i.primary_node in members),
                  key=query.nice_sort_key)


def _group_ndparams(item: GroupItem) -> dict[str, Any]:
    merged = dict(c.NDC_DEFAULTS)
    merged.update(item.cfg.cluster.ndparams)
    merged.update(item.group.ndparams)
    return merged


def _group_ipolicy(item: GroupItem) -> dict[str, Any]:
    merged = dict(item.cfg.cluster.ipolicy)
    merged.update(item.group.ipolicy)
    return merged


def _group_diskparams(item: GroupItem) -> dict[str, Any]:
    merged = {dt: dict(values) for dt, values in item.cfg.cluster.diskparams.items()}
    for dt, values in item.group.diskparams.items():
        merged.setdefault(dt, {}).update(values)
    return merged


def _group_ndparam_field(name: str) -> Field[GroupItem]:
    base = _ndparam_field(name)
    return Field(base.name, base.title, base.kind, base.doc,
                 lambda item: _group_ndparams(item).get(name))


GROUP_FIELDS: dict[str, Field[GroupItem]] = query.field_table([
    Field("alloc_policy", "AllocPolicy", c.QFT_TEXT, "Allocation policy for group",
          lambda i: i.group.alloc_policy),
    Field("custom_diskparams", "CustomDiskParameters", c.QFT_OTHER, "Custom disk parameters",
          lambda i: dict(i.group.diskparams)),
    Field("custom_ipolicy", "CustomInstancePolicy", c.QFT_OTHER,
          "Custom instance policy limitations", lambda i: dict(i.group.ipolicy)),
    Field("custom_ndparams", "CustomNDParams", c.QFT_OTHER, "Custom node parameters",
          lambda i: dict(i.group.ndparams)),
    Field("diskparams", "DiskParameters", c.QFT_OTHER, "Disk parameters (merged)",
          _group_diskparams),
    Field("ipolicy", "InstancePolicy", c.QFT_OTHER, "Instance policy limitations (merged)",
          _group_ipolicy),
    Field("name", "Group", c.QFT_TEXT, "Group name", lambda i: i.group.name),
    Field("ndparams", "NDParams", c.QFT_OTHER, "Node parameters", _group_ndparams),
    Field("node_cnt", "Nodes", c.QFT_NUMBER, "Number of nodes",
          lambda i: len(_group_nodes(i))),
    Field("node_list", "NodeList", c.QFT_OTHER, "List of nodes", _group_nodes),
    Field("pinst_cnt", "Instances", c.QFT_NUMBER, "Number of primary instances",
          lambda i: len(_group_instances(i))),
    Field("pinst_list", "InstanceList", c.QFT_OTHER, "List of primary instances",
          _group_instances),
    *(_group_ndparam_field(name) for name in sorted(c.NDC_DEFAULTS)),
    *_common_fields("Group", lambda i: i.group),
])

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

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation (Query/QueryFields go through :meth:`query`)."""
        return {"QueryNodes": self.query_nodes, "QueryGroups": self.query_groups}

    async def _node_items(self, cfg: ConfigData, nodes: list[Node],
                          q: query.Query[NodeItem]) -> list[NodeItem]:
        live: dict[str, Any] = {}
        if needs_live(q):
            live = await self._live([n for n in nodes if not n.offline])
        return [NodeItem(cfg, n, live.get(n.uuid)) for n in nodes]

    async def query(self, what: str, fields: list[str], qfilter: Any) -> dict[str, Any]:
        """``Query("node"|"group", fields, filter)``."""
        cfg = self._config()
        if what == c.QR_NODE:
            nq = query.Query(NODE_FIELDS, fields, qfilter)
            nodes = sorted_nodes(cfg)
            wanted = requested_names(qfilter)
            if wanted is not None:
                nodes = resolve_requested(nodes, wanted, lambda n: n.name, "Node", True)
            return nq.response(await self._node_items(cfg, nodes, nq))
        gq = query.Query(GROUP_FIELDS, fields, qfilter)
        groups = sorted_groups(cfg)
        wanted = requested_names(qfilter)
        if wanted is not None:
            groups = resolve_requested(groups, wanted, lambda g: g.name, "NodeGroup", False)
        return gq.response(GroupItem(cfg, g) for g in groups)

    @staticmethod
    def fields_table(what: str) -> dict[str, Field[Any]]:
        """The field table of "node" or "group"."""
        return dict(NODE_FIELDS) if what == c.QR_NODE else dict(GROUP_FIELDS)

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
