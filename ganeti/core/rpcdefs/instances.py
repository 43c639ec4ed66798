"""Instance calls: runtime state, start, shutdown, reboot and memory on the nodes
(served by ganeti/noded/backend/instances.py) and the migration steps (served by
ganeti/noded/backend/migration.py; Ganeti's names, arguments and timeouts).

The instance travels with its filled parameters
(:func:`ganeti.core.rpcdefs.encoders.instance_dict`); the OS script calls
(``instance_os_add``, ``instance_run_rename``) are in :mod:`.os`.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants
from ganeti.core.rpcdefs.base import (
    MAX_TIMEOUT,
    RPC_TMO_NORMAL,
    RPC_TMO_SLOW,
    RPC_TMO_URGENT,
    RpcArg,
    RpcCall,
    call,
    is_int,
    is_number,
)
from ganeti.core.rpcdefs.encoders import instance_dict


def _is_instance_dict(v: Any) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("name"), str)
            and all(isinstance(v.get(k), dict) for k in ("hvparams", "beparams", "osparams")))


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_reason(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, list) and len(x) == 3 for x in v)


def _instance_arg(name: str = "instance") -> RpcArg:
    return RpcArg(name, _is_instance_dict,
                  "an instance object with filled hvparams, beparams and osparams",
                  encode=instance_dict, per_node=True)  # its disks' dynamic parameters


#: The longest hold of ``instance_events`` (the node clamps to it) and the margin its
#: RPC timeout adds, so that a held call is never cut by its own timeout.
EVENTS_MAX_HOLD = 30.0
EVENTS_TIMEOUT_MARGIN = 30.0


def _events_timeout(args: Any) -> float:
    hold = args[1] if len(args) > 1 and is_number(args[1]) else EVENTS_MAX_HOLD
    return min(max(float(hold), 0.0), EVENTS_MAX_HOLD) + EVENTS_TIMEOUT_MARGIN


_REASON = RpcArg("reason", _is_reason, "a reason trail ([source, reason, timestamp], ...)")

CALLS: list[RpcCall] = [
    call("instance_info", RPC_TMO_URGENT,
         "One instance's runtime state on the node ({} if it does not run).",
         RpcArg("instance", lambda v: isinstance(v, str) and bool(v), "an instance name"),
         RpcArg("hname", lambda v: v in constants.HYPER_TYPES, "a hypervisor name"),
         RpcArg("hvparams", _is_dict, "the instance's hypervisor parameters")),
    call("all_instances_info", RPC_TMO_URGENT,
         "The runtime state of every instance running on the node.",
         RpcArg("hypervisor_list", _is_str_list, "a list of hypervisor names"),
         RpcArg("all_hvparams", _is_dict, "hypervisor name -> cluster hvparams")),
    call("instance_events", _events_timeout,
         "Instance lifecycle events after a serial; held until one comes or the hold ends.",
         RpcArg("since", lambda v: is_int(v) and v >= 0, "a serial (>= 0)"),
         RpcArg("timeout", lambda v: is_number(v) and 0 <= v <= MAX_TIMEOUT,
                f"seconds to hold the call (>= 0; the node holds at most "
                f"{EVENTS_MAX_HOLD:g})")),
    call("instance_list", RPC_TMO_URGENT,
         "The names of the instances running on the node.",
         RpcArg("hypervisor_list", _is_str_list, "a list of hypervisor names"),
         RpcArg("hvparams", _is_dict, "hypervisor name -> cluster hvparams")),
    call("instance_start", RPC_TMO_NORMAL,
         "Start an instance (nothing if it runs already).",
         _instance_arg("instance_hvp_bep"),
         RpcArg("startup_paused", lambda v: isinstance(v, bool), "a boolean"),
         _REASON),
    call("instance_shutdown", RPC_TMO_NORMAL,
         "Stop an instance (nothing if it does not run).",
         _instance_arg(),
         RpcArg("timeout", lambda v: is_number(v) and v >= 0, "seconds (>= 0)"),
         _REASON),
    call("instance_reboot", RPC_TMO_NORMAL,
         "Reboot a running instance (soft or hard).",
         _instance_arg("inst"),
         RpcArg("reboot_type", lambda v: v in constants.REBOOT_TYPES,
                "one of " + ", ".join(sorted(constants.REBOOT_TYPES))),
         RpcArg("shutdown_timeout", lambda v: is_number(v) and v >= 0, "seconds (>= 0)"),
         _REASON),
    call("hypervisor_validate_params", RPC_TMO_NORMAL,
         "Validate filled hypervisor parameters on the node (files, users, interfaces).",
         RpcArg("hvname", lambda v: v in constants.HYPER_TYPES, "a hypervisor name"),
         RpcArg("hvfull", _is_dict, "the filled hypervisor parameters")),
    call("instance_balloon_memory", RPC_TMO_NORMAL,
         "Set a running instance's memory (MiB).",
         _instance_arg(),
         RpcArg("memory", lambda v: is_int(v) and v > 0, "a positive number of MiB")),
    call("migration_info", RPC_TMO_NORMAL,
         "Gather the information necessary to prepare an instance migration.",
         _instance_arg()),
    call("accept_instance", RPC_TMO_NORMAL,
         "Prepare a node to accept an instance.",
         _instance_arg(),
         RpcArg("info", _is_str, "the answer of migration_info"),
         RpcArg("target", _is_nonempty_str, "the target's address (usually an IP address)")),
    call("instance_finalize_migration_dst", RPC_TMO_NORMAL,
         "Finalize any target-node migration specific operation.",
         _instance_arg(),
         RpcArg("info", _is_str, "the answer of migration_info"),
         RpcArg("success", _is_bool, "whether the migration was a success")),
    call("instance_migrate", RPC_TMO_SLOW,
         "Migrate an instance.",
         RpcArg("cluster_name", _is_nonempty_str, "the cluster name"),
         _instance_arg(),
         RpcArg("target", _is_nonempty_str, "the target's address"),
         RpcArg("live", _is_bool, "whether the migration is live")),
    call("instance_finalize_migration_src", RPC_TMO_SLOW,
         "Finalize the instance migration on the source node.",
         _instance_arg(),
         RpcArg("success", _is_bool, "whether the migration succeeded"),
         RpcArg("live", _is_bool, "whether the migration was live")),
    call("instance_get_migration_status", RPC_TMO_SLOW,
         "Report migration status.",
         _instance_arg()),
]
