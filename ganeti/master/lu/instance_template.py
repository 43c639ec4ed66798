"""Disk template conversion for OP_INSTANCE_SET_PARAMS (Ganeti's
``_PreCheckDiskTemplate`` and ``_ConvertInstanceDisks``): the checks, the room on the
nodes, and the generic conversion (new disks of the target template filled with the
old disks' data); plain <-> drbd is :mod:`.instance_convert_drbd`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Disk, Node
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_convert_drbd as convert_drbd
from ganeti.master.lu import instance_drbd, instance_storage

if TYPE_CHECKING:
    from ganeti.master.lu.instance_set_params import LUInstanceSetParams

# Ganeti's template sets of a disk template conversion.
DTS_INT_MIRROR = frozenset({c.DT_DRBD8})
DTS_LVM = frozenset({c.DT_PLAIN, c.DT_DRBD8})
DTS_NOT_LVM = frozenset(c.DISK_TEMPLATES) - DTS_LVM
DTS_EXCL_STORAGE = frozenset({c.DT_PLAIN, c.DT_DRBD8})
DTS_NOT_CONVERTIBLE_FROM = frozenset({c.DT_DISKLESS})
DTS_NOT_CONVERTIBLE_TO = frozenset({c.DT_DISKLESS, c.DT_BLOCK})


def _format_mib(size: int) -> str:
    """A size in MiB as Ganeti's ``FormatUnit(size, "h")`` shows it."""
    if size < 1024:
        return f"{size}M"
    if size < 1024 * 1024:
        return f"{size / 1024.0:.1f}G"
    return f"{size / (1024.0 * 1024):.1f}T"


def _where(disk: Disk) -> str:
    """The disk's place as Ganeti names it in the conversion log (logical id part 2)."""
    return str(disk.logical_id[1]) if disk.logical_id and len(disk.logical_id) > 1 \
        else disk.uuid



def prepare_template(lu: LUInstanceSetParams, cfg: ConfigData, pnode: Node) -> None:
    """Ganeti's ``_PreCheckDiskTemplate``: whether the disks can be converted to
    ``op.disk_template`` (the instance must be stopped: checked here in the
    config, on its node in exec); the new disks' specs."""
    lu.template_specs = []
    lu.mode = None
    target = lu.op.disk_template
    if not target:
        return
    inst = lu.instance
    cluster = cfg.cluster
    disks = instance_storage.instance_disks(cfg, inst)
    kinds = {d.dev_type for d in disks}
    if len(kinds) > 1:
        raise OpPrereqError("Conversion from mixed is not yet supported.", ECODE_INVAL)
    current = next(iter(kinds)) if kinds else c.DT_DISKLESS
    if current in DTS_NOT_CONVERTIBLE_FROM:
        raise OpPrereqError(f"Conversion from the '{current}' disk template is not "
                            "supported", ECODE_INVAL)
    if target in DTS_NOT_CONVERTIBLE_TO:
        raise OpPrereqError(f"Conversion to the '{target}' disk template is not "
                            "supported", ECODE_INVAL)
    if target != c.DT_EXT and kinds == {target}:
        raise OpPrereqError(f"Instance already has disk template {target}", ECODE_INVAL)
    convert_drbd.refuse_other_modes(current, target)
    lu.mode = (current, target)
    if target not in cluster.enabled_disk_templates:
        raise OpPrereqError(f"Disk template '{target}' is not enabled for this cluster "
                            f"(enabled templates: "
                            f"{', '.join(cluster.enabled_disk_templates)})", ECODE_STATE)
    instance_storage.check_template_supported(target)
    if not cluster.volume_group_name and target not in DTS_NOT_LVM:
        raise OpPrereqError("Disk template conversions to lvm-based instances are not "
                            "supported by the cluster", ECODE_STATE)
    if inst.admin_state != c.ADMINST_DOWN:
        raise OpPrereqError(f"Instance '{inst.name}' is marked to be "
                            f"{inst.admin_state}, cannot change disk template",
                            ECODE_STATE)
    # the new disks' directory (its errors now, before anything changes)
    instance_storage.calculate_file_storage_dir(cfg, target, inst.name,
                                                lu.op.file_storage_dir)
    allowed = params_fill.fill_ipolicy(cluster, cfg.nodegroups.get(pnode.group)).get(
        c.IPOLICY_DTS, [])
    if target not in allowed:
        raise OpPrereqError(f"Disk template '{target}' in not allowed (allowed "
                            f"templates: {', '.join(allowed)})", ECODE_STATE)
    if target in DTS_INT_MIRROR and lu.remote_uuid is not None:
        convert_drbd.check_secondary(lu, cfg, pnode, cfg.nodes[lu.remote_uuid])
    if target not in DTS_EXCL_STORAGE and \
            instance_storage.exclusive_storage(cfg, pnode):
        raise OpPrereqError(f"Cannot convert disk template from {current} to {target} "
                            "when exclusive storage is enabled", ECODE_STATE)
    for disk in disks:  # Ganeti's ComputeDisksInfo
        spec: dict[str, Any] = {"size": disk.size, "mode": disk.mode, "name": disk.name}
        if target == c.DT_PLAIN:
            spec["vg"] = cluster.volume_group_name
        elif target == c.DT_DRBD8:  # the data volume stays in its group
            spec["vg"] = (disk.logical_id or [cluster.volume_group_name])[0]
        lu.template_specs.append(spec)

