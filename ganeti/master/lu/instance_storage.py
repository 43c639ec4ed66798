"""Disks of instances on the master: generate, create, remove, assemble, shut down,
grow, rename and check them (Ganeti's ``cmdlib/instance_storage.py`` helpers).

The instance units call these; each node call goes through
``lu.ctx.rpc().call`` with :class:`~ganeti.core.rpcdefs.disks.DiskArg` values,
which the RPC encoders turn into disk dicts with their parameters filled.

Disk layout per template (Ganeti 3.0's), ``logical_id`` and ``nodes``:

- plain: ``[vg, "<uuid>.disk<N>"]``, ``[primary]``;
- file: ``[driver, "<dir>/<uuid>.file.disk<N>"]``, ``[primary]``;
- sharedfile: ``[driver, "<dir>/<uuid>.sharedfile.disk<N>"]``, ``[]``;
- blockdev: ``["manual", <adopted path>]``, ``[]``.

``<dir>`` is the instance's file storage directory:
``<cluster dir>[/<op file_storage_dir>]/<instance name>``
(:func:`calculate_file_storage_dir`).  ``drbd`` disks (two nodes, two plain
children) are laid out, created and synced by :mod:`.instance_drbd`; ``ext``,
``rbd`` and ``gluster`` disks are refused with ``OpPrereqError`` (not supported yet).
"""

from __future__ import annotations

import posixpath
import uuid as uuidmod
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.core import constants, diskparams, params_fill, storagetypes
from ganeti.core.errors import (
    ECODE_ENVIRON,
    ECODE_INVAL,
    ECODE_NORES,
    ECODE_STATE,
    OpExecError,
    OpPrereqError,
    ReservationError,
)
from ganeti.core.objects import ConfigData, Disk, Instance, Node
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.config.reservations import as_prereq
from ganeti.master.lu import instance_drbd
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_filedirs import _file_dir
from ganeti.master.lu.instance_filedirs import (  # re-exported for the instance units
    calculate_file_storage_dir as calculate_file_storage_dir,
)
from ganeti.master.lu.instance_filedirs import rename_instance_disks as rename_instance_disks
from ganeti.master.lu.instance_filedirs import renamed_file_disk_ids as renamed_file_disk_ids
from ganeti.rpc.client import RpcResult

_NAME_PREFIX = {constants.DT_PLAIN: "", constants.DT_FILE: ".file",
                constants.DT_SHARED_FILE: ".sharedfile"}

#: Where :func:`generate_disks` notes a unit's adopted volumes (disk UUID -> the
#: adopted LV's current name), read by :func:`create_disks`; kept as long as the unit.
_ADOPTED: weakref.WeakKeyDictionary[LogicalUnit, dict[str, str]] = weakref.WeakKeyDictionary()


# -- helpers ---------------------------------------------------------------------------

def _warn(lu: LogicalUnit, text: str) -> None:
    lu.ctx.feedback("message", f"Warning: {text}")


def _node(cfg: ConfigData, uuid: str) -> Node:
    node = cfg.nodes.get(uuid)
    if node is None:
        raise OpExecError(f"Node {uuid} of a disk is not in the configuration")
    return node


def disk_nodes(instance: Instance, disk: Disk) -> list[str]:
    """UUIDs of the nodes a disk lives on, the primary first."""
    nodes = list(disk.nodes) or [instance.primary_node]
    if instance.primary_node in nodes:
        nodes.remove(instance.primary_node)
        nodes.insert(0, instance.primary_node)
    return nodes


def instance_disks(cfg: ConfigData, instance: Instance) -> list[Disk]:
    """The instance's disks from the config, in order (OpExecError if one is missing)."""
    try:
        return diskparams.instance_disks(cfg, instance)
    except ValueError as err:
        raise OpExecError(str(err)) from None


