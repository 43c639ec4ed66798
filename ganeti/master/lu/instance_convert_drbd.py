"""Disk template conversion plain <-> drbd for OP_INSTANCE_SET_PARAMS (Ganeti 3.0's
``LUInstanceSetParams._ConvertPlainToDrbd`` and ``_ConvertDrbdToPlain``).

plain -> drbd moves no data: the metadata volumes are made on the primary, both
volumes on the new secondary, each plain volume is *renamed* to its drbd disk's
data volume, then the drbd devices are created on both nodes; after the config
change the job waits for the sync (one look with ``--no-wait-for-sync``).  A
failure before the config change renames the volumes back and removes what was
made.  drbd -> plain keeps each disk's data volume on the primary as the new
plain disk; after the config change the secondary's volumes and the primary's
metadata volumes are removed and the ports go back to the cluster's pool.

The unit (:mod:`.instance_set_params`) shuts the disks down first, commits the
config (calling :meth:`Conversion.change` inside its config change) and then
calls :meth:`Conversion.finish`; :meth:`Conversion.undo` if the commit fails.
"""

from __future__ import annotations

import uuid as uuidmod
from typing import Any

from ganeti.core import constants as c
from ganeti.core import diskparams
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, GenericError, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Disk, Instance, Node
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_drbd, instance_storage
from ganeti.master.lu.base import LogicalUnit

#: The conversions done here (the others go through a copy of the data).
MODES = frozenset({(c.DT_PLAIN, c.DT_DRBD8), (c.DT_DRBD8, c.DT_PLAIN)})


def check_secondary(lu: LogicalUnit, cfg: ConfigData, pnode: Node, snode: Node) -> None:
    """Ganeti's checks of the new secondary of a conversion to drbd."""
    if snode.uuid == pnode.uuid:
        raise OpPrereqError(f"Given new secondary node {snode.name} is the same as the "
                            "primary node of the instance", ECODE_STATE)
    ic.check_node_online(snode)
    ic.check_node_not_drained(snode)
    ic.check_node_vm_capable(snode)
    if snode.group != pnode.group:
        instance_drbd.warning(lu, "The primary and secondary nodes are in two different "
                                  "node groups; the disk parameters from the first disk's "
                                  "node group will be used")


def refuse_other_modes(current: str, target: str) -> None:
    """drbd is converted to and from plain only (here, for now)."""
    if (current, target) not in MODES and c.DT_DRBD8 in (current, target):
        raise OpPrereqError(f"Conversion from the '{current}' to the '{target}' disk "
                            "template is not supported yet (plain <-> drbd only)",
                            ECODE_INVAL)


