"""OP_NODE_EVACUATE, OP_GROUP_EVACUATE and OP_INSTANCE_CHANGE_GROUP: the units (Ganeti's
LUNodeEvacuate, LUGroupEvacuate, LUInstanceChangeGroup and LoadNodeEvacResult).

Each asks an allocator (a ``node-evacuate`` or ``change-group`` request; the
cluster's default, or the built-in ``ganeti-place`` where Ganeti refuses for
want of a default) and submits the jobs of its answer: the opcode's result is
Ganeti's ``{"jobs": [[true, id], ...]}``.  A node evacuation with a new
secondary (``remote_node``) submits one replace-disks job per instance instead.

**Difference from Ganeti** (issue 31, Ganeti bug #552): Ganeti refuses to
evacuate a node's primary and secondary instances at once (mode ``all``).
Here that mode is accepted: one ``node-evacuate`` request in mode ``all``
(the allocator plans every move on the state the previous moves leave), and
the jobs of the node's primary instances are submitted first, those of its
secondary instances after them, each depending on every primary job
(relative dependencies, whatever those end in): the primaries leave the node
before the mirrors are rebuilt.

Nothing here bounds the concurrent migrations itself: each submitted job
locks its instance's nodes (exclusively), so a node takes part in one move
at a time, and the queue runs at most its number of concurrent jobs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ganeti.core import constants as c
from ganeti.core import hooks as hookdefs
from ganeti.core.errors import ECODE_INVAL, ECODE_NORES, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.opcodes import OPCODES
from ganeti.core.opcodes.table_evacuate import NODE_EVAC_ALL, NODE_EVAC_PRI, NODE_EVAC_SEC
from ganeti.core.opcodes.views import OpGroupEvacuate, OpInstanceChangeGroup, OpNodeEvacuate
from ganeti.core.params_merge import comma_join
from ganeti.core.placement.requests import ChangeGroup, EvacuationResult, NodeEvacuate
from ganeti.core.query import nice_sort_key
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_INSTANCE, LEVEL_NODE, LEVEL_NODEGROUP
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu.base import ALL_SET, LOCKS_APPEND, LogicalUnit, ResultWithJobs
from ganeti.master.lu.instance_ops import InstanceLU

REPLACE_DISKS = "OP_INSTANCE_REPLACE_DISKS"
#: The statuses a dependent job waits for (any end: the jobs are independent moves).
ANY_END = ["success", "error", "canceled"]


def info(lu: LogicalUnit, text: str) -> None:
    """Ganeti's LogInfo."""
    lu.ctx.feedback("message", f" - INFO: {text}")


def warning(lu: LogicalUnit, text: str) -> None:
    """Ganeti's LogWarning."""
    lu.ctx.feedback("message", f" - WARNING: {text}")


def _sorted(insts: Iterable[Instance]) -> list[Instance]:
    return sorted(insts, key=lambda i: nice_sort_key(i.name))


def node_instances(cfg: ConfigData, node_uuid: str, mode: str) -> list[Instance]:
    """The instances an evacuation of ``node_uuid`` in ``mode`` moves (Ganeti's
    _GetNodePrimaryInstances, _GetNodeSecondaryInstances, _GetNodeInstances)."""
    if mode == NODE_EVAC_PRI:
        return _sorted(i for i in cfg.instances.values() if i.primary_node == node_uuid)
    if mode == NODE_EVAC_SEC:
        return _sorted(i for i in cfg.instances.values()
                       if node_uuid in nodesmod.secondary_nodes(cfg, i))
    return _sorted(i for i in cfg.instances.values()
                   if node_uuid in nodesmod.instance_nodes(cfg, i))


def group_instances(cfg: ConfigData, group_uuid: str) -> list[Instance]:
    """The instances with a node in the group (Ganeti's GetNodeGroupInstances)."""
    members = {u for u, n in cfg.nodes.items() if n.group == group_uuid}
    return _sorted(i for i in cfg.instances.values()
                   if nodesmod.instance_nodes(cfg, i) & members)


def instance_groups(cfg: ConfigData, inst: Instance) -> set[str]:
    """The groups of the instance's nodes."""
    return {cfg.nodes[u].group for u in nodesmod.instance_nodes(cfg, inst) if u in cfg.nodes}


