"""Instance disk units: activate, deactivate, grow and recreate the disks of one
instance (the disks themselves are made on the nodes by :mod:`.instance_storage`)."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpPrereqError
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import (
    OpInstanceActivateDisks,
    OpInstanceDeactivateDisks,
    OpInstanceGrowDisk,
    OpInstanceRecreateDisks,
)
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_storage
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_ops import (
    NOT_RUNNING,
    InstanceLU,
    check_admin_state,
    check_not_running,
)


class LUInstanceActivateDisks(InstanceLU):
    """OP_INSTANCE_ACTIVATE_DISKS; the result is [[node, iv_name, device path], ...]."""

    OP_ID = "OP_INSTANCE_ACTIVATE_DISKS"
    op: OpInstanceActivateDisks
    NODE_LEVELS = (LEVEL_NODE,)

    def check_prereq(self) -> None:
        ic.check_node_online(self.ctx.config.config.nodes[self.instance.primary_node])

    async def exec(self) -> Any:
        inst = self.instance
        if not inst.disks:
            return []
        result = await instance_storage.assemble_disks(self, self.ctx.config.config, inst,
                                                 ignore_size=self.op.ignore_size)
        await self.set_disks_active(True)
        return [list(item) for item in result]


class LUInstanceDeactivateDisks(InstanceLU):
    """OP_INSTANCE_DEACTIVATE_DISKS."""

    OP_ID = "OP_INSTANCE_DEACTIVATE_DISKS"
    op: OpInstanceDeactivateDisks
    NODE_LEVELS = (LEVEL_NODE,)

    async def exec(self) -> Any:
        inst = self.instance
        if self.op.force:
            await self.stop_disks()
            return None
        await check_not_running(self, inst, "cannot deactivate disks")
        await self.stop_disks()
        return None


class LUInstanceGrowDisk(InstanceLU):
    """OP_INSTANCE_GROW_DISK."""

    OP_ID = "OP_INSTANCE_GROW_DISK"
    op: OpInstanceGrowDisk
    HPATH = "disk-grow"
    NODE_LEVELS = (LEVEL_NODE, LEVEL_NODE_RES)

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env.update(DISK=self.op.disk, AMOUNT=self.op.amount, ABSOLUTE=self.op.absolute)
        return env

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        for uuid in nodesmod.instance_nodes(cfg, inst):
            ic.check_node_online(cfg.nodes[uuid])
        disks = instance_storage.instance_disks(cfg, inst)
        if self.op.disk >= len(disks):
            raise OpPrereqError(f"Invalid disk index '{self.op.disk}'", ECODE_INVAL)
        self.disk = disks[self.op.disk]
        if self.disk.dev_type in (c.DT_DISKLESS,) or inst.disk_template == c.DT_DISKLESS:
            raise OpPrereqError("Instance's disk layout does not support growing",
                                ECODE_INVAL)
        if self.op.absolute:
            self.target = self.op.amount
            self.delta = self.target - self.disk.size
            if self.delta < 0:
                raise OpPrereqError(f"Requested size ({self.target}) is smaller than "
                                    f"current disk size ({self.disk.size})", ECODE_STATE)
        else:
            self.delta = self.op.amount
            self.target = self.disk.size + self.delta

    async def exec(self) -> Any:
        if self.op.dry_run or self.delta == 0:
            return None
        inst = self.instance
        self.ctx.feedback("message", f"Growing disk {self.op.disk} of instance '{inst.name}' "
                                     f"by {self.delta} MiB to {self.target} MiB")
        await instance_storage.grow_disk(self, self.ctx.config.config, inst, self.disk, self.delta)
        disk_uuid, target = self.disk.uuid, self.target

        def change(cfg: ConfigData) -> None:
            disk = cfg.disks[disk_uuid]
            disk.size = target
            disk.serial_no = (disk.serial_no or 0) + 1
            cfg.instances[inst.uuid].serial_no += 1
        await self.update_config(change)
        return None


class LUInstanceRecreateDisks(InstanceLU):
    """OP_INSTANCE_RECREATE_DISKS: create missing disks again (same nodes; relocation
    comes with allocators)."""

    OP_ID = "OP_INSTANCE_RECREATE_DISKS"
    op: OpInstanceRecreateDisks
    HPATH = "instance-recreate-disks"
    NODE_LEVELS = (LEVEL_NODE, LEVEL_NODE_RES)

    def check_arguments(self) -> None:
        if self.op.nodes or self.op.node_uuids or self.op.iallocator:
            raise OpPrereqError("Recreating disks on other nodes is not supported yet",
                                ECODE_INVAL)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        check_admin_state(inst, NOT_RUNNING, "cannot recreate disks")
        disks = instance_storage.instance_disks(cfg, inst)
        if not disks:
            raise OpPrereqError(f"Instance '{inst.name}' has no disks", ECODE_INVAL)
        self.indices: dict[int, dict[str, Any]] = {}
        for item in self.op.disks or []:
            idx, params = (item, {}) if isinstance(item, int) else (item[0], item[1])
            if idx >= len(disks):
                raise OpPrereqError(f"Invalid disk index '{idx}'", ECODE_INVAL)
            unknown = set(params) - {"size", "mode", "spindles"}
            if unknown:
                raise OpPrereqError(f"Parameter(s) {', '.join(sorted(unknown))} cannot be "
                                    "changed when recreating disks", ECODE_INVAL)
            self.indices[idx] = dict(params)
        if not self.indices:
            self.indices = {i: {} for i in range(len(disks))}

    async def exec(self) -> Any:
        inst = self.instance
        await check_not_running(self, inst, "cannot recreate disks")
        if self.op.dry_run:
            return None
        cfg = self.ctx.config.config
        disks = instance_storage.instance_disks(cfg, inst)
        chosen = []
        for idx, params in sorted(self.indices.items()):
            disk = disks[idx].clone()
            if "size" in params:
                disk.size = int(params["size"])
            if "mode" in params:
                disk.mode = ic.check_disk_mode(params["mode"])
            chosen.append(disk)

        def change(cfg: ConfigData) -> None:
            for disk in chosen:
                cfg.disks[disk.uuid] = disk.clone()
        await self.update_config(change)
        storage = instance_storage
        await storage.remove_disks(self, self.ctx.config.config, inst, chosen,
                                   ignore_failures=True)
        await storage.create_disks(self, self.ctx.config.config, inst, chosen)
        return None


LUS: tuple[type[LogicalUnit], ...] = (
    LUInstanceActivateDisks, LUInstanceDeactivateDisks, LUInstanceGrowDisk,
    LUInstanceRecreateDisks,
)
