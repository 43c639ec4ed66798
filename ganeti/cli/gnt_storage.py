"""gnt-storage: the ExtStorage providers of the cluster (``diagnose``, ``info``).

As Ganeti's: both submit OP_EXT_STORAGE_DIAGNOSE and print its rows; an empty
answer is an error ("Can't get the list of ExtStorage providers", exit 1).
This project has no ``ext`` disk template, so its master reports no providers
(:class:`ganeti.master.lu.os_lu.LUExtStorageDiagnose`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import query

DESCRIPTION = "Ganeti ExtStorage providers: diagnose, info."


def _diagnose(ctx: Context, opts: argparse.Namespace, fields: list[str]) -> list[Any]:
    result = jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_EXT_STORAGE_DIAGNOSE",
                                            "output_fields": fields, "names": []})
    return list(result or [])


def _nice(names: Any) -> list[str]:
    return sorted(names, key=query.nice_sort_key)


def _status(valid: bool, why: str) -> str:
    return "valid" if valid else f"invalid - {why}"


def setup_diagnose(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-storage diagnose``."""
    jobs.add_priority_option(p)


def cmd_diagnose(ctx: Context, opts: argparse.Namespace) -> int:
    """Each provider's status per node and per node group."""
    rows = _diagnose(ctx, opts, ["name", "node_status", "nodegroup_status"])
    if not rows:
        ctx.err("Can't get the list of ExtStorage providers")
        return c.EXIT_FAILURE
    for name, node_data, group_data in rows:
        good: dict[str, str] = {}
        bad: dict[str, str] = {}
        for node, entries in node_data.items():
            if not entries:
                bad[node] = "ExtStorage provider not found"
                continue
            path, valid, message, parameters = entries[0]
            text = f"{_status(valid, message)} (path: {path})"
            text += (f" [parameters: {', '.join(p[0] for p in parameters)}]" if parameters
                     else " [no parameters]")
            (good if valid else bad)[node] = text
        ctx.out(f"Provider: {name}")
        ctx.out("---")
        for table in (good, bad):
            for node in _nice(table):
                ctx.out(f"  Node: {node}, status: {table[node]}")
        ctx.out("  --")
        for wanted in (True, False):
            for group in _nice(g for g, ok in group_data.items() if bool(ok) == wanted):
                ctx.out(f"  For nodegroup: {group} --> {'valid' if wanted else 'invalid'}")
        ctx.out("")
    return c.EXIT_SUCCESS


def setup_info(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-storage info``."""
    jobs.add_priority_option(p)
    p.add_argument("names", nargs="*", metavar="PROVIDER",
                   help="providers to show (default: all)")


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """The node groups each provider is valid for, and its parameters."""
    rows = _diagnose(ctx, opts, ["name", "nodegroup_status", "parameters"])
    if not rows:
        ctx.err("Can't get the ExtStorage providers list")
        return c.EXIT_FAILURE
    wanted = list(opts.names)
    for name, group_data, parameters in rows:
        if wanted:
            if name not in wanted:
                continue
            wanted.remove(name)
        ctx.out(f"{name}:")
        valid = _nice(g for g, ok in group_data.items() if ok)
        if valid:
            ctx.out("  - Valid for nodegroups:")
            for group in valid:
                ctx.out(f"      {group}")
            ctx.out("  - Supported parameters:")
            for pname, pdesc in parameters:
                ctx.out(f"      {pname}: {pdesc}")
        else:
            ctx.out("  - Invalid for all nodegroups")
        ctx.out("")
    for name in wanted:
        ctx.out(f"{name}: Not Found")
        ctx.out("")
    return c.EXIT_SUCCESS


COMMANDS = [
    Command("diagnose", cmd_diagnose, "Diagnose all ExtStorage providers", setup_diagnose,
            "Submit OP_EXT_STORAGE_DIAGNOSE and show each provider's status on each node "
            "and node group."),
    Command("info", cmd_info, "Show info about ExtStorage providers", setup_info,
            "Show the node groups each provider is valid for and its parameters."),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-storage (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-storage", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
