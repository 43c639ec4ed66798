"""Instance units acting on one existing instance: start, stop, reboot, remove,
rename, reinstall, console (the disk operations: :mod:`.instance_disk_ops`), and
:class:`InstanceLU`, what they share.

Locks are Ganeti's: the instance (by name), then the nodes or node resources
its operation touches; the BGL is shared.  State checks that need the node
(is the instance running?) run first thing in ``exec``, before anything changes,
and fail with ``OpPrereqError`` as Ganeti's CheckInstanceState does.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import consoles, params_fill
from ganeti.core import constants as c
from ganeti.core import hooks as hookdefs
from ganeti.core.errors import (
    ECODE_EXISTS,
    ECODE_INVAL,
    ECODE_STATE,
    LockError,
    OpExecError,
    OpPrereqError,
)
from ganeti.core.objects import ConfigData, Instance
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.views import (
    OpInstanceConsole,
    OpInstanceReboot,
    OpInstanceReinstall,
    OpInstanceRemove,
    OpInstanceRename,
    OpInstanceShutdown,
    OpInstanceStartup,
)
from ganeti.core.params_merge import get_updated_params
from ganeti.core.rpcdefs.encoders import InstanceArg
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_INSTANCE, LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import hostnames, instance_storage, osimage, osoutput
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu.base import LOCKS_REPLACE, LogicalUnit
from ganeti.master.lu.instance_forthcoming import NOT_SUPPORTED
from ganeti.master.lu.os_lu import check_os_params

ONLINE = (c.ADMINST_UP, c.ADMINST_DOWN)
NOT_RUNNING = (c.ADMINST_DOWN, c.ADMINST_OFFLINE)
#: Ganeti's ``INSTANCE_DOWN``: stopped, not offline (reinstall)
DOWN = (c.ADMINST_DOWN,)


def check_admin_state(inst: Instance, states: tuple[str, ...], msg: str | None = None) -> None:
    """The config half of Ganeti's CheckInstanceState."""
    if msg is None:
        msg = f"can't use instance from outside {', '.join(states)} states"
    if inst.admin_state not in states:
        raise OpPrereqError(f"Instance '{inst.name}' is marked to be {inst.admin_state}, "
                            f"{msg}", ECODE_STATE)


async def check_not_running(lu: LogicalUnit, inst: Instance, msg: str) -> None:
    """The live half of CheckInstanceState for "not running" (the node is asked)."""
    cfg = lu.ctx.config.config
    if cfg.nodes[inst.primary_node].offline:
        lu.ctx.feedback("message", "Primary node offline, ignoring check that instance is "
                                   "down")
        return
    if await ic.instance_running(lu, inst):
        raise OpPrereqError(f"Instance {inst.name} is running, {msg}", ECODE_STATE)


