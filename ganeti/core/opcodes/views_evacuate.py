"""Typed, read-only views of the opcodes of the table's evacuate part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpGroupEvacuate(OpView):
    """OP_GROUP_EVACUATE: Evacuate a node group in the cluster."""

    OP_ID: ClassVar[str] = "OP_GROUP_EVACUATE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "early_release", "force_failover", "group_name", "priority", "reason", "sequential"
    })
    group_name: str
    early_release: bool = False
    iallocator: str | None = None
    target_groups: list[str] | None = None
    sequential: bool = False
    force_failover: bool = False


@dataclass(frozen=True, kw_only=True)
class OpInstanceChangeGroup(OpView):
    """OP_INSTANCE_CHANGE_GROUP: Moves an instance to another node group."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_CHANGE_GROUP"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "early_release", "instance_name", "priority", "reason"
    })
    instance_name: str
    instance_uuid: str | None = None
    early_release: bool = False
    iallocator: str | None = None
    target_groups: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class OpInstanceMove(OpView):
    """OP_INSTANCE_MOVE: Move an instance by copying its disks to another node."""

    OP_ID: ClassVar[str] = "OP_INSTANCE_MOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"instance_name", "target_node"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "compress", "ignore_consistency", "ignore_ipolicy", "instance_name", "priority", "reason",
        "shutdown_timeout", "target_node"
    })
    instance_name: str
    instance_uuid: str | None = None
    shutdown_timeout: int = 120
    ignore_ipolicy: bool = False
    target_node: str
    target_node_uuid: str | None = None
    compress: str = "none"
    ignore_consistency: bool = False


@dataclass(frozen=True, kw_only=True)
class OpNodeEvacuate(OpView):
    """OP_NODE_EVACUATE: Evacuate instances off a number of nodes."""

    OP_ID: ClassVar[str] = "OP_NODE_EVACUATE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"mode", "node_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "early_release", "mode", "node_name", "priority", "reason"
    })
    early_release: bool = False
    node_name: str
    node_uuid: str | None = None
    remote_node: str | None = None
    remote_node_uuid: str | None = None
    iallocator: str | None = None
    mode: str
    ignore_soft_errors: bool | None = None
