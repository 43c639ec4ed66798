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
    sec = [n.add_sec(inst, _NO_PEER, force) for n in old]
    oc = np.array([_numeric(n.components()) for n in old])
    pc = oc.copy()
    sc = oc.copy()
    p_ok = np.zeros(g, dtype=bool)
    s_ok = np.zeros(g, dtype=bool)
    for i in range(g):
        p, s = prim[i], sec[i]
        if isinstance(p, NodeState):
            pc[i] = _numeric(p.components())
            p_ok[i] = True
        else:
            result.count(str(p), g - 1)
        if isinstance(s, NodeState):
            sc[i] = _numeric(s.components())
            s_ok[i] = True
    total = np.zeros((g, g))
    for col, t in enumerate(_NUMERIC):
        term = metric.TERMS[t]
        if not term.online:
            total += term.weight * stats.value(t)
            continue
        d1 = pc[:, col] - oc[:, col]
        d2 = sc[:, col] - oc[:, col]
        if term.kind == metric.SUM:
            val = stats.sums[t] + d1[:, None] + d2[None, :]
        else:
            n, s_sum, var = stats.count[t], stats.sums[t], stats.var[t]
            dss1 = pc[:, col] ** 2 - oc[:, col] ** 2
            var1 = np.maximum(0.0, var + ((n * dss1 - 2 * s_sum * d1) - d1 * d1) / (n * n))
            if not d2.any():
                val = np.sqrt(var1)[:, None]
            else:
                s1 = s_sum + d1
                dss2 = sc[:, col] ** 2 - oc[:, col] ** 2
                var2 = var1[:, None] + ((n * dss2[None, :] - 2 * s1[:, None] * d2[None, :])
                                        - (d2 * d2)[None, :]) / (n * n)
                val = np.sqrt(np.maximum(0.0, var2))
        total += term.weight * val
    total += metric.WEIGHTS[metric.T_LOCATION_EXCLUSION] * stats.value(
        metric.T_LOCATION_EXCLUSION)
    valid = p_ok[:, None] & s_ok[None, :]
    np.fill_diagonal(valid, False)
    # secondaries failing, counted once per valid primary (hail's order of checks)
    for j in range(g):
        if not s_ok[j]:
            result.count(str(sec[j]), int(p_ok.sum()) - int(p_ok[j]))
    scores = np.where(valid, total, np.inf)
    # pairs whose secondary already mirrors that primary: exact, one by one
    where = {c: i for i, c in enumerate(cands)}
    for j, node in enumerate(old):
        for peer in node.peers:
            found = where.get(peer)
            if found is None or found == j or not p_ok[found]:
                continue
            i = found
            if not s_ok[j]:
                result.count(str(sec[j]), -1)
            changes = state.placement(inst, cands[i], cands[j], force)
            if isinstance(changes, str):
                result.count(changes)
                scores[i, j] = np.inf
            else:
                scores[i, j] = state.score_with(changes, stats)
    result.scores = scores
    return result


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


__all__ = ["PairScores", "pair_scores"]
