"""Opcodes: Ganeti's operations, declared once and checked at the boundary.

An opcode travels as a JSON object with an ``OP_ID`` and its parameters
(Ganeti's wire form).  This package holds

- the declarations (:mod:`.table`): every opcode with its parameters,
  kinds, defaults, descriptions and summary parameter;
- :func:`validate` / :func:`validate_job`: wire form in, stored form out
  (the form kept in job files), or ``OpPrereqError(..., "wrong_input")``;
- :func:`summary`: ``TEST_DELAY(10.0)``, as ``gnt-job list`` shows it;
- :func:`resolve_depends`, :func:`reason_entry` and :func:`prepare_job_ops`:
  what the queue does to opcodes when it accepts a job;
- :func:`reference_markdown`: the parameter reference, generated.

Unknown keys are refused.  Only ``OP_ID`` itself is allowed besides the
parameters: RAPI's ``__version__`` is a key of RAPI request bodies, not of
opcodes, and RAPI removes it before it builds an opcode.
"""

from __future__ import annotations

from ganeti.core.opcodes.base import (
    COMMON_PARAMS,
    OP_ID_KEY,
    OpCode,
    Param,
    default_summary_format,
    haskell_show_double,
    reason_entry,
    reason_source,
    resolve_depends,
)
from ganeti.core.opcodes.checks import (
    INVALID_OP_SUMMARY,
    OPCODES,
    get,
    prepare_job_ops,
    reference_markdown,
    summary,
    validate,
    validate_job,
)
from ganeti.core.opcodes.kinds import Kind, KindMismatch

__all__ = [
    "COMMON_PARAMS", "OPCODES", "OP_ID_KEY", "INVALID_OP_SUMMARY", "Kind", "KindMismatch",
    "OpCode", "Param", "default_summary_format", "get", "haskell_show_double",
    "prepare_job_ops", "reason_entry", "reason_source", "reference_markdown",
    "resolve_depends", "summary", "validate", "validate_job",
]
