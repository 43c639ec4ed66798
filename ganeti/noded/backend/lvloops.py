"""``plain`` disks without device-mapper for programs that open a device path.

Without device-mapper a logical volume has no ``/dev/<vg>/<lv>``; its data is a byte
range of its physical volume (:func:`ganeti.noded.backend.instdisks.volume_range`).
An OS script (create, rename) is handed ``DISK_<n>_PATH``: for such a volume this
module attaches a loop device over that range (``losetup --offset --sizelimit``),
which the script then opens like any block device, and detaches it afterwards.  A
``drbd`` disk of the emulated mirror engine (whose device does not exist) is its
data volume, the first child, on this node: the OS is written there, as the
engine's device path is that volume too.  A drbd disk of the ``qemu`` engine is
written through its mirror, never beside it (the peer's copy would differ unseen):
the primary's mirror daemon serves the disk as a file (QEMU's FUSE export, above
the mirror), and the loop device is attached over that file; with or without
device-mapper.  With device-mapper (or for other templates) nothing else is
attached: the paths stay as the device table gives them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from twisted.logger import Logger

from ganeti.core import constants, diskparams
from ganeti.noded.backend import instdisks
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import devices, lvm, qmirror, qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError, run_program
from ganeti.noded.bdev.qmirror_roles import QemuMirror

if TYPE_CHECKING:
    from ganeti.noded.bdev.drbd import DrbdDevice

log = Logger()

SBIN = ("/usr/sbin", "/sbin")


def losetup_program() -> str:
    """``losetup`` on the daemon's PATH (or in /usr/sbin, /sbin)."""
    path = shutil.which("losetup", path=os.pathsep.join(
        [os.environ.get("PATH", ""), *SBIN]))
    if path is None:
        raise RPCFail("the losetup program is not installed (package mount)")
    return os.path.abspath(path)


def engine(instance: Mapping[str, Any], disk: Mapping[str, Any]) -> str:
    """The mirror engine of a drbd disk: its dynamic parameters', else the master's
    choice for the instance's hypervisor."""
    dyn = disk.get("dynamic_params")
    if isinstance(dyn, dict) and dyn.get("mirror"):
        return str(dyn["mirror"])
    return diskparams.MIRROR_ENGINES.get(str(instance.get("hypervisor")),
                                         diskparams.DEFAULT_MIRROR)


def data_volume(disk: Any, mirror: str = diskparams.DEFAULT_MIRROR) -> dict[str, Any] | None:
    """The volume holding ``disk``'s data: itself if plain, the first child of a drbd
    disk of the emulated engine (``mirror``) if that is plain; None otherwise."""
    if not isinstance(disk, dict):
        return None
    if disk.get("dev_type") == constants.DT_DRBD8:
        if mirror != diskparams.DEFAULT_MIRROR:
            return None
        children = disk.get("children") or []
        child = children[0] if children else None
        if isinstance(child, dict):
            return {**child, "mode": disk.get("mode", child.get("mode"))}
        return None
    return disk if disk.get("dev_type") == constants.DT_PLAIN else None


def _through_mirror(instance: Mapping[str, Any], disk: Any) -> bool:
    """Whether ``disk`` is a drbd disk of the qemu engine (written through its mirror)."""
    return isinstance(disk, dict) and disk.get("dev_type") == constants.DT_DRBD8 \
        and engine(instance, disk) == qmirror.ENGINE


def needs_loops(instance: Mapping[str, Any]) -> bool:
    """Whether some disk of ``instance`` is a volume with no device on this node, or a
    disk written through its qemu mirror."""
    disks = instance.get("disks_info") or []
    if any(_through_mirror(instance, d) for d in disks):
        return True
    return (any(isinstance(d, dict) and data_volume(d, engine(instance, d)) is not None
                for d in disks) and not lvm.dm_available())


class Attached(list[str]):
    """The loop devices :func:`attach` made, in order, and the mirrors whose file export
    they use (ended after the loops are detached)."""

    def __init__(self) -> None:
        super().__init__()
        self.mirrors: list[QemuMirror] = []


async def _mirror_file(ctx: NodeContext, name: str, idx: int, disk: dict[str, Any],
                       action: str, attached: Attached) -> str:
    """The qemu-engine drbd disk as a file, served by the primary's mirror daemon."""
    try:
        dev = devices.build(ctx, disk)
        # (the disk dict says drbd: its device is a DrbdDevice)
        mirror = await qmirror_drbd.mirror_of(cast("DrbdDevice", dev))
        if mirror is None:
            raise BlockDeviceError("its mirror daemon does not run on this node (activate "
                                   "the instance's disks first)")
        path = await mirror.export_file()
    except BlockDeviceError as err:
        raise RPCFail(f"Could not {action} instance {name}: disk {idx}: {err}") from None
    attached.mirrors.append(mirror)
    return path


async def attach(ctx: NodeContext, instance: Mapping[str, Any], action: str,
                 only: int | None = None) -> tuple[dict[str, str], Attached]:
    """Loop devices over the instance's volumes (``only``: that disk's):
    ``({"DISK_<n>_PATH": loop}, loops)``; none with device-mapper, except for the
    disks written through their qemu mirror.  What was attached is detached again if
    one fails."""
    attached = Attached()
    if not needs_loops(instance):
        return {}, attached
    name = str(instance.get("name"))
    env: dict[str, str] = {}
    try:
        for idx, disk in enumerate(instance.get("disks_info") or []):
            if only not in (None, idx) or not isinstance(disk, dict):
                continue
            read_only = disk.get("mode") == "ro"
            if _through_mirror(instance, disk):
                path, offset, size = await _mirror_file(ctx, name, idx, disk, action,
                                                        attached), 0, 0
            elif lvm.dm_available():
                continue
            else:
                volume = data_volume(disk, engine(instance, disk))
                if volume is None:
                    continue
                spec = await instdisks.volume_range(ctx, name, idx, volume, action)
                path, offset, size = spec.path, spec.offset or 0, spec.size or 0
                read_only = read_only or spec.read_only
            out = await run_program(ctx, [
                losetup_program(), "--find", "--show", "--offset", str(offset),
                "--sizelimit", str(size), *(["--read-only"] if read_only else []), path])
            device = out.stdout.strip()
            if not out.ok or not device.startswith("/dev/"):
                raise RPCFail(f"Could not {action} instance {name}: disk {idx}: cannot "
                              f"attach a loop device to {path}: "
                              f"{out.output or out.reason}")
            attached.append(device)
            env[f"DISK_{idx}_PATH"] = device
    except BaseException:
        await detach(ctx, attached)
        raise
    return env, attached


def _flush(device: str) -> None:
    """Write what the loop device caches to its file (the mirror's export: then both
    sides have it)."""
    try:
        fd = os.open(device, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


async def detach(ctx: NodeContext, loops: list[str]) -> None:
    """Detach the loop devices :func:`attach` made (failures ignored: the kernel frees
    a loop device whose last user closes it once it is marked for removal), then end
    the mirrors' file exports."""
    mirrors = loops.mirrors if isinstance(loops, Attached) else []
    for device in loops:
        if mirrors:
            await ctx.run(_flush, device)
        await run_program(ctx, [losetup_program(), "--detach", device])
    for mirror in mirrors:
        try:
            await mirror.end_file_export()
        except (BlockDeviceError, OSError) as err:
            log.warn("Could not end the file export of {name}: {err}",
                     name=mirror.daemon.name, err=str(err))