async def _on_disk_nodes(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                         disks: Sequence[Disk], call_name: str
                         ) -> list[tuple[Disk, Node, RpcResult]]:
    """``call_name`` with each disk on each of its nodes (in the config), one at a time."""
    out = []
    rpc = lu.ctx.rpc()
    for disk in disks:
        for node_uuid in disk_nodes(instance, disk):
            node = cfg.nodes.get(node_uuid)
            if node is not None:
                result = await rpc.call_one(node, call_name, [DiskArg(disk, instance)])
                out.append((disk, node, result))
    return out


def exclusive_storage(cfg: ConfigData, node: Node) -> bool:
    """Whether the node uses exclusive storage (its filled ndparams)."""
    group = cfg.nodegroups.get(node.group)
    return bool(params_fill.fill_nd(cfg.cluster, group, node)
                .get(constants.ND_EXCLUSIVE_STORAGE, False))


def check_spindles(params: dict[str, Any], excl: bool, required: bool) -> None:
    """Ganeti's CheckSpindlesExclusiveStorage: spindles only with exclusive storage,
    and (when ``required``) always with it."""
    if not excl and params.get("spindles") is not None:
        raise OpPrereqError("Spindles in instance disks cannot be specified when "
                            "exclusive storage is not active", ECODE_INVAL)
    if excl and required and params.get("spindles") is None:
        raise OpPrereqError("You must specify spindles in instance disks when exclusive "
                            "storage is active", ECODE_INVAL)


def info_text(instance: Instance) -> str:
    """The text a new device is tagged with (Ganeti's ``GetInstanceInfoText``)."""
    return f"originstname+{instance.name}"


def check_template_supported(template: str) -> None:
    """OpPrereqError unless disks of ``template`` can be created here."""
    if template not in constants.DISK_TEMPLATES:
        raise OpPrereqError(f"Unknown disk template '{template}'", ECODE_INVAL)
    if template not in storagetypes.DTS_CREATABLE:
        raise OpPrereqError(f"Disk template '{template}' is not supported yet: its disks "
                            "cannot be created (supported: "
                            f"{', '.join(sorted(storagetypes.DTS_CREATABLE))})", ECODE_INVAL)


# -- generate --------------------------------------------------------------------------

