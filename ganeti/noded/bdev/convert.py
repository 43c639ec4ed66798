"""Copying a disk's data to another disk of the same instance, for a disk template
conversion (Ganeti's ``BlockdevConvert``: the source device's export piped into
the target's import).

Both devices must exist on this node.  The copy is one ``dd`` run through the
daemon's child processes (never on the reactor): ``size`` MiB of the source,
in 1 MiB blocks, into the target without truncating it.  A target file is a
freshly created sparse file, so blocks of zeros are skipped (``conv=sparse``)
and it stays sparse; a volume target gets every block written.  Adopted
(``blockdev``) devices may be read but never written (Ganeti refuses importing
into them too).

Device paths: a file disk's file below the node's root; a volume's
``/dev/<vg>/<lv>`` as assembling it answers (activated with device-mapper;
without it, its extent of its physical volume: ``dd``'s ``skip``/``seek`` in
bytes, see docs/instances.md); an adopted device's path.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from ganeti.core import constants
from ganeti.core.rpcdefs.base import RPC_TMO_SLOW
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev import devices, lvm
from ganeti.noded.bdev.base import BlockDeviceError, run_program

#: Seconds a copy may run: a little less than the master waits for the call.
COPY_TIMEOUT = RPC_TMO_SLOW - 60.0


def dd_program() -> str:
    """The ``dd`` program on the daemon's PATH."""
    path = shutil.which("dd")
    if path is None:
        raise BlockDeviceError("the dd program is not installed (not found on PATH)")
    return os.path.abspath(path)


async def device_path(ctx: NodeContext, disk: dict[str, Any]) -> str:
    """Where the disk's data is on this node (the device exists: checked by the caller):
    the device's :meth:`~.device.BlockDevice.data_path`, its children assembled."""
    dev = await devices.assemble_device(ctx, disk)
    if dev is None:
        raise BlockDeviceError(f"{disk.get('dev_type')} disk not assembled on this node")
    return await dev.data_path()


def _size(disk: dict[str, Any]) -> int:
    size = disk.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BlockDeviceError(f"Invalid disk size {size!r}")
    return size


def _name(disk: dict[str, Any]) -> str:
    return str(disk.get("uuid") or disk.get("logical_id"))


async def data_place(ctx: NodeContext, disk: dict[str, Any]) -> tuple[str, int, int | None]:
    """Where the disk's data is on this node (the device exists: checked by the
    caller): ``(path, offset of its first byte, size in bytes or None)``; without
    device-mapper a ``plain`` volume is its extent of its physical volume."""
    if disk.get("dev_type") == constants.DT_PLAIN and not lvm.dm_available():
        vg, lv = lvm.vg_lv(disk)
        return await lvm.extents(ctx, vg, lv)
    return await device_path(ctx, disk), 0, None


async def copy(ctx: NodeContext, src: dict[str, Any], dest: dict[str, Any]) -> None:
    """Copy the data of ``src`` to ``dest`` (both disk dicts as the master sends them)."""
    src_cls, dest_cls = devices.device_class(src), devices.device_class(dest)
    if dest_cls.holds_data and not dest_cls.accepts_import:
        raise BlockDeviceError("Importing data is not supported for the "
                               "PersistentBlockDevice template")
    if not (src_cls.holds_data and dest_cls.holds_data):
        raise BlockDeviceError("Diskless disks hold no data to copy")
    if await devices.find_device(ctx, src) is None:
        raise BlockDeviceError(f"Cannot copy from device '{_name(src)}': device not found")
    if await devices.find_device(ctx, dest) is None:
        raise BlockDeviceError(f"Cannot copy to device '{_name(dest)}': device not found")
    size = _size(src)
    source, skip, _ = await data_place(ctx, src)
    target, seek, _ = await data_place(ctx, dest)
    conv = "notrunc,sparse,fsync" if dest_cls.sparse else "notrunc,fsync"
    argv = [dd_program(), f"if={source}", f"of={target}", "bs=1M", f"count={size}",
            f"conv={conv}"]
    if skip:
        argv += [f"skip={skip}", "iflag=skip_bytes"]
    if seek:
        argv += [f"seek={seek}", "oflag=seek_bytes"]
    out = await run_program(ctx, argv, timeout=COPY_TIMEOUT)
    if not out.ok:
        raise BlockDeviceError(f"Disk conversion command '{' '.join(argv)}' exited with "
                               f"error: {out.reason}; output: {out.output}")
