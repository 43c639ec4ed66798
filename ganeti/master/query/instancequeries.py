"""Queries over instances: ``Query("instance")`` and QueryInstances.

The fields are declared in :mod:`ganeti.core.queryfields.instances`; here
each gets its getter.  Config fields come from the committed config.  Live
fields (``status``, ``oper_state``, ``oper_ram``, ``oper_vcpus``,
``console``) come from one ``all_instances_info`` call to the primary nodes
of the instances answered, made only when a selected or filtered field needs
it, as Ganeti's luxid does:

- an instance found running on its primary node has its runtime data; one
  found on another node (of those asked) is ``ERROR_wrongnode``;
- an instance found nowhere is stopped, unless its primary node did not
  answer: then it is ``ERROR_nodedown`` (``ERROR_nodeoffline`` for a node
  marked offline, which is never asked) and its live values have no data.

When the filter reads config fields only, it is applied before the nodes are
asked, so ``gnt-instance list web1`` asks one node, not all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ganeti.core import config as configmod
from ganeti.core import consoles, query
from ganeti.core import constants as c
from ganeti.core.errors import ECODE_NOENT, OpExecError, OpPrereqError
from ganeti.core.objects import NIC, ConfigData, Disk, Instance, Node
from ganeti.core.params_fill import HVC_GLOBALS, fill_be, fill_hv, fill_nic, fill_os
from ganeti.core.qlang import hostname_matches
from ganeti.core.query import NODATA, OFFLINE, UNAVAIL, Field, Special
from ganeti.core.queryfields import instances as decls
from ganeti.master.config.nodes import secondary_nodes
from ganeti.master.query.instancecells import (
    STATIC_CACHE_LISTS,
    Cells,
    StaticCells,
    plain_cell,
    unknown_cell,
)
from ganeti.master.query.nodequeries import requested_names
from ganeti.master.query.queryregistry import QuerySource

#: Ganeti's hypervisor instance states (``hv_base.HvInstanceState``).
HV_STATE_RUNNING = 0
HV_STATE_SHUTDOWN = 1
#: The DRBD metadata volume every DRBD disk also uses (MiB, Ganeti's DRBD_META_SIZE).
DRBD_META_SIZE = 128
DT_MIXED = "mixed"
#: What the fake hypervisor answers for a console (Ganeti's ``hv_fake``).
FAKE_CONSOLE_MESSAGE = "Console not available for fake hypervisor"

#: A node's answer to all_instances_info: instance name -> runtime data, or the
#: status its instances' live values get when it gave none (OFFLINE, NODATA).
NodeAnswer = dict[str, dict[str, Any]] | Special
#: ``(nodes, {hypervisor: cluster hvparams}) -> {node uuid: payload or None}`` (or a
#: Deferred or coroutine of it): each node's all_instances_info answer, None if none.
InstanceLiveCollector = Callable[[list[Node], dict[str, dict[str, Any]]], Any]


class Runtime:
    """What the nodes said about one instance.

    ``error`` is the status of every live value when the primary node gave
    no answer (None otherwise); ``info`` the runtime data where the instance
    runs (None: it runs nowhere asked); ``on_primary`` whether that is its
    primary node.
    """

    __slots__ = ("error", "info", "on_primary")

    def __init__(self, error: Special | None, info: dict[str, Any] | None,
                 on_primary: bool) -> None:
        self.error = error
        self.info = info
        self.on_primary = on_primary


class Context:
    """What every row of one query shares: the config and the nodes' answers."""

    def __init__(self, cfg: ConfigData, answers: dict[str, NodeAnswer] | None) -> None:
        self.cfg = cfg
        self.answers = answers
        self._where: dict[str, tuple[str, dict[str, Any]]] | None = None
        # The cluster's filled defaults, computed once per query: an instance's
        # parameters are these updated with its own (what params_fill computes).
        self._be: dict[str, Any] | None = None
        self._nic: dict[str, Any] | None = None
        self._hv: dict[tuple[str, str | None], dict[str, Any]] = {}

    def be_defaults(self) -> dict[str, Any]:
        """The backend parameters an instance that sets none has (do not change)."""
        if self._be is None:
            self._be = fill_be(self.cfg.cluster, {})
        return self._be

    def nic_defaults(self) -> dict[str, Any]:
        """The parameters a NIC that sets none has (do not change)."""
        if self._nic is None:
            self._nic = fill_nic(self.cfg.cluster, {})
        return self._nic

    def hv_defaults(self, hypervisor: str, os_name: str | None) -> dict[str, Any]:
        """The hypervisor parameters (cluster-wide ones left out) an instance of this
        hypervisor and OS that sets none has (do not change)."""
        key = (hypervisor, os_name)
        found = self._hv.get(key)
        if found is None:
            found = self._hv[key] = fill_hv(self.cfg.cluster, hypervisor, os_name, {},
                                            skip_globals=True)
        return found

    def runtime(self, inst: Instance) -> Runtime:
        """The nodes' word on ``inst`` (a node-down runtime if no node was asked)."""
        answers = self.answers
        if answers is None:
            return Runtime(NODATA, None, False)
        primary = answers.get(inst.primary_node)
        if isinstance(primary, dict) and inst.name in primary:
            return Runtime(None, primary[inst.name], True)
        found = self._found_on().get(inst.name)
        if found is not None:
            return Runtime(None, found[1], False)
        if isinstance(primary, Special):
            return Runtime(primary, None, False)
        if primary is None:  # Ganeti's "Node response not present"
            return Runtime(NODATA, None, False)
        return Runtime(None, None, True)

    def _found_on(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Instance name -> (node, data) over every node that answered (first wins)."""
        if self._where is None:
            where: dict[str, tuple[str, dict[str, Any]]] = {}
            for uuid, answer in (self.answers or {}).items():
                if isinstance(answer, dict):
                    for name, info in answer.items():
                        where.setdefault(name, (uuid, info))
            self._where = where
        return self._where


def _updated(defaults: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` with ``own`` over them (values are plain scalars): a new dict, or
    ``defaults`` itself when ``own`` is empty (answers are read-only: the rows of
    most instances share their filled parameters, also in the static cell cache)."""
    if not own:
        return defaults
    result = dict(defaults)
    result.update(own)
    return result


class InstanceItem:
    """One instance of a query, with what its getters compute lazily (once each)."""

    __slots__ = ("_be", "_disks", "_hv", "_nicparams", "_runtime", "ctx", "inst")

    def __init__(self, ctx: Context, inst: Instance) -> None:
        self.ctx = ctx
        self.inst = inst
        self._hv: dict[str, Any] | None = None
        self._be: dict[str, Any] | None = None
        self._nicparams: list[dict[str, Any]] | None = None
        self._disks: list[Disk] | None = None
        self._runtime: Runtime | None = None

    @property
    def cfg(self) -> ConfigData:
        return self.ctx.cfg

    def hvparams(self) -> dict[str, Any]:
        """Filled hypervisor parameters, the cluster-wide ones left out."""
        if self._hv is None:
            inst = self.inst
            hv = _updated(self.ctx.hv_defaults(inst.hypervisor, inst.os), inst.hvparams)
            if inst.hvparams:  # a copy of its own (the defaults have no global ones)
                for key in HVC_GLOBALS:
                    hv.pop(key, None)
            self._hv = hv
        return self._hv

    def beparams(self) -> dict[str, Any]:
        """Filled backend parameters."""
        if self._be is None:
            self._be = _updated(self.ctx.be_defaults(), self.inst.beparams)
        return self._be

    def nicparams(self) -> list[dict[str, Any]]:
        """Filled parameters of each NIC."""
        if self._nicparams is None:
            defaults = self.ctx.nic_defaults()
            self._nicparams = [_updated(defaults, nic.nicparams) for nic in self.inst.nics]
        return self._nicparams

    def disks(self) -> list[Disk] | None:
        """The instance's disks in order; None if one is missing from the config."""
        if self._disks is None:
            found = [self.cfg.disks.get(uuid) for uuid in self.inst.disks]
            if any(d is None for d in found):
                return None
            self._disks = [d for d in found if d is not None]
        return self._disks

    def runtime(self) -> Runtime:
        """What the nodes said about the instance."""
        if self._runtime is None:
            self._runtime = self.ctx.runtime(self.inst)
        return self._runtime


# --- config getters ------------------------------------------------------------------

def _or(value: Any, missing: Special) -> Any:
    return missing if value is None else value


def _node(item: InstanceItem, uuid: str) -> Node | None:
    return item.cfg.nodes.get(uuid)


def _pnode_name(item: InstanceItem) -> Any:
    node = _node(item, item.inst.primary_node)
    return NODATA if node is None else node.name


def _pnode_group(item: InstanceItem, attr: str) -> Any:
    node = _node(item, item.inst.primary_node)
    group = item.cfg.nodegroups.get(node.group) if node is not None else None
    return NODATA if group is None else getattr(group, attr)


def _snodes(item: InstanceItem) -> list[Node]:
    return [n for n in (_node(item, u) for u in secondary_nodes(item.cfg, item.inst)) if n]


def _snode_groups(item: InstanceItem, attr: str) -> list[Any]:
    groups = (item.cfg.nodegroups.get(n.group) for n in _snodes(item))
    return [getattr(g, attr) for g in groups if g is not None]


def disk_template(cfg: ConfigData, inst: Instance) -> str | None:
    """The template of an instance's disks (``diskless``, one template or ``mixed``);
    None if a disk is missing from the config."""
    types: list[str] = []
    for uuid in inst.disks:
        disk = cfg.disks.get(uuid)
        if disk is None:
            return None
        if disk.dev_type not in types:
            types.append(disk.dev_type)
    if not types:
        return c.DT_DISKLESS
    return types[0] if len(types) == 1 else DT_MIXED


def disk_usage(disks: Iterable[Disk]) -> int:
    """Space the disks take on their nodes (MiB): DRBD adds its metadata."""
    total = 0
    for disk in disks:
        if disk.dev_type == c.DT_DRBD8:
            total += (disk.size or 0) + DRBD_META_SIZE
        elif disk.dev_type not in (c.DT_DISKLESS, c.DT_BLOCK):
            total += disk.size or 0
    return total


def _disk_list(fn: Callable[[Disk], Any]) -> Callable[[InstanceItem], Any]:
    def getter(item: InstanceItem) -> Any:
        disks = item.disks()
        return NODATA if disks is None else [fn(d) for d in disks]
    return getter


def _disk_at(index: int, fn: Callable[[Disk], Any]) -> Callable[[InstanceItem], Any]:
    def getter(item: InstanceItem) -> Any:
        disks = item.disks()
        if disks is None:
            return NODATA
        return UNAVAIL if index >= len(disks) else _or(fn(disks[index]), UNAVAIL)
    return getter


def _network_name(cfg: ConfigData, uuid: str | None) -> str | None:
    network = cfg.networks.get(uuid) if uuid else None
    return network.name if network is not None else None


def _vlan(params: dict[str, Any]) -> Any:
    return params.get(c.NIC_VLAN) if params.get(c.NIC_MODE) == c.NIC_MODE_OVS else None


def _bridge(params: dict[str, Any]) -> Any:
    return params.get(c.NIC_LINK) if params.get(c.NIC_MODE) == c.NIC_MODE_BRIDGED else None


NicGetter = Callable[[InstanceItem, NIC, dict[str, Any]], Any]


def _nic_at(index: int, fn: NicGetter) -> Callable[[InstanceItem], Any]:
    def getter(item: InstanceItem) -> Any:
        nics = item.inst.nics
        if index >= len(nics):
            return UNAVAIL
        return _or(fn(item, nics[index], item.nicparams()[index]), UNAVAIL)
    return getter


def _per_nic_getters() -> dict[str, Callable[[InstanceItem], Any]]:
    per_nic: dict[str, NicGetter] = {
        "ip": lambda i, nic, p: nic.ip,
        "uuid": lambda i, nic, p: nic.uuid,
        "mac": lambda i, nic, p: nic.mac,
        "name": lambda i, nic, p: nic.name,
        "network": lambda i, nic, p: nic.network,
        "mode": lambda i, nic, p: p.get(c.NIC_MODE),
        "link": lambda i, nic, p: p.get(c.NIC_LINK),
        "vlan": lambda i, nic, p: _vlan(p),
        "network.name": lambda i, nic, p: _network_name(i.cfg, nic.network),
        "bridge": lambda i, nic, p: _bridge(p),
    }
    return {f"nic.{key}/{index}": _nic_at(index, fn)
            for index in range(decls.MAX_NICS) for key, fn in per_nic.items()}


def _per_disk_getters() -> dict[str, Callable[[InstanceItem], Any]]:
    per_disk: dict[str, Callable[[Disk], Any]] = {
        "size": lambda d: d.size, "spindles": lambda d: d.spindles,
        "name": lambda d: d.name, "uuid": lambda d: d.uuid,
    }
    return {f"disk.{key}/{index}": _disk_at(index, fn)
            for index in range(decls.MAX_DISKS) for key, fn in per_disk.items()}


def _parameter_getters() -> dict[str, Callable[[InstanceItem], Any]]:
    def hv(name: str) -> Callable[[InstanceItem], Any]:
        return lambda item: item.hvparams().get(name, UNAVAIL)

    def be(name: str) -> Callable[[InstanceItem], Any]:
        return lambda item: item.beparams().get(name)

    return {**{f"hv/{name}": hv(name) for name in decls.HV_PARAMETER_KINDS},
            **{f"be/{name}": be(name) for name in decls.BE_PARAMETERS}}


# --- live getters --------------------------------------------------------------------

def allows_user_down(cfg: ConfigData, inst: Instance, hvparams: dict[str, Any]) -> bool:
    """Whether a shutdown from inside the instance counts as the user's (USER_down)."""
    return bool(cfg.cluster.enabled_user_shutdown) and (
        inst.hypervisor != c.HT_KVM or hvparams.get("user_shutdown") is True)


def instance_status(item: InstanceItem) -> str:
    """Ganeti's instance status (``running``, ``ADMIN_down``, ``ERROR_nodedown``, ...)."""
    inst, cfg = item.inst, item.cfg
    node = cfg.nodes.get(inst.primary_node)
    if node is not None and node.offline:
        return decls.INSTST_NODEOFFLINE
    runtime = item.runtime()
    if runtime.error is not None:
        return decls.INSTST_NODEDOWN
    if runtime.info is not None:
        if not runtime.on_primary:
            return decls.INSTST_WRONGNODE
        up = inst.admin_state == c.ADMINST_UP
        if runtime.info.get("state") == HV_STATE_SHUTDOWN:
            if up and allows_user_down(cfg, inst, item.hvparams()):
                return decls.INSTST_USERDOWN
            return decls.INSTST_ERRORDOWN if up else decls.INSTST_ADMINDOWN
        return decls.INSTST_RUNNING if up else decls.INSTST_ERRORUP
    if inst.admin_state == c.ADMINST_UP:
        return decls.INSTST_ERRORDOWN
    if inst.admin_state == c.ADMINST_OFFLINE:
        return decls.INSTST_ADMINOFFLINE
    if inst.admin_state_source == c.USER_SOURCE and cfg.cluster.enabled_user_shutdown:
        return decls.INSTST_USERDOWN
    return decls.INSTST_ADMINDOWN


def _oper_state(item: InstanceItem) -> Any:
    runtime = item.runtime()
    return NODATA if runtime.error is not None else runtime.info is not None


def _oper(key: str) -> Callable[[InstanceItem], Any]:
    def getter(item: InstanceItem) -> Any:
        runtime = item.runtime()
        if runtime.error is not None:
            return runtime.error
        if runtime.info is None:
            return UNAVAIL
        return _or(runtime.info.get(key), NODATA)
    return getter


def _console(item: InstanceItem) -> Any:
    runtime = item.runtime()
    if runtime.error is not None:
        return runtime.error
    if item.inst.hypervisor == c.HT_FAKE:  # what the fake hypervisor's node answers
        return consoles.message(item.inst.name, FAKE_CONSOLE_MESSAGE)
    if runtime.info is None or not runtime.on_primary:  # not running where it should
        return UNAVAIL
    return consoles.instance_console(item.cfg, item.inst)


def _number(value: Any) -> Any:
    """An integral float as an int, as LUXI writes it (so that the answer's encoder
    need not walk 20,000 rows to find it)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _forthcoming(item: InstanceItem) -> bool:
    return bool(item.inst.forthcoming)


INSTANCE_GETTERS: dict[str, Callable[[InstanceItem], Any]] = {
    "admin_state": lambda i: _or(i.inst.admin_state, NODATA),
    "admin_state_source": lambda i: _or(i.inst.admin_state_source, NODATA),
    "admin_up": lambda i: i.inst.admin_state == c.ADMINST_UP,
    "disks_active": lambda i: bool(i.inst.disks_active),
    "name": lambda i: i.inst.name,
    "hypervisor": lambda i: _or(i.inst.hypervisor, NODATA),
    "network_port": lambda i: _or(i.inst.network_port, UNAVAIL),
    "os": lambda i: _or(i.inst.os, NODATA),
    "pnode": _pnode_name,
    "pnode.group": lambda i: _pnode_group(i, "name"),
    "pnode.group.uuid": lambda i: _pnode_group(i, "uuid"),
    "snodes": lambda i: [n.name for n in _snodes(i)],
    "snodes.group": lambda i: _snode_groups(i, "name"),
    "snodes.group.uuid": lambda i: _snode_groups(i, "uuid"),
    "hvparams": lambda i: i.hvparams(),
    "beparams": lambda i: i.beparams(),
    "osparams": lambda i: fill_os(i.cfg.cluster, i.inst.os, i.inst.osparams),
    "custom_hvparams": lambda i: dict(i.inst.hvparams),
    "custom_beparams": lambda i: dict(i.inst.beparams),
    "custom_osparams": lambda i: dict(i.inst.osparams),
    "custom_nicparams": lambda i: [dict(nic.nicparams) for nic in i.inst.nics],
    **_parameter_getters(),
    "disk_usage": lambda i: NODATA if i.disks() is None else disk_usage(i.disks() or []),
    "disk.count": lambda i: len(i.inst.disks),
    "disk.sizes": _disk_list(lambda d: d.size),
    "disk.spindles": _disk_list(lambda d: d.spindles),
    "disk.names": _disk_list(lambda d: d.name),
    "disk.uuids": _disk_list(lambda d: d.uuid),
    "disk_template": lambda i: _or(disk_template(i.cfg, i.inst), NODATA),
    **_per_disk_getters(),
    "nic.count": lambda i: len(i.inst.nics),
    "nic.macs": lambda i: [nic.mac for nic in i.inst.nics],
    "nic.ips": lambda i: [nic.ip for nic in i.inst.nics],
    "nic.names": lambda i: [nic.name for nic in i.inst.nics],
    "nic.uuids": lambda i: [nic.uuid for nic in i.inst.nics],
    "nic.modes": lambda i: [p.get(c.NIC_MODE) for p in i.nicparams()],
    "nic.vlans": lambda i: [_vlan(p) for p in i.nicparams()],
    "nic.bridges": lambda i: [_bridge(p) for p in i.nicparams()],
    "nic.links": lambda i: [p.get(c.NIC_LINK) for p in i.nicparams()],
    "nic.networks": lambda i: [nic.network for nic in i.inst.nics],
    "nic.networks.names": lambda i: [_network_name(i.cfg, nic.network) for nic in i.inst.nics],
    **_per_nic_getters(),
    "status": instance_status,
    "oper_state": _oper_state,
    "console": _console,
    "oper_ram": _oper("memory"),
    "oper_vcpus": _oper("vcpus"),
    "ctime": lambda i: _number(i.inst.ctime),
    "mtime": lambda i: _number(i.inst.mtime),
    "uuid": lambda i: i.inst.uuid,
    "serial_no": lambda i: i.inst.serial_no,
    "forthcoming": _forthcoming,
    "tags": lambda i: sorted(i.inst.tags),
}
for _alias, _target in decls.ALIASES.items():
    INSTANCE_GETTERS[_alias] = INSTANCE_GETTERS[_target]
del _alias, _target

INSTANCE_FIELDS: dict[str, Field[InstanceItem]] = query.bind(decls.INSTANCE_FIELDS,
                                                             INSTANCE_GETTERS)

# --- answering -----------------------------------------------------------------------


def sorted_instances(cfg: ConfigData) -> list[Instance]:
    """Instances in Ganeti's "nice" name order (kept with the config: computed once
    per committed version of the instances container)."""
    container = cfg.instances
    cached = cfg.__dict__.get("_cache_sorted_instances")
    if cached is not None and cached[0] is container and cached[1] == len(container):
        result: list[Instance] = cached[2]
        return result
    result = sorted(container.values(), key=lambda i: query.nice_sort_key(i.name))
    cfg.__dict__["_cache_sorted_instances"] = (container, len(container), result)
    return result


def find_instances(cfg: ConfigData, names: Iterable[str]) -> list[Instance]:
    """The instances named, in the order given; OpPrereqError (unknown_entity) for the
    first name that is not an instance (a unique leading part of a name, or the
    instance's UUID, as luxid accepts, will do)."""
    found = []
    for want in names:
        inst = cfg.instance_by_name(want) or cfg.instances.get(want)
        if inst is None:
            match = [i for i in cfg.instances.values() if hostname_matches(i.name, want)]
            if len(match) != 1:
                raise OpPrereqError(f"Instance name {want} not found", ECODE_NOENT)
            inst = match[0]
        found.append(inst)
    return found


def needs_live(q: query.Query[Any]) -> bool:
    """Whether answering ``q`` needs the nodes' runtime data."""
    return bool((set(q.names) | set(q.filter_fields())) & decls.INSTANCE_LIVE_FIELDS)


def _names(names: Any) -> list[str]:
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise OpPrereqError("Names must be a list of strings or null", "wrong_input")
    return list(names)


class InstanceQueries:
    """Answers instance queries from the committed config and the nodes' runtime data."""

    def __init__(self, config: Callable[[], ConfigData], live: InstanceLiveCollector) -> None:
        self._config = config
        self._live = live
        self._static: dict[tuple[Any, ...], StaticCells] = {}

    def _static_cells(self, key: tuple[Any, ...]) -> StaticCells:
        """The cache of one field list (the least recently used list is dropped)."""
        cache = self._static.pop(key, None)
        if cache is None:
            cache = StaticCells()
            while len(self._static) >= STATIC_CACHE_LISTS:
                self._static.pop(next(iter(self._static)))
        self._static[key] = cache  # most recently used last
        return cache

    def _query_row(self, q: query.Query[InstanceItem]) -> Callable[[InstanceItem], list[Any]]:
        """``q.row`` (``[status, value]`` cells) through the static cell cache."""
        cells: Cells = []
        for fld in q.selected:
            if fld is None:
                cells.append((unknown_cell, False))
            else:
                cells.append((fld.result, fld.live))
        cache = self._static_cells(("query", tuple(q.names)))
        cache.prune(self._config())
        return cache.maker(cells)

    def sources(self) -> list[QuerySource]:
        """The query resource "instance" (:mod:`ganeti.master.query.queryregistry`)."""
        return [QuerySource(c.QR_INSTANCE, INSTANCE_FIELDS, self.query_instance,
                            ("QueryInstances", self.query_instances),
                            (("QueryInstancesBulk", self.query_instances_bulk),))]

    async def _answers(self, cfg: ConfigData, instances: list[Instance]
                       ) -> dict[str, NodeAnswer]:
        """The primary nodes' all_instances_info answers (offline nodes not asked)."""
        wanted: dict[str, None] = {}
        hypervisors: dict[str, dict[str, Any]] = {}
        for inst in instances:
            wanted[inst.primary_node] = None
            if inst.hypervisor not in hypervisors:
                hypervisors[inst.hypervisor] = dict(cfg.cluster.hvparams.get(inst.hypervisor,
                                                                             {}))
        nodes = [cfg.nodes[u] for u in wanted if u in cfg.nodes]
        answers: dict[str, NodeAnswer] = {n.uuid: OFFLINE for n in nodes if n.offline}
        online = [n for n in nodes if not n.offline]
        if online:
            got = self._live(online, hypervisors)
            if not isinstance(got, dict):
                got = await got
            for node in online:
                answer = got.get(node.uuid)
                answers[node.uuid] = answer if isinstance(answer, dict) else NODATA
        return answers

    async def _rows(self, q: query.Query[InstanceItem], cfg: ConfigData,
                    instances: list[Instance],
                    row: Callable[[InstanceItem], list[Any]] | None = None) -> list[Any]:
        """The rows (``q.row``, or ``row``) of the instances that pass ``q``'s filter."""
        make = row or q.row
        live = needs_live(q)
        if live and not (set(q.filter_fields()) & decls.INSTANCE_LIVE_FIELDS):
            # filter on config data first: only the survivors' nodes are asked
            pre = Context(cfg, None)
            with configmod.gc_paused():
                instances = [i for i in instances if q.matches(InstanceItem(pre, i))]
            ctx = Context(cfg, await self._answers(cfg, instances))
            with configmod.gc_paused():
                return [make(InstanceItem(ctx, i)) for i in instances]
        ctx = Context(cfg, await self._answers(cfg, instances) if live else None)
        # Rows allocate a few objects per field: without the pause each burst starts
        # a collection that walks the whole config (most of the time at 20,000).
        with configmod.gc_paused():
            return [make(item) for item in (InstanceItem(ctx, i) for i in instances)
                    if q.matches(item)]

    async def query_instance(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("instance", fields, filter)``."""
        cfg = self._config()
        q = query.Query(INSTANCE_FIELDS, fields, qfilter)
        wanted = requested_names(qfilter)
        instances = (sorted_instances(cfg) if wanted is None
                     else find_instances(cfg, wanted))
        return {"fields": q.fielddefs(),
                "data": await self._rows(q, cfg, instances, self._query_row(q))}

    async def query_instances(self, names: Any, fields: Any, use_locking: Any) -> list[Any]:
        """QueryInstances: old-style rows for the named instances (all if none named);
        an unknown name is an error, as in Ganeti's luxid."""
        cfg = self._config()
        wanted = _names(names)
        instances = find_instances(cfg, wanted) if wanted else sorted_instances(cfg)
        q = query.Query(INSTANCE_FIELDS, fields)
        unknown = q.unknown_fields()
        if unknown:
            raise OpPrereqError("Unknown output fields selected: " + ", ".join(unknown),
                                "wrong_input")
        cells: Cells = [(plain_cell(INSTANCE_FIELDS[name].getter), INSTANCE_FIELDS[name].live)
                        for name in q.names]
        cache = self._static_cells(("old", tuple(q.names)))
        cache.prune(cfg)
        return await self._rows(q, cfg, instances, cache.maker(cells))

    async def query_instances_bulk(self, names: Any, fields: Any, use_locking: Any
                                   ) -> list[dict[str, Any]]:
        """QueryInstancesBulk (extension): QueryInstances as RAPI's ``?bulk=1`` shows
        it, an object per instance keyed by field, ``beparams`` with Ganeti's
        ``memory`` key (a copy: the rows' values are shared with the cache)."""
        rows = await self.query_instances(names, fields, use_locking)
        keys = list(fields)
        be = keys.index("beparams") if "beparams" in keys else None
        answer = []
        for row in rows:
            obj = dict(zip(keys, row, strict=True))
            if be is not None:
                beparams = row[be]
                if isinstance(beparams, dict) and c.BE_MAXMEM in beparams:
                    obj["beparams"] = {**beparams, "memory": beparams[c.BE_MAXMEM]}
            answer.append(obj)
        return answer


def rpc_live_collector(rpc: Callable[[], Any], target: Callable[[Node], Any]
                       ) -> InstanceLiveCollector:
    """A live collector asking nodes through the node RPC client ``rpc()`` (made on
    first use): ``all_instances_info`` with the cluster's parameters of each hypervisor."""
    async def collect(nodes: list[Node], hvparams: dict[str, dict[str, Any]]
                      ) -> dict[str, Any]:
        try:
            client = rpc()
        except OpExecError:  # no cluster certificate: no node can be asked
            return {}
        results = await client.call([target(n) for n in nodes], "all_instances_info",
                                    [list(hvparams), hvparams])
        answers: dict[str, Any] = {}
        for node in nodes:
            result = results.get(node.name)
            ok = result is not None and result.success and isinstance(result.payload, dict)
            answers[node.uuid] = result.payload if ok else None
        return answers
    return collect


__all__ = ["DRBD_META_SIZE", "INSTANCE_FIELDS", "INSTANCE_GETTERS", "Context",
           "InstanceItem", "InstanceLiveCollector", "InstanceQueries", "Runtime",
           "disk_template", "disk_usage", "find_instances", "instance_status", "needs_live",
           "rpc_live_collector", "sorted_instances"]
