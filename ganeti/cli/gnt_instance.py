"""gnt-instance: create, remove, start, stop, modify, list and inspect instances.

The commands, options, prompts, messages and exit codes are Ganeti 3.0's.
Option values are parsed in :mod:`ganeti.cli.gnt_instance_opts`, the option
groups several commands share are declared in :mod:`ganeti.cli.gnt_instance_args`;
``add`` is in :mod:`ganeti.cli.gnt_instance_add` (its reservations in
:mod:`ganeti.cli.gnt_instance_forthcoming`), the
multi-instance commands (startup, shutdown, reboot, reinstall) are in
:mod:`ganeti.cli.gnt_instance_multi`, info and console in
:mod:`ganeti.cli.gnt_instance_info`, failover and migrate in
:mod:`ganeti.cli.gnt_instance_move`.  What the master refuses (an allocator,
hotplug, a disk template conversion it cannot do) is sent as given and the
master's error is shown.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.cli import gnt_evacuate as evac
from ganeti.cli import gnt_instance_args as iargs
from ganeti.cli import gnt_instance_batch as batch
from ganeti.cli import gnt_instance_info as info
from ganeti.cli import gnt_instance_move as move
from ganeti.cli import gnt_instance_multi as multi
from ganeti.cli import gnt_instance_opts as iopts
from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, run_tool

# (re-exported: gnt-backup import takes add's options and opcode)
from ganeti.cli.gnt_instance_add import add_opcode as add_opcode
from ganeti.cli.gnt_instance_add import cmd_add, setup_add_command
from ganeti.cli.gnt_instance_add import setup_add as setup_add
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.params_types import UnitParseError, parse_unit

DESCRIPTION = ("Ganeti instance administration: add, remove, start, stop, reboot, "
               "reinstall, failover, migrate, move, change-group, rename, modify, list, "
               "info, console, disks, tags.")

#: Fields of ``gnt-instance list`` without ``-o`` (Ganeti 3.0's ``_LIST_DEF_FIELDS``).
LIST_DEFAULT_FIELDS = ["name", "hypervisor", "os", "pnode", "status", "oper_ram"]

#: The environment variable with default options of ``list`` (Ganeti's).
LIST_ENV = "GNT_INSTANCE_LIST"


def _comma_join(value: Any) -> str:
    return ",".join(str(item) for item in value)


#: How ``gnt-instance list`` shows the list fields (Ganeti's overrides).
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    name: (_comma_join, False)
    for name in ("tags", "disk.sizes", "nic.macs", "nic.ips", "nic.modes", "nic.links",
                 "nic.bridges", "nic.networks", "snodes", "snodes.group",
                 "snodes.group.uuid")
}

_FILE_BASED_TEMPLATES = (c.DT_FILE, c.DT_SHARED_FILE, c.DT_GLUSTER)


# --- remove, rename ----------------------------------------------------------------

def _setup_remove(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation")
    iargs.add_shutdown_timeout(p)
    p.add_argument("--ignore-failures", action="store_true",
                   help="remove the instance from the configuration even if some steps "
                        "fail")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def ensure_instance_exists(ctx: Context, name: str) -> None:
    """Refuse a name that is no instance (``OpPrereqError``, ``unknown_entity``; the
    master refuses an unknown name in the query itself)."""
    if not table.query_rows(ctx, c.QR_INSTANCE, ["name"], [name]):
        raise errors.OpPrereqError(f"Instance '{name}' does not exist", errors.ECODE_NOENT)


def cmd_remove(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove an instance and its disks (OP_INSTANCE_REMOVE), after confirmation."""
    name = opts.instance_name
    if not opts.force:
        ensure_instance_exists(ctx, name)
        if not jobs.ask_user(f"This will remove the volumes of the instance {name} "
                             "(including mirrors), thus removing all the data of the "
                             "instance. Continue?"):
            return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": name,
                                    "ignore_failures": opts.ignore_failures,
                                    "shutdown_timeout": opts.shutdown_timeout})
    return c.EXIT_SUCCESS


def _setup_rename(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation")
    iargs.add_flags(p, "--no-ip-check", "--no-name-check")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)
    p.add_argument("new_name", metavar="NEW_NAME", help="the new name")


