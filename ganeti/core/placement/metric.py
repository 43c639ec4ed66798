"""htools 3.0.2's cluster score, exactly: the terms, their weights and their statistics.

The score an allocator minimises is the weighted sum of twenty terms (``man
hbal``, "CLUSTER SCORING"; htools' ``Cluster/Metrics.hs``).  Each term
aggregates one number per node -- its *component* -- over either the online
nodes (standard deviations and sums) or the offline ones (two counts):

==========================  ======  ========  ==========================================
term                        weight  kind      per-node component
==========================  ======  ========  ==========================================
free_mem_cv                 0.5     stddev    free memory / total memory
free_disk_cv                0.5     stddev    free disk / total disk (1 without disk)
n1_cnt                      1       sum       instances on a node failing N+1
reserved_mem_cv             1       stddev    memory reserved for failovers / total
offline_all_cnt             4       sum       instances on offline nodes
offline_pri_cnt             16      sum       primary instances on offline nodes
vcpu_ratio_cv               0.5     stddev    vCPUs in use / physical CPUs
cpu_load_cv .. net_load_cv  1 each  stddev    load / pool (unit load per instance)
pri_tags_score              2       sum       primaries sharing an exclusion tag
spindles_cv                 0.5     stddev    spindles in use / spindle limit
*_forth (4 terms)           0.5     stddev    the same, counting forthcoming instances
location_score              1       sum       instances whose two nodes share a location
location_exclusion_score    1       map       same exclusion tag in one location
reserved_mem_rtotal         0.25    sum       reserved memory / total memory
==========================  ======  ========  ==========================================

Nodes are "offline" here as htools counts them: offline, drained or not
vm_capable.  The per-node components are computed by
:class:`ganeti.core.placement.state.NodeState` (``components()``); this module
only aggregates them.

API (stable; the evacuation and balance code builds on it):

* :data:`TERMS` -- the terms in htools' order, :data:`WEIGHTS` their weights,
  :data:`N_TERMS`, and the indices ``T_*`` of the terms code refers to.
* :class:`Statistics` -- the aggregate of every term over a set of nodes:
  ``Statistics.of(online, offline)`` from component vectors,
  ``update(old, new, online)`` to replace one node's vector by another (O(terms),
  htools' own incremental formula), ``values()``, ``score()``, ``copy()``.
* :func:`score_of` -- the score of a ``Statistics`` (the weighted sum).

A component vector is a tuple of :data:`N_TERMS` numbers, except at
:data:`T_LOCATION_EXCLUSION` where it holds a mapping ``{(location, tag): count}``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: A node's component vector (see the module docstring).
Components = Sequence[Any]

STDDEV = "stddev"
SUM = "sum"
MAP = "map"


@dataclass(frozen=True)
class Term:
    """One term: its name (as ``hinfo``/``hbal`` print it), weight, statistic and
    whether it aggregates over online (True) or offline nodes (False)."""

    name: str
    weight: float
    kind: str
    online: bool = True


#: Coefficient of ``reserved_mem_rtotal`` (a constant of htools' metric).
RESERVED_MEM_RTOTAL_COEFF = 0.25

#: The terms, in htools 3.0.2's order (``detailedCVInfoExt``).
TERMS: tuple[Term, ...] = (
    Term("free_mem_cv", 0.5, STDDEV),
    Term("free_disk_cv", 0.5, STDDEV),
    Term("n1_cnt", 1.0, SUM),
    Term("reserved_mem_cv", 1.0, STDDEV),
    Term("offline_all_cnt", 4.0, SUM, online=False),
    Term("offline_pri_cnt", 16.0, SUM, online=False),
    Term("vcpu_ratio_cv", 0.5, STDDEV),
    Term("cpu_load_cv", 1.0, STDDEV),
    Term("mem_load_cv", 1.0, STDDEV),
    Term("disk_load_cv", 1.0, STDDEV),
    Term("net_load_cv", 1.0, STDDEV),
    Term("pri_tags_score", 2.0, SUM),
    Term("spindles_cv", 0.5, STDDEV),
    Term("free_mem_cv_forth", 0.5, STDDEV),
    Term("free_disk_cv_forth", 0.5, STDDEV),
    Term("vcpu_ratio_cv_forth", 0.5, STDDEV),
    Term("spindles_cv_forth", 0.5, STDDEV),
    Term("location_score", 1.0, SUM),
    Term("location_exclusion_score", 1.0, MAP),
    Term("reserved_mem_rtotal", RESERVED_MEM_RTOTAL_COEFF, SUM),
)
N_TERMS = len(TERMS)
WEIGHTS: tuple[float, ...] = tuple(t.weight for t in TERMS)
NAMES: tuple[str, ...] = tuple(t.name for t in TERMS)

(T_FREE_MEM, T_FREE_DISK, T_N1, T_RESERVED_MEM, T_OFFLINE_ALL, T_OFFLINE_PRI, T_VCPU,
 T_CPU_LOAD, T_MEM_LOAD, T_DISK_LOAD, T_NET_LOAD, T_PRI_TAGS, T_SPINDLES, T_FREE_MEM_FORTH,
 T_FREE_DISK_FORTH, T_VCPU_FORTH, T_SPINDLES_FORTH, T_LOCATION, T_LOCATION_EXCLUSION,
 T_RESERVED_MEM_RTOTAL) = range(N_TERMS)


class Statistics:
    """Every term's running aggregate over a set of nodes.

    A standard-deviation term keeps (count, sum, population variance) and is
    updated with htools' formula; a sum term keeps its sum; the map term keeps
    the summed ``{(location, exclusion tag): count}``."""

    __slots__ = ("count", "sums", "var", "pairs")

    def __init__(self) -> None:
        self.count = [0.0] * N_TERMS
        self.sums = [0.0] * N_TERMS
        self.var = [0.0] * N_TERMS
        self.pairs: dict[Any, int] = {}

    @classmethod
    def of(cls, online: Iterable[Components], offline: Iterable[Components]) -> Statistics:
        """The statistics of the online and offline nodes' component vectors."""
        stats = cls()
        on, off = list(online), list(offline)
        for i, term in enumerate(TERMS):
            nodes = on if term.online else off
            if term.kind == MAP:
                for comp in nodes:
                    for key, n in comp[i].items():
                        stats.pairs[key] = stats.pairs.get(key, 0) + n
                continue
            values = [float(c[i]) for c in nodes]
            total = sum(values)
            stats.sums[i] = total
            if term.kind == STDDEV:
                count = float(len(values))
                stats.count[i] = count
                if count:
                    mean = total / count
                    nvar = 0.0
                    for v in values:
                        d = v - mean
                        nvar += d * d
                    stats.var[i] = nvar / count
                else:
                    stats.var[i] = math.nan
        return stats

    def copy(self) -> Statistics:
        """An independent copy."""
        new = Statistics()
        new.count = list(self.count)
        new.sums = list(self.sums)
        new.var = list(self.var)
        new.pairs = dict(self.pairs)
        return new

    def update(self, old: Components, new: Components, online: bool) -> None:
        """Replace one node's contribution ``old`` by ``new`` (htools'
        ``updateStatistics``); ``online`` says which set the node belongs to."""
        for i, term in enumerate(TERMS):
            if term.online != online:
                continue
            if term.kind == STDDEV:
                x, y = float(old[i]), float(new[i])
                if x == y:
                    continue
                n, s = self.count[i], self.sums[i]
                ds = y - x
                dss = y * y - x * x
                dnnvar = (n * dss - 2 * s * ds) - ds * ds
                self.sums[i] = s + ds
                self.var[i] = max(0.0, self.var[i] + dnnvar / (n * n))
            elif term.kind == SUM:
                self.sums[i] += float(new[i]) - float(old[i])
            else:
                _merge(self.pairs, old[i], -1)
                _merge(self.pairs, new[i], 1)

    def value(self, i: int) -> float:
        """The value of term ``i``."""
        kind = TERMS[i].kind
        if kind == STDDEV:
            return math.sqrt(self.var[i]) if self.var[i] == self.var[i] else math.nan
        if kind == SUM:
            return self.sums[i]
        return float(sum(n - 1 for n in self.pairs.values() if n > 0))

    def values(self) -> list[float]:
        """Every term's value, in :data:`TERMS` order."""
        return [self.value(i) for i in range(N_TERMS)]

    def score(self) -> float:
        """The weighted sum of the values."""
        return score_of(self)


