"""Balancing: the moves that lower htools' cluster score, chosen as hbal chooses them.

hbal's algorithm (``Cluster.hs``: ``tryBalance``, ``checkMove``,
``checkInstanceMove``, ``possibleMoves``): at each step every move of every
movable instance to every online node of its group is tried -- a drbd
instance can fail over, replace its secondary, replace its primary
(failover, new secondary, failover), replace its secondary and fail over, or
fail over and replace its secondary (the last three only when its secondary
is online); an instance on shared storage can migrate to any node; plain, file
and diskless instances are not moved (htools' movable templates) -- and the one
move giving the lowest score is made, if it lowers the score (by at least
``min_gain``).  Steps repeat until no move gains, or ``max_moves`` are made.
Every move passes the node rules
(:func:`~ganeti.core.placement.moves.apply_move`: memory, disk, and unless told
to ignore soft errors the vCPU and spindle ratios, the disk reserve, no node
newly failing N+1).

Speed: a move changes the instance's own nodes (the same way whatever the
target) and one target node, whose new figures depend only on the target and
the instance's size.  Those figures are computed once per (node, instance
shape) and kept until the node changes; every step then scores all moves of
an instance with one vectorised formula, and the best few of the step are
checked and scored again exactly.  Where location or exclusion tags are in
play every move is computed exactly (slower, same result).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from ganeti.core import constants
from ganeti.core.placement import metric
from ganeti.core.placement.allocate import AllocationError, Options
from ganeti.core.placement.moves import (
    FAILOVER,
    FAILOVER_AND_REPLACE,
    FAILOVER_TO_ANY,
    REPLACE_AND_FAILOVER,
    REPLACE_PRIMARY,
    REPLACE_SECONDARY,
    apply_move,
)
from ganeti.core.placement.nodestate import NO_NODE, Inst, NodeState
from ganeti.core.placement.pairs import numeric_components
from ganeti.core.placement.requests import MODE_BALANCE, Balance, BalanceMove, BalanceResult
from ganeti.core.placement.state import ClusterState

#: Templates hbal moves (htools' movableDiskTemplates: not plain or file, nor diskless).
_MOVABLE = frozenset({constants.DT_DRBD8, constants.DT_BLOCK, constants.DT_SHARED_FILE,
                      constants.DT_GLUSTER, constants.DT_RBD, constants.DT_EXT})
#: A peer key no node has: the target's figures without an existing mirror pairing.
_NO_PEER = -2
#: How many of a step's best moves are checked exactly.
_SHORTLIST = 8
_PRI, _SEC = "pri", "sec"


#: The numeric terms aggregated over online nodes, and their kinds and weights.
_ONLINE = [i for i, t in enumerate(metric.TERMS) if t.kind != metric.MAP]
_COLUMN = {t: c for c, t in enumerate(_ONLINE)}
_IS_STD = np.array([metric.TERMS[t].kind == metric.STDDEV and metric.TERMS[t].online
                    for t in _ONLINE])
_IS_SUM = np.array([metric.TERMS[t].kind == metric.SUM and metric.TERMS[t].online
                    for t in _ONLINE])
_W = np.array([metric.TERMS[t].weight for t in _ONLINE])


class _Arrays:
    """A :class:`~ganeti.core.placement.metric.Statistics` as arrays over the numeric
    terms, for htools' incremental update applied to many rows at once."""

    __slots__ = ("n", "s", "var", "const")

    def __init__(self, n: np.ndarray, s: np.ndarray, var: np.ndarray, const: float) -> None:
        self.n, self.s, self.var, self.const = n, s, var, const

    @classmethod
    def of(cls, stats: metric.Statistics) -> _Arrays:
        const = sum(metric.TERMS[t].weight * stats.value(t) for t in _ONLINE
                    if not metric.TERMS[t].online)
        const += metric.WEIGHTS[metric.T_LOCATION_EXCLUSION] * stats.value(
            metric.T_LOCATION_EXCLUSION)
        n = np.array([stats.count[t] or 1.0 for t in _ONLINE])
        return cls(n, np.array([stats.sums[t] for t in _ONLINE]),
                   np.nan_to_num(np.array([stats.var[t] for t in _ONLINE])), const)

    def updated(self, old: np.ndarray, new: np.ndarray) -> _Arrays:
        """With one node's row ``old`` replaced by ``new`` (offline terms untouched:
        balancing moves between online nodes)."""
        d = new - old
        var = np.where(_IS_STD, np.maximum(
            0.0, self.var + ((self.n * (new * new - old * old) - 2 * self.s * d) - d * d)
            / (self.n * self.n)), self.var)
        s = np.where(_IS_STD | _IS_SUM, self.s + d, self.s)
        return _Arrays(self.n, s, var, self.const)

    def scores(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """The score with ``old[k]`` replaced by ``new[k]``, for each row ``k``."""
        d = new - old
        var = self.var + ((self.n * (new * new - old * old) - 2 * self.s * d) - d * d) / (
            self.n * self.n)
        std = np.sqrt(np.maximum(0.0, var))
        values = np.where(_IS_STD, std, np.where(_IS_SUM, self.s + d, 0.0))
        return np.asarray(values @ _W + self.const)


#: For the moves whose target becomes the new secondary: its new primary.
_PEER_OF: dict[str, Callable[[Inst], int]] = {
    REPLACE_SECONDARY: lambda inst: inst.pnode, FAILOVER_AND_REPLACE: lambda inst: inst.snode}


@dataclass(frozen=True)
class _Candidate:
    """A move as ranked: the vectorised score, hbal's order, the move."""

    score: float
    order: tuple[int, int, int]
    instance: str
    kind: str
    target: int


def _shape(inst: Inst, force: bool) -> tuple[object, ...]:
    return (inst.mem, inst.dsk, inst.vcpus, inst.template, inst.run, inst.spindle_use,
            inst.disk_spindles, inst.forthcoming, force)


class _Sides:
    """A node's figures with one more primary or secondary of a given shape, per node,
    kept until the node changes."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        #: (side, shape) -> (rows, validity, positions to recompute)
        self.rows: dict[tuple[object, ...], tuple[np.ndarray, np.ndarray, set[int]]] = {}
        self.old = np.array([numeric_components(node) for node in state.nodes])
        self._old_nodes: list[NodeState] = list(state.nodes)

    def refresh(self, positions: list[int]) -> None:
        """Forget what the nodes at ``positions`` had (they changed)."""
        nodes = self.state.nodes
        for pos in positions:
            if nodes[pos] is not self._old_nodes[pos]:
                self._old_nodes[pos] = nodes[pos]
                self.old[pos] = numeric_components(nodes[pos])
                for _, _, dirty in self.rows.values():
                    dirty.add(pos)

    def side(self, side: str, inst: Inst, force: bool) -> tuple[np.ndarray, np.ndarray]:
        """Rows and validity of every node with ``inst`` added as ``side``."""
        key = (side, *_shape(inst, force))
        entry = self.rows.get(key)
        nodes = self.state.nodes
        if entry is None:
            entry = (np.zeros_like(self.old), np.zeros(len(nodes), dtype=bool),
                     set(range(len(nodes))))
            self.rows[key] = entry
        rows, valid, dirty = entry
        for pos in dirty:
            node = nodes[pos]
            new = node.add_pri(inst, force) if side == _PRI else node.add_sec(
                inst, _NO_PEER, force)
            if isinstance(new, str):
                valid[pos] = False
            else:
                rows[pos] = numeric_components(new)
                valid[pos] = True
        dirty.clear()
        return rows, valid


class Balancer:
    """hbal's greedy balancing on one :class:`ClusterState` (see the module docstring)."""

    def __init__(self, state: ClusterState, options: Options, group: str | None = None) -> None:
        self.state = state
        self.options = options
        self.group = group
        positions = (state.group_positions(group) if group is not None
                     else range(len(state.nodes)))
        self.stats = state.stats_of(positions)
        self.online = {g: state.candidates(g) for g in state.groups}
        if group is not None:
            self.online = {group: self.online.get(group, [])}
        self.exact = any(n.loc_tags or n.p_tags for n in state.nodes) or any(
            i.excl_tags or i.dsrd_loc for i in state.insts.values())
        self.sides = _Sides(state)
        self._fixed_cache: dict[tuple[str, str], tuple[
            tuple[object, ...], tuple[list[tuple[int, np.ndarray]], str, bool] | str]] = {}

    def score(self) -> float:
        """The current score (of the group, or the cluster)."""
        return self.stats.score()

    def _look(self, pos: int) -> NodeState:
        return self.state.nodes[pos]

    def _kinds(self, inst: Inst, targets: set[int]) -> tuple[str, ...]:
        """hbal's ``possibleMoves`` for an instance (no restricted migration)."""
        if inst.template not in _MOVABLE:
            return ()
        if not inst.mirrored:
            return (FAILOVER_TO_ANY,)
        if inst.snode in targets:
            return (REPLACE_SECONDARY, REPLACE_AND_FAILOVER, REPLACE_PRIMARY,
                    FAILOVER_AND_REPLACE)
        return (REPLACE_SECONDARY, REPLACE_AND_FAILOVER)

    def _fixed(self, inst: Inst, kind: str, force: bool
               ) -> tuple[dict[int, NodeState], str, bool] | str:
        """The instance's own nodes after a move of ``kind`` (the target not yet known:
        a new mirror pairing is assumed), the side the target takes, and its force."""
        look = self._look
        p, s = inst.pnode, inst.snode
        old_p = look(p)
        force_p = old_p.offline or force
        if kind == FAILOVER_TO_ANY:
            return {p: old_p.remove_pri(inst)}, _PRI, force_p
        old_s = look(s)
        int_p, int_s = old_p.remove_pri(inst), old_s.remove_sec(inst)
        plain = replace(inst, loc_score=0)
        if kind == REPLACE_SECONDARY:
            new_p = int_p.add_pri(plain, True)
            if isinstance(new_p, str):
                return new_p
            return {p: new_p, s: int_s}, _SEC, old_s.offline or force
        if kind == FAILOVER_AND_REPLACE:
            new_p = int_s.add_pri(plain, force_p)
            if isinstance(new_p, str):
                return new_p
            return {s: new_p, p: int_p}, _SEC, force_p
        if kind == REPLACE_AND_FAILOVER:
            new_s = int_p.add_sec(plain, _NO_PEER, old_s.offline or force)
            if isinstance(new_s, str):
                return new_s
            return {p: new_s, s: int_s}, _PRI, force
        # REPLACE_PRIMARY: the secondary runs it in between, then mirrors the new primary
        tmp = int_s.add_pri(plain, force_p)
        if isinstance(tmp, str):
            return tmp
        new_s = tmp.remove_pri(plain).add_sec(plain, _NO_PEER, force_p)
        if isinstance(new_s, str):
            return new_s
        return {p: int_p, s: new_s}, _PRI, force_p

    def _fixed_rows(self, inst: Inst, kind: str, force: bool
                    ) -> tuple[list[tuple[int, np.ndarray]], str, bool] | str:
        """:meth:`_fixed` as component rows, kept while the instance and its nodes are
        unchanged (most instances, from one step to the next)."""
        nodes = self.state.nodes
        key = (inst.name, kind)
        ident = (inst, nodes[inst.pnode], nodes[inst.snode] if inst.snode != NO_NODE else None)
        cached = self._fixed_cache.get(key)
        if cached is not None and all(a is b for a, b in zip(cached[0], ident, strict=True)):
            return cached[1]
        fixed = self._fixed(inst, kind, force)
        result: tuple[list[tuple[int, np.ndarray]], str, bool] | str
        if isinstance(fixed, str):
            result = fixed
        else:
            changes, side, side_force = fixed
            result = ([(pos, numeric_components(node)) for pos, node in changes.items()],
                      side, side_force)
        self._fixed_cache[key] = (ident, result)
        return result

    def exact_score(self, changes: dict[int, NodeState]) -> float:
        """The score with ``changes`` (only the balanced nodes count)."""
        nodes = self.state.nodes
        own = {pos: node for pos, node in changes.items()
               if self.group is None or nodes[pos].group == self.group}
        return self.state.score_with(own, self.stats)

    def candidates(self) -> list[_Candidate]:
        """Every instance's best moves of this step, ranked."""
        force = self.options.ignore_soft_errors
        self.arrays = _Arrays.of(self.stats)
        found: list[_Candidate] = []
        nodes = self.state.nodes
        for number, inst in enumerate(self.state.insts.values()):
            if inst.pnode == NO_NODE:
                continue
            group = nodes[inst.pnode].group
            online = self.online.get(group)
            if not online:
                continue
            targets = [t for t in online if t != inst.pnode and t != inst.snode]
            target_set = set(online)
            if inst.mirrored and inst.snode in target_set:
                outcome = apply_move(self._look, inst, FAILOVER, NO_NODE, force)
                if not isinstance(outcome, str):
                    found.append(_Candidate(self.exact_score(outcome[0]), (number, 0, 0),
                                            inst.name, FAILOVER, NO_NODE))
            for k, kind in enumerate(self._kinds(inst, target_set)):
                found.extend(self._scored(number, inst, kind, k, targets, force))
        found.sort(key=lambda c: (c.score, c.order))
        return found

    def _exact(self, number: int, inst: Inst, kind: str, k: int, targets: Iterable[int],
               force: bool) -> list[_Candidate]:
        out = []
        for t in targets:
            outcome = apply_move(self._look, inst, kind, t, force)
            if not isinstance(outcome, str):
                out.append(_Candidate(self.exact_score(outcome[0]), (number, t + 1, k),
                                      inst.name, kind, t))
        return out

    def _paired(self, inst: Inst, kind: str, targets: list[int]) -> set[int]:
        """Targets already mirrored with the node the move pairs them with: their figures
        depend on the pairing, so they are computed exactly."""
        nodes = self.state.nodes
        if kind == REPLACE_SECONDARY:
            return {t for t in targets if inst.pnode in nodes[t].peers}
        if kind == FAILOVER_AND_REPLACE:
            return {t for t in targets if inst.snode in nodes[t].peers}
        if kind == REPLACE_AND_FAILOVER:
            return set(nodes[inst.pnode].peers) & set(targets)
        if kind == REPLACE_PRIMARY:
            return set(nodes[inst.snode].peers) & set(targets)
        return set()

    def _scored(self, number: int, inst: Inst, kind: str, k: int, targets: list[int],
                force: bool) -> list[_Candidate]:
        if self.exact:
            return self._exact(number, inst, kind, k, targets, force)
        fixed = self._fixed_rows(inst, kind, force)
        if isinstance(fixed, str) or not targets:
            return []
        paired = self._paired(inst, kind, targets)
        new_rows, side, side_force = fixed
        out: list[_Candidate] = []
        peer = _PEER_OF.get(kind)
        if paired and peer is None:  # the instance's own nodes depend on the target
            out = self._exact(number, inst, kind, k, sorted(paired), force)
        rows, valid = self.sides.side(side, inst, side_force)
        idx = np.array([t for t in targets if t not in paired or peer is not None], dtype=int)
        ok = idx[valid[idx]] if idx.size else idx
        new = rows[ok]
        if peer is not None and paired:  # the target's figures with the real pairing
            nodes = self.state.nodes
            pdx = peer(inst)
            keep = np.ones(ok.size, dtype=bool)
            new = new.copy()
            for i, t in enumerate(ok.tolist()):
                if t in paired:
                    exact = nodes[t].add_sec(inst, pdx, side_force)
                    if isinstance(exact, str):
                        keep[i] = False
                    else:
                        new[i] = numeric_components(exact)
            ok, new = ok[keep], new[keep]
        if not ok.size:
            return out
        arrays = self.arrays
        for pos, row in new_rows:
            arrays = arrays.updated(self.sides.old[pos], row)
        scores = arrays.scores(self.sides.old[ok], new)
        best = int(np.argmin(scores))
        out.append(_Candidate(float(scores[best]), (number, int(ok[best]) + 1, k), inst.name,
                              kind, int(ok[best])))
        return out

    def step(self, current: float, min_gain: float) -> BalanceMove | None:
        """Make the best move of this step, if it gains; the move, or ``None``."""
        force = self.options.ignore_soft_errors
        ranked = self.candidates()
        best: tuple[float, tuple[int, int, int], _Candidate,
                    tuple[dict[int, NodeState], Inst]] | None = None
        for cand in ranked[:_SHORTLIST]:
            inst = self.state.insts[cand.instance]
            outcome = apply_move(self._look, inst, cand.kind, cand.target, force)
            if isinstance(outcome, str):
                continue
            score = self.exact_score(outcome[0])
            if best is None or (score, cand.order) < (best[0], best[1]):
                best = (score, cand.order, cand, outcome)
        if best is None:
            return None
        score, _, cand, (changes, moved) = best
        if not score < current or current - score < min_gain:
            return None
        self.commit(changes, moved)
        nodes = self.state.nodes
        names = tuple(nodes[i].name for i in (moved.pnode, moved.snode) if i != NO_NODE)
        return BalanceMove(cand.instance, names, cand.kind, score)

    def commit(self, changes: dict[int, NodeState], moved: Inst) -> None:
        """Make a move real."""
        nodes = self.state.nodes
        for pos, node in changes.items():
            old = nodes[pos]
            if self.group is None or old.group == self.group:
                self.stats.update(old.components(), node.components(), not old.offline)
        self.state.apply(changes)
        self.state.insts[moved.name] = moved
        self.sides.refresh(list(changes))

    def run(self, max_moves: int, min_gain: float,
            progress: Callable[[BalanceMove], None] | None = None) -> BalanceResult:
        """Steps until no move gains or ``max_moves`` (0: no limit) were made."""
        initial = current = self.score()
        moves: list[BalanceMove] = []
        while not max_moves or len(moves) < max_moves:
            move = self.step(current, min_gain)
            if move is None:
                break
            moves.append(move)
            current = move.score
            if progress is not None:
                progress(move)
        return BalanceResult(initial_score=initial, final_score=current, moves=tuple(moves))


def balance(state: ClusterState, req: Balance, options: Options) -> tuple[str, BalanceResult]:
    """The balance answer: hbal's moves and the scores before and after."""
    group = req.group
    if group is not None and group not in state.groups:
        by_name = {g.name: uuid for uuid, g in state.groups.items()}
        if group not in by_name:
            raise AllocationError(f"Unknown group '{group}'")
        group = by_name[group]
    result = Balancer(state, options, group).run(req.max_moves, req.min_gain)
    info = (f"{len(result.moves)} moves, cluster score improved from "
            f"{result.initial_score:.8f} to {result.final_score:.8f}")
    return info, result


def _register() -> None:
    from ganeti.core.placement import solve
    solve.register(MODE_BALANCE, balance)


_register()

__all__ = ["Balancer", "balance"]
