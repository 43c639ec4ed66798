"""Typed, read-only views of the opcodes of the table's network part.

GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ganeti.core.opcodes.views_base import OpView


@dataclass(frozen=True, kw_only=True)
class OpNetworkAdd(OpView):
    """OP_NETWORK_ADD: Add an IP network to the cluster."""

    OP_ID: ClassVar[str] = "OP_NETWORK_ADD"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network", "network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "conflicts_check", "network", "network_name", "priority", "reason", "tags"
    })
    network_name: str
    network: str
    gateway: str | None = None
    network6: str | None = None
    gateway6: str | None = None
    mac_prefix: str | None = None
    add_reserved_ips: list[str] | None = None
    conflicts_check: bool = True
    tags: list[str] = field(default_factory=lambda: [])


@dataclass(frozen=True, kw_only=True)
class OpNetworkConnect(OpView):
    """OP_NETWORK_CONNECT: Connect a network to a node group with NIC mode, link and VLAN."""

    OP_ID: ClassVar[str] = "OP_NETWORK_CONNECT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({
        "group_name", "network_link", "network_mode", "network_name"
    })
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "conflicts_check", "group_name", "network_link", "network_mode", "network_name",
        "network_vlan", "priority", "reason"
    })
    group_name: str
    network_name: str
    network_mode: str
    network_link: str
    network_vlan: str = ""
    conflicts_check: bool = True


@dataclass(frozen=True, kw_only=True)
class OpNetworkDisconnect(OpView):
    """OP_NETWORK_DISCONNECT: Disconnect a network from a node group."""

    OP_ID: ClassVar[str] = "OP_NETWORK_DISCONNECT"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"group_name", "network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({
        "group_name", "network_name", "priority", "reason"
    })
    group_name: str
    network_name: str


@dataclass(frozen=True, kw_only=True)
class OpNetworkRemove(OpView):
    """OP_NETWORK_REMOVE: Remove a network that no node group is connected to."""

    OP_ID: ClassVar[str] = "OP_NETWORK_REMOVE"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"force", "network_name", "priority", "reason"})
    network_name: str
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class OpNetworkSetParams(OpView):
    """OP_NETWORK_SET_PARAMS: Change the parameters of a network (not its IPv4 subnet)."""

    OP_ID: ClassVar[str] = "OP_NETWORK_SET_PARAMS"
    REQUIRED: ClassVar[frozenset[str]] = frozenset({"network_name"})
    NOT_NULL: ClassVar[frozenset[str]] = frozenset({"network_name", "priority", "reason"})
    network_name: str
    gateway: str | None = None
    network6: str | None = None
    gateway6: str | None = None
    mac_prefix: str | None = None
    add_reserved_ips: list[str] | None = None
    remove_reserved_ips: list[str] | None = None
