"""``gnt-node evacuate``, ``gnt-group evacuate``, ``gnt-instance change-group`` and
``gnt-instance move``: instances leaving a node, a group, or their node by copying.

As Ganeti 3.0's tools.  ``gnt-node evacuate`` reads the node's primary and/or
secondary instances first (none: "No instances to evacuate on node(s) NODE,
exiting." on stderr, exit 0), asks "Relocate instance(s) ... from node(s)
...?" unless ``-f``, submits one OP_NODE_EVACUATE and follows the jobs it
submitted ("All instances evacuated successfully." or "There were N errors
during the evacuation.", exit 1).  ``-n NODE`` (a new secondary) implies
``-s``, as Ganeti says on stderr.  Without ``-p`` or ``-s`` the mode is
``all``, which Ganeti's master refuses and this one accepts (primaries first,
then secondaries: :mod:`ganeti.master.lu.evacuate`).  ``gnt-group evacuate``
and ``gnt-instance change-group`` submit their opcode and follow its jobs
likewise; ``gnt-instance move`` asks "Instance X will be moved. This requires
a shutdown of the instance. Continue?" (no: exit 1) and waits for its job.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import gnt_instance_args as iargs
from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.query import nice_sort_key

BOTH_ONLY = "Only one of the --primary-only and --secondary-only options can be passed"
EARLY_RELEASE_HELP = "release the locks on the secondary node(s) early"
TO_GROUP_HELP = "destination node group (name or UUID; repeatable)"


def without_none(op: dict[str, Any]) -> dict[str, Any]:
    """The opcode without the parameters left to their defaults (None)."""
    return {key: value for key, value in op.items() if value is not None}


def submit_and_follow(ctx: Context, opts: argparse.Namespace, op: dict[str, Any],
                      success: str, failure: str) -> int:
    """Submit ``op`` (or only send it with ``--submit``), follow the jobs it submitted and
    report (:func:`ganeti.cli.jobs.report_submitted`); the exit code."""
    result = jobs.submit_or_send(ctx, opts, op)
    if result is jobs.SUBMITTED:
        return c.EXIT_SUCCESS
    return jobs.report_submitted(ctx, result, success, failure)


EVACUATED = "All instances evacuated successfully."
EVACUATION_ERRORS = "There were {bad} errors during the evacuation."


# --- gnt-node evacuate -------------------------------------------------------------

def setup_node_evacuate(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the new nodes with this allocator")
    p.add_argument("--ignore-soft-errors", action="store_true",
                   help="tell the allocator to ignore soft errors (N+1 violations)")
    p.add_argument("-n", "--new-secondary", dest="dst_node", metavar="NODE",
                   help="the new secondary node (implies --secondary-only)")
    p.add_argument("--early-release", action="store_true", help=EARLY_RELEASE_HELP)
    p.add_argument("-p", "--primary-only", action="store_true",
                   help="evacuate primary instances only")
    p.add_argument("-s", "--secondary-only", action="store_true",
                   help="evacuate secondary instances only (applies only to internally "
                        "mirrored disk templates, e.g. drbd)")
    jobs.add_job_options(p)
    p.add_argument("node", metavar="NODE", help="name of the node")


def node_evacuate_mode(ctx: Context, opts: argparse.Namespace) -> str:
    """The evacuation mode of the options (``-n`` implies ``-s``, as Ganeti says)."""
    if opts.dst_node is not None:
        ctx.err("New secondary node given (disabling iallocator), hence evacuating "
                "secondary instances only.")
        opts.secondary_only, opts.primary_only = True, False
    if opts.secondary_only and opts.primary_only:
        raise errors.OpPrereqError(BOTH_ONLY, errors.ECODE_INVAL)
    if opts.primary_only:
        return "primary-only"
    return "secondary-only" if opts.secondary_only else "all"


def cmd_node_evacuate(ctx: Context, opts: argparse.Namespace) -> int:
    """Move the node's instances away (OP_NODE_EVACUATE) and follow the jobs."""
    mode = node_evacuate_mode(ctx, opts)
    fields = ([] if opts.secondary_only else ["pinst_list"]) + \
        ([] if opts.primary_only else ["sinst_list"])
    rows = ctx.luxi().call("QueryNodes", [opts.node], fields, False)
    if not rows:
        raise errors.OpPrereqError(f"Node '{opts.node}' does not exist", errors.ECODE_NOENT)
    instances = sorted({name for row in rows for names in row for name in names or []},
                       key=nice_sort_key)
    if not instances:
        ctx.err(f"No instances to evacuate on node(s) {opts.node}, exiting.")
        return c.EXIT_SUCCESS
    if not (opts.force or jobs.ask_user(f"Relocate instance(s) {', '.join(instances)} "
                                        f"from node(s) {opts.node}?")):
        return c.EXIT_CONFIRMATION
    op = without_none({"OP_ID": "OP_NODE_EVACUATE", "node_name": opts.node, "mode": mode,
                       "remote_node": opts.dst_node, "iallocator": opts.iallocator,
                       "early_release": opts.early_release,
                       "ignore_soft_errors": opts.ignore_soft_errors})
    return submit_and_follow(ctx, opts, op, EVACUATED, EVACUATION_ERRORS)