def _set_early_release(op: dict[str, Any], early_release: bool) -> dict[str, Any]:
    """Ganeti's _SetOpEarlyRelease: the flag on the opcodes that have it."""
    decl = OPCODES.get(str(op.get("OP_ID")))
    has = decl is not None and any(p.name == "early_release" for p in decl.all_params)
    return {**op, "early_release": early_release} if has else dict(op)


def load_evac_result(lu: LogicalUnit, result: EvacuationResult, early_release: bool,
                     use_nodes: bool) -> list[list[dict[str, Any]]]:
    """Ganeti's LoadNodeEvacResult: the jobs of a node-evacuate or change-group answer
    (``early_release`` set where the opcode has it); instances the allocator could
    not move fail the unit with Ganeti's warning and error."""
    if result.failed:
        reason = comma_join(f"{name} ({why})" for name, why in result.failed)
        warning(lu, f"Unable to evacuate instances {reason}")
        raise OpExecError(f"Unable to evacuate instances {reason}")
    if result.moved:
        info(lu, "Instances to be moved: " + comma_join(
            f"{m.instance} (to {comma_join(m.nodes) if use_nodes else m.group})"
            for m in result.moved))
    return [[_set_early_release(dict(op), early_release) for op in job]
            for job in result.jobs]


async def run_allocator(lu: LogicalUnit, request: Any, allocators: list[str],
                        failure: str, extra: dict[str, str | None] | None = None
                        ) -> EvacuationResult:
    """The allocators' evacuation answer; an unsuccessful one: ``failure`` with the
    allocator's name and its text (``ECODE_NORES``)."""
    ialloc = await iajobs.build_input(lu, request)
    name, answer = await iajobs.run(lu, allocators, ialloc, extra)
    lu.record_op(iallocator=name)
    if not answer.success:
        raise OpPrereqError(failure.format(name=name, info=answer.info), ECODE_NORES)
    result: EvacuationResult = answer.result
    return result


def primaries_first(cfg: ConfigData, node_uuid: str, jobs: list[list[dict[str, Any]]]
                    ) -> list[list[dict[str, Any]]]:
    """Mode ``all``: the jobs of the node's primary instances, then the others, each of
    those depending on every primary job (relative ids)."""
    def primary(job: list[dict[str, Any]]) -> bool:
        inst = cfg.instance_by_name(str(job[0].get("instance_name"))) if job else None
        return inst is not None and inst.primary_node == node_uuid
    first = [job for job in jobs if primary(job)]
    rest = [job for job in jobs if not primary(job)]
    out = list(first)
    for job in rest:
        back = len(out)
        deps = [[-(back - k), ANY_END] for k in range(len(first))]
        out.append([{**job[0], "depends": [*(job[0].get("depends") or []), *deps]}
                    if deps else job[0], *job[1:]])
    return out


