"""The built-in allocator's entry point: one input in, one answer out.

:func:`answer` builds the :class:`~ganeti.core.placement.state.ClusterState`
of the input and hands the request to the solver registered for its type in
:data:`SOLVERS` (``{request type: solver}``); a type without a solver, or a
request the solver cannot satisfy, gets ``success: false`` and hail's wording
("Request failed: ...").  Other modules add their request types with
:func:`register` (node-evacuate, change-group and balance come from
``evacuate.py`` and ``balance.py``, capacity from ``capacity.py``); the ones
modules are imported the first time a request needs them (:data:`LAZY_SOLVERS`).

A solver is ``solver(state, request, options) -> (info, result)`` and raises
:class:`~ganeti.core.placement.allocate.AllocationError` with the failure text.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ganeti.core.placement import wire
from ganeti.core.placement.allocate import AllocationError, Allocator, Options
from ganeti.core.placement.requests import (
    MODE_ALLOC,
    MODE_ALLOC_SECONDARY,
    MODE_BALANCE,
    MODE_CAPACITY,
    MODE_CHG_GROUP,
    MODE_MULTI_ALLOC,
    MODE_NODE_EVAC,
    MODE_RELOC,
    Allocate,
    AllocateSecondary,
    MultiAllocate,
    MultiAllocationResult,
    Relocate,
)
from ganeti.core.placement.state import ClusterState

Solver = Callable[[ClusterState, Any, Options], tuple[str, Any]]

#: Request type (its wire name) -> solver.
SOLVERS: dict[str, Solver] = {}


def register(mode: str, solver: Solver) -> None:
    """Make ``solver`` answer requests of type ``mode``."""
    SOLVERS[mode] = solver


def _allocate(state: ClusterState, req: Allocate, options: Options) -> tuple[str, Any]:
    sol, lines = Allocator(state, options).allocate(req)
    return ", ".join(lines), [state.nodes[i].name for i in sol.nodes or ()]


def _allocate_secondary(state: ClusterState, req: AllocateSecondary,
                        options: Options) -> tuple[str, Any]:
    return Allocator(state, options).allocate_secondary(req)


def _multi_allocate(state: ClusterState, req: MultiAllocate,
                    options: Options) -> tuple[str, Any]:
    placed, failed, _ = Allocator(state, options).multi_allocate(req)
    info = (f"{len(failed)} instances failed to allocate and {len(placed)} were "
            f"allocated successfully")
    return info, MultiAllocationResult(placed=tuple(placed), failed=tuple(failed))


def _relocate(state: ClusterState, req: Relocate, options: Options) -> tuple[str, Any]:
    return "success", [Allocator(state, options).relocate(req)]


register(MODE_ALLOC, _allocate)
register(MODE_ALLOC_SECONDARY, _allocate_secondary)
register(MODE_MULTI_ALLOC, _multi_allocate)
register(MODE_RELOC, _relocate)


def failure(info: str) -> wire.Answer:
    """A failed answer in hail's wording."""
    return wire.Answer(success=False, info=f"Request failed: {info}", result=[])


def answer(ialloc: wire.AllocatorInput, options: Options | None = None) -> wire.Answer:
    """The answer to one parsed input (default options: hail's defaults)."""
    options = options or Options()
    mode = type(ialloc.request).MODE
    solver = solver_for(mode)
    if solver is None:
        return failure(f"request type '{mode}' is not supported by this allocator")
    state = ClusterState(ialloc.cluster)
    try:
        info, result = solver(state, ialloc.request, options)
    except AllocationError as err:
        return failure(str(err))
    return wire.Answer(success=True, info=f"Request successful: {info}", result=result)


#: Request types whose solvers live in other modules, imported (and so registered)
#: on first use: a plain allocation does not pay for importing evacuation, balance
#: and capacity.
LAZY_SOLVERS: dict[str, str] = {
    MODE_NODE_EVAC: "evacuate", MODE_CHG_GROUP: "evacuate", MODE_BALANCE: "balance",
    MODE_CAPACITY: "capacity"}


def solver_for(mode: str) -> Solver | None:
    """The solver of request type ``mode`` (importing its module first if needed)."""
    if mode not in SOLVERS and mode in LAZY_SOLVERS:
        importlib.import_module(f"ganeti.core.placement.{LAZY_SOLVERS[mode]}")
    return SOLVERS.get(mode)


__all__ = ["LAZY_SOLVERS", "SOLVERS", "Options", "Solver", "answer", "failure", "register",
           "solver_for"]
