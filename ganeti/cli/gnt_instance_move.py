"""``gnt-instance failover``, ``migrate`` and ``replace-disks``: instances that change
their primary node, or the storage of their mirror.

Ganeti 3.0's options, confirmations and checks: ``-n`` and ``-I`` exclude each
other, the instance must exist before the question is asked (unless ``-f``),
``failover --ignore-consistency`` asks whether the source node is offline
(even with ``-f``), and ``migrate --non-live`` is the old spelling of
``--migration-mode non-live`` (both at once are refused).  ``failover``
accepts ``--cleanup`` as Ganeti's does, and as Ganeti's sends nothing for it.
``replace-disks`` takes exactly one of ``-p``, ``-s``, ``-a``, ``-n`` and ``-I``
(Ganeti's message otherwise), and ``--disks`` (not with ``-a``).  What the master
refuses is shown as its error.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import gnt_instance_args as iargs
from ganeti.cli import jobs, table
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors

#: Ganeti 3.0's texts of the options these commands share with gnt-node.
IGNORE_CONSISTENCY_HELP = ("ignore the consistency of the disks on the secondary (the "
                           "source node must be marked offline first)")
NON_LIVE_HELP = ("do a non-live migration: freeze the instance, save its state, "
                 "transfer it and only then resume it on the target node")
MIGRATION_MODE_HELP = "the migration mode instead of the hypervisor's default"
TARGET_NODE_HELP = "the new primary node of the instance"
IALLOCATOR_HELP = "choose the new primary node with this allocator"
CLEANUP_HELP = ("instead of migrating, recover from a failed migration (safe on a "
                "healthy instance)")

BOTH_TARGETS = "Specify either an iallocator (-I), or a target node (-n) but not both"
BOTH_MODES = "Only one of the --non-live and --migration-mode options can be passed"


def add_target_options(p: argparse.ArgumentParser, node: bool = True) -> None:
    """``-n/--target-node`` (unless ``node`` is false) and ``-I/--iallocator``."""
    if node:
        p.add_argument("-n", "--target-node", dest="dst_node", metavar="NODE",
                       help=TARGET_NODE_HELP)
    p.add_argument("-I", "--iallocator", metavar="NAME", help=IALLOCATOR_HELP)


def add_ignore_consistency(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ignore-consistency", action="store_true",
                   help=IGNORE_CONSISTENCY_HELP)


def add_migration_options(p: argparse.ArgumentParser) -> None:
    """``--non-live``, ``--migration-mode`` and ``--no-runtime-changes``."""
    p.add_argument("--non-live", dest="live", action="store_false", help=NON_LIVE_HELP)
    p.add_argument("--migration-mode", choices=sorted(c.HT_MIGRATION_MODES),
                   help=MIGRATION_MODE_HELP)
    p.add_argument("--no-runtime-changes", dest="allow_runtime_chgs",
                   action="store_false",
                   help="do not change the instance's memory to make it fit on the "
                        "target node")


def migration_mode(opts: argparse.Namespace) -> str | None:
    """The ``mode`` parameter: None (the hypervisor's default), or the mode asked
    for; ``--non-live`` with ``--migration-mode`` is refused as Ganeti does."""
    if not opts.live and opts.migration_mode is not None:
        raise errors.OpPrereqError(BOTH_MODES, errors.ECODE_INVAL)
    return c.HT_MIGRATION_NONLIVE if not opts.live else opts.migration_mode


def check_targets(opts: argparse.Namespace) -> None:
    if opts.iallocator and opts.dst_node:
        raise errors.OpPrereqError(BOTH_TARGETS, errors.ECODE_INVAL)


def without_none(op: dict[str, Any]) -> dict[str, Any]:
    """The opcode without the parameters left to their defaults (None)."""
    return {key: value for key, value in op.items() if value is not None}


def _instance_exists(ctx: Context, name: str) -> None:
    # (as gnt_instance.ensure_instance_exists; not imported from there to keep
    # the import graph one-way)
    if not table.query_rows(ctx, c.QR_INSTANCE, ["name"], [name]):
        raise errors.OpPrereqError(f"Instance '{name}' does not exist", errors.ECODE_NOENT)


# --- failover ----------------------------------------------------------------------

def setup_failover(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation")
    add_ignore_consistency(p)
    iargs.add_shutdown_timeout(p)
    add_target_options(p)
    iargs.add_flags(p, "--ignore-ipolicy")
    p.add_argument("--cleanup", action="store_true",
                   help="accepted as Ganeti 3.0's failover accepts it: without effect")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def failover_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_FAILOVER of ``gnt-instance failover``."""
    return without_none({
        "OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": opts.instance_name,
        "ignore_consistency": opts.ignore_consistency,
        "shutdown_timeout": opts.shutdown_timeout, "iallocator": opts.iallocator,
        "target_node": opts.dst_node, "ignore_ipolicy": opts.ignore_ipolicy})


def cmd_failover(ctx: Context, opts: argparse.Namespace) -> int:
    """Stop the instance, make another node its primary and start it there if it
    was running (OP_INSTANCE_FAILOVER), after confirmation."""
    check_targets(opts)
    name = opts.instance_name
    if not opts.force:
        _instance_exists(ctx, name)
        if not jobs.ask_user(f"Failover will happen to image {name}. This requires a "
                             "shutdown of the instance. Continue?"):
            return c.EXIT_FAILURE
    if opts.ignore_consistency:
        if not jobs.ask_user(f"To failover instance {name}, the source node must be "
                             "marked offline first. Is this already the case?"):
            return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, failover_opcode(opts))
    return c.EXIT_SUCCESS


