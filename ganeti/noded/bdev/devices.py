"""The table of device types and the walks over a disk's device tree.

:data:`DEVICE_CLASSES` maps a disk's ``dev_type`` (Ganeti's ``DEV_MAP``) to its
:class:`~.device.BlockDevice` class; :func:`build` makes a disk dict (as the
master sends it) into a device object with its children.  ``drbd``, ``ext``,
``rbd`` and ``gluster`` disks are not in the table and are refused by name.

The walks follow Ganeti's node daemon (``backend.py``): a device is found
after its children (:func:`find_device`, ``_RecursiveFindBD``); assembled
after its children (:func:`assemble_device`, ``_RecursiveAssembleBD``; a
device that needs fewer than all its children goes on without those that fail);
created on its assembled children (:func:`create`, ``BlockdevCreate``); removed
and shut down before its children, every one tried and the failures reported
together (:func:`remove`, :func:`shutdown`, ``BlockdevRemove`` and
``BlockdevShutdown``).  Each function raises :class:`BlockDeviceError`.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core import constants
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.blockdev import AdoptedDevice
from ganeti.noded.bdev.device import BlockDevice, DisklessDevice
from ganeti.noded.bdev.drbd import DrbdDevice
from ganeti.noded.bdev.files import FileDevice
from ganeti.noded.bdev.lvm import LogicalVolume

log = Logger()

#: The device class of each disk type this node serves.
DEVICE_CLASSES: dict[str, type[BlockDevice]] = {
    constants.DT_FILE: FileDevice,
    constants.DT_SHARED_FILE: FileDevice,
    constants.DT_PLAIN: LogicalVolume,
    constants.DT_BLOCK: AdoptedDevice,
    constants.DT_DISKLESS: DisklessDevice,
    constants.DT_DRBD8: DrbdDevice,
}


def device_class(disk: dict[str, Any]) -> type[BlockDevice]:
    """The class of the disk's device, if this node serves its type."""
    dev_type = disk.get("dev_type")
    cls = DEVICE_CLASSES.get(dev_type) if isinstance(dev_type, str) else None
    if cls is not None:
        return cls
    if dev_type in constants.DISK_TEMPLATES:
        raise BlockDeviceError(f"Disk template '{dev_type}' is not supported on this node "
                               "yet (disks of this template cannot be created or used)")
    raise BlockDeviceError(f"Unknown disk type {dev_type!r:.40}")


def template(disk: dict[str, Any]) -> str:
    """The disk's template, if this node serves it (else BlockDeviceError)."""
    device_class(disk)
    return str(disk["dev_type"])


def _child_disks(disk: dict[str, Any]) -> list[dict[str, Any]]:
    children = disk.get("children") or []
    if not isinstance(children, list) or not all(isinstance(c, dict) for c in children):
        raise BlockDeviceError(f"Invalid children of disk {disk.get('logical_id')!r:.80}")
    return children


def build(ctx: NodeContext, disk: dict[str, Any]) -> BlockDevice:
    """The disk's device object, its children built first (no I/O)."""
    cls = device_class(disk)
    return cls(ctx, disk, [build(ctx, child) for child in _child_disks(disk)])


async def _attach(dev: BlockDevice) -> bool:
    # the children are looked for at once (each an lvs run, for volumes)
    found = await defer.gatherResults(
        [defer.Deferred.fromCoroutine(_attach(child)) for child in dev.children
         if child is not None], consumeErrors=True).addErrback(_first_error)
    present = iter(found)
    for i, child in enumerate(dev.children):
        if child is not None and not next(present):
            dev.children[i] = None
    return await dev.attach()


def _first_error(failure: Failure) -> Any:
    """The error itself of the child that failed first (not gatherResults' wrapper),
    as the walk one child after the other raised it."""
    failure.trap(defer.FirstError)
    first = failure.value
    assert isinstance(first, defer.FirstError)
    return first.subFailure.raiseException()


async def find_device(ctx: NodeContext, disk: dict[str, Any]) -> BlockDevice | None:
    """The disk's device if it exists (attached, with the children found), else None."""
    dev = build(ctx, disk)
    return dev if await _attach(dev) else None


async def find_quietly(ctx: NodeContext, disk: dict[str, Any]) -> BlockDevice | None:
    """:func:`find_device`, None also for a disk it cannot even look for (malformed)."""
    try:
        return await find_device(ctx, disk)
    except BlockDeviceError:
        return None


