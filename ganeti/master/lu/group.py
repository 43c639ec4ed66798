"""Node group logical units: add, remove, rename, change and assign nodes."""

from __future__ import annotations

import copy
import uuid as uuidmod
from typing import Any

from ganeti.core import constants
from ganeti.core import hooks as hookdefs
from ganeti.core.errors import (
    ECODE_EXISTS,
    ECODE_INVAL,
    ECODE_STATE,
    ConfigurationError,
    OpPrereqError,
)
from ganeti.core.objects import Cluster, ConfigData, NodeGroup
from ganeti.core.opcodes.views import (
    OpGroupAdd,
    OpGroupAssignNodes,
    OpGroupRemove,
    OpGroupRename,
    OpGroupSetParams,
)
from ganeti.core.params_merge import (
    check_disk_access_modes,
    check_ipolicy_syntax,
    check_ipolicy_vs_disk_templates,
    fill_dict,
    fill_ipolicy,
    get_updated_ipolicy,
    get_updated_params,
    verify_dict_options,
)
from ganeti.core.params_types import (
    DISK_DT_TYPES,
    ISPECS_PARAMETER_TYPES,
    NDS_PARAMETER_TYPES,
    force_dict_type,
)
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODEGROUP
from ganeti.master.lu.base import LogicalUnit


def _check_new_name(cfg: ConfigData, name: str, rename: bool = False) -> None:
    """Refuse a name an existing group has, in Ganeti's words (add and rename differ)."""
    existing = cfg.group_by_name(name)
    if existing is None:
        return
    if rename:
        raise OpPrereqError(f"Desired new name '{name}' clashes with existing node group "
                            f"(UUID: {existing.uuid})", ECODE_EXISTS)
    raise OpPrereqError(f"Desired group name '{name}' already exists as a node group "
                        f"(UUID: {existing.uuid})", ECODE_EXISTS)


def _verify_diskparams(diskparams: dict[str, Any]) -> None:
    try:
        verify_dict_options(diskparams, constants.DISK_DT_DEFAULTS)
    except OpPrereqError as err:
        raise OpPrereqError(f"While verify diskparams options: {err.args[0]}",
                            ECODE_INVAL) from None


def _check_group_ipolicy(cluster: Cluster, ipolicy: dict[str, Any]) -> None:
    """The group's policy filled from the cluster's: valid, and allowing only
    enabled templates."""
    full = fill_ipolicy(cluster.ipolicy, ipolicy)
    try:
        check_ipolicy_syntax(full, False)
    except ConfigurationError as err:
        raise OpPrereqError(f"Invalid instance policy: {err.args[0]}", ECODE_INVAL) from None
    check_ipolicy_vs_disk_templates(full, cluster.enabled_disk_templates)


def new_group_params(group: NodeGroup, cluster: Cluster,
                     op: OpGroupSetParams) -> list[list[str]]:
    """Apply OP_GROUP_SET_PARAMS to ``group`` in place, as LUGroupSetParams does.

    Changes merge into what the group has (``"default"`` drops a key); values
    are coerced to their declared types.  Returns the ``[param, new value]``
    pairs Ganeti reports (node and disk parameters only).
    """
    if op.diskparams:
        check_disk_access_modes(op.diskparams)
    new_nd = new_disk = new_ipolicy = None
    if op.ndparams:
        new_nd = force_dict_type(get_updated_params(group.ndparams, op.ndparams),
                                 NDS_PARAMETER_TYPES)
    if op.diskparams:
        per_template = {
            template: force_dict_type(
                get_updated_params(group.diskparams.get(template, {}),
                                   op.diskparams[template]), DISK_DT_TYPES)
            for template in sorted(constants.DISK_TEMPLATES) if template in op.diskparams}
        new_disk = fill_dict(group.diskparams, per_template)
        _verify_diskparams(new_disk)
    if op.ipolicy:
        new_ipolicy = get_updated_ipolicy(group.ipolicy, op.ipolicy, group_policy=True)
        _check_group_ipolicy(cluster, new_ipolicy)
    result: list[list[str]] = []
    if new_nd is not None:
        group.ndparams = new_nd
        result.append(["ndparams", str(new_nd)])
    if new_disk is not None:
        group.diskparams = new_disk
        result.append(["diskparams", str(new_disk)])
    if op.alloc_policy:
        group.alloc_policy = op.alloc_policy
    if new_ipolicy is not None:
        group.ipolicy = new_ipolicy
    return result