# --- migrate -----------------------------------------------------------------------

def setup_migrate(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation")
    add_migration_options(p)
    p.add_argument("--cleanup", action="store_true", help=CLEANUP_HELP)
    add_target_options(p)
    p.add_argument("--allow-failover", action="store_true",
                   help="fail over (stop and start) if the instance cannot migrate")
    iargs.add_flags(p, "--ignore-ipolicy")
    p.add_argument("--ignore-hvversions", action="store_true",
                   help="migrate even if the hypervisor versions of the nodes differ")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def migrate_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_MIGRATE of ``gnt-instance migrate``."""
    return without_none({
        "OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": opts.instance_name,
        "mode": migration_mode(opts), "cleanup": opts.cleanup,
        "iallocator": opts.iallocator, "target_node": opts.dst_node,
        "allow_failover": opts.allow_failover,
        "allow_runtime_changes": opts.allow_runtime_chgs,
        "ignore_ipolicy": opts.ignore_ipolicy,
        "ignore_hvversions": opts.ignore_hvversions})


def cmd_migrate(ctx: Context, opts: argparse.Namespace) -> int:
    """Move the running instance to another node without stopping it
    (OP_INSTANCE_MIGRATE), after confirmation."""
    check_targets(opts)
    name = opts.instance_name
    if not opts.force:
        _instance_exists(ctx, name)
        if opts.cleanup:
            text = (f"Instance {name} will be recovered from a failed migration. Note "
                    "that the migration procedure (including cleanup)")
        else:
            text = f"Instance {name} will be migrated. Note that migration"
        if not jobs.ask_user(text + " might impact the instance if anything goes wrong "
                                    "(e.g. due to bugs in the hypervisor). Continue?"):
            return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, migrate_opcode(opts))
    return c.EXIT_SUCCESS


# --- replace-disks -----------------------------------------------------------------

_MIRRORED = "applies only to internally mirrored disk templates, e.g. drbd"
ONE_MODE = "One and only one of the -p, -s, -a, -n and -I options must be passed"


def setup_replace_disks(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--auto", action="store_true",
                   help=f"Automatically replace faulty disks ({_MIRRORED})")
    p.add_argument("--disks", metavar="LIST",
                   help="Comma-separated list of disks indices to act on (e.g. 0,2) "
                        "(optional, defaults to all disks)")
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the new secondary node with this allocator")
    p.add_argument("--early-release", action="store_true",
                   help="Release the locks on the secondary node(s) early")
    p.add_argument("-n", "--new-secondary", dest="dst_node", metavar="NODE",
                   help="Specifies the new secondary node")
    p.add_argument("-p", "--on-primary", action="store_true",
                   help=f"Replace the disk(s) on the primary node ({_MIRRORED})")
    p.add_argument("-s", "--on-secondary", action="store_true",
                   help=f"Replace the disk(s) on the secondary node ({_MIRRORED})")
    iargs.add_flags(p, "--ignore-ipolicy")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def replace_disks_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """OP_INSTANCE_REPLACE_DISKS of ``gnt-instance replace-disks`` (Ganeti's checks)."""
    try:
        disks = [int(i) for i in opts.disks.split(",")] if opts.disks is not None else []
    except ValueError as err:
        raise errors.OpPrereqError(f"Invalid disk index passed: {err}",
                                   errors.ECODE_INVAL) from None
    given = [opts.on_primary, opts.on_secondary, opts.auto, opts.dst_node is not None,
             opts.iallocator is not None]
    if given.count(True) != 1:
        raise errors.OpPrereqError(ONE_MODE, errors.ECODE_INVAL)
    if opts.on_primary:
        mode = c.REPLACE_DISK_PRI
    elif opts.on_secondary:
        mode = c.REPLACE_DISK_SEC
    elif opts.auto:
        mode = c.REPLACE_DISK_AUTO
        if disks:
            raise errors.OpPrereqError("Cannot specify disks when using automatic mode",
                                       errors.ECODE_INVAL)
    else:
        mode = c.REPLACE_DISK_CHG
    return without_none({
        "OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": opts.instance_name,
        "disks": disks, "remote_node": opts.dst_node, "mode": mode,
        "iallocator": opts.iallocator, "early_release": opts.early_release,
        "ignore_ipolicy": opts.ignore_ipolicy})


def cmd_replace_disks(ctx: Context, opts: argparse.Namespace) -> int:
    """Rebuild the storage of a mirrored instance (OP_INSTANCE_REPLACE_DISKS)."""
    jobs.submit_or_send(ctx, opts, replace_disks_opcode(opts))
    return c.EXIT_SUCCESS


REPLACE_DISKS_DESCRIPTION = (
    "Rebuild the storage of a mirrored (drbd) instance (OP_INSTANCE_REPLACE_DISKS): new "
    "volumes on the primary (-p) or the secondary (-s), a new secondary node named (-n) "
    "or chosen by an allocator (-I), or the side with faulty disks found and repaired "
    "(-a). The mirror resyncs; the old volumes are removed (before the resync with "
    "--early-release).")
FAILOVER_DESCRIPTION = (
    "Stop the instance, make another node its primary node and start it there if it "
    "was running (OP_INSTANCE_FAILOVER): the secondary node for a mirrored template, "
    "for shared storage (sharedfile, diskless, ...) the node given with -n or chosen "
    "by the allocator (-I, or the cluster's default). Asks for confirmation unless -f; "
    "--ignore-consistency (the source node offline) always asks.")
MIGRATE_DESCRIPTION = (
    "Move the running instance to another node without stopping it "
    "(OP_INSTANCE_MIGRATE): the secondary node for a mirrored template, for shared "
    "storage the node given with -n or chosen by the allocator. --cleanup recovers "
    "from a failed migration; --allow-failover fails a stopped or unmigratable "
    "instance over instead. Asks for confirmation unless -f.")

__all__ = ["BOTH_MODES", "BOTH_TARGETS", "FAILOVER_DESCRIPTION", "MIGRATE_DESCRIPTION",
           "ONE_MODE", "REPLACE_DISKS_DESCRIPTION", "add_ignore_consistency",
           "add_migration_options", "add_target_options", "cmd_failover", "cmd_migrate",
           "cmd_replace_disks", "failover_opcode", "migrate_opcode", "migration_mode",
           "replace_disks_opcode", "setup_failover", "setup_migrate",
           "setup_replace_disks", "without_none"]
