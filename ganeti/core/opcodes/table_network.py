"""Opcode declarations: network opcodes.

Declared as in :mod:`ganeti.core.opcodes.table` (whose shared kinds this
module may import); :mod:`ganeti.core.opcodes.catalog` joins the parts.
Parameters and defaults are Ganeti 3.0's (which has no OP_NETWORK_QUERY:
networks are queried through OP_QUERY and LUXI).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from ganeti.core import constants as c
from ganeti.core.opcodes import kinds
from ganeti.core.opcodes.base import OpCode, opt, req
from ganeti.core.opcodes.kinds import Kind
from ganeti.core.opcodes.table import GROUP_NAME

#: What ``gnt-network modify`` passes to clear an optional value.
VALUE_NONE = "none"


def _address_kind(name: str, parse: Callable[[str], Any], allow_none: bool = False) -> Kind:
    def test(value: Any) -> bool:
        if not isinstance(value, str):
            return False
        if allow_none and value == VALUE_NONE:
            return True
        try:
            parse(value)
        except ValueError:
            return False
        return True
    return kinds.simple(name, test, "str")


def _ipv4_network(text: str) -> Any:
    return ipaddress.IPv4Network(text, strict=False)


def _ipv6_network(text: str) -> Any:
    return ipaddress.IPv6Network(text, strict=False)


IPV4_NETWORK = _address_kind("an IPv4 network", _ipv4_network)
IPV4_ADDRESS = _address_kind("an IPv4 address", ipaddress.IPv4Address)
IPV6_NETWORK = _address_kind("an IPv6 network", _ipv6_network)
IPV6_ADDRESS = _address_kind("an IPv6 address", ipaddress.IPv6Address)
IPV4_ADDRESS_LIST = kinds.list_of(IPV4_ADDRESS, name="a list of IPv4 addresses")
NIC_MODE = kinds.one_of(c.NIC_VALID_MODES, "a NIC mode:")
NETWORK_NAME = kinds.PRINTABLE_NAME
_MAC_PREFIX = kinds.maybe(kinds.STRING)

OP_NETWORK_ADD = OpCode(
    "OP_NETWORK_ADD", "Add an IP network to the cluster",
    (
        req("network_name", NETWORK_NAME, "Network name"),
        req("network", IPV4_NETWORK, "Network address (IPv4 subnet)"),
        opt("gateway", kinds.maybe(IPV4_ADDRESS), "Network gateway (IPv4 address)"),
        opt("network6", kinds.maybe(IPV6_NETWORK), "Network address (IPv6 subnet)"),
        opt("gateway6", kinds.maybe(IPV6_ADDRESS), "Network gateway (IPv6 address)"),
        opt("mac_prefix", _MAC_PREFIX,
            "Network specific MAC prefix (that overrides the cluster one)"),
        opt("add_reserved_ips", kinds.maybe(IPV4_ADDRESS_LIST),
            "Which IP addresses to reserve"),
        opt("conflicts_check", kinds.BOOL,
            "Whether to check for conflicting IP addresses", True),
        opt("tags", kinds.list_of(kinds.NON_EMPTY_STRING, name="a list of non-empty strings"),
            "Network tags", []),
    ),
    summary_param="network_name")

OP_NETWORK_REMOVE = OpCode(
    "OP_NETWORK_REMOVE", "Remove a network that no node group is connected to",
    (
        req("network_name", NETWORK_NAME, "Network name"),
        opt("force", kinds.BOOL, "Whether to force the operation", False),
    ),
    summary_param="network_name")

OP_NETWORK_SET_PARAMS = OpCode(
    "OP_NETWORK_SET_PARAMS", "Change the parameters of a network (not its IPv4 subnet)",
    (
        req("network_name", NETWORK_NAME, "Network name"),
        opt("gateway", kinds.maybe(_address_kind("an IPv4 address or \"none\"",
                                                 ipaddress.IPv4Address, True)),
            "Network gateway (IPv4 address; \"none\" removes it)"),
        opt("network6", kinds.maybe(_address_kind("an IPv6 network or \"none\"",
                                                  _ipv6_network, True)),
            "Network address (IPv6 subnet; \"none\" removes it)"),
        opt("gateway6", kinds.maybe(_address_kind("an IPv6 address or \"none\"",
                                                  ipaddress.IPv6Address, True)),
            "Network gateway (IPv6 address; \"none\" removes it)"),
        opt("mac_prefix", _MAC_PREFIX,
            "Network specific MAC prefix (\"none\": use the cluster's)"),
        opt("add_reserved_ips", kinds.maybe(IPV4_ADDRESS_LIST),
            "Which external IP addresses to reserve"),
        opt("remove_reserved_ips", kinds.maybe(IPV4_ADDRESS_LIST),
            "Which external IP addresses to release"),
    ),
    summary_param="network_name")

OP_NETWORK_CONNECT = OpCode(
    "OP_NETWORK_CONNECT", "Connect a network to a node group with NIC mode, link and VLAN",
    (
        req("group_name", GROUP_NAME, "Group name"),
        req("network_name", NETWORK_NAME, "Network name"),
        req("network_mode", NIC_MODE, "Network mode when connecting to a group"),
        req("network_link", kinds.NON_EMPTY_STRING, "Network link when connecting to a group"),
        opt("network_vlan", kinds.STRING, "Network VLAN when connecting to a group", ""),
        opt("conflicts_check", kinds.BOOL,
            "Whether to check for conflicting IP addresses", True),
    ),
    summary_param="network_name")

OP_NETWORK_DISCONNECT = OpCode(
    "OP_NETWORK_DISCONNECT", "Disconnect a network from a node group",
    (
        req("group_name", GROUP_NAME, "Group name"),
        req("network_name", NETWORK_NAME, "Network name"),
    ),
    summary_param="network_name")

#: The opcodes of this part, in the order of the reference.
OPCODES: tuple[OpCode, ...] = (OP_NETWORK_ADD, OP_NETWORK_REMOVE, OP_NETWORK_SET_PARAMS,
                               OP_NETWORK_CONNECT, OP_NETWORK_DISCONNECT)