async def check_template_resources(lu: LUInstanceSetParams) -> None:
    """The checks of a conversion that ask the primary node: the instance is not
    running there, its volume group has room for the new volumes."""
    cfg = lu.ctx.config.config
    inst = lu.instance
    pnode = cfg.nodes[inst.primary_node]
    if pnode.offline:
        lu.ctx.feedback("message", "Warning: Primary node offline, ignoring check "
                                     "that instance is down")
    elif await ic.instance_running(lu, inst):
        raise OpPrereqError(f"Instance {inst.name} is running, cannot change disk "
                            "template", ECODE_STATE)
    if lu.mode == (c.DT_PLAIN, c.DT_DRBD8) and lu.remote_uuid is not None:
        # Ganeti: only the new secondary's room (the primary keeps its volumes)
        await instance_storage.check_vg_free(
            lu, cfg.nodes[lu.remote_uuid],
            instance_drbd.size_per_vg(c.DT_DRBD8, lu.template_specs,
                                      cfg.cluster.volume_group_name))
    elif lu.mode == (c.DT_DRBD8, c.DT_PLAIN):
        pass  # Ganeti: none (the data volumes stay)
    elif lu.op.disk_template in DTS_LVM:
        required: dict[str, int] = {}
        for spec in lu.template_specs:
            vg = str(spec["vg"])
            required[vg] = required.get(vg, 0) + int(spec["size"])
        await instance_storage.check_vg_free(lu, pnode, required)

async def convert_disks(lu: LUInstanceSetParams) -> tuple[list[Disk], list[Disk]]:
    """Ganeti's ``_ConvertInstanceDisks`` up to the config change: new disks of
    the target template created on the primary and filled with the old disks'
    data.  ``(old disks, new disks)``; on a failure the new disks are removed
    again and the instance is as it was."""
    cfg = lu.ctx.config.config
    inst = lu.instance
    target = lu.op.disk_template
    assert target is not None
    log = lu._log
    old_disks = instance_storage.instance_disks(cfg, inst)
    current = old_disks[0].dev_type if old_disks else c.DT_DISKLESS
    if lu.ignored_remote_node:
        log("Warning: Changing the disk template to a non-mirrored one, the secondary "
            "node will be ignored")
    if not await instance_storage.shutdown_disks(lu, cfg, inst):
        raise OpExecError("Cannot shutdown instance disks, unable to proceed with disk "
                          "template conversion")
    log(f"Converting disk template from '{current}' to '{target}'")
    log(f"Generating new '{target}' disk template...")
    new_disks = instance_storage.generate_disks(
        lu, cfg, target, inst.uuid, inst.primary_node, [], lu.template_specs,
        lu.op.file_storage_dir, lu.op.file_driver)
    log(f"Creating new empty disks of type '{target}'...")
    view = cfg.view(disks={**cfg.disks, **{d.uuid: d for d in new_disks}})
    try:
        await instance_storage.create_disks(lu, view, inst, new_disks)
    except OpExecError:
        log("Warning: Device creation failed")
        raise
    log(f"Populating the new empty disks of type '{target}'...")
    for idx, (old, new) in enumerate(zip(old_disks, new_disks, strict=True)):
        log(f" - copying data from disk {idx} ({old.dev_type}), size "
            f"{_format_mib(new.size)}")
        result = await instance_storage.copy_disk_data(lu, inst, old, new)
        if not result.success:
            log(f" - ERROR: Could not copy disk '{_where(old)}' to '{_where(new)}'")
            log("Some disks failed to copy")
            log("The instance will not be affected, aborting operation")
            log(f"Removing newly created disks of type '{target}'...")
            if await instance_storage.remove_disks(lu, view, inst, new_disks,
                                                   ignore_failures=True):
                log("Newly created disks removed successfully")
            result.raise_if_failed("Error while converting the instance's template")
    log(f"Detaching old disks ({current}) from the instance and removing them from "
        "cluster config")
    log(f"Adding new disks ({target}) to cluster config and attaching them to the "
        "instance")
    return old_disks, new_disks

