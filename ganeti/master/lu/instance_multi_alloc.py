"""OP_INSTANCE_MULTI_ALLOC: place several new instances at once, one job per placed one.

As Ganeti 3.0's LUInstanceMultiAlloc: the instance opcodes may not name an
allocator; either all of them give their nodes or none does; names must be
distinct.  Without nodes one allocator (the opcode's, or the cluster's
default list, or the built-in) places them all in one multi-allocate request,
on the nodes locked (taken opportunistically, shared, as for a single create).
The result is Ganeti's: ``allocatable`` (the names placed), ``failed`` (the
names the allocator could not place) and ``jobs``: one OP_INSTANCE_CREATE job
per placed instance, its nodes filled in.  An allocator that places only some
(the built-in places what fits) is not a failure: the rest are named.
With ``dry_run`` nothing is submitted (``jobs`` is empty).
"""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_NORES, ECODE_TEMP_NORES, OpPrereqError
from ganeti.core.opcodes.views import OpInstanceMultiAlloc
from ganeti.core.placement.requests import MultiAllocate
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs
from ganeti.master.lu.instance_create import DTS_INT_MIRROR, LUInstanceCreate
from ganeti.master.lu.instance_placement import allocate_request

ALLOCATABLE_KEY = "allocatable"
FAILED_KEY = "failed"


class LUInstanceMultiAlloc(LogicalUnit):
    """OP_INSTANCE_MULTI_ALLOC."""

    OP_ID = "OP_INSTANCE_MULTI_ALLOC"
    op: OpInstanceMultiAlloc
    REQ_BGL = False

    def check_arguments(self) -> None:
        nodes = []
        for inst in self.op.instances:
            if inst.get("iallocator") is not None:
                raise OpPrereqError("iallocator are not allowed to be set on instance "
                                    "objects", ECODE_INVAL)
            nodes.append(bool(inst.get("pnode")))
            if inst.get("disk_template") in DTS_INT_MIRROR:
                nodes.append(bool(inst.get("snode")))
        self.has_nodes = any(nodes)
        if all(nodes) ^ self.has_nodes:
            raise OpPrereqError("There are instance objects providing pnode/snode while "
                                "others do not", ECODE_INVAL)
        names = [str(inst.get("instance_name")) for inst in self.op.instances]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise OpPrereqError(f"There are duplicate instance names: {', '.join(dups)}",
                                ECODE_INVAL)

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        self.allocators = [] if self.has_nodes else iajobs.allocator_names(
            cfg, self.op.iallocator, False)
        self.share_locks[LEVEL_NODE] = True
        self.share_locks[LEVEL_NODE_RES] = True
        if self.allocators:
            self.needed_locks[LEVEL_NODE] = sorted(cfg.nodes)
            self.needed_locks[LEVEL_NODE_RES] = sorted(cfg.nodes)
            self.opportunistic_locks[LEVEL_NODE] = self.opportunistic_allowed
            self.opportunistic_locks[LEVEL_NODE_RES] = self.opportunistic_allowed
        self.ia_result: tuple[list[tuple[str, tuple[str, ...]]], list[str]] | None = None

    def _sub_unit(self, op: dict[str, Any]) -> LUInstanceCreate:
        """An instance's create unit, checked as far as no node is needed."""
        cfg = self.ctx.config.config
        full = {"OP_ID": LUInstanceCreate.OP_ID, **copy.deepcopy(op)}
        sub = LUInstanceCreate(self.ctx, full)
        sub.check_arguments()
        sub.template = sub.op.disk_template or (cfg.cluster.enabled_disk_templates or
                                                [c.DT_DISKLESS])[0]
        sub._check_params()
        return sub

    async def before_prereq(self) -> None:
        if not self.allocators:
            return
        cfg = self.ctx.config.config
        held = self.owned_locks(LEVEL_NODE) & self.owned_locks(LEVEL_NODE_RES)
        candidates = sorted(cfg.nodes[u].name for u in held if u in cfg.nodes)
        skipped = len(candidates) < len(cfg.nodes)
        whitelist = candidates if skipped else None
        request = MultiAllocate(instances=tuple(
            allocate_request(self._sub_unit(op), whitelist) for op in self.op.instances))
        ialloc = await iajobs.build_input(self, request)
        _name, answer = await iajobs.run(self, self.allocators, ialloc)
        if not answer.success:
            raise OpPrereqError(f"Can't compute nodes using iallocator "
                                f"'{','.join(self.allocators)}': {answer.info}",
                                ECODE_TEMP_NORES if skipped else ECODE_NORES)
        placed = [(n, tuple(nodes)) for n, nodes in answer.result.placed]
        self.ia_result = (placed, list(answer.result.failed))  # (Ganeti logs nothing)

    def _partial(self) -> dict[str, Any]:
        if self.ia_result is not None:
            placed, failed = self.ia_result
            return {ALLOCATABLE_KEY: [n for n, _ in placed], FAILED_KEY: failed}
        return {ALLOCATABLE_KEY: [str(op.get("instance_name")) for op in self.op.instances],
                FAILED_KEY: []}

    async def exec(self) -> Any:
        if self.op.dry_run:
            return {**self._partial(), "jobs": []}
        jobs: list[list[dict[str, Any]]] = []
        if self.ia_result is not None:
            by_name = {str(op.get("instance_name")): op for op in self.op.instances}
            cfg = self.ctx.config.config
            placed, failed = self.ia_result
            for name, nodes in placed:
                op = {"OP_ID": LUInstanceCreate.OP_ID, **copy.deepcopy(by_name.pop(name))}
                op["pnode"] = nodes[0]
                node = cfg.node_by_name(nodes[0])
                op["pnode_uuid"] = node.uuid if node is not None else None
                if len(nodes) > 1:
                    op["snode"] = nodes[1]
                    second = cfg.node_by_name(nodes[1])
                    op["snode_uuid"] = second.uuid if second is not None else None
                jobs.append([op])
            missing = sorted(set(by_name) - set(failed))
            if missing:
                raise OpPrereqError(f"Iallocator did return incomplete result: "
                                    f"{', '.join(missing)}", ECODE_NORES)
        else:
            jobs = [[{"OP_ID": LUInstanceCreate.OP_ID, **copy.deepcopy(op)}]
                    for op in self.op.instances]
        return ResultWithJobs(jobs, **self._partial())


__all__ = ["ALLOCATABLE_KEY", "FAILED_KEY", "LUInstanceMultiAlloc"]