class LUNodeEvacuate(LogicalUnit):
    """OP_NODE_EVACUATE (no hooks, as Ganeti's)."""

    OP_ID = "OP_NODE_EVACUATE"
    op: OpNodeEvacuate
    REQ_BGL = False

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        node = nodesmod.find_node(cfg, self.op.node_uuid or self.op.node_name)
        self.node_uuid, self.node_name = node.uuid, node.name
        self.record_op(node_uuid=node.uuid, node_name=node.name)
        self.remote_uuid: str | None = None
        given = self.op.remote_node or self.op.remote_node_uuid
        self.allocators = iajobs.allocator_names(cfg, self.op.iallocator, bool(given))
        if given:
            remote = nodesmod.find_node(cfg, self.op.remote_node_uuid or self.op.remote_node)
            self.remote_uuid = remote.uuid
            self.record_op(remote_node=remote.name, remote_node_uuid=remote.uuid)
            if remote.uuid == node.uuid:
                raise OpPrereqError("Can not use evacuated node as a new secondary node",
                                    ECODE_INVAL)
            if self.op.mode != NODE_EVAC_SEC:
                raise OpPrereqError("Without the use of an iallocator only secondary "
                                    "instances can be evacuated", ECODE_INVAL)
        for level in (LEVEL_INSTANCE, LEVEL_NODEGROUP, LEVEL_NODE):
            self.needed_locks[level] = []
            self.share_locks[level] = True
        self.lock_nodes = self._nodes()

    def _nodes(self) -> set[str]:
        """The evacuated node and its possible targets (its group's nodes, or the new
        secondary)."""
        cfg = self.ctx.config.config
        if self.remote_uuid is not None:
            return {self.node_uuid, self.remote_uuid}
        group = cfg.nodes[self.node_uuid].group
        return {self.node_uuid} | {u for u, n in cfg.nodes.items() if n.group == group}

    def declare_locks(self, level: int) -> None:
        cfg = self.ctx.config.config
        if level == LEVEL_INSTANCE:
            self.needed_locks[level] = [i.name for i in node_instances(
                cfg, self.node_uuid, self.op.mode)]
        elif level == LEVEL_NODEGROUP:
            self.needed_locks[level] = sorted({cfg.nodes[u].group for u in self.lock_nodes
                                               if u in cfg.nodes})
        elif level == LEVEL_NODE:
            self.needed_locks[level] = sorted(self.lock_nodes)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        owned_nodes = self.owned_locks(LEVEL_NODE)
        need = self._nodes()
        if not owned_nodes.issuperset(need):
            raise OpPrereqError(f"Nodes in same group as '{self.node_name}' changed since "
                                f"locks were acquired, current nodes are are "
                                f"'{comma_join(sorted(need))}', used to be "
                                f"'{comma_join(sorted(owned_nodes))}'; retry the operation",
                                ECODE_STATE)
        groups = {cfg.nodes[u].group for u in owned_nodes if u in cfg.nodes}
        owned_groups = self.owned_locks(LEVEL_NODEGROUP)
        if groups != owned_groups:
            raise OpExecError(f"Node groups changed since locks were acquired, current "
                              f"groups are '{comma_join(sorted(groups))}', used to be "
                              f"'{comma_join(sorted(owned_groups))}'; retry the operation")
        self.instances = node_instances(cfg, self.node_uuid, self.op.mode)
        names = [i.name for i in self.instances]
        owned = self.owned_locks(LEVEL_INSTANCE)
        if set(names) != owned:
            raise OpExecError(f"Instances on node '{self.node_name}' changed since locks "
                              f"were acquired, current instances are '{comma_join(names)}', "
                              f"used to be '{comma_join(sorted(owned))}'; retry the "
                              "operation")
        if names:
            info(self, f"Evacuating instances from node '{self.node_name}': "
                       f"{comma_join(names)}")
        else:
            info(self, f"No instances to evacuate from node '{self.node_name}'")
        if self.remote_uuid is not None:
            for inst in self.instances:
                if inst.primary_node == self.remote_uuid:
                    raise OpPrereqError(f"Node {ic.node_name(cfg, self.remote_uuid)} is the "
                                        f"primary node of instance {inst.name}, cannot use "
                                        "it as secondary", ECODE_INVAL)

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        if not self.instances:
            return ResultWithJobs([])
        if self.remote_uuid is not None:
            remote = ic.node_name(cfg, self.remote_uuid)
            return ResultWithJobs([[{
                "OP_ID": REPLACE_DISKS, "instance_name": inst.name, "remote_node": remote,
                "disks": [], "mode": c.REPLACE_DISK_CHG,
                "early_release": self.op.early_release}] for inst in self.instances])
        request = NodeEvacuate(instances=tuple(i.name for i in self.instances),
                               evac_mode=self.op.mode)
        extra: dict[str, str | None] | None = (
            {"ignore-soft-errors": None} if self.op.ignore_soft_errors else None)
        result = await run_allocator(
            self, request, self.allocators,
            "Can't compute node evacuation using iallocator '{name}': {info}", extra)
        jobs = load_evac_result(self, result, self.op.early_release, True)
        if self.op.mode == NODE_EVAC_ALL:
            jobs = primaries_first(cfg, self.node_uuid, jobs)
        return ResultWithJobs(jobs)


