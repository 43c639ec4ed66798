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
apart (not for a forthcoming instance, which holds no failover memory).
Location tags add a pair term (the locations both nodes share: a
matrix product) and a primary term (exclusion tags already in its locations).
:func:`pair_scores_scalar` does the same pair by pair with the state's own
operations: the reference the tests hold this module to.
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
#: Term -> its column among the numeric ones.
_COL = {t: c for c, t in enumerate(_NUMERIC)}


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
    inst.loc_score = 0  # the pair's shared locations are added below, as a matrix
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
    total = _combine(stats, oc, pc, oc, sc, outer=True)
    valid = p_ok[:, None] & s_ok[None, :]
    np.fill_diagonal(valid, False)
    # secondaries failing, counted once per valid primary (hail's order of checks)
    for j in range(g):
        if not s_ok[j]:
            result.count(str(sec[j]), int(p_ok.sum()) - int(p_ok[j]))
    scores = np.where(valid, total, np.inf)
    # a secondary that already mirrors that primary reserves the sum of both: where
    # that raises its reserved memory, the pair differs from the generic secondary
    # in the N+1 figures only (add_sec's other checks do not depend on the primary)
    sec_mem = inst.mem if inst.online else 0
    where = {c: i for i, c in enumerate(cands)}
    rows_p: list[int] = []
    rows_s: list[int] = []
    rmem: list[int] = []
    for j, node in enumerate(old):
        if not s_ok[j] or inst.forthcoming:  # (a reservation reserves no failover memory)
            continue  # fails for a reason of its own, with any primary
        generic = max(node.r_mem, sec_mem)
        for peer, held in node.peers.items():
            i = where.get(peer, j)
            if i != j and p_ok[i] and held + sec_mem > generic:
                rows_p.append(i)
                rows_s.append(j)
                rmem.append(held + sec_mem)
    if rows_p:
        ip, js = np.array(rows_p), np.array(rows_s)
        new_rmem = np.array(rmem, dtype=float)
        t_mem = np.array([old[j].t_mem for j in rows_s])
        free = np.array([old[j].unallocated_mem() for j in rows_s], dtype=float)
        was_failing = np.array([old[j].fail_n1 for j in rows_s])
        failn1 = free <= new_rmem
        newly = failn1 & ~was_failing  # hail's addSec: FailMem
        result.count("FailMem", int(newly.sum()))
        exact = sc[js].copy()
        n_items = np.array([len(old[j].plist) + len(old[j].slist) + 1 for j in rows_s])
        exact[:, _COL[metric.T_N1]] = np.where(failn1, n_items, 0.0)
        exact[:, _COL[metric.T_RESERVED_MEM]] = new_rmem / t_mem
        exact[:, _COL[metric.T_RESERVED_MEM_RTOTAL]] = new_rmem / t_mem
        scores[ip, js] = np.where(newly, np.inf, _combine(stats, oc[ip], pc[ip], oc[js], exact,
                                                          outer=False))
    if any(n.loc_tags for n in old):
        scores = scores + _locations(stats, inst, old)
    result.scores = scores
    return result


def _locations(stats: metric.Statistics, inst: Inst, old: list[NodeState]) -> np.ndarray:
    """What the locations add to each pair's score: the locations the two nodes
    share (the instance's location score, on the primary) and, per primary, the
    exclusion tags already present in its locations."""
    tags = sorted({t for n in old for t in n.loc_tags})
    where = {t: k for k, t in enumerate(tags)}
    onehot = np.zeros((len(old), len(tags)))
    for i, n in enumerate(old):
        for t in n.loc_tags:
            onehot[i, where[t]] = 1.0
    shared = onehot @ onehot.T
    extra = metric.WEIGHTS[metric.T_LOCATION] * shared
    if inst.excl_tags:
        per_primary = np.zeros(len(old))
        for i, n in enumerate(old):
            counts = dict(stats.pairs)
            for loc in sorted(n.loc_tags):
                for tag in inst.excl_tags:
                    per_primary[i] += 1.0 if counts.get((loc, tag), 0) > 0 else 0.0
                    counts[(loc, tag)] = counts.get((loc, tag), 0) + 1
        extra += metric.WEIGHTS[metric.T_LOCATION_EXCLUSION] * per_primary[:, None]
    return np.asarray(extra)


