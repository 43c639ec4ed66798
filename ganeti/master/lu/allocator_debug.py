"""OP_TEST_ALLOCATOR (``gnt-debug allocator``): an allocator's input, or its raw output.

As Ganeti 3.0's LUTestAllocator: per mode, the checks of the parameters
(allocate and multi-allocate: a new name and well-formed disks; relocate: an
existing instance, relocated off its secondary nodes; node-evacuate and
change-group: the instances, which must exist); direction ``in`` returns the
version-2 input text, ``out`` runs the named allocator and returns its output
unchecked (an allocator that fails to run fails the opcode).  Multi-allocate
asks for ``count`` instances named ``<name>0``, ``<name>1``, ...

Beyond Ganeti: the modes ``capacity`` and ``balance``
(:mod:`ganeti.core.placement.requests`); ``count`` is balance's
``max_moves`` and ``min_gain`` its smallest gain; ``group_name`` their group.
No lock but the BGL, shared (Ganeti's takes it exclusively): nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_EXISTS, ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes.views import OpTestAllocator
from ganeti.core.placement.model import Disk
from ganeti.core.placement.requests import (
    Allocate,
    Balance,
    Capacity,
    ChangeGroup,
    MultiAllocate,
    NodeEvacuate,
)
from ganeti.core.placement.shapes import EVAC_MODES
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import build
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu.base import LogicalUnit

_ACCESS_MODES = frozenset({"ro", "rw"})


def _param(name: str, value: Any, valid: Callable[[Any], bool]) -> Any:
    """Ganeti's request validation of one parameter."""
    if not valid(value):
        raise OpPrereqError(f"Request parameter '{name}' has invalid type "
                            f"{type(value)}/value {value}", ECODE_INVAL)
    return value


def _nonneg_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _string(value: Any) -> bool:
    return isinstance(value, str)


class LUTestAllocator(LogicalUnit):
    """OP_TEST_ALLOCATOR; the result is the input text or the allocator's output."""

    OP_ID = "OP_TEST_ALLOCATOR"
    op: OpTestAllocator
    REQ_BGL = False

    def check_prereq(self) -> None:
        op = self.op
        cfg = self.ctx.config.config
        self.hypervisor = op.hypervisor
        if op.mode in ("allocate", "multi-allocate", "capacity"):
            if op.mode != "capacity":
                existing = cfg.instance_by_name(op.name)
                if existing is not None:
                    raise OpPrereqError(f"Instance '{existing.name}' already in the cluster",
                                        ECODE_EXISTS)
            for row in op.disks or []:
                if not (isinstance(row, dict) and _nonneg_int(row.get("size"))
                        and row.get("mode") in _ACCESS_MODES):
                    raise OpPrereqError("Invalid contents of the 'disks' parameter",
                                        ECODE_INVAL)
            if self.hypervisor is None:
                self.hypervisor = (cfg.cluster.enabled_hypervisors or [c.HT_FAKE])[0]
            if op.mode != "capacity":
                # as Ganeti's unit and request (which type the opcode's own disks): the
                # job's opcode shows the hypervisor and each disk's type
                self.record_op(hypervisor=self.hypervisor, disks=[
                    {**row, "dev_type": op.disk_template} for row in op.disks or []])
        elif op.mode == "relocate":
            self.instance = ic.find_instance(cfg, op.name)
        elif op.mode in ("change-group", "node-evacuate"):
            if not op.instances:
                raise OpPrereqError("Missing instances", ECODE_INVAL)
            self.instances = [ic.find_instance(cfg, name).name for name in op.instances]
        if op.direction == "out" and op.iallocator is None:
            raise OpPrereqError("Missing allocator name", ECODE_INVAL)

    def _allocate(self, name: str) -> Allocate:
        op = self.op
        return Allocate(
            name=name, memory=_param("memory", op.memory, _nonneg_int),
            vcpus=_param("vcpus", op.vcpus, _nonneg_int),
            disk_template=_param("disk_template", op.disk_template, _string),
            disks=tuple(Disk(size=d["size"], mode=d["mode"]) for d in op.disks or []),
            nics=tuple(dict(n) for n in op.nics or []),
            os=_param("os", op.os, _string), hypervisor=str(self.hypervisor),
            tags=tuple(op.tags), spindle_use=op.spindle_use, group_name=op.group_name)

    def _group(self) -> str | None:
        name = self.op.group_name
        return nodesmod.find_group(self.ctx.config.config, name).uuid if name else None

    def request(self) -> Any:
        """The request of the opcode's mode (a table of builders)."""
        return _BUILDERS[self.op.mode](self)

    async def exec(self) -> Any:
        request = self.request()
        ialloc = await iajobs.build_input(self, request)
        text = await iajobs.render(self, ialloc)
        if self.op.direction == "in":
            return text
        return await iajobs.run_text(self, str(self.op.iallocator), text)


def _relocate(lu: LUTestAllocator) -> Any:
    cfg = lu.ctx.config.config
    return build.relocate_request(cfg, lu.instance,
                                  list(nodesmod.secondary_nodes(cfg, lu.instance)))


def _capacity(lu: LUTestAllocator) -> Capacity:
    op = lu.op
    return Capacity(disk_template=_param("disk_template", op.disk_template, _string),
                    memory=_param("memory", op.memory, _nonneg_int),
                    vcpus=_param("vcpus", op.vcpus, _nonneg_int),
                    disks=tuple(Disk(size=d["size"], mode=d["mode"]) for d in op.disks or []),
                    spindle_use=op.spindle_use, nics=tuple(dict(n) for n in op.nics or []),
                    group=lu._group())


def _change_group(lu: LUTestAllocator) -> ChangeGroup:
    # the groups as given, as Ganeti's test passes them (its group change resolves them)
    return ChangeGroup(instances=tuple(lu.instances),
                       target_groups=tuple(lu.op.target_groups or ()))


_BUILDERS: dict[str, Callable[[LUTestAllocator], Any]] = {
    "allocate": lambda lu: lu._allocate(lu.op.name),
    "multi-allocate": lambda lu: MultiAllocate(instances=tuple(
        lu._allocate(f"{lu.op.name}{idx}") for idx in range(lu.op.count))),
    "relocate": _relocate,
    "node-evacuate": lambda lu: NodeEvacuate(
        instances=tuple(lu.instances),
        evac_mode=_param("evac_mode", lu.op.evac_mode, lambda v: v in EVAC_MODES)),
    "change-group": _change_group,
    "capacity": _capacity,
    "balance": lambda lu: Balance(max_moves=lu.op.count, group=lu._group(),
                                  min_gain=lu.op.min_gain or 0.0),
}


__all__ = ["LUTestAllocator"]