def add_group_params(group: NodeGroup, cluster: Cluster, op: OpGroupAdd) -> None:
    """Fill a new group's parameters from OP_GROUP_ADD, checked as LUGroupAdd does."""
    if op.ndparams:
        group.ndparams = force_dict_type(copy.deepcopy(op.ndparams), NDS_PARAMETER_TYPES)
    if op.diskparams:
        diskparams = copy.deepcopy(op.diskparams)
        for values in diskparams.values():
            force_dict_type(values, DISK_DT_TYPES)
        _verify_diskparams(diskparams)
        group.diskparams = diskparams
    if op.ipolicy:
        # Ganeti's LUGroupAdd, unlike LUGroupSetParams, accepts a standard spec.
        policy = dict(op.ipolicy)
        std = policy.pop(constants.IPOLICY_STD, None)
        group.ipolicy = get_updated_ipolicy({}, policy, group_policy=True)
        if std is not None:
            if not isinstance(std, dict):
                raise OpPrereqError(f"Invalid value for attribute 'std': '{std}'",
                                    ECODE_INVAL)
            group.ipolicy[constants.IPOLICY_STD] = force_dict_type(dict(std),
                                                                   ISPECS_PARAMETER_TYPES)
        _check_group_ipolicy(cluster, group.ipolicy)
    if op.alloc_policy:
        group.alloc_policy = op.alloc_policy


