"""OS definition calls: diagnose and validate the OS definitions of a node, run their
scripts for an instance (served by ganeti/noded/backend/osdefs.py).

``instance_os_add`` is Ganeti's longest call (a whole day: an OS installation
copies an image) and shows the master-side encoder: the instance travels with
its filled parameters (:func:`ganeti.core.rpcdefs.encoders.instance_dict`),
temporary OS parameters on top (``InstanceArg.osp``; secret ones as
``InstanceArg.osp_secret``, which the node passes to the script and never logs).

``os_get`` is not in Ganeti 3.0 (2.x had it): one OS definition as the node
reads it, for the master's checks that need one OS, not all.

``os_output`` is ours: the output of a running (or recently finished) OS
script, so the master can stream it into the job's log.  The script calls
take the run id it is asked by as an optional last argument (a node daemon
that does not know ``os_output`` is called without it).
"""

from __future__ import annotations

import re
from typing import Any

from ganeti.core.rpcdefs.base import (
    RPC_TMO_1DAY,
    RPC_TMO_FAST,
    RPC_TMO_SLOW,
    TMO_FAST,
    RpcArg,
    RpcCall,
    call,
    is_int,
)
from ganeti.core.rpcdefs.instances import _instance_arg

#: Ganeti's validation checks (OS_VALIDATE_CALLS): only the parameters.
OS_VALIDATE_PARAMETERS = "parameters"
OS_VALIDATE_CALLS = frozenset({OS_VALIDATE_PARAMETERS})

#: An OS name as the wire carries it: a directory name, optionally ``+variant``.
OS_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(\+[A-Za-z0-9_.-]+)?")


def is_os_name(v: Any) -> bool:
    """An OS name (``name`` or ``name+variant``) that can be a directory name."""
    return isinstance(v, str) and len(v) <= 255 and OS_NAME_RE.fullmatch(v) is not None


#: A run id the master chooses for an OS script run (``os_output``).
RUN_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def is_run_id(v: Any) -> bool:
    """A run id: 1 to 64 letters, digits, ``_`` or ``-``."""
    return isinstance(v, str) and RUN_ID_RE.fullmatch(v) is not None


def _is_output(v: Any) -> Any:
    """``os_output``'s answer: null (unknown run) or its object."""
    if v is None:
        return v
    if not (isinstance(v, dict) and isinstance(v.get("lines"), list)
            and all(isinstance(x, str) for x in v["lines"])
            and is_int(v.get("next")) and v["next"] >= 0
            and isinstance(v.get("done"), bool) and isinstance(v.get("truncated"), bool)
            and (v.get("log_file") is None or isinstance(v.get("log_file"), str))):
        raise ValueError("not an OS output object")
    return v


def _is_checks(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_str_dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) for k in v)


def _is_env(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str)
                                       for k, x in v.items())


_DEBUG = RpcArg("debug", lambda v: is_int(v) and 0 <= v <= 2, "a debug level (0..2)")
_RUN_ID = RpcArg("run_id", is_run_id, "a run id (1 to 64 of A-Z a-z 0-9 _ -)",
                 optional=True)

CALLS: list[RpcCall] = [
    call("os_diagnose", RPC_TMO_FAST,
         "Every OS definition on the node's search path: [name, path, status, diagnose, "
         "variants, parameters, api_versions, trusted] each."),
    call("os_validate", RPC_TMO_FAST,
         "Check an OS name (variant) and run its verify script on parameters; false if "
         "the OS is missing and not required.",
         RpcArg("required", lambda v: isinstance(v, bool), "a boolean"),
         RpcArg("name", is_os_name, "an OS name (name or name+variant)"),
         RpcArg("checks", _is_checks, "a list of checks (" +
                ", ".join(sorted(OS_VALIDATE_CALLS)) + ")"),
         RpcArg("params", _is_str_dict, "an object of OS parameters"),
         RpcArg("force_variant", lambda v: isinstance(v, bool), "a boolean")),
    call("os_get", RPC_TMO_FAST,
         "One OS definition as the node reads it (an error if it is not valid).",
         RpcArg("name", is_os_name, "an OS name (name or name+variant)")),
    call("instance_os_add", RPC_TMO_1DAY,
         "Run the instance's OS create script (reinstall: INSTANCE_REINSTALL=1).",
         _instance_arg("instance_osp"),
         RpcArg("reinstall", lambda v: isinstance(v, bool), "a boolean"),
         _DEBUG, _RUN_ID),
    call("instance_run_rename", RPC_TMO_SLOW,
         "Run the instance's OS rename script (OLD_INSTANCE_NAME: the old name).",
         _instance_arg(),
         RpcArg("old_name", lambda v: isinstance(v, str) and bool(v), "an instance name"),
         _DEBUG, _RUN_ID),
    call("os_output", TMO_FAST,
         "The output of an OS script run (run_id of instance_os_add/instance_run_rename) "
         "from line offset on: {lines, next, done, truncated, log_file}, or null if the "
         "node does not know the run (not started yet, or long finished).",
         RpcArg("run_id", is_run_id, "a run id (1 to 64 of A-Z a-z 0-9 _ -)"),
         RpcArg("offset", lambda v: is_int(v) and 0 <= v <= 10**9, "a line offset (>= 0)"),
         decode=_is_output),
    call("os_export", RPC_TMO_FAST,
         "Pack the instance's OS definition and its environment into a .tgz on the node; "
         "its path.",
         _instance_arg(),
         RpcArg("override_env", _is_env, "an object of environment strings")),
]

__all__ = ["CALLS", "OS_NAME_RE", "OS_VALIDATE_CALLS", "OS_VALIDATE_PARAMETERS",
           "RUN_ID_RE", "is_os_name", "is_run_id"]
