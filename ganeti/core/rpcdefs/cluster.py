"""Cluster and node calls: version, node information, verification, membership roles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ganeti.core.rpcdefs.base import (
    TMO_FAST,
    TMO_NORMAL,
    RpcArg,
    call,
    is_int,
    is_nonempty_str,
    is_opt_number,
    is_wire_path,
)

# node_verify: the checks a master may ask for, each with the shape of its value.
VERIFY_CHECKS: dict[str, Callable[[Any], bool]] = {
    "version": lambda v: isinstance(v, bool),
    "filelist": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    "hostname": lambda v: isinstance(v, bool),
    "time": lambda v: isinstance(v, bool),
    "ssconf": lambda v: isinstance(v, bool),
    "nodesetup": lambda v: isinstance(v, bool),
    "client_cert": lambda v: isinstance(v, bool),
    "hvinfo": lambda v: isinstance(v, bool),
    "accepted_storage_paths": lambda v: isinstance(v, bool),
    "userscripts": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    "oob_paths": lambda v: isinstance(v, list) and all(is_wire_path(p) for p in v),
    # the directory as configured (Ganeti keeps '/boot/' as given; the node judges it)
    "file_storage_path": lambda v: _is_configured_dir(v),
    "shared_file_storage_path": lambda v: _is_configured_dir(v),
    "node_net_test": lambda v: isinstance(v, list) and all(
        isinstance(e, list) and len(e) == 3 and is_nonempty_str(e[0])
        and is_nonempty_str(e[1]) and is_int(e[2]) and 0 < e[2] < 65536 for e in v),
    "lvlist": lambda v: is_nonempty_str(v) and len(v) <= 128,
    "vglist": lambda v: v is None or isinstance(v, bool),
    "file_storage_files": lambda v: isinstance(v, list) and len(v) <= 16
    and all(is_wire_path(p) for p in v),
}


def _is_configured_dir(v: Any) -> bool:
    return is_nonempty_str(v) and "\0" not in v and len(v) <= 4096


def _is_verify_checks(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(k, str) and k in VERIFY_CHECKS and VERIFY_CHECKS[k](x) for k, x in v.items())


CALLS = [
    call("version", TMO_FAST, "The node's internode protocol version (PROTOCOL_VERSION)."),
    call("node_info", TMO_FAST,
         "Memory (MiB), CPUs and the free/total space (MiB) of the file storage directory."),
    call("node_verify", TMO_NORMAL,
         "Answer the checks asked for (see ganeti/noded/backend/verify.py).",
         RpcArg("checks", _is_verify_checks,
                "an object with the optional keys version, hostname, time, ssconf, "
                "nodesetup, client_cert, hvinfo, accepted_storage_paths (true/false), "
                "filelist, userscripts, oob_paths (lists of absolute normalised paths), "
                "file_storage_path, shared_file_storage_path (a directory as configured), "
                "node_net_test "
                "(a list of [name, ip, port]), lvlist (a volume group name) and "
                "file_storage_files (a list of paths)"),
         RpcArg("cluster_name", is_nonempty_str, "the cluster's name (non-empty string)")),
    call("node_leave_cluster", TMO_NORMAL,
         "Remove the cluster's files from this node (server.pem last), then stop noded."),
    call("node_demote_from_mc", TMO_FAST,
         "Back up and remove config.data (the node is no longer a master candidate)."),
    call("set_watcher_pause", TMO_NORMAL,
         "Write DATA_DIR/watcher.pause (the end of the pause), or remove it (null).",
         RpcArg("until", is_opt_number, "a time in seconds or null")),
]
