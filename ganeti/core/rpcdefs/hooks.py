"""Hooks: the per-opcode hook scripts run by noded (``hooks_runner``, Ganeti's)."""

from __future__ import annotations

from ganeti.core import hooks
from ganeti.core.rpcdefs.base import RPC_TMO_NORMAL, RpcArg, RpcCall, call

CALLS: list[RpcCall] = [
    # Ganeti's timeout for the whole run (its RPC_TMO_NORMAL); each script also
    # has its own (ganeti/noded/backend/hooks.py).
    call("hooks_runner", RPC_TMO_NORMAL,
         "Run the scripts of HOOKS_BASE_DIR/<hpath>-<phase>.d with the environment given; "
         "[[script, status (0 skip, 1 fail, 2 success), output], ...].",
         RpcArg("hpath", hooks.is_hpath, "a hooks path (lower-case words joined by dashes)"),
         RpcArg("phase", hooks.is_phase, "'pre' or 'post'"),
         RpcArg("env", hooks.is_env, "an object of GANETI_* (or PATH) names to strings "
                "without NUL bytes"),
         decode=hooks.check_results),
]
