"""The requests of Ganeti's iallocator protocol, and the result each one answers with.

One frozen dataclass per request type (seed 002, "Operation-specific input"),
each with its wire name (``MODE``), ``to_wire``/``from_wire`` for the
``request`` dict of the version-2 input, and ``check_result``: the allocator's
``result`` checked against Ganeti's result shape for that type
(``masterd/iallocator.py``'s ``REQ_RESULT`` and ``ValidateResult``), returned
typed.  :data:`REQUEST_TYPES` maps a wire name to its class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from ganeti.core.errors import ResultValidationError
from ganeti.core.placement.model import Cluster, Disk, disk_space, required_nodes
from ganeti.core.placement.shapes import (
    CAPACITY_RESULT,
    EVAC_MODES,
    EVAC_RESULT,
    MULTI_ALLOC_RESULT,
    NODE_LIST,
    STRING,
    Shape,
    as_bool,
    as_float,
    as_int,
    as_str,
    as_str_list,
    bad,
    get,
)

MODE_ALLOC = "allocate"
MODE_ALLOC_SECONDARY = "allocate-secondary"
MODE_MULTI_ALLOC = "multi-allocate"
MODE_RELOC = "relocate"
MODE_NODE_EVAC = "node-evacuate"
MODE_CHG_GROUP = "change-group"
MODE_BALANCE = "balance"

#: hbal's move kinds, as a balance answer names them.
MOVE_KINDS = frozenset({"failover", "failover-to-any", "replace-primary", "replace-secondary",
                        "replace-and-failover", "failover-and-replace"})
#: Our extension: how many instances of one spec fit, and where (as ``hspace``).
MODE_CAPACITY = "capacity"


@dataclass(frozen=True)
class Moved:
    """An instance an evacuation or group change moves: its new group and nodes."""

    instance: str
    group: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class EvacuationResult:
    """A node-evacuate or change-group answer: what moves, what cannot, and the jobs."""

    moved: tuple[Moved, ...]
    failed: tuple[tuple[str, str | None], ...]
    jobs: tuple[tuple[Mapping[str, Any], ...], ...]

    def to_wire(self) -> list[Any]:
        """``[moved, failed, jobs]`` as Ganeti's result."""
        return [[[m.instance, m.group, list(m.nodes)] for m in self.moved],
                [[name, reason] for name, reason in self.failed],
                [[dict(op) for op in job] for job in self.jobs]]


@dataclass(frozen=True)
class MultiAllocationResult:
    """A multi-allocate answer: the instances placed (with their nodes) and the rest."""

    placed: tuple[tuple[str, tuple[str, ...]], ...]
    failed: tuple[str, ...]

    def to_wire(self) -> list[Any]:
        """``[[[name, nodes], ...], [name, ...]]`` as Ganeti's result."""
        return [[[name, list(nodes)] for name, nodes in self.placed], list(self.failed)]


class Request(Protocol):
    """What every request type offers."""

    MODE: ClassVar[str]

    def to_wire(self) -> dict[str, Any]:
        """The ``request`` dict of the input, ``type`` included."""

    def check_result(self, result: Any, cluster: Cluster) -> Any:
        """The allocator's ``result``, checked and typed; ``ResultValidationError`` if not."""


def _invalid(shape: Shape, result: Any) -> ResultValidationError:
    return ResultValidationError(f"iallocator returned invalid result, expected "
                                 f"{shape.description}, got {result!r}")


def _checked(shape: Shape, result: Any) -> Any:
    if not shape.check(result):
        raise _invalid(shape, result)
    return result


def _known_nodes(nodes: Sequence[str], cluster: Cluster) -> tuple[str, ...]:
    unknown = [n for n in nodes if n not in cluster.nodes]
    if unknown:
        raise ResultValidationError(f"iallocator returned unknown node(s): "
                                    f"{', '.join(unknown)}")
    return tuple(nodes)


