"""The steps of replace-disks on the nodes (Ganeti's TLReplaceDisks ``Exec``,
``_ExecDrbd8DiskOnly`` and ``_ExecDrbd8Secondary``), with Ganeti's job-log lines
("STEP 1/6 Check device existence", ...).

New volumes on one side (``replace_on_primary``/``_secondary``, and ``_auto``):
1. the disks exist on both nodes, the volume group on both; 2. the other side is
consistent; 3. new data and metadata volumes (fresh names) on the side; 4. per disk:
the old volumes detached from the mirror (``blockdev_removechildren``), renamed
``<name>_replaced-<time>``, the new ones renamed to the old names and attached
(``blockdev_addchildren``: that side resyncs); 5./6. wait for the sync (the primary's
mirror status) and remove the old volumes (in the other order with
``early_release``).  The config does not change.

A new secondary (``replace_new_secondary``): 1. the disks exist on the primary;
2. the primary's local disks are in order; 3. the volumes on the new node (same
names); 4. a new minor on the new node and the mirror's device created there without
its network, the device shut down on the old secondary, the primary standalone, the
config naming the new node (logical ids and node lists), both reconnected; 5./6.
the full resync waited for, the old secondary's volumes removed.

The instance's disks are activated for the operation when they are not (and
deactivated after).  A forthcoming instance's disks are not touched: a new
secondary is written in the config only.
"""

from __future__ import annotations

import copy
import itertools
from typing import TYPE_CHECKING, Any

from ganeti.core.errors import GenericError, OpExecError, ReservationError
from ganeti.core.objects import ConfigData, Disk
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_drbd, instance_ops, instance_storage
from ganeti.master.lu import instance_mirror as mirror
from ganeti.master.lu.instance_storage import instance_disks

if TYPE_CHECKING:
    from ganeti.master.lu.instance_replace_disks import LUInstanceReplaceDisks

STEPS_TOTAL = 6
#: per replaced disk: (the drbd disk, its old volumes, the new volumes or logical id)
IvNames = dict[Any, tuple[Disk, list[Disk], Any]]


