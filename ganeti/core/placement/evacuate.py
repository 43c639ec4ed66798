"""Node evacuation and group change, as hail answers them, moving all it validly can.

Node-evacuate (hail's ``tryNodeEvac``): the instances of the request in order,
each moved on the state the previous moves left, within its primary's group:

* ``primary-only``: a drbd instance fails over to its secondary; an instance
  on shared or external storage (diskless, sharedfile, blockdev, rbd, ext,
  gluster) migrates to the best other node;
* ``secondary-only``: a drbd instance gets the best new secondary;
* ``all``: a drbd instance whose primary is evacuated moves its primary (to
  its secondary and a new secondary, or to a new node keeping the secondary);
  one whose secondary is evacuated gets a new secondary; one whose two nodes
  are evacuated moves to a new pair (hail's replace-secondary, failover,
  replace-secondary); shared storage migrates as above;
* plain and file instances cannot move ("Instances of type plain cannot be
  relocated"), nor can anything but drbd change its secondary.

"Best" is the lowest htools score of the group after the move (ties: the
later node, as hail breaks them); a move must pass the node rules
(:func:`~ganeti.core.placement.moves.apply_move`).  An instance that cannot
move goes to the failed list with hail's reason; the rest are moved, each
with one job of the opcodes hail writes.

**Difference from hail**: in ``all`` mode hail excludes as targets every node
of every instance of the request (the evacuated node and all its drbd peers),
so on a small cluster nothing can move.  Here only the evacuated node is
excluded: the node every instance of the request lives on (the intersection
of their nodes; when the request has no common node, hail's set).  The other
modes exclude what hail does (the evacuated primaries, or secondaries).

Change-group (hail's ``tryChangeGroup``): for each instance the best target
group is chosen as an allocation of the instance would choose it (the target
groups of the request, any group but the instances' own when none), then it
moves there as in ``all`` mode: shared storage migrates, drbd moves to a new
pair of that group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ganeti.core import constants
from ganeti.core.placement import metric
from ganeti.core.placement.allocate import AllocationError, Allocator, Options
from ganeti.core.placement.moves import (
    FAILOVER,
    FAILOVER_AND_REPLACE,
    FAILOVER_TO_ANY,
    MOVES,
    REPLACE_SECONDARY,
    SPLIT,
    Step,
    apply_move,
    step_opcodes,
)
from ganeti.core.placement.nodestate import NO_NODE, Inst, NodeState, policy_failure
from ganeti.core.placement.pairs import numeric_components, replacement_scores
from ganeti.core.placement.requests import (
    MODE_CHG_GROUP,
    MODE_NODE_EVAC,
    ChangeGroup,
    EvacuationResult,
    Moved,
    NodeEvacuate,
)
from ganeti.core.placement.state import ClusterState

PRIMARY_ONLY = "primary-only"
SECONDARY_ONLY = "secondary-only"
ALL = "all"

#: Templates whose instances cannot leave their node (htools' MirrorNone).
_NOT_MOVABLE = frozenset({constants.DT_PLAIN, constants.DT_FILE})
#: How many first steps of a pair move are followed to every final secondary.
_PAIR_WIDTH = 3


class _Failure(Exception):
    """One instance cannot move; the message is hail's reason."""


