"""Node group logical units: add, remove, rename, change and assign nodes."""

from __future__ import annotations

import copy
import uuid as uuidmod
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import ECODE_EXISTS, ECODE_INVAL, ECODE_STATE, OpPrereqError
from ganeti.core.objects import ConfigData, NodeGroup
from ganeti.master import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODEGROUP
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.cluster import merge_ipolicy
from ganeti.master.lu.node import check_ndparams


def _check_diskparams(values: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for template, params in (values or {}).items():
        defaults = constants.DISK_DT_DEFAULTS.get(template)
        if defaults is None:
            raise OpPrereqError(f"Disk template {template!r} is not known", ECODE_INVAL)
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            raise OpPrereqError(f"Unknown disk parameter(s) for {template}: "
                                f"{', '.join(unknown)}", ECODE_INVAL)
        out[template] = dict(params)
    return out


def _check_new_name(cfg: ConfigData, name: str) -> None:
    if cfg.group_by_name(name) is not None:
        raise OpPrereqError(f"Desired group name '{name}' already exists as a node group",
                            ECODE_EXISTS)


class _GroupParamsMixin:
    op: dict[str, Any]

    def _params(self, group: NodeGroup, cluster_ipolicy: dict[str, Any]) -> list[list[str]]:
        op = self.op
        result: list[list[str]] = []
        if op.get("alloc_policy"):
            group.alloc_policy = op["alloc_policy"]
            result.append(["alloc_policy", op["alloc_policy"]])
        if op.get("ndparams"):
            group.ndparams.update(check_ndparams(op["ndparams"]))
            result.append(["ndparams", str(group.ndparams)])
        if op.get("diskparams"):
            for template, params in _check_diskparams(op["diskparams"]).items():
                group.diskparams.setdefault(template, {}).update(params)
            result.append(["diskparams", str(group.diskparams)])
        if op.get("ipolicy"):
            merged = merge_ipolicy(copy.deepcopy(cluster_ipolicy) | group.ipolicy,
                                   op["ipolicy"])
            group.ipolicy = {k: v for k, v in merged.items()
                             if k in op["ipolicy"] or k in group.ipolicy}
            result.append(["ipolicy", str(group.ipolicy)])
        return result


class _OneGroupLU(LogicalUnit):
    """A unit acting on one existing group: resolves it and locks it."""

    def expand_names(self) -> None:
        super().expand_names()
        self.group = copy.deepcopy(nodesmod.find_group(self.ctx.config.config,
                                                       self.op["group_name"]))
        self.needed_locks[LEVEL_NODEGROUP] = [self.group.name]


class LUGroupAdd(_GroupParamsMixin, LogicalUnit):
    """OP_GROUP_ADD."""

    OP_ID = "OP_GROUP_ADD"

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        _check_new_name(cfg, self.op["group_name"])
        self._params(NodeGroup(uuid="x", name="x"), cfg.cluster.ipolicy)  # validate only

    async def exec(self) -> Any:
        if self.op.get("dry_run"):
            return None
        name = self.op["group_name"]
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            _check_new_name(cfg, name)
            group = NodeGroup(uuid=str(uuidmod.uuid4()), name=name, ctime=now, mtime=now)
            self._params(group, cfg.cluster.ipolicy)
            cfg.nodegroups[group.uuid] = group

        await self.ctx.config.update(change)
        await self.ctx.locks.add(LEVEL_NODEGROUP, [name])
        return None


class LUGroupRemove(_OneGroupLU):
    """OP_GROUP_REMOVE: only an empty group, and never the last one."""

    OP_ID = "OP_GROUP_REMOVE"

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
        if self.op.get("dry_run"):
            return None
        uuid = self.group.uuid

        def change(cfg: ConfigData) -> None:
            if any(n.group == uuid for n in cfg.nodes.values()):
                raise OpPrereqError(f"Group '{self.group.name}' is not empty any more",
                                    ECODE_STATE)
            del cfg.nodegroups[uuid]

        await self.ctx.config.update(change)
        self.ctx.locks.remove(self.ctx.owner, LEVEL_NODEGROUP, [self.group.name])
        return None


class LUGroupRename(_OneGroupLU):
    """OP_GROUP_RENAME."""

    OP_ID = "OP_GROUP_RENAME"

    def check_prereq(self) -> None:
        _check_new_name(self.ctx.config.config, self.op["new_name"])

    async def exec(self) -> Any:
        if self.op.get("dry_run"):
            return self.op["new_name"]
        uuid, new = self.group.uuid, self.op["new_name"]
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            _check_new_name(cfg, new)
            group = cfg.nodegroups[uuid]
            group.name = new
            group.serial_no += 1
            group.mtime = now

        await self.ctx.config.update(change)
        self.ctx.locks.remove(self.ctx.owner, LEVEL_NODEGROUP, [self.group.name])
        await self.ctx.locks.add(LEVEL_NODEGROUP, [new])
        return new


class LUGroupSetParams(_GroupParamsMixin, _OneGroupLU):
    """OP_GROUP_SET_PARAMS: result is a list of [param, new value]."""

    OP_ID = "OP_GROUP_SET_PARAMS"

    def check_prereq(self) -> None:
        if not any(self.op.get(k) for k in ("alloc_policy", "ndparams", "diskparams",
                                            "ipolicy")):
            raise OpPrereqError("Please pass at least one modification", ECODE_INVAL)
        cfg = self.ctx.config.config
        self._params(copy.deepcopy(cfg.nodegroups[self.group.uuid]), cfg.cluster.ipolicy)

    async def exec(self) -> Any:
        uuid = self.group.uuid
        now = self.ctx.clock.seconds()
        if self.op.get("dry_run"):
            return None

        def change(cfg: ConfigData) -> list[list[str]]:
            group = cfg.nodegroups[uuid]
            result = self._params(group, cfg.cluster.ipolicy)
            group.serial_no += 1
            group.mtime = now
            return result

        return await self.ctx.config.update(change)


class LUGroupAssignNodes(LogicalUnit):
    """OP_GROUP_ASSIGN_NODES: move nodes into a group."""

    OP_ID = "OP_GROUP_ASSIGN_NODES"

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        self.group = nodesmod.find_group(cfg, self.op["group_name"])
        names = list(self.op.get("nodes") or []) + list(self.op.get("node_uuids") or [])
        if not names:
            raise OpPrereqError("No node to assign was given", ECODE_INVAL)
        self.node_uuids = sorted({nodesmod.find_node(cfg, n).uuid for n in names})
        for inst in cfg.instances.values():
            nodes = nodesmod.instance_nodes(cfg, inst)
            moving = nodes & set(self.node_uuids)
            if moving and moving != nodes and not self.op.get("force"):
                raise OpPrereqError(f"Moving the nodes would split instance {inst.name} "
                                    "between groups; use --force to do it anyway",
                                    ECODE_STATE)

    async def exec(self) -> Any:
        if self.op.get("dry_run"):
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

        await self.ctx.config.update(change)
        return None