def _merge(pairs: dict[Any, int], delta: Mapping[Any, int], sign: int) -> None:
    for key, n in delta.items():
        left = pairs.get(key, 0) + sign * n
        if left:
            pairs[key] = left
        else:
            pairs.pop(key, None)


def score_of(stats: Statistics) -> float:
    """htools' ``compCVfromStats``: the weighted sum of the terms' values."""
    return sum(w * v for w, v in zip(WEIGHTS, stats.values(), strict=True))


def named(values: Sequence[float]) -> dict[str, float]:
    """Term values by name."""
    return dict(zip(NAMES, values, strict=True))


__all__ = ["MAP", "N_TERMS", "NAMES", "RESERVED_MEM_RTOTAL_COEFF", "STDDEV", "SUM", "TERMS",
           "WEIGHTS", "Components", "Statistics", "Term", "named", "score_of",
           "T_CPU_LOAD", "T_DISK_LOAD", "T_FREE_DISK", "T_FREE_DISK_FORTH", "T_FREE_MEM",
           "T_FREE_MEM_FORTH", "T_LOCATION", "T_LOCATION_EXCLUSION", "T_MEM_LOAD", "T_N1",
           "T_NET_LOAD", "T_OFFLINE_ALL", "T_OFFLINE_PRI", "T_PRI_TAGS", "T_RESERVED_MEM",
           "T_RESERVED_MEM_RTOTAL", "T_SPINDLES", "T_SPINDLES_FORTH", "T_VCPU",
           "T_VCPU_FORTH"]
