"""Hail's global N+1 capacity check, done lazily and incrementally.

htools calls a cluster *redundant* when every node could fail and lose
nothing (``GlobalN1.hs``, ``canEvacuateNode``): its drbd primaries fail over
to their secondaries, its primaries on shared storage move to other nodes of
its group, and the rest (plain, file) are recreated on other nodes of its
group, biggest memory first.  Hail checks this for every candidate of an
allocation by re-planning the whole cluster (N^4 for a drbd allocation).

Here each node's *plan* (where its instances would go) is computed once;
a candidate placement changes only two nodes, so only the plans of those
nodes and of the nodes whose plans used them as targets are recomputed.  A
plan that did not touch the changed nodes is still executable unchanged, so
the answer is exact for the plans this module makes.  Differences from
hail, on purpose: a plan sends each instance to the node of the group with
the most unallocated memory that takes it (hail tries every node and keeps
the best cluster score: same feasibility in practice, at a fraction of the
cost); drained nodes are no targets; and only nodes that were evacuable
before the allocation must stay so (hail refuses every allocation on a
cluster that is already not redundant).

API: ``Redundancy(state, positions)`` plans every node at ``positions``;
``ok_after(changes)`` says whether the nodes evacuable now stay evacuable with
``changes`` applied (nothing changes); ``commit(changes)`` re-plans after
``changes`` were applied to the state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ganeti.core import constants
from ganeti.core.placement.model import MIRRORED
from ganeti.core.placement.nodestate import Inst, NodeState
from ganeti.core.placement.state import ClusterState

#: Templates whose instances can start on another node (htools' diskTemplateMovable).
MOVABLE = MIRRORED - {constants.DT_DRBD8}


class Redundancy:
    """Evacuation plans of a set of nodes (see the module docstring)."""

    def __init__(self, state: ClusterState, positions: Iterable[int]) -> None:
        self.state = state
        self.positions = list(positions)
        self.by_group: dict[str, list[int]] = {}
        for pos in self.positions:
            self.by_group.setdefault(state.nodes[pos].group, []).append(pos)
        self._order: dict[str, list[int]] = {}
        self._sort()
        #: position -> the targets its plan uses, or None when it cannot be evacuated
        self.plans: dict[int, frozenset[int] | None] = {
            pos: self._plan(pos, {}) for pos in self.positions}

    def _sort(self) -> None:
        nodes = self.state.nodes
        for group, members in self.by_group.items():
            online = [i for i in members if not nodes[i].offline]
            self._order[group] = sorted(online, key=lambda i: (-nodes[i].unallocated_mem(), i))

    def _affected(self, changed: Iterable[int]) -> list[int]:
        changed = set(changed)
        return [pos for pos, targets in self.plans.items()
                if targets is not None and (pos in changed or not changed.isdisjoint(targets))]

    def ok_after(self, changes: Mapping[int, NodeState]) -> bool:
        """Whether every node evacuable now stays evacuable with ``changes``."""
        return all(self._plan(pos, changes) is not None for pos in self._affected(changes))

    def commit(self, changes: Iterable[int]) -> None:
        """Re-plan after the nodes at ``changes`` were replaced in the state."""
        changed = set(changes)
        self._sort()
        for pos in self._affected(changed) + [p for p in changed if p in self.plans]:
            self.plans[pos] = self._plan(pos, {})

    # -- one node's plan ---------------------------------------------------------------------

    def _plan(self, pos: int, changes: Mapping[int, NodeState]) -> frozenset[int] | None:
        """The nodes that would take ``pos``'s primaries, or None if some cannot go.

        Only the three limits that bind when soft errors are ignored are tracked,
        per node: unallocated memory, free disk and (exclusive storage) free
        spindles; ``left`` holds the nodes whose figures the plan changed."""
        state = self.state
        nodes = state.nodes
        left: dict[int, list[int]] = {
            i: [n.unallocated_mem(), n.f_dsk, n.f_spindles] for i, n in changes.items()}

        def free(i: int) -> list[int]:
            got = left.get(i)
            if got is None:
                n = nodes[i]
                got = left[i] = [n.unallocated_mem(), n.f_dsk, n.f_spindles]
            return got

        failing = changes.get(pos) or nodes[pos]
        targets: set[int] = set()
        others = []
        for name in failing.plist:
            inst = state.pending.get(name) or state.insts[name]
            if inst.template != constants.DT_DRBD8:
                others.append(inst)
                continue
            # failover: the secondary runs it (its disk space stays where it is)
            sdx = inst.snode
            if sdx < 0:
                return None
            fig = free(sdx)
            if inst.uses_memory:
                fig[0] -= inst.mem
            if fig[0] <= 0 or (inst.local and fig[1] <= 0) or nodes[sdx].offline:
                return None
            targets.add(sdx)
        others.sort(key=lambda i: (i.template not in MOVABLE, -i.mem))
        order = self._order.get(failing.group, [])
        for inst in others:
            cand = self._target(inst, order, pos, left)
            if cand is None:
                return None
            fig = free(cand)
            if inst.uses_memory:
                fig[0] -= inst.mem
            if inst.local:
                fig[1] -= inst.dsk
                total = inst.total_spindles
                fig[2] -= total or 0
            targets.add(cand)
        return frozenset(targets)

    def _target(self, inst: Inst, order: list[int], pos: int,
                left: dict[int, list[int]]) -> int | None:
        """The node with the most unallocated memory that takes ``inst`` (``order``:
        the group by decreasing memory before the plan; a plan only lowers memory)."""
        nodes = self.state.nodes
        need = inst.mem if inst.uses_memory else 0
        best: int | None = None
        best_mem = 0
        for i in order:
            if i == pos:
                continue
            fig = left.get(i)
            if fig is not None:
                if fig[0] > best_mem and self._fits(inst, i, fig, need):
                    best, best_mem = i, fig[0]
                continue
            n = nodes[i]
            fig = [n.unallocated_mem(), n.f_dsk, n.f_spindles]
            if self._fits(inst, i, fig, need):
                return best if best is not None and best_mem >= fig[0] else i
        return best

    def _fits(self, inst: Inst, i: int, fig: list[int], need: int) -> bool:
        if fig[0] - need <= 0:
            return False
        if inst.local:
            if fig[1] - inst.dsk <= 0:
                return False
            if self.state.nodes[i].excl:
                total = inst.total_spindles
                if total is None or fig[2] - total < 0:
                    return False
        return True


__all__ = ["MOVABLE", "Redundancy"]
