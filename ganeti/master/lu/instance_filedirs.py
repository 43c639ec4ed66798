"""File storage directories of instances on the master: where an instance's file disks
live (Ganeti's ``CalculateFileStorageDir``) and how an instance rename moves them.

:mod:`.instance_storage` re-exports these for the instance units.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from ganeti.core import constants, diskparams, storagetypes
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Disk, Instance
from ganeti.master.lu.base import LogicalUnit


def calculate_file_storage_dir(cfg: ConfigData, template: str, instance_name: str,
                               file_storage_dir: str | None = None) -> str | None:
    """The instance's file storage directory (Ganeti's ``CalculateFileStorageDir``):
    the cluster's directory of the template, the op's relative ``file_storage_dir``
    (if any), the instance name; None for templates that are not file based."""
    if template not in (constants.DT_FILE, constants.DT_SHARED_FILE):
        return None
    base = (cfg.cluster.file_storage_dir if template == constants.DT_FILE
            else cfg.cluster.shared_file_storage_dir)
    if not base:
        raise OpPrereqError(f"Cluster file storage dir for {template!r} storage type not "
                            "defined", ECODE_STATE)
    parts = [base]
    if file_storage_dir:
        if posixpath.isabs(file_storage_dir):
            raise OpPrereqError("File storage directory path not absolute", ECODE_INVAL)
        if ".." in file_storage_dir.split("/"):
            raise OpPrereqError("File storage directory may not contain '..' components",
                                ECODE_INVAL)
        parts.append(file_storage_dir)
    parts.append(instance_name)
    return posixpath.normpath(posixpath.join(*parts))


def _instance_name(cfg: ConfigData, instance_uuid: str, name: str | None) -> str:
    """The instance's name: from the config, else ``name`` (a new instance's)."""
    inst = cfg.instances.get(instance_uuid)
    if inst is not None:
        return inst.name
    if name:
        return name
    raise OpPrereqError(f"Cannot tell the name of instance {instance_uuid} for its file "
                        "storage directory", ECODE_INVAL)


def _file_dir(cfg: ConfigData, template: str, instance_uuid: str,
              file_storage_dir: str | None, instance_name: str | None) -> str:
    base = (cfg.cluster.file_storage_dir if template == constants.DT_FILE
            else cfg.cluster.shared_file_storage_dir)
    if file_storage_dir and posixpath.isabs(file_storage_dir):
        # already the instance's directory (Ganeti's callers pass it computed)
        norm = posixpath.normpath(file_storage_dir)
        if not base or not norm.startswith(base.rstrip("/") + "/"):
            raise OpPrereqError(f"File storage directory {file_storage_dir} is not below "
                                f"the cluster's {template} storage directory {base!r}",
                                ECODE_INVAL)
        return norm
    inst = cfg.instances.get(instance_uuid)
    if inst is not None and file_storage_dir is None:
        for uuid in inst.disks:  # new disks go beside the existing ones
            d = cfg.disks.get(uuid)
            if d is not None and d.dev_type == template and d.logical_id:
                return posixpath.dirname(str(d.logical_id[1]))
    path = calculate_file_storage_dir(cfg, template,
                                      _instance_name(cfg, instance_uuid, instance_name),
                                      file_storage_dir)
    assert path is not None
    return path



# -- rename ----------------------------------------------------------------------------

def renamed_file_disk_ids(disks: Sequence[Disk], new_name: str) -> dict[str, list[Any]]:
    """The new ``logical_id`` of each file disk of an instance renamed to ``new_name``
    (its directory's last part becomes the new name, as Ganeti's config rename)."""
    out: dict[str, list[Any]] = {}
    for d in disks:
        if d.dev_type in storagetypes.DTS_FILEBASED and d.logical_id:
            path = str(d.logical_id[1])
            base = posixpath.dirname(posixpath.dirname(path))
            out[d.uuid] = [d.logical_id[0],
                           posixpath.join(base, new_name, posixpath.basename(path))]
    return out


async def rename_instance_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                                old_name: str, new_name: str, on_node: bool = True) -> None:
    """After an instance rename: move its file storage directory on the primary and
    point its file disks at the new place in the config (if not done yet).  Nothing
    for other templates.  ``OpExecError`` if the node cannot rename the directory.
    Without ``on_node`` (a forthcoming instance: nothing exists there) the config only."""
    try:
        all_disks = diskparams.instance_disks(cfg, instance)
    except ValueError as err:
        raise OpExecError(str(err)) from None
    disks = [d for d in all_disks
             if d.dev_type in storagetypes.DTS_FILEBASED and d.logical_id]
    if not disks:
        return
    base = posixpath.dirname(posixpath.dirname(str(disks[0].logical_id[1])))  # type: ignore[index]
    old_dir, new_dir = posixpath.join(base, old_name), posixpath.join(base, new_name)
    new_ids = renamed_file_disk_ids(disks, new_name)
    if any(list(d.logical_id or []) != new_ids[d.uuid] for d in disks):
        def change(config: ConfigData) -> None:
            for uuid, lid in new_ids.items():
                if uuid in config.disks:
                    config.disks[uuid].logical_id = list(lid)
        await lu.update_config(change)
    if not on_node:
        return
    primary = cfg.nodes.get(instance.primary_node)
    if primary is None:
        raise OpExecError(f"Node {instance.primary_node} of a disk is not in the configuration")
    result = await lu.ctx.rpc().call_one(primary, "file_storage_dir_rename", [old_dir, new_dir])
    result.raise_if_failed(f"Could not rename on node {primary.name} directory '{old_dir}' "
                           f"to '{new_dir}' (but the instance has been renamed in Ganeti)")