class InstanceLU(LogicalUnit):
    """A unit on one existing instance: finds and locks it (by name), and with
    ``NODE_LEVELS`` the nodes (or only the primary with ``PRIMARY_ONLY``)."""

    REQ_BGL = False
    HTYPE = hookdefs.HTYPE_INSTANCE
    NODE_LEVELS: tuple[int, ...] = ()
    PRIMARY_ONLY = False
    #: whether the unit works on a reservation (a forthcoming instance): Ganeti's
    #: ``allow_forthcoming``; the others refuse one with Ganeti's error
    ALLOW_FORTHCOMING = False
    op: Any

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        inst = ic.find_instance(cfg, self.op.instance_name, self.op.instance_uuid)
        if not self.ALLOW_FORTHCOMING and inst.forthcoming:
            raise OpPrereqError(NOT_SUPPORTED)
        self.name = inst.name
        # Ganeti's _ExpandAndLockInstance sets both in the unit's opcode (the job's echo)
        self.record_op(instance_uuid=inst.uuid, instance_name=inst.name)
        self.needed_locks[LEVEL_INSTANCE] = [inst.name]
        for level in self.NODE_LEVELS:
            self.needed_locks[level] = []
            self.recalculate_locks[level] = LOCKS_REPLACE

    def declare_locks(self, level: int) -> None:
        if level in self.NODE_LEVELS:
            self.lock_instances_nodes(primary_only=self.PRIMARY_ONLY, level=level)

    @property
    def instance(self) -> Instance:
        """The instance as the config has it now (read again after each change)."""
        inst = self.ctx.config.config.instance_by_name(self.name)
        if inst is None:
            last: Instance | None = getattr(self, "_last_seen", None)
            if last is not None:  # removed by this unit: its post hooks still describe it
                return last
            raise OpPrereqError(f"Instance '{self.name}' not known", "unknown_entity")
        self._last_seen = inst
        return inst

    def build_hooks_env(self) -> dict[str, Any]:
        return ic.instance_hook_env(self.ctx.config.config, self.instance)

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        nodes = ic.hooks_nodes(self.ctx.config.config, self.instance)
        return nodes, nodes

    async def set_admin_state(self, state: str, source: str | None = None) -> None:
        uuid = self.instance.uuid
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            inst = cfg.instances[uuid]
            if inst.admin_state == state and (source is None
                                              or inst.admin_state_source == source):
                return
            inst.admin_state = state
            if source is not None:
                inst.admin_state_source = source
            inst.serial_no += 1
            inst.mtime = now
        await self.update_config(change)

    async def set_disks_active(self, active: bool) -> None:
        uuid = self.instance.uuid

        def change(cfg: ConfigData) -> None:
            inst = cfg.instances[uuid]
            if inst.disks_active != active:
                inst.disks_active = active
                inst.serial_no += 1
        await self.update_config(change)

    async def start_disks(self, force: bool | None = None) -> None:
        """Ganeti's StartInstanceDisks: ``force`` ignores a failing secondary; without
        it a failure ends with Ganeti's hint to retry with ``--force``."""
        inst = self.instance
        if inst.disks:
            try:
                await instance_storage.assemble_disks(self, self.ctx.config.config, inst,
                                                      ignore_secondaries=bool(force))
            except OpExecError:
                if force is not None and not force:
                    self.ctx.feedback("message", " - WARNING: If the message above refers "
                                      "to a secondary node, you can retry the operation "
                                      "using '--force'")
                raise
            await self.set_disks_active(True)

    async def stop_disks(self, ignore_primary: bool = False) -> None:
        inst = self.instance
        if inst.disks:
            await instance_storage.shutdown_disks(self, self.ctx.config.config, inst,
                                            ignore_primary=ignore_primary)
            await self.set_disks_active(False)


class LUInstanceStartup(InstanceLU):
    """OP_INSTANCE_STARTUP."""

    OP_ID = "OP_INSTANCE_STARTUP"
    op: OpInstanceStartup
    HPATH = "instance-start"
    NODE_LEVELS = (LEVEL_NODE_RES,)
    PRIMARY_ONLY = True

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env["FORCE"] = self.op.force
        return env

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        check_admin_state(inst, ONLINE)
        self.hvp = dict(self.op.hvparams)
        if self.hvp:
            full = {**params_fill.fill_instance_hv(cfg.cluster, inst), **self.hvp}
            ic.check_hvparams(cfg, inst.hypervisor, inst.os, {**inst.hvparams, **self.hvp})
            self.hvp = full
        self.bep = ic.upgrade_beparams(self.op.beparams) if self.op.beparams else {}
        node = cfg.nodes[inst.primary_node]
        self.primary_offline = node.offline
        if self.primary_offline and self.op.ignore_offline_nodes:
            self.ctx.feedback("message", "Ignoring offline primary node")
            if self.hvp or self.bep:
                self.ctx.feedback("message", "Overridden parameters are ignored")
        else:
            ic.check_node_online(node)

    async def exec(self) -> Any:
        inst = self.instance
        cfg = self.ctx.config.config
        if self.hvp:  # Ganeti's CheckHVParams of the temporary parameters
            await ic.validate_hvparams_on_nodes(self, sorted(nodesmod.instance_nodes(cfg, inst)),
                                                inst.hypervisor, self.hvp)
        if not (self.primary_offline and self.op.ignore_offline_nodes):
            running = await ic.instance_running(self, inst)
            if not running:
                be = {**params_fill.fill_instance_be(cfg.cluster, inst), **self.bep}
                await ic.check_node_free_memory(self, cfg.nodes[inst.primary_node],
                                                f"starting instance {inst.name}",
                                                int(be.get(c.BE_MINMEM) or 0))
        if self.op.dry_run:
            return None
        if not self.op.no_remember:
            await self.set_admin_state(c.ADMINST_UP, c.ADMIN_SOURCE)
        if self.primary_offline:
            self.ctx.feedback("message", "Primary node offline, marked instance as started")
            return None
        await self.start_disks(force=self.op.force)
        try:
            await ic.start_on_node(self, self.instance, self.hvp, self.bep,
                                   self.op.startup_paused)
        except OpExecError:
            await self.stop_disks()
            raise
        return None