@dataclass(frozen=True)
class Allocate:
    """Place a new instance (``allocate``); the answer is its nodes, primary first."""

    MODE: ClassVar[str] = MODE_ALLOC
    name: str
    memory: int
    vcpus: int
    disk_template: str
    disks: tuple[Disk, ...] = ()
    nics: tuple[Mapping[str, Any], ...] = ()
    os: str = ""
    hypervisor: str = ""
    tags: tuple[str, ...] = ()
    spindle_use: int = 1
    group_name: str | None = None
    restrict_to_nodes: tuple[str, ...] | None = None
    #: Computed by the master (Ganeti's advice: allocators should not derive them).
    required_nodes: int = field(default=0)
    disk_space_total: int = field(default=-1)
    #: Place a reservation (htools 3.0.2 reads the key; Ganeti's master never sends it).
    forthcoming: bool = False

    def __post_init__(self) -> None:
        # Ganeti gives every disk of the request the instance's template as its type
        object.__setattr__(self, "disks", tuple(
            d if d.dev_type else replace(d, dev_type=self.disk_template) for d in self.disks))
        if not self.required_nodes:
            object.__setattr__(self, "required_nodes", required_nodes(self.disk_template))
        if self.disk_space_total < 0:
            object.__setattr__(self, "disk_space_total", disk_space(
                (self.disk_template, d.size) for d in self.disks))

    def to_wire(self) -> dict[str, Any]:
        """Ganeti's keys, in Ganeti's order."""
        out: dict[str, Any] = {
            "name": self.name, "disk_template": self.disk_template,
            "group_name": self.group_name, "tags": list(self.tags), "os": self.os,
            "vcpus": self.vcpus, "memory": self.memory, "spindle_use": self.spindle_use,
            "disks": [{"size": d.size, "mode": d.mode, "dev_type": d.dev_type,
                       **({} if d.spindles is None else {"spindles": d.spindles})}
                      for d in self.disks],
            "disk_space_total": self.disk_space_total,
            "nics": [dict(n) for n in self.nics],
            "required_nodes": self.required_nodes, "hypervisor": self.hypervisor,
            "type": self.MODE}
        if self.restrict_to_nodes is not None:
            out["restrict-to-nodes"] = list(self.restrict_to_nodes)
        if self.forthcoming:
            out["forthcoming"] = True
        return out

    @classmethod
    def from_wire(cls, data: Mapping[str, Any], where: str = "request") -> Allocate:
        """From a request dict (or one entry of a multi-allocate request)."""
        restrict = data.get("restrict-to-nodes")
        disks = get(data, "disks", list, where)
        return cls(
            name=as_str(data, "name", where), memory=as_int(data, "memory", where),
            vcpus=as_int(data, "vcpus", where),
            disk_template=as_str(data, "disk_template", where),
            disks=tuple(Disk(size=as_int(d, "size", f"{where}.disks[{i}]"),
                             mode=d.get("mode", "rw"), dev_type=d.get("dev_type"),
                             spindles=d.get("spindles"))
                        for i, d in enumerate(disks)),
            nics=tuple(dict(n) for n in get(data, "nics", list, where)),
            os=data.get("os") or "", hypervisor=data.get("hypervisor") or "",
            tags=tuple(data.get("tags") or ()), spindle_use=int(data.get("spindle_use", 1)),
            group_name=data.get("group_name"),
            restrict_to_nodes=None if restrict is None else tuple(restrict),
            required_nodes=as_int(data, "required_nodes", where),
            disk_space_total=as_int(data, "disk_space_total", where),
            forthcoming=data.get("forthcoming") is not None and as_bool(
                data, "forthcoming", where))

    def check_result(self, result: Any, cluster: Cluster) -> tuple[str, ...]:
        """A list of exactly ``required_nodes`` known node names."""
        _checked(NODE_LIST, result)
        if len(result) != self.required_nodes:
            raise ResultValidationError(f"iallocator returned invalid number of nodes "
                                        f"({len(result)}), required {self.required_nodes}")
        return _known_nodes(result, cluster)


