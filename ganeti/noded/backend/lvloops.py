"""``plain`` disks without device-mapper for programs that open a device path.

Without device-mapper a logical volume has no ``/dev/<vg>/<lv>``; its data is a byte
range of its physical volume (:func:`ganeti.noded.backend.instdisks.volume_range`).
An OS script (create, rename) is handed ``DISK_<n>_PATH``: for such a volume this
module attaches a loop device over that range (``losetup --offset --sizelimit``),
which the script then opens like any block device, and detaches it afterwards.  A
``drbd`` disk of the emulated mirror engine (whose device does not exist) is its
data volume, the first child, on this node: the OS is written there, as the
engine's device path is that volume too.  A drbd disk of the ``qemu`` engine is
left alone: written beside its mirror, the peer's copy would differ unseen.  With device-mapper
(or for other templates) nothing is attached: the paths stay as the device table
gives them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants, diskparams
from ganeti.noded.backend import instdisks
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import lvm
from ganeti.noded.bdev.base import run_program

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


def needs_loops(instance: Mapping[str, Any]) -> bool:
    """Whether some disk of ``instance`` is a volume with no device on this node."""
    disks = instance.get("disks_info") or []
    return (any(isinstance(d, dict) and data_volume(d, engine(instance, d)) is not None
                for d in disks) and not lvm.dm_available())


async def attach(ctx: NodeContext, instance: Mapping[str, Any], action: str,
                 only: int | None = None) -> tuple[dict[str, str], list[str]]:
    """Loop devices over the instance's volumes (``only``: that disk's):
    ``({"DISK_<n>_PATH": loop}, loops)``; none with device-mapper.  What was attached
    is detached again if one fails."""
    if not needs_loops(instance):
        return {}, []
    name = str(instance.get("name"))
    env: dict[str, str] = {}
    loops: list[str] = []
    try:
        for idx, disk in enumerate(instance.get("disks_info") or []):
            volume = (data_volume(disk, engine(instance, disk))
                      if isinstance(disk, dict) else None)
            if volume is None or only not in (None, idx):
                continue
            spec = await instdisks.volume_range(ctx, name, idx, volume, action)
            out = await run_program(ctx, [
                losetup_program(), "--find", "--show", "--offset", str(spec.offset or 0),
                "--sizelimit", str(spec.size or 0),
                *(["--read-only"] if spec.read_only else []), spec.path])
            device = out.stdout.strip()
            if not out.ok or not device.startswith("/dev/"):
                raise RPCFail(f"Could not {action} instance {name}: disk {idx}: cannot "
                              f"attach a loop device to {spec.path}: "
                              f"{out.output or out.reason}")
            loops.append(device)
            env[f"DISK_{idx}_PATH"] = device
    except BaseException:
        await detach(ctx, loops)
        raise
    return env, loops


async def detach(ctx: NodeContext, loops: list[str]) -> None:
    """Detach the loop devices :func:`attach` made (failures ignored: the kernel frees
    a loop device whose last user closes it once it is marked for removal)."""
    for device in loops:
        await run_program(ctx, [losetup_program(), "--detach", device])