def cmd_rename(ctx: Context, opts: argparse.Namespace) -> int:
    """Rename an instance (OP_INSTANCE_RENAME)."""
    if not opts.force and not opts.name_check:
        if not jobs.ask_user("As you disabled the check of the DNS entry, please verify "
                             f"that '{opts.new_name}' is a FQDN. Continue?"):
            return c.EXIT_FAILURE
    result = jobs.submit_or_send(ctx, opts, {
        "OP_ID": "OP_INSTANCE_RENAME", "instance_name": opts.instance_name,
        "new_name": opts.new_name, "ip_check": opts.ip_check,
        "name_check": opts.name_check})
    if result and result is not jobs.SUBMITTED:
        ctx.out(f"Instance '{opts.instance_name}' renamed to '{result}'")
    return c.EXIT_SUCCESS


# --- modify ------------------------------------------------------------------------

def _setup_modify(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "force the change (and do not ask before a NIC hot-modification)")
    iargs.add_hv_be_options(p, "to change ('default' resets one)")
    iargs.add_osparams_options(p, secret=False)
    p.add_argument("-o", "--os-type", dest="os", metavar="OS",
                   help="change the OS (without reinstalling)")
    iargs.add_flags(p, "--force-variant")
    p.add_argument("-m", "--runtime-memory", dest="runtime_mem", type=iopts.unit_type,
                   metavar="SIZE", help="balloon the running instance's memory to SIZE")
    p.add_argument("--disk", dest="disks", action="append", default=[],
                   metavar="add:size=SIZE,...|remove|N:add,...|N:remove|N:modify,...",
                   help="add, remove or modify a disk (repeatable)")
    p.add_argument("--net", dest="nics", action="append", default=[],
                   metavar="add:...|remove|N:add,...|N:remove|N:modify,...",
                   help="add, remove or modify a NIC (repeatable)")
    p.add_argument("-t", "--disk-template", choices=sorted(c.DISK_TEMPLATES),
                   metavar="TEMPLATE", help="convert the disks to this template")
    p.add_argument("-n", "--node", metavar="NODE",
                   help="secondary node of a conversion to a mirrored template")
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the secondary node of a conversion with this allocator")
    p.add_argument("--new-primary", dest="new_primary_node", metavar="NODE",
                   help="move the stopped instance to a new primary node")
    iargs.add_file_storage_options(p)
    p.add_argument("--offline", dest="offline_inst", action="store_true",
                   help="mark the stopped instance offline")
    p.add_argument("--online", dest="online_inst", action="store_true",
                   help="mark the offline instance online (stopped)")
    iargs.add_flags(p, "--no-wait-for-sync", "--no-conflicts-check", "--ignore-ipolicy")
    p.add_argument("--hotplug", action="store_true",
                   help="hot-plug the new devices into the running instance")
    p.add_argument("--hotplug-if-possible", action="store_true",
                   help="hot-plug the new devices if the hypervisor can")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_INSTANCE_SET_PARAMS of ``gnt-instance modify`` (option values parsed
    and checked as Ganeti's client does)."""
    iargs.keyvals(opts, "hvparams", "beparams", "osparams", "osparams_private")
    beparams = iopts.typed_beparams(opts.beparams, allow_default=True)
    hvparams = iopts.typed_hvparams(opts.hvparams, allow_default=True)
    nics = iopts.parse_modifications(opts.nics, "--net")
    disks = iopts.parse_disk_sizes(iopts.parse_modifications(opts.disks, "--disk"))
    offline = True if opts.offline_inst else False if opts.online_inst else None
    op: dict[str, Any] = {
        "OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": opts.instance_name,
        "nics": nics, "disks": disks, "hvparams": hvparams, "beparams": beparams,
        "osparams": opts.osparams, "force": opts.force,
        "force_variant": opts.force_variant, "wait_for_sync": opts.wait_for_sync,
        "conflicts_check": opts.conflicts_check, "ignore_ipolicy": opts.ignore_ipolicy,
        "hotplug": opts.hotplug, "hotplug_if_possible": opts.hotplug_if_possible,
    }
    optional = {"osparams_private": opts.osparams_private or None,
                "disk_template": opts.disk_template, "remote_node": opts.node,
                "iallocator": opts.iallocator, "pnode": opts.new_primary_node,
                "runtime_mem": opts.runtime_mem, "os_name": opts.os,
                "file_driver": opts.file_driver, "file_storage_dir": opts.file_storage_dir,
                "offline": offline}
    op.update({key: value for key, value in optional.items() if value is not None})
    return op


def _modify_given(opts: argparse.Namespace) -> bool:
    return bool(opts.nics or opts.disks or opts.disk_template or opts.hvparams
                or opts.beparams or opts.os or opts.osparams or opts.osparams_private
                or opts.offline_inst or opts.online_inst or opts.runtime_mem
                or opts.new_primary_node)


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change an instance's parameters, disks or NICs (OP_INSTANCE_SET_PARAMS) and
    print what changed."""
    if not _modify_given(opts):
        ctx.err("Please give at least one of the parameters.")
        return c.EXIT_FAILURE
    op = modify_opcode(opts)
    if opts.hotplug and not opts.force and any(mod[0] == "modify" for mod in op["nics"]):
        if not jobs.ask_user("You are about to hot-modify a NIC. This will be done by "
                             "removing the existing NIC and then adding a new one. Network "
                             "connection might be lost. Continue?"):
            return c.EXIT_FAILURE
    if ((opts.file_driver or opts.file_storage_dir)
            and opts.disk_template not in _FILE_BASED_TEMPLATES):
        ctx.err("Specifying file-based configuration arguments requires converting to a "
                "file-based disk template")
        return c.EXIT_FAILURE
    result = jobs.submit_or_send(ctx, opts, op)
    if result and result is not jobs.SUBMITTED:
        jobs.print_modified(ctx, f"instance {opts.instance_name}", result)
        ctx.out("Please don't forget that most parameters take effect only at the next "
                "(re)start of the instance initiated by ganeti; restarting from within "
                "the instance will not be enough.")
        if opts.hvparams:
            ctx.out("Note that changing hypervisor parameters without performing a "
                    "restart might lead to a crash while performing a live migration. "
                    "This will be addressed in future Ganeti versions.")
    return c.EXIT_SUCCESS


# --- list, list-fields ---------------------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_list_options(p, LIST_DEFAULT_FIELDS, "INSTANCE", "instances")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the instances: Query("instance", fields, filter) as a table."""
    return table.list_command(ctx, opts, c.QR_INSTANCE, LIST_DEFAULT_FIELDS, LIST_FORMAT)


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the instance fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_INSTANCE, opts.fields, opts.separator,
                                     not opts.no_headers)


