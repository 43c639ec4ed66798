"""``gnt-cluster watcher pause DURATION|continue|info``: the watcher's pause.

As Ganeti: ``pause`` sends ``SetWatcherPause(now + DURATION)`` (DURATION a
time specification: ``30``, ``30s``, ``5m``, ``4h``, ``2d``, ``1w``) and shows
the answer; ``continue`` sends ``SetWatcherPause(null)``; ``info`` reads the
``watcher_pause`` configuration value.  Times are shown with ``ctime``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants, errors

ACTIONS = ("pause", "continue", "info")


def setup(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gnt-cluster watcher``."""
    p.add_argument("action", choices=ACTIONS,
                   help="pause: pause the watcher for DURATION; continue: end the pause; "
                        "info: show until when the watcher is paused")
    p.add_argument("duration", nargs="?", metavar="DURATION",
                   help="with pause: how long, e.g. 30m, 1h, 4h, 2d (plain number: seconds)")


def pause_message(until: Any, now: float) -> str:
    """Ganeti's line for a pause end (or none, or one in the past)."""
    if not isinstance(until, (int, float)) or isinstance(until, bool) or until < now:
        return "The watcher is not paused."
    return f"The watcher is paused until {time.ctime(until)}."


#: The client's clock (tests replace it).
clock: Callable[[], float] = time.time


def cmd_watcher(ctx: Context, opts: argparse.Namespace) -> int:
    """Pause the watcher, end its pause, or show it."""
    client = ctx.luxi()
    if opts.action == "continue":
        client.call("SetWatcherPause", None)
        ctx.out("The watcher is no longer paused.")
    elif opts.action == "pause":
        if opts.duration is None:
            raise errors.OpPrereqError("Missing pause duration", errors.ECODE_INVAL)
        seconds = jobs.parse_timespec(opts.duration)
        result = client.call("SetWatcherPause", clock() + seconds)
        ctx.out(pause_message(result, clock()))
    else:
        (until,) = client.query_config_values(["watcher_pause"])
        ctx.out(pause_message(until, clock()))
    return constants.EXIT_SUCCESS


DESCRIPTION = ("Change or show the watcher's pause: 'pause DURATION' pauses ganeti-watcher "
               "(and masterd's watcher service) on the master and the master candidates "
               "for DURATION (30, 30s, 5m, 1h, 2d, 1w); 'continue' ends the pause; 'info' "
               "shows until when it is paused.")
