"""Why luxid refuses a job's opcodes, in luxid's words.

Ganeti 3.0's luxid parses a submitted job into typed opcodes while it parses
the LUXI request, and answers a job it cannot parse with the plain string
``Failed to parse request: <method>: <why>``.  :func:`refusal` phrases the
first problem of a job's opcodes as luxid does (``Unknown opcode OP_FOO``,
``key 'duration' not found, object contains only [...]``, ``Can't parse value
for 'duration': ...``, ``Superfluous dictionary keys: [...], but only [...]
allowed.``).  What a value's problem is, is said in our words (luxid's are
Haskell type names such as "Unable to read Double").
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ganeti.core.opcodes import catalog
from ganeti.core.opcodes.base import OP_ID_KEY, OpCode
from ganeti.core.opcodes.kinds import KindMismatch

_OPCODES: dict[str, OpCode] = {op.op_id: op for op in catalog.ALL}


def _keys(value: list[str]) -> str:
    return json.dumps(value, separators=(",", ":"))


def _opcode_problem(op: Any) -> str | None:
    if not isinstance(op, dict):
        return "Unable to read JSObject"
    if OP_ID_KEY not in op:
        return f"key '{OP_ID_KEY}' not found, object contains only {_keys(list(op))}"
    op_id = op[OP_ID_KEY]
    if not isinstance(op_id, str):
        return f"key '{OP_ID_KEY}': Unable to read String"
    decl = _OPCODES.get(op_id)
    if decl is None:
        return f"Unknown opcode {op_id}"
    for param in decl.all_params:
        value = op.get(param.name)
        if value is None:
            if param.required_in(op):
                return (f"key '{param.name}' not found, object contains only "
                        f"{_keys(list(op))}")
            continue
        if param.reserved:
            continue
        try:
            param.kind.check(copy.deepcopy(value))
        except KindMismatch as err:
            return f"Can't parse value for '{param.name}{err.path}': {err.describe()}"
    allowed = {p.name for p in decl.all_params} | {OP_ID_KEY}
    extra = sorted(k for k in op if k not in allowed)
    if extra:
        return (f"Superfluous dictionary keys: {_keys(extra)}, but only "
                f"{_keys(sorted(allowed))} allowed.")
    return None


def refusal(ops: Any) -> str | None:
    """luxid's reason to refuse a job whose opcodes are ``ops``; None if it has none."""
    if not isinstance(ops, list):
        return "Unable to read list"
    for op in ops:
        problem = _opcode_problem(op)
        if problem is not None:
            return problem
    return None


__all__ = ["refusal"]
