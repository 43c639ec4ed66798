"""The cluster score an allocator minimises, for callers holding a model.

The score is htools 3.0.2's, exactly: :mod:`ganeti.core.placement.metric`
holds the terms and weights, :mod:`ganeti.core.placement.state` computes the
per-node figures as htools' loader does.  This module keeps the model-level
helpers: :func:`score` and :func:`score_terms` of a whole
:class:`~ganeti.core.placement.model.Cluster` (what ``hinfo`` prints for it),
and the N+1 figures of a node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ganeti.core.placement.metric import TERMS, Term
from ganeti.core.placement.model import Cluster
from ganeti.core.placement.state import ClusterState


def spread(values: Sequence[float]) -> float:
    """Population standard deviation (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def reserved_memory(cluster: Cluster, node: str) -> int:
    """Memory ``node`` must keep free to take over, should one primary fail, the
    instances it is secondary for (htools' ``rMem``: the largest per-primary sum
    of the memory of its secondaries that are not offline)."""
    state = ClusterState(cluster)
    return state.nodes[state.index[node]].r_mem


def n1_failures(cluster: Cluster) -> int:
    """Online nodes failing N+1 (htools' ``failN1``)."""
    return sum(1 for n in ClusterState(cluster).nodes if not n.offline and n.fail_n1)


def score_terms(cluster: Cluster) -> dict[str, float]:
    """Each term's (unweighted) value, by htools' name."""
    return ClusterState(cluster).term_values()


def score(cluster: Cluster) -> float:
    """htools' cluster score (the weighted sum of the terms): lower is better."""
    return ClusterState(cluster).score()


__all__ = ["TERMS", "Term", "n1_failures", "reserved_memory", "score", "score_terms", "spread"]
