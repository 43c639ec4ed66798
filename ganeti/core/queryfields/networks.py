"""The fields of query resource "network" (``gnt-network list-fields``).

Names, titles, kinds and meanings are Ganeti's; every value comes from the
config (a network's pool statistics from its reservation maps).
"""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table
from ganeti.core.queryfields.nodes import STRING_LIST, common_fields

_NULLABLE_TEXT = {"type": "string", "nullable": True}
#: ``[group name, NIC mode, NIC link, NIC VLAN]`` per connected group.
_GROUP_LIST = {"type": "array", "items": {"type": "array", "items": {"type": "string"},
                                          "minItems": 4, "maxItems": 4}}

NETWORK_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("name", "Network", c.QFT_TEXT, "Name"),
    FieldDecl("network", "Subnet", c.QFT_TEXT, "IPv4 subnet"),
    FieldDecl("gateway", "Gateway", c.QFT_OTHER, "IPv4 gateway", schema=_NULLABLE_TEXT),
    FieldDecl("network6", "IPv6Subnet", c.QFT_OTHER, "IPv6 subnet", schema=_NULLABLE_TEXT),
    FieldDecl("gateway6", "IPv6Gateway", c.QFT_OTHER, "IPv6 gateway", schema=_NULLABLE_TEXT),
    FieldDecl("mac_prefix", "MacPrefix", c.QFT_OTHER, "MAC address prefix",
              schema=_NULLABLE_TEXT),
    FieldDecl("free_count", "FreeCount", c.QFT_NUMBER, "Number of available addresses"),
    FieldDecl("reserved_count", "ReservedCount", c.QFT_NUMBER,
              "Number of reserved addresses"),
    FieldDecl("map", "Map", c.QFT_TEXT, "Actual mapping"),
    FieldDecl("external_reservations", "ExternalReservations", c.QFT_TEXT,
              "External reservations"),
    FieldDecl("group_cnt", "NodeGroups", c.QFT_NUMBER, "Number of nodegroups"),
    FieldDecl("group_list", "GroupList", c.QFT_OTHER,
              "List of nodegroups (group name, NIC mode, NIC link)", schema=_GROUP_LIST),
    FieldDecl("inst_cnt", "Instances", c.QFT_NUMBER, "Number of instances"),
    FieldDecl("inst_list", "InstanceList", c.QFT_OTHER, "List of instances",
              schema=STRING_LIST),
    *common_fields("Network"),
])

__all__ = ["NETWORK_FIELDS"]