class Evacuation:
    """Moves instances on one :class:`ClusterState`, keeping per-group statistics."""

    def __init__(self, state: ClusterState, options: Options) -> None:
        self.state = state
        self.options = options
        self._group_stats: dict[str, metric.Statistics] = {}
        self.moved: list[Moved] = []
        self.failed: list[tuple[str, str | None]] = []
        self.jobs: list[tuple[dict[str, Any], ...]] = []
        #: position -> (the node, its numeric components) for the state's nodes
        self._comps: dict[int, tuple[NodeState, np.ndarray]] = {}

    # -- scores and commits -------------------------------------------------------------------

    def group_stats(self, group: str) -> metric.Statistics:
        """The running statistics of a group's nodes."""
        stats = self._group_stats.get(group)
        if stats is None:
            stats = self.state.stats_of(self.state.group_positions(group))
            self._group_stats[group] = stats
        return stats

    def group_score(self, group: str, changes: dict[int, NodeState]) -> float:
        """The group's score with ``changes`` (only its own nodes count)."""
        nodes = self.state.nodes
        own = {pos: node for pos, node in changes.items() if nodes[pos].group == group}
        return self.state.score_with(own, self.group_stats(group))

    def commit(self, changes: dict[int, NodeState], inst: Inst) -> None:
        """Make a move real: the nodes, the cluster and group statistics, the instance."""
        nodes = self.state.nodes
        for pos, node in changes.items():
            old = nodes[pos]
            stats = self._group_stats.get(old.group)
            if stats is not None:
                stats.update(old.components(), node.components(), not old.offline)
        self.state.apply(changes)
        self.state.insts[inst.name] = inst

    def node(self, pos: int) -> NodeState:
        """The node at ``pos`` as it stands."""
        return self.state.nodes[pos]

    # -- one instance -------------------------------------------------------------------------

    def _stats_with(self, group: str, base: dict[int, NodeState]) -> metric.Statistics:
        """The group's statistics with ``base`` applied (a copy when ``base`` is not empty)."""
        stats = self.group_stats(group)
        if not base:
            return stats
        stats = stats.copy()
        nodes = self.state.nodes
        for pos, node in base.items():
            old = nodes[pos]
            if old.group == group:
                stats.update(old.components(), node.components(), not old.offline)
        return stats

    def components(self, pos: int, node: NodeState) -> np.ndarray:
        """The numeric components of ``node`` (at ``pos``), cached for the state's nodes."""
        cached = self._comps.get(pos)
        if cached is not None and cached[0] is node:
            return cached[1]
        row = numeric_components(node)
        if node is self.state.nodes[pos]:
            self._comps[pos] = (node, row)
        return row

    def _has_locations(self, avail: Iterable[int]) -> bool:
        nodes = self.state.nodes
        return any(nodes[i].loc_tags for i in avail)

    def best_single(self, inst: Inst, kinds: Sequence[str], group: str, avail: Sequence[int],
                    base: dict[int, NodeState] | None = None
                    ) -> tuple[dict[int, NodeState], Inst, list[Step]]:
        """The best move of one of ``kinds`` to one of ``avail`` (hail's
        ``evacOneNodeOnly``), on the state with ``base`` applied; ``_Failure`` with
        hail's text when none is valid.

        Candidates are scored at once (the instance's own nodes change alike for
        every target); the best few are scored again exactly, ties going to the
        later node as in hail."""
        base = base or {}
        look = _overlay(self.node, base)
        force = self.options.ignore_soft_errors
        targets = [t for t in avail if t != inst.pnode and t != inst.snode]
        if self._has_locations(targets) or any(k not in SPLIT for k in kinds):
            return self._best_exact(inst, kinds, group, targets, base)
        shortlist: list[tuple[float, int, str]] = []
        failures: dict[int, str] = {}
        for kind in kinds:
            split = SPLIT[kind](look, inst, force)
            if isinstance(split, str):
                failures.update((t, split) for t in targets if t not in failures)
                continue
            fixed, side = split
            stats = self._stats_with(group, {**base, **fixed})
            olds: list[np.ndarray] = []
            news: list[NodeState] = []
            where: list[int] = []
            for target in targets:
                old = look(target)
                new = side(old)
                if isinstance(new, str):
                    failures.setdefault(target, new)
                    continue
                olds.append(self.components(target, old))
                news.append(new)
                where.append(target)
            if not where:
                continue
            scores = replacement_scores(stats, np.array(olds), news)
            low = float(scores.min())
            near = np.flatnonzero(scores <= low + 1e-9 * max(1.0, abs(low)))
            shortlist.extend((low, where[int(k)], kind) for k in near)
        if not shortlist:
            names = self.state.nodes
            message = "".join(f" Node {names[t].name} failed: {failures[t]};"
                              for t in targets if t in failures)
            raise _Failure(f"Can't find any good node: {message}")
        low = min(score for score, _, _ in shortlist)
        near_targets = {t for score, t, _ in shortlist if score <= low + 1e-9 * max(1.0, abs(low))}
        near_kinds = {k for score, _, k in shortlist if score <= low + 1e-9 * max(1.0, abs(low))}
        return self._best_exact(inst, [k for k in kinds if k in near_kinds], group,
                                [t for t in targets if t in near_targets], base)

    def _best_exact(self, inst: Inst, kinds: Sequence[str], group: str, targets: list[int],
                    base: dict[int, NodeState]) -> tuple[dict[int, NodeState], Inst, list[Step]]:
        """:meth:`best_single` move by move (location tags; and the shortlist)."""
        force = self.options.ignore_soft_errors
        look = _overlay(self.node, base)
        best: tuple[float, dict[int, NodeState], Inst, list[Step]] | None = None
        message = ""
        for target in targets:
            for kind in kinds:
                outcome = apply_move(look, inst, kind, target, force)
                if isinstance(outcome, str):
                    if best is None:
                        message += f" Node {self.state.nodes[target].name} failed: {outcome};"
                    continue
                changes = {**base, **outcome[0]}
                score = self.group_score(group, changes)
                if best is None or not best[0] < score:
                    steps = list(_steps(kind, self.state.nodes[target].name))
                    best = (score, changes, outcome[1], steps)
        if best is None:
            raise _Failure(f"Can't find any good node: {message}")
        return best[1], best[2], best[3]

    def best_pair(self, inst: Inst, group: str, avail: Sequence[int],
                  final_secondaries: Sequence[int] | None = None
                  ) -> tuple[dict[int, NodeState], Inst, list[Step]]:
        """A new (primary, secondary) for a drbd instance by hail's steps: replace the
        secondary with the new primary, fail over, replace the secondary with the new
        secondary.  hail tries every pair; here the new primaries are ranked by the
        group's score with the instance on them alone, and the best few are followed
        through the steps to every new secondary."""
        force = self.options.ignore_soft_errors
        names = self.state.nodes
        seconds = list(avail if final_secondaries is None else final_secondaries)
        overlay: dict[int, NodeState] = {}
        current, steps0 = inst, []
        if self.node(inst.pnode).offline:  # hail fails over first when the primary is offline
            outcome = apply_move(self.node, current, FAILOVER, NO_NODE, force)
            if isinstance(outcome, str):
                raise _Failure(f"Can't find any good nodes for relocation: Allocation "
                               f"failed: Failing over to the secondary: {outcome}")
            overlay, current, steps0 = outcome[0], outcome[1], [("migrate", None)]
        look = _overlay(self.node, overlay)
        firsts = [t for t in avail if t not in (current.pnode, current.snode)]
        # rank the new primaries: the instance off its nodes, on the candidate alone
        alone = {current.pnode: look(current.pnode).remove_pri(current),
                 current.snode: look(current.snode).remove_sec(current)}
        stats = self._stats_with(group, {**overlay, **alone})
        olds: list[np.ndarray] = []
        news: list[NodeState] = []
        where: list[int] = []
        message = "no nodes available"
        for target in firsts:
            new = look(target).add_pri(current, force)
            if isinstance(new, str):
                message = f"Allocation failed: Changing secondary to new primary: {new}"
                continue
            olds.append(self.components(target, look(target)))
            news.append(new)
            where.append(target)
        scores = replacement_scores(stats, np.array(olds), news) if where else np.zeros(0)
        order = sorted(range(len(where)), key=lambda k: (float(scores[k]), -where[k]))
        best: tuple[float, dict[int, NodeState], Inst, list[Step]] | None = None
        tried = 0
        for k in order:
            if tried >= _PAIR_WIDTH:
                break
            primary = where[k]
            outcome = apply_move(look, current, REPLACE_SECONDARY, primary, force)
            if isinstance(outcome, str):
                message = f"Allocation failed: Changing secondary to new primary: {outcome}"
                continue
            step1 = {**overlay, **outcome[0]}
            outcome2 = apply_move(_overlay(self.node, step1), outcome[1], FAILOVER, NO_NODE,
                                  force)
            if isinstance(outcome2, str):
                message = f"Allocation failed: Failing over to new primary: {outcome2}"
                continue
            tried += 1
            step2 = {**step1, **outcome2[0]}
            try:
                changes, moved, steps3 = self.best_single(
                    outcome2[1], (REPLACE_SECONDARY,), group,
                    [t for t in seconds if t != primary], step2)
            except _Failure as err:
                message = f"Allocation failed: Changing secondary to final secondary: {err}"
                continue
            score = self.group_score(group, changes)
            if best is None or not best[0] < score:
                best = (score, changes, moved,
                        [*steps0, ("replace", names[primary].name), ("migrate", None),
                         *steps3])
        if best is None:
            raise _Failure(f"Can't find any good nodes for relocation: {message}")
        return best[1], best[2], best[3]

    def evacuate_one(self, inst: Inst, mode: str, group: str, avail: list[int],
                     evacuated: frozenset[int]) -> tuple[dict[int, NodeState], Inst, list[Step]]:
        """How ``inst`` leaves its evacuated node(s) (hail's ``nodeEvacInstance``)."""
        template = inst.template
        if template in _NOT_MOVABLE:
            raise _Failure(f"Instances of type {template} cannot be relocated")
        if not inst.mirrored:
            if mode == SECONDARY_ONLY:
                raise _Failure(f"Instances with disk template '{template}' can't execute "
                               f"change secondary")
            return self.best_single(inst, (FAILOVER_TO_ANY,), group, avail)
        if mode == PRIMARY_ONLY:
            outcome = apply_move(self.node, inst, FAILOVER, NO_NODE,
                                 self.options.ignore_soft_errors)
            if isinstance(outcome, str):
                raise _Failure(outcome)
            return outcome[0], outcome[1], [("migrate", None)]
        if mode == SECONDARY_ONLY or inst.pnode not in evacuated:
            return self.best_single(inst, (REPLACE_SECONDARY,), group, avail)
        if inst.snode not in evacuated:  # the primary leaves, the secondary may stay
            found: list[tuple[dict[int, NodeState], Inst, list[Step]]] = []
            failure: _Failure | None = None
            attempts: list[Callable[[], tuple[dict[int, NodeState], Inst, list[Step]]]] = [
                lambda: self.best_single(inst, (FAILOVER_AND_REPLACE,), group, avail),
                lambda: self.best_pair(inst, group, avail, [*avail, inst.snode])]
            for attempt in attempts:
                try:
                    found.append(attempt())
                except _Failure as err:
                    failure = err
            if not found:
                assert failure is not None
                raise failure
            return min(found, key=lambda f: self.group_score(group, f[0]))
        return self.best_pair(inst, group, avail)

    def record(self, name: str, work: Any, after: Any = None) -> None:
        """Run ``work()`` for one instance and record its move or failure; ``after``
        is called with the changed positions once the move is made."""
        try:
            changes, moved, steps = work()
        except _Failure as err:
            self.failed.append((name, str(err)))
            return
        self.commit(changes, moved)
        if after is not None:
            after(changes)
        nodes = self.state.nodes
        names = tuple(nodes[i].name for i in (moved.pnode, moved.snode) if i != NO_NODE)
        self.moved.append(Moved(name, self.state.groups[nodes[moved.pnode].group].name, names))
        self.jobs.append(tuple(step_opcodes(name, tuple(steps), moved.forthcoming)))

    def result(self) -> tuple[str, EvacuationResult]:
        """hail's info text and the answer."""
        info = (f"{len(self.failed)} instances failed to move and {len(self.moved)} were "
                f"moved successfully")
        return info, EvacuationResult(tuple(self.moved), tuple(self.failed), tuple(self.jobs))


