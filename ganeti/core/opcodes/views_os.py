"""Typed, read-only views of the opcodes of the table's os part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpExtStorageDiagnose(OpView):
    """OP_EXT_STORAGE_DIAGNOSE: Compute the list of external storage providers."""

    OP_ID: ClassVar[str] = "OP_EXT_STORAGE_DIAGNOSE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"names", "output_fields", "priority", "reason"})
    output_fields: list[str]
    names: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpOsDiagnose(OpView):
    """OP_OS_DIAGNOSE: Compute the list of guest operating systems."""

    OP_ID: ClassVar[str] = "OP_OS_DIAGNOSE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"names", "output_fields", "priority", "reason"})
    output_fields: list[str]
    names: list[str] = field(default_factory=lambda: [])
