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

from collections.abc import Iterable, Iterator, Mapping

from ganeti.core import constants
from ganeti.core.placement.model import MIRRORED
from ganeti.core.placement.nodestate import NodeState
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

    def _by_free(self, group: str, base: list[int], view: Mapping[int, NodeState],
                 pos: int) -> Iterator[int]:
        """The group's online nodes but ``pos`` by decreasing unallocated memory: the
        changed ones (in ``view``) merged into the others in their base order."""
        nodes = self.state.nodes
        touched = sorted((i for i, n in view.items()
                          if i != pos and n.group == group and not n.offline),
                         key=lambda i: (-view[i].unallocated_mem(), i))
        t = 0
        for i in base:
            if i == pos or i in view:
                continue
            key = (-nodes[i].unallocated_mem(), i)
            while t < len(touched) and (-view[touched[t]].unallocated_mem(), touched[t]) <= key:
                yield touched[t]
                t += 1
            yield i
        yield from touched[t:]

    # -- one node's plan ---------------------------------------------------------------------

    def _plan(self, pos: int, changes: Mapping[int, NodeState]) -> frozenset[int] | None:
        state = self.state
        view: dict[int, NodeState] = dict(changes)

        def node(i: int) -> NodeState:
            return view.get(i) or state.nodes[i]

        failing = node(pos)
        insts = [state.insts.get(name) or state.pending[name] for name in failing.plist]
        targets: set[int] = set()
        mirrored = [i for i in insts if i.template == constants.DT_DRBD8]
        others = [i for i in insts if i.template != constants.DT_DRBD8]
        for inst in mirrored:
            sdx = inst.snode
            if sdx < 0:
                return None
            sec = node(sdx).remove_sec(inst)
            moved = sec.add_pri(inst, force=True)
            if isinstance(moved, str):
                return None
            view[sdx] = moved
            targets.add(sdx)
        movable = [i for i in others if i.template in MOVABLE]
        fixed = sorted((i for i in others if i.template not in MOVABLE),
                       key=lambda i: -i.mem)
        base = self._order.get(failing.group, [])
        for inst in movable + fixed:
            for cand in self._by_free(failing.group, base, view, pos):
                moved = node(cand).add_pri(inst, force=True)
                if not isinstance(moved, str):
                    view[cand] = moved
                    targets.add(cand)
                    break
            else:
                return None
        return frozenset(targets)


__all__ = ["MOVABLE", "Redundancy"]