# --- startup, shutdown, reboot, reinstall (several instances) --------------------------

def _setup_startup(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "start even if the checks fail")
    iargs.add_hv_be_options(p, "for this start only")
    p.add_argument("--paused", dest="startup_paused", action="store_true",
                   help="start the instance paused")
    iargs.add_flags(p, "--no-remember", "--ignore-offline")
    jobs.add_job_options(p, dry_run=True)
    multi.add_selection_options(p)


def cmd_startup(ctx: Context, opts: argparse.Namespace) -> int:
    """Start instances (OP_INSTANCE_STARTUP, one job each)."""
    iargs.keyvals(opts, "hvparams", "beparams")
    return multi.cmd_startup(ctx, opts)


def _setup_shutdown(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "stop even if the checks fail")
    p.add_argument("--timeout", type=int, default=c.DEFAULT_SHUTDOWN_TIMEOUT,
                   metavar="SECONDS",
                   help="seconds to wait for a clean shutdown before destroying the "
                        f"instance (default: {c.DEFAULT_SHUTDOWN_TIMEOUT})")
    iargs.add_flags(p, "--no-remember", "--ignore-offline")
    jobs.add_job_options(p, dry_run=True)
    multi.add_selection_options(p)


def _setup_reboot(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--type", dest="reboot_type", choices=sorted(c.REBOOT_TYPES),
                   default=c.INSTANCE_REBOOT_HARD, help="type of reboot (default: hard)")
    p.add_argument("--ignore-secondaries", action="store_true",
                   help="ignore errors from secondary nodes")
    iargs.add_shutdown_timeout(p)
    jobs.add_job_options(p, dry_run=True)
    multi.add_selection_options(p)


def _setup_reinstall(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "do not ask for confirmation (one instance)")
    p.add_argument("-o", "--os-type", dest="os", metavar="OS",
                   help="install this OS (kept afterwards)")
    iargs.add_flags(p, "--force-variant")
    p.add_argument("--select-os", action="store_true",
                   help="choose the OS from a list of the available ones")
    iargs.add_osparams_options(p)
    jobs.add_job_options(p, dry_run=True)
    multi.add_selection_options(p)


