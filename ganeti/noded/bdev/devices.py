"""One entry per block device operation, dispatched on the disk's template.

Each function takes the handler's context and a disk dict (as the master
sends it) and raises :class:`BlockDeviceError` on failure.  ``drbd``,
``ext``, ``rbd`` and ``gluster`` disks are refused by name; ``diskless``
has nothing to do.  Blocking file work runs in the context's thread pool,
LVM commands through its child processes.
"""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import constants
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev import blockdev, files, lvm
from ganeti.noded.bdev.base import BlockDeviceError

_FILE = (constants.DT_FILE, constants.DT_SHARED_FILE)


def template(disk: dict[str, Any]) -> str:
    """The disk's template, if this node serves it (else BlockDeviceError)."""
    dev_type = disk.get("dev_type")
    if dev_type in (constants.DT_FILE, constants.DT_SHARED_FILE, constants.DT_PLAIN,
                    constants.DT_BLOCK, constants.DT_DISKLESS):
        return str(dev_type)
    if dev_type in constants.DISK_TEMPLATES:
        raise BlockDeviceError(f"Disk template '{dev_type}' is not supported on this node "
                               "yet (disks of this template cannot be created or used)")
    raise BlockDeviceError(f"Unknown disk type {dev_type!r:.40}")


async def create(ctx: NodeContext, disk: dict[str, Any], size: int, info: str) -> Any:
    """Create the device; its logical id (None for diskless)."""
    kind = template(disk)
    if kind in _FILE:
        return await ctx.run(files.create, ctx.paths, disk, size)
    if kind == constants.DT_PLAIN:
        return await lvm.create(ctx, disk, size, info)
    if kind == constants.DT_BLOCK:
        await ctx.run(blockdev.check, disk)
        return list(disk["logical_id"])
    return None


async def remove(ctx: NodeContext, disk: dict[str, Any]) -> None:
    """Remove the device (adopted devices stay: they are the administrator's)."""
    kind = template(disk)
    if kind in _FILE:
        await ctx.run(files.remove, ctx.paths, disk)
    elif kind == constants.DT_PLAIN:
        await lvm.remove(ctx, disk)


async def grow(ctx: NodeContext, disk: dict[str, Any], amount: int, dryrun: bool,
               backingstore: bool) -> None:
    """Grow the device by ``amount`` MiB."""
    kind = template(disk)
    if kind in _FILE:
        await ctx.run(files.grow, ctx.paths, disk, amount, dryrun, backingstore)
    elif kind == constants.DT_PLAIN:
        await lvm.grow(ctx, disk, amount, dryrun, backingstore)
    else:
        raise BlockDeviceError(f"Grow is not supported for {kind} disks")


async def rename(ctx: NodeContext, disk: dict[str, Any], new_id: list[Any]) -> None:
    """Give the device a new logical id."""
    kind = template(disk)
    if kind in _FILE:
        await ctx.run(files.rename, ctx.paths, disk, new_id)
    elif kind == constants.DT_PLAIN:
        await lvm.rename(ctx, disk, new_id)
    else:
        raise BlockDeviceError(f"Rename is not supported for {kind} disks")


async def assemble(ctx: NodeContext, disk: dict[str, Any]) -> str | None:
    """Make the device usable; its path on the node (as the wire names it)."""
    kind = template(disk)
    if kind in _FILE:
        if not await ctx.run(files.exists, ctx.paths, disk):
            raise BlockDeviceError(f"{disk['logical_id'][1]}: No such file")
        return str(disk["logical_id"][1])
    if kind == constants.DT_PLAIN:
        return await lvm.assemble(ctx, disk)
    if kind == constants.DT_BLOCK:
        path: str = await ctx.run(blockdev.check, disk)
        return path
    return None


async def find(ctx: NodeContext, disk: dict[str, Any]) -> dict[str, Any] | None:
    """The device's status, None if it does not exist."""
    kind = template(disk)
    if kind in _FILE:
        found: dict[str, Any] | None = await ctx.run(files.find, ctx.paths, disk)
        return found
    if kind == constants.DT_PLAIN:
        return await lvm.find(ctx, disk)
    if kind == constants.DT_BLOCK:
        found = await ctx.run(blockdev.find, disk)
        return found
    return None


async def dimensions(ctx: NodeContext, disk: dict[str, Any]) -> list[Any] | None:
    """[size in bytes, spindles or None], None if the device does not exist."""
    try:
        kind = template(disk)
        if kind in _FILE:
            dims: list[Any] | None = await ctx.run(files.dimensions, ctx.paths, disk)
            return dims
        if kind == constants.DT_PLAIN:
            return await lvm.dimensions(ctx, disk)
        if kind == constants.DT_BLOCK:
            dims = await ctx.run(blockdev.dimensions, disk)
            return dims
    except BlockDeviceError:
        return None
    return None


def local_path(ctx: NodeContext, kind: str, wire_path: str) -> str:
    """A device path as it is on this node (file disks live under the node's root)."""
    if kind in _FILE:
        return files.local(ctx.paths, wire_path)
    return wire_path


def link_dir(ctx: NodeContext) -> str:
    """Where the instances' disk links are (Ganeti's ``RUN_DIR/instance-disks``)."""
    return os.path.join(ctx.paths.run_dir, "instance-disks")
