"""Every declared opcode: the core table and its parts joined, in the order of the reference.

The parts import shared kinds from :mod:`ganeti.core.opcodes.table`; this
module imports them all, so no part imports another.
"""

from __future__ import annotations

from ganeti.core.opcodes import (
    table,
    table_backup,
    table_instance,
    table_network,
    table_os,
    table_storage,
)
from ganeti.core.opcodes.base import OpCode

ALL: tuple[OpCode, ...] = (table.CORE + table_instance.OPCODES + table_network.OPCODES
                           + table_os.OPCODES + table_storage.OPCODES
                           + table_backup.OPCODES)

__all__ = ["ALL"]