class LUInstanceShutdown(InstanceLU):
    """OP_INSTANCE_SHUTDOWN."""

    OP_ID = "OP_INSTANCE_SHUTDOWN"
    op: OpInstanceShutdown
    HPATH = "instance-stop"

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env["TIMEOUT"] = self.op.timeout
        return env

    def check_prereq(self) -> None:
        inst = self.instance
        if not self.op.force:
            check_admin_state(inst, ONLINE)
        else:
            self.ctx.feedback("message", " - WARNING: Ignoring offline instance check")
        node = self.ctx.config.config.nodes[inst.primary_node]
        self.primary_offline = node.offline
        if self.primary_offline and self.op.ignore_offline_nodes:
            self.ctx.feedback("message", "Ignoring offline primary node")
        else:
            ic.check_node_online(node)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        # Ganeti's: an instance marked offline stays so (marking it down would
        # clear the flag, and a start would then be allowed)
        if not self.op.no_remember and self.instance.admin_state in ONLINE:
            await self.set_admin_state(c.ADMINST_DOWN,
                                       self.op.admin_state_source or c.ADMIN_SOURCE)
        if self.primary_offline:
            self.ctx.feedback("message", "Primary node offline, marked instance as stopped")
            return None
        await ic.shutdown_on_node(self, self.instance, self.op.timeout, ignore_failure=True)
        await self.stop_disks()
        return None


class LUInstanceReboot(InstanceLU):
    """OP_INSTANCE_REBOOT: soft and hard on the node, full as a stop and a start."""

    OP_ID = "OP_INSTANCE_REBOOT"
    op: OpInstanceReboot
    HPATH = "instance-reboot"

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env.update(IGNORE_SECONDARIES=self.op.ignore_secondaries,
                   REBOOT_TYPE=self.op.reboot_type,
                   SHUTDOWN_TIMEOUT=self.op.shutdown_timeout)
        return env

    def check_prereq(self) -> None:
        inst = self.instance
        check_admin_state(inst, ONLINE)
        ic.check_node_online(self.ctx.config.config.nodes[inst.primary_node])

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        inst = self.instance
        cfg = self.ctx.config.config
        node = cfg.nodes[inst.primary_node]
        running = await ic.instance_running(self, inst)
        if running and self.op.reboot_type in (c.INSTANCE_REBOOT_SOFT,
                                               c.INSTANCE_REBOOT_HARD):
            result = await self.ctx.rpc().call_one(
                node, "instance_reboot",
                [ic.instance_arg(inst), self.op.reboot_type, self.op.shutdown_timeout,
                 ic.reason_trail(self)])
            result.raise_if_failed("Could not reboot instance")
        else:
            if running:
                await ic.shutdown_on_node(self, inst, self.op.shutdown_timeout)
                await self.stop_disks()
            else:
                self.ctx.feedback("message", f"Instance {inst.name} was already stopped, "
                                             "starting now")
            await self.start_disks()
            try:
                await ic.start_on_node(self, self.instance)
            except OpExecError as err:
                await self.stop_disks()
                raise OpExecError(f"Could not start instance for full reboot: "
                                  f"{err.args[0]}") from None
        await self.set_admin_state(c.ADMINST_UP, c.ADMIN_SOURCE)
        return None


