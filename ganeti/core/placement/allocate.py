"""Allocate, relocate and multi-allocate, as hail decides them, faster.

Allocate (hail's ``tryMGAlloc``/``tryGroupAlloc``): each group with online
nodes is tried -- every online node for a one-node instance, every ordered
pair of distinct online nodes for a drbd one -- and a candidate is valid when
the group policy and the node rules allow it (``NodeState.add_pri`` /
``add_sec``: memory, disk, and unless told to ignore soft errors the vCPU and
spindle ratios, the disk reserve and no node newly failing N+1).  The best
valid candidate by htools' score (over the whole cluster, or over the group
when the request names one, as hail scores them) that also keeps the cluster
globally N+1 redundant (:mod:`~ganeti.core.placement.globaln1`, checked on
the best candidates first, lazily) is the group's solution.  Groups are ranked
by allocation policy (preferred, then last_resort; unallocable never) and then
score; the answer's ``info`` is hail's text.

Relocate (``processRelocate``): a new secondary for a drbd instance (a new
primary for a shared-storage one) within its group, away from its current
nodes, the best by the group's score.  Multi-allocate: the instances in
request order, each placed on the state the previous ones left, the ones that
fit placed and the rest named (hail's is all-or-nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ganeti.core import constants
from ganeti.core.placement import metric
from ganeti.core.placement.globaln1 import MOVABLE, Redundancy
from ganeti.core.placement.model import Group
from ganeti.core.placement.nodestate import (
    FAIL_MODES,
    FAIL_N1,
    NO_NODE,
    Inst,
    NodeState,
    policy_failure,
)
from ganeti.core.placement.requests import Allocate, AllocateSecondary, MultiAllocate, Relocate
from ganeti.core.placement.state import ClusterState

if TYPE_CHECKING:
    import numpy as np

#: How many of the best pairs are sorted at a time while looking for one that
#: passes the global N+1 check.
_BATCH = 64


@dataclass(frozen=True)
class Options:
    """How the allocator runs: hail's ``--no-capacity-checks`` and
    ``--ignore-soft-errors``."""

    capacity_checks: bool = True
    ignore_soft_errors: bool = False


class AllocationError(Exception):
    """A request that cannot be answered at all (hail's "Request failed: ...")."""


@dataclass
class Solution:
    """One group's outcome: the best valid nodes (positions) and what it cost."""

    group: Group
    nodes: tuple[int, ...] | None = None
    score: float = 0.0
    changes: dict[int, NodeState] = field(default_factory=dict)
    successes: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    def fail(self, reason: str, times: int = 1) -> None:
        """Count ``times`` failures for ``reason``."""
        if times:
            self.failures[reason] = self.failures.get(reason, 0) + times

    def reasons(self) -> str:
        """``FailMem: 3, FailN1: 1`` in htools' order of failure modes."""
        return ", ".join(f"{mode}: {self.failures[mode]}" for mode in FAIL_MODES
                         if self.failures.get(mode))

    def describe(self, state: ClusterState) -> str:
        """hail's line for the group (``solutionDescription``)."""
        head = f"Group {self.group.name}"
        if self.error is not None:
            return f"{head}: error {self.error}"
        head += f" ({self.group.alloc_policy}): "
        if self.nodes is None:
            return head + "No valid allocation solutions, failure reasons: " + (
                self.reasons() or "unknown reasons")
        total = sum(self.failures.values())
        names = "/".join(state.nodes[i].name for i in self.nodes)
        return head + (f"score: {self.score:.8f}, successes {self.successes}, failures "
                       f"{total} ({self.reasons()}) for node(s) {names}")


#: Allocation policies in hail's order of preference.
_POLICY_RANK = {constants.ALLOC_POLICY_PREFERRED: 0, constants.ALLOC_POLICY_LAST_RESORT: 1,
                constants.ALLOC_POLICY_UNALLOCABLE: 2}


class Allocator:
    """Allocations on one :class:`ClusterState` (which they change when placing)."""

    def __init__(self, state: ClusterState, options: Options | None = None) -> None:
        self.state = state
        self.options = options or Options()
        self._redundancy: Redundancy | None = None

    @property
    def redundancy(self) -> Redundancy:
        """The global N+1 plans of every node, made on first use."""
        if self._redundancy is None:
            self._redundancy = Redundancy(self.state, range(len(self.state.nodes)))
        return self._redundancy

    # -- one group --------------------------------------------------------------------------

    def solve_group(self, inst: Inst, count: int, group: Group, stats: metric.Statistics,
                    restrict: Sequence[str] | None = None) -> Solution:
        """The best valid placement of ``inst`` on ``count`` nodes of ``group``."""
        state = self.state
        sol = Solution(group)
        cands = state.candidates(group.uuid, restrict)
        force = self.options.ignore_soft_errors
        policy = {c: policy_failure(inst, group, state.nodes[c].excl) for c in cands}
        if count == 1:
            if not cands:
                sol.error = "No online nodes"
                return sol
            ranked: list[tuple[float, int, tuple[int, ...], dict[int, NodeState]]] = []
            for c in cands:
                changes = policy[c] or state.placement(inst, c, NO_NODE, force)
                if isinstance(changes, str):
                    sol.fail(changes)
                else:
                    ranked.append((state.score_with(changes, stats), -c, (c,), changes))
            ranked.sort(key=lambda r: (r[0], r[1]))
            return self._pick(inst, sol, ranked)
        if count != 2:
            sol.error = "Unsupported number of nodes, only one or two  supported"
            return sol
        if len(cands) < 2:
            sol.error = "Not enough online nodes"
            return sol
        from ganeti.core.placement.pairs import pair_scores  # numpy: only for pairs

        pairs = pair_scores(state, inst, cands, stats, force, policy)
        for reason, times in pairs.failures.items():
            sol.fail(reason, times)
        return self._pick_pairs(inst, sol, cands, pairs.scores, stats)

    def _pick(self, inst: Inst, sol: Solution,
              ranked: list[tuple[float, int, tuple[int, ...], dict[int, NodeState]]]
              ) -> Solution:
        sol.successes = len(ranked)
        for score, _, nodes, changes in ranked:
            if self._redundant_after(inst, nodes, changes):
                sol.nodes, sol.score, sol.changes = nodes, score, changes
                return sol
            sol.fail(FAIL_N1)
            sol.successes -= 1
        return sol

    def _pick_pairs(self, inst: Inst, sol: Solution, cands: list[int], scores: np.ndarray,
                    stats: metric.Statistics) -> Solution:
        import numpy as np

        g = len(cands)
        flat = scores.ravel()
        finite = np.isfinite(flat)
        total = sol.successes = int(finite.sum())
        force = self.options.ignore_soft_errors
        tried = 0
        while tried < total:
            # the next best ones (all pairs tied with the last), best first; ties as
            # hail breaks them (the later primary, then the later secondary)
            want = min(tried + _BATCH, total)
            masked = np.where(finite, flat, np.inf)
            limit = np.partition(masked, want - 1)[want - 1]
            batch = np.flatnonzero(finite & (flat <= limit))
            batch = batch[np.lexsort((-batch, flat[batch]))][tried:]
            for k in batch:
                p, s = cands[int(k) // g], cands[int(k) % g]
                changes = self.state.placement(inst, p, s, force)
                if isinstance(changes, str):  # pragma: no cover - scored as valid
                    continue
                if self._redundant_after(inst, (p, s), changes):
                    sol.nodes, sol.changes = (p, s), changes
                    sol.score = self.state.score_with(changes, stats)
                    return sol
                sol.fail(FAIL_N1)
                sol.successes -= 1
            tried += len(batch)
            if not len(batch):  # pragma: no cover - defensive
                break
        return sol

    def _redundant_after(self, inst: Inst, nodes: tuple[int, ...],
                         changes: dict[int, NodeState]) -> bool:
        if not self.options.capacity_checks:
            return True
        # the plans read the instance being tried from the state's pending ones
        self.state.pending[inst.name] = replace(
            inst, pnode=nodes[0], snode=nodes[1] if len(nodes) > 1 else NO_NODE)
        return self.redundancy.ok_after(changes)

    # -- requests ---------------------------------------------------------------------------

    def allocate(self, req: Allocate) -> tuple[Solution, list[str]]:
        """The chosen group's solution and hail's info lines; ``AllocationError``
        (with hail's text) when no group has one."""
        state = self.state
        inst = state.inst_from_request(req)
        count = req.required_nodes
        restrict = req.restrict_to_nodes
        if req.group_name is not None:
            group = next((g for g in state.groups.values() if g.name == req.group_name), None)
            if group is None:
                raise AllocationError(f"Unknown group '{req.group_name}'")
            stats = state.stats_of(state.group_positions(group.uuid))
            sol = self.solve_group(inst, count, group, stats, restrict)
            line = sol.describe(state)
            if sol.nodes is None:
                raise AllocationError(line)
            return sol, [line]
        used = [uuid for uuid in state.groups if state.group_positions(uuid)]
        lines: list[str] = []
        sols: list[Solution] = []
        networks = [n.get("network") for n in req.nics if n.get("network")]
        for uuid in used:
            group = state.groups[uuid]
            if any(net not in group.networks for net in networks):
                lines.append(f"group {group.name} is not connected to a network required "
                             f"by instance {req.name}")
                continue
            sol = self.solve_group(inst, count, group, state.stats, restrict)
            sols.append(sol)
        lines.extend(sol.describe(state) for sol in sols)
        good = [s for s in sols if s.nodes is not None and s.group.allocable]
        if not good:
            raise AllocationError(", ".join(lines))
        good.sort(key=lambda s: (_POLICY_RANK.get(s.group.alloc_policy, 3), s.score))
        best = good[0]
        return best, [f"Selected group: {best.group.name}", *lines]

    def commit(self, inst: Inst, sol: Solution) -> None:
        """Place ``inst`` as ``sol`` says and keep the N+1 plans current."""
        assert sol.nodes is not None
        pdx = sol.nodes[0]
        sdx = sol.nodes[1] if len(sol.nodes) > 1 else NO_NODE
        reason = self.state.place(inst, pdx, sdx, force=True)
        if reason is not None:  # pragma: no cover - the solution was checked
            raise AllocationError(f"internal error placing {inst.name}: {reason}")
        if self._redundancy is not None:
            self._redundancy.commit(sol.nodes)

    def multi_allocate(self, req: MultiAllocate
                       ) -> tuple[list[tuple[str, tuple[str, ...]]], list[str], list[str]]:
        """Placed (name, nodes) in request order, failed names, and their reasons."""
        placed: list[tuple[str, tuple[str, ...]]] = []
        failed: list[str] = []
        reasons: list[str] = []
        for entry in req.instances:
            try:
                sol, _ = self.allocate(entry)
            except AllocationError as err:
                failed.append(entry.name)
                reasons.append(f"{entry.name}: {err}")
                continue
            inst = self.state.inst_from_request(entry)
            self.commit(inst, sol)
            placed.append((entry.name, tuple(self.state.nodes[i].name
                                             for i in sol.nodes or ())))
        return placed, failed, reasons

    def allocate_secondary(self, req: AllocateSecondary) -> tuple[str, str]:
        """A secondary for a plain instance becoming drbd (hail's
        ``tryAllocateSecondary``): hail's info line and the node's name."""
        state = self.state
        inst = state.insts.get(req.name)
        if inst is None:
            raise AllocationError(f"Unknown instance '{req.name}'")
        if inst.snode != NO_NODE:
            raise AllocationError("Instance already has a secondary")
        pdx = inst.pnode
        group = state.groups[state.nodes[pdx].group]
        state.remove(inst.name)
        drbd = replace(inst, template=constants.DT_DRBD8, pnode=NO_NODE, snode=NO_NODE)
        sol = Solution(group)
        force = self.options.ignore_soft_errors
        ranked: list[tuple[float, int, tuple[int, ...], dict[int, NodeState]]] = []
        for sdx in state.group_positions(group.uuid):
            if sdx == pdx:
                continue
            changes = (policy_failure(drbd, group, state.nodes[pdx].excl)
                       or state.placement(drbd, pdx, sdx, force))
            if isinstance(changes, str):
                sol.fail(changes)
            else:
                ranked.append((state.score_with(changes), -sdx, (pdx, sdx), changes))
        ranked.sort(key=lambda r: (r[0], r[1]))
        self._pick(drbd, sol, ranked)
        line = sol.describe(state).split(": ", 1)[1]  # hail: no group prefix here
        if sol.nodes is None:
            raise AllocationError(line)
        return line, state.nodes[sol.nodes[1]].name

    def relocate(self, req: Relocate) -> str:
        """The new node for the instance (hail's ``processRelocate``)."""
        state = self.state
        inst = state.insts.get(req.name)
        if inst is None:
            raise AllocationError(f"Unknown instance '{req.name}'")
        if req.required_nodes != 1:
            raise AllocationError(f"Exchange {req.required_nodes} nodes mode is not "
                                  f"implemented")
        if inst.mirrored:
            old, kind = inst.snode, "secondary"
        elif inst.template in MOVABLE:
            old, kind = inst.pnode, "primary"
        else:
            raise AllocationError("Can't relocate non-mirrored instances")
        if [state.nodes[old].name] != list(req.relocate_from):
            raise AllocationError(
                f"Unsupported request: excluded nodes not equal to instance's {kind}("
                f"{state.nodes[old].name} versus {', '.join(req.relocate_from)})")
        pnode = state.nodes[inst.pnode]
        group = state.groups[pnode.group]
        stats = state.stats_of(state.group_positions(group.uuid))
        excluded = {inst.pnode, old, *(state.index[n] for n in req.relocate_from
                                       if n in state.index)}
        force = self.options.ignore_soft_errors or state.nodes[old].offline
        best: tuple[float, int, dict[int, NodeState]] | None = None
        messages = []
        for cand in state.candidates(group.uuid):
            if cand in excluded:
                continue
            target = state.nodes[cand]
            if inst.mirrored:
                new = target.add_sec(inst, inst.pnode, force)
                changes = {old: state.nodes[old].remove_sec(inst)}
            else:
                new = policy_failure(inst, group, target.excl) or target.add_pri(inst, force)
                changes = {old: state.nodes[old].remove_pri(inst)}
            if isinstance(new, str):
                messages.append(f" Node {target.name} failed: {new};")
                continue
            changes[cand] = new
            score = state.score_with(changes, stats)
            if best is None or not best[0] < score:
                best = (score, cand, changes)
        if best is None:
            raise AllocationError("Can't find any good node:" + "".join(messages))
        return state.nodes[best[1]].name


__all__ = ["AllocationError", "Allocator", "Options", "Solution"]