def generate_disks(lu: LogicalUnit, cfg: ConfigData, template: str, instance_uuid: str,
                   primary_uuid: str, secondary_uuids: Sequence[str],
                   disk_specs: Sequence[Mapping[str, Any]], file_storage_dir: str | None,
                   file_driver: str | None, base_index: int = 0,
                   instance_name: str | None = None) -> list[Disk]:
    """New disk objects for ``disk_specs`` (Ganeti's IDISK dicts: size in MiB, mode,
    name, vg, adopt, spindles, access) of a ``template`` instance (Ganeti's
    ``GenerateDiskTemplate``); nothing is created or written to the config.

    Volume names are reserved for the job (``lu.ctx.owner``) until it ends.
    ``file_storage_dir``: the op's directory relative to the cluster's, or the
    instance's absolute directory, or None (the instance's usual directory,
    beside its existing file disks).  ``instance_name``: a new instance's name
    (one in the config has its own).  Adopted plain volumes get new names; the
    adopted ones are renamed by :func:`create_disks`.
    """
    check_template_supported(template)
    if template not in cfg.cluster.enabled_disk_templates:
        raise OpPrereqError(f"Disk template '{template}' is not enabled in cluster. Enabled "
                            f"disk templates are: {','.join(cfg.cluster.enabled_disk_templates)}",
                            ECODE_STATE)
    if template == constants.DT_DISKLESS:
        return []
    if template == constants.DT_DRBD8:
        if len(secondary_uuids) != 1:
            raise OpPrereqError("Disk template drbd needs exactly one secondary node",
                                ECODE_INVAL)
        return instance_drbd.generate_drbd_disks(lu, cfg, primary_uuid, secondary_uuids[0],
                                                 disk_specs, base_index)
    if secondary_uuids:
        raise OpPrereqError(f"Disk template {template} takes no secondary node", ECODE_INVAL)
    disks: list[Disk] = []
    adopted: dict[str, str] = _ADOPTED.get(lu) or {}
    owner = lu.ctx.owner
    now = lu.ctx.clock.seconds()
    vg_default = cfg.cluster.volume_group_name
    directory = None
    driver = file_driver or storagetypes.FD_DEFAULT
    if template in (constants.DT_FILE, constants.DT_SHARED_FILE):
        if driver not in storagetypes.FILE_DRIVERS:
            raise OpPrereqError(f"Invalid file driver name '{driver}'", ECODE_INVAL)
        directory = _file_dir(cfg, template, instance_uuid, file_storage_dir, instance_name)
    for idx, spec in enumerate(disk_specs):
        index = base_index + idx
        size = spec.get("size", 0)
        disk_uuid = str(uuidmod.uuid4())
        adopt = spec.get("adopt")
        nodes: list[str] = []
        if template == constants.DT_PLAIN:
            vg = spec.get("vg") or vg_default
            if not vg:
                raise OpPrereqError("Cluster has no volume group set; plain disks need one",
                                    ECODE_STATE)
            try:
                lv = lu.ctx.reservations.generate_lv_names(
                    owner, cfg, vg, [f"{_NAME_PREFIX[template]}.disk{index}"])[0]
            except ReservationError as err:
                raise as_prereq(err, f"Cannot reserve a volume name in {vg}") from None
            logical_id: list[Any] = [vg, lv]
            nodes = [primary_uuid]
            if adopt:
                adopted[disk_uuid] = str(adopt)
        elif template == constants.DT_BLOCK:
            if not adopt:
                raise OpPrereqError("Disk template blockdev requires disk adoption, but no "
                                    "'adopt' parameter given", ECODE_INVAL)
            path = posixpath.normpath(str(adopt))
            if not path.startswith(storagetypes.ADOPTABLE_BLOCKDEV_ROOT):
                raise OpPrereqError(f"Device node(s) {adopt} lie outside "
                                    f"{storagetypes.ADOPTABLE_BLOCKDEV_ROOT} and cannot "
                                    "be adopted", ECODE_INVAL)
            logical_id = [storagetypes.BLOCKDEV_DRIVER_MANUAL, path]
        else:
            assert directory is not None
            name = f"{uuidmod.uuid4()}{_NAME_PREFIX[template]}.disk{index}"
            logical_id = [driver, f"{directory}/{name}"]
            if template == constants.DT_FILE:
                nodes = [primary_uuid]
        disk = Disk(uuid=disk_uuid, dev_type=template, logical_id=logical_id,
                    iv_name=f"disk/{index}", size=int(size or 0),
                    mode=str(spec.get("mode") or constants.DISK_RDWR),
                    params={}, nodes=nodes, spindles=spec.get("spindles"),
                    name=spec.get("name") or None, serial_no=1, ctime=now, mtime=now)
        disks.append(disk)
    if adopted:
        _ADOPTED[lu] = adopted
    return disks


# -- create and remove -----------------------------------------------------------------

