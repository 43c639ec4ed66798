"""The ``blockdev`` template: a disk is an existing block device the instance adopted.

Nothing is created, removed, grown or renamed: the device belongs to the
administrator.  Its path (``logical_id`` ``["manual", path]``) must resolve
below ``/dev/`` and be a block device; the device is used as it is.
The functions block (stat, reading a size): :class:`AdoptedDevice` runs them in
the thread pool.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Any

from ganeti.core import storagetypes
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice


def device(disk: dict[str, Any]) -> str:
    """The adopted device's path, checked (driver ``manual``, below ``/dev/``)."""
    lid = disk.get("logical_id")
    if not isinstance(lid, list) or len(lid) != 2 or not isinstance(lid[1], str):
        raise BlockDeviceError(f"Invalid block device logical id {lid!r}")
    if lid[0] != storagetypes.BLOCKDEV_DRIVER_MANUAL:
        raise BlockDeviceError(f"Got persistent block device of invalid type: {lid[0]}")
    real = os.path.realpath(lid[1])
    if not real.startswith("/dev/"):
        raise BlockDeviceError(f"Full path '{real}' lies outside /dev")
    return lid[1]


def _stat(path: str) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if stat.S_ISBLK(st.st_mode) else None


def size_bytes(path: str) -> int:
    """The size of a block device in bytes (its end, as ``blockdev --getsize64``)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def check(disk: dict[str, Any]) -> str:
    """The device's path if it exists and is a block device, else BlockDeviceError."""
    path = device(disk)
    if _stat(path) is None:
        raise BlockDeviceError(f"Can't find a block device at {path}")
    return path


def _numbers(disk: dict[str, Any]) -> tuple[str, int, int] | None:
    """(path, major, minor) of the device, None if it is not there."""
    path = device(disk)
    st = _stat(path)
    if st is None:
        return None
    return path, os.major(st.st_rdev), os.minor(st.st_rdev)


def _size(path: str) -> int | None:
    try:
        return size_bytes(path)
    except OSError:
        return None


class AdoptedDevice(BlockDevice):
    """A ``blockdev`` disk: an existing block device the instance adopted (Ganeti's
    PersistentBlockDevice).  Creating it checks that it is there; removing,
    shutting down and assembling change nothing; it cannot grow, be renamed or be
    written by a disk conversion.  The checks (stat, size) run in the thread pool."""

    accepts_import = False

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Adopt the device: it must exist and be a block device."""
        dev = cls(ctx, disk, children)
        await dev.assemble()
        return dev

    async def attach(self) -> bool:
        """Whether the device is there (and its major/minor)."""
        found = await self.ctx.run(_numbers, self.disk)
        self.attached = found is not None
        self.dev_path, self.major, self.minor = found if found else (None, None, None)
        return self.attached

    async def assemble(self) -> None:
        """Nothing to activate: the device must be there."""
        self.dev_path = await self.ctx.run(check, self.disk)
        self.attached = True

    @classmethod
    def static_path(cls, dev_type: str, logical_id: Sequence[str]) -> str:
        """The adopted device, ``logical_id[1]`` (absolute)."""
        path = str(logical_id[1])
        if not path.startswith("/"):
            raise ValueError(f"{dev_type} disk path {path!r} is not absolute")
        return path

    async def remove(self) -> None:
        """The device is the administrator's: it stays."""

    async def dimensions(self) -> list[Any] | None:
        """[size in bytes, None], None if the size cannot be read."""
        if self.dev_path is None:
            return None
        size = await self.ctx.run(_size, self.dev_path)
        return None if size is None else [size, None]


def sizes(devices: list[str]) -> dict[str, int]:
    """Ganeti's ``bdev_sizes``: {path: MiB} of the given block devices under /dev."""
    out: dict[str, int] = {}
    for path in devices:
        if not isinstance(path, str) or not os.path.normpath(path).startswith("/dev/"):
            continue
        if _stat(path) is None:
            continue
        try:
            out[path] = size_bytes(path) // (1024 * 1024)
        except OSError:
            continue
    return out
