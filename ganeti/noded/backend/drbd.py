"""The mirror calls on the node (Ganeti's ``BlockdevGetmirrorstatus``,
``BlockdevOpen``/``Close``, ``Drbd*`` and ``Blockdev{Add,Remove}children`` of
backend.py): names, arguments, answers and failure messages are Ganeti's.

Each disk is found first (its device tree attached, as ``blockdev_find``
does); a disk that is not there fails the call with "Can't find device ...".
The waits (``drbd_attach_net``, ``drbd_wait_sync``) are bounded on the node's
clock and also wake up when the peer's handshake arrives
(:meth:`~ganeti.noded.bdev.drbdnet.MirrorNet.wait`).
"""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import constants
from ganeti.noded.backend.blockdev import link_disk
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import devices
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice
from ganeti.noded.bdev.drbdstate import Observed
from ganeti.noded.hypervisors.base import HypervisorError, check_name

#: drbd_attach_net: first delay, growth factor, longest delay, total (s; Ganeti's).
ATTACH_RETRY = (0.1, 1.5, 5.0, 120.0)
#: drbd_wait_sync: poll interval and how long a disconnected device is waited for.
SYNC_POLL, SYNC_WAIT = 1.0, 15.0


async def drbd_helper(ctx: NodeContext) -> str:
    """The usermode helper of the node's DRBD "module": the mirror is this project's
    own (no kernel DRBD), loaded as Ganeti's installation guide asks
    (``usermode_helper=/bin/true``), so that is what every node reports."""
    return constants.DEFAULT_DRBD_HELPER


def _name(disk: dict[str, Any]) -> str:
    return str(disk.get("iv_name") or disk.get("uuid") or disk.get("logical_id"))


async def _find(ctx: NodeContext, disk: dict[str, Any]) -> BlockDevice:
    try:
        dev = await devices.find_device(ctx, disk)
    except BlockDeviceError as err:
        raise RPCFail(f"Can't find device {_name(disk)}: {err}") from None
    if dev is None:
        raise RPCFail(f"Can't find device {_name(disk)}")
    return dev


async def _find_drbd(ctx: NodeContext, disks: list[dict[str, Any]]) -> list[BlockDevice]:
    out = []
    for disk in disks:
        dev = await _find(ctx, disk)
        if not dev.mirrored:
            raise RPCFail(f"Device {_name(disk)} is not a drbd device")
        out.append(dev)
    return out


async def _status(dev: BlockDevice) -> Observed:
    try:
        return await dev.mirror_status()
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None


async def blockdev_getmirrorstatus(ctx: NodeContext, disks: list[dict[str, Any]]
                                   ) -> list[dict[str, Any]]:
    """Each disk's status merged with its children's."""
    out = []
    for disk in disks:
        dev = await _find(ctx, disk)
        try:
            out.append((await dev.combined_sync_status()).to_wire())
        except BlockDeviceError as err:
            raise RPCFail(f"Can't get the status of device {_name(disk)}: {err}") from None
    return out


async def blockdev_getmirrorstatus_multi(ctx: NodeContext, node_disks: list[dict[str, Any]]
                                         ) -> list[list[Any]]:
    """``[success, status dict or message]`` of each disk (one failing disk does not
    fail the others)."""
    out: list[list[Any]] = []
    for disk in node_disks:
        try:
            dev = await devices.find_device(ctx, disk)
            if dev is None:
                out.append([False, f"Can't find device {_name(disk)}"])
                continue
            out.append([True, (await dev.combined_sync_status()).to_wire()])
        except BlockDeviceError as err:
            out.append([False, str(err)])
    return out


def _unlink(ctx: NodeContext, instance: str, count: int) -> None:
    directory = devices.link_dir(ctx)
    for idx in range(count):
        try:
            os.unlink(os.path.join(directory, f"{instance}:{idx}"))
        except FileNotFoundError:
            pass


async def blockdev_close(ctx: NodeContext, instance_name: str,
                         disks: list[dict[str, Any]]) -> None:
    """Every device to Secondary; the instance's disk links removed (if named)."""
    devs = [await _find(ctx, d) for d in disks]
    msgs = []
    for dev in devs:
        try:
            await dev.close()
        except BlockDeviceError as err:
            msgs.append(str(err))
    if msgs:
        raise RPCFail(f"Can't close devices: {','.join(msgs)}")
    if instance_name:
        try:
            await ctx.run(_unlink, ctx, check_name(instance_name), len(disks))
        except (OSError, HypervisorError) as err:
            raise RPCFail(f"Can't remove the disk links: {err}") from None


async def blockdev_open(ctx: NodeContext, instance_name: str, disks: list[dict[str, Any]],
                        exclusive: bool) -> None:
    """Every device to Primary (``exclusive``: refused while the peer is Primary),
    linked as the instance's disk."""
    try:
        name = check_name(instance_name)
    except HypervisorError as err:
        raise RPCFail(str(err)) from None
    devs = [await _find(ctx, d) for d in disks]
    msgs = []
    for idx, dev in enumerate(devs):
        try:
            await dev.open(exclusive=exclusive)
            path = dev.local_path()
            if path is not None:
                await ctx.run(link_disk, ctx, name, idx, path)
        except BlockDeviceError as err:
            msgs.append(str(err))
        except OSError as err:
            msgs.append(f"Can't link disk {idx}: {err}")
    if msgs:
        raise RPCFail(f"Can't open devices: {','.join(msgs)}")