async def _adopt(lu: LogicalUnit, cfg: ConfigData, instance: Instance, disk: Disk) -> None:
    """Check an adopted device on the primary, take its size; rename an adopted
    volume to the disk's generated name."""
    node = _node(cfg, instance.primary_node)
    if disk.dev_type == constants.DT_BLOCK:
        path = str(disk.logical_id[1]) if disk.logical_id else ""
        result = await lu.ctx.rpc().call_one(node, "bdev_sizes", [[path]])
        result.raise_if_failed(f"Cannot get block device information from node {node.name}")
        sizes = result.payload or {}
        if path not in sizes:
            raise OpExecError(f"Missing block device(s): {path} on node {node.name}")
        disk.size = int(sizes[path])
        return
    old = _ADOPTED.get(lu, {}).get(disk.uuid)
    if old is None or not disk.logical_id:
        raise OpExecError(f"Disk {disk.iv_name} of {instance.name} has no volume to adopt")
    vg, new = str(disk.logical_id[0]), str(disk.logical_id[1])
    result = await lu.ctx.rpc().call_one(node, "lv_list", [[vg]])
    result.raise_if_failed(f"Cannot get LV information from node {node.name}")
    info = (result.payload or {}).get(f"{vg}/{old}")
    if info is None:
        raise OpExecError(f"Missing logical volume(s): {vg}/{old} on node {node.name}")
    if info[2]:
        raise OpExecError(f"Online logical volume(s) in use: {vg}/{old}")
    disk.size = int(float(info[0]))
    current = Disk(dev_type=constants.DT_PLAIN, logical_id=[vg, old], size=disk.size,
                   iv_name=disk.iv_name)
    result = await lu.ctx.rpc().call_one(node, "blockdev_rename", [[(current, [vg, new])]])
    result.raise_if_failed(f"Failed to rename adopted LVs on node {node.name}")


async def create_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                       disks: Sequence[Disk]) -> None:
    """Create ``disks`` of ``instance`` on their nodes (Ganeti's ``CreateDisks``).

    File templates get their storage directory first.  Adopted devices are
    not created: they are checked on the primary and their size taken (plain
    volumes are renamed to their new names).  When a step fails, what this
    call created is removed again (disks, then the directory if it is empty)
    and ``OpExecError`` names the disk and the node.
    """
    if not disks:
        return
    for d in disks:
        if d.dev_type not in storagetypes.DTS_CREATABLE:
            raise OpExecError(f"Disk template '{d.dev_type}' is not supported yet: cannot "
                              f"create disk {d.iv_name} of {instance.name}")
    primary = _node(cfg, instance.primary_node)
    adopted = _ADOPTED.get(lu, {})
    file_dirs = sorted({posixpath.dirname(str(d.logical_id[1])) for d in disks
                        if d.dev_type in storagetypes.DTS_FILEBASED and d.logical_id})
    for directory in file_dirs:
        result = await lu.ctx.rpc().call_one(primary, "file_storage_dir_create", [directory])
        result.raise_if_failed(f"Failed to create directory '{directory}' on node "
                               f"{primary.name}")
    created: list[tuple[Node, Any]] = []
    try:
        for disk in disks:
            if disk.dev_type == constants.DT_BLOCK or disk.uuid in adopted:
                await _adopt(lu, cfg, instance, disk)
                continue
            for node_uuid in disk_nodes(instance, disk):
                node = _node(cfg, node_uuid)
                on_primary = node_uuid == instance.primary_node
                if disk.dev_type == constants.DT_DRBD8:  # children first, on every node
                    try:
                        created += await instance_drbd.create_on_node(
                            lu, cfg, instance, disk, node, on_primary,
                            exclusive_storage(cfg, node), info_text(instance))
                    except OpExecError as err:
                        created += getattr(err, "created", [])
                        raise
                    continue
                result = await lu.ctx.rpc().call_one(node, "blockdev_create", [
                    DiskArg(disk, instance), disk.size, instance.name, on_primary,
                    info_text(instance), exclusive_storage(cfg, node)])
                if not result.success:
                    raise OpExecError(f"Can't create block device {disk.iv_name} on node "
                                      f"{node.name} for instance {instance.name}: "
                                      f"{result.fail_msg}")
                created.append((node, DiskArg(disk, instance)))
    except BaseException:
        for node, arg in reversed(created):
            result = await lu.ctx.rpc().call_one(node, "blockdev_remove", [arg])
            name = arg.disk.iv_name if isinstance(arg, DiskArg) else arg.get("logical_id")
            result.warn(f"Failed to remove newly-created disk {name} on node "
                        f"{node.name}", lambda text: _warn(lu, text))
        for directory in file_dirs:
            result = await lu.ctx.rpc().call_one(primary, "file_storage_dir_remove", [directory])
            result.warn(f"Could not remove directory '{directory}'",
                        lambda text: _warn(lu, text))
        raise


