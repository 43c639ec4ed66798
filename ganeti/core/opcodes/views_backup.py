"""Typed, read-only views of the opcodes of the table's backup part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpBackupExport(OpView):
    """OP_BACKUP_EXPORT: Export an instance."""

    OP_ID: ClassVar[str] = "OP_BACKUP_EXPORT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "compress", "ignore_remove_failures", "instance_name", "long_sleep", "mode", "priority",
        "reason", "remove_instance", "shutdown", "shutdown_timeout"
    })
    instance_name: str
    instance_uuid: str | None = None
    compress: str = "none"
    shutdown_timeout: int = 120
    target_node: Any = None
    target_node_uuid: str | None = None
    shutdown: bool = True
    remove_instance: bool = False
    ignore_remove_failures: bool = False
    mode: str = "local"
    x509_key_name: list[Any] | None = None
    destination_x509_ca: str | None = None
    long_sleep: bool = False


@dataclass(frozen=True, kw_only=True)
class OpBackupPrepare(OpView):
    """OP_BACKUP_PREPARE: Prepare an instance export."""

    OP_ID: ClassVar[str] = "OP_BACKUP_PREPARE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "mode"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"instance_name", "mode", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None
    mode: str


@dataclass(frozen=True, kw_only=True)
class OpBackupQuery(OpView):
    """OP_BACKUP_QUERY: Compute the list of exported images."""

    OP_ID: ClassVar[str] = "OP_BACKUP_QUERY"
    REQUIRED: ClassVar[frozenset[str]] = frozenset()
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"nodes", "priority", "reason", "use_locking"})
    nodes: list[str] = field(default_factory=lambda: [])
    use_locking: bool = False


@dataclass(frozen=True, kw_only=True)
class OpBackupRemove(OpView):
    """OP_BACKUP_REMOVE: Remove an instance's export."""

    OP_ID: ClassVar[str] = "OP_BACKUP_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"instance_name", "priority", "reason"})
    instance_name: str
    instance_uuid: str | None = None
