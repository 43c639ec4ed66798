"""Block device calls on the node (Ganeti's ``Blockdev*`` functions of backend.py).

Answers are Ganeti's: ``blockdev_create`` gives the device's logical id,
``blockdev_assemble`` ``[path, link, uri]`` on the primary (the link is
``RUN_DIR/instance-disks/<instance>:<idx>``) and ``[true, true]`` elsewhere,
``blockdev_find`` a BlockDevStatus dict or null, ``blockdev_getdimensions``
``[size in bytes, spindles]`` or null per disk.  The devices are objects built
from the disk dicts (:mod:`ganeti.noded.bdev.devices`, which walks a disk's
children too); their errors become ``[false, message]``.
"""

from __future__ import annotations

import os
from typing import Any

from ganeti.core.rpcdefs.wire import to_wire_path
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import blockdev, convert, devices, files, image, lvm
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.hypervisors.base import HypervisorError, check_name
from ganeti.noded.hypervisors.kvm import LibvirtDown


def _fail(what: str, err: BlockDeviceError) -> RPCFail:
    return RPCFail(f"{what}: {err}" if what else str(err))


async def blockdev_create(ctx: NodeContext, bdev: dict[str, Any], size: int, owner: str,
                          on_primary: bool, info: str, exclusive_storage: bool) -> Any:
    """Create a disk's device; its logical id."""
    try:
        return await devices.create(ctx, bdev, size, on_primary, info, exclusive_storage)
    except BlockDeviceError as err:
        raise _fail("Can't create block device", err) from None


async def blockdev_remove(ctx: NodeContext, bdev: dict[str, Any]) -> None:
    """Remove a disk's device, then its children (nothing if they are gone)."""
    try:
        await devices.remove(ctx, bdev)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def blockdev_grow(ctx: NodeContext, cf_bdev: dict[str, Any], amount: int,
                        dryrun: bool, backingstore: bool, es_flag: bool) -> None:
    """Grow a disk's device by ``amount`` MiB."""
    try:
        dev = await devices.find_device(ctx, cf_bdev)
        if dev is None:
            raise BlockDeviceError(f"Cannot find block device {cf_bdev.get('logical_id')}")
        await dev.grow(amount, dryrun, backingstore)
    except BlockDeviceError as err:
        raise _fail("Failed to grow block device", err) from None
    if not dryrun and ctx.kvm is not None:
        await _tell_running_guests(ctx, cf_bdev)


async def _tell_running_guests(ctx: NodeContext, disk: dict[str, Any]) -> None:
    """A running kvm guest whose disk grew sees the new size (libvirt's blockResize)."""
    assert ctx.kvm is not None
    try:
        dev = await devices.assemble_device(ctx, disk)
        path = None if dev is None else dev.local_path()
        dims = None if dev is None else await dev.dimensions()
    except BlockDeviceError:
        return  # the growth itself was checked above
    if path is None or not dims:
        return
    try:
        await ctx.kvm.disk_grown(path, int(dims[0]))
    except LibvirtDown:
        return  # no libvirt here: no kvm guest can use the disk
    except HypervisorError as err:
        raise RPCFail(f"The disk grew, but its running instance was not told: {err}") \
            from None


async def blockdev_rename(ctx: NodeContext, devlist: list[list[Any]]) -> None:
    """Rename devices; every one is tried, the failures are reported together."""
    msgs = []
    for disk, new_id in devlist:
        try:
            dev = await devices.find_device(ctx, disk)
            if dev is None:
                msgs.append(f"Can't find device {disk.get('logical_id')} in rename")
                continue
            await dev.rename(new_id)
        except BlockDeviceError as err:
            msgs.append(f"Can't rename device '{disk.get('logical_id')}' to '{new_id}': {err}")
    if msgs:
        raise RPCFail("; ".join(msgs))


def link_disk(ctx: NodeContext, instance: str, idx: int, target: str) -> str:
    """(Re)point ``instance-disks/<instance>:<idx>`` at ``target`` (blocking)."""
    directory = devices.link_dir(ctx)
    os.makedirs(directory, 0o755, exist_ok=True)
    link = os.path.join(directory, f"{instance}:{idx}")
    if os.path.islink(link) and os.readlink(link) == target:
        return link
    tmp = f"{link}.new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return link