async def remove_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                       disks: Sequence[Disk] | None = None,
                       ignore_failures: bool = False) -> bool:
    """Remove ``disks`` (default: all of the instance's) from their nodes (Ganeti's
    ``RemoveDisks``), and the file storage directory once no file disk of the
    instance is left in it.  Adopted block devices stay.

    Failures are reported as warnings; a failure on an offline secondary does
    not count.  Returns whether everything was removed; with failures and not
    ``ignore_failures`` raises ``OpExecError("Can't remove instance's disks")``.
    """
    all_disks = instance_disks(cfg, instance) if disks is None else list(disks)
    ok = True
    for disk, node, result in await _on_disk_nodes(lu, cfg, instance, all_disks,
                                                   "blockdev_remove"):
        if result.warn(f"Could not remove disk {disk.iv_name} on node {node.name}, "
                       "continuing anyway", lambda text: _warn(lu, text)):
            if not (result.offline and node.uuid != instance.primary_node):
                ok = False
    removed = {d.uuid for d in all_disks}
    remaining = [cfg.disks[u] for u in instance.disks if u in cfg.disks and u not in removed]
    kept_dirs = {posixpath.dirname(str(d.logical_id[1])) for d in remaining
                 if d.dev_type in storagetypes.DTS_FILEBASED and d.logical_id}
    dirs = sorted({posixpath.dirname(str(d.logical_id[1])) for d in all_disks
                   if d.dev_type in storagetypes.DTS_FILEBASED and d.logical_id} - kept_dirs)
    primary = cfg.nodes.get(instance.primary_node)
    for directory in dirs:
        if primary is None:
            break
        result = await lu.ctx.rpc().call_one(primary, "file_storage_dir_remove", [directory])
        if result.warn(f"Could not remove directory '{directory}'",
                       lambda text: _warn(lu, text)):
            ok = False
    if not ok and not ignore_failures:
        raise OpExecError("Can't remove instance's disks")
    return ok


async def check_vg_free(lu: LogicalUnit, node: Node, required: Mapping[str, int]) -> None:
    """Ganeti's ``CheckNodesFreeDiskPerVG`` for one node: each volume group must have
    at least ``required[vg]`` MiB free (OpPrereqError ``insufficient_resources``)."""
    for vg, needed in sorted(required.items()):
        result = await lu.ctx.rpc().call_one(node, "storage_list", [
            storagetypes.ST_LVM_VG, [], vg, [storagetypes.SF_NAME, storagetypes.SF_FREE]])
        result.raise_if_failed(f"Cannot get storage information from node {node.name}",
                               prereq=True, ecode=ECODE_ENVIRON)
        rows = [r for r in (result.payload or []) if isinstance(r, list) and r[:1] == [vg]]
        free = rows[0][1] if rows and len(rows[0]) > 1 else None
        if not isinstance(free, (int, float)) or isinstance(free, bool):
            raise OpPrereqError(f"Can't compute free disk space on node {node.name} for vg "
                                f"{vg}, result was '{free}'", ECODE_ENVIRON)
        if needed > free:
            raise OpPrereqError(f"Not enough disk space on target node {node.name} vg {vg}: "
                                f"required {needed} MiB, available {int(free)} MiB",
                                ECODE_NORES)


async def copy_disk_data(lu: LogicalUnit, instance: Instance, src: Disk, dest: Disk) -> RpcResult:
    """Copy the data of ``src`` to ``dest`` on the instance's primary node (the
    ``blockdev_convert`` call; both disks must exist there).  The call's result."""
    node = _node(lu.ctx.config.config, instance.primary_node)
    return await lu.ctx.rpc().call_one(node, "blockdev_convert",
                                       [DiskArg(src, instance), DiskArg(dest, instance)])


# -- assemble and shut down ------------------------------------------------------------