async def remove_instance(lu: InstanceLU, inst: Instance, ignore_failures: bool,
                          forthcoming: bool = False) -> None:
    """Ganeti's RemoveInstance: the disks, then the config entry, then the lock
    (a forthcoming instance's disks exist only in the config)."""
    cfg = lu.ctx.config.config
    if inst.disks and not forthcoming:
        ok = await instance_storage.remove_disks(lu, cfg, inst, ignore_failures=ignore_failures)
        if not ok:
            if not ignore_failures:
                raise OpExecError("Can't remove instance's disks")
            lu.ctx.feedback("message", "Warning: can't remove instance's disks")
    lu.ctx.feedback("message", f"Removing instance {inst.name} out of cluster config")
    uuid = inst.uuid

    def change(cfg: ConfigData) -> None:
        gone = cfg.instances.pop(uuid, None)
        if gone is None:
            return
        for disk_uuid in gone.disks:
            cfg.disks.pop(disk_uuid, None)
        ic.commit_nic_ips(cfg, gone.nics, release=True)
    await lu.update_config(change)
    lu.remove_locks[LEVEL_INSTANCE] = [inst.name]


class LUInstanceRemove(InstanceLU):
    """OP_INSTANCE_REMOVE."""

    OP_ID = "OP_INSTANCE_REMOVE"
    op: OpInstanceRemove
    HPATH = "instance-remove"
    NODE_LEVELS = (LEVEL_NODE, LEVEL_NODE_RES)
    ALLOW_FORTHCOMING = True

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env["SHUTDOWN_TIMEOUT"] = self.op.shutdown_timeout
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        nodes = ic.hooks_nodes(self.ctx.config.config, self.instance)
        return [nodes[0]], nodes  # Ganeti's: the master before, all after

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        inst = self.instance
        cfg = self.ctx.config.config
        node = cfg.nodes[inst.primary_node]
        if inst.forthcoming:  # nothing exists on a node: the config entry goes
            self.ctx.feedback("message", f"Instance {inst.name} on node {node.name} is "
                                         "forthcoming; not shutting down")
            await remove_instance(self, inst, self.op.ignore_failures, forthcoming=True)
            return None
        self.ctx.feedback("message", f"Shutting down instance {inst.name} on node "
                                     f"{node.name}")
        result = await self.ctx.rpc().call_one(node, "instance_shutdown",
                                               [ic.instance_arg(inst), self.op.shutdown_timeout,
                                                ic.reason_trail(self)])
        if not result.success:
            if self.op.ignore_failures or node.offline:
                self.ctx.feedback("message", f"Warning: can't shutdown instance: "
                                             f"{result.fail_msg}")
            else:
                raise OpExecError(f"Could not shutdown instance {inst.name} on node "
                                  f"{node.name}: {result.fail_msg}")
        if inst.disks and inst.disks_active:
            await self.stop_disks(ignore_primary=True)
        await remove_instance(self, self.instance, self.op.ignore_failures)
        return None