def cmd_reinstall(ctx: Context, opts: argparse.Namespace) -> int:
    """Reinstall instances' OS (OP_INSTANCE_REINSTALL, one job each)."""
    iargs.keyvals(opts, "osparams", "osparams_private", "osparams_secret")
    return multi.cmd_reinstall(ctx, opts)


# --- info, console -------------------------------------------------------------------

def _setup_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--static", action="store_true",
                   help="only the configuration, not the run-time state")
    p.add_argument("--all", dest="show_all", action="store_true",
                   help="all instances (can take long on a big cluster)")
    jobs.add_priority_option(p)
    p.add_argument("names", nargs="*", metavar="INSTANCE", help="instances")


def _setup_console(p: argparse.ArgumentParser) -> None:
    p.add_argument("--show-cmd", dest="show_command", action="store_true",
                   help="show the command instead of running it")
    iargs.instance_arg(p)


# --- disks ---------------------------------------------------------------------------

def _setup_activate_disks(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ignore-size", action="store_true",
                   help="ignore the recorded disk sizes (when they are wrong)")
    p.add_argument("--wait-for-sync", action="store_true",
                   help="wait for the disks to synchronize")
    jobs.add_job_options(p)
    iargs.instance_arg(p)


def cmd_activate_disks(ctx: Context, opts: argparse.Namespace) -> int:
    """Activate an instance's disks (OP_INSTANCE_ACTIVATE_DISKS); prints
    ``node:disk:device`` for each."""
    result = jobs.submit_or_send(ctx, opts, {
        "OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": opts.instance_name,
        "ignore_size": opts.ignore_size, "wait_for_sync": opts.wait_for_sync})
    if result is not jobs.SUBMITTED:
        for host, iv_name, device in result or []:
            ctx.out(f"{host}:{iv_name}:{device}")
    return c.EXIT_SUCCESS


def _setup_deactivate_disks(p: argparse.ArgumentParser) -> None:
    iargs.add_force(p, "deactivate even if the instance is running")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def cmd_deactivate_disks(ctx: Context, opts: argparse.Namespace) -> int:
    """Deactivate an instance's disks (OP_INSTANCE_DEACTIVATE_DISKS)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS",
                                    "instance_name": opts.instance_name,
                                    "force": opts.force})
    return c.EXIT_SUCCESS


def _setup_grow_disk(p: argparse.ArgumentParser) -> None:
    p.add_argument("--absolute", action="store_true",
                   help="AMOUNT is the new size, not the growth")
    iargs.add_flags(p, "--no-wait-for-sync", "--ignore-ipolicy")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)
    p.add_argument("disk", metavar="DISK", help="index of the disk")
    p.add_argument("amount", metavar="AMOUNT", help="growth (or new size), e.g. 512M, 2G")


def cmd_grow_disk(ctx: Context, opts: argparse.Namespace) -> int:
    """Grow a disk of an instance (OP_INSTANCE_GROW_DISK)."""
    try:
        disk = int(opts.disk)
    except ValueError as err:
        raise errors.OpPrereqError(f"Invalid disk index: {err}", errors.ECODE_INVAL) from None
    try:
        amount = parse_unit(opts.amount)
    except UnitParseError:
        raise errors.OpPrereqError(f"Can't parse the given amount '{opts.amount}'",
                                   errors.ECODE_INVAL) from None
    jobs.submit_or_send(ctx, opts, {
        "OP_ID": "OP_INSTANCE_GROW_DISK", "instance_name": opts.instance_name,
        "disk": disk, "amount": amount, "wait_for_sync": opts.wait_for_sync,
        "absolute": opts.absolute, "ignore_ipolicy": opts.ignore_ipolicy})
    return c.EXIT_SUCCESS


def _setup_recreate_disks(p: argparse.ArgumentParser) -> None:
    p.add_argument("--disk", dest="disks", action="append", default=[],
                   metavar="N[:size=SIZE,spindles=N]",
                   help="recreate only disk N, optionally with a new size (repeatable)")
    p.add_argument("-n", "--node", metavar="PNODE[:SNODE]",
                   help="recreate the disks on these nodes (the instance moves there)")
    p.add_argument("-I", "--iallocator", metavar="NAME",
                   help="choose the new nodes with this allocator")
    jobs.add_job_options(p, dry_run=True)
    iargs.instance_arg(p)


def cmd_recreate_disks(ctx: Context, opts: argparse.Namespace) -> int:
    """Recreate an instance's disks (OP_INSTANCE_RECREATE_DISKS)."""
    disks = iopts.parse_recreate_disks(opts.disks)
    nodes: list[str] = []
    if opts.node:
        if opts.iallocator:
            raise errors.OpPrereqError("At most one of either --nodes or --iallocator can "
                                       "be passed", errors.ECODE_INVAL)
        pnode, snode = iopts.split_node_option(opts.node)
        nodes = [name for name in (pnode, snode) if name is not None]
    op: dict[str, Any] = {"OP_ID": "OP_INSTANCE_RECREATE_DISKS",
                          "instance_name": opts.instance_name, "disks": disks,
                          "nodes": nodes}
    if opts.iallocator is not None:
        op["iallocator"] = opts.iallocator
    jobs.submit_or_send(ctx, opts, op)
    return c.EXIT_SUCCESS


