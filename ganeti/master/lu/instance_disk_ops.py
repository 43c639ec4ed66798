"""Instance disk units: activate, deactivate, grow and recreate the disks of one
instance (the disks themselves are made on the nodes by :mod:`.instance_storage`)."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import (
    OpInstanceActivateDisks,
    OpInstanceDeactivateDisks,
    OpInstanceGrowDisk,
    OpInstanceRecreateDisks,
)
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_drbd, instance_storage
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_ops import (
    NOT_RUNNING,
    InstanceLU,
    check_admin_state,
    check_not_running,
)
from ganeti.master.lu.instance_placement import recreate_nodes

#: What recreating a disk may change (Ganeti's LUInstanceRecreateDisks._MODIFYABLE).
_RECREATE_MODIFIABLE = frozenset({"size", "mode", "spindles"})


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
        if self.op.wait_for_sync:
            cfg = self.ctx.config.config
            if not await instance_drbd.wait_for_sync(self, cfg, cfg.instances[inst.uuid]):
                await self.set_disks_active(False)
                raise OpExecError("Some disks of the instance are degraded!")
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
        cfg = self.ctx.config.config
        mirrored = self.disk.dev_type in instance_drbd.DTS_INT_MIRROR
        if self.disk.dev_type in (c.DT_PLAIN, c.DT_DRBD8):  # Ganeti's _CheckDiskSpace
            data = self.disk.children[0] if self.disk.children else self.disk
            vg = str((data.logical_id or [cfg.cluster.volume_group_name])[0])
            for uuid in instance_storage.disk_nodes(inst, self.disk):
                if not instance_storage.exclusive_storage(cfg, cfg.nodes[uuid]):
                    await instance_storage.check_vg_free(self, cfg.nodes[uuid],
                                                         {vg: self.delta})
        if mirrored:  # Ganeti assembles the disk first: a drbd device grows when set up
            await instance_storage.assemble_disks(self, cfg, inst, disks=[self.disk])
        self.ctx.feedback("message", f"Growing disk {self.op.disk} of instance '{inst.name}' "
                                     f"by {self.delta} MiB to {self.target} MiB")
        await instance_storage.grow_disk(self, cfg, inst, self.disk, self.delta)
        disk_uuid, target = self.disk.uuid, self.target

        def change(cfg: ConfigData) -> None:
            disk = cfg.disks[disk_uuid]
            disk.size = target
            disk.serial_no = (disk.serial_no or 0) + 1
            cfg.instances[inst.uuid].serial_no += 1
        await self.update_config(change)
        if mirrored:
            await self._after_grow()
        return None

    async def _after_grow(self) -> None:
        """Ganeti's end of a grow: wait for the sync (then shut the disk down again if
        the instance's disks are not active), or warn that it stays up."""
        cfg = self.ctx.config.config
        inst = cfg.instances[self.instance.uuid]
        disk = cfg.disks[self.disk.uuid]
        if self.op.wait_for_sync:
            if not await instance_drbd.wait_for_sync(self, cfg, inst, disks=[disk]):
                instance_drbd.warning(self, "Disk syncing has not returned a good status; "
                                            "check the instance")
            if not inst.disks_active:
                await check_not_running(self, inst, "cannot shutdown disks")
                await instance_storage.shutdown_disks(self, cfg, inst, disks=[disk])
        elif not inst.disks_active:
            instance_drbd.warning(self, "Not shutting down the disk even if the instance is "
                                        "not supposed to be running because no wait for "
                                        "sync mode was requested")


