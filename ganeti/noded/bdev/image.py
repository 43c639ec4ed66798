"""Writing an OS image onto a disk (Ganeti's ``BlockdevImage``), for an instance
created or reinstalled with the ``os-image`` OS parameter.

The image is a URL (``http``, ``https`` or ``ftp``; Ganeti also names ``ftps``,
which is refused here with a clear error) or a path on the node, taken as it is
(an administrator's file: on a virtual cluster every node sees the host's files).
Ganeti's checks, in its order: the image exists (a URL is not checked before
it is fetched), the device exists, the size is not negative and not bigger than
the device.  Then at most ``size`` MiB of the image are written from the start
of the device without truncating it; an image bigger than that fails
("Disk image larger than the disk").  A local file is copied by ``dd`` through
the daemon's child processes, a URL is fetched in the daemon's thread pool;
neither runs on the reactor.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from typing import Any

from ganeti.core.fileutil import is_url
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev import convert, devices
from ganeti.noded.bdev.base import BlockDeviceError, run_program
from ganeti.noded.bdev.device import BlockDevice

#: Seconds one read of a download may wait for data.
READ_TIMEOUT = 60.0

_MIB = 1024 * 1024
_CHUNK = _MIB



def _iv_name(disk: dict[str, Any]) -> str:
    return str(disk.get("iv_name") or disk.get("uuid") or disk.get("logical_id"))


async def write_image(ctx: NodeContext, disk: dict[str, Any], image: str, size: int) -> None:
    """Write ``image`` onto ``disk``'s device (at most ``size`` MiB)."""
    if not is_url(image) and not await ctx.run(os.path.exists, image):
        raise BlockDeviceError(f"Image '{image}' not found")
    dev = await devices.find_quietly(ctx, disk)
    if dev is None or not dev.holds_data:
        raise BlockDeviceError(f"Cannot image device {_iv_name(disk)}: device not found")
    if size < 0:
        raise BlockDeviceError("Negative size")
    try:
        dims = await dev.dimensions()
    except BlockDeviceError:
        dims = None
    if dims is None or size * _MIB > int(dims[0]):
        raise BlockDeviceError("Image size is bigger than device size")
    await dump(dev, image, size)


async def dump(dev: BlockDevice, image: str, size: int) -> None:
    """Write at most ``size`` MiB of ``image`` onto the (found) device, from its start
    (its :meth:`~.device.BlockDevice.data_path`)."""
    ctx = dev.ctx
    target = await dev.data_path()
    if is_url(image):
        await ctx.run(download, image, target, size)
        return
    argv = [convert.dd_program(), f"if={image}", f"of={target}", "bs=1M",
            f"count={size}", "conv=notrunc,fsync"]
    out = await run_program(ctx, argv, timeout=convert.COPY_TIMEOUT)
    if not out.ok:
        raise BlockDeviceError(f"Dump command '{' '.join(argv)}' exited with error: "
                               f"{out.reason}; output: {out.output}")


def download(url: str, target: str, size: int) -> None:
    """Fetch ``url`` into ``target`` from its start, at most ``size`` MiB (blocking:
    run it in a thread)."""
    if url.startswith("ftps://"):
        raise BlockDeviceError(f"Cannot download '{url}': ftps URLs are not supported "
                               "(use https, http or ftp, or a file on the node)")
    limit = size * _MIB
    written = 0
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT) as response, \
                open(target, "r+b") as out:
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                if written + len(chunk) > limit:
                    raise BlockDeviceError("Disk image larger than the disk")
                out.write(chunk)
                written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
    except urllib.error.HTTPError as err:
        raise BlockDeviceError(f"Could not download '{url}': HTTP {err.code} "
                               f"{err.reason}") from None
    except urllib.error.URLError as err:
        raise BlockDeviceError(f"Could not download '{url}': {err.reason}") from None
    except (OSError, ValueError) as err:
        raise BlockDeviceError(f"Could not download '{url}' to {target}: {err}") from None
