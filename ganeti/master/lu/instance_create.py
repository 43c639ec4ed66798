"""OP_INSTANCE_CREATE: a new instance on the nodes given or chosen by an allocator.

The order is Ganeti's: check everything, create the disks, add the instance to
the config, install the OS, start it.  Unlike Ganeti, a failure after the disks
exist (the config commit, the OS create script) removes what was made: the
disks and the config entry, so a failed create leaves nothing behind; the job
fails with the step's error (for an OS script, with the tail of its log).
In import mode :mod:`ganeti.master.lu.backup_import` reads the export first
(filling the opcode's gaps) and imports the disks in place of the OS install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ganeti.core import constants as c
from ganeti.core import hooks as hookdefs
from ganeti.core import params_fill
from ganeti.core.errors import (
    ECODE_EXISTS,
    ECODE_INVAL,
    ECODE_STATE,
    GenericError,
    OpExecError,
    OpPrereqError,
)
from ganeti.core.exportinfo import ExportInfo
from ganeti.core.objects import ConfigData, Disk, Instance, Node
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.table_instance import MAX_DISKS, MAX_NICS
from ganeti.core.opcodes.views import OpInstanceCreate
from ganeti.core.params_types import parse_unit
from ganeti.core.rpcdefs.encoders import InstanceArg
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_INSTANCE, LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import (
    backup_import,
    hostnames,
    instance_policy,
    osimage,
    osoutput,
)
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_drbd as drbd
from ganeti.master.lu import instance_forthcoming as forth
from ganeti.master.lu import (
    instance_placement as placement,
)
from ganeti.master.lu import instance_storage as storage
from ganeti.master.lu.base import LogicalUnit

DTS_INT_MIRROR = drbd.DTS_INT_MIRROR
#: Templates this version can create disks for (ext, rbd, gluster: accepted by the
#: config and queries, refused here until they exist).
DTS_CREATABLE = frozenset({c.DT_DISKLESS, c.DT_FILE, c.DT_SHARED_FILE, c.DT_PLAIN,
                           c.DT_BLOCK, c.DT_DRBD8})
DTS_MAY_ADOPT = frozenset({c.DT_PLAIN, c.DT_BLOCK})
DTS_MUST_ADOPT = frozenset({c.DT_BLOCK})
DTS_FILEBASED = frozenset({c.DT_FILE, c.DT_SHARED_FILE})
_DISK_KEYS_TYPES = {"size": "size", "spindles": "int", "mode": "str", "adopt": "str",
                    "vg": "str", "metavg": "str", "name": "str", "provider": "str",
                    "access": "str", "dev_type": "str"}


def check_disk_specs(template: str, specs: list[dict[str, Any]],
                     require_size: bool = True) -> tuple[list[dict[str, Any]], bool]:
    """The opcode's disk definitions checked and normalised (Ganeti's
    _CheckDiskArguments and ComputeDisks); whether they are adopted."""
    out: list[dict[str, Any]] = []
    names: set[str] = set()
    has_adopt = has_no_adopt = False
    for spec in specs:
        disk = dict(spec)
        for key in disk:
            if key not in _DISK_KEYS_TYPES:
                raise OpPrereqError(f"Unknown parameter '{key}'", ECODE_INVAL)
        if "size" in disk:
            try:
                disk["size"] = parse_unit(disk["size"])
            except (GenericError, ValueError, TypeError):
                raise OpPrereqError(f"Invalid disk size '{disk['size']}'", ECODE_INVAL) \
                    from None
        elif require_size and "adopt" not in disk:
            raise OpPrereqError("Missing disk size", ECODE_INVAL)
        disk["mode"] = ic.check_disk_mode(disk.get("mode", "rw"))
        name = disk.get("name")
        if name is not None and str(name).lower() == ic.VALUE_NONE:
            disk["name"] = name = None
        if name is not None:
            if name in names:
                raise OpPrereqError(f"disk name '{name}' already used", ECODE_INVAL)
            names.add(name)
        if "adopt" in disk:
            has_adopt = True
        else:
            has_no_adopt = True
        out.append(disk)
    if has_adopt and has_no_adopt:
        raise OpPrereqError("Either all disks are adopted or none is", ECODE_INVAL)
    if has_adopt and template not in DTS_MAY_ADOPT:
        raise OpPrereqError(f"Disk adoption is not supported for the '{template}' disk "
                            "template", ECODE_INVAL)
    if not has_adopt and template in DTS_MUST_ADOPT and out:
        raise OpPrereqError(f"Disk template {template} requires disk adoption, but no "
                            "'adopt' parameter given", ECODE_INVAL)
    return out, has_adopt


class LUInstanceCreate(LogicalUnit):
    """OP_INSTANCE_CREATE; the result is the names of the instance's nodes."""

    OP_ID = "OP_INSTANCE_CREATE"
    op: OpInstanceCreate
    REQ_BGL = False
    HPATH = "instance-add"
    HTYPE = hookdefs.HTYPE_INSTANCE
    #: The address the name resolved to (the name check), for the NICs and IP check.
    resolved_ip: str | None = None
    #: whether the job log says that primary and secondary are in two groups
    group_warned = False
    # -- reservations (:mod:`.instance_forthcoming` sets them) ---------------------
    forthcoming = False  #: only reserve: a forthcoming instance, in the config
    commit = False  #: make the reservation real
    reservation: Instance | None = None  #: the reservation being committed
    reserved_disks: tuple[Disk, ...] = ()
    keep_nics = False  #: the commit keeps the reservation's NICs
    new_uuid = ""  #: the instance's UUID (the reservation's when committing)

    # -- the import mode's state (ganeti.master.lu.backup_import fills it) ------
    #: the export's name and its path as the hooks show it
    src_export: str = ""
    src_path: str | None = None
    #: the node holding the export (None: not known yet, every node is searched)
    src_node_uuid: str | None = None
    src_node_name: str | None = None
    #: the export's config.ini, once read (the opcode is then filled from it)
    export_info: ExportInfo | None = None
    #: the disk images of the export, by disk index (None: no image for that disk)
    src_images: Sequence[str | None] = ()

    # -- arguments -------------------------------------------------------------

    def check_arguments(self) -> None:
        op = self.op = forth.prepare(self)
        self.name = str(op.instance_name).lower()
        if not kinds.is_hostname(self.name):
            raise OpPrereqError(f"Invalid instance name '{op.instance_name}'", ECODE_INVAL)
        self.start = op.start
        if op.no_install and op.start:
            self.ctx.feedback("message", "No-installation mode selected, disabling startup")
            self.start = False
        if op.ip_check and not op.name_check:
            raise OpPrereqError("Cannot do IP address check without a name check",
                                ECODE_INVAL)
        if op.iallocator and (op.pnode or op.pnode_uuid):  # "." too, as Ganeti
            raise OpPrereqError("Do not specify both, iallocator and node", ECODE_INVAL)
        if op.mode == "remote-import":
            raise OpPrereqError("Remote imports are not supported yet", ECODE_INVAL)
        if op.mode == "import":
            backup_import.check_import_arguments(self)
        osimage.check_os_image(op.osparams)
        if op.mode == "create" and op.os_type is None and not self.forthcoming:
            raise OpPrereqError("No guest OS or OS image specified", ECODE_INVAL)
        if op.disks is None or op.nics is None:  # (given: validation checked it)
            raise OpPrereqError("Parameter 'OP_INSTANCE_CREATE.disks' is required but "
                                "missing", ECODE_INVAL)
        if len(op.disks) > MAX_DISKS:
            raise OpPrereqError(f"Instance has too many disks ({len(op.disks)}), cannot "
                                f"have more than {MAX_DISKS}", ECODE_INVAL)
        if len(op.nics) > MAX_NICS:
            raise OpPrereqError(f"Instance has too many network interfaces "
                                f"({len(op.nics)}), cannot have more than {MAX_NICS}",
                                ECODE_INVAL)
        if op.file_driver and op.file_driver not in c.FILE_DRIVERS:
            raise OpPrereqError(f"Invalid file driver name '{op.file_driver}'", ECODE_INVAL)
        for value in (op.osparams_secret or {}).values():
            if not isinstance(value, str):
                raise OpPrereqError("Secret OS parameters must be strings", ECODE_INVAL)

    # -- names and locks -------------------------------------------------------

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        if cfg.instance_by_name(self.name) is not None and not self.commit:
            raise OpPrereqError(f"Instance '{self.name}' is already in the cluster",
                                ECODE_EXISTS)
        self.template = self.op.disk_template or (cfg.cluster.enabled_disk_templates or
                                                  [c.DT_DISKLESS])[0]
        self.allocators = iajobs.allocator_names(
            cfg, self.op.iallocator, bool(self.op.pnode or self.op.pnode_uuid))
        self.snode: Node | None = None
        if self.allocators:
            placement.expand_for_allocator(self, cfg)
        else:
            self._expand_nodes(cfg)
        if self.op.mode == "import":
            backup_import.lock_source_node(self, cfg)
        # Ganeti takes both levels exclusively.  Here the node level is shared unless
        # volumes are made on the node (LVM), and the node resources are shared when
        # nothing is accounted on them: no volume group space and no memory (the
        # instance is not started).  Creations on one node then run side by side;
        # what must be unique (names, MACs, IPs, LV names) is reserved per job.
        lvm = self.template in (c.DT_PLAIN, c.DT_DRBD8)
        self.share_locks[LEVEL_NODE] = not lvm
        # a reservation accounts all it holds: one at a time per node
        self.share_locks[LEVEL_NODE_RES] = not lvm and not self.start and not self.forthcoming

    def _expand_nodes(self, cfg: ConfigData) -> None:
        """The user's nodes: resolved, and their locks."""
        self.pnode = nodesmod.find_node(cfg, self.op.pnode_uuid or self.op.pnode)
        if self.template in DTS_INT_MIRROR:
            if not (self.op.snode or self.op.snode_uuid):
                raise OpPrereqError("The networked disk templates need a mirror node",
                                    ECODE_INVAL)
            self.snode = nodesmod.find_node(cfg, self.op.snode_uuid or self.op.snode)
        elif self.op.snode or self.op.snode_uuid:
            self.ctx.feedback("message", "Secondary node will be ignored on non-mirrored "
                                         "disk template")
        nodes = sorted({self.pnode.uuid} | ({self.snode.uuid} if self.snode else set()))
        if self.commit:  # the reservation's lock: it exists
            self.needed_locks[LEVEL_INSTANCE] = [self.name]
        else:
            self.add_locks[LEVEL_INSTANCE] = [self.name]
        self.needed_locks[LEVEL_NODE] = nodes
        self.needed_locks[LEVEL_NODE_RES] = list(nodes)

    def declare_locks(self, level: int) -> None:
        if self.allocators:
            placement.declare_allocator_locks(self, level)

    # -- hooks -----------------------------------------------------------------

    def build_hooks_env(self) -> dict[str, Any]:
        inst = self.instance
        cfg = self.ctx.config.config
        env = ic.instance_hook_env(cfg, inst) if inst is not None else {}
        env["ADD_MODE"] = self.op.mode
        if self.op.mode == "import":
            env["SRC_NODE"] = self.src_node_name or self.op.src_node or ""
            env["SRC_PATH"] = self.src_path or self.op.src_path or ""
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        master = self.ctx.config.config.cluster.master_node
        nodes = [master, self.pnode.uuid] + ([self.snode.uuid] if self.snode else [])
        return nodes, nodes

    # -- prerequisites ---------------------------------------------------------

    async def before_prereq(self) -> None:
        """With an allocator: the checks that need no node, then the allocator's run
        on the locked nodes, which chooses them (Ganeti's _RunAllocator).  A
        reservation on the user's nodes: the built-in allocator's rules on them."""
        if not self.allocators:
            if self.forthcoming:
                self._check_params()
                self._check_nodes()
                await forth.check_fits(self)
            return
        if self.op.mode == "import":  # the export fills the opcode first (as Ganeti)
            await backup_import.read_export(self)
        self._check_params()
        await placement.choose_nodes(self)

    def check_prereq(self) -> None:
        self.instance: Instance | None = None
        forth.check_still_reserved(self)
        if self.op.mode == "import" and not backup_import.export_read(self):
            return  # checked in exec, once the export has filled the opcode
        self._check_params()
        self._check_nodes()

    def _check_params(self) -> None:
        """What needs no node: template, disks, hypervisor, parameters, NICs."""
        cfg = self.ctx.config.config
        cluster = cfg.cluster
        op = self.op
        if self.template not in cluster.enabled_disk_templates:
            # Ganeti 3.0's CheckDiskTemplateEnabled: its wording, and no error code
            raise OpPrereqError(f"Disk template '{self.template}' is not enabled in "
                                "cluster. Enabled disk templates are: "
                                f"{','.join(cluster.enabled_disk_templates)}")
        if self.template not in DTS_CREATABLE:
            raise OpPrereqError(f"Disk template '{self.template}' cannot be created yet "
                                "(the external templates come later)", ECODE_INVAL)
        disks = list(op.disks or [])
        if self.template == c.DT_DISKLESS and disks:
            raise OpPrereqError("Diskless instances cannot have disks", ECODE_INVAL)
        if self.template != c.DT_DISKLESS and not disks and not self.forthcoming:
            raise OpPrereqError(f"Disk template '{self.template}' needs at least one disk",
                                ECODE_INVAL)
        self.disk_specs, self.adopt = check_disk_specs(self.template, disks)
        if self.adopt and self.forthcoming:
            raise OpPrereqError("Disks of a forthcoming instance cannot be adopted",
                                ECODE_INVAL)
        self.hypervisor = op.hypervisor or (cluster.enabled_hypervisors or [c.HT_FAKE])[0]
        if self.hypervisor not in cluster.enabled_hypervisors:
            raise OpPrereqError(f"Selected hypervisor ({self.hypervisor}) not enabled in the "
                                "cluster "
                                f"({','.join(cluster.enabled_hypervisors)})", ECODE_STATE)
        if op.os_type and op.os_type in cluster.blacklisted_os:
            raise OpPrereqError(f"Guest OS '{op.os_type}' is not allowed for installation",
                                ECODE_STATE)
        # parameters: checked, and with identify_defaults the cluster's values dropped
        self.hv_full = ic.check_hvparams(cfg, self.hypervisor, op.os_type, op.hvparams)
        self.beparams = ic.upgrade_beparams(op.beparams)
        self.be_full = params_fill.fill_be(cluster, self.beparams)
        ic.check_be_memory(self.be_full)
        self.hvparams = dict(op.hvparams)
        if op.identify_defaults:
            self._identify_defaults(cfg)
        # NICs (MACs and pool addresses are reserved for the job in exec)
        self.nics = ic.build_nics(self, cfg, list(op.nics or []), op.name_check, ic.VALUE_AUTO)
        if self.keep_nics and self.reservation is not None:
            self.nics = [n.clone() for n in self.reservation.nics]

    def _check_nodes(self) -> None:
        """The nodes (given or chosen), and the policy of the primary's group."""
        cfg = self.ctx.config.config
        op = self.op
        ic.check_node_online(self.pnode, "Cannot use offline primary node")
        ic.check_node_not_drained(self.pnode)
        ic.check_node_vm_capable(self.pnode)
        if self.snode is not None:  # Ganeti's mirror node verification
            if self.snode.uuid == self.pnode.uuid:
                raise OpPrereqError("The secondary node cannot be the primary node",
                                    ECODE_INVAL)
            ic.check_node_online(self.snode)
            ic.check_node_not_drained(self.snode)
            ic.check_node_vm_capable(self.snode)
            if self.snode.group != self.pnode.group and not self.group_warned:
                self.group_warned = True  # (an import checks the nodes twice)
                self.ctx.feedback("message", " - WARNING: The primary and secondary nodes "
                                  "are in two different node groups; the disk parameters "
                                  "from the first disk's node group will be used")
        # the instance policy of the primary node's group
        spec = instance_policy.spec_of(self.be_full, [d.get("size", 0) for d in self.disk_specs],
                                       len(self.nics), [d.get("spindles") for d in
                                                        self.disk_specs])
        violations = instance_policy.violations(cfg, self.pnode.group, spec, self.template)
        if violations and not op.ignore_ipolicy:
            group = cfg.nodegroups.get(self.pnode.group)
            raise OpPrereqError(f"Instance allocation to group "
                                f"{group.name if group else self.pnode.group} "
                                f"({self.pnode.group}) violates policy: "
                                f"{'; '.join(violations)}", ECODE_INVAL)

    def _identify_defaults(self, cfg: ConfigData) -> None:
        """Ganeti's _RevertToDefaults: drop values equal to the cluster's."""
        cluster = cfg.cluster
        hv_defaults = params_fill.fill_hv(cluster, self.hypervisor, self.op.os_type, {})
        self.hvparams = {k: v for k, v in self.hvparams.items() if hv_defaults.get(k) != v}
        be_defaults = params_fill.fill_be(cluster, {})
        self.beparams = {k: v for k, v in self.beparams.items() if be_defaults.get(k) != v}

    async def before_locks(self) -> None:
        """The name check, before the new name's lock is taken (Ganeti's
        CheckHostnameSane in ExpandNames): the instance is created under the name
        the given one resolves to, which must start with it (whole labels)."""
        self.resolved_ip = None
        if not self.op.name_check:
            return
        fqdn, self.resolved_ip = await hostnames.check_hostname_sane(self, self.name)
        if fqdn != self.name and not self.commit:  # a reservation keeps its name
            self.name = fqdn
            self.record_op(instance_name=fqdn)
            self.expand_names()  # the resolved name must be new too; its lock is taken

    async def _check_address(self) -> None:
        """NICs with ``ip=auto`` get the resolved address; with the IP check nothing
        may answer there (Ganeti's TcpPing of the node daemon port: a connection
        accepted or refused means a host is up)."""
        ip = self.resolved_ip
        for nic in self.nics:
            if nic.ip == ic.VALUE_AUTO:
                nic.ip = ip
        if self.op.ip_check and ip is not None:
            await hostnames.check_ip_free(self, ip, self.name)

    # -- exec ------------------------------------------------------------------

    async def exec(self) -> Any:
        if self.op.mode == "import":  # the export fills what the opcode leaves out
            await backup_import.read_export(self)
            self.check_prereq()
        cfg = self.ctx.config.config
        op = self.op
        now = self.ctx.clock.seconds()
        uuid = self.new_uuid
        if op.name_check:
            await self._check_address()
        if not self.forthcoming:  # a reservation asks no node
            await ic.validate_hvparams_on_nodes(  # Ganeti's CheckHVParams
                self, [self.pnode.uuid] + ([self.snode.uuid] if self.snode else []),
                self.hypervisor, self.hv_full)
        if self.start:  # Ganeti's CheckNodeFreeMemory, under the node-resource lock
            await ic.check_node_free_memory(self, self.pnode,
                                            f"creating instance {self.name}",
                                            int(self.be_full.get(c.BE_MINMEM) or 0),
                                            exclude=uuid)
        if not self.forthcoming and not self.adopt and self.reservation is None:
            await self._check_free_space(cfg)
        if not self.keep_nics:
            ic.assign_nic_resources(self, cfg, self.nics, op.conflicts_check)
        disks: list[Disk] = []
        if self.reservation is not None and self.reserved_disks:
            disks = [d.clone() for d in self.reserved_disks]
        elif self.template != c.DT_DISKLESS:
            file_dir = op.file_storage_dir
            driver = op.file_driver or (c.FD_LOOP if self.template in DTS_FILEBASED else None)
            disks = storage.generate_disks(self, cfg, self.template, uuid, self.pnode.uuid,
                                           [self.snode.uuid] if self.snode else [],
                                           self.disk_specs, file_dir, driver,
                                           instance_name=self.name)
        inst = Instance(
            uuid=uuid, name=self.name, primary_node=self.pnode.uuid, os=op.os_type,
            hypervisor=self.hypervisor, hvparams=self.hvparams, beparams=self.beparams,
            osparams=dict(op.osparams), osparams_private=dict(op.osparams_private or {}),
            admin_state=c.ADMINST_UP if self.start else c.ADMINST_DOWN,
            admin_state_source=c.ADMIN_SOURCE, nics=self.nics,
            disks=[d.uuid for d in disks], disk_template=self.template,
            disks_active=bool(disks) and self.start, tags=list(op.tags), ctime=now,
            mtime=now, serial_no=1)
        forth.mark(inst, disks, self.forthcoming)
        self.instance = inst
        if op.dry_run:  # the chosen nodes, by name (Ganeti returns their UUIDs)
            self.ctx.feedback("message", " - INFO: dry-run mode requested, not actually "
                                         "executing the operation")
            return [n.name for n in (self.pnode, self.snode) if n is not None]
        if self.forthcoming:
            self.ctx.feedback("message", "Instance is forthcoming, not creating disks")
            self.ctx.feedback("message", f"adding instance {self.name} to cluster config")
            self.ctx.feedback("message", "adding disks to cluster config")
            await self.update_config(self._add(inst, disks))
            self.ctx.feedback("message", "Instance is forthcoming; not creating the actual "
                                         "instance")
            return forth.result(self.ctx.config.config, inst)
        if disks:
            self.ctx.feedback("message", "* creating instance disks...")
            await storage.create_disks(self, self._with_disks(cfg, inst, disks), inst, disks)
        self.ctx.feedback("message", f"adding instance {self.name} to cluster config")
        try:
            await self.update_config(self._add(inst, disks))
        except BaseException:
            if disks:
                await self._cleanup_disks(inst, disks)
            raise
        # the nodes are not needed any more: the instance is in the config, its
        # resources are accounted there (Ganeti releases both levels here as well)
        src_uuid = self.src_node_uuid
        self.release_locks(LEVEL_NODE, keep=[src_uuid] if op.mode == "import" and src_uuid
                           else None)
        self.release_locks(LEVEL_NODE_RES)
        if any(d.dev_type in DTS_INT_MIRROR for d in disks):
            await self._check_mirrors(inst, disks)
        if op.mode == "create" and not op.no_install:
            await self._image(inst, disks)
            await self._install(inst, disks)
        elif op.mode == "import":
            try:
                await backup_import.import_disks(
                    self, self.ctx.config.config.instances[inst.uuid])
            except BaseException:
                await self._undo(inst, disks)
                raise
        if self.start:
            self.ctx.feedback("message", "* starting instance...")
            await ic.start_on_node(self, self.ctx.config.config.instances[uuid])
        cfg = self.ctx.config.config
        return sorted(cfg.nodes[u].name for u in nodesmod.instance_nodes(cfg, inst)
                      if u in cfg.nodes)

    async def _check_free_space(self, cfg: ConfigData) -> None:
        """Ganeti's CheckNodesFreeDiskPerVG for the lvm templates: each node of the
        instance has room in each volume group (drbd: 128 MiB more per disk)."""
        required = drbd.size_per_vg(self.template, self.disk_specs,
                                    cfg.cluster.volume_group_name)
        if not required:
            return
        for node in [self.pnode] + ([self.snode] if self.snode else []):
            await storage.check_vg_free(self, node, required)

    async def _check_mirrors(self, inst: Instance, disks: list[Disk]) -> None:
        """Ganeti's _RemoveDegradedDisks: wait for the mirrors to sync (or, without
        ``wait_for_sync``, look once that they are not degraded); degraded disks
        remove the instance again."""
        cfg = self.ctx.config.config
        current = cfg.instances[inst.uuid]
        if self.op.wait_for_sync:
            ok = await drbd.wait_for_sync(self, cfg, current)
        else:
            self.ctx.feedback("message", "* checking mirrors status")
            ok = await drbd.wait_for_sync(self, cfg, current, oneshot=True)
        if not ok:
            await self._undo(inst, disks)
            raise OpExecError("There are some degraded disks for this instance")

    @staticmethod
    def _with_disks(cfg: ConfigData, inst: Instance, disks: list[Disk]) -> ConfigData:
        """A view of the config in which the new instance's disks exist (the node
        calls fill disk parameters from the config)."""
        return cfg.view(disks={**cfg.disks, **{d.uuid: d for d in disks}},
                        instances={**cfg.instances, inst.uuid: inst})

    def _add(self, inst: Instance, disks: list[Disk]) -> Any:
        if self.reservation is not None:
            return forth.replace_change(self, inst, disks)
        name = self.name

        def change(cfg: ConfigData) -> None:
            if cfg.instance_by_name(name) is not None:
                raise OpPrereqError(f"Instance '{name}' is already in the cluster",
                                    ECODE_EXISTS)
            for d in disks:
                cfg.disks[d.uuid] = d
            drbd.commit_ports(cfg, disks)
            cfg.instances[inst.uuid] = inst.clone()
            ic.commit_nic_ips(cfg, inst.nics)
        return change

    async def _image(self, inst: Instance, disks: list[Disk]) -> None:
        """Write the ``os-image`` OS parameter's image onto the first disk (not onto
        adopted ones); the instance is removed again if that fails, as Ganeti does."""
        image = osimage.get_os_image(self.op.osparams)
        if image is None or not disks or self.adopt:
            return
        self.ctx.feedback("message", "* imaging instance disks...")
        try:
            await osimage.image_disks(self, self.ctx.config.config.instances[inst.uuid], image)
        except OpExecError as err:
            self.ctx.feedback("message", f" - WARNING: Imaging instance disks failed ({err})")
            await self._undo(inst, disks)
            raise OpExecError("There are some degraded disks for this instance") from None

    async def _install(self, inst: Instance, disks: list[Disk]) -> None:
        self.ctx.feedback("message", "* running the instance OS create scripts...")
        cfg = self.ctx.config.config
        node = cfg.nodes[inst.primary_node]
        arg = ic.instance_arg(cfg.instances[inst.uuid])
        secret = dict(self.op.osparams_secret or {})
        if secret:
            arg = InstanceArg(arg.instance, osp_secret=secret)
        try:
            result = await osoutput.run_os_call(self, node, "instance_os_add",
                                                [arg, False, self.op.debug_level or 0],
                                                "OS create")
            result.raise_if_failed(
                f"Could not add os for instance {inst.name} on node {node.name}")
        except BaseException:
            await self._undo(inst, disks)
            raise

    async def _undo(self, inst: Instance, disks: list[Disk]) -> None:
        """Remove the instance and its disks again after a failed step."""
        self.ctx.feedback("message", f"Removing instance {inst.name} after the failure")
        if disks:
            await self._cleanup_disks(inst, disks)
        if self.reservation is not None:  # a failed commit: the reservation again
            self.ctx.feedback("message", f"Restoring the reservation of {inst.name}")
            await self.update_config(forth.restore_change(self))
            return

        def change(cfg: ConfigData) -> None:
            gone = cfg.instances.pop(inst.uuid, None)
            for d in disks:
                cfg.disks.pop(d.uuid, None)
            if gone is not None:
                ic.commit_nic_ips(cfg, gone.nics, release=True)
        await self.update_config(change)

    async def _cleanup_disks(self, inst: Instance, disks: list[Disk]) -> None:
        cfg = self._with_disks(self.ctx.config.config, inst, disks)
        try:
            await storage.remove_disks(self, cfg, inst, disks, ignore_failures=True)
        except GenericError as err:
            self.ctx.feedback("message", f"Could not remove the disks of {inst.name}: {err}")
