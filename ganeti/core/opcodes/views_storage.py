"""Typed, read-only views of the opcodes of the table's storage part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpNodeModifyStorage(OpView):
    """OP_NODE_MODIFY_STORAGE: Modify the properties of a storage unit."""

    OP_ID: ClassVar[str] = "OP_NODE_MODIFY_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"changes", "node_name", "storage_type"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "changes", "node_name", "priority", "reason", "storage_type"
    })
    node_name: str
    node_uuid: str | None = None
    storage_type: str
    name: str | None = None
    changes: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class OpNodeQueryvols(OpView):
    """OP_NODE_QUERYVOLS: Get the list of volumes on nodes."""

    OP_ID: ClassVar[str] = "OP_NODE_QUERYVOLS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "output_fields", "priority", "reason"})
    output_fields: list[str]
    nodes: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpNodeQueryStorage(OpView):
    """OP_NODE_QUERY_STORAGE: Get information on storage units of nodes."""

    OP_ID: ClassVar[str] = "OP_NODE_QUERY_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"output_fields"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "output_fields", "priority", "reason"})
    output_fields: list[str]
    storage_type: str | None = None
    nodes: list[str] = field(default_factory=lambda: [])
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OpRepairNodeStorage(OpView):
    """OP_REPAIR_NODE_STORAGE: Repair a storage unit (a volume group) of a node."""

    OP_ID: ClassVar[str] = "OP_REPAIR_NODE_STORAGE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"node_name", "storage_type"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "ignore_consistency", "node_name", "priority", "reason", "storage_type"
    })
    node_name: str
    node_uuid: str | None = None
    storage_type: str
    name: str | None = None
    ignore_consistency: bool = False