def _failover_of(op: dict[str, Any]) -> dict[str, Any]:
    """Ganeti's _MigrateToFailover: a migration as the equivalent failover."""
    if op.get("OP_ID") != "OP_INSTANCE_MIGRATE":
        return op
    out = {"OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": op["instance_name"],
           "ignore_ipolicy": bool(op.get("ignore_ipolicy", False)),
           "cleanup": bool(op.get("cleanup", False))}
    for key in ("instance_uuid", "target_node", "target_node_uuid"):
        if op.get(key) is not None:
            out[key] = op[key]
    return out


class LUGroupEvacuate(LogicalUnit):
    """OP_GROUP_EVACUATE."""

    OP_ID = "OP_GROUP_EVACUATE"
    op: OpGroupEvacuate
    REQ_BGL = False
    HPATH = "group-evacuate"
    HTYPE = hookdefs.HTYPE_GROUP

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        self.group_uuid = nodesmod.find_group(cfg, self.op.group_name).uuid
        self.req_targets = [nodesmod.find_group(cfg, g).uuid
                            for g in self.op.target_groups or []]
        if self.group_uuid in self.req_targets:
            raise OpPrereqError(f"Group to be evacuated ({self.group_uuid}) can not be used "
                                f"as a target group (targets are "
                                f"{comma_join(self.req_targets)})", ECODE_INVAL)
        self.allocators = iajobs.allocator_names(cfg, self.op.iallocator, False)
        for level in (LEVEL_INSTANCE, LEVEL_NODEGROUP, LEVEL_NODE):
            self.needed_locks[level] = []
            self.share_locks[level] = True

    def declare_locks(self, level: int) -> None:
        cfg = self.ctx.config.config
        if level == LEVEL_INSTANCE:
            self.needed_locks[level] = [i.name for i in group_instances(cfg, self.group_uuid)]
        elif level == LEVEL_NODEGROUP:
            if self.req_targets:
                groups = {self.group_uuid, *self.req_targets}
                for name in self.owned_locks(LEVEL_INSTANCE):
                    inst = cfg.instance_by_name(name)
                    if inst is not None:
                        groups |= instance_groups(cfg, inst)
                self.needed_locks[level] = sorted(groups)
            else:
                self.needed_locks[level] = ALL_SET
        elif level == LEVEL_NODE:
            self.recalculate_locks[level] = LOCKS_APPEND
            self.lock_instances_nodes()
            owned = self.owned_locks(LEVEL_NODEGROUP)
            members = {u for u, n in cfg.nodes.items() if n.group in owned}
            self.needed_locks[level] = sorted(set(self.needed_locks[level] or []) | members)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        owned = self.owned_locks(LEVEL_INSTANCE)
        now = {i.name for i in group_instances(cfg, self.group_uuid)}
        if now != owned:  # Ganeti's CheckNodeGroupInstances
            raise OpPrereqError(f"Instances in node group '{self.op.group_name}' changed "
                                f"since locks were acquired, wanted "
                                f"'{comma_join(sorted(now))}', have "
                                f"'{comma_join(sorted(owned))}'; retry the operation",
                                ECODE_STATE)
        owned_groups = self.owned_locks(LEVEL_NODEGROUP)
        for name in sorted(owned):  # Ganeti's CheckInstancesNodeGroups
            inst = cfg.instance_by_name(name)
            if inst is not None and not instance_groups(cfg, inst) <= owned_groups:
                raise OpPrereqError(f"Instance '{name}' changed node groups since locks "
                                    "were acquired; retry the operation", ECODE_STATE)
        if self.req_targets:
            self.targets = list(self.req_targets)
        else:
            self.targets = sorted(g for g in owned_groups if g != self.group_uuid)
            if not self.targets:
                raise OpPrereqError("There are no possible target groups", ECODE_INVAL)

    def build_hooks_env(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name, "TARGET_GROUPS": " ".join(self.targets)}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        nodes = [cfg.cluster.master_node] + sorted(
            u for u, n in cfg.nodes.items() if n.group == self.group_uuid)
        return nodes, nodes

    async def exec(self) -> Any:
        names = sorted(self.owned_locks(LEVEL_INSTANCE), key=nice_sort_key)
        request = ChangeGroup(instances=tuple(names), target_groups=tuple(self.targets))
        result = await run_allocator(
            self, request, self.allocators,
            "Can't compute group evacuation using iallocator '{name}': {info}")
        jobs = load_evac_result(self, result, self.op.early_release, False)
        info(self, f"Iallocator returned {len(jobs)} job(s) for evacuating node group "
                   f"{self.op.group_name}")
        if self.op.force_failover:
            info(self, "Will insist on failovers")
            jobs = [[_failover_of(op) for op in job] for job in jobs]
        if self.op.sequential:
            info(self, "Jobs will be submitted to run sequentially")
            jobs = [job if k == 0 else [{**op, "depends": [[-1, ["error", "success"]]]}
                                        for op in job] for k, job in enumerate(jobs)]
        return ResultWithJobs(jobs)


