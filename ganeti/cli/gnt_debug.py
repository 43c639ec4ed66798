"""gnt-debug: test opcodes and the lock monitor."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, UsageError, run_tool
from ganeti.core import constants as c

DESCRIPTION = "Ganeti debugging commands: delay (OP_TEST_DELAY), locks (the lock monitor)."

#: Fields of ``gnt-debug locks`` without ``-o``.
LOCKS_DEFAULT_FIELDS = ["name", "mode", "owner", "pending"]


def _duration(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def _setup_delay(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-master", dest="on_master", action="store_false",
                   help="do not sleep on the master")
    p.add_argument("-n", dest="on_nodes", action="append", default=[], metavar="NODE",
                   help="also sleep on this node (repeatable; needs the node daemon)")
    p.add_argument("-r", "--repeat", type=int, default=0, metavar="N",
                   help="sleep N more times (default: 0)")
    p.add_argument("-i", "--interruptible", action="store_true",
                   help="allow interrupting the sleep")
    p.add_argument("-l", "--no-locks", action="store_true",
                   help="take no locks while sleeping (default: the locks are taken)")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("duration", type=_duration, metavar="DURATION",
                   help="seconds to sleep (a decimal number)")


def cmd_delay(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit OP_TEST_DELAY and wait for it (unless --submit)."""
    if opts.repeat < 0:
        raise UsageError("-r/--repeat must not be negative")
    op: dict[str, Any] = {
        "OP_ID": "OP_TEST_DELAY",
        "duration": opts.duration,
        "on_master": opts.on_master,
        "on_nodes": list(opts.on_nodes),
        "repeat": opts.repeat,
        "interruptible": opts.interruptible,
        "no_locks": opts.no_locks,
    }
    jobs.submit_or_send(ctx, opts, op)
    return c.EXIT_SUCCESS


def _dash_if_empty(fn: table.Formatter) -> table.Formatter:
    def fmt(value: Any) -> str:
        return "-" if not value else fn(value)
    return fmt


def _format_pending(value: Any) -> str:
    return ", ".join(f"{mode}:{','.join(str(o) for o in owners)}" for mode, owners in value)


#: How ``gnt-debug locks`` shows the list fields.
LOCKS_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    "mode": (_dash_if_empty(str), False),
    "owner": (_dash_if_empty(lambda owners: ",".join(str(o) for o in owners)), False),
    "pending": (_dash_if_empty(_format_pending), False),
}


def _setup_locks(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LOCKS_DEFAULT_FIELDS)
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="repeat the listing every SECONDS until interrupted")


def cmd_locks(ctx: Context, opts: argparse.Namespace) -> int:
    """List the master daemon's locks: Query("lock", fields, null)."""
    fields = table.parse_fields(opts.output, LOCKS_DEFAULT_FIELDS)
    if opts.interval is not None and opts.interval <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    while True:
        code = table.generic_list(ctx, c.QR_LOCK, fields, None, opts.separator,
                                  not opts.no_headers, LOCKS_FORMAT, opts.verbose)
        if code != c.EXIT_SUCCESS or not opts.interval:
            return code
        ctx.out("")
        ctx.stdout.flush()
        time.sleep(opts.interval)


COMMANDS = [
    Command("delay", cmd_delay, "Run OP_TEST_DELAY (sleep in a job)", _setup_delay,
            "Submit a job with one OP_TEST_DELAY opcode and wait for it. As in Ganeti, "
            "the opcode takes locks unless -l/--no-locks is given."),
    Command("locks", cmd_locks, "Show the locks of the master daemon", _setup_locks),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-debug (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-debug", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