def _steps(kind: str, target: str) -> tuple[Step, ...]:
    return MOVES[kind].steps(target)


def _overlay(base: Any, overlay: dict[int, NodeState]) -> Any:
    def look(pos: int) -> NodeState:
        node = overlay.get(pos)
        return base(pos) if node is None else node
    return look


def _instances(state: ClusterState, names: Iterable[str]) -> list[Inst]:
    missing = [n for n in names if n not in state.insts]
    if missing:
        raise AllocationError(f"Unknown instance(s): {', '.join(missing)}")
    return [state.insts[n] for n in names]


def evacuated_nodes(insts: Sequence[Inst], mode: str) -> frozenset[int]:
    """The nodes the request empties: hail's set for ``primary-only`` and
    ``secondary-only``; for ``all`` the node common to every instance (see the
    module docstring), or hail's set when there is none."""
    primaries = {i.pnode for i in insts}
    secondaries = {i.snode for i in insts if i.mirrored and i.snode != NO_NODE}
    if mode == PRIMARY_ONLY:
        return frozenset(primaries)
    if mode == SECONDARY_ONLY:
        return frozenset(secondaries)
    common: set[int] | None = None
    for inst in insts:
        nodes = {inst.pnode} | ({inst.snode} if inst.mirrored else set())
        common = nodes if common is None else common & nodes
    return frozenset(common or (primaries | secondaries))


