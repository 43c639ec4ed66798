"""Where a disk lives on the node, from the disk dict the master sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ganeti.core import constants
from ganeti.core.paths import Paths
from ganeti.noded.bdev import files


def device_path(disk: Mapping[str, Any], paths: Paths | None = None) -> str:
    """The device or file path of ``disk`` (a disk dict) on the node.

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
    if dev_type in (constants.DT_FILE, constants.DT_SHARED_FILE, constants.DT_BLOCK):
        path = str(lid[1])
        if not path.startswith("/"):
            raise ValueError(f"{dev_type} disk path {path!r} is not absolute")
        if paths is not None and dev_type != constants.DT_BLOCK:
            return files.local(paths, path)
        return path
    if dev_type == constants.DT_PLAIN:
        vg, lv = str(lid[0]), str(lid[1])
        if "/" in vg or "/" in lv or vg in (".", "..") or lv in (".", ".."):
            raise ValueError(f"invalid volume group/logical volume name {vg!r}/{lv!r}")
        return f"/dev/{vg}/{lv}"
    raise ValueError(f"no device path for disks of type {dev_type!r}")
