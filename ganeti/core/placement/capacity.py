"""How many more instances of one spec the cluster takes, and where (``hspace``).

The ``capacity`` request (our extension of the protocol) is answered as htools
3.0.2's ``hspace`` runs its standard (fixed-size) allocation
(``Cluster.iterateAlloc``, which gives exactly what ``iterateAllocSmallStep``
gives): instances of the spec, named ``new-0``, ``new-1``, ..., are placed one
after another, each on the best valid node (or drbd pair) of the whole cluster
by htools' score, on the state the previous ones left, until none fits.  The
answer is the count, each allocation's nodes in order, and the most frequent
reason the next one failed over every candidate (htools' ``FailMem``,
``FailDisk``, ``FailCPU``, ``FailN1``, ...; ties in htools' order of failure
modes), as hspace's "most likely failure reason".

As hspace: candidates are the online nodes of the allocable groups (or of the
request's group), a drbd pair lies in one group, the global N+1 check applies
to templates other than drbd (``--no-capacity-checks`` turns it off), and a
cluster with a node already failing N+1, or (with the check) a node whose
instances could not move elsewhere, takes nothing (``FailN1``).  Unlike
hspace the spec's disk takes the space Ganeti really uses on the nodes (drbd
metadata included); hspace counts the bare disk size.

The search for each instance is the allocation engine's
(:meth:`~ganeti.core.placement.allocate.Allocator.solve_group`, drbd pairs
scored at once); this module only iterates it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ganeti.core import constants
from ganeti.core.placement.allocate import AllocationError, Allocator, Options, Solution
from ganeti.core.placement.model import Group
from ganeti.core.placement.nodestate import FAIL_MODES, FAIL_N1, Inst
from ganeti.core.placement.requests import MODE_CAPACITY, Capacity, CapacityResult
from ganeti.core.placement.solve import register
from ganeti.core.placement.state import ClusterState


def _groups(state: ClusterState, req: Capacity) -> list[Group]:
    """The groups instances may go to: the request's, or every allocable one."""
    if req.group is not None:
        group = state.groups.get(req.group)
        if group is None:
            group = next((g for g in state.groups.values() if g.name == req.group), None)
        if group is None:
            raise AllocationError(f"Unknown group '{req.group}'")
        return [group]
    return [g for g in state.groups.values() if g.allocable and state.group_positions(g.uuid)]


def _spec(state: ClusterState, req: Capacity, k: int) -> Inst:
    return state.make_inst(f"new-{k}", req.memory, req.vcpus, req.disk_template,
                           req.disk_space_total, [d.size for d in req.disks],
                           [d.spindles for d in req.disks], req.spindle_use, ())


def limit_reason(failures: Iterable[dict[str, int]]) -> str:
    """The most frequent failure mode (ties: htools' order), as hspace's
    ``failureReason``; ``FailMem`` when nothing failed (hspace's first mode)."""
    total = dict.fromkeys(FAIL_MODES, 0)
    for counts in failures:
        for mode, n in counts.items():
            total[mode] = total.get(mode, 0) + n
    return max(FAIL_MODES, key=lambda mode: (total[mode], -FAIL_MODES.index(mode)))


def _best(solutions: list[Solution]) -> Solution | None:
    """The lowest score; on a tie the later group, as hspace's fold keeps it."""
    best: Solution | None = None
    for sol in solutions:
        if sol.nodes is not None and (best is None or not best.score < sol.score):
            best = sol
    return best


def capacity(state: ClusterState, req: Capacity, options: Options | None = None,
             max_count: int | None = None) -> CapacityResult:
    """Fill ``state`` with instances of the spec (it changes) and say how many fit."""
    options = options or Options()
    if req.disk_template == constants.DT_DRBD8:  # hspace checks N+1 only for the others
        options = Options(capacity_checks=False,
                          ignore_soft_errors=options.ignore_soft_errors)
    groups = _groups(state, req)
    if not groups:
        raise AllocationError("No online nodes")
    uuids = {g.uuid for g in groups}
    if any(n.fail_n1 and not n.offline and n.group in uuids for n in state.nodes):
        return CapacityResult(count=0, allocations=(), limit=FAIL_N1)
    allocator = Allocator(state, options)
    if options.capacity_checks and any(
            plan is None for pos, plan in allocator.redundancy.plans.items()
            if state.nodes[pos].group in uuids):
        return CapacityResult(count=0, allocations=(), limit=FAIL_N1)  # hspace: no group
    count = req.required_nodes
    allocations: list[tuple[str, ...]] = []
    while max_count is None or len(allocations) < max_count:
        inst = _spec(state, req, len(allocations))
        solutions = [allocator.solve_group(inst, count, g, state.stats) for g in groups]
        best = _best(solutions)
        if best is None:
            errors = [s.error for s in solutions if s.error is not None]
            if len(errors) == len(solutions) and errors:
                raise AllocationError(errors[0])
            return CapacityResult(count=len(allocations), allocations=tuple(allocations),
                                  limit=limit_reason(s.failures for s in solutions))
        allocator.commit(inst, best)
        allocations.append(tuple(state.nodes[i].name for i in best.nodes or ()))
    return CapacityResult(count=len(allocations), allocations=tuple(allocations),
                          limit="")


def _solve(state: ClusterState, req: Capacity, options: Options) -> tuple[str, CapacityResult]:
    result = capacity(state, req, options)
    return (f"{result.count} instances of the spec fit; the next fails: {result.limit}",
            result)


register(MODE_CAPACITY, _solve)

__all__ = ["capacity", "limit_reason"]
