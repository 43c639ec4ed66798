"""Scores of every (primary, secondary) pair of a group at once, vectorised.

A drbd allocation considers every ordered pair of distinct online nodes of a
group: hail scores each one (``allocateOnPair``: the cluster statistics
updated for the new primary, then for the new secondary).  The primary's new
figures do not depend on the secondary and, but for one case, the
secondary's do not depend on the primary; so one pass over the nodes gives
each node's components as a new primary and as a new secondary, and numpy
combines them into the G x G score matrix with htools' own incremental
variance formula.  The exception -- a secondary that already holds drbd
instances of that primary, whose reserved memory then sums -- is computed
pair by pair, as is everything when location tags are in play (the
instance's location score then depends on the pair).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ganeti.core.placement import metric
from ganeti.core.placement.nodestate import Inst, NodeState
from ganeti.core.placement.state import ClusterState

#: A primary position that is no node's peer (the secondary's view without one).
_NO_PEER = -2
_NUMERIC = [i for i, t in enumerate(metric.TERMS) if t.kind != metric.MAP]


@dataclass
class PairScores:
    """The score of each (primary, secondary) pair of ``cands`` (``inf``: invalid),
    and the failure reasons of the invalid ones, as hail counts them."""

    cands: list[int]
    scores: np.ndarray
    failures: dict[str, int] = field(default_factory=dict)

    def count(self, reason: str, times: int = 1) -> None:
        """Record ``times`` failures for ``reason``."""
        if times:
            self.failures[reason] = self.failures.get(reason, 0) + times


def _numeric(comps: Sequence[float]) -> list[float]:
    return [float(comps[i]) for i in _NUMERIC]


def pair_scores(state: ClusterState, inst: Inst, cands: list[int], stats: metric.Statistics,
                force: bool, policy: dict[int, str | None]) -> PairScores:
    """Every pair's score over ``stats`` (htools' order of updates: primary, then
    secondary); ``policy`` gives each candidate's policy failure (``None``: fits)."""
    g = len(cands)
    result = PairScores(cands, np.full((g, g), np.inf))
    if g < 2:
        return result
    old: list[NodeState] = [state.nodes[c] for c in cands]
    if any(n.loc_tags for n in old):
        return _scalar(state, inst, cands, stats, force, policy, result)
    prim = [policy[c] or n.add_pri(inst, force) for c, n in zip(cands, old, strict=True)]
    sec = [n.add_sec(inst, _NO_PEER) for n in old]  # strict, as hail's addSec
    oc = np.array([_numeric(n.components()) for n in old])
    pc = oc.copy()
    sc = oc.copy()
    p_ok = np.zeros(g, dtype=bool)
    s_ok = np.zeros(g, dtype=bool)
    for k in range(g):
        p, s = prim[k], sec[k]
        if isinstance(p, NodeState):
            pc[k] = _numeric(p.components())
            p_ok[k] = True
        else:
            result.count(str(p), g - 1)
        if isinstance(s, NodeState):
            sc[k] = _numeric(s.components())
            s_ok[k] = True
    total = _combine(stats, oc[:, None, :], pc[:, None, :], oc[None, :, :], sc[None, :, :])
    valid = p_ok[:, None] & s_ok[None, :]
    np.fill_diagonal(valid, False)
    # secondaries failing, counted once per valid primary (hail's order of checks)
    for j in range(g):
        if not s_ok[j]:
            result.count(str(sec[j]), int(p_ok.sum()) - int(p_ok[j]))
    scores = np.where(valid, total, np.inf)
    # pairs whose secondary already mirrors that primary: its reserved memory sums
    where = {c: i for i, c in enumerate(cands)}
    rows_p: list[int] = []
    rows_s: list[int] = []
    new_s: list[list[float]] = []
    for j, node in enumerate(old):
        for peer in node.peers:
            i = where.get(peer, j)
            if i == j or not p_ok[i]:
                continue
            if not s_ok[j]:
                result.count(str(sec[j]), -1)
            exact = node.add_sec(inst, peer)
            if isinstance(exact, str):
                result.count(exact)
                scores[i, j] = np.inf
                continue
            rows_p.append(i)
            rows_s.append(j)
            new_s.append(_numeric(exact.components()))
    if rows_p:
        ip, js = np.array(rows_p), np.array(rows_s)
        scores[ip, js] = _combine(stats, oc[ip], pc[ip], oc[js], np.array(new_s))
    result.scores = scores
    return result


def _combine(stats: metric.Statistics, old_p: np.ndarray, new_p: np.ndarray,
             old_s: np.ndarray, new_s: np.ndarray) -> np.ndarray:
    """Scores of ``stats`` with a primary's components replaced, then a secondary's
    (htools' ``updateClusterStatisticsTwice``); the arrays broadcast against each
    other, their last axis being the numeric terms."""
    total: np.ndarray | float = 0.0
    for col, t in enumerate(_NUMERIC):
        term = metric.TERMS[t]
        if not term.online:
            total = total + term.weight * stats.value(t)
            continue
        o1, n1, o2, n2 = old_p[..., col], new_p[..., col], old_s[..., col], new_s[..., col]
        d1, d2 = n1 - o1, n2 - o2
        if term.kind == metric.SUM:
            val = stats.sums[t] + d1 + d2
        else:
            n, s_sum, var = stats.count[t], stats.sums[t], stats.var[t]
            var1 = np.maximum(0.0, var + ((n * (n1 * n1 - o1 * o1) - 2 * s_sum * d1)
                                          - d1 * d1) / (n * n))
            if not d2.any():
                val = np.sqrt(var1) + 0 * d2
            else:
                s1 = s_sum + d1
                var2 = var1 + ((n * (n2 * n2 - o2 * o2) - 2 * s1 * d2) - d2 * d2) / (n * n)
                val = np.sqrt(np.maximum(0.0, var2))
        total = total + term.weight * val
    total = total + metric.WEIGHTS[metric.T_LOCATION_EXCLUSION] * stats.value(
        metric.T_LOCATION_EXCLUSION)
    return np.asarray(total)


def _scalar(state: ClusterState, inst: Inst, cands: list[int], stats: metric.Statistics,
            force: bool, policy: dict[int, str | None], result: PairScores) -> PairScores:
    """Pair by pair (location tags make the instance depend on the pair)."""
    for i, p in enumerate(cands):
        for j, s in enumerate(cands):
            if i == j:
                continue
            changes = policy[p] or state.placement(inst, p, s, force)
            if isinstance(changes, str):
                result.count(changes)
            else:
                result.scores[i, j] = state.score_with(changes, stats)
    return result





def numeric_components(node: NodeState) -> np.ndarray:
    """A node's numeric components (every term but the map one), as an array row."""
    return np.array(_numeric(node.components()))


def replacement_scores(stats: metric.Statistics, old: Sequence[NodeState] | np.ndarray,
                       new: Sequence[NodeState] | np.ndarray) -> np.ndarray:
    """The score of ``stats`` with ``old[k]`` replaced by ``new[k]``, for each ``k`` on
    its own (one node changing; no location tags in play), vectorised; ``old`` and
    ``new`` are nodes or rows of :func:`numeric_components`."""
    if not len(old):
        return np.zeros(0)
    oc = old if isinstance(old, np.ndarray) else np.array(
        [_numeric(n.components()) for n in old])
    nc = new if isinstance(new, np.ndarray) else np.array(
        [_numeric(n.components()) for n in new])
    return _combine(stats, oc, nc, oc, oc)
__all__ = ["PairScores", "numeric_components", "pair_scores", "replacement_scores"]
