"""Out-of-band management: the node's OOB program, run by the master's node daemon."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ganeti.core import constants
from ganeti.core.rpcdefs.base import (
    TMO_FAST,
    TMO_SLOW,
    RpcArg,
    call,
    is_int,
    is_nonempty_str,
    is_wire_path,
)


def _oob_timeout(args: Sequence[Any]) -> float:
    """The program's own timeout plus a margin for the round trip."""
    return float(args[3]) + TMO_FAST if len(args) == 4 and is_int(args[3]) else TMO_FAST


CALLS = [
    call("run_oob", _oob_timeout,
         "Run '<oob_program> <command> <node>' with a timeout; its JSON output (or null).",
         RpcArg("oob_program", is_wire_path, "an absolute normalised path"),
         RpcArg("command", lambda v: v in constants.OOB_COMMANDS, "an out-of-band command "
                "(power-on, power-off, power-cycle, power-status, health)"),
         RpcArg("remote_node", is_nonempty_str, "a node name (non-empty string)"),
         RpcArg("timeout", lambda v: is_int(v) and 0 < v <= TMO_SLOW,
                f"a number of seconds (1..{TMO_SLOW})")),
]
