"""OP_INSTANCE_SET_PARAMS: hypervisor, backend and OS parameters, the OS, runtime
memory, offline/online, and NICs and disks added, removed or changed by index
or name/UUID (Ganeti's modification lists, old and new forms).

The result is Ganeti's list of ``[what, new value]`` pairs (``be/maxmem``,
``hv/<name>``, ``nic.ip/0``, ``disk/1``, ``runtime_memory``, ...).  Changes to
hypervisor and backend parameters of a running instance apply at its next start,
as in Ganeti; runtime memory is applied at once.
"""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import NIC, ConfigData, Disk
from ganeti.core.opcodes.table_instance import (
    DDM_ADD,
    DDM_ATTACH,
    DDM_DETACH,
    DDM_MODIFY,
    DDM_REMOVE,
    MAX_DISKS,
    MAX_NICS,
)
from ganeti.core.opcodes.views import OpInstanceSetParams
from ganeti.core.params_merge import get_updated_params
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_convert_drbd as convert_drbd
from ganeti.master.lu import instance_forthcoming as forth
from ganeti.master.lu import instance_policy, instance_storage, instance_template
from ganeti.master.lu.instance_create import check_disk_specs
from ganeti.master.lu.instance_ops import (
    NOT_RUNNING,
    InstanceLU,
    check_admin_state,
    check_not_running,
)

# Ganeti's template sets (the conversion's are in .instance_template).
_DTS_INT_MIRROR = instance_template.DTS_INT_MIRROR


def _mods(raw: list[list[Any]]) -> list[tuple[str, Any, dict[str, Any]]]:
    """Both forms as ``(action, identifier, params)``: the old ``[add|remove|index,
    params]`` becomes ``(add, -1, p)``, ``(remove, -1, p)``, ``(modify, index, p)``."""
    out: list[tuple[str, Any, dict[str, Any]]] = []
    for mod in raw:
        if len(mod) == 3:
            out.append((mod[0], mod[1], dict(mod[2])))
        elif mod[0] in (DDM_ADD, DDM_REMOVE):
            out.append((mod[0], -1, dict(mod[1])))
        else:
            out.append((DDM_MODIFY, mod[0], dict(mod[1])))
    for action, _ident, _params in out:
        if action in (DDM_ATTACH, DDM_DETACH):
            raise OpPrereqError(f"Disk {action} is not supported yet", ECODE_INVAL)
    return out


def _find(items: list[Any], ident: Any, kind: str, adding: bool = False) -> int:
    """Ganeti's GetItemFromContainer: an index (negative from the end; -1 when
    adding appends), or a name or UUID."""
    if isinstance(ident, int) or (isinstance(ident, str) and ident.lstrip("-").isdigit()):
        idx = int(ident)
        if adding:
            if idx == -1:
                return len(items)
            if idx < 0 or idx > len(items):
                raise OpPrereqError(f"Got {kind} index {idx}, but there are only "
                                    f"{len(items)}", ECODE_INVAL)
            return idx
        if idx < 0:
            idx += len(items)
        if not 0 <= idx < len(items):
            raise OpPrereqError(f"Invalid {kind} index {ident}", ECODE_INVAL)
        return idx
    for idx, item in enumerate(items):
        if ident in (item.uuid, item.name):
            return idx
    raise OpPrereqError(f"Cannot find {kind} with identifier {ident}", ECODE_INVAL)