async def _assemble(dev: BlockDevice, as_primary: bool) -> bool:
    allowed = 0 if dev.children_needed < 0 else len(dev.children) - dev.children_needed
    failed = 0
    for i, child in enumerate(dev.children):
        if child is None:
            continue
        try:
            await _assemble(child, as_primary)
        except BlockDeviceError as err:
            if failed >= allowed:
                raise
            failed += 1
            dev.children[i] = None
            log.error("Error in child activation of {dev} (but continuing): {err}",
                      dev=dev, err=str(err))
    if not (as_primary or dev.assemble_on_secondary):
        return False
    await dev.assemble()
    if as_primary or dev.open_on_secondary:
        await dev.open()
    return True


async def assemble_device(ctx: NodeContext, disk: dict[str, Any],
                          as_primary: bool = True) -> BlockDevice | None:
    """Make the disk's device usable, its children first: the device, or None where
    its type is not assembled (on a secondary node, for most types)."""
    dev = build(ctx, disk)
    return dev if await _assemble(dev, as_primary) else None


async def assemble(ctx: NodeContext, disk: dict[str, Any]) -> str | None:
    """Assemble the disk's device as on the primary; its path as the wire names it
    (None for a diskless disk)."""
    dev = await assemble_device(ctx, disk)
    return None if dev is None else dev.dev_path


async def create(ctx: NodeContext, disk: dict[str, Any], size: int, on_primary: bool,
                 info: str, exclusive_storage: bool) -> Any:
    """Create the disk's device on its children (which exist: they are assembled and
    opened first); assembled and opened after creation where the device is used on
    this node.  Its logical id (None for a diskless disk)."""
    cls = device_class(disk)
    if exclusive_storage and not cls.exclusive_storage:
        raise BlockDeviceError(f"{disk['dev_type']} devices cannot be used with "
                               "exclusive storage")
    used_here = on_primary or cls.assemble_on_secondary
    children: list[BlockDevice | None] = []
    for child_disk in _child_disks(disk):
        child = build(ctx, child_disk)
        try:
            assembled = await _assemble(child, on_primary)
            if assembled and used_here and not (on_primary or child.open_on_secondary):
                await child.open()  # the parent needs it open (not opened yet)
        except BlockDeviceError as err:
            raise BlockDeviceError(f"Can't assemble device {child}: {err}") from None
        children.append(child)
    dev = await cls.create(ctx, disk, children, size, info)
    if used_here:
        await dev.assemble()
        if on_primary or cls.open_on_secondary:
            await dev.open(force=True)
    return dev.unique_id


async def _walk_down(dev: BlockDevice, remove: bool) -> list[str]:
    msgs = []
    try:
        await (dev.remove() if remove else dev.shutdown())
    except BlockDeviceError as err:
        msgs.append(str(err))
    for child in dev.children:
        if child is not None:
            msgs.extend(await _walk_down(child, remove))
    return msgs


async def remove(ctx: NodeContext, disk: dict[str, Any]) -> None:
    """Remove the disk's device, then its children; every one is tried (a missing
    device is no error)."""
    msgs = await _walk_down(build(ctx, disk), remove=True)
    if msgs:
        raise BlockDeviceError("; ".join(msgs))


async def shutdown(ctx: NodeContext, disk: dict[str, Any]) -> None:
    """Shut the disk's device down, then its children; every one is tried."""
    msgs = await _walk_down(build(ctx, disk), remove=False)
    if msgs:
        raise BlockDeviceError("; ".join(msgs))


async def dimensions(ctx: NodeContext, disk: dict[str, Any]) -> list[Any] | None:
    """[size in bytes, spindles or None], None if the device does not exist."""
    try:
        dev = await find_device(ctx, disk)
        return None if dev is None else await dev.dimensions()
    except BlockDeviceError:
        return None


def local_path(ctx: NodeContext, kind: str, wire_path: str) -> str:
    """A device path of a disk of template ``kind`` as it is on this node (file disks
    live under the node's root)."""
    return device_class({"dev_type": kind}).local_path_of(ctx.paths, wire_path)


def link_dir(ctx: NodeContext) -> str:
    """Where the instances' disk links are (Ganeti's ``RUN_DIR/instance-disks``)."""
    return os.path.join(ctx.paths.run_dir, "instance-disks")
