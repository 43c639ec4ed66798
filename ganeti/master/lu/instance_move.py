"""OP_INSTANCE_MOVE: move an instance by copying its disks (Ganeti's LUInstanceMove).

Ganeti's checks: every disk copyable (Ganeti's DTS_COPYABLE: ``plain`` and
``file``; a diskless instance has nothing to copy), a target that is not the
primary, online, not drained, vm_capable, within its group's instance policy
(unless ``ignore_ipolicy``), with the instance's maximum memory free when the
instance is up.  ``sharedfile`` is refused as Ganeti refuses it: its file is
the same on every node (a copy would overwrite it with itself); such an
instance moves by failover or migration.

The steps: shut the instance down on its primary (``shutdown_timeout``; a
failure stops the move unless ``ignore_consistency``), create the disks on
the target, copy each disk's data, switch the config to the target, remove
the disks on the old node, and start the instance there if it was marked up.
A failed copy removes the new disks again and leaves the instance where it
was (stopped).

**Difference from Ganeti**: Ganeti streams the data with its import/export
daemons (``compress`` chooses the compression of that stream).  Here the
master copies the data chunk by chunk from node to node
(``blockdev_read_chunk`` on the old node, ``blockdev_write_chunk`` on the new
one; chunks of zeros travel as null and a sparse file target skips them):
the chunks go uncompressed, and ``compress`` is checked against the cluster's
compression tools as Ganeti checks it for exports and imports (Ganeti's move
takes any value and fails in its transfer on an unknown one).
"""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import Disk, Instance
from ganeti.core.opcodes.views import OpInstanceMove
from ganeti.core.params_merge import comma_join
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_policy, instance_storage
from ganeti.master.lu.base import LOCKS_APPEND, LogicalUnit
from ganeti.master.lu.instance_migration_reconcile import set_primary
from ganeti.master.lu.instance_ops import InstanceLU

#: Ganeti's DTS_COPYABLE.
COPYABLE = frozenset({c.DT_PLAIN, c.DT_FILE})
#: Bytes per copied chunk.
CHUNK = 4 * 1024 * 1024
#: Ganeti's IEC_NONE.
COMPRESS_NONE = "none"