class LUInstanceRename(InstanceLU):
    """OP_INSTANCE_RENAME; the result is the new name."""

    OP_ID = "OP_INSTANCE_RENAME"
    op: OpInstanceRename
    HPATH = "instance-rename"
    ALLOW_FORTHCOMING = True

    def check_arguments(self) -> None:
        if self.op.ip_check and not self.op.name_check:
            raise OpPrereqError("IP address check requires a name check", ECODE_INVAL)
        self.new_name = self.op.new_name.lower()
        if not kinds.is_hostname(self.new_name):
            raise OpPrereqError(f"Invalid instance name '{self.op.new_name}'", ECODE_INVAL)

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env["INSTANCE_NEW_NAME"] = self.new_name
        return env

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        if not inst.forthcoming:
            ic.check_node_online(cfg.nodes[inst.primary_node])
        check_admin_state(inst, NOT_RUNNING, "cannot rename")
        if self.new_name != inst.name and cfg.instance_by_name(self.new_name) is not None:
            raise OpPrereqError(f"Instance '{self.new_name}' is already in the cluster",
                                ECODE_EXISTS)

    async def exec(self) -> Any:
        inst = self.instance
        if not inst.forthcoming:
            await check_not_running(self, inst, "cannot rename")
        if self.op.name_check:  # Ganeti's CheckHostnameSane: the new name is the FQDN
            self.new_name, ip = await hostnames.check_hostname_sane(self, self.new_name)
            if self.op.ip_check:
                await hostnames.check_ip_free(self, ip, self.new_name)
        old, new, uuid = inst.name, self.new_name, inst.uuid
        if new != old and self.ctx.config.config.instance_by_name(new) is not None:
            raise OpPrereqError(f"Instance '{new}' is already in the cluster", ECODE_EXISTS)
        if self.op.dry_run:
            return new
        if new != old:  # to the same name nothing changes; the OS script still runs
            await self._rename_in_config(old, new, uuid)
        inst = self.instance
        if inst.forthcoming:  # named now, still only in the config
            return new
        if inst.os:
            await self.start_disks()
            try:
                node = self.ctx.config.config.nodes[inst.primary_node]
                result = await osoutput.run_os_call(
                    self, node, "instance_run_rename",
                    [ic.instance_arg(inst), old, self.op.debug_level or 0], "OS rename")
                if not result.success:
                    self.ctx.feedback("message", " - WARNING: Could not run OS rename "
                                                 f"script for instance {new} on node "
                                                 f"{node.name} (but "
                                                 "the instance has been renamed in Ganeti): "
                                                 f"{result.fail_msg}")
            finally:
                await self.stop_disks()
        return new

    async def _rename_in_config(self, old: str, new: str, uuid: str) -> None:
        """The instance's new name in the config, its lock, its file disks' directory."""
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> None:
            if cfg.instance_by_name(new) is not None:
                raise OpPrereqError(f"Instance '{new}' is already in the cluster",
                                    ECODE_EXISTS)
            obj = cfg.instances[uuid]
            obj.name = new
            obj.serial_no += 1
            obj.mtime = now
        await self.update_config(change)
        self.name = new
        self.remove_locks[LEVEL_INSTANCE] = [old]
        try:
            await self.ctx.locks.add(LEVEL_INSTANCE, [new])
        except LockError as err:  # a create of that name holds it; it will fail
            self.ctx.feedback("message", f"Lock of {new} not added: {err}")
        inst = self.instance
        cfg = self.ctx.config.config
        if any(cfg.disks[d].dev_type in (c.DT_FILE, c.DT_SHARED_FILE)
               for d in inst.disks if d in cfg.disks):
            await instance_storage.rename_instance_disks(self, cfg, inst, old, new,
                                                         on_node=not inst.forthcoming)