async def _mark_active(lu: LogicalUnit, instance: Instance, active: bool) -> None:
    """Record in the config whether the instance's disks are active (Ganeti's
    ``MarkInstanceDisks(In)Active``), if the instance is there and it changes."""
    current = lu.ctx.config.config.instances.get(instance.uuid)
    if current is None or current.disks_active == active:
        return

    def change(cfg: ConfigData) -> None:
        inst = cfg.instances.get(instance.uuid)
        if inst is not None:
            inst.disks_active = active
    await lu.update_config(change)


async def assemble_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                         ignore_size: bool = False, disks: Sequence[Disk] | None = None,
                         ignore_secondaries: bool = False) -> list[tuple[str, str, str]]:
    """Make the instance's disks (or ``disks`` of it) usable in Ganeti's two passes
    (``AssembleInstanceDisks``): every node of each disk as a secondary, then the
    primary as the primary; all disks assembled mark the instance's disks active.

    Returns ``[(primary node name, iv_name, device path), ...]``.  A failure on a
    secondary is a warning and counts unless the node is offline or
    ``ignore_secondaries``; on a failure the disks are shut down again and
    ``OpExecError`` names disk and node.  ``ignore_size`` is accepted for Ganeti's
    callers (sizes are not checked here).
    """
    everything = disks is None
    disks = instance_disks(cfg, instance) if disks is None else list(disks)
    if not disks:
        return []
    indices = {u: i for i, u in enumerate(instance.disks)}
    if everything:
        await _mark_active(lu, instance, True)
    out: list[tuple[str, str, str]] = []
    failure: str | None = None
    try:
        for disk in disks:  # pass 1: every node, as a secondary
            idx = indices.get(disk.uuid, 0)
            for node_uuid in disk_nodes(instance, disk):
                node = _node(cfg, node_uuid)
                result = await lu.ctx.rpc().call_one(node, "blockdev_assemble", [
                    DiskArg(disk, instance), instance, False, idx])
                if result.success:
                    continue
                text = (f"Cannot activate block device {disk.iv_name} of instance "
                        f"{instance.name} on node {node.name}: {result.fail_msg}")
                if node_uuid == instance.primary_node:
                    raise OpExecError(text)
                instance_drbd.warning(lu, f"Could not prepare block device {disk.iv_name} "
                                          f"on node {node.name} (is_primary=False, "
                                          f"pass=1): {result.fail_msg}")
                if not (ignore_secondaries or result.offline) and failure is None:
                    failure = text
        if failure is not None:
            raise OpExecError(failure)
        for disk in disks:  # pass 2: the primary
            idx = indices.get(disk.uuid, 0)
            node = _node(cfg, instance.primary_node)
            result = await lu.ctx.rpc().call_one(node, "blockdev_assemble", [
                DiskArg(disk, instance), instance, True, idx])
            if not result.success:
                raise OpExecError(f"Cannot activate block device {disk.iv_name} "
                                  f"of instance {instance.name} on node "
                                  f"{node.name}: {result.fail_msg}")
            path = result.payload[0] if result.payload else None
            out.append((node.name, disk.iv_name or f"disk/{idx}", str(path)))
    except OpExecError:
        await shutdown_disks(lu, cfg, instance, disks=None if everything else disks)
        raise
    return out


async def shutdown_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                         ignore_primary: bool = False,
                         disks: Sequence[Disk] | None = None) -> bool:
    """Shut the instance's disks (or ``disks`` of it) down on all their nodes (Ganeti's
    ``ShutdownInstanceDisks``); all of them: marked inactive.  Failures are warnings;
    they count unless the node is offline, or is the primary and ``ignore_primary``.
    Returns whether all went well."""
    if disks is None:
        await _mark_active(lu, instance, False)
    ok = True
    for disk, node, result in await _on_disk_nodes(
            lu, cfg, instance, instance_disks(cfg, instance) if disks is None else disks,
            "blockdev_shutdown"):
        if result.warn(f"Could not shutdown block device {disk.iv_name} on node "
                       f"{node.name}", lambda text: _warn(lu, text)):
            if not (result.offline or (node.uuid == instance.primary_node
                                       and ignore_primary)):
                ok = False
    return ok


