"""``gnt-node health`` and ``gnt-node power``: out-of-band commands (OP_OOB_COMMAND).

Output, confirmations and exit codes are Ganeti's: a ``Node``/``Status``
table (the header's last column padded, as Ganeti's ``GenerateTable``),
``(unavail)`` for a node without an out-of-band program and ``(nodata)`` for
one whose program failed, exit 1 if any node had no answer.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c

#: ``gnt-node power`` sub-commands.
POWER_COMMANDS = ("on", "off", "cycle", "status")
#: Commands that need node names and a confirmation (or --force).
_ASK = (c.OOB_POWER_ON, c.OOB_POWER_OFF, c.OOB_POWER_CYCLE)
_RESULT_TEXT = {c.RS_UNKNOWN: "(unknown)", c.RS_NODATA: "(nodata)",
                c.RS_UNAVAIL: "(unavail)", c.RS_OFFLINE: "(offline)"}


def generate_table(rows: Sequence[Sequence[str]], header: bool,
                   separator: str | None) -> list[str]:
    """Node/Status lines as Ganeti's ``GenerateTable`` prints them."""
    titles = ["Node", "Status"]
    if separator is not None:
        lines = [separator.join(titles)] if header else []
        return lines + [separator.join(row) for row in rows]
    widths = [max([len(t) if header else 0] + [len(row[i]) for row in rows])
              for i, t in enumerate(titles)]
    lines = [" ".join(t.ljust(w) for t, w in zip(titles, widths, strict=True))] if header else []
    for row in rows:
        lines.append(" ".join([*(v.ljust(w) for v, w in zip(row[:-1], widths, strict=False)),
                               row[-1]]))
    return lines


def _add_table_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-headers", action="store_true", help="don't display column headers")
    p.add_argument("--separator", metavar="SEP",
                   help="separator between output fields (default: columns padded with "
                        "spaces)")


def _add_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--oob-timeout", dest="oob_timeout", type=int, default=c.OOB_TIMEOUT,
                   metavar="SECONDS",
                   help=f"maximum time to wait for the out-of-band helper (default: "
                        f"{c.OOB_TIMEOUT})")


def setup_health(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node health``."""
    _add_table_options(p)
    jobs.add_priority_option(p)
    _add_timeout_option(p)
    p.add_argument("names", nargs="*", metavar="NODE", help="nodes (default: all)")


def _print(ctx: Context, opts: argparse.Namespace, rows: list[list[str]]) -> None:
    for line in generate_table(rows, not opts.no_headers, opts.separator):
        ctx.out(line)


def cmd_health(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the health items the out-of-band program reports for each node."""
    op = {"OP_ID": "OP_OOB_COMMAND", "node_names": list(opts.names),
          "command": c.OOB_HEALTH, "timeout": opts.oob_timeout}
    result = jobs.submit_opcode(ctx, opts, op)
    rows: list[list[str]] = []
    errs = 0
    for (_, name), (status, data) in result:
        if status == c.RS_NORMAL and data:
            rows.append([name, "{}={}".format(*data[0])])
            rows.extend(["", f"{item}={value}"] for item, value in data[1:])
        elif status == c.RS_NORMAL:
            rows.append([name, ""])
        else:
            errs += 1
            rows.append([name, _RESULT_TEXT.get(status, "(unknown)")])
    _print(ctx, opts, rows)
    return c.EXIT_FAILURE if errs else c.EXIT_SUCCESS


def setup_power(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node power``."""
    jobs.add_job_options(p)
    p.add_argument("--auto-promote", action="store_true",
                   help="promote other nodes to master candidates as needed when "
                        "powering off sets nodes offline")
    p.add_argument("--ignore-status", action="store_true",
                   help="power off without first marking the nodes offline")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    _add_table_options(p)
    _add_timeout_option(p)
    p.add_argument("--power-delay", dest="power_delay", type=float,
                   default=c.OOB_POWER_DELAY, metavar="SECONDS",
                   help=f"seconds to wait between power-ons (default: {c.OOB_POWER_DELAY:g})")
    p.add_argument("subcommand", metavar="on|off|cycle|status",
                   help="the power operation")
    p.add_argument("names", nargs="*", metavar="NODE",
                   help="nodes (status: default all; the others need at least one)")


def _confirm(names: Sequence[str], text: str) -> bool:
    affected = "\n".join(f"  {name}" for name in names)
    return jobs.ask_user(f"The {text} will operate on {len(names)} nodes.\nDo you want to "
                         f"continue?\nAffected nodes:\n{affected}")


def cmd_power(ctx: Context, opts: argparse.Namespace) -> int:
    """Power nodes on, off or cycle them, or report their power state."""
    if opts.subcommand not in POWER_COMMANDS:
        ctx.err(f"power subcommand {opts.subcommand} not supported.")
        return c.EXIT_FAILURE
    command = f"power-{opts.subcommand}"
    names = list(opts.names)
    if command in _ASK:
        if not names:
            ctx.err("Please provide at least one node for this command")
            return c.EXIT_FAILURE
        if not opts.force and not _confirm(names, f"power {opts.subcommand}"):
            return c.EXIT_FAILURE
    ops: list[dict[str, Any]] = []
    if command == c.OOB_POWER_OFF and not opts.ignore_status:
        ops.extend({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": name, "offline": True,
                    "auto_promote": opts.auto_promote} for name in names)
    ops.append({"OP_ID": "OP_OOB_COMMAND", "node_names": names, "command": command,
                "ignore_status": opts.ignore_status, "timeout": opts.oob_timeout,
                "power_delay": opts.power_delay})
    jobs.set_generic_options(ctx, opts, ops)
    job_id = jobs.send_job(ctx, ops)
    if getattr(opts, "print_jobid", False):
        ctx.out(str(job_id))
    result = jobs.poll_job(ctx, job_id)[-1]
    rows: list[list[str]] = []
    errs = 0
    for (_, name), (status, data) in result:
        if status != c.RS_NORMAL:
            errs += 1
            rows.append([name, _RESULT_TEXT.get(status, "(unknown)")])
        elif command == c.OOB_POWER_STATUS:
            powered = isinstance(data, dict) and data.get(c.OOB_POWER_STATUS_POWERED)
            rows.append([name, "powered" if powered else "unpowered"])
        else:
            rows.append([name, "invoked"])
    _print(ctx, opts, rows)
    return c.EXIT_FAILURE if errs else c.EXIT_SUCCESS
