"""Typed, read-only views of the parameters every opcode has.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class OpView:
    """The parameters every opcode has."""

    OP_ID: ClassVar[str] = ""
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"priority", "reason"})
    dry_run: bool | None = None
    debug_level: int | None = None
    priority: int = 0
    depends: list[list[Any]] | None = None
    comment: str | None = None
    reason: list[list[Any]] = field(default_factory=list)