class LUInstanceSetParams(InstanceLU):
    """OP_INSTANCE_SET_PARAMS."""

    OP_ID = "OP_INSTANCE_SET_PARAMS"
    op: OpInstanceSetParams
    HPATH = "instance-modify"
    NODE_LEVELS = (LEVEL_NODE, LEVEL_NODE_RES)
    #: a reservation's parameters, NICs and disks change in the config only
    ALLOW_FORTHCOMING = True
    #: a template change (.instance_template): the new disks' specs, (from, to)
    template_specs: list[dict[str, Any]]
    mode: tuple[str, str] | None = None

    def check_arguments(self) -> None:
        op = self.op
        self.nic_mods = _mods(op.nics)
        self.disk_mods = _mods(op.disks)
        if not (op.nics or op.disks or op.hvparams or op.beparams or op.osparams
                or op.osparams_private or op.os_name or op.offline is not None
                or op.runtime_mem is not None or op.disk_template or op.pnode
                or op.pnode_uuid):
            raise OpPrereqError("No changes submitted", ECODE_INVAL)
        if op.hotplug:
            raise OpPrereqError("Hotplug is not supported by this cluster's hypervisors",
                                ECODE_INVAL)
        self.ignored_remote_node = False
        if op.disk_template:  # Ganeti's checks of a template change
            if op.disks:
                raise OpPrereqError("Disk template conversion and other disk changes not "
                                    "supported at the same time", ECODE_INVAL)
            if op.disk_template in _DTS_INT_MIRROR:
                if not (op.remote_node or op.remote_node_uuid):
                    raise OpPrereqError("Changing the disk template to a mirrored one needs "
                                        "a secondary node (choosing one with an allocator "
                                        "is not supported yet)", ECODE_INVAL)
            elif op.remote_node or op.remote_node_uuid:
                self.ignored_remote_node = True  # a warning in exec, as Ganeti's
        if op.iallocator or ((op.remote_node or op.remote_node_uuid)
                             and not self.ignored_remote_node
                             and op.disk_template not in _DTS_INT_MIRROR):
            raise OpPrereqError("Changing the nodes of an instance is not supported yet",
                                ECODE_INVAL)
        for action, _ident, params in self.disk_mods:
            if action == DDM_MODIFY:
                unknown = set(params) - {"mode", "name"}
                if unknown:
                    raise OpPrereqError(f"Disk modification doesn't support additional "
                                        f"arbitrary parameters: {', '.join(sorted(unknown))}",
                                        ECODE_INVAL)
            if action == DDM_REMOVE and params:
                raise OpPrereqError("No settings should be passed when removing a disk",
                                    ECODE_INVAL)
        for action, _ident, params in self.nic_mods:
            if action == DDM_REMOVE and params:
                raise OpPrereqError("No settings should be passed when removing a NIC",
                                    ECODE_INVAL)

    def expand_names(self) -> None:
        super().expand_names()
        self.remote_uuid: str | None = None
        op = self.op
        if op.disk_template in _DTS_INT_MIRROR and (op.remote_node or op.remote_node_uuid):
            found = nodesmod.find_node(self.ctx.config.config,
                                       op.remote_node_uuid or op.remote_node)
            self.remote_uuid = found.uuid
            self.record_op(remote_node_uuid=found.uuid, remote_node=found.name)

    def declare_locks(self, level: int) -> None:
        super().declare_locks(level)
        if self.remote_uuid is not None and level in self.NODE_LEVELS:  # Ganeti's
            held = list(self.needed_locks.get(level) or [])
            self.needed_locks[level] = sorted({*held, self.remote_uuid})

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        if self.op.disk_template:
            env["NEW_DISK_TEMPLATE"] = self.op.disk_template
        if self.op.runtime_mem:
            env["RUNTIME_MEMORY"] = self.op.runtime_mem
        return env

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        cluster = cfg.cluster
        op = self.op
        inst = self.instance
        if inst.forthcoming:
            forth.refuse_changes(op)
        self.new = copy.deepcopy(inst)
        self.result: list[list[Any]] = []
        pnode = cfg.nodes[inst.primary_node]
        # OS
        if op.os_name and op.os_name != inst.os:
            if op.os_name in cluster.blacklisted_os:
                raise OpPrereqError(f"Guest OS '{op.os_name}' is not allowed for "
                                    "installation", ECODE_STATE)
            self.new.os = op.os_name
            self.result.append(["os_name", op.os_name])
        # hypervisor parameters (validated on the nodes in exec)
        self.hv_validate: dict[str, Any] | None = None
        if op.hvparams:
            updated = get_updated_params(inst.hvparams, op.hvparams)
            self.hv_validate = ic.check_hvparams(cfg, inst.hypervisor, self.new.os, updated)
            self.new.hvparams = updated
            full = params_fill.fill_instance_hv(cluster, self.new)
            for key in sorted(op.hvparams):
                self.result.append([f"hv/{key}", full.get(key)])
        # backend parameters
        if op.beparams:
            updated = get_updated_params(inst.beparams, op.beparams)
            updated = ic.upgrade_beparams(updated)
            self.new.beparams = updated
            full_be = params_fill.fill_instance_be(cluster, self.new)
            ic.check_be_memory(full_be)
            for key in sorted(ic.upgrade_beparams(
                    {k: v for k, v in op.beparams.items() if v != "default"}) or op.beparams):
                self.result.append([f"be/{key}", full_be.get(key)])
        # OS parameters
        if op.osparams:
            self.new.osparams = get_updated_params(inst.osparams, op.osparams)
            for key in sorted(op.osparams):
                self.result.append([f"os/{key}", self.new.osparams.get(key)])
        if op.osparams_private:
            self.new.osparams_private = get_updated_params(inst.osparams_private,
                                                           op.osparams_private)
            for key in sorted(op.osparams_private):
                self.result.append([f"os_private/{key}", "<redacted>"])
        # offline / online
        # Ganeti's INSTANCE_NOT_RUNNING either way (so --online on a stopped instance
        # and --offline on an offline one succeed); the node is asked in exec
        self.not_running_msg: str | None = None
        if op.offline is not None:
            self.not_running_msg = (
                "can't change to offline without being down first" if op.offline
                else "can't change to online (down) without being offline first")
            check_admin_state(inst, NOT_RUNNING, self.not_running_msg)
            self.new.admin_state = c.ADMINST_OFFLINE if op.offline else c.ADMINST_DOWN
            self.result.append(["admin_state", self.new.admin_state])
        if op.runtime_mem is not None:
            ic.check_node_online(pnode, "Instance's primary node is offline, cannot change "
                                        "runtime memory of")
            be = params_fill.fill_instance_be(cluster, self.new)
            if not op.force and not (be[c.BE_MINMEM] <= op.runtime_mem <= be[c.BE_MAXMEM]):
                raise OpPrereqError(f"Instance {inst.name} must have memory between "
                                    f"{be[c.BE_MINMEM]} and {be[c.BE_MAXMEM]} MB of memory "
                                    "unless --force is given", ECODE_INVAL)
        self._prepare_pnode(cfg)
        # NICs
        self._prepare_nics(cfg)
        # disks
        self._prepare_disks(cfg)
        instance_template.prepare_template(self, cfg, pnode)
        # policy (the instance's new shape against its group's policy)
        if (op.beparams or self.disk_mods or self.nic_mods or op.disk_template) \
                and not op.ignore_ipolicy:
            be = params_fill.fill_instance_be(cluster, self.new)
            sizes = [d.size for d in self._disks_after]
            spec = instance_policy.spec_of(be, sizes, len(self.new.nics))
            problems = instance_policy.violations(
                cfg, pnode.group, spec, op.disk_template or inst.disk_template or c.DT_DISKLESS)
            if problems:
                raise OpPrereqError(f"Instance allocation to group "
                                    f"{cfg.nodegroups[pnode.group].name} ({pnode.group}) "
                                    f"violates policy: {'; '.join(problems)}", ECODE_INVAL)

    def _prepare_pnode(self, cfg: ConfigData) -> None:
        """``--new-primary``: Ganeti only points the instance at the new node (its
        disk files are the administrator's to copy); the instance must not run on
        its primary (checked in exec) unless ``force``."""
        self.new_pnode: str | None = None
        if self.op.pnode or self.op.pnode_uuid:
            found = nodesmod.find_node(cfg, self.op.pnode_uuid or self.op.pnode)
            self.new_pnode = found.uuid
            self.record_op(pnode_uuid=found.uuid, pnode=found.name)  # as Ganeti's unit
            self.new.primary_node = self.new_pnode

    async def _check_pnode_change(self) -> None:
        """Ganeti's check of a new primary: the instance must not run on the old one
        (unless ``force``); a primary that cannot answer is only a warning."""
        inst = self.instance
        if self.new_pnode is None or self.new_pnode == inst.primary_node or self.op.force:
            return
        cfg = self.ctx.config.config
        node = cfg.nodes[inst.primary_node]
        result = await self.ctx.rpc().call_one(
            node, "instance_info",
            [inst.name, inst.hypervisor, params_fill.fill_instance_hv(cfg.cluster, inst)])
        if not result.success:
            self._log(f"WARNING: Can't get instance runtime information: {result.fail_msg}")
        elif result.payload:
            raise OpPrereqError(f"Instance is still running on {node.name}", ECODE_STATE)

    def _prepare_nics(self, cfg: ConfigData) -> None:
        nics = self.new.nics
        self.added_nics: list[NIC] = []
        self.removed_nics: list[NIC] = []
        self.shown_nics: list[tuple[int, NIC, Any]] = []
        for action, ident, params in self.nic_mods:
            if action == DDM_ADD:
                if len(nics) >= MAX_NICS:
                    raise OpPrereqError(f"Instance has too many network interfaces "
                                        f"({len(nics)}), cannot add more", ECODE_STATE)
                idx = _find(nics, ident, "NIC", adding=True)
                nic = ic.build_nics(self, cfg, [params], False, None)[0]
                nics.insert(idx, nic)
                self.added_nics.append(nic)
                # shown in exec, once the MAC is generated (Ganeti's _CreateNewNic)
                self.shown_nics.append((len(self.result), nic, params.get("network")))
                self.result.append([f"nic.{idx}", "add"])
            elif action == DDM_REMOVE:
                idx = _find(nics, ident, "NIC")
                self.removed_nics.append(nics.pop(idx))
                self.result.append([f"NIC/{idx}", "remove"])
            else:
                idx = _find(nics, ident, "NIC")
                old = nics[idx]
                spec = {"mac": old.mac, "ip": old.ip, "name": old.name,
                        "network": None, **{k: v for k, v in old.nicparams.items()}}
                spec.update(params)
                if "network" not in params and old.network:
                    spec["network"] = old.network
                    spec.pop("mode", None)
                    spec.pop("link", None)
                new = ic.build_nics(self, cfg, [spec], False, None)[0]
                new.uuid = old.uuid
                if new.mac != old.mac:
                    self.added_nics.append(new)
                nics[idx] = new
                for key in sorted(params):
                    value = getattr(new, key, None) if key in ("mac", "ip", "name",
                                                               "network") \
                        else new.nicparams.get(key)
                    self.result.append([f"nic.{key}/{idx}", value])

    def _prepare_disks(self, cfg: ConfigData) -> None:
        inst = self.instance
        disks = [d.clone() for d in instance_storage.instance_disks(cfg, inst)]
        self.new_disks: list[Disk] = []
        self.removed_disks: list[Disk] = []
        self.specs_to_add: list[tuple[int, dict[str, Any]]] = []
        for action, ident, params in self.disk_mods:
            if action == DDM_ADD:
                if inst.disk_template == c.DT_DISKLESS:
                    raise OpPrereqError("Disk operations not supported for diskless "
                                        "instances", ECODE_INVAL)
                if len(disks) >= MAX_DISKS:
                    raise OpPrereqError(f"Number of disks would be {len(disks) + 1}, "
                                        f"which exceeds the maximum of {MAX_DISKS}",
                                        ECODE_STATE)
                excl = any(instance_storage.exclusive_storage(cfg, cfg.nodes[n])
                           for n in nodesmod.instance_nodes(cfg, inst) if n in cfg.nodes)
                instance_storage.check_spindles(params, excl, True)
                spec = check_disk_specs(inst.disk_template or c.DT_PLAIN, [params])[0][0]
                idx = _find(disks, ident, "disk", adding=True)
                placeholder = Disk(uuid=f"new-{len(self.specs_to_add)}", dev_type="placeholder",
                                   size=int(spec.get("size", 0)), mode=spec["mode"],
                                   name=spec.get("name"))
                disks.insert(idx, placeholder)
                self.specs_to_add.append((idx, spec))
                self.result.append([f"disk/{idx}", f"add:size={spec.get('size')},"
                                                   f"mode={spec['mode']}"])
            elif action == DDM_REMOVE:
                # Ganeti's: only a stopped instance loses a disk without hotplug (the
                # node is asked in exec); adding one to a running instance is fine
                self.not_running_msg = ("can't remove volume from a running instance "
                                        "without using hotplug")
                check_admin_state(inst, NOT_RUNNING, self.not_running_msg)
                idx = _find(disks, ident, "disk")
                if len(disks) == 1:
                    raise OpPrereqError("Cannot remove the last disk of an instance",
                                        ECODE_INVAL)
                self.removed_disks.append(disks.pop(idx))
                self.result.append([f"disk/{idx}", "remove"])
            else:
                idx = _find(disks, ident, "disk")
                if "mode" in params:
                    disks[idx].mode = ic.check_disk_mode(params["mode"])
                    self.result.append([f"disk.mode/{idx}", disks[idx].mode])
                if "name" in params:
                    name = params["name"]
                    disks[idx].name = None if str(name).lower() == "none" else name
                    self.result.append([f"disk.name/{idx}", disks[idx].name])
        self._disks_after = disks

    def _log(self, text: str) -> None:
        self.ctx.feedback("message", text)

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        op = self.op
        inst = self.instance
        reserved = bool(inst.forthcoming)  # nothing on a node to ask or change
        if self.not_running_msg is not None and not reserved:
            await check_not_running(self, inst, self.not_running_msg)
        await self._check_pnode_change()
        if op.disk_template:
            await instance_template.check_template_resources(self)
        if self.hv_validate is not None and not reserved:  # Ganeti's CheckHVParams
            await ic.validate_hvparams_on_nodes(self, sorted(nodesmod.instance_nodes(cfg, inst)),
                                                inst.hypervisor, self.hv_validate)
        if op.runtime_mem is not None:
            node = cfg.nodes[inst.primary_node]
            if await ic.instance_running(self, inst):
                result = await self.ctx.rpc().call_one(
                    node, "instance_balloon_memory", [ic.instance_arg(inst), op.runtime_mem])
                result.raise_if_failed("Cannot modify instance runtime memory")
                self.result.append(["runtime_memory", op.runtime_mem])
        if op.dry_run:
            return self.result
        ic.assign_nic_resources(self, cfg, self.added_nics, op.conflicts_check)
        for pos, nic, network in self.shown_nics:
            filled = params_fill.fill_instance_nic(cfg.cluster, nic)
            self.result[pos][1] = (f"add:mac={nic.mac},ip={nic.ip},mode={filled.get('mode')},"
                                   f"link={filled.get('link')},network={network}")
        created: list[Disk] = []
        disks = list(self._disks_after)
        if self.specs_to_add:
            start = len(instance_storage.instance_disks(cfg, inst))
            template = inst.disk_template or c.DT_PLAIN  # as _prepare_disks checked it
            for pos, (idx, spec) in enumerate(self.specs_to_add):
                made = instance_storage.generate_disks(
                    self, cfg, template, inst.uuid, inst.primary_node, [], [spec], None, None,
                    base_index=start + pos)
                disks[idx] = made[0]
                created.extend(made)
            view = cfg.view(disks={**cfg.disks, **{d.uuid: d for d in created}})
            if reserved:
                forth.mark_disks(created)
            else:
                await instance_storage.create_disks(self, view, inst, created)
        if reserved:  # what it holds may grow only where it still fits
            await forth.check_resized(self, self.new, disks)
        converted: list[Disk] = []
        conversion: convert_drbd.Conversion | None = None
        if op.disk_template and self.mode in convert_drbd.MODES:
            if not await instance_storage.shutdown_disks(self, cfg, inst):
                raise OpExecError("Cannot shutdown instance disks, unable to proceed with "
                                  "disk template conversion")
            conversion = convert_drbd.Conversion(self, op.disk_template, self.remote_uuid)
            _old, converted = await conversion.convert()
            disks = list(converted)
            self.new.disk_template = op.disk_template
        elif op.disk_template:
            old_disks, converted = await instance_template.convert_disks(self)
            self.removed_disks.extend(old_disks)
            disks = list(converted)
            self.new.disk_template = op.disk_template
        for i, disk in enumerate(disks):
            disk.iv_name = f"disk/{i}"
            if self.new_pnode is not None and disk.dev_type not in _DTS_INT_MIRROR:
                disk.nodes = [self.new_pnode]  # the disk is where the instance is
        new = self.new
        new.disks = [d.uuid for d in disks]
        uuid = inst.uuid
        now = self.ctx.clock.seconds()
        removed_nics = self.removed_nics
        old_nics = inst.nics

        def change(cfg: ConfigData) -> None:
            current = cfg.instances[uuid]
            ic.commit_nic_ips(cfg, [n for n in old_nics if n not in new.nics] + removed_nics,
                              release=True)
            for disk in self.removed_disks:
                cfg.disks.pop(disk.uuid, None)
            if conversion is not None:
                conversion.change(cfg)
            for disk in disks:
                cfg.disks[disk.uuid] = disk.clone()
            obj = new.clone()
            obj.serial_no = current.serial_no + 1
            obj.mtime = now
            cfg.instances[uuid] = obj
            ic.commit_nic_ips(cfg, [n for n in new.nics if n not in old_nics])
        before = self.ctx.config.config
        try:
            await self.update_config(change)
        except BaseException:
            if conversion is not None:
                await conversion.undo()
            elif converted:  # the instance keeps its old disks
                view = before.view(disks={**before.disks,
                                          **{d.uuid: d for d in converted}})
                await instance_storage.remove_disks(self, view, inst, converted,
                                                    ignore_failures=True)
            raise
        if conversion is not None:
            self.result.append(["disk_template", op.disk_template])
            await conversion.finish()
        elif op.disk_template:
            self.result.append(["disk_template", op.disk_template])
            self._log(f"Removing old block devices of type "
                      f"'{inst.disk_template or c.DT_DISKLESS}'...")
        if self.removed_disks and not reserved:
            await instance_storage.remove_disks(self, before, inst, self.removed_disks,
                                          ignore_failures=True)
        return self.result
