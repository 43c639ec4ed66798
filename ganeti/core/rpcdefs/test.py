"""Test calls (Ganeti's gnt-debug)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ganeti.core.rpcdefs.base import TMO_FAST, TMO_SLOW, RpcArg, call, is_number


def _is_duration(v: Any) -> bool:
    return is_number(v) and 0 <= v <= TMO_SLOW


def _delay_timeout(args: Sequence[Any]) -> float:
    """Ganeti's: the delay plus a margin (ours: TMO_FAST)."""
    return float(args[0]) + TMO_FAST if len(args) == 1 and is_number(args[0]) else TMO_FAST


CALLS = [
    call("test_delay", _delay_timeout, "Wait the given number of seconds, then succeed.",
         RpcArg("duration", _is_duration, f"a number of seconds (0..{TMO_SLOW})")),
]
