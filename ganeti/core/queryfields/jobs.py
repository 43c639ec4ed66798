"""The fields of query resource "job" (``gnt-job list-fields``)."""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table

#: A job timestamp as the remote API answers it.
TIMESTAMP_SCHEMA: dict[str, Any] = {
    "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
    "nullable": True, "description": "[seconds, microseconds]"}
STATUS_SCHEMA: dict[str, Any] = {"type": "string", "enum": list(c.JOB_STATUS_ORDER)}
_WAIT_REASON = ("Why the queued job waits: a filter rule, a rate limit or a dependency "
                "(empty when it does not wait)")
_TS_DOC = "(tuple containing seconds and microseconds)"

JOB_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("id", "ID", c.QFT_NUMBER, "Job ID"),
    FieldDecl("status", "Status", c.QFT_TEXT, "Job status", schema=STATUS_SCHEMA),
    FieldDecl("priority", "Priority", c.QFT_NUMBER,
              f"Current job priority ({c.OP_PRIO_LOWEST} to {c.OP_PRIO_HIGHEST})"),
    FieldDecl("ops", "OpCodes", c.QFT_OTHER, "List of all opcodes",
              schema={"type": "array", "items": {"type": "object"}, "description": "Opcodes"}),
    FieldDecl("opresult", "OpCode_result", c.QFT_OTHER, "List of opcodes results",
              schema={"type": "array", "items": {},
                      "description": "Per opcode: its result, or [error class, [args]]"}),
    FieldDecl("opstatus", "OpCode_status", c.QFT_OTHER, "List of opcodes status",
              schema={"type": "array", "items": STATUS_SCHEMA}),
    FieldDecl("oplog", "OpCode_log", c.QFT_OTHER, "List of opcode output logs",
              schema={"type": "array", "items": {"type": "array"}, "description":
                      "Per opcode: [serial, [sec, usec], type, message] entries"}),
    FieldDecl("opstart", "OpCode_start", c.QFT_OTHER,
              "List of opcode start timestamps (before acquiring locks)"),
    FieldDecl("opexec", "OpCode_exec", c.QFT_OTHER,
              "List of opcode execution start timestamps (after acquiring locks)"),
    FieldDecl("opend", "OpCode_end", c.QFT_OTHER, "List of opcode execution end timestamps"),
    FieldDecl("oppriority", "OpCode_prio", c.QFT_OTHER, "List of opcode priorities"),
    FieldDecl("summary", "Summary", c.QFT_OTHER, "List of per-opcode summaries",
              schema={"type": "array", "items": {"type": "string"}}),
    FieldDecl("received_ts", "Received", c.QFT_OTHER,
              f"Timestamp of when job was received {_TS_DOC}", split_timestamp=True,
              schema=TIMESTAMP_SCHEMA),
    FieldDecl("start_ts", "Start", c.QFT_OTHER, f"Timestamp of job start {_TS_DOC}",
              split_timestamp=True, schema=TIMESTAMP_SCHEMA),
    FieldDecl("end_ts", "End", c.QFT_OTHER, f"Timestamp of job end {_TS_DOC}",
              split_timestamp=True, schema=TIMESTAMP_SCHEMA),
    FieldDecl("archived", "Archived", c.QFT_BOOL, "Whether job is archived"),
    # Ours: answered when named (gnt-job list -o wait_reason, the dashboard), left out
    # of the field list (list-fields, QueryFields without names), which stays Ganeti's.
    FieldDecl("wait_reason", "WaitReason", c.QFT_TEXT, _WAIT_REASON,
              schema={"type": "string", "description": _WAIT_REASON}, extension=True),
])

__all__ = ["JOB_FIELDS", "STATUS_SCHEMA", "TIMESTAMP_SCHEMA"]