class LUInstanceReinstall(InstanceLU):
    """OP_INSTANCE_REINSTALL: run the OS create script again on the instance's disks."""

    OP_ID = "OP_INSTANCE_REINSTALL"
    op: OpInstanceReinstall
    HPATH = "instance-reinstall"
    NODE_LEVELS = (LEVEL_NODE,)
    PRIMARY_ONLY = True

    def check_arguments(self) -> None:
        osimage.check_os_image(self.op.osparams)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        ic.check_node_online(cfg.nodes[inst.primary_node], "Instance primary node offline, "
                                                            "cannot reinstall")
        if not inst.disks:
            raise OpPrereqError(f"Instance '{inst.name}' has no disks", ECODE_INVAL)
        check_admin_state(inst, DOWN, "cannot reinstall")
        self.os_name = self.op.os_type or inst.os
        if not self.os_name:
            raise OpPrereqError("No OS given and the instance has none", ECODE_INVAL)
        if self.os_name in cfg.cluster.blacklisted_os and self.op.os_type:
            raise OpPrereqError(f"Guest OS '{self.os_name}' is not allowed for installation",
                                ECODE_STATE)

    async def exec(self) -> Any:
        inst = self.instance
        await check_not_running(self, inst, "cannot reinstall")
        # Ganeti's _MergeValidateOsParams: the OS must accept the parameters (the
        # instance's updated by the opcode's, filled from the cluster) on the nodes
        cfg = self.ctx.config.config
        public = get_updated_params(inst.osparams, self.op.osparams or {})
        private = get_updated_params(inst.osparams_private, self.op.osparams_private or {})
        osp = params_fill.fill_os(cfg.cluster, self.os_name, public, private,
                                  self.op.osparams_secret or {})
        # Our create takes an OS name without its variant where Ganeti's refuses it
        # (docs/compat.md): the OS an instance was created with is reinstalled as is
        kept_os = not self.op.os_type or self.op.os_type == inst.os
        await check_os_params(self.ctx, True, sorted(nodesmod.instance_nodes(cfg, inst)),
                              self.os_name or "", osp, self.op.force_variant or kept_os,
                              prereq=False)
        if self.op.dry_run:
            return None
        image = osimage.get_os_image(self.op.osparams)
        if image is not None:
            self.ctx.feedback("message", f"Using OS image '{image}'")
        else:
            image = osimage.get_os_image(inst.osparams)
        if self.op.os_type and self.op.os_type != inst.os:
            self.ctx.feedback("message", f"Changing OS scripts to '{self.op.os_type}'...")
            new_os, uuid = self.op.os_type, inst.uuid

            def change(cfg: ConfigData) -> None:
                obj = cfg.instances[uuid]
                obj.os = new_os
                obj.serial_no += 1
            await self.update_config(change)
        inst = self.instance
        await self.start_disks()
        try:
            if image:
                await osimage.image_disks(self, inst, image)
            self.ctx.feedback("message", "Running the instance OS create scripts...")
            node = self.ctx.config.config.nodes[inst.primary_node]
            osp = {**(self.op.osparams or {}), **(self.op.osparams_private or {})}
            arg = InstanceArg(inst, osp=osp or None,
                              osp_secret=dict(self.op.osparams_secret or {}) or None)
            result = await osoutput.run_os_call(self, node, "instance_os_add",
                                                [arg, True, self.op.debug_level or 0],
                                                "OS create")
            result.raise_if_failed(
                f"Could not install OS for instance {inst.name} on node {node.name}")
        finally:
            await self.stop_disks()
        if self.op.osparams or self.op.osparams_private:
            await self._keep_os_params(public, private)
        return None

    async def _keep_os_params(self, public: dict[str, Any], private: dict[str, Any]) -> None:
        """The instance keeps the parameters it was reinstalled with (Ganeti stores
        them before installing, so a failed image stays for the next reinstall;
        here only a reinstall that worked changes them: docs/compat.md)."""
        uuid = self.instance.uuid

        def change(cfg: ConfigData) -> None:
            obj = cfg.instances[uuid]
            obj.osparams = dict(public)
            obj.osparams_private = dict(private)
            obj.serial_no += 1
        await self.update_config(change)


class LUInstanceConsole(InstanceLU):
    """OP_INSTANCE_CONSOLE: how to reach the console (Ganeti's console object)."""

    OP_ID = "OP_INSTANCE_CONSOLE"
    op: OpInstanceConsole

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.share_locks[LEVEL_INSTANCE] = True

    def check_prereq(self) -> None:
        ic.check_node_online(self.ctx.config.config.nodes[self.instance.primary_node])

    async def exec(self) -> Any:
        inst = self.instance
        cfg = self.ctx.config.config
        if not await ic.instance_running(self, inst):
            if inst.admin_state == c.ADMINST_UP:
                state = "ERROR_down"
            else:
                state = "ADMIN_down"
            raise OpExecError(f"Instance {inst.name} is not running (state {state})")
        return consoles.instance_console(cfg, inst)


LUS: tuple[type[LogicalUnit], ...] = (
    LUInstanceStartup, LUInstanceShutdown, LUInstanceReboot, LUInstanceRemove,
    LUInstanceRename, LUInstanceReinstall, LUInstanceConsole,
)
