"""Logical units: operating system definitions (diagnose, per-OS cluster parameters).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.
"""

from __future__ import annotations

from ganeti.master.lu.base import LogicalUnit

#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = ()
