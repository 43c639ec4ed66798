"""gnt-instance commands that act on several instances: startup, shutdown, reboot,
reinstall.

As Ganeti's tools, the arguments are instance names by default; ``--node``,
``--primary``, ``--secondary`` take node names and act on their instances,
``--all`` on every instance, ``--tags``/``--node-tags``/``--pri-node-tags``/
``--sec-node-tags`` on the instances (of the nodes) carrying one of the tags.
When more than one instance is selected, or any mode but ``--instance`` is
used, the user confirms the list unless ``--force-multiple``.  One job per
instance is submitted with ``SubmitManyJobs``; each is followed with
"Waiting for job N for NAME ..." (``--submit``: "N: NAME" lines instead), and
the exit code is 1 if any job failed.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Context, Handler
from ganeti.core import constants as c
from ganeti.core import errors

EXPAND_CLUSTER = "cluster"
EXPAND_NODES_BOTH = "nodes"
EXPAND_NODES_PRI = "nodes-pri"
EXPAND_NODES_SEC = "nodes-sec"
EXPAND_NODES_BOTH_BY_TAGS = "nodes-by-tags"
EXPAND_NODES_PRI_BY_TAGS = "nodes-pri-by-tags"
EXPAND_NODES_SEC_BY_TAGS = "nodes-sec-by-tags"
EXPAND_INSTANCES = "instances"
EXPAND_INSTANCES_BY_TAGS = "instances-by-tags"

_NODE_TAG_MODES = (EXPAND_NODES_BOTH_BY_TAGS, EXPAND_NODES_PRI_BY_TAGS,
                   EXPAND_NODES_SEC_BY_TAGS)
_NODE_MODES = (EXPAND_NODES_BOTH, EXPAND_NODES_PRI, EXPAND_NODES_SEC)

#: Selection options: flag, mode, help (Ganeti's).
SELECTION_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("--instance", EXPAND_INSTANCES, "filter by instance name [default]"),
    ("--node", EXPAND_NODES_BOTH, "filter by nodes (primary and secondary)"),
    ("--primary", EXPAND_NODES_PRI, "filter by nodes (primary only)"),
    ("--secondary", EXPAND_NODES_SEC, "filter by nodes (secondary only)"),
    ("--all", EXPAND_CLUSTER, "select all instances in the cluster"),
    ("--tags", EXPAND_INSTANCES_BY_TAGS, "filter by instance tag"),
    ("--node-tags", EXPAND_NODES_BOTH_BY_TAGS, "filter by node tag"),
    ("--pri-node-tags", EXPAND_NODES_PRI_BY_TAGS, "filter by primary node tag"),
    ("--sec-node-tags", EXPAND_NODES_SEC_BY_TAGS, "filter by secondary node tag"),
)

def add_selection_options(p: argparse.ArgumentParser) -> None:
    """The selection modes, ``--force-multiple`` and the name arguments."""
    for flag, mode, text in SELECTION_OPTIONS:
        p.add_argument(flag, dest="multi_mode", action="store_const", const=mode,
                       help=text)
    p.add_argument("--force-multiple", dest="force_multi", action="store_true",
                   help="do not ask for confirmation when more than one instance is "
                        "affected")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="instances (or nodes, or tags, by the selection option)")


def _node_rows(ctx: Context, mode: str, names: Sequence[str]) -> list[list[Any]]:
    if mode in _NODE_TAG_MODES:
        if not names:
            raise errors.OpPrereqError("No node tags passed", errors.ECODE_INVAL)
        rows = ctx.luxi().call("QueryNodes", [], ["name", "pinst_list", "sinst_list",
                                                  "tags"], False)
        return [row for row in rows if set(row[3] or []).intersection(names)]
    if not names:
        raise errors.OpPrereqError("No node names passed", errors.ECODE_INVAL)
    return list(ctx.luxi().call("QueryNodes", list(names),
                                ["name", "pinst_list", "sinst_list"], False))


def expand_names(ctx: Context, mode: str, names: Sequence[str]) -> list[str]:
    """The instances a selection mode and its arguments stand for (Ganeti's order:
    primaries before secondaries, node by node)."""
    if mode == EXPAND_CLUSTER:
        if names:
            raise errors.OpPrereqError("Cluster filter mode takes no arguments",
                                       errors.ECODE_INVAL)
        return [row[0] for row in table.query_rows(ctx, c.QR_INSTANCE, ["name"], [])]
    if mode in _NODE_TAG_MODES or mode in _NODE_MODES:
        rows = _node_rows(ctx, mode, names)
        primaries = list(itertools.chain.from_iterable(row[1] or [] for row in rows))
        secondaries = list(itertools.chain.from_iterable(row[2] or [] for row in rows))
        if mode in (EXPAND_NODES_PRI, EXPAND_NODES_PRI_BY_TAGS):
            return primaries
        if mode in (EXPAND_NODES_SEC, EXPAND_NODES_SEC_BY_TAGS):
            return secondaries
        return primaries + secondaries
    if mode == EXPAND_INSTANCES:
        if not names:
            raise errors.OpPrereqError("No instance names passed", errors.ECODE_INVAL)
        return [row[0] for row in table.query_rows(ctx, c.QR_INSTANCE, ["name"], names)]
    if mode == EXPAND_INSTANCES_BY_TAGS:
        if not names:
            raise errors.OpPrereqError("No instance tags passed", errors.ECODE_INVAL)
        rows = table.query_rows(ctx, c.QR_INSTANCE, ["name", "tags"], [])
        return [row[0] for row in rows if set(row[1] or []).intersection(names)]
    raise errors.OpPrereqError(f"Unknown mode '{mode}'", errors.ECODE_INVAL)


def confirm_operation(names: Sequence[str], list_type: str, text: str,
                      extra: str = "") -> bool:
    """Ask the user to confirm an operation on several items (Ganeti's question)."""
    question = (f"The {text} will operate on {len(names)} {list_type}.\n{extra}"
                "Do you want to continue?")
    # (Ganeti hides a list of more than 20 behind a "view" choice; the yes/no
    # prompt here always shows it)
    affected = f"\nAffected {list_type}:\n" + "\n".join(f"  {name}" for name in names)
    return jobs.ask_user(question + affected)


def run_jobs(ctx: Context, opts: argparse.Namespace,
             named_ops: Sequence[tuple[str, dict[str, Any]]], verbose: bool) -> int:
    """One job per ``(name, opcode)``: submitted together, then followed or shown."""
    ops = [op for _, op in named_ops]
    names = [name for name, _ in named_ops]
    jobs.set_generic_options(ctx, opts, ops)
    submitted = ctx.luxi().call("SubmitManyJobs", [[op] for op in ops])
    if getattr(opts, "submit", False):
        for name, (success, value) in zip(names, submitted, strict=False):
            if success:
                ctx.out(f"{value}: {name}")
            else:
                ctx.err(f"Failure for {name}: {value}")
        ok = all(success for success, _ in submitted)
    else:
        results = jobs.wait_for_jobs(ctx, submitted, names=names, verbose=verbose)
        ok = all(success for success, _ in results)
    return c.EXIT_SUCCESS if ok else c.EXIT_FAILURE


def select(ctx: Context, opts: argparse.Namespace) -> tuple[list[str], bool]:
    """The selected instances and whether the selection is "multiple"."""
    mode = opts.multi_mode or EXPAND_INSTANCES
    names = expand_names(ctx, mode, opts.names)
    if not names and mode != EXPAND_CLUSTER:
        raise errors.OpPrereqError("Selection filter does not match any instances",
                                   errors.ECODE_INVAL)
    return names, mode != EXPAND_INSTANCES or len(names) > 1


def many_ops(operation: str,
             build: Callable[[str, argparse.Namespace], dict[str, Any]]) -> Handler:
    """The handler of a multi-instance command whose opcode ``build`` makes."""
    def handler(ctx: Context, opts: argparse.Namespace) -> int:
        names, multi = select(ctx, opts)
        if not names:
            ctx.out("Cluster is empty, no instances to shutdown")  # (Ganeti's words)
            return c.EXIT_SUCCESS
        if multi and not opts.force_multi and not confirm_operation(names, "instances",
                                                                    operation):
            return c.EXIT_FAILURE
        return run_jobs(ctx, opts, [(name, build(name, opts)) for name in names], multi)
    handler.__doc__ = f"{operation.capitalize()} instances (one job each)."
    return handler


# --- the opcodes ------------------------------------------------------------------

def startup_opcode(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_STARTUP; -H/-B only when given (they apply to this start only)."""
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": name,
                          "force": opts.force, "ignore_offline_nodes": opts.ignore_offline,
                          "no_remember": opts.no_remember,
                          "startup_paused": opts.startup_paused}
    if opts.hvparams:
        op["hvparams"] = opts.hvparams
    if opts.beparams:
        op["beparams"] = opts.beparams
    return op


def shutdown_opcode(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_SHUTDOWN."""
    return {"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": name, "force": opts.force,
            "timeout": opts.timeout, "ignore_offline_nodes": opts.ignore_offline,
            "no_remember": opts.no_remember}


def reboot_opcode(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_REBOOT."""
    return {"OP_ID": "OP_INSTANCE_REBOOT", "instance_name": name,
            "reboot_type": opts.reboot_type, "ignore_secondaries": opts.ignore_secondaries,
            "shutdown_timeout": opts.shutdown_timeout}


def reinstall_opcode(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_REINSTALL; the OS and OS parameters only when given."""
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_REINSTALL", "instance_name": name,
                          "force_variant": opts.force_variant}
    if opts.os is not None:
        op["os_type"] = opts.os
    for key in ("osparams", "osparams_private", "osparams_secret"):
        if getattr(opts, key):
            op[key] = getattr(opts, key)
    return op


cmd_startup = many_ops("startup", startup_opcode)
cmd_shutdown = many_ops("shutdown", shutdown_opcode)
cmd_reboot = many_ops("reboot", reboot_opcode)


def choose_os(ctx: Context, opts: argparse.Namespace) -> str | None:
    """``--select-os``: list the OSes (OP_OS_DIAGNOSE) and let the user pick one;
    None when there is none or the user aborts."""
    result = jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_OS_DIAGNOSE",
                                            "output_fields": ["name", "variants"],
                                            "names": []})
    if not result:
        ctx.out("Can't get the OS list")
        return None
    ctx.out("Available OS templates:")
    choices: list[tuple[str, Any, str]] = []
    for name, variants in result:
        for entry in ([f"{name}+{v}" for v in variants] if variants else [name]):
            ctx.out(f"{len(choices):>3}: {entry}")
            choices.append((str(len(choices)), entry, entry))
    choices.append(("x", None, "Exit gnt-instance reinstall"))
    selected = jobs.ask_choice("Enter OS template number (or x to abort):", choices)
    if selected is None:
        ctx.err("User aborted reinstall, exiting")
        return None
    return str(selected)


def cmd_reinstall(ctx: Context, opts: argparse.Namespace) -> int:
    """Reinstall instances: confirmation of the whole list (several) or of the
    one instance (unless -f), as Ganeti asks; one job each."""
    names, multi = select(ctx, opts)
    if not names:
        raise errors.OpPrereqError("Selection filter does not match any instances",
                                   errors.ECODE_INVAL)
    if opts.select_os:
        opts.os = choose_os(ctx, opts)
        if opts.os is None:
            return c.EXIT_FAILURE
    os_msg = (f"change the OS to '{opts.os}'" if opts.os is not None
              else "keep the same OS")
    if multi:
        warning = (f"Note: this will remove *all* data for the below instances! It will "
                   f"{os_msg}.\n")
        if not opts.force_multi and not confirm_operation(names, "instances", "reinstall",
                                                          extra=warning):
            return c.EXIT_FAILURE
    elif not (opts.force or opts.force_multi):
        if not jobs.ask_user(f"This will reinstall the instance '{names[0]}' (and "
                             f"{os_msg}) which removes all data. Continue?"):
            return c.EXIT_FAILURE
    return run_jobs(ctx, opts, [(name, reinstall_opcode(name, opts)) for name in names],
                    multi)