# -- grow, rename, check ---------------------------------------------------------------

async def grow_disk(lu: LogicalUnit, cfg: ConfigData, instance: Instance, disk: Disk, amount: int,
                    dry_run: bool = False) -> None:
    """Grow ``disk`` by ``amount`` MiB on all its nodes (Ganeti's ``LUInstanceGrowDisk``
    steps): a dry run everywhere first, then the real growth (not with ``dry_run``).

    The caller records the new size (``disk.size + amount``) in the config.
    """
    if amount < 0:
        raise OpPrereqError("Can't grow a disk by a negative amount", ECODE_INVAL)
    if disk.dev_type not in (constants.DT_PLAIN, constants.DT_FILE, constants.DT_SHARED_FILE,
                             constants.DT_DRBD8):
        raise OpPrereqError(f"Instance's disk layout '{disk.dev_type}' does not support "
                            "growing", ECODE_INVAL)
    nodes = [_node(cfg, u) for u in disk_nodes(instance, disk)]
    for dry in ((True,) if dry_run else (True, False)):
        for node in nodes:  # the backing storage (a drbd disk's data volume) everywhere
            result = await lu.ctx.rpc().call_one(node, "blockdev_grow", [
                DiskArg(disk, instance), amount, dry, True, exclusive_storage(cfg, node)])
            result.raise_if_failed(f"{'Dry-run grow' if dry else 'Grow'} request failed "
                                   f"to node {node.name}")
    if not dry_run:  # then the logical device, on the primary (drbd takes the new size)
        node = nodes[0]
        result = await lu.ctx.rpc().call_one(node, "blockdev_grow", [
            DiskArg(disk, instance), amount, False, False, exclusive_storage(cfg, node)])
        result.raise_if_failed(f"Grow request failed to node {node.name}")


async def check_disks_exist(lu: LogicalUnit, cfg: ConfigData, instance: Instance) -> list[str]:
    """Problems with the instance's disks for verify: a device missing on a node, or a
    node that could not be asked (offline nodes are skipped).  One call per node.  A
    drbd disk exists where its volumes do (its device is there only while active)."""
    problems: list[str] = []
    by_node: dict[str, list[tuple[Disk, Any]]] = {}
    for disk in instance_disks(cfg, instance):
        if disk.dev_type == constants.DT_DISKLESS:
            continue
        for node_uuid in disk_nodes(instance, disk):
            if disk.dev_type == constants.DT_DRBD8 and node_uuid in cfg.nodes:
                wire = diskparams.disk_wire_dicts(cfg, instance, [disk], node_uuid)[0]
                by_node.setdefault(node_uuid, []).extend(
                    (disk, child) for child in wire.get("children") or [])
            else:
                by_node.setdefault(node_uuid, []).append((disk, DiskArg(disk, instance)))
    for node_uuid, pairs in sorted(by_node.items()):
        node = cfg.nodes.get(node_uuid)
        if node is None or node.offline:
            continue
        node_disks = [disk for disk, _ in pairs]
        result = await lu.ctx.rpc().call_one(node, "blockdev_getdimensions",
                                             [[arg for _, arg in pairs]])
        if not result.success:
            problems.append(f"cannot check the disks of instance {instance.name} on node "
                            f"{node.name}: {result.fail_msg}")
            continue
        dims = result.payload if isinstance(result.payload, list) else []
        seen: set[str] = set()
        for disk, dim in zip(node_disks, dims + [None] * (len(node_disks) - len(dims)),
                             strict=False):
            if dim is None and disk.uuid not in seen:
                seen.add(disk.uuid)
                problems.append(f"disk {disk.iv_name} of instance {instance.name} is "
                                f"missing on node {node.name}")
    return problems
