"""Logical units: instances (create, remove, start, stop, reboot, modify, disks, queries).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.  The units live in
:mod:`.instance_create`, :mod:`.instance_ops`, :mod:`.instance_disk_ops`,
:mod:`.instance_set_params` and :mod:`.instance_query`; their shared pieces in
:mod:`.instance_common`, :mod:`.instance_policy` and (disks on the nodes)
:mod:`.instance_storage`.
"""

from __future__ import annotations

from ganeti.master.lu import instance_disk_ops, instance_ops, instance_query
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_create import LUInstanceCreate
from ganeti.master.lu.instance_set_params import LUInstanceSetParams

#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = (
    LUInstanceCreate, LUInstanceSetParams, *instance_ops.LUS, *instance_disk_ops.LUS,
    *instance_query.LUS,
)
