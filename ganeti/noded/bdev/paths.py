"""Where a disk lives on the node, from the disk dict the master sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ganeti.core.paths import Paths
from ganeti.noded.bdev import devices


def device_path(disk: Mapping[str, Any], paths: Paths | None = None) -> str:
    """The device or file path of ``disk`` (a disk dict) on the node, from its type's
    class in the device table (:meth:`~.device.BlockDevice.static_path`).

    ``file``/``sharedfile``: the file, ``logical_id[1]``; ``plain``:
    ``/dev/<vg>/<lv>`` from ``logical_id`` ``[vg, lv]``; ``blockdev``: the adopted
    device, ``logical_id[1]``.  Any other template (and a malformed
    ``logical_id``) raises ValueError.  With the node's ``paths``, a file's path
    is the one to open on this node (below a virtual node's root, see
    :func:`ganeti.noded.bdev.files.local`); without, it is the path as the
    config names it.
    """
    dev_type = disk.get("dev_type")
    lid = disk.get("logical_id")
    if not isinstance(lid, list | tuple) or len(lid) != 2 \
            or not all(isinstance(x, str) and x for x in lid):
        raise ValueError(f"disk of type {dev_type!r} has no valid logical_id: {lid!r}")
    cls = devices.DEVICE_CLASSES.get(dev_type) if isinstance(dev_type, str) else None
    if cls is None:
        raise ValueError(f"no device path for disks of type {dev_type!r}")
    path = cls.static_path(str(dev_type), lid)
    return path if paths is None else cls.local_path_of(paths, path)