def node_evacuate(state: ClusterState, req: NodeEvacuate,
                  options: Options) -> tuple[str, EvacuationResult]:
    """The node-evacuate answer (see the module docstring)."""
    insts = _instances(state, req.instances)
    evacuated = evacuated_nodes(insts, req.evac_mode)
    excluded = evacuated | {i for i, n in enumerate(state.nodes) if n.offline}
    evac = Evacuation(state, options)
    online = {g: state.candidates(g) for g in state.groups}
    for inst in insts:
        current = state.insts[inst.name]
        group = state.nodes[current.pnode].group
        avail = [i for i in online.get(group, ()) if i not in excluded and i != current.pnode]
        evac.record(inst.name, lambda c=current, g=group, a=avail:
                    evac.evacuate_one(c, req.evac_mode, g, a, evacuated))
    return evac.result()


def change_group(state: ClusterState, req: ChangeGroup,
                 options: Options) -> tuple[str, EvacuationResult]:
    """The change-group answer (see the module docstring)."""
    insts = _instances(state, req.instances)
    own = {state.nodes[i.pnode].group for i in insts}
    by_name = {g.name: uuid for uuid, g in state.groups.items()}
    wanted = [by_name.get(g, g) for g in req.target_groups] or list(state.groups)
    targets = [g for g in wanted
               if g not in own and g in state.groups and state.group_positions(g)]
    evac = Evacuation(state, options)
    # hail moves with its default options whatever it was told (nodeEvacInstance
    # defaultOptions); the group is chosen with the request's
    strict = Evacuation(state, replace(options, ignore_soft_errors=False))
    strict._group_stats = evac._group_stats  # one set of running statistics
    allocator = Allocator(state, options)

    def after(changes: dict[int, NodeState]) -> None:
        allocator.redundancy.commit(changes)

    for inst in insts:
        current = state.insts[inst.name]
        evac.record(inst.name, lambda c=current: _change_one(state, allocator, strict, c,
                                                            targets),
                    after if options.capacity_checks else None)
    return evac.result()