async def drbd_disconnect_net(ctx: NodeContext, disks: list[dict[str, Any]]) -> None:
    """Every device StandAlone."""
    for dev in await _find_drbd(ctx, disks):
        try:
            await dev.disconnect_net()
        except BlockDeviceError as err:
            raise RPCFail("Can't change network configuration to standalone mode: "
                          f"{err}") from None


def _ready(seen: Observed, multimaster: bool) -> bool:
    if multimaster:
        return seen.is_connected and seen.disk == "UpToDate" and seen.peer_disk == "UpToDate"
    return seen.is_connected or seen.is_in_resync


async def drbd_attach_net(ctx: NodeContext, disks: list[dict[str, Any]],
                          multimaster: bool) -> None:
    """(Re)connect every device to its peer and wait, bounded, until all are connected
    (``multimaster``: connected with both disks UpToDate)."""
    devs = await _find_drbd(ctx, disks)
    for dev in devs:
        try:
            await dev.attach_net(bool(multimaster))
        except BlockDeviceError as err:
            raise RPCFail(f"Can't change network configuration: {err}") from None
    assert ctx.mirrors is not None
    delay, factor, longest, total = ATTACH_RETRY
    deadline = ctx.clock.seconds() + total
    while True:
        seen = [await _status(dev) for dev in devs]
        if all(_ready(s, bool(multimaster)) for s in seen):
            return
        now = ctx.clock.seconds()
        if now >= deadline:
            raise RPCFail("Timeout in disk reconnecting")
        await ctx.mirrors.wait([d.minor for d in devs if d.minor is not None],
                               min(delay, deadline - now))
        delay = min(delay * factor, longest)


async def drbd_wait_sync(ctx: NodeContext, disks: list[dict[str, Any]]) -> list[Any]:
    """``[alldone, min_resync]``: whether no device resyncs, the lowest sync
    percentage (100 if none); a device neither connected nor resyncing is waited for
    (bounded), then fails the call."""
    devs = await _find_drbd(ctx, disks)
    assert ctx.mirrors is not None
    alldone, min_resync = True, 100.0
    for dev in devs:
        deadline = ctx.clock.seconds() + SYNC_WAIT
        seen = await _status(dev)
        while not (seen.is_connected or seen.is_in_resync):
            now = ctx.clock.seconds()
            if now >= deadline:
                raise RPCFail(f"DRBD device {dev} is not in sync: stats={seen}")
            await ctx.mirrors.wait([dev.minor] if dev.minor is not None else [],
                                   min(SYNC_POLL, deadline - now))
            seen = await _status(dev)
        alldone = alldone and not seen.is_in_resync
        if seen.sync_percent is not None:
            min_resync = min(min_resync, seen.sync_percent)
    return [alldone, min_resync]


async def drbd_needs_activation(ctx: NodeContext, disks: list[dict[str, Any]]
                                ) -> list[Any]:
    """The uuids of the disks that are not there, StandAlone or without local disk."""
    out = []
    for disk in disks:
        dev = await devices.find_quietly(ctx, disk)
        try:
            seen = await dev.mirror_status() if dev is not None and dev.mirrored else None
        except BlockDeviceError:
            dev, seen = None, None
        if dev is None or (seen is not None and (seen.is_standalone or seen.is_diskless)):
            out.append(disk.get("uuid"))
    return out


async def blockdev_addchildren(ctx: NodeContext, bdev: dict[str, Any],
                               ndevs: list[dict[str, Any]]) -> None:
    """Attach new local volumes to a mirror (it resyncs them from its peer)."""
    parent = await _parent(ctx, bdev, "add children")
    new = [await devices.find_quietly(ctx, disk) for disk in ndevs]
    found = [d for d in new if d is not None]
    if len(found) != len(new):
        missing = [_name(d) for d, dev in zip(ndevs, new, strict=True) if dev is None]
        raise RPCFail(f"Can't find new device(s) to add: {', '.join(missing)}")
    try:
        await parent.add_children(found)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None


async def _parent(ctx: NodeContext, disk: dict[str, Any], what: str) -> BlockDevice:
    dev = await devices.find_quietly(ctx, disk)
    if dev is None or not dev.mirrored:
        raise RPCFail(f"Can't find parent device '{_name(disk)}' in {what}")
    return dev


async def blockdev_removechildren(ctx: NodeContext, bdev: dict[str, Any],
                                  ndevs: list[dict[str, Any]]) -> None:
    """Detach local volumes from a mirror (it goes diskless)."""
    parent = await _parent(ctx, bdev, "remove children")
    paths = []
    for disk in ndevs:
        try:
            paths.append(devices.device_class(disk).static_path(
                str(disk.get("dev_type")), disk.get("logical_id") or []))
        except (ValueError, BlockDeviceError):
            dev = await devices.find_quietly(ctx, disk)
            if dev is None or dev.dev_path is None:
                raise RPCFail(f"Can't find device {_name(disk)} while removing "
                              "children") from None
            paths.append(dev.dev_path)
    try:
        await parent.remove_children(paths)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None

