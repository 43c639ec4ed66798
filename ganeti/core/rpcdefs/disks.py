"""Block device calls: create, remove, grow, rename, assemble, shut down and find
an instance's disks on a node, and what a node has (volumes, groups, device sizes,
file storage directories).  Served by ganeti/noded/backend/blockdev.py.

Names, argument order and answers are Ganeti's (its ``rpc_defs.py`` and
``backend.py``).  A disk travels as its config dict with its logical-disk and
dynamic parameters (:mod:`ganeti.core.diskparams`); the master passes a
:class:`DiskArg` (a disk and its instance), the encoders do the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ganeti.core import diskparams, params_fill
from ganeti.core.objects import ConfigData, Disk, Instance
from ganeti.core.rpcdefs.base import (
    RPC_TMO_FAST,
    RPC_TMO_NORMAL,
    RPC_TMO_SLOW,
    RPC_TMO_URGENT,
    EncodeContext,
    RpcArg,
    call,
    is_int,
    is_wire_path,
)
from ganeti.core.rpcdefs.encoders import instance_dict


@dataclass(frozen=True)
class DiskArg:
    """A disk to send, with the instance whose parameters fill it (Ganeti's
    ``(disk, instance)`` pairs of ``ED_SINGLE_DISK_DICT_DP``)."""

    disk: Disk
    instance: Instance | None = None


def _config(ctx: EncodeContext) -> ConfigData:
    if not isinstance(ctx.config, ConfigData):
        raise ValueError("no config to fill the disk parameters from")
    return ctx.config


def disk_dict(value: Any, ctx: EncodeContext) -> dict[str, Any]:
    """A disk as the node gets it: a :class:`DiskArg` (or a bare :class:`Disk`, filled
    from the cluster's parameters alone) with its parameters filled; a dict is
    taken as already encoded."""
    if isinstance(value, dict):
        return value
    arg = DiskArg(value) if isinstance(value, Disk) else value
    if not isinstance(arg, DiskArg):
        raise TypeError(f"expected a disk, got {type(value).__name__}")
    cfg = _config(ctx)
    if arg.instance is not None:
        return diskparams.disk_wire_dicts(cfg, arg.instance, [arg.disk], ctx.node)[0]
    out = arg.disk.to_dict()
    if arg.disk.dev_type in diskparams.DISK_LD_DEFAULTS:
        ld = diskparams.compute_ld_params(arg.disk.dev_type,
                                          params_fill.fill_disk_params(cfg.cluster))
        out["params"] = {**ld[0], **(out.get("params") or {})}
    out["dynamic_params"] = {}
    return out


def disk_list(value: Any, ctx: EncodeContext) -> list[dict[str, Any]]:
    """A list of disks (each as :func:`disk_dict` takes it)."""
    if not isinstance(value, list | tuple):
        raise TypeError("expected a list of disks")
    return [disk_dict(v, ctx) for v in value]


def rename_list(value: Any, ctx: EncodeContext) -> list[list[Any]]:
    """``[(disk, new logical_id), ...]`` as ``[[disk dict, new id], ...]`` (Ganeti's
    ``ED_BLOCKDEV_RENAME``: the disk's own form, parameters not needed)."""
    if not isinstance(value, list | tuple):
        raise TypeError("expected a list of (disk, new logical id) pairs")
    out = []
    for pair in value:
        disk, new_id = pair
        d = disk.to_dict() if isinstance(disk, Disk) else disk_dict(disk, ctx)
        out.append([d, list(new_id)])
    return out


def _is_disk(v: Any) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("dev_type"), str)
            and (v.get("logical_id") is None or isinstance(v.get("logical_id"), list)))


def is_disk_list(v: Any) -> bool:
    """Whether ``v`` is a list of disk dicts (a wire value)."""
    return isinstance(v, list) and all(_is_disk(d) for d in v)


def _is_rename_list(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(p, list) and len(p) == 2 and _is_disk(p[0]) and isinstance(p[1], list)
        for p in v)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_path_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(p, str) for p in v)


def _is_vg_names(v: Any) -> bool:
    return (isinstance(v, str) or v is None
            or (isinstance(v, list) and all(isinstance(x, str) for x in v)))


def _is_instance_dict(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("name"), str)


def disk_arg(name: str) -> RpcArg:
    """A disk argument: each node gets its own dynamic parameters (drbd)."""
    return RpcArg(name, _is_disk, "a disk object", encode=disk_dict, per_node=True)


