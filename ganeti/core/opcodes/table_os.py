"""Opcode declarations: os opcodes.

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
"""

from __future__ import annotations

from ganeti.core.opcodes.base import OpCode, opt, req
from ganeti.core.opcodes.table import NAME_LIST

OP_OS_DIAGNOSE = OpCode(
    "OP_OS_DIAGNOSE", "Compute the list of guest operating systems",
    (
        req("output_fields", NAME_LIST, "Selected output fields"),
        opt("names", NAME_LIST, "Which operating systems to diagnose", []),
    ))

OP_EXT_STORAGE_DIAGNOSE = OpCode(
    "OP_EXT_STORAGE_DIAGNOSE", "Compute the list of external storage providers",
    (
        req("output_fields", NAME_LIST, "Selected output fields"),
        opt("names", NAME_LIST, "Which ExtStorage providers to diagnose", []),
    ))

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = (OP_OS_DIAGNOSE, OP_EXT_STORAGE_DIAGNOSE)
