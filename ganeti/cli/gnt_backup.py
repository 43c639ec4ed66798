"""gnt-backup: export instances, import them, list and remove exports.

The commands, options and messages are Ganeti 3.0's (its ``gnt_backup``):
``export`` submits OP_BACKUP_EXPORT, ``import`` an OP_INSTANCE_CREATE in
import mode with the options of ``gnt-instance add`` (built by the same code,
:func:`ganeti.cli.gnt_instance.add_opcode`), ``list`` queries the ``export``
resource, ``remove`` submits OP_BACKUP_REMOVE.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import gnt_instance, jobs, table
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, qlang

DESCRIPTION = "Ganeti instance exports: export, import, list and remove instance images"
LIST_DEFAULT_FIELDS = ["node", "export"]


# --- list --------------------------------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--node", dest="nodes", action="append", default=[],
                   metavar="NODE", help="use only this node (can be used multiple times, "
                                        "if not given defaults to all nodes)")
    table.add_output_options(p, LIST_DEFAULT_FIELDS, units=True)


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the exports: Query("export", fields, node filter) as a table."""
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    qfilter = qlang.make_simple_filter("node", opts.nodes)
    return table.generic_list(ctx, c.QR_EXPORT, fields, qfilter, opts.separator,
                              not opts.no_headers, None, opts.verbose, opts.units)


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the export fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_EXPORT, opts.fields, opts.separator,
                                     not opts.no_headers)


# --- export ------------------------------------------------------------------------

def _setup_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true", help="force the operation")
    p.add_argument("-n", "--node", metavar="NODE", help="target node")
    p.add_argument("--transport-compression", dest="transport_compression",
                   default="none", metavar="TOOL",
                   help="the compression mode to use during transport (only 'none')")
    p.add_argument("--noshutdown", dest="shutdown", action="store_false",
                   help="don't shutdown the instance (unsafe)")
    p.add_argument("--shutdown-timeout", type=int, default=c.DEFAULT_SHUTDOWN_TIMEOUT,
                   metavar="SECONDS",
                   help="seconds to wait for the instance to shut down (default: "
                        f"{c.DEFAULT_SHUTDOWN_TIMEOUT})")
    p.add_argument("--remove-instance", action="store_true",
                   help="remove the instance from the cluster")
    p.add_argument("--ignore-remove-failures", action="store_true",
                   help="remove the instance from the cluster configuration even if there "
                        "are failures during the removal process")
    p.add_argument("--zero-free-space", action="store_true",
                   help="zero the free space on the disks of the instance prior to the "
                        "export (not supported: refused by the master)")
    p.add_argument("--zeroing-timeout-fixed", type=int, metavar="SECONDS",
                   help="the fixed part of the zeroing timeout")
    p.add_argument("--zeroing-timeout-per-mib", type=float, metavar="SECONDS",
                   help="the zeroing timeout per MiB of disk")
    p.add_argument("--long-sleep", action="store_true",
                   help="allow long shutdowns when backing up instances")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("instance_name", metavar="INSTANCE", help="the instance to export")