def disks_arg(name: str) -> RpcArg:
    """A list of disks, each node getting its own dynamic parameters."""
    return RpcArg(name, is_disk_list, "a list of disk objects", encode=disk_list,
                  per_node=True)


def _dir_arg(name: str) -> RpcArg:
    return RpcArg(name, is_wire_path, "an absolute, normalised path")


CALLS = [
    call("blockdev_create", RPC_TMO_NORMAL,
         "Create a disk's block device (file, LV; nothing for adopted devices); its "
         "logical id.",
         disk_arg("bdev"),
         RpcArg("size", lambda v: is_int(v) and v >= 0, "a size in MiB"),
         RpcArg("owner", _is_str, "the owning instance's name"),
         RpcArg("on_primary", _is_bool, "a boolean"),
         RpcArg("info", _is_str, "a text to tag the device with"),
         RpcArg("exclusive_storage", _is_bool, "a boolean")),
    call("blockdev_remove", RPC_TMO_NORMAL,
         "Remove a disk's block device (nothing if it is gone already).",
         disk_arg("bdev")),
    call("blockdev_grow", RPC_TMO_NORMAL,
         "Grow a disk's block device by an amount (MiB).",
         disk_arg("cf_bdev"),
         RpcArg("amount", lambda v: is_int(v) and v >= 0, "a non-negative number of MiB"),
         RpcArg("dryrun", _is_bool, "a boolean"),
         RpcArg("backingstore", _is_bool, "a boolean"),
         RpcArg("es_flag", _is_bool, "a boolean")),
    call("blockdev_rename", RPC_TMO_NORMAL,
         "Rename block devices: [[disk, new logical id], ...].",
         RpcArg("devlist", _is_rename_list, "a list of [disk, new logical id]",
                encode=rename_list)),
    call("blockdev_assemble", RPC_TMO_NORMAL,
         "Make a disk usable on the node: [device path, link, uri] on the primary.",
         disk_arg("disk"),
         RpcArg("instance", _is_instance_dict, "an instance object", encode=instance_dict,
                per_node=True),
         RpcArg("on_primary", _is_bool, "a boolean"),
         RpcArg("idx", lambda v: is_int(v) and v >= 0, "a disk index")),
    call("blockdev_shutdown", RPC_TMO_NORMAL,
         "Shut a disk's block device down (remove the instance's link to it).",
         disk_arg("disk")),
    call("blockdev_find", RPC_TMO_NORMAL,
         "A disk's block device status (null if it does not exist).",
         disk_arg("disk")),
    call("blockdev_getdimensions", RPC_TMO_NORMAL,
         "[size in bytes, spindles] of each disk (null for a missing one).",
         disks_arg("disks")),
    call("blockdev_convert", RPC_TMO_SLOW,
         "Copy the data of a disk's device to another's (disk template conversion).",
         disk_arg("bdev_src"), disk_arg("bdev_dest")),
    call("blockdev_image", RPC_TMO_SLOW,
         "Write an OS image (a URL or a file on the node) onto a disk's device, at "
         "most size MiB from its start.",
         disk_arg("bdev"),
         RpcArg("image", lambda v: isinstance(v, str) and bool(v) and "\0" not in v,
                "a URL or a path"),
         RpcArg("size", lambda v: is_int(v), "a size in MiB")),
    call("bdev_sizes", RPC_TMO_URGENT,
         "Sizes (MiB) of the given block devices under /dev that exist.",
         RpcArg("devices", _is_path_list, "a list of device paths")),
    call("lv_list", RPC_TMO_URGENT,
         "The logical volumes of the node: {vg/lv: [size MiB, inactive, online]}.",
         RpcArg("vg_name", _is_vg_names, "a volume group name, a list of them or []")),
    call("vg_list", RPC_TMO_URGENT,
         "The node's volume groups: {name: size MiB}."),
    call("node_volumes", RPC_TMO_FAST,
         "Every logical volume of the node with its physical device: "
         "[{name, size, dev, vg}, ...]."),
    call("file_storage_dir_create", RPC_TMO_FAST,
         "Create a file storage directory (allowed paths only).",
         _dir_arg("file_storage_dir")),
    call("file_storage_dir_remove", RPC_TMO_FAST,
         "Remove an empty file storage directory.",
         _dir_arg("file_storage_dir")),
    call("file_storage_dir_rename", RPC_TMO_FAST,
         "Rename a file storage directory.",
         _dir_arg("old_file_storage_dir"), _dir_arg("new_file_storage_dir")),
]