class _OneGroupLU(LogicalUnit):
    """A unit acting on one existing group: resolves it and locks it (by UUID)."""

    op: OpGroupRemove | OpGroupRename | OpGroupSetParams
    HTYPE = hookdefs.HTYPE_GROUP

    def build_hooks_env(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the master, in both phases."""
        master = self.ctx.config.config.cluster.master_node
        return [master], [master]

    def expand_names(self) -> None:
        super().expand_names()
        self.group = copy.deepcopy(nodesmod.find_group(self.ctx.config.config,
                                                       self.op.group_name))
        self.needed_locks[LEVEL_NODEGROUP] = [self.group.uuid]


class LUGroupAdd(LogicalUnit):
    """OP_GROUP_ADD."""

    OP_ID = "OP_GROUP_ADD"
    op: OpGroupAdd
    HPATH = "group-add"
    HTYPE = hookdefs.HTYPE_GROUP

    def build_hooks_env(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the master, in both phases."""
        master = self.ctx.config.config.cluster.master_node
        return [master], [master]

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        _check_new_name(cfg, self.op.group_name)
        checked = NodeGroup(uuid="x", name="x")
        add_group_params(checked, cfg.cluster, self.op)  # check only
        # Ganeti's unit converts the parameters' values in its opcode (ForceDictType)
        if self.op.ndparams:
            self.record_op(ndparams=checked.ndparams)
        if self.op.diskparams:
            self.record_op(diskparams=checked.diskparams)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        name = self.op.group_name
        now = self.ctx.clock.seconds()
        uuid = str(uuidmod.uuid4())

        def change(cfg: ConfigData) -> None:
            _check_new_name(cfg, name)
            group = NodeGroup(uuid=uuid, name=name, ctime=now, mtime=now)
            add_group_params(group, cfg.cluster, self.op)
            cfg.nodegroups[group.uuid] = group

        await self.update_config(change)
        await self.ctx.locks.add(LEVEL_NODEGROUP, [uuid])
        return None


class LUGroupRemove(_OneGroupLU):
    """OP_GROUP_REMOVE: only an empty group, and never the last one."""

    OP_ID = "OP_GROUP_REMOVE"
    op: OpGroupRemove
    HPATH = "group-remove"

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        members = sorted(n.name for n in cfg.nodes.values() if n.group == self.group.uuid)
        if members:
            raise OpPrereqError(f"Group '{self.group.name}' not empty, has the following "
                                f"nodes: {', '.join(members)}", ECODE_STATE)
        if len(cfg.nodegroups) == 1:
            raise OpPrereqError(f"Group '{self.group.name}' is the only group, cannot be "
                                "removed", ECODE_STATE)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        uuid = self.group.uuid

        def change(cfg: ConfigData) -> None:
            if any(n.group == uuid for n in cfg.nodes.values()):
                raise OpPrereqError(f"Group '{self.group.name}' is not empty any more",
                                    ECODE_STATE)
            del cfg.nodegroups[uuid]

        await self.update_config(change)
        self.ctx.locks.remove(self.ctx.owner, LEVEL_NODEGROUP, [uuid])
        return None


class LUGroupRename(_OneGroupLU):
    """OP_GROUP_RENAME."""

    OP_ID = "OP_GROUP_RENAME"
    op: OpGroupRename
    HPATH = "group-rename"

    def build_hooks_env(self) -> dict[str, Any]:
        return {"OLD_NAME": self.op.group_name, "NEW_NAME": self.op.new_name}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the master and the group's nodes, in both phases."""
        cfg = self.ctx.config.config
        master = cfg.cluster.master_node
        nodes = [master] + sorted(u for u, n in cfg.nodes.items()
                                  if n.group == self.group.uuid and u != master)
        return nodes, nodes

    def check_prereq(self) -> None:
        _check_new_name(self.ctx.config.config, self.op.new_name, rename=True)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return self.op.new_name
        uuid, new = self.group.uuid, self.op.new_name
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            _check_new_name(cfg, new, rename=True)
            group = cfg.nodegroups[uuid]
            group.name = new
            group.serial_no += 1
            group.mtime = now

        await self.update_config(change)  # the lock (by UUID) stays as it is
        return new


class LUGroupSetParams(_OneGroupLU):
    """OP_GROUP_SET_PARAMS: result is a list of [param, new value]."""

    OP_ID = "OP_GROUP_SET_PARAMS"
    op: OpGroupSetParams
    HPATH = "group-modify"

    def build_hooks_env(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name, "NEW_ALLOC_POLICY": self.op.alloc_policy}

    def check_prereq(self) -> None:
        op = self.op  # (hv_state and disk_state are reserved: never stored)
        if all(v is None for v in (op.alloc_policy, op.ndparams, op.diskparams,
                                   op.ipolicy)):
            raise OpPrereqError("Please pass at least one modification", ECODE_INVAL)
        cfg = self.ctx.config.config
        new_group_params(copy.deepcopy(cfg.nodegroups[self.group.uuid]), cfg.cluster,
                         self.op)

    async def exec(self) -> Any:
        uuid = self.group.uuid
        now = self.ctx.clock.seconds()
        if self.op.dry_run:
            return None

        def change(cfg: ConfigData) -> list[list[str]]:
            group = cfg.nodegroups[uuid]
            result = new_group_params(group, cfg.cluster, self.op)
            group.serial_no += 1
            group.mtime = now
            return result

        return await self.update_config(change)


class LUGroupAssignNodes(LogicalUnit):
    """OP_GROUP_ASSIGN_NODES: move nodes into a group."""

    OP_ID = "OP_GROUP_ASSIGN_NODES"
    op: OpGroupAssignNodes

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        self.group = nodesmod.find_group(cfg, self.op.group_name)
        found = [nodesmod.find_node(cfg, n) for n in self.op.nodes or []]
        # Ganeti's: the nodes' UUIDs and full names, in the job's opcode
        self.record_op(node_uuids=[n.uuid for n in found], nodes=[n.name for n in found])
        names = list(self.op.nodes or []) + list(self.op.node_uuids or [])
        if not names:
            raise OpPrereqError("No node to assign was given", ECODE_INVAL)
        self.node_uuids = sorted({nodesmod.find_node(cfg, n).uuid for n in names})
        for inst in cfg.instances.values():
            nodes = nodesmod.instance_nodes(cfg, inst)
            moving = nodes & set(self.node_uuids)
            if moving and moving != nodes and not self.op.force:
                raise OpPrereqError(f"Moving the nodes would split instance {inst.name} "
                                    "between groups; use --force to do it anyway",
                                    ECODE_STATE)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        target, moving = self.group.uuid, self.node_uuids
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            for uuid in moving:
                node = cfg.nodes[uuid]
                if node.group == target:
                    continue
                old = cfg.nodegroups.get(node.group)
                if old is not None and uuid in old.members:
                    old.members.remove(uuid)
                cfg.nodegroups[target].members.append(uuid)
                node.group = target
                node.serial_no += 1
                node.mtime = now

        await self.update_config(change)
        return None
