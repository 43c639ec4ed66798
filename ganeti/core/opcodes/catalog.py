"""Every declared opcode: the core table and its parts joined, in the order of the reference.

The parts import shared kinds from :mod:`ganeti.core.opcodes.table`; this
module imports them all, so no part imports another.
"""

from __future__ import annotations

from ganeti.core.opcodes import (
    table,
    table_backup,
    table_evacuate,
    table_instance,
    table_network,
    table_os,
    table_storage,
)
from ganeti.core.opcodes.base import OpCode

#: The table's parts by name (the generated views have one module per part:
#: ``views_<name>.py``).
PARTS: tuple[tuple[str, tuple[OpCode, ...]], ...] = (
    ("core", tuple(table.CORE)), ("instance", tuple(table_instance.OPCODES)),
    ("network", tuple(table_network.OPCODES)), ("os", tuple(table_os.OPCODES)),
    ("storage", tuple(table_storage.OPCODES)), ("backup", tuple(table_backup.OPCODES)),
    ("evacuate", tuple(table_evacuate.OPCODES)))

ALL: tuple[OpCode, ...] = tuple(op for _name, ops in PARTS for op in ops)

__all__ = ["ALL", "PARTS"]
