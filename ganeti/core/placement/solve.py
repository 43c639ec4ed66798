"""The built-in allocator's entry point: one input in, one answer out.

:func:`answer` builds the :class:`~ganeti.core.placement.state.ClusterState`
of the input and hands the request to the solver registered for its type in
:data:`SOLVERS` (``{request type: solver}``); a type without a solver, or a
request the solver cannot satisfy, gets ``success: false`` and hail's wording
("Request failed: ...").  Other modules add their request types with
:func:`register` (node-evacuate, change-group and balance come from
``evacuate.py`` and ``balance.py``, capacity from ``capacity.py``); the ones
whose modules exist are imported at the end of this module.

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
    MODE_MULTI_ALLOC,
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
    solver = SOLVERS.get(mode)
    if solver is None:
        return failure(f"request type '{mode}' is not supported by this allocator")
    state = ClusterState(ialloc.cluster)
    try:
        info, result = solver(state, ialloc.request, options)
    except AllocationError as err:
        return failure(str(err))
    return wire.Answer(success=True, info=f"Request successful: {info}", result=result)


#: Modules that register further request types, when present.
_EXTENSIONS = ("evacuate", "balance", "capacity")
for _name in _EXTENSIONS:
    try:
        importlib.import_module(f"ganeti.core.placement.{_name}")
    except ModuleNotFoundError as _err:  # not built on this branch
        if _err.name != f"ganeti.core.placement.{_name}":
            raise

__all__ = ["SOLVERS", "Options", "Solver", "answer", "failure", "register"]
