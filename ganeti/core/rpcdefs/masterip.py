"""The master IP: brought up and down on the master node, its netmask changed."""

from __future__ import annotations

import socket
from typing import Any

from ganeti.core.rpcdefs.base import TMO_FAST, RpcArg, call, is_int, is_str

_PARAM_KEYS = {"uuid", "ip", "netmask", "netdev", "ip_family"}


def is_master_params(v: Any) -> bool:
    """The shape of Ganeti's MasterNetworkParameters (the node checks the values)."""
    return (isinstance(v, dict) and set(v) <= _PARAM_KEYS
            and isinstance(v.get("ip"), str) and isinstance(v.get("netdev"), str)
            and is_int(v.get("netmask"))
            and v.get("ip_family", socket.AF_INET) in (socket.AF_INET, socket.AF_INET6)
            and (v.get("uuid") is None or isinstance(v.get("uuid"), str)))


_PARAMS = RpcArg("master_params", is_master_params,
                 "an object with the keys uuid, ip, netmask, netdev and ip_family "
                 "(Ganeti's MasterNetworkParameters)")
_EXTERNAL = RpcArg("use_external_mip_script", lambda v: isinstance(v, bool),
                   "true or false (run the administrator's master IP setup script)")

CALLS = [
    call("node_activate_master_ip", TMO_FAST,
         "Bring the master IP up on this node (the master IP setup script, 'start').",
         _PARAMS, _EXTERNAL),
    call("node_deactivate_master_ip", TMO_FAST,
         "Take the master IP down on this node (the master IP setup script, 'stop').",
         _PARAMS, _EXTERNAL),
    call("node_change_master_netmask", TMO_FAST,
         "Move the master IP from the old netmask to the new one on its device.",
         RpcArg("old_netmask", is_int, "an integer (prefix length)"),
         RpcArg("netmask", is_int, "an integer (prefix length)"),
         RpcArg("master_ip", is_str, "an IP address (string)"),
         RpcArg("master_netdev", is_str, "a network device name (string)")),
]
