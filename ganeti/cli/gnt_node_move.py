"""``gnt-node migrate`` and ``gnt-node failover``: move a node's primary instances away.

As Ganeti 3.0's tools: both read the node's primary instances first (nothing to
do: "No primary instances on node NODE, exiting.", exit 0 -- on stdout for
migrate, stderr for failover) and confirm the list unless ``-f``.  ``migrate``
submits one OP_NODE_MIGRATE, whose result is the per-instance migration jobs
the master submitted, and follows them; ``failover`` builds one
OP_INSTANCE_FAILOVER job per instance itself (there is no node failover
opcode) and follows them.  Where Ganeti 3.0's client fails with a Python
traceback (a node name that does not exist), ours says so (``OpPrereqError``,
``unknown_entity``).  As Ganeti's, ``failover`` exits 0 even when a job failed
(its summary says how many) and 2 when the question is answered no.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import gnt_instance_move as move
from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.query import nice_sort_key

#: What ``gnt-node failover`` answers when its question is answered no (Ganeti's 2).
FAILOVER_DECLINED = 2


def primary_instances(ctx: Context, node: str) -> tuple[str, list[str]]:
    """The node's full name and its primary instances, nicely sorted."""
    rows = ctx.luxi().call("QueryNodes", [node], ["name", "pinst_list"], False)
    if not rows:
        raise errors.OpPrereqError(f"Node '{node}' does not exist", errors.ECODE_NOENT)
    name, pinst = rows[0]
    return name, sorted(pinst or [], key=nice_sort_key)


def _node_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("node", metavar="NODE", help="name of the node")


# --- migrate -----------------------------------------------------------------------

def setup_migrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="do not ask for confirmation")
    move.add_migration_options(p)
    move.add_target_options(p)
    p.add_argument("--ignore-ipolicy", action="store_true",
                   help="ignore instance policy violations")
    jobs.add_job_options(p)
    _node_arg(p)


def migrate_opcode(node: str, opts: argparse.Namespace) -> dict[str, Any]:
    """OP_NODE_MIGRATE of ``gnt-node migrate``."""
    return move.without_none({
        "OP_ID": "OP_NODE_MIGRATE", "node_name": node, "mode": move.migration_mode(opts),
        "iallocator": opts.iallocator, "target_node": opts.dst_node,
        "allow_runtime_changes": opts.allow_runtime_chgs,
        "ignore_ipolicy": opts.ignore_ipolicy})


def cmd_migrate(ctx: Context, opts: argparse.Namespace) -> int:
    """Migrate the node's primary instances away (OP_NODE_MIGRATE) and follow the
    jobs it submits."""
    name, pinst = primary_instances(ctx, opts.node)
    if not pinst:
        ctx.out(f"No primary instances on node {name}, exiting.")
        return c.EXIT_SUCCESS
    if not (opts.force or jobs.ask_user(f"Migrate instance(s) {', '.join(pinst)}?")):
        return c.EXIT_CONFIRMATION
    result = jobs.submit_or_send(ctx, opts, migrate_opcode(opts.node, opts))
    if result is jobs.SUBMITTED:
        return c.EXIT_SUCCESS
    return jobs.report_submitted(ctx, result, "All instances migrated successfully.",
                                 "There were {bad} errors during the node migration.")


# --- failover ----------------------------------------------------------------------

def setup_failover(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="do not ask for confirmation")
    move.add_ignore_consistency(p)
    move.add_target_options(p, node=False)
    jobs.add_job_options(p, submit=False)
    _node_arg(p)


def cmd_failover(ctx: Context, opts: argparse.Namespace) -> int:
    """Fail the node's primary instances over, one OP_INSTANCE_FAILOVER job each."""
    name, pinst = primary_instances(ctx, opts.node)
    if not pinst:
        ctx.err(f"No primary instances on node {name}, exiting.")
        return c.EXIT_SUCCESS
    quoted = ",".join(f"'{inst}'" for inst in pinst)
    if not opts.force and not jobs.ask_user(f"Fail over instance(s) {quoted}?"):
        return FAILOVER_DECLINED
    ops = [move.without_none({"OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": inst,
                              "ignore_consistency": opts.ignore_consistency,
                              "iallocator": opts.iallocator}) for inst in pinst]
    jobs.set_generic_options(ctx, opts, ops)
    submitted = ctx.luxi().call("SubmitManyJobs", [[op] for op in ops])
    results = jobs.wait_for_jobs(ctx, submitted, names=pinst)
    bad = len([row for row in results if not row[0]])
    if bad == 0:
        ctx.out(f"All {len(results)} instance(s) failed over successfully.")
    else:
        ctx.out(f"There were errors during the failover:\n{bad} error(s) out of "
                f"{len(results)} instance(s).")
    return c.EXIT_SUCCESS


MIGRATE_DESCRIPTION = (
    "Live-migrate every primary instance of the node away from it (OP_NODE_MIGRATE: "
    "the master submits one migration job per instance, which are followed here). "
    "Mirrored instances go to their secondary node; for shared storage -n names the "
    "target node, or the allocator (-I, or the cluster's default) chooses. Asks for "
    "confirmation unless -f.")
FAILOVER_DESCRIPTION = (
    "Fail over every primary instance of the node (one OP_INSTANCE_FAILOVER job each): "
    "stopped and started on their secondary node, or where the allocator (-I, or the "
    "cluster's default) puts a shared-storage instance. Asks for confirmation unless "
    "-f; exits 0 even when some failed (as Ganeti's), the summary says how many.")

__all__ = ["FAILOVER_DECLINED", "FAILOVER_DESCRIPTION", "MIGRATE_DESCRIPTION",
           "cmd_failover", "cmd_migrate", "migrate_opcode", "primary_instances",
           "setup_failover", "setup_migrate"]