class LUInstanceRecreateDisks(InstanceLU):
    """OP_INSTANCE_RECREATE_DISKS: create missing disks again, in place or on other
    nodes (``nodes``: as many as the instance has, the primary first), with Ganeti's
    checks (Ganeti's LUInstanceRecreateDisks).  The disks must be gone: an existing
    one fails its creation, as in Ganeti.  On other nodes the disks are made first
    and the config changed afterwards, so a failed creation leaves the instance as
    it was; disks left on the old nodes are the administrator's to remove."""

    OP_ID = "OP_INSTANCE_RECREATE_DISKS"
    op: OpInstanceRecreateDisks
    HPATH = "instance-recreate-disks"
    NODE_LEVELS = (LEVEL_NODE, LEVEL_NODE_RES)

    def check_arguments(self) -> None:
        op = self.op
        items = [(item, {}) if isinstance(item, int) else (item[0], dict(item[1]))
                 for item in op.disks or []]
        if items and all(isinstance(item, int) for item in op.disks or []):
            items = [(idx, {}) for idx in sorted({idx for idx, _ in items})]
        seen = [idx for idx, _ in items]
        duplicates = sorted({idx for idx in seen if seen.count(idx) > 1})
        if duplicates:
            raise OpPrereqError("Some disks have been specified more than once: "
                                f"{', '.join(map(str, duplicates))}", ECODE_INVAL)
        if (op.nodes or op.node_uuids) and op.iallocator:
            raise OpPrereqError("Do not specify both, iallocator and node", ECODE_INVAL)
        for idx, params in items:
            unknown = set(params) - _RECREATE_MODIFIABLE
            if unknown:
                raise OpPrereqError(f"Parameters for disk {idx} try to change unmodifyable "
                                    f"parameter(s): {', '.join(sorted(unknown))}",
                                    ECODE_INVAL)
        self.items = items

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        wanted = self.op.node_uuids or self.op.nodes or []
        found = [nodesmod.find_node(cfg, n) for n in wanted]
        self.new_nodes = [node.uuid for node in found]
        # Ganeti's: the cluster's default only with "-I ." (no default without -I)
        self.allocators = iajobs.allocator_names(cfg, self.op.iallocator, bool(wanted)) \
            if self.op.iallocator else []
        if found:  # Ganeti's GetWantedNodes result, in the job's opcode
            self.record_op(node_uuids=self.new_nodes, nodes=[node.name for node in found])

    def declare_locks(self, level: int) -> None:
        if self.allocators and level in self.NODE_LEVELS:
            # Ganeti's: every node of the group of the instance's primary node
            cfg = self.ctx.config.config
            inst = ic.find_instance(cfg, self.name)
            group = cfg.nodegroups[cfg.nodes[inst.primary_node].group]
            self.needed_locks[level] = sorted(set(group.members) | set(
                nodesmod.instance_nodes(cfg, inst)))
            self.recalculate_locks.pop(level, None)
        elif self.new_nodes and level in self.NODE_LEVELS:  # Ganeti: only the new nodes
            self.needed_locks[level] = sorted(set(self.new_nodes))
            self.recalculate_locks.pop(level, None)
        else:
            super().declare_locks(level)

    async def before_prereq(self) -> None:
        """With an allocator: an allocate request for the instance as it is (Ganeti's
        _RunAllocator of recreate-disks), whose answer are the new nodes."""
        if self.allocators:
            self.new_nodes = await recreate_nodes(self)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        if self.new_nodes:
            current = nodesmod.instance_nodes(cfg, inst)
            if len(self.new_nodes) != len(current):
                raise OpPrereqError(f"Instance {inst.name} currently has {len(current)} "
                                    f"nodes, but {len(self.new_nodes)} replacement nodes "
                                    "were specified", ECODE_INVAL)
        primary = self.new_nodes[0] if self.new_nodes else inst.primary_node
        ic.check_node_online(cfg.nodes[primary])
        disks = instance_storage.instance_disks(cfg, inst)
        if not disks:
            raise OpPrereqError(f"Instance '{inst.name}' has no disks", ECODE_INVAL)
        # with new nodes and an offline primary the instance's state is not checked
        self.check_state = not (self.new_nodes and cfg.nodes[inst.primary_node].offline)
        if self.check_state:
            check_admin_state(inst, NOT_RUNNING, "cannot recreate disks")
        self.indices = dict(self.items) if self.items else {i: {} for i in range(len(disks))}
        if max(self.indices) >= len(disks):
            raise OpPrereqError(f"Invalid disk index '{max(self.indices)}'", ECODE_INVAL)
        if self.new_nodes and sorted(self.indices) != list(range(len(disks))):
            raise OpPrereqError("Can't recreate disks partially and change the nodes at the "
                                "same time", ECODE_INVAL)
        nodes = self.new_nodes or sorted(nodesmod.instance_nodes(cfg, inst))
        excl = any(instance_storage.exclusive_storage(cfg, cfg.nodes[n]) for n in nodes)
        for params in self.indices.values():
            instance_storage.check_spindles(params, excl, False)

    async def exec(self) -> Any:
        inst = self.instance
        if self.check_state:
            await check_not_running(self, inst, "cannot recreate disks")
        if self.op.dry_run:
            return None
        cfg = self.ctx.config.config
        disks = instance_storage.instance_disks(cfg, inst)
        chosen = []
        for idx, params in sorted(self.indices.items()):
            disk = disks[idx].clone()
            if params.get("size") is not None:
                disk.size = int(params["size"])
            if params.get("mode") is not None:
                disk.mode = ic.check_disk_mode(params["mode"])
            if params.get("spindles") is not None:
                disk.spindles = int(params["spindles"])
            if self.new_nodes:
                disk.nodes = list(self.new_nodes)
                if disk.dev_type == c.DT_DRBD8 and disk.logical_id \
                        and len(disk.logical_id) == 6:
                    # Ganeti's: the new nodes with new minors; port and secret stay
                    _a, _b, port, _ma, _mb, secret = disk.logical_id
                    minors = self.ctx.reservations.allocate_drbd_minors(
                        self.ctx.owner, cfg, list(self.new_nodes))
                    disk.logical_id = [*self.new_nodes, port, *minors, secret]
                    for child in disk.children:
                        child.nodes = list(self.new_nodes)
            chosen.append(disk)
        target = inst.clone()
        if self.new_nodes:
            self.ctx.feedback("message", " - WARNING: Changing the instance's nodes, you "
                                         "will have to remove any disks left on the older "
                                         "nodes manually")
            target.primary_node = self.new_nodes[0]
        view = cfg.view(disks={**cfg.disks, **{d.uuid: d for d in chosen}},
                        instances={**cfg.instances, inst.uuid: target})
        await instance_storage.create_disks(self, view, target, chosen)
        uuid, primary, now = inst.uuid, target.primary_node, self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            for disk in chosen:
                cfg.disks[disk.uuid] = disk.clone()
            obj = cfg.instances[uuid]
            if obj.primary_node != primary:
                obj.primary_node = primary
                obj.serial_no += 1
                obj.mtime = now
        await self.update_config(change)
        return None


LUS: tuple[type[LogicalUnit], ...] = (
    LUInstanceActivateDisks, LUInstanceDeactivateDisks, LUInstanceGrowDisk,
    LUInstanceRecreateDisks,
)
