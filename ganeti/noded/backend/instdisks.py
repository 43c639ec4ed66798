"""The disks of an instance about to start, as its hypervisor opens them.

Each disk of the instance's ``disks_info`` is assembled again on the node (as
Ganeti's start links them) and becomes a :class:`~ganeti.noded.hypervisors.domainxml.DiskSpec`:
file and sharedfile disks by path, blockdev disks and (with device-mapper) plain
disks by device path.  Without device-mapper a plain disk is its byte range on its
physical volume (``lvs``/``pvs`` in bytes: ``pe_start + first extent * extent
size``, the volume's size); a volume of several segments or physical volumes is
refused.  Only hypervisors that open disks get them
(:attr:`~ganeti.noded.hypervisors.base.Hypervisor.uses_block_devices`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import devices, lvm, qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.hypervisors.domainxml import DiskSpec


async def gather(ctx: NodeContext, name: str, instance: Mapping[str, Any]) -> list[DiskSpec]:
    """The instance's disks assembled, as the hypervisor opens them (Ganeti's
    ``_GatherAndLinkBlockDevs``); diskless ones are left out."""
    specs = []
    for idx, disk in enumerate(instance.get("disks_info") or []):
        if not isinstance(disk, dict):
            raise RPCFail(f"Could not start instance {name}: disk {idx} is not an object")
        try:
            kind = devices.template(disk)
            path = await devices.assemble(ctx, disk)
        except BlockDeviceError as err:
            raise RPCFail(f"Could not start instance {name}: disk {idx}: {err}") from None
        if path is None:
            continue  # diskless
        if kind == constants.DT_DRBD8 and qmirror_drbd.is_qemu(
                disk.get("dynamic_params") or {}):
            # the qemu mirror engine: the node's own mirror daemon serves it over NBD
            export, host, port = qmirror_drbd.guest_nbd(disk)
            specs.append(DiskSpec(export, nbd=(host, port),
                                  read_only=disk.get("mode") == "ro"))
            continue
        if kind == constants.DT_PLAIN and not lvm.dm_available():
            specs.append(await volume_range(ctx, name, idx, disk))
            continue
        local = devices.local_path(ctx, kind, path)
        block = kind in (constants.DT_PLAIN, constants.DT_BLOCK)
        if block and not await ctx.run(os.path.exists, local):
            raise RPCFail(f"Could not start instance {name}: disk {idx}: {local} does not "
                          "exist on this node (volumes need device-mapper)")
        specs.append(DiskSpec(local, block=block, read_only=disk.get("mode") == "ro"))
    return specs


async def volume_range(ctx: NodeContext, name: str, idx: int, disk: dict[str, Any]
                       ) -> DiskSpec:
    """A logical volume without device-mapper: its extents on its physical volume, as a
    byte range QEMU opens directly (one segment on one PV only)."""
    def fail(why: str) -> RPCFail:
        return RPCFail(f"Could not start instance {name}: disk {idx}: {why}")

    try:
        vg, lv = lvm.vg_lv(disk)
        pv, offset, size = await lvm.extents(ctx, vg, lv)
    except BlockDeviceError as err:
        raise fail(str(err)) from None
    return DiskSpec(pv, block=True, read_only=disk.get("mode") == "ro", offset=offset,
                    size=size)