class Conversion:
    """One plain <-> drbd conversion of ``lu.instance`` (see the module doc)."""

    def __init__(self, lu: LogicalUnit, target: str, remote_uuid: str | None) -> None:
        self.lu = lu
        self.target = target
        self.remote_uuid = remote_uuid
        self.old: list[Disk] = []
        self.new: list[Disk] = []
        self._made: list[tuple[Node, Any]] = []  # volumes made (node, wire dict)
        self._renamed = False
        self._devices: list[tuple[Node, Disk]] = []

    def _log(self, text: str) -> None:
        self.lu.ctx.feedback("message", text)

    def _warn(self, text: str) -> None:
        instance_drbd.warning(self.lu, text)

    @property
    def _inst(self) -> Instance:
        inst: Instance = self.lu.instance  # type: ignore[attr-defined]
        return inst

    async def convert(self) -> tuple[list[Disk], list[Disk]]:
        """Everything before the config change; ``(old disks, new disks)``."""
        cfg = self.lu.ctx.config.config
        self.old = instance_storage.instance_disks(cfg, self._inst)
        if self.target == c.DT_DRBD8:
            await self._to_drbd(cfg)
        else:
            self._to_plain(cfg)
        return self.old, self.new

    # -- plain -> drbd ---------------------------------------------------------------

    async def _create(self, node: Node, wire: Any, size: int) -> None:
        inst = self._inst
        cfg = self.lu.ctx.config.config
        result = await self.lu.ctx.rpc().call_one(node, "blockdev_create", [
            wire, size, inst.name, True, instance_storage.info_text(inst),
            instance_storage.exclusive_storage(cfg, node)])
        if not result.success:
            raise OpExecError(f"Can't create block device {wire.get('logical_id')} on node "
                              f"{node.name} for instance {inst.name}: {result.fail_msg}")
        self._made.append((node, wire))

    async def _to_drbd(self, cfg: ConfigData) -> None:
        inst = self._inst
        assert self.remote_uuid is not None
        pnode, snode = cfg.nodes[inst.primary_node], cfg.nodes[self.remote_uuid]
        self._log("Converting disk template from 'plain' to 'drbd'")
        specs = [{"size": d.size, "mode": d.mode, "vg": (d.logical_id or [None])[0],
                  "name": d.name} for d in self.old]
        self.new = instance_drbd.generate_drbd_disks(self.lu, cfg, pnode.uuid, snode.uuid,
                                                     specs)
        self._log("Creating additional volumes...")
        try:
            for disk in self.new:
                pwire = diskparams.disk_wire_dicts(cfg, inst, [disk], pnode.uuid)[0]
                await self._create(pnode, pwire["children"][1], c.DRBD_META_SIZE)
                swire = diskparams.disk_wire_dicts(cfg, inst, [disk], snode.uuid)[0]
                for child, wire in zip(disk.children, swire["children"], strict=True):
                    await self._create(snode, wire, child.size)
            self._log("Renaming original volumes...")
            result = await self.lu.ctx.rpc().call_one(pnode, "blockdev_rename", [[
                (old, list(new.children[0].logical_id or [])) for old, new
                in zip(self.old, self.new, strict=True)]])
            result.raise_if_failed("Failed to rename original LVs")
            self._renamed = True
            self._log("Initializing DRBD devices...")
            for disk in self.new:
                for node in (pnode, snode):
                    result = await self.lu.ctx.rpc().call_one(node, "blockdev_create", [
                        DiskArg(disk, inst), disk.size, inst.name, node is pnode,
                        instance_storage.info_text(inst),
                        instance_storage.exclusive_storage(cfg, node)])
                    if not result.success:
                        raise OpExecError(f"Can't create block device {disk.iv_name} on "
                                          f"node {node.name} for instance {inst.name}: "
                                          f"{result.fail_msg}")
                    self._devices.append((node, disk))
        except GenericError:
            if self._renamed:
                self._log("Initializing of DRBD devices failed; renaming back original "
                          "volumes...")
            await self.undo()
            raise

    # -- drbd -> plain ---------------------------------------------------------------

    def _to_plain(self, cfg: ConfigData) -> None:
        inst = self._inst
        self._log("Converting disk template from 'drbd' to 'plain'")
        now = self.lu.ctx.clock.seconds()
        for disk in self.old:
            if len(disk.children) != 2:
                raise OpExecError(f"Disk {disk.iv_name} of {inst.name} has no data volume")
            data = disk.children[0].clone()
            data.uuid = data.uuid or new_uuid()  # (older configs' children have none)
            data.size, data.mode, data.name = disk.size, disk.mode, disk.name
            data.nodes = [inst.primary_node]
            data.iv_name = disk.iv_name
            data.children = []
            data.serial_no = (disk.serial_no or 0) + 1
            data.ctime, data.mtime = disk.ctime or now, now
            self.new.append(data)

    # -- the config change and after -------------------------------------------------

    def change(self, cfg: ConfigData) -> None:
        """In the unit's config change: the old disks leave the config (their volumes
        are the new disks' or are removed by :meth:`finish`); the new disks' ports are
        recorded, or the old disks' ports go back to the cluster's pool (Ganeti's
        AddTcpUdpPort)."""
        for disk in self.old:
            cfg.disks.pop(disk.uuid, None)
        if self.target == c.DT_DRBD8:
            instance_drbd.commit_ports(cfg, self.new)
            return
        for disk in self.old:
            lid = disk.logical_id or []
            if len(lid) == 6 and lid[2] not in cfg.cluster.tcpudp_port_pool:
                cfg.cluster.tcpudp_port_pool.append(int(lid[2]))

    async def undo(self) -> None:
        """Back to the plain volumes as they were (before or at a failed commit)."""
        if self.target != c.DT_DRBD8:
            return  # nothing was changed on a node
        cfg = self.lu.ctx.config.config
        inst = self._inst
        warn = self._warn
        for node, disk in reversed(self._devices):  # the mirrors, not their volumes
            result = await self.lu.ctx.rpc().call_one(node, "blockdev_shutdown",
                                                      [DiskArg(disk, inst)])
            result.warn(f"Could not shut down {disk.iv_name} on node {node.name}", warn)
        self._devices = []
        if self._renamed:
            pnode = cfg.nodes[inst.primary_node]
            result = await self.lu.ctx.rpc().call_one(pnode, "blockdev_rename", [[
                (new.children[0], list(old.logical_id or [])) for old, new
                in zip(self.old, self.new, strict=True)]])
            result.raise_if_failed("Failed to rename LVs back after error")
            self._renamed = False
        for node, wire in reversed(self._made):
            result = await self.lu.ctx.rpc().call_one(node, "blockdev_remove", [wire])
            result.warn(f"Failed to remove newly-created volume {wire.get('logical_id')} "
                        f"on node {node.name}", warn)
        self._made = []

    async def finish(self) -> None:
        """After the config change: wait for the new mirrors, or remove what the plain
        disks no longer need."""
        cfg = self.lu.ctx.config.config
        inst = cfg.instances[self._inst.uuid]
        if self.target == c.DT_DRBD8:
            oneshot = not getattr(self.lu.op, "wait_for_sync", True)
            if not await instance_drbd.wait_for_sync(self.lu, cfg, inst, oneshot=oneshot):
                raise OpExecError("There are some degraded disks for this instance, please "
                                  "cleanup manually")
            return
        warn = self._warn
        self._log("Removing volumes on the secondary node...")
        for disk in self.old:
            for node_uuid in disk.nodes:
                node = cfg.nodes.get(node_uuid)
                if node is None or node_uuid == inst.primary_node:
                    continue
                result = await self.lu.ctx.rpc().call_one(node, "blockdev_remove",
                                                          [DiskArg(disk, inst)])
                result.warn(f"Could not remove disk {disk.iv_name} on node {node.name}, "
                            "continuing anyway", warn)
        self._log("Removing unneeded volumes on the primary node...")
        pnode = cfg.nodes[inst.primary_node]
        for disk in self.old:
            wire = diskparams.disk_wire_dicts(cfg, inst, [disk], pnode.uuid)[0]
            meta = wire["children"][1]
            result = await self.lu.ctx.rpc().call_one(pnode, "blockdev_remove", [meta])
            result.warn(f"Could not remove disk {disk.iv_name} on node {pnode.name}, "
                        "continuing anyway", warn)


def new_uuid() -> str:
    """A fresh UUID (for disks from configs whose drbd children have none)."""
    return str(uuidmod.uuid4())
