"""Opcode declarations: instance opcodes.

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
"""

from __future__ import annotations

from ganeti.core.opcodes.base import OpCode

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = ()
