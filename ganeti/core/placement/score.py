"""The cluster score an allocator minimises: htools' weighted terms (``man hbal``).

A term is a number computed from the model: a spread (the population standard
deviation of a per-node ratio over the online nodes) or a count.  The score is
the weighted sum of :data:`TERMS`; lower is better, 0 is a perfectly even
cluster with nothing at risk.  The terms here are the ones the version-2 input
carries the data for (hbal's "CLUSTER SCORING" list, static terms); the
dynamic-load terms need data collectors and are left out.  Issue 29 tunes the
computation (incremental updates); the definitions stay here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ganeti.core.placement.model import Cluster, Node


def spread(values: Sequence[float]) -> float:
    """Population standard deviation (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _online(cluster: Cluster) -> list[Node]:
    return [n for _, n in sorted(cluster.nodes.items())
            if not n.offline and n.resources is not None]


def reserved_memory(cluster: Cluster, node: str) -> int:
    """Memory ``node`` must keep free to take over, should one primary fail, the running
    instances it is secondary for (htools' ``rMem``: the largest per-primary sum)."""
    by_primary: dict[str, int] = {}
    for inst in cluster.secondaries(node):
        if inst.running:
            by_primary[inst.primary] = by_primary.get(inst.primary, 0) + inst.memory
    return max(by_primary.values(), default=0)


def n1_failures(cluster: Cluster) -> int:
    """Online nodes whose free memory does not cover their reserved memory (N+1 fails)."""
    return sum(1 for n in _online(cluster)
               if n.resources is not None
               and n.resources.free_memory < reserved_memory(cluster, n.name))


def _free_memory(cluster: Cluster, node: Node) -> float:
    res = node.resources
    return _ratio(res.free_memory, res.total_memory) if res else 0.0


def _reserved_memory(cluster: Cluster, node: Node) -> float:
    res = node.resources
    return _ratio(reserved_memory(cluster, node.name), res.total_memory) if res else 0.0


def _free_disk(cluster: Cluster, node: Node) -> float:
    res = node.resources
    return _ratio(res.free_disk, res.total_disk) if res else 0.0


def _vcpu_ratio(cluster: Cluster, node: Node) -> float:
    res = node.resources
    return _ratio(cluster.primary_vcpus(node.name), res.total_cpus) if res else 0.0


def _spindle_use(cluster: Cluster, node: Node) -> float:
    ratio = cluster.group_of(node.name).ipolicy.spindle_ratio
    count = float(node.ndparams.get("spindle_count", 1))
    return _ratio(cluster.primary_spindles(node.name), count * ratio)


def _spread_of(ratio: Callable[[Cluster, Node], float]) -> Callable[[Cluster], float]:
    return lambda cluster: spread([ratio(cluster, n) for n in _online(cluster)])


def _offline_all(cluster: Cluster) -> float:
    gone = {name for name, n in cluster.nodes.items() if n.offline or n.drained}
    return float(sum(1 for i in cluster.instances.values() if gone.intersection(i.nodes)))


def _offline_primaries(cluster: Cluster) -> float:
    gone = {name for name, n in cluster.nodes.items() if n.offline or n.drained}
    return float(sum(1 for i in cluster.instances.values() if i.primary in gone))


@dataclass(frozen=True)
class Term:
    """One term of the score: its name (as hbal reports it), weight and computation."""

    name: str
    weight: float
    compute: Callable[[Cluster], float]


#: The score's terms, in hbal's order.
TERMS: tuple[Term, ...] = (
    Term("free_mem_cv", 1.0, _spread_of(_free_memory)),
    Term("reserved_mem_cv", 1.0, _spread_of(_reserved_memory)),
    Term("free_disk_cv", 1.0, _spread_of(_free_disk)),
    Term("n1_cnt", 1.0, lambda cluster: float(n1_failures(cluster))),
    Term("off_all_cnt", 1.0, _offline_all),
    Term("off_pri_cnt", 1.0, _offline_primaries),
    Term("vcpu_ratio_cv", 1.0, _spread_of(_vcpu_ratio)),
    Term("spindles_cv", 1.0, _spread_of(_spindle_use)),
)


def score_terms(cluster: Cluster, terms: Sequence[Term] = TERMS) -> dict[str, float]:
    """Each term's (unweighted) value, by name."""
    return {term.name: term.compute(cluster) for term in terms}


def score(cluster: Cluster, terms: Sequence[Term] = TERMS) -> float:
    """The weighted sum of the terms: lower is better."""
    return sum(term.weight * term.compute(cluster) for term in terms)


__all__ = ["TERMS", "Term", "n1_failures", "reserved_memory", "score", "score_terms", "spread"]