class Replacer:
    """One replace-disks of ``lu``'s instance (the unit has chosen the nodes)."""

    def __init__(self, lu: LUInstanceReplaceDisks) -> None:
        self.lu = lu

    # --- helpers ---------------------------------------------------------------

    @property
    def cfg(self) -> ConfigData:
        return self.lu.ctx.config.config

    def name(self, uuid: str) -> str:
        return mirror.node_name(self.lu, uuid)

    def step(self, current: int, message: str) -> None:
        """Ganeti's LogStep."""
        mirror.say(self.lu, f"STEP {current}/{STEPS_TOTAL} {message}")

    def info(self, text: str) -> None:
        mirror.log_info(self.lu, text)

    async def _find(self, node_uuid: str, disk: Disk) -> Any:
        return await self.lu.ctx.rpc().call_one(self.cfg.nodes[node_uuid], "blockdev_find",
                                                [DiskArg(disk, self.lu.instance)])

    async def disks_activated(self) -> bool:
        """Ganeti's _CheckDisksActivated: every disk found on every (online) node."""
        inst = self.lu.instance
        for idx, disk in enumerate(instance_disks(self.cfg, inst)):
            for uuid in instance_storage.disk_nodes(inst, disk):
                self.info(f"Checking disk/{idx} on {self.name(uuid)}")
                result = await self._find(uuid, disk)
                if result.offline:
                    continue
                if not result.success or not result.payload:
                    return False
        return True

    # --- the run ---------------------------------------------------------------

    async def run(self) -> None:
        """Ganeti's TLReplaceDisks.Exec."""
        lu = self.lu
        inst = lu.instance
        if not lu.disks:
            mirror.say(lu, f"No disks need replacement for instance '{inst.name}'")
            return
        mirror.say(lu, f"Replacing disk(s) {', '.join(map(str, lu.disks))} for instance "
                       f"'{inst.name}'")
        mirror.say(lu, f"Current primary node: {self.name(inst.primary_node)}")
        secondaries = [u for d in instance_disks(self.cfg, inst) for u in d.nodes
                       if u != inst.primary_node]
        mirror.say(lu, f"Current secondary node: "
                       f"{', '.join(dict.fromkeys(self.name(u) for u in secondaries))}")
        activate = not inst.disks_active and not inst.forthcoming
        if activate:
            await instance_storage.assemble_disks(lu, self.cfg, inst, ignore_size=True)
        try:
            if lu.new_node is not None:
                await self._new_secondary()
            else:
                await self._disks_only()
        finally:
            if activate:
                # Ganeti's _SafeShutdownInstanceDisks: only when the instance is down
                inst = lu.instance
                await instance_ops.check_not_running(lu, inst, "cannot shutdown disks")
                await instance_storage.shutdown_disks(lu, self.cfg, inst)

    # --- checks ------------------------------------------------------------------

    async def _check_existence(self, node_uuids: list[str]) -> None:
        """Ganeti's _CheckDisksExistence."""
        inst = self.lu.instance
        for idx, disk in enumerate(instance_disks(self.cfg, inst)):
            if idx not in self.lu.disks:
                continue
            for uuid in node_uuids:
                self.info(f"Checking disk/{idx} on {self.name(uuid)}")
                result = await self._find(uuid, disk)
                if result.success and result.payload:
                    continue
                msg = result.fail_msg if not result.success else "disk not found"
                hint = ("" if await self.disks_activated() else
                        "\nDisks seem to be not properly activated. Try running "
                        "activate-disks on the instance before using replace-disks.")
                raise OpExecError(f"Can't find disk/{idx} on node {self.name(uuid)}: "
                                  f"{msg}{hint}")

    async def _check_volume_group(self, node_uuids: list[str]) -> None:
        """Ganeti's _CheckVolumeGroup: the cluster's volume group on every node."""
        self.info("Checking volume groups")
        vg = self.cfg.cluster.volume_group_name
        for uuid in node_uuids:
            result = await self.lu.ctx.rpc().call_one(self.cfg.nodes[uuid], "vg_list", [])
            result.raise_if_failed(f"Error checking node {self.name(uuid)}")
            if vg not in (result.payload or {}):
                raise OpExecError(f"Volume group '{vg}' not found on node {self.name(uuid)}")

    async def _check_consistency(self, node_uuid: str, on_primary: bool, ldisk: bool) -> None:
        """Ganeti's _CheckDisksConsistency."""
        inst = self.lu.instance
        for idx, disk in enumerate(instance_disks(self.cfg, inst)):
            if idx not in self.lu.disks:
                continue
            self.info(f"Checking disk/{idx} consistency on node {self.name(node_uuid)}")
            if not await mirror.check_consistency(self.lu, inst, disk, node_uuid, on_primary,
                                                  ldisk):
                raise OpExecError(f"Node {self.name(node_uuid)} has degraded storage, unsafe "
                                  f"to replace disks for instance {inst.name}")

    async def _check_devices(self, node_uuid: str, iv_names: IvNames) -> None:
        """Ganeti's _CheckDevices: after the sync, no replaced disk is degraded."""
        for name, (disk, _old, _new) in iv_names.items():
            result = await self._find(node_uuid, disk)
            if not result.success or not result.payload:
                raise OpExecError(f"Can't find DRBD device {name}: "
                                  f"{result.fail_msg or 'disk not found'}")
            if result.payload.get("is_degraded"):
                raise OpExecError(f"DRBD device {name} is degraded!")

    # --- volumes -------------------------------------------------------------------

    async def _create_volume(self, node_uuid: str, volume: Disk) -> None:
        inst = self.lu.instance
        node = self.cfg.nodes[node_uuid]
        result = await self.lu.ctx.rpc().call_one(node, "blockdev_create", [
            DiskArg(volume, inst), volume.size, inst.name, False,
            instance_storage.info_text(inst), instance_storage.exclusive_storage(self.cfg,
                                                                                  node)])
        if not result.success:
            raise OpExecError(f"Can't create block device: {result.fail_msg}")

    def _new_names(self, idx: int, vg_data: str, vg_meta: str) -> tuple[str, str]:
        lu = self.lu
        try:
            data = lu.ctx.reservations.generate_lv_names(lu.ctx.owner, self.cfg, vg_data,
                                                         [f".disk{idx}_data"])[0]
            meta = lu.ctx.reservations.generate_lv_names(lu.ctx.owner, self.cfg, vg_meta,
                                                         [f".disk{idx}_meta"])[0]
        except ReservationError as err:
            raise OpExecError(f"Cannot reserve a volume name: {err}") from None
        return data, meta

    async def _create_new_storage(self, node_uuid: str) -> IvNames:
        """Ganeti's _CreateNewStorage: new data and metadata volumes under fresh names."""
        inst = self.lu.instance
        iv_names: IvNames = {}
        for idx, disk in enumerate(instance_disks(self.cfg, inst)):
            if idx not in self.lu.disks:
                continue
            self.info(f"Adding storage on {self.name(node_uuid)} for disk/{idx}")
            data, meta = disk.children[0], disk.children[1]
            names = self._new_names(idx, data.logical_id[0], meta.logical_id[0])  # type: ignore[index]
            new = [Disk(dev_type=data.dev_type, size=disk.size,
                        logical_id=[data.logical_id[0], names[0]],  # type: ignore[index]
                        params=dict(data.params)),
                   Disk(dev_type=meta.dev_type, size=meta.size,
                        logical_id=[meta.logical_id[0], names[1]],  # type: ignore[index]
                        params=dict(meta.params))]
            iv_names[disk.iv_name] = (disk, [copy.deepcopy(ch) for ch in disk.children], new)
            for volume in new:
                await self._create_volume(node_uuid, volume)
        return iv_names

    async def _remove_old_storage(self, node_uuid: str, iv_names: IvNames) -> None:
        """Ganeti's _RemoveOldStorage: failures are warnings."""
        inst = self.lu.instance
        for name, (_disk, old, _new) in iv_names.items():
            self.info(f"Remove logical volumes for {name}")
            for volume in old:
                result = await self.lu.ctx.rpc().call_one(
                    self.cfg.nodes[node_uuid], "blockdev_remove", [DiskArg(volume, inst)])
                if not result.success:
                    mirror.log_warning(self.lu, f"Can't remove old LV: {result.fail_msg}",
                                       hint="remove unused LVs manually")

    async def _finish(self, node_uuid: str, iv_names: IvNames) -> None:
        """Steps 5 and 6: the sync waited for and the old volumes removed (in the other
        order with early release, the resource locks released first)."""
        lu = self.lu
        steps = itertools.count(5)
        if lu.early_release:
            self.step(next(steps), "Removing old storage")
            await self._remove_old_storage(node_uuid, iv_names)
            lu.release_locks(LEVEL_NODE_RES)
        else:
            lu.release_locks(LEVEL_NODE_RES, keep=lu.touched)
        lu.release_locks(LEVEL_NODE)
        self.step(next(steps), "Sync devices")
        # (degraded old devices may make this report false: the devices are checked next)
        await instance_drbd.wait_for_sync(lu, self.cfg, lu.instance)
        await self._check_devices(lu.instance.primary_node, iv_names)
        if not lu.early_release:
            self.step(next(steps), "Removing old storage")
            await self._remove_old_storage(node_uuid, iv_names)

    # --- new volumes on one side ------------------------------------------------------

    async def _disks_only(self) -> None:
        lu = self.lu
        inst = lu.instance
        if inst.forthcoming:
            mirror.say(lu, "Instance forthcoming, not touching disks")
            return
        target, other = lu.target_node or "", lu.other_node or ""
        self.step(1, "Check device existence")
        await self._check_existence([other, target])
        await self._check_volume_group([target, other])
        self.step(2, "Check peer consistency")
        await self._check_consistency(other, other == inst.primary_node, False)
        self.step(3, "Allocate new storage")
        iv_names = await self._create_new_storage(target)
        self.step(4, "Changing drbd configuration")
        for disk, old, new in iv_names.values():
            await self._swap_volumes(target, disk, old, new)
        await self._finish(target, iv_names)

    async def _swap_volumes(self, target: str, disk: Disk, old: list[Disk],
                            new: list[Disk]) -> None:
        """Detach the old volumes, rename them away, give the new ones their names and
        attach them."""
        lu = self.lu
        inst = lu.instance
        rpc = lu.ctx.rpc()
        node = self.cfg.nodes[target]
        self.info(f"Detaching {disk.iv_name} drbd from local storage")
        result = await rpc.call_one(node, "blockdev_removechildren",
                                    [DiskArg(disk, inst), mirror.args(inst, old)])
        result.raise_if_failed(f"Can't detach drbd from local storage on node {node.name} "
                               f"for device {disk.iv_name}")
        suffix = int(lu.ctx.clock.seconds())
        renamed = [[lv.logical_id[0], f"{lv.logical_id[1]}_replaced-{suffix}"]  # type: ignore[index]
                   for lv in old]
        existing = []
        for lv, new_id in zip(old, renamed, strict=True):
            found = await self._find(target, lv)
            if found.success and found.payload:
                existing.append((lv, new_id))
        self.info("Renaming the old LVs on the target node")
        result = await rpc.call_one(node, "blockdev_rename", [existing])
        result.raise_if_failed(f"Can't rename old LVs on node {node.name}")
        self.info("Renaming the new LVs on the target node")
        result = await rpc.call_one(node, "blockdev_rename",
                                    [[(lv, list(o.logical_id or [])) for o, lv in
                                      zip(old, new, strict=True)]])
        result.raise_if_failed(f"Can't rename new LVs on node {node.name}")
        for o, lv in zip(old, new, strict=True):
            lv.logical_id = list(o.logical_id or [])
        for lv, new_id in zip(old, renamed, strict=True):
            lv.logical_id = new_id  # the old volumes are removed under their new names
        self.info(f"Adding new mirror component on {node.name}")
        result = await rpc.call_one(node, "blockdev_addchildren",
                                    [DiskArg(disk, inst), mirror.args(inst, new)])
        if not result.success:
            for lv in new:
                removed = await rpc.call_one(node, "blockdev_remove", [DiskArg(lv, inst)])
                if not removed.success:
                    mirror.log_warning(lu, f"Can't rollback device {disk.iv_name}: "
                                           f"{removed.fail_msg}",
                                       hint="cleanup manually the unused logicalvolumes")
            raise OpExecError(f"Can't add local storage to drbd: {result.fail_msg}")

    # --- a new secondary ----------------------------------------------------------------

    def _new_minors(self, disks: list[Disk], new_node: str) -> list[int]:
        lu = self.lu
        try:
            return [lu.ctx.reservations.allocate_drbd_minors(lu.ctx.owner, self.cfg,
                                                             [new_node])[0] for _ in disks]
        except ReservationError as err:
            raise OpExecError(f"Cannot allocate a DRBD minor: {err}") from None

    @staticmethod
    def _new_ids(disk: Disk, primary: str, new_node: str, minor: int) -> tuple[list[Any],
                                                                                list[Any]]:
        """The logical id of the new device without its port (no network yet), and
        with it."""
        node_a, node_b, port, minor_a, minor_b, secret = disk.logical_id or [None] * 6
        p_minor = minor_a if primary == node_a else minor_b
        assert primary in (node_a, node_b), "Three-node instance?"
        return ([primary, new_node, None, p_minor, minor, secret],
                [primary, new_node, port, p_minor, minor, secret])

    async def _update_secondary(self, iv_names: IvNames) -> None:
        """Ganeti's _UpdateDisksSecondary: the disks' logical ids and nodes."""
        self.info("Updating instance configuration")
        lu = self.lu
        primary, new_node = lu.instance.primary_node, lu.new_node or ""
        ids = {disk.uuid: list(new_id) for disk, _old, new_id in iv_names.values()}
        uuid = lu.instance.uuid

        def change(cfg: ConfigData) -> None:
            for disk_uuid, new_id in ids.items():
                disk = cfg.disks[disk_uuid]
                disk.logical_id = new_id
                disk.nodes = [primary, new_node]
                disk.serial_no = (disk.serial_no or 0) + 1
            cfg.instances[uuid].serial_no += 1
        await lu.update_config(change)

    async def _new_secondary(self) -> None:
        lu = self.lu
        inst = lu.instance
        new_node = lu.new_node or ""
        disks = instance_disks(self.cfg, inst)
        if inst.forthcoming:
            mirror.say(lu, "Instance fortcoming, will only update the configuration")
            minors = self._new_minors(disks, new_node)
            await self._update_secondary({
                idx: (d, d.children, self._new_ids(d, inst.primary_node, new_node, m)[1])
                for idx, (d, m) in enumerate(zip(disks, minors, strict=True))})
            lu.release_locks(LEVEL_NODE)
            return
        pnode = inst.primary_node
        self.step(1, "Check device existence")
        await self._check_existence([pnode])
        await self._check_volume_group([pnode])
        self.step(2, "Check peer consistency")
        await self._check_consistency(pnode, True, True)
        self.step(3, "Allocate new storage")
        for idx, disk in enumerate(disks):
            self.info(f"Adding new local storage on {self.name(new_node)} for disk/{idx}")
            for volume in disk.children:
                await self._create_volume(new_node, volume)
        self.step(4, "Changing drbd configuration")
        minors = self._new_minors(disks, new_node)
        iv_names: IvNames = {}
        for idx, (disk, minor) in enumerate(zip(disks, minors, strict=True)):
            self.info(f"activating a new drbd on {self.name(new_node)} for disk/{idx}")
            alone, networked = self._new_ids(disk, pnode, new_node, minor)
            iv_names[idx] = (disk, disk.children, networked)
            device = Disk(uuid=disk.uuid, dev_type=disk.dev_type, logical_id=alone,
                          children=copy.deepcopy(disk.children), size=disk.size,
                          iv_name=disk.iv_name, nodes=[pnode, new_node], params={})
            try:
                node = self.cfg.nodes[new_node]
                result = await lu.ctx.rpc().call_one(node, "blockdev_create", [
                    DiskArg(device, inst), device.size, inst.name, False,
                    instance_storage.info_text(inst),
                    instance_storage.exclusive_storage(self.cfg, node)])
                result.raise_if_failed(f"Can't create block device {disk.iv_name} on node "
                                       f"{node.name} for instance {inst.name}")
            except GenericError:
                lu.ctx.reservations.release(lu.ctx.owner)
                raise
        old = lu.target_node or ""
        for idx, disk in enumerate(disks):
            self.info(f"Shutting down drbd for disk/{idx} on old node")
            result = await lu.ctx.rpc().call_one(self.cfg.nodes[old], "blockdev_shutdown",
                                                 [DiskArg(disk, inst)])
            if not result.success:
                mirror.log_warning(lu, f"Failed to shutdown drbd for disk/{idx} on oldnode: "
                                       f"{result.fail_msg}",
                                   hint="Please cleanup this device manually as soon as "
                                        "possible")
        self.info("Detaching primary drbds from the network (=> standalone)")
        result = await lu.ctx.rpc().call_one(self.cfg.nodes[pnode], "drbd_disconnect_net",
                                             [mirror.args(inst, disks)])
        if not result.success:
            lu.ctx.reservations.release(lu.ctx.owner)
            raise OpExecError(f"Can't detach the disks from the network on old node: "
                              f"{result.fail_msg}")
        await self._update_secondary(iv_names)
        iv_names = {idx: (self.cfg.disks[disk.uuid], old_lvs, new_id)
                    for idx, (disk, old_lvs, new_id) in iv_names.items()}
        lu.release_locks(LEVEL_NODE)
        self.info("Attaching primary drbds to new secondary (standalone => connected)")
        inst = lu.instance
        for uuid, res in await mirror.call_nodes(lu, [pnode, new_node], "drbd_attach_net",
                                                 [mirror.args(inst, instance_disks(self.cfg,
                                                                                   inst)),
                                                  False]):
            if not res.success:
                raise OpExecError(f"Can't attach drbd disks on node {self.name(uuid)}: "
                                  f"{res.fail_msg} (please do a gnt-instance info {inst.name} "
                                  "to see the status of disks)")
        await self._finish(old, iv_names)