# --- gnt-group evacuate ------------------------------------------------------------

def _group_moves(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", action="append", metavar="GROUP", help=TO_GROUP_HELP)
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the new nodes with this allocator")
    p.add_argument("--early-release", action="store_true", help=EARLY_RELEASE_HELP)


def setup_group_evacuate(p: argparse.ArgumentParser) -> None:
    _group_moves(p)
    p.add_argument("--sequential", action="store_true",
                   help="execute all resulting jobs sequentially")
    p.add_argument("--force-failover", action="store_true",
                   help="do not use migration, always use failover")
    jobs.add_job_options(p)
    p.add_argument("group", metavar="GROUP", help="name of the group to evacuate")


def cmd_group_evacuate(ctx: Context, opts: argparse.Namespace) -> int:
    """Move every instance of the group to other groups (OP_GROUP_EVACUATE)."""
    op = without_none({"OP_ID": "OP_GROUP_EVACUATE", "group_name": opts.group,
                       "iallocator": opts.iallocator, "target_groups": opts.to,
                       "early_release": opts.early_release, "sequential": opts.sequential,
                       "force_failover": opts.force_failover})
    return submit_and_follow(ctx, opts, op, EVACUATED, EVACUATION_ERRORS)


# --- gnt-instance change-group -----------------------------------------------------

def setup_change_group(p: argparse.ArgumentParser) -> None:
    _group_moves(p)
    jobs.add_job_options(p)
    iargs.instance_arg(p)


def cmd_change_group(ctx: Context, opts: argparse.Namespace) -> int:
    """Move the instance to another group (OP_INSTANCE_CHANGE_GROUP)."""
    name = opts.instance_name
    op = without_none({"OP_ID": "OP_INSTANCE_CHANGE_GROUP", "instance_name": name,
                       "iallocator": opts.iallocator, "target_groups": opts.to,
                       "early_release": opts.early_release})
    return submit_and_follow(
        ctx, opts, op, f"Instance '{name}' changed group successfully.",
        "There were {bad} errors while changing group of instance " + f"'{name}'.")


# --- gnt-instance move -------------------------------------------------------------

def setup_move(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation")
    p.add_argument("-n", "--node", metavar="NODE", help="target node")
    p.add_argument("--compress", default="none",
                   help="the compression mode to use (default: none)")
    iargs.add_shutdown_timeout(p)
    p.add_argument("--ignore-consistency", action="store_true",
                   help="proceed even if the instance cannot be shut down on its node")
    iargs.add_flags(p, "--ignore-ipolicy")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def cmd_move(ctx: Context, opts: argparse.Namespace) -> int:
    """Move the instance to another node by copying its disks (OP_INSTANCE_MOVE)."""
    name = opts.instance_name
    if not opts.force and not jobs.ask_user(f"Instance {name} will be moved. This requires "
                                            "a shutdown of the instance. Continue?"):
        return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, without_none({
        "OP_ID": "OP_INSTANCE_MOVE", "instance_name": name, "target_node": opts.node,
        "compress": opts.compress, "shutdown_timeout": opts.shutdown_timeout,
        "ignore_consistency": opts.ignore_consistency,
        "ignore_ipolicy": opts.ignore_ipolicy}))
    return c.EXIT_SUCCESS


NODE_EVACUATE_DESCRIPTION = (
    "Move the primary (-p) and/or secondary (-s) instances off the node "
    "(OP_NODE_EVACUATE): the allocator (-I, or the cluster's default, or the built-in "
    "ganeti-place) plans the moves, or -n names the new secondary node (secondary "
    "instances only); the master submits one job per instance, which are followed "
    "here. Without -p or -s both kinds move (Ganeti refuses that): primaries first. "
    "Asks for confirmation unless -f.")
GROUP_EVACUATE_DESCRIPTION = (
    "Move every instance of the group to other groups (OP_GROUP_EVACUATE): --to names "
    "the target groups (default: every other group), the allocator plans the moves; "
    "the master submits the jobs, which are followed here.")
CHANGE_GROUP_DESCRIPTION = (
    "Move the instance to another node group (OP_INSTANCE_CHANGE_GROUP): --to names "
    "the target groups (default: every group the instance does not use); the master "
    "submits the jobs, which are followed here.")
MOVE_DESCRIPTION = (
    "Move the instance to the node given with -n by stopping it, copying its disks "
    "(plain and file templates; a diskless instance has none) and starting it there "
    "if it was running (OP_INSTANCE_MOVE). Asks for confirmation unless -f.")

__all__ = ["BOTH_ONLY", "CHANGE_GROUP_DESCRIPTION", "GROUP_EVACUATE_DESCRIPTION",
           "MOVE_DESCRIPTION", "NODE_EVACUATE_DESCRIPTION", "cmd_change_group",
           "cmd_group_evacuate", "cmd_move", "cmd_node_evacuate", "node_evacuate_mode",
           "setup_change_group", "setup_group_evacuate", "setup_move",
           "setup_node_evacuate"]