async def blockdev_assemble(ctx: NodeContext, disk: dict[str, Any], instance: dict[str, Any],
                            on_primary: bool, idx: int) -> list[Any]:
    """Make a disk usable, its children first: [path, link, uri] on the primary,
    [true, true] elsewhere."""
    try:
        name = check_name(instance.get("name"))
    except HypervisorError as err:
        raise RPCFail(str(err)) from None
    try:
        dev = await devices.assemble_device(ctx, disk, on_primary)
    except BlockDeviceError as err:
        raise _fail("Error while assembling disk", err) from None
    if not on_primary:
        return [True, True]
    path = None if dev is None else dev.local_path()
    if dev is None or path is None:
        return [None, None, None]
    try:
        link = await ctx.run(link_disk, ctx, name, idx, path)
    except OSError as err:
        raise RPCFail(f"Error while symlinking disk: {err}") from None
    return [dev.dev_path, to_wire_path(ctx.paths.root, link), None]


async def blockdev_convert(ctx: NodeContext, bdev_src: dict[str, Any],
                           bdev_dest: dict[str, Any]) -> None:
    """Copy the data of one disk's device to another's (disk template conversion)."""
    try:
        await convert.copy(ctx, bdev_src, bdev_dest)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def blockdev_image(ctx: NodeContext, bdev: dict[str, Any], image_: str,
                         size: int) -> None:
    """Write an OS image (a URL or a file on the node) onto a disk's device."""
    try:
        await image.write_image(ctx, bdev, image_, size)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def blockdev_shutdown(ctx: NodeContext, disk: dict[str, Any]) -> None:
    """Shut a device down, then its children (nothing to do for files, volumes:
    Ganeti keeps them active, and adopted devices)."""
    try:
        await devices.shutdown(ctx, disk)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def blockdev_find(ctx: NodeContext, disk: dict[str, Any]) -> dict[str, Any] | None:
    """The device's status, or null if it does not exist."""
    try:
        dev = await devices.find_device(ctx, disk)
        return None if dev is None else (await dev.sync_status()).to_wire()
    except BlockDeviceError as err:
        raise _fail("Failed to find device", err) from None


async def blockdev_getdimensions(ctx: NodeContext, disks: list[dict[str, Any]]
                                 ) -> list[Any]:
    """[size in bytes, spindles] of each disk; null for one that is missing."""
    return [await devices.dimensions(ctx, d) for d in disks]


async def bdev_sizes(ctx: NodeContext, devs: list[str]) -> dict[str, int]:
    """Sizes (MiB) of the given block devices."""
    sizes: dict[str, int] = await ctx.run(blockdev.sizes, devs)
    return sizes


async def lv_list(ctx: NodeContext, vg_name: str | list[str] | None) -> dict[str, Any]:
    """The node's logical volumes (of the given groups; all for none)."""
    names = [vg_name] if isinstance(vg_name, str) else list(vg_name or [])
    try:
        return await lvm.volume_list(ctx, names)
    except BlockDeviceError as err:
        raise _fail("Failed to list logical volumes", err) from None


async def vg_list(ctx: NodeContext) -> dict[str, int]:
    """The node's volume groups and their sizes (MiB)."""
    try:
        return await lvm.vg_sizes(ctx)
    except BlockDeviceError as err:
        raise _fail("Failed to list volume groups", err) from None


async def node_volumes(ctx: NodeContext) -> list[dict[str, Any]]:
    """Every logical volume of the node with its physical device."""
    try:
        return await lvm.node_volumes(ctx)
    except BlockDeviceError as err:
        raise _fail("Failed to list logical volumes", err) from None


async def file_storage_dir_create(ctx: NodeContext, file_storage_dir: str) -> None:
    """Create a file storage directory."""
    try:
        await ctx.run(files.dir_create, ctx.paths, file_storage_dir)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def file_storage_dir_remove(ctx: NodeContext, file_storage_dir: str) -> None:
    """Remove an empty file storage directory."""
    try:
        await ctx.run(files.dir_remove, ctx.paths, file_storage_dir)
    except BlockDeviceError as err:
        raise _fail("", err) from None


async def file_storage_dir_rename(ctx: NodeContext, old_file_storage_dir: str,
                                  new_file_storage_dir: str) -> None:
    """Rename a file storage directory."""
    try:
        await ctx.run(files.dir_rename, ctx.paths, old_file_storage_dir,
                      new_file_storage_dir)
    except BlockDeviceError as err:
        raise _fail("", err) from None
