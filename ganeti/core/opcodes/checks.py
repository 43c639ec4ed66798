"""Checking opcodes at the boundary and what the queue does to them on acceptance.

See the package docstring (:mod:`ganeti.core.opcodes`) for the wire form.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes import catalog
from ganeti.core.opcodes.base import (
    COMMON_PARAMS,
    OP_ID_KEY,
    OpCode,
    Param,
    reason_entry,
    resolve_depends,
)

#: OP_ID -> declaration, for every opcode this implementation knows.
OPCODES: Mapping[str, OpCode] = MappingProxyType({op.op_id: op for op in catalog.ALL})

#: The summary of an opcode that has no usable OP_ID (luxid's wording).
INVALID_OP_SUMMARY = "INVALID_OP"


def get(op_id: Any) -> OpCode:
    """The declaration of ``op_id``; unknown ids are ``wrong_input`` errors."""
    if not isinstance(op_id, str):
        raise OpPrereqError(f"Opcode OP_ID must be a string, got {op_id!r:.80}", ECODE_INVAL)
    try:
        return OPCODES[op_id]
    except KeyError:
        raise OpPrereqError(f"Unknown opcode {op_id!r}", ECODE_INVAL) from None


def validate(data: Any) -> dict[str, Any]:
    """Check one opcode in wire form and return its stored form.

    ``data`` must be a JSON object with a known ``OP_ID``.  The result is a
    new dict holding ``OP_ID`` and every (non-reserved) parameter, with
    defaults filled in; ``data`` is not modified.
    """
    if not isinstance(data, dict):
        raise OpPrereqError(f"An opcode must be a JSON object, got {type(data).__name__}",
                            ECODE_INVAL)
    if OP_ID_KEY not in data:
        raise OpPrereqError("Opcode has no OP_ID", ECODE_INVAL)
    return get(data[OP_ID_KEY]).validate(data)


def validate_job(ops: Any) -> list[dict[str, Any]]:
    """Check the opcode list of a submitted job; errors name the opcode index."""
    if not isinstance(ops, list):
        raise OpPrereqError(f"A job must be a list of opcodes, got {type(ops).__name__}",
                            ECODE_INVAL)
    if not ops:
        raise OpPrereqError("A job needs at least one opcode", ECODE_INVAL)
    result = []
    for index, op in enumerate(ops):
        try:
            result.append(validate(op))
        except OpPrereqError as err:
            raise OpPrereqError(f"Opcode {index}: {err.args[0]}", ECODE_INVAL) from None
    return result


def summary(op: Mapping[str, Any]) -> str:
    """The job-summary text of an opcode: ``OP_ID`` minus ``OP_``, plus ``(value)``.

    Opcodes that are not declared here (say from another Ganeti's job
    files) show only their id; without a string ``OP_ID`` the summary is
    :data:`INVALID_OP_SUMMARY`.
    """
    op_id = op.get(OP_ID_KEY) if isinstance(op, Mapping) else None
    if not isinstance(op_id, str):
        return INVALID_OP_SUMMARY
    decl = OPCODES.get(op_id)
    if decl is None:
        return op_id[3:] if op_id.startswith("OP_") else op_id
    return decl.summary(op)


def prepare_job_ops(ops: list[dict[str, Any]], job_id: int,
                    timestamp_ns: int) -> list[dict[str, Any]]:
    """The queue's changes to validated opcodes when it accepts job ``job_id``.

    Returns copies in which relative dependencies are resolved
    (:func:`resolve_depends`) and each opcode's reason trail ends with
    ``["gnt:opcode:<name>", "job=<id>;index=<i>", timestamp_ns]``.
    """
    result = []
    for index, op in enumerate(ops):
        new = copy.deepcopy(op)
        new["depends"] = resolve_depends(op.get("depends"), job_id)
        trail = list(new.get("reason") or [])
        trail.append(reason_entry(str(op[OP_ID_KEY]), job_id, index, timestamp_ns))
        new["reason"] = trail
        result.append(new)
    return result


def _param_row(param: Param) -> str:
    kind = "reserved: null only" if param.reserved else param.kind.name
    return f"| `{param.name}` | {kind} | {param.describe_default()} | {param.doc} |"


def reference_markdown() -> str:
    """The opcode reference (Markdown), generated from the declarations."""
    lines = ["Common parameters (every opcode):", "",
             "| parameter | kind | default | description |", "|---|---|---|---|"]
    lines += [_param_row(p) for p in COMMON_PARAMS]
    for op in catalog.ALL:
        shown = f"; summary shows `{op.summary_param}`" if op.summary_param else ""
        lines += ["", f"### {op.op_id}", "", f"{op.doc}{shown}.", ""]
        own = [p for p in op.params if not p.reserved]
        held = [p.name for p in op.params if p.reserved]
        if own:
            lines += ["| parameter | kind | default | description |", "|---|---|---|---|"]
            lines += [_param_row(p) for p in own]
        else:
            lines.append("No parameters of its own.")
        if held:
            lines += ["", "Reserved (Ganeti's, accepted only as null or default): "
                      + ", ".join(f"`{n}`" for n in held) + "."]
    return "\n".join(lines) + "\n"
