"""Our two request types beyond Ganeti's protocol: ``capacity`` and ``balance``.

Seed 001 asks for both ("Cluster capacity calculation", "Cluster balancing");
Ganeti never built them, so hail answers either with a failure.  The shapes
are fixed for the whole project (the built-in allocator answers them):

- ``capacity``: how many instances of one specification fit, and where, in
  allocation order, as ``hspace`` computes; ``limit`` is htools' reason the
  next one does not fit (``FailMem``, ``FailDisk``, ...);
- ``balance``: the moves that lower the cluster score, as ``hbal`` computes
  them (``max_moves`` 0: until no move gains ``min_gain``).

The master renders these requests into the version-2 input like Ganeti's own
and checks the answers' shapes here; it never executes a move.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ganeti.core.errors import ResultValidationError
from ganeti.core.placement.model import Cluster, Disk

MODE_CAPACITY = "capacity"
MODE_BALANCE = "balance"
#: hbal's move kinds (``IMove``: what a balance answer may say).
MOVE_KINDS = frozenset({"failover", "replace-primary", "replace-secondary",
                        "replace-and-failover", "failover-and-replace"})


def _invalid(expected: str, result: Any) -> ResultValidationError:
    return ResultValidationError(f"iallocator returned invalid result, expected {expected}, "
                                 f"got {result!r}")


def _node_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) and n for n in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unknown(nodes: list[str], cluster: Cluster) -> None:
    unknown = sorted({n for n in nodes if n not in cluster.nodes})
    if unknown:
        raise ResultValidationError(f"iallocator returned unknown node(s): "
                                    f"{', '.join(unknown)}")


@dataclass(frozen=True)
class CapacityResult:
    """How many instances fit, their nodes in allocation order, and why not one more."""

    count: int
    allocations: tuple[tuple[str, ...], ...]
    limit: str

    def to_wire(self) -> dict[str, Any]:
        """The answer's ``result``."""
        return {"count": self.count, "allocations": [list(a) for a in self.allocations],
                "limit": self.limit}


@dataclass(frozen=True)
class Capacity:
    """How many instances of one specification fit (in ``group``, or anywhere)."""

    MODE: ClassVar[str] = MODE_CAPACITY
    disk_template: str
    memory: int
    vcpus: int
    disks: tuple[Disk, ...] = ()
    spindle_use: int = 1
    nics: tuple[Mapping[str, Any], ...] = ()
    group: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The request dict (common.md's shape)."""
        return {"type": self.MODE, "disk_template": self.disk_template,
                "memory": self.memory, "vcpus": self.vcpus,
                "disks": [{"size": d.size, "mode": d.mode} for d in self.disks],
                "spindle_use": self.spindle_use, "nics": [dict(n) for n in self.nics],
                "group": self.group}

    def check_result(self, result: Any, cluster: Cluster) -> CapacityResult:
        """``{"count", "allocations", "limit"}``, one allocation per counted instance."""
        expected = "an object with count, allocations (lists of node names) and limit"
        if not (isinstance(result, dict) and isinstance(result.get("count"), int)
                and isinstance(result.get("allocations"), list)
                and all(_node_names(a) for a in result["allocations"])
                and isinstance(result.get("limit", ""), str)):
            raise _invalid(expected, result)
        if result["count"] != len(result["allocations"]):
            raise ResultValidationError(f"iallocator returned a count of {result['count']} "
                                        f"with {len(result['allocations'])} allocations")
        _unknown([n for a in result["allocations"] for n in a], cluster)
        return CapacityResult(count=result["count"],
                              allocations=tuple(tuple(a) for a in result["allocations"]),
                              limit=result.get("limit", ""))


@dataclass(frozen=True)
class Move:
    """One balancing move: the instance, its new nodes (primary first), hbal's kind,
    and the cluster score after it."""

    instance: str
    nodes: tuple[str, ...]
    kind: str
    score: float


@dataclass(frozen=True)
class BalanceResult:
    """The scores before and after, and the moves in order."""

    initial_score: float
    final_score: float
    moves: tuple[Move, ...]

    def to_wire(self) -> dict[str, Any]:
        """The answer's ``result``."""
        return {"initial_score": self.initial_score, "final_score": self.final_score,
                "moves": [[m.instance, list(m.nodes), m.kind, m.score] for m in self.moves]}


def _move(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)
            and _node_names(entry[1]) and entry[2] in MOVE_KINDS and _number(entry[3]))


@dataclass(frozen=True)
class Balance:
    """The moves that lower the cluster score (in ``group``, or every group)."""

    MODE: ClassVar[str] = MODE_BALANCE
    max_moves: int = 0
    group: str | None = None
    min_gain: float = 0.0

    def to_wire(self) -> dict[str, Any]:
        """The request dict (common.md's shape)."""
        return {"type": self.MODE, "max_moves": self.max_moves, "group": self.group,
                "min_gain": self.min_gain}

    def check_result(self, result: Any, cluster: Cluster) -> BalanceResult:
        """``{"initial_score", "final_score", "moves"}``; known instances and nodes, and
        no more moves than asked."""
        expected = ("an object with initial_score, final_score and moves "
                    "([instance, [nodes], kind, score])")
        if not (isinstance(result, dict) and _number(result.get("initial_score"))
                and _number(result.get("final_score"))
                and isinstance(result.get("moves"), list)
                and all(_move(m) for m in result["moves"])):
            raise _invalid(expected, result)
        moves = result["moves"]
        if self.max_moves and len(moves) > self.max_moves:
            raise ResultValidationError(f"iallocator returned {len(moves)} moves, at most "
                                        f"{self.max_moves} were asked for")
        unknown = sorted({m[0] for m in moves if m[0] not in cluster.instances})
        if unknown:
            raise ResultValidationError(f"iallocator returned unknown instance(s): "
                                        f"{', '.join(unknown)}")
        _unknown([n for m in moves for n in m[1]], cluster)
        return BalanceResult(initial_score=float(result["initial_score"]),
                             final_score=float(result["final_score"]),
                             moves=tuple(Move(m[0], tuple(m[1]), m[2], float(m[3]))
                                         for m in moves))


__all__ = ["MODE_BALANCE", "MODE_CAPACITY", "MOVE_KINDS", "Balance", "BalanceResult",
           "Capacity", "CapacityResult", "Move"]