class LUInstanceMove(InstanceLU):
    """OP_INSTANCE_MOVE."""

    OP_ID = "OP_INSTANCE_MOVE"
    op: OpInstanceMove
    HPATH = "instance-move"

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        node = nodesmod.find_node(cfg, self.op.target_node_uuid or self.op.target_node)
        self.target_uuid = node.uuid
        self.record_op(target_node=node.name, target_node_uuid=node.uuid)
        self.needed_locks[LEVEL_NODE] = [node.uuid]
        self.needed_locks[LEVEL_NODE_RES] = []
        self.recalculate_locks[LEVEL_NODE] = LOCKS_APPEND

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_NODE:
            self.lock_instances_nodes(primary_only=True)
        elif level == LEVEL_NODE_RES:
            self.needed_locks[level] = list(self.needed_locks.get(LEVEL_NODE) or [])

    def build_hooks_env(self) -> dict[str, Any]:
        env = {"TARGET_NODE": ic.node_name(self.ctx.config.config, self.target_uuid),
               "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout}
        env.update(super().build_hooks_env())
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        nodes = [cfg.cluster.master_node, self.instance.primary_node, self.target_uuid]
        return nodes, nodes

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        compress = self.op.compress
        if compress != COMPRESS_NONE and compress not in (cfg.cluster.compression_tools
                                                          or []):
            raise OpPrereqError(f"Compression tool not allowed, tools allowed are "
                                f"[{comma_join(cfg.cluster.compression_tools or [])}]",
                                ECODE_INVAL)
        for idx, disk in enumerate(instance_storage.instance_disks(cfg, inst)):
            if disk.dev_type not in COPYABLE:
                raise OpPrereqError(f"Instance disk {idx} has disk type {disk.dev_type} and "
                                    "is not suitable for copying", ECODE_STATE)
        target = cfg.nodes[self.target_uuid]
        if target.uuid == inst.primary_node:
            raise OpPrereqError(f"Instance {inst.name} is already on the node {target.name}",
                                ECODE_STATE)
        ic.check_node_online(target)
        ic.check_node_not_drained(target)
        ic.check_node_vm_capable(target)
        self.be = params_fill.fill_instance_be(cfg.cluster, inst)
        instance_policy.check_target_policy(cfg, inst, target.group, self.op.ignore_ipolicy,
                                            lambda text: self.ctx.feedback("message", text))
        if inst.admin_state != c.ADMINST_UP:
            self.ctx.feedback("message", " - INFO: Not checking memory on the secondary node "
                                         "as instance will not be started")

    def say(self, text: str) -> None:
        self.ctx.feedback("message", f" - INFO: {text}")

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        inst = self.instance
        source = cfg.nodes[inst.primary_node]
        target = cfg.nodes[self.target_uuid]
        if inst.admin_state == c.ADMINST_UP:
            await ic.check_node_free_memory(self, target, f"failing over instance {inst.name}",
                                            int(self.be.get(c.BE_MAXMEM) or 0))
        if self.op.dry_run:
            return None
        self.say(f"Shutting down instance {inst.name} on source node {source.name}")
        result = await self.ctx.rpc().call_one(
            source, "instance_shutdown",
            [ic.instance_arg(inst), self.op.shutdown_timeout, ic.reason_trail(self)])
        if not result.success:
            msg = (f"Could not shutdown instance {inst.name} on node {source.name}. "
                   f"Proceeding anyway. Please make sure node {source.name} is down. Error "
                   f"details: {result.fail_msg}")
            if not self.op.ignore_consistency:
                raise OpExecError(f"Could not shutdown instance {inst.name} on node "
                                  f"{source.name}: {result.fail_msg}")
            self.ctx.feedback("message", f" - WARNING: {msg}")
        disks = instance_storage.instance_disks(cfg, inst)
        at_target = _placed(inst, disks, target.uuid)
        try:
            await instance_storage.create_disks(self, cfg, at_target[0], at_target[1])
        except OpExecError:
            self.ctx.feedback("message", " - WARNING: Device creation failed")
            raise
        try:
            for idx, (old, new) in enumerate(zip(disks, at_target[1], strict=True)):
                await self._copy(idx, inst, old, source, at_target[0], new, target)
        except OpExecError as err:
            self.ctx.feedback("message", f" - WARNING: {err}")
            self.ctx.feedback("message", " - WARNING: Some disks failed to copy, aborting")
            await instance_storage.remove_disks(self, cfg, at_target[0], at_target[1],
                                                ignore_failures=True)
            raise OpExecError("Errors during disk copy: Failed to transfer instance "
                              "data") from None
        await set_primary(self, target.uuid)
        self.say("Removing the disks on the original node")
        at_source = _placed(inst, disks, source.uuid)
        await instance_storage.remove_disks(self, self.ctx.config.config, at_source[0],
                                            at_source[1], ignore_failures=True)
        return await self._start(target)

    async def _copy(self, idx: int, inst: Instance, old: Disk, source: Any,
                    placed: Instance, new: Disk, target: Any) -> None:
        """Copy one disk's data from ``source`` to ``target``, chunk by chunk."""
        total = old.size * 1024 * 1024
        self.say(f"Copying disk/{idx} ({old.size} MiB) from {source.name} to {target.name}")
        rpc = self.ctx.rpc()
        offset = 0
        while offset < total:
            length = min(CHUNK, total - offset)
            got = await rpc.call_one(source, "blockdev_read_chunk",
                                     [DiskArg(old, inst), offset, length])
            got.raise_if_failed(f"Could not read disk/{idx} on node {source.name}")
            count, data = got.payload
            count = min(int(count), total - offset)  # (a hole may reach past the size)
            if count <= 0:
                raise OpExecError(f"disk/{idx} on node {source.name} ends at {offset} bytes, "
                                  f"before its size ({total} bytes)")
            put = await rpc.call_one(target, "blockdev_write_chunk",
                                     [DiskArg(new, placed), offset, count, data])
            put.raise_if_failed(f"Could not write disk/{idx} on node {target.name}")
            offset += count
        self.say(f"disk/{idx} copied ({old.size} MiB)")

    async def _start(self, target: Any) -> None:
        inst = self.instance
        cfg = self.ctx.config.config
        if inst.admin_state != c.ADMINST_UP:
            if inst.disks_active:
                await instance_storage.shutdown_disks(self, cfg, inst)
            return
        self.say(f"Starting instance {inst.name} on node {target.name}")
        if inst.disks:
            try:
                await instance_storage.assemble_disks(self, cfg, inst)
            except OpExecError:
                raise OpExecError("Can't activate the instance's disks") from None
        result = await self.ctx.rpc().call_one(
            target, "instance_start", [ic.instance_arg(self.instance), False,
                                       ic.reason_trail(self)])
        if not result.success:
            await instance_storage.shutdown_disks(self, self.ctx.config.config, self.instance)
            raise OpExecError(f"Could not start instance {inst.name} on node {target.name}: "
                              f"{result.fail_msg}")


def _placed(inst: Instance, disks: list[Disk], node_uuid: str) -> tuple[Instance, list[Disk]]:
    """Copies of the instance and its disks as they are on ``node_uuid``."""
    placed = copy.deepcopy(inst)
    placed.primary_node = node_uuid
    out = []
    for disk in disks:
        moved = copy.deepcopy(disk)
        moved.nodes = [node_uuid]
        out.append(moved)
    return placed, out


LUS: tuple[type[LogicalUnit], ...] = (LUInstanceMove,)