def export_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_BACKUP_EXPORT of ``gnt-backup export``."""
    if not opts.node:
        raise errors.OpPrereqError("Target node must be specified", errors.ECODE_INVAL)
    op: dict[str, Any] = {
        "OP_ID": "OP_BACKUP_EXPORT", "instance_name": opts.instance_name,
        "target_node": opts.node, "compress": opts.transport_compression,
        "shutdown": opts.shutdown, "shutdown_timeout": opts.shutdown_timeout,
        "remove_instance": opts.remove_instance,
        "ignore_remove_failures": opts.ignore_remove_failures,
        "long_sleep": opts.long_sleep,
    }
    if opts.zero_free_space:
        op["zero_free_space"] = True
    for key in ("zeroing_timeout_fixed", "zeroing_timeout_per_mib"):
        if getattr(opts, key) is not None:
            op[key] = getattr(opts, key)
    return op


def cmd_export(ctx: Context, opts: argparse.Namespace) -> int:
    """Export an instance to an image on a node (OP_BACKUP_EXPORT)."""
    jobs.submit_or_send(ctx, opts, export_opcode(opts))
    return c.EXIT_SUCCESS


# --- import ------------------------------------------------------------------------

def _setup_import(p: argparse.ArgumentParser) -> None:
    gnt_instance.setup_add(p)
    p.add_argument("--identify-defaults", action="store_true",
                   help="identify which saved instance parameters are equal to the "
                        "current cluster defaults and set them as such, instead of "
                        "marking them as overridden")
    p.add_argument("--src-dir", dest="src_dir", metavar="DIR",
                   help="source directory (an export name or its path; default: the "
                        "instance's name)")
    p.add_argument("--src-node", dest="src_node", metavar="NODE",
                   help="source node (default: the node holding the export)")
    p.add_argument("--compress", default="none", metavar="TOOL",
                   help="the compression mode to use (only 'none')")
    p.add_argument("--helper-startup-timeout", type=int, metavar="SECONDS",
                   help="startup timeout of a helper VM (unused: no helper VMs)")
    p.add_argument("--helper-shutdown-timeout", type=int, metavar="SECONDS",
                   help="shutdown timeout of a helper VM (unused: no helper VMs)")


def import_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_INSTANCE_CREATE (import mode) of ``gnt-backup import``: Ganeti's
    ``GenericInstanceCreate``, where the export gives what the options leave out."""
    given_disks = bool(opts.disks) or opts.sd_size is not None
    if not given_disks and opts.disk_template != c.DT_DISKLESS:
        opts.sd_size = 1  # placeholder for the shared parser; the export's disks count
    op = gnt_instance.add_opcode(opts)
    if not given_disks:
        op["disks"] = []
    if not opts.nics and not opts.no_nics:
        op["nics"] = []  # the export's NICs
    op.update({"mode": "import", "start": False, "force_variant": False,
               "identify_defaults": opts.identify_defaults, "compress": opts.compress})
    op.pop("os_type", None)
    op.pop("no_install", None)
    for key, value in (("src_node", opts.src_node), ("src_path", opts.src_dir)):
        if value is not None:
            op[key] = value
    return op


def cmd_import(ctx: Context, opts: argparse.Namespace) -> int:
    """Create an instance from an export (OP_INSTANCE_CREATE, import mode)."""
    jobs.submit_or_send(ctx, opts, import_opcode(opts))
    return c.EXIT_SUCCESS


# --- remove ------------------------------------------------------------------------

def _setup_remove(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("instance_name", metavar="INSTANCE",
                   help="the instance whose exports are removed")


def cmd_remove(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove the exports of an instance (OP_BACKUP_REMOVE)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_BACKUP_REMOVE",
                                    "instance_name": opts.instance_name})
    return c.EXIT_SUCCESS


COMMANDS = [
    Command("list", cmd_list, "Lists instance exports available in the ganeti cluster",
            _setup_list),
    Command("list-fields", cmd_list_fields, "Lists all available fields for exports",
            table.add_list_fields_options),
    Command("export", cmd_export, "Exports an instance to an image", _setup_export,
            "Export an instance to an image on a node (OP_BACKUP_EXPORT): gnt-backup "
            "export -n NODE [opts...] INSTANCE. A running instance is shut down for the "
            "export (--long-sleep: no disk can be snapshotted here) and started again."),
    Command("import", cmd_import, "Imports an instance from an exported image",
            _setup_import,
            "Create an instance from an export (OP_INSTANCE_CREATE, import mode) with the "
            "options of 'gnt-instance add': gnt-backup import -t TEMPLATE -n NODE "
            "[--src-node NODE] [--src-dir DIR] INSTANCE. The export gives the OS, disks, "
            "NICs and parameters the options leave out."),
    Command("remove", cmd_remove, "Remove exports of named instance from the filesystem.",
            _setup_remove),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-backup (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-backup", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
