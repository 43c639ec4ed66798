"""Logical units: instances (create, remove, start, stop, reboot, modify, disks, queries).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.
"""

from __future__ import annotations

from ganeti.master.lu.base import LogicalUnit

#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = ()