@dataclass(frozen=True)
class AllocateSecondary:
    """Find a secondary node for an instance becoming drbd (``allocate-secondary``)."""

    MODE: ClassVar[str] = MODE_ALLOC_SECONDARY
    name: str

    def to_wire(self) -> dict[str, Any]:
        """Ganeti's keys."""
        return {"name": self.name, "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> AllocateSecondary:
        """From a request dict."""
        return cls(name=as_str(data, "name", "request"))

    def check_result(self, result: Any, cluster: Cluster) -> str:
        """One known node name."""
        _checked(STRING, result)
        return _known_nodes([result], cluster)[0]


@dataclass(frozen=True)
class MultiAllocate:
    """Place several new instances (``multi-allocate``)."""

    MODE: ClassVar[str] = MODE_MULTI_ALLOC
    instances: tuple[Allocate, ...]

    def to_wire(self) -> dict[str, Any]:
        """``instances`` holds allocate requests without their ``type``."""
        entries = []
        for request in self.instances:
            entry = request.to_wire()
            del entry["type"]
            entries.append(entry)
        return {"instances": entries, "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> MultiAllocate:
        """From a request dict."""
        return cls(instances=tuple(
            Allocate.from_wire(entry, f"request.instances[{i}]")
            for i, entry in enumerate(get(data, "instances", list, "request"))))

    def check_result(self, result: Any, cluster: Cluster) -> MultiAllocationResult:
        """``[[[name, nodes], ...], [failed name, ...]]``, nodes known."""
        placed, failed = _checked(MULTI_ALLOC_RESULT, result)
        return MultiAllocationResult(
            placed=tuple((name, _known_nodes(nodes, cluster)) for name, nodes in placed),
            failed=tuple(failed))


@dataclass(frozen=True)
class Relocate:
    """Move a mirrored instance off some of its nodes within its group (``relocate``)."""

    MODE: ClassVar[str] = MODE_RELOC
    name: str
    relocate_from: tuple[str, ...]
    disk_space_total: int
    required_nodes: int = 1

    def to_wire(self) -> dict[str, Any]:
        """Ganeti's keys, in Ganeti's order."""
        return {"name": self.name, "disk_space_total": self.disk_space_total,
                "required_nodes": self.required_nodes,
                "relocate_from": list(self.relocate_from), "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Relocate:
        """From a request dict."""
        return cls(name=as_str(data, "name", "request"),
                   relocate_from=tuple(as_str_list(data, "relocate_from", "request")),
                   disk_space_total=as_int(data, "disk_space_total", "request"),
                   required_nodes=as_int(data, "required_nodes", "request"))

    def check_result(self, result: Any, cluster: Cluster) -> tuple[str, ...]:
        """Known nodes in no other group than the instance's (Ganeti's check)."""
        nodes = _known_nodes(_checked(NODE_LIST, result), cluster)
        inst = cluster.instances.get(self.name)
        primary = [inst.primary] if inst is not None else []

        def groups(names: Sequence[str]) -> list[str]:
            return sorted({cluster.group_of(n).name for n in names if n in cluster.nodes})

        before, after = groups([*self.relocate_from, *primary]), groups([*nodes, *primary])
        if not set(after) <= set(before):
            raise ResultValidationError(
                f"Groups of nodes returned by iallocator ({', '.join(after)}) differ from "
                f"original groups ({', '.join(before)})")
        return nodes


def _evacuation(result: Any, cluster: Cluster) -> EvacuationResult:
    moved, failed, jobs = _checked(EVAC_RESULT, result)
    return EvacuationResult(
        moved=tuple(Moved(name, group, _known_nodes(nodes, cluster))
                    for name, group, nodes in moved),
        failed=tuple((name, reason) for name, reason in failed),
        jobs=tuple(tuple(dict(op) for op in job) for job in jobs))


@dataclass(frozen=True)
class NodeEvacuate:
    """Move instances off their node(s) (``node-evacuate``)."""

    MODE: ClassVar[str] = MODE_NODE_EVAC
    instances: tuple[str, ...]
    evac_mode: str

    def __post_init__(self) -> None:
        if self.evac_mode not in EVAC_MODES:
            raise ValueError(f"evac_mode must be one of {', '.join(sorted(EVAC_MODES))}")

    def to_wire(self) -> dict[str, Any]:
        """Ganeti's keys."""
        return {"instances": list(self.instances), "evac_mode": self.evac_mode,
                "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> NodeEvacuate:
        """From a request dict."""
        mode = as_str(data, "evac_mode", "request")
        if mode not in EVAC_MODES:
            raise bad(f"request.evac_mode: {mode!r} is not one of "
                      f"{', '.join(sorted(EVAC_MODES))}")
        return cls(instances=tuple(as_str_list(data, "instances", "request")), evac_mode=mode)

    def check_result(self, result: Any, cluster: Cluster) -> EvacuationResult:
        """``[moved, failed, jobs]``."""
        return _evacuation(result, cluster)


@dataclass(frozen=True)
class ChangeGroup:
    """Move instances to other groups (``change-group``; no targets: any other group)."""

    MODE: ClassVar[str] = MODE_CHG_GROUP
    instances: tuple[str, ...]
    target_groups: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """Ganeti's keys."""
        return {"instances": list(self.instances), "target_groups": list(self.target_groups),
                "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ChangeGroup:
        """From a request dict."""
        return cls(instances=tuple(as_str_list(data, "instances", "request")),
                   target_groups=tuple(as_str_list(data, "target_groups", "request")))

    def check_result(self, result: Any, cluster: Cluster) -> EvacuationResult:
        """``[moved, failed, jobs]``."""
        return _evacuation(result, cluster)


@dataclass(frozen=True)
class BalanceMove:
    """One move of a balance answer: the instance, its new nodes (primary first), hbal's
    kind of move and the cluster score after it."""

    instance: str
    nodes: tuple[str, ...]
    kind: str
    score: float

    def to_wire(self) -> list[Any]:
        """``[instance, [nodes], kind, score_after]``."""
        return [self.instance, list(self.nodes), self.kind, self.score]


@dataclass(frozen=True)
class BalanceResult:
    """A balance answer: the scores before and after, and the moves in order."""

    initial_score: float
    final_score: float
    moves: tuple[BalanceMove, ...]

    def to_wire(self) -> dict[str, Any]:
        """``{"initial_score", "final_score", "moves"}``."""
        return {"initial_score": self.initial_score, "final_score": self.final_score,
                "moves": [m.to_wire() for m in self.moves]}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _balance_move(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 4 and STRING.check(value[0])
            and NODE_LIST.check(value[1]) and bool(value[1]) and value[2] in MOVE_KINDS
            and _number(value[3]))


BALANCE_RESULT = Shape(
    '{"initial_score": number, "final_score": number, '
    '"moves": [[instance, [node, ...], move kind, score after], ...]}',
    lambda value: (isinstance(value, dict) and _number(value.get("initial_score"))
                   and _number(value.get("final_score"))
                   and isinstance(value.get("moves"), list)
                   and all(_balance_move(m) for m in value["moves"])))


@dataclass(frozen=True)
class Balance:
    """Moves that lower the cluster score, as hbal computes them (``balance``, ours).

    ``max_moves`` 0 means until no move gains ``min_gain``; ``group`` None means
    every group."""

    MODE: ClassVar[str] = MODE_BALANCE
    max_moves: int = 0
    group: str | None = None
    min_gain: float = 0.0

    def to_wire(self) -> dict[str, Any]:
        """The request dict."""
        return {"max_moves": self.max_moves, "group": self.group, "min_gain": self.min_gain,
                "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Balance:
        """From a request dict (every key but ``type`` optional)."""
        max_moves = as_int(data, "max_moves", "request") if "max_moves" in data else 0
        if max_moves < 0:
            raise bad(f"request.max_moves: {max_moves} is negative")
        group = data.get("group")
        if group is not None and not isinstance(group, str):
            raise bad(f"request.group: {group!r} is not a str")
        min_gain = as_float(data, "min_gain", "request") if "min_gain" in data else 0.0
        return cls(max_moves=max_moves, group=group, min_gain=min_gain)

    def check_result(self, result: Any, cluster: Cluster) -> BalanceResult:
        """The scores and known moves; a move names a known instance and known nodes."""
        _checked(BALANCE_RESULT, result)
        moves = []
        for name, nodes, kind, score in result["moves"]:
            if name not in cluster.instances:
                raise ResultValidationError(f"iallocator returned unknown instance {name}")
            moves.append(BalanceMove(name, _known_nodes(nodes, cluster), kind, float(score)))
        return BalanceResult(initial_score=float(result["initial_score"]),
                             final_score=float(result["final_score"]), moves=tuple(moves))


@dataclass(frozen=True)
class CapacityResult:
    """A capacity answer: how many fit, each one's nodes in allocation order, and why
    the next one did not (an htools failure mode such as ``FailMem``)."""

    count: int
    allocations: tuple[tuple[str, ...], ...]
    limit: str

    def to_wire(self) -> dict[str, Any]:
        """``{"count", "allocations", "limit"}``."""
        return {"count": self.count, "allocations": [list(a) for a in self.allocations],
                "limit": self.limit}


@dataclass(frozen=True)
class Capacity:
    """How many instances of one spec the cluster (or one group) still takes (our
    extension, ``capacity``; hail answers it with a failure)."""

    MODE: ClassVar[str] = MODE_CAPACITY
    disk_template: str
    memory: int
    vcpus: int
    disks: tuple[Disk, ...] = ()
    spindle_use: int = 1
    nics: tuple[Mapping[str, Any], ...] = ()
    group: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "disks", tuple(
            d if d.dev_type else replace(d, dev_type=self.disk_template) for d in self.disks))

    @property
    def required_nodes(self) -> int:
        """Nodes each instance takes (2 for drbd)."""
        return required_nodes(self.disk_template)

    @property
    def disk_space_total(self) -> int:
        """The disk space each instance takes on each of its nodes."""
        return disk_space((self.disk_template, d.size) for d in self.disks)

    def to_wire(self) -> dict[str, Any]:
        """The request's keys."""
        return {"disk_template": self.disk_template, "memory": self.memory,
                "vcpus": self.vcpus,
                "disks": [{"size": d.size, "mode": d.mode} for d in self.disks],
                "spindle_use": self.spindle_use, "nics": [dict(n) for n in self.nics],
                "group": self.group, "type": self.MODE}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Capacity:
        """From a request dict."""
        where = "request"
        group = data.get("group")
        if group is not None and not isinstance(group, str):
            raise bad(f"{where}.group: {group!r} is not a str or null")
        disks = get(data, "disks", list, where)
        return cls(disk_template=as_str(data, "disk_template", where),
                   memory=as_int(data, "memory", where), vcpus=as_int(data, "vcpus", where),
                   disks=tuple(Disk(size=as_int(d, "size", f"{where}.disks[{i}]"),
                                    mode=d.get("mode", "rw"))
                               for i, d in enumerate(disks)),
                   spindle_use=int(data.get("spindle_use", 1)),
                   nics=tuple(dict(n) for n in data.get("nics") or ()), group=group)

    def check_result(self, result: Any, cluster: Cluster) -> CapacityResult:
        """``{"count": N, "allocations": [[node, ...] * N], "limit": reason}``."""
        _checked(CAPACITY_RESULT, result)
        allocations = tuple(_known_nodes(nodes, cluster) for nodes in result["allocations"])
        if result["count"] != len(allocations):
            raise ResultValidationError(
                f"iallocator returned a capacity count ({result['count']}) that differs "
                f"from its allocations ({len(allocations)})")
        wrong = [nodes for nodes in allocations if len(nodes) != self.required_nodes]
        if wrong:
            raise ResultValidationError(f"iallocator returned invalid number of nodes "
                                        f"({len(wrong[0])}), required {self.required_nodes}")
        return CapacityResult(count=len(allocations), allocations=allocations,
                              limit=result["limit"])


AnyRequest = (Allocate | AllocateSecondary | MultiAllocate | Relocate | NodeEvacuate
              | ChangeGroup | Balance | Capacity)

#: Wire name -> request class.
REQUEST_TYPES: dict[str, type[AnyRequest]] = {
    cls.MODE: cls for cls in (Allocate, AllocateSecondary, MultiAllocate, Relocate,
                              NodeEvacuate, ChangeGroup, Balance, Capacity)}


def request_from_wire(data: Mapping[str, Any]) -> AnyRequest:
    """The typed request of a ``request`` dict (by its ``type``)."""
    mode = as_str(data, "type", "request")
    cls = REQUEST_TYPES.get(mode)
    if cls is None:
        raise bad(f"request.type: unknown request type {mode!r}")
    return cls.from_wire(data)


__all__ = ["BALANCE_RESULT", "MODE_ALLOC", "MODE_ALLOC_SECONDARY", "MODE_BALANCE",
           "MODE_CAPACITY", "MODE_CHG_GROUP", "MODE_MULTI_ALLOC", "MODE_NODE_EVAC",
           "MODE_RELOC", "MOVE_KINDS", "REQUEST_TYPES", "Allocate", "AllocateSecondary",
           "AnyRequest", "Balance", "BalanceMove", "BalanceResult", "Capacity",
           "CapacityResult", "ChangeGroup", "EvacuationResult", "Moved", "MultiAllocate",
           "MultiAllocationResult", "NodeEvacuate", "Relocate", "Request",
           "request_from_wire"]