# --- tags ----------------------------------------------------------------------------

def cmd_list_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the instance's tags, one per line."""
    return jobs.list_tags(ctx, c.TAG_INSTANCE, opts.instance_name)


def cmd_add_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Add tags to an instance (OP_TAGS_SET)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_SET", c.TAG_INSTANCE)


def cmd_remove_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove tags from an instance (OP_TAGS_DEL)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_DEL", c.TAG_INSTANCE)


def _setup_tags(p: argparse.ArgumentParser) -> None:
    jobs.add_tag_options(p, "INSTANCE")


_SELECTION_HELP = (" The arguments are instance names unless a selection option says "
                   "otherwise (--node, --primary, --secondary: node names; --all: none; "
                   "--tags, --node-tags, --pri-node-tags, --sec-node-tags: tags); for "
                   "more than one instance the list is confirmed unless "
                   "--force-multiple. One job per instance.")

COMMANDS = [
    Command("add", cmd_add, "Create and add a new instance to the cluster",
            setup_add_command,
            "Create an instance (OP_INSTANCE_CREATE): gnt-instance add -t TEMPLATE "
            "{-n PNODE[:SNODE] | -I ALLOCATOR} -o OS [--disk N:size=SIZE | -s SIZE] ... "
            "INSTANCE. Without -n and -I the cluster's default allocator (or the built-in "
            "ganeti-place) chooses the nodes; -I . is the default. Without --net the "
            "instance gets one NIC with the cluster's parameters. --forthcoming only "
            "reserves the resources (INSTANCE optional: the UUID names a reservation "
            "until it is renamed); --commit INSTANCE makes a reservation real."),
    Command("batch-create", batch.cmd_batch_create,
            "Create a bunch of instances based on specs in the file", batch.setup,
            "Create instances from a JSON file (a list of OP_INSTANCE_CREATE parameter "
            "objects) in one OP_INSTANCE_MULTI_ALLOC: the allocator (-I, or the "
            "cluster's default) places what fits, one creation job per placed instance."),
    Command("remove", cmd_remove, "Shut down the instance and remove it", _setup_remove,
            "Remove an instance and all its disks (OP_INSTANCE_REMOVE); asks for "
            "confirmation unless -f."),
    Command("startup", cmd_startup, "Start instances", _setup_startup,
            "Start instances (OP_INSTANCE_STARTUP)." + _SELECTION_HELP),
    Command("start", cmd_startup, "Start instances (same as startup)", _setup_startup),
    Command("shutdown", multi.cmd_shutdown, "Stop instances", _setup_shutdown,
            "Stop instances (OP_INSTANCE_SHUTDOWN)." + _SELECTION_HELP),
    Command("stop", multi.cmd_shutdown, "Stop instances (same as shutdown)",
            _setup_shutdown),
    Command("reboot", multi.cmd_reboot, "Reboot instances", _setup_reboot,
            "Reboot instances (OP_INSTANCE_REBOOT): soft (inside the instance), hard "
            "(the hypervisor restarts it, the default) or full (stop and start)."
            + _SELECTION_HELP),
    Command("reinstall", cmd_reinstall, "Reinstall the OS of stopped instances",
            _setup_reinstall,
            "Reinstall the OS of stopped instances (OP_INSTANCE_REINSTALL), which removes "
            "all their data; asks for confirmation unless -f (one instance) or "
            "--force-multiple." + _SELECTION_HELP),
    Command("failover", move.cmd_failover,
            "Stop an instance and start it on another node", move.setup_failover,
            move.FAILOVER_DESCRIPTION),
    Command("migrate", move.cmd_migrate, "Move a running instance to another node",
            move.setup_migrate, move.MIGRATE_DESCRIPTION),
    Command("replace-disks", move.cmd_replace_disks, "Replaces disks for the instance",
            move.setup_replace_disks, move.REPLACE_DISKS_DESCRIPTION),
    Command("move", evac.cmd_move, "Move an instance to an arbitrary node by copying its "
            "disks", evac.setup_move, evac.MOVE_DESCRIPTION),
    Command("change-group", evac.cmd_change_group, "Change group of instance",
            evac.setup_change_group, evac.CHANGE_GROUP_DESCRIPTION),
    Command("rename", cmd_rename, "Rename an instance", _setup_rename),
    Command("modify", cmd_modify, "Change the parameters of an instance", _setup_modify,
            "Change an instance's parameters, OS, disks or NICs, or mark it offline or "
            "online (OP_INSTANCE_SET_PARAMS), and print what changed. Most changes "
            "take effect at the next start."),
    Command("list", cmd_list, "List the instances and their status", _setup_list,
            "List the instances (all, or those named; glob patterns work; one argument "
            "such as 'status == \"running\"' is a query filter expression, see -F). The "
            f"default fields are {', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-instance "
            f"list-fields' shows all. Default options may be set in ${LIST_ENV}."),
    Command("list-fields", cmd_list_fields, "List the fields available for instances",
            table.add_list_fields_options),
    Command("info", info.cmd_info, "Show information on instances", _setup_info,
            "Show the configuration and run-time state of instances "
            "(OP_INSTANCE_QUERY_DATA): gnt-instance info [-s] {--all | INSTANCE...}."),
    Command("show", info.cmd_info, "Show information on instances (same as info)",
            _setup_info),
    Command("console", info.cmd_console, "Open a console on an instance", _setup_console,
            "Connect to the console of an instance, or say where it is (VNC, SPICE) or "
            "why there is none; --show-cmd prints the command instead of running it."),
    Command("activate-disks", cmd_activate_disks, "Activate an instance's disks",
            _setup_activate_disks),
    Command("deactivate-disks", cmd_deactivate_disks, "Deactivate an instance's disks",
            _setup_deactivate_disks),
    Command("grow-disk", cmd_grow_disk, "Grow an instance's disk", _setup_grow_disk),
    Command("recreate-disks", cmd_recreate_disks, "Recreate an instance's disks",
            _setup_recreate_disks),
    Command("list-tags", cmd_list_tags, "List the tags of an instance", iargs.instance_arg),
    Command("add-tags", cmd_add_tags, "Add tags to an instance", _setup_tags),
    Command("remove-tags", cmd_remove_tags, "Remove tags from an instance", _setup_tags),
]


def _env_arguments(argv: list[str], environ: Mapping[str, str]) -> list[str]:
    """``list`` options from ``$GNT_INSTANCE_LIST`` go before the command's own."""
    if argv[:1] == ["list"] and environ.get(LIST_ENV):
        return argv[:1] + shlex.split(environ[LIST_ENV]) + argv[1:]
    return argv


def _negative_indices(argv: list[str]) -> list[str]:
    """``--disk -1:add,...`` as ``--disk=-1:add,...``: Ganeti's option parser takes
    a value that starts with a dash, argparse would see an option."""
    result: list[str] = []
    for arg in argv:
        if (result and result[-1] in ("--disk", "--net") and arg[:1] == "-"
                and arg[1:2].isdigit()):
            result[-1] += "=" + arg
        else:
            result.append(arg)
    return result


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-instance (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    args = _negative_indices(list(sys.argv[1:] if argv is None else argv))
    environ = kwargs.get("environ")
    args = _env_arguments(args, os.environ if environ is None else environ)
    return run_tool("gnt-instance", DESCRIPTION, COMMANDS, args, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
