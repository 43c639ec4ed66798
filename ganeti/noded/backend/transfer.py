"""Disk data transfer, chunk by chunk (the calls of :mod:`ganeti.core.rpcdefs.transfer`):
the node reads or writes a piece of one disk's device for an instance move.

The device must exist on this node (it is assembled to find its data path,
as :mod:`ganeti.noded.bdev.convert` does); the reads and writes run in the
daemon's blocking pool, never on the reactor.
"""

from __future__ import annotations

import base64
import binascii
import errno
import os
from typing import Any

from twisted.internet import defer

from ganeti.core.rpcdefs.transfer import MAX_CHUNK
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import convert, devices
from ganeti.noded.bdev.base import BlockDeviceError


def read_at(path: str, offset: int, length: int) -> list[Any]:
    """``[bytes covered, base64 data or None when they are all zero]`` (blocking).

    A hole of a sparse file at ``offset`` (found with ``SEEK_DATA``) is answered
    whole, however long, as zeros; data is read up to ``length`` bytes."""
    try:
        with open(path, "rb") as f:
            try:
                data_at = os.lseek(f.fileno(), offset, os.SEEK_DATA)
            except OSError as err:
                if err.errno != errno.ENXIO:  # (no hole information: read it)
                    data_at = offset
                else:  # nothing but a hole up to the end
                    data_at = max(os.lseek(f.fileno(), 0, os.SEEK_END), offset)
                    if data_at == offset:
                        return [0, None]
            if data_at > offset:
                return [data_at - offset, None]
            f.seek(offset)
            data = f.read(length)
    except OSError as err:
        raise RPCFail(f"Cannot read {path}: {err}") from None
    if not data.strip(b"\0"):
        return [len(data), None]
    return [len(data), base64.b64encode(data).decode("ascii")]


def write_at(path: str, offset: int, data: bytes | None, length: int, sparse: bool) -> None:
    """Write ``data`` (None: ``length`` zeros, skipped on a sparse file) at ``offset``
    (blocking); the file is synced."""
    if data is None and sparse:
        return
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            if data is not None:
                os.pwrite(fd, data, offset)
            else:
                zeros = bytes(min(length, MAX_CHUNK))
                done = 0
                while done < length:
                    done += os.pwrite(fd, zeros[:length - done], offset + done)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise RPCFail(f"Cannot write {path}: {err}") from None


async def _path(ctx: NodeContext, disk: dict[str, Any]) -> str:
    cls = devices.device_class(disk)
    if not cls.holds_data:
        raise RPCFail("Diskless disks hold no data to copy")
    if await devices.find_device(ctx, disk) is None:
        raise RPCFail(f"Device '{disk.get('uuid') or disk.get('logical_id')}' not found")
    try:
        return await convert.device_path(ctx, disk)
    except BlockDeviceError as err:
        raise RPCFail(str(err)) from None


async def _read(ctx: NodeContext, disk: dict[str, Any], offset: int, length: int) -> list[Any]:
    path = await _path(ctx, disk)
    out: list[Any] = await ctx.run(read_at, path, offset, length)
    return out


async def _write(ctx: NodeContext, disk: dict[str, Any], offset: int, length: int,
                 data: str | None) -> None:
    cls = devices.device_class(disk)
    if cls.holds_data and not cls.accepts_import:
        raise RPCFail("Importing data is not supported for the PersistentBlockDevice "
                      "template")
    raw: bytes | None = None
    if data is not None:
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise RPCFail("The chunk is not base64 data") from None
        if len(raw) > min(length, MAX_CHUNK):
            raise RPCFail(f"The chunk has {len(raw)} bytes, more than its length {length}")
    path = await _path(ctx, disk)
    await ctx.run(write_at, path, offset, raw, length, cls.sparse)


def blockdev_read_chunk(ctx: NodeContext, disk: dict[str, Any], offset: int,
                        length: int) -> defer.Deferred[list[Any]]:
    """A chunk of a disk's data."""
    return defer.Deferred.fromCoroutine(_read(ctx, disk, offset, length))


def blockdev_write_chunk(ctx: NodeContext, disk: dict[str, Any], offset: int, length: int,
                         data: str | None) -> defer.Deferred[None]:
    """Write a chunk into a disk's device."""
    return defer.Deferred.fromCoroutine(_write(ctx, disk, offset, length, data))