def _combine(stats: metric.Statistics, old_p: np.ndarray, new_p: np.ndarray,
             old_s: np.ndarray, new_s: np.ndarray, outer: bool = False) -> np.ndarray:
    """Scores of ``stats`` with a primary's components replaced, then a secondary's
    (htools' ``updateClusterStatisticsTwice``).  Rows are nodes, columns the numeric
    terms; ``outer``: every primary with every secondary (a matrix), else row by
    row.  Terms only one side changes are summed per side and broadcast; only the
    terms both change are computed per pair (once for identical columns)."""
    const = 0.0
    row = np.zeros(len(old_p))
    col = np.zeros(len(old_s))
    both: list[tuple[float, np.ndarray]] = []
    seen: list[tuple[tuple[float, float, float], np.ndarray, np.ndarray, np.ndarray]] = []
    for c, t in enumerate(_NUMERIC):
        term = metric.TERMS[t]
        w = term.weight
        if not term.online:
            const += w * stats.value(t)
            continue
        o1, n1, o2, n2 = old_p[:, c], new_p[:, c], old_s[:, c], new_s[:, c]
        d1, d2 = n1 - o1, n2 - o2
        if term.kind == metric.SUM:
            const += w * stats.sums[t]
            row += w * d1
            col += w * d2
            continue
        n, s_sum, var = stats.count[t], stats.sums[t], stats.var[t]
        nz1, nz2 = bool(d1.any()), bool(d2.any())
        if not nz1 and not nz2:
            const += w * stats.value(t)
        elif not nz2:
            row += w * np.sqrt(np.maximum(0.0, var + ((n * (n1 * n1 - o1 * o1) - 2 * s_sum * d1)
                                                      - d1 * d1) / (n * n)))
        elif not nz1:
            col += w * np.sqrt(np.maximum(0.0, var + ((n * (n2 * n2 - o2 * o2) - 2 * s_sum * d2)
                                                      - d2 * d2) / (n * n)))
        else:
            key = (n, s_sum, var)
            for k, a, b, value in seen:
                if k == key and np.array_equal(a, d1) and np.array_equal(b, d2):
                    both.append((w, value))
                    break
            else:
                value = _both(n, s_sum, var, o1, n1, o2, n2, outer)
                seen.append((key, d1, d2, value))
                both.append((w, value))
    const += metric.WEIGHTS[metric.T_LOCATION_EXCLUSION] * stats.value(
        metric.T_LOCATION_EXCLUSION)
    if outer:
        total = np.add.outer(row + const, col)
    else:
        total = row + col + const
    for w, value in both:  # (a value may serve two identical terms: not changed here)
        total += value if w == 1.0 else w * value
    return np.asarray(total)


def _both(n: float, s_sum: float, var: float, o1: np.ndarray, n1: np.ndarray,
          o2: np.ndarray, n2: np.ndarray, outer: bool) -> np.ndarray:
    """A standard deviation after both updates, per pair (htools' formula, twice)."""
    d1, d2 = n1 - o1, n2 - o2
    var1 = np.maximum(0.0, var + ((n * (n1 * n1 - o1 * o1) - 2 * s_sum * d1) - d1 * d1)
                      / (n * n))
    s1 = s_sum + d1
    dss2 = n2 * n2 - o2 * o2
    if not outer:
        var2 = var1 + ((n * dss2 - 2 * s1 * d2) - d2 * d2) / (n * n)
        return np.asarray(np.sqrt(np.maximum(0.0, var2)))
    # var1 + ((n dss2 - 2 s1 d2) - d2^2) / n^2, as few passes over G x G as numpy allows
    out = np.multiply.outer(s1 * (-2.0 / (n * n)), d2)
    out += var1[:, None]
    out += ((n * dss2 - d2 * d2) / (n * n))[None, :]
    np.maximum(out, 0.0, out=out)
    np.sqrt(out, out=out)
    return np.asarray(out)


def pair_scores_scalar(state: ClusterState, inst: Inst, cands: list[int],
                       stats: metric.Statistics, force: bool,
                       policy: dict[int, str | None]) -> PairScores:
    """The same, pair by pair with the state's own operations (the reference the
    vectorised version is tested against; G^2 placements, slow)."""
    g = len(cands)
    result = PairScores(cands, np.full((g, g), np.inf))
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


__all__ = ["PairScores", "numeric_components", "pair_scores", "pair_scores_scalar",
           "replacement_scores"]
