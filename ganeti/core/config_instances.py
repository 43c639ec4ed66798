"""Consistency checks of instances, disks, NICs and networks in ``config.data``.

:func:`check` appends one readable line per problem.  Each of the id
arguments limits the check to those objects (and what they refer to); None
checks the whole container, as at load time.
"""

from __future__ import annotations

from collections.abc import Iterable

from ganeti.core import constants
from ganeti.core.objects import ConfigData


def check(cfg: ConfigData, problems: list[str], instances: Iterable[str] | None = None,
          disks: Iterable[str] | None = None, networks: Iterable[str] | None = None) -> None:
    """Append the problems of the given instances, disks and networks (None: all)."""
    inst_ids = cfg.instances.keys() if instances is None else instances
    disk_ids = cfg.disks.keys() if disks is None else disks
    for uuid in inst_ids:
        inst = cfg.instances.get(uuid)
        if inst is None:
            continue
        where = f"instances/{uuid} ({inst.name})"
        if inst.primary_node not in cfg.nodes:
            problems.append(f"{where}: primary_node {inst.primary_node!r} is not a known node")
        for disk_uuid in inst.disks:
            if disk_uuid not in cfg.disks:
                problems.append(f"{where}: disk {disk_uuid!r} is not in the disks container")
        if inst.admin_state not in constants.ADMINST_ALL:
            problems.append(f"{where}: invalid admin_state {inst.admin_state!r}")
        if inst.hypervisor not in constants.HYPER_TYPES:
            problems.append(f"{where}: unknown hypervisor {inst.hypervisor!r}")
    for uuid in disk_ids:
        disk = cfg.disks.get(uuid)
        if disk is None:
            continue
        for node in disk.nodes:
            if node not in cfg.nodes:
                problems.append(f"disks/{uuid}: node {node!r} is not a known node")