class LUInstanceChangeGroup(InstanceLU):
    """OP_INSTANCE_CHANGE_GROUP."""

    OP_ID = "OP_INSTANCE_CHANGE_GROUP"
    op: OpInstanceChangeGroup
    HPATH = "instance-change-group"

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self.share_locks.update({LEVEL_INSTANCE: True, LEVEL_NODEGROUP: True,
                                 LEVEL_NODE: True})
        self.needed_locks[LEVEL_NODEGROUP] = []
        self.needed_locks[LEVEL_NODE] = []
        self.req_targets = ([nodesmod.find_group(cfg, g).uuid for g in self.op.target_groups]
                            if self.op.target_groups else None)
        self.allocators = iajobs.allocator_names(cfg, self.op.iallocator, False)

    def declare_locks(self, level: int) -> None:
        cfg = self.ctx.config.config
        if level == LEVEL_NODEGROUP:
            self.needed_locks[level] = (
                sorted(set(self.req_targets) | instance_groups(cfg, self.instance))
                if self.req_targets else ALL_SET)
        elif level == LEVEL_NODE:
            if not self.req_targets:
                self.needed_locks[level] = ALL_SET
                return
            self.recalculate_locks[level] = LOCKS_APPEND
            self.lock_instances_nodes()
            groups = self.owned_locks(LEVEL_NODEGROUP) | instance_groups(cfg, self.instance)
            members = {u for u, n in cfg.nodes.items() if n.group in groups}
            self.needed_locks[level] = sorted(set(self.needed_locks[level] or []) | members)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        owned_groups = self.owned_locks(LEVEL_NODEGROUP)
        groups = instance_groups(cfg, self.instance)
        if not groups <= owned_groups:  # Ganeti's CheckInstanceNodeGroups
            raise OpPrereqError(f"Instance '{self.name}' changed node groups since locks "
                                "were acquired; retry the operation", ECODE_STATE)
        targets = set(self.req_targets) if self.req_targets else owned_groups - groups
        conflicting = targets & groups
        if conflicting:
            raise OpPrereqError(f"Can't use group(s) '{comma_join(sorted(conflicting))}' as "
                                f"targets, they are used by the instance '{self.name}'",
                                ECODE_INVAL)
        if not targets:
            raise OpPrereqError("There are no possible target groups", ECODE_INVAL)
        self.targets = sorted(targets)

    def build_hooks_env(self) -> dict[str, Any]:
        env = {"TARGET_GROUPS": " ".join(self.targets)}
        env.update(super().build_hooks_env())
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        master = [self.ctx.config.config.cluster.master_node]
        return master, master

    async def exec(self) -> Any:
        request = ChangeGroup(instances=(self.name,), target_groups=tuple(self.targets))
        result = await run_allocator(
            self, request, self.allocators,
            "Can't compute solution for changing group of instance "
            f"'{self.name}' using iallocator '{{name}}': {{info}}")
        jobs = load_evac_result(self, result, self.op.early_release, False)
        info(self, f"Iallocator returned {len(jobs)} job(s) for changing group of instance "
                   f"'{self.name}'")
        return ResultWithJobs(jobs)


LUS: tuple[type[LogicalUnit], ...] = (LUNodeEvacuate, LUGroupEvacuate, LUInstanceChangeGroup)
