"""OS images: the ``os-image`` OS parameter and writing it onto an instance's
first disk (Ganeti's ``CheckOSImage``, ``GetOSImage`` and ``ImageDisks``), for
instance create and reinstall.

The node does the writing (``blockdev_image``: a URL is fetched, a path is a file
on the node); the master checks the parameter's form and names disk and node in
the error.  Ganeti pauses and resumes the disk's resync around the write: no
template built here resyncs, so there is nothing to pause yet.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import OpPrereqError
from ganeti.core.fileutil import is_url
from ganeti.core.objects import Instance
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_storage import instance_disks

#: The OS parameter naming a disk image to install (Ganeti's ``OS_IMAGE``).
OS_IMAGE = "os-image"


def get_os_image(osparams: Mapping[str, Any] | None) -> str | None:
    """The image named by OS parameters, if any (Ganeti's ``GetOSImage``)."""
    if not osparams:
        return None
    image = osparams.get(OS_IMAGE)
    return None if image is None else str(image)


def check_os_image(osparams: Mapping[str, Any] | None) -> None:
    """Ganeti's CheckOSImage: an ``os-image`` OS parameter must be a URL or an
    absolute path (OpPrereqError without an error code, as Ganeti's)."""
    image = get_os_image(osparams)
    if image is not None and not (is_url(image) or posixpath.isabs(image)):
        raise OpPrereqError("OS image must be an absolute path or a URL")


async def image_disks(lu: LogicalUnit, instance: Instance, image: str) -> None:
    """Write ``image`` onto the instance's first disk on its primary node; the
    disks must be assembled.  OpExecError naming disk and node on failure."""
    cfg = lu.ctx.config.config
    disks = instance_disks(cfg, instance)
    if not disks:
        return
    node = cfg.nodes[instance.primary_node]
    lu.ctx.feedback(c.ELOG_MESSAGE, f" - INFO: Imaging disk '0' for instance "
                                    f"'{instance.name}' on node '{node.name}'")
    result = await lu.ctx.rpc().call_one(node, "blockdev_image",
                                         [DiskArg(disks[0], instance), image, disks[0].size])
    result.raise_if_failed(
        f"Could not image disk '0' for instance '{instance.name}' on node '{node.name}'")
