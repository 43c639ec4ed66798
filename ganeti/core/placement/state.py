"""The mutable cluster state of one allocation run, kept as htools keeps it.

:class:`ClusterState` is built once from a :class:`~ganeti.core.placement.model.Cluster`
as htools' iallocator loader builds its node list (instances set on their
nodes, peers and N+1 flags computed, missing memory recorded: ``mergeData``
then ``updateMissing``; a forthcoming instance counts in the ``*_forth``
figures only, as htools' ``setPri``/``setSec`` count it) and is then changed
in place: placing, removing or moving an instance replaces only the touched
:class:`NodeState` objects and
updates the running :class:`~ganeti.core.placement.metric.Statistics`
incrementally, so the score after a change costs O(terms), not O(nodes).

Rules live in :mod:`ganeti.core.placement.nodestate` (``NodeState.add_pri`` /
``add_sec`` give htools' failure reasons; ``policy_failure`` is the group
policy) and in :mod:`ganeti.core.placement.globaln1` (hail's global N+1
capacity check).  Which nodes may take instances at all (online, not drained,
vm_capable; the group's allocation policy) is :meth:`ClusterState.candidates`.

API (stable; evacuation and balance build on it):

* ``ClusterState(cluster)``: ``cluster`` (the model), ``nodes`` (list of
  :class:`NodeState` in input order), ``index`` (name -> position), ``insts``
  (name -> :class:`Inst`, with ``pnode``/``snode`` positions), ``groups``
  (uuid -> model Group), ``stats`` (the whole cluster's statistics, kept up to
  date by every change).
* ``score()`` and ``term_values()`` (the whole cluster); ``stats_of(positions)``
  (fresh statistics over some nodes, e.g. one group: ``group_positions(uuid)``);
  ``score_with(changes, stats=None)``: the score if the nodes at the given
  positions were replaced by the given ``NodeState`` objects, nothing changed.
* ``apply(changes, extra_stats=())``: replace nodes, updating ``stats`` and any
  other statistics passed.  ``place(inst, pdx, sdx=NO_NODE, force=False)``,
  ``remove(name)``, ``move(name, pdx, sdx=NO_NODE, force=False)``: each returns
  ``None`` on success or the failure reason, and changes nothing on failure.
  ``force`` ignores the soft rules on the primary (hail's ``addPriEx``); the
  secondary's are always checked (hail's ``addSec``) unless ``force_secondary``.
* ``placement(inst, pdx, sdx, force, force_secondary)``: the replaced nodes of
  a placement, or the reason it fails (nothing changes);
  ``inst_from_request(allocate)``; ``pending``: instances being tried.
* ``candidates(group_uuid, restrict=None)``: positions of the group's online
  nodes (htools' ``getOnline``), in input order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ganeti.core import constants
from ganeti.core.placement import metric
from ganeti.core.placement.model import DRBD_META_SIZE, Cluster, Group, Instance, Node
from ganeti.core.placement.nodestate import (
    DESIRED_LOCATION_PREFIX,
    EX_TAGS_PREFIX,
    FAIL_CPU,
    FAIL_DISK,
    FAIL_DISK_COUNT,
    FAIL_INTERNAL,
    FAIL_MEM,
    FAIL_MIG,
    FAIL_MODES,
    FAIL_N1,
    FAIL_SPINDLES,
    FAIL_TAGS,
    LOCAL_STORAGE,
    LOCATION_PREFIX,
    NO_NODE,
    Inst,
    NodeState,
    policy_failure,
    prefixed,
)
from ganeti.core.placement.requests import Allocate

#: Positions -> replacement nodes.
Changes = Mapping[int, NodeState]


def _htools_offline(node: Node) -> bool:
    """htools counts a node offline when it is offline, drained or not vm_capable."""
    return node.offline or node.drained or not node.vm_capable or node.resources is None


class ClusterState:
    """The cluster of one allocation run (see the module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.groups: dict[str, Group] = dict(cluster.groups)
        ctags = cluster.tags
        self.ex_prefixes = prefixed(ctags, EX_TAGS_PREFIX)
        self.dsrd_prefixes = prefixed(ctags, DESIRED_LOCATION_PREFIX)
        loc_prefixes = prefixed(ctags, LOCATION_PREFIX)
        self.nodes: list[NodeState] = []
        self.index: dict[str, int] = {}
        for name, node in cluster.nodes.items():
            self.index[name] = len(self.nodes)
            self.nodes.append(self._node(node, loc_prefixes))
        self.insts: dict[str, Inst] = {}
        #: Instances being tried somewhere by :meth:`placement` (not placed yet).
        self.pending: dict[str, Inst] = {}
        self._plists: list[list[str]] = [[] for _ in self.nodes]
        self._slists: list[list[str]] = [[] for _ in self.nodes]
        for inst in cluster.instances.values():
            self._load_instance(inst)
        for state, plist, slist in zip(self.nodes, self._plists, self._slists, strict=True):
            state.plist, state.slist = tuple(plist), tuple(slist)
        del self._plists, self._slists
        for state in self.nodes:
            self._build_peers(state)
            self._update_missing(state)
        self.stats = self.stats_of(range(len(self.nodes)))

    # -- loading (htools' IAlloc.parseNode, mergeData, updateMissing) -----------------------

    def _node(self, node: Node, loc_prefixes: Sequence[str]) -> NodeState:
        group = self.groups.get(node.group)
        offline = _htools_offline(node)
        live = not node.offline and node.vm_capable and node.resources is not None
        excl = bool(node.ndparams.get("exclusive_storage", False))
        res = node.resources
        state = NodeState(name=node.name, idx=len(self.nodes), group=node.group,
                          offline=offline, excl=excl)
        if live and res is not None:
            state.t_mem = float(res.total_memory)
            state.n_mem = res.reserved_memory
            state.f_mem = state.f_mem_forth = res.free_memory
            state.t_dsk = float(res.total_disk)
            state.f_dsk = state.f_dsk_forth = res.free_disk
            state.t_cpu = float(res.total_cpus)
            state.u_cpu = state.u_cpu_forth = res.reserved_cpus
            state.f_spindles = state.f_spindles_forth = res.free_spindles
            state.t_spindles = res.total_spindles if excl else 0
        if not excl:
            state.t_spindles = int(node.ndparams.get("spindle_count", 1))
        if group is not None:
            state.vcpu_ratio = group.ipolicy.vcpu_ratio
            state.hi_spindles = group.ipolicy.spindle_ratio * state.t_spindles
        state.loc_tags = frozenset(t for t in node.tags
                                   if any(t.startswith(p + ":") for p in loc_prefixes))
        return state

    def make_inst(self, name: str, memory: int, vcpus: int, template: str, dsk: int,
                  disk_sizes: Sequence[int], disk_spindles: Sequence[int | None],
                  spindle_use: int, tags: Sequence[str],
                  run: str = constants.ADMINST_UP, forthcoming: bool = False) -> Inst:
        """An :class:`Inst` with its exclusion and desired-location tags resolved."""
        excl: tuple[str, ...] = ()
        dsrd: frozenset[str] = frozenset()
        if tags and self.ex_prefixes:
            excl = tuple(t for t in tags if any(t.startswith(p) for p in self.ex_prefixes))
        if tags and self.dsrd_prefixes:
            dsrd = frozenset(t for t in tags if any(t.startswith(p) for p in self.dsrd_prefixes))
        return Inst(name, memory, dsk, vcpus, template, run, spindle_use, tuple(disk_sizes),
                    tuple(disk_spindles), excl, dsrd, forthcoming=forthcoming)

    def inst_from_request(self, req: Allocate) -> Inst:
        """The instance an allocate request describes (not placed)."""
        return self.make_inst(req.name, req.memory, req.vcpus, req.disk_template,
                              req.disk_space_total, [d.size for d in req.disks],
                              [d.spindles for d in req.disks], req.spindle_use, req.tags,
                              forthcoming=req.forthcoming)

    def _load_instance(self, model: Instance) -> None:
        sizes = [d.size for d in model.disks]
        dsk = sum(sizes)  # Ganeti's disk_space_total: drbd adds its metadata volumes
        template = model.disk_template
        if template == constants.DT_DRBD8:
            dsk += DRBD_META_SIZE * len(sizes)
        inst = self.make_inst(model.name, model.memory, model.vcpus, template, dsk, sizes,
                              [d.spindles for d in model.disks], model.spindle_use,
                              model.tags, run=model.admin_state,
                              forthcoming=model.forthcoming)
        nodes = model.nodes
        pdx = inst.pnode = self.index[nodes[0]]
        sdx = inst.snode = self.index[nodes[1]] if len(nodes) > 1 else NO_NODE
        p = self.nodes[pdx]
        local = template in LOCAL_STORAGE
        if sdx != NO_NODE and p.loc_tags:
            inst.loc_score = len(p.loc_tags & self.nodes[sdx].loc_tags)
        self.insts[inst.name] = inst
        forth = inst.forthcoming
        vcpus = inst.vcpus if inst.online else 0
        # setPri: a real instance counts on the real figures and the forthcoming ones, a
        # forthcoming instance on the forthcoming ones only (the real figures come from
        # the node's live data, which already holds the real instances' disks)
        if not forth:
            self._plists[pdx].append(inst.name)  # (tuples once every instance is in)
            p.u_cpu += vcpus
            if local and not p.excl:
                p.inst_spindles += inst.spindle_use
            if inst.loc_score or inst.dsrd_loc:
                p.loc_score += (inst.loc_score + len(inst.dsrd_loc)
                                - len(inst.dsrd_loc & p.loc_tags))
            for tag in inst.excl_tags:
                for loc in p.loc_tags:
                    p.inst_map[(loc, tag)] = p.inst_map.get((loc, tag), 0) + 1
        else:
            if local:
                p.f_dsk_forth -= inst.dsk
            p.f_spindles_forth = p._free_spindles(inst, -1, p.f_spindles_forth)
        for tag in inst.excl_tags:
            p.p_tags[tag] = p.p_tags.get(tag, 0) + 1
        p.u_cpu_forth += vcpus
        if local and not p.excl:
            p.inst_spindles_forth += inst.spindle_use
        if not inst.uses_memory:
            p.f_mem_forth -= inst.mem
        if sdx != NO_NODE:  # setSec
            s = self.nodes[sdx]
            if not forth:
                self._slists[sdx].append(inst.name)
                if local and not s.excl:
                    s.inst_spindles += inst.spindle_use
            else:
                if local:
                    s.f_dsk_forth -= inst.dsk
                s.f_spindles_forth = s._free_spindles(inst, -1, s.f_spindles_forth)
            if local and not s.excl:
                s.inst_spindles_forth += inst.spindle_use

    def _build_peers(self, state: NodeState) -> None:
        peers: dict[int, int] = {}
        for name in state.slist:
            inst = self.insts[name]
            if inst.online:
                peers[inst.pnode] = peers.get(inst.pnode, 0) + inst.mem
            else:
                peers.setdefault(inst.pnode, 0)
        state.peers = {p: m for p, m in peers.items() if m > 0}
        state.r_mem = max(peers.values(), default=0)
        state.fail_n1 = state.f_mem < state.r_mem

    def _update_missing(self, state: NodeState) -> None:
        state.i_mem = sum(self.insts[n].mem for n in state.plist if self.insts[n].uses_memory)
        state.x_mem = (int(state.t_mem) - state.n_mem - state.i_mem) - state.f_mem

    # -- scores ----------------------------------------------------------------------------

    def stats_of(self, positions: Iterable[int]) -> metric.Statistics:
        """Fresh statistics over the nodes at ``positions``."""
        nodes = [self.nodes[i] for i in positions]
        return metric.Statistics.of([n.components() for n in nodes if not n.offline],
                                    [n.components() for n in nodes if n.offline])

    def group_positions(self, group_uuid: str) -> list[int]:
        """Positions of every node of a group (online or not), in input order."""
        return [i for i, n in enumerate(self.nodes) if n.group == group_uuid]

    def score(self) -> float:
        """The whole cluster's score."""
        return self.stats.score()

    def term_values(self) -> dict[str, float]:
        """The whole cluster's term values, by name."""
        return metric.named(self.stats.values())

    def score_with(self, changes: Changes, stats: metric.Statistics | None = None) -> float:
        """The score of ``stats`` (default: the cluster's) with nodes replaced."""
        new = (self.stats if stats is None else stats).copy()
        for pos, node in changes.items():
            old = self.nodes[pos]
            new.update(old.components(), node.components(), not old.offline)
        return new.score()

    # -- changes ---------------------------------------------------------------------------

    def apply(self, changes: Changes,
              extra_stats: Iterable[metric.Statistics] = ()) -> None:
        """Replace nodes, updating :attr:`stats` and ``extra_stats``."""
        extra = list(extra_stats)
        for pos, node in changes.items():
            old = self.nodes[pos]
            before, after = old.components(), node.components()
            for stats in (self.stats, *extra):
                stats.update(before, after, not old.offline)
            self.nodes[pos] = node

    def placement(self, inst: Inst, pdx: int, sdx: int = NO_NODE, force: bool = False,
                  force_secondary: bool = False) -> dict[int, NodeState] | str:
        """The nodes after placing ``inst`` on ``pdx`` (and ``sdx``), or why not.

        ``force`` ignores the soft rules on the primary only, as hail does;
        ``force_secondary`` on the secondary too."""
        if pdx == sdx:
            return FAIL_INTERNAL
        p = self.nodes[pdx]
        s = self.nodes[sdx] if sdx != NO_NODE else None
        if s is not None:
            inst.loc_score = len(p.loc_tags & s.loc_tags)
        new_p = p.add_pri(inst, force)
        if isinstance(new_p, str):
            return new_p
        if s is None:
            self.pending[inst.name] = replace(inst, pnode=pdx, snode=NO_NODE)
            return {pdx: new_p}
        new_s = s.add_sec(inst, pdx, force_secondary)  # hail's addSec: strict by default
        if isinstance(new_s, str):
            return new_s
        self.pending[inst.name] = replace(inst, pnode=pdx, snode=sdx)
        return {pdx: new_p, sdx: new_s}

    def place(self, inst: Inst, pdx: int, sdx: int = NO_NODE, force: bool = False,
              extra_stats: Iterable[metric.Statistics] = (),
              force_secondary: bool = False) -> str | None:
        """Place a new instance; ``None`` or the failure reason (then nothing changed).
        ``force`` ignores the soft rules on the primary (the secondary's are hail's
        ``addSec``: always checked)."""
        changes = self.placement(inst, pdx, sdx, force, force_secondary)
        if isinstance(changes, str):
            return changes
        inst.pnode, inst.snode = pdx, sdx
        self.apply(changes, extra_stats)
        self.insts[inst.name] = inst
        self.pending.pop(inst.name, None)
        return None

    def remove(self, name: str, extra_stats: Iterable[metric.Statistics] = ()) -> Inst:
        """Take an instance off its nodes (it stays known, unplaced); returns it."""
        inst = self.insts[name]
        changes = {inst.pnode: self.nodes[inst.pnode].remove_pri(inst)}
        if inst.snode != NO_NODE:
            changes[inst.snode] = self.nodes[inst.snode].remove_sec(inst)
        self.apply(changes, extra_stats)
        inst.pnode = inst.snode = NO_NODE
        return inst

    def move(self, name: str, pdx: int, sdx: int = NO_NODE, force: bool = False,
             extra_stats: Iterable[metric.Statistics] = (),
             force_secondary: bool = False) -> str | None:
        """Move an instance to new nodes; ``None`` or the failure reason (nothing changed)."""
        inst = self.insts[name]
        old = (inst.pnode, inst.snode)
        saved = {i: self.nodes[i] for i in old if i != NO_NODE}
        extra = list(extra_stats)
        self.remove(name, extra)
        reason = self.place(inst, pdx, sdx, force, extra, force_secondary)
        if reason is not None:  # put the nodes back as they were
            self.apply(saved, extra)
            inst.pnode, inst.snode = old
        return reason

    # -- candidates ------------------------------------------------------------------------

    def candidates(self, group_uuid: str | None,
                   restrict: Iterable[str] | None = None) -> list[int]:
        """Positions of the online nodes (of one group, or all), in input order."""
        allowed = None if restrict is None else set(restrict)
        return [i for i, n in enumerate(self.nodes)
                if not n.offline and (group_uuid is None or n.group == group_uuid)
                and (allowed is None or n.name in allowed)]


def cluster_score(cluster: Cluster) -> float:
    """htools' score of a model cluster (the whole cluster, as ``hinfo`` prints it)."""
    return ClusterState(cluster).score()


def cluster_terms(cluster: Cluster) -> dict[str, float]:
    """htools' term values of a model cluster, by name."""
    return ClusterState(cluster).term_values()


__all__ = ["DESIRED_LOCATION_PREFIX", "EX_TAGS_PREFIX", "FAIL_CPU", "FAIL_DISK",
           "FAIL_DISK_COUNT", "FAIL_INTERNAL", "FAIL_MEM", "FAIL_MIG", "FAIL_MODES",
           "FAIL_N1", "FAIL_SPINDLES", "FAIL_TAGS", "LOCAL_STORAGE", "LOCATION_PREFIX",
           "NO_NODE", "Changes", "ClusterState", "Inst", "NodeState", "cluster_score",
           "cluster_terms", "policy_failure"]