def _change_one(state: ClusterState, allocator: Allocator, evac: Evacuation, inst: Inst,
                targets: list[str]) -> tuple[dict[int, NodeState], Inst, list[Step]]:
    """The best move of ``inst`` into one of the ``targets`` groups.

    hail first allocates a copy of the instance in every target group to pick
    one (policy, then score), then moves it there; here the move itself is
    computed in every target group and the best (allocation policy, then
    cluster score after it) that passes the group's policy and, with capacity
    checks, hail's global N+1 check is kept."""
    if inst.template in _NOT_MOVABLE:
        raise _Failure(f"Instances of type {inst.template} cannot be relocated")
    if not targets:
        raise _Failure("no groups for evacuation: no other group to move to")
    lines: list[str] = []
    best: tuple[tuple[int, float], tuple[dict[int, NodeState], Inst, list[Step]]] | None = None
    for uuid in targets:
        group = state.groups[uuid]
        head = f"Group {group.name} ({group.alloc_policy}): "
        avail = state.candidates(uuid)
        if not avail:
            lines.append(head + "error No online nodes")
            continue
        reason = policy_failure(inst, group, state.nodes[avail[0]].excl)
        if reason is not None:
            lines.append(head + f"No valid allocation solutions, failure reasons: {reason}: 1")
            continue
        try:
            if inst.mirrored:
                found = evac.best_pair(inst, uuid, avail)
            else:
                found = evac.best_single(inst, (FAILOVER_TO_ANY,), uuid, avail)
        except _Failure as err:
            lines.append(head + str(err))
            continue
        if (allocator.options.capacity_checks
                and not allocator.redundancy.ok_after(found[0])):
            lines.append(head + "No valid allocation solutions, failure reasons: FailN1: 1")
            continue
        if not group.allocable:
            continue
        key = (_POLICY_RANK.get(group.alloc_policy, 3), state.score_with(found[0]))
        if best is None or key < best[0]:
            best = (key, found)
    if best is None:
        raise _Failure(", ".join(lines))
    return best[1]


_POLICY_RANK = {constants.ALLOC_POLICY_PREFERRED: 0, constants.ALLOC_POLICY_LAST_RESORT: 1}


def _node_evacuate(state: ClusterState, req: NodeEvacuate,
                   options: Options) -> tuple[str, Any]:
    return node_evacuate(state, req, options)


def _change_group(state: ClusterState, req: ChangeGroup, options: Options) -> tuple[str, Any]:
    return change_group(state, req, options)


def _register() -> None:
    from ganeti.core.placement import solve
    solve.register(MODE_NODE_EVAC, _node_evacuate)
    solve.register(MODE_CHG_GROUP, _change_group)


_register()

__all__ = ["ALL", "PRIMARY_ONLY", "SECONDARY_ONLY", "Evacuation", "change_group",
           "evacuated_nodes", "node_evacuate"]
