"""gnt-group: add, remove, rename, modify, list and inspect node groups."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import gnt_evacuate as evac
from ganeti.cli import ipolicy_opts, jobs, table
from ganeti.cli.framework import Command, Context, UsageError, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, params, qlang

DESCRIPTION = ("Ganeti node group administration: add, remove, rename, modify, list, "
               "list-fields, info, assign-nodes, evacuate, tags.")

#: Fields of ``gnt-group list`` without ``-o`` (Ganeti's).
LIST_DEFAULT_FIELDS = ["name", "node_cnt", "pinst_cnt", "alloc_policy", "ndparams"]

#: Fields ``gnt-group info`` shows, in the order of :func:`group_info_entries`.
INFO_FIELDS = ["name", "ndparams", "custom_ndparams", "diskparams", "custom_diskparams",
               "ipolicy", "custom_ipolicy"]

def _comma_join(value: Any) -> str:
    return ",".join(str(v) for v in value)


def _format_dict(value: Any) -> str:
    if not value:
        return "(empty)"
    return ", ".join(f"{key}={val}" for key, val in value.items())


#: How ``gnt-group list`` shows some fields (Ganeti's overrides).
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    "node_list": (_comma_join, False),
    "pinst_list": (_comma_join, False),
    "ndparams": (_format_dict, False),
}


# --- add, modify -----------------------------------------------------------------

def _add_param_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--alloc-policy", choices=c.VALID_ALLOC_POLICIES,
                   help="instance allocation policy of the group")
    p.add_argument("-N", "--node-parameters", dest="ndparams", metavar="KEY=VAL,...",
                   help="node parameters of the group's nodes (ssh_port, spindle_count, "
                        "...)")
    p.add_argument("-D", "--disk-parameters", dest="diskparams", action="append",
                   default=[], metavar="TEMPLATE:KEY=VAL,...",
                   help="disk parameters of a disk template (repeatable)")
    ipolicy_opts.add_ipolicy_options(p, cluster=False)
    jobs.add_job_options(p, dry_run=True)


def _param_values(opts: argparse.Namespace) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if opts.alloc_policy is not None:
        values["alloc_policy"] = opts.alloc_policy
    if opts.ndparams is not None:
        values["ndparams"] = params.parse_keyval(opts.ndparams, "--node-parameters")
    if opts.diskparams:
        values["diskparams"] = jobs.ident_keyval(opts.diskparams, "-D", "TEMPLATE")
    ipolicy = ipolicy_opts.ipolicy_value(opts, group=True)
    if ipolicy:
        values["ipolicy"] = ipolicy
    return values


def _setup_add(p: argparse.ArgumentParser) -> None:
    _add_param_options(p)
    p.add_argument("group_name", metavar="GROUP", help="name of the new group")


def add_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_GROUP_ADD of ``gnt-group add``."""
    return {"OP_ID": "OP_GROUP_ADD", "group_name": opts.group_name, **_param_values(opts)}


def cmd_add(ctx: Context, opts: argparse.Namespace) -> int:
    """Add a node group (OP_GROUP_ADD)."""
    jobs.submit_or_send(ctx, opts, add_opcode(opts))
    return c.EXIT_SUCCESS


def _setup_modify(p: argparse.ArgumentParser) -> None:
    _add_param_options(p)
    p.add_argument("group_name", metavar="GROUP", help="name or UUID of the group")


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_GROUP_SET_PARAMS of ``gnt-group modify`` (only what was given)."""
    return {"OP_ID": "OP_GROUP_SET_PARAMS", "group_name": opts.group_name,
            **_param_values(opts)}


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change a group's parameters (OP_GROUP_SET_PARAMS) and print what changed."""
    op = modify_opcode(opts)
    if len(op) == 2:
        raise UsageError("Please give at least one of the parameters.")
    jobs.print_modified(ctx, f"node group {opts.group_name}", jobs.submit_or_send(ctx, opts, op))
    return c.EXIT_SUCCESS


# --- remove, rename, assign-nodes ------------------------------------------------

def _setup_remove(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("group_name", metavar="GROUP", help="name or UUID of the group")


def cmd_remove(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove an empty node group (OP_GROUP_REMOVE)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_GROUP_REMOVE",
                                    "group_name": opts.group_name})
    return c.EXIT_SUCCESS


def _setup_rename(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("group_name", metavar="GROUP", help="name or UUID of the group")
    p.add_argument("new_name", metavar="NEW_NAME", help="the new name")


def cmd_rename(ctx: Context, opts: argparse.Namespace) -> int:
    """Rename a node group (OP_GROUP_RENAME)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_GROUP_RENAME",
                                    "group_name": opts.group_name,
                                    "new_name": opts.new_name})
    return c.EXIT_SUCCESS


def _setup_assign_nodes(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="move the nodes even if that splits instances between groups")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("group_name", metavar="GROUP", help="name or UUID of the target group")
    p.add_argument("nodes", nargs="+", metavar="NODE", help="nodes to move into the group")


def cmd_assign_nodes(ctx: Context, opts: argparse.Namespace) -> int:
    """Move nodes into a group (OP_GROUP_ASSIGN_NODES)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_GROUP_ASSIGN_NODES",
                                    "group_name": opts.group_name, "force": opts.force,
                                    "nodes": list(opts.nodes)})
    return c.EXIT_SUCCESS


# --- list, list-fields, info -----------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LIST_DEFAULT_FIELDS)
    table.add_filter_option(p)
    p.add_argument("names", nargs="*", metavar="GROUP",
                   help="groups to list: names or glob patterns, or one query filter "
                        "expression (default: all)")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the node groups: Query("group", fields, filter) as a table."""
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    qfilter = table.name_filter(opts.names, force_filter=opts.force_filter)
    if (qfilter and qfilter[0] == "|"
            and all(f[:2] == ["==", "name"] for f in qfilter[1:])):  # plain names
        _check_groups_exist(ctx, opts.names)
    return table.generic_list(ctx, c.QR_GROUP, fields, qfilter, opts.separator,
                              not opts.no_headers, LIST_FORMAT, opts.verbose)


def _check_groups_exist(ctx: Context, names: Sequence[str]) -> None:
    """Ganeti's answer to a list of unknown group names: ``unknown_entity``."""
    if any(qlang.is_glob(name) for name in names):
        return
    known = {value for row in table.query_rows(ctx, c.QR_GROUP, ["name", "uuid"], [])
             for value in row}
    for name in names:
        if name not in known:
            raise errors.OpPrereqError(f"NodeGroup name {name} not found", errors.ECODE_NOENT)


def _setup_list_fields(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD",
                   help="fields to describe (default: all)")


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the group fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_GROUP, opts.fields, opts.separator,
                                     not opts.no_headers)


def group_info_entries(row: Sequence[Any]) -> list[table.Entry]:
    """What ``gnt-group info`` shows of one group (a row of :data:`INFO_FIELDS`)."""
    name, ndparams, custom_nd, diskparams, custom_disk, ipolicy, custom_ipolicy = row
    return [
        ("Node group", name),
        ("Node parameters", table.format_params_info(custom_nd, ndparams or {})),
        ("Disk parameters", table.format_params_info(custom_disk, diskparams or {})),
        ("Instance policy", ipolicy_opts.policy_info(custom_ipolicy, ipolicy or {}, False)),
    ]


def _setup_names(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="GROUP", help="groups (default: all)")


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the groups' parameters (all groups without names), YAML-like."""
    # Ganeti shows the groups it finds and skips unknown names (exit 0).
    rows = table.query_rows(ctx, c.QR_GROUP, INFO_FIELDS + ["uuid"], [])
    if opts.names:
        rows = [next(r for r in rows if name in (r[0], r[-1])) for name in opts.names
                if any(name in (r[0], r[-1]) for r in rows)]
    ctx.out(table.format_generic_info([group_info_entries(row[:-1]) for row in rows]))
    return c.EXIT_SUCCESS


def _setup_show_ispecs(p: argparse.ArgumentParser) -> None:
    _setup_names(p)
    p.add_argument("--include-defaults", dest="include_defaults", action="store_true",
                   help="include the values the groups inherit from the cluster")


def cmd_show_ispecs_cmd(ctx: Context, opts: argparse.Namespace) -> int:
    """Print a ``gnt-group add`` command line per group that recreates its instance
    specs (Ganeti's ``show-ispecs-cmd``: the group's own specs, or with
    ``--include-defaults`` the effective ones)."""
    field = "ipolicy" if opts.include_defaults else "custom_ipolicy"
    for name, ipolicy in table.query_rows(ctx, c.QR_GROUP, ["name", field], opts.names):
        ctx.out(f"gnt-group add{ipolicy_opts.ipolicy_command(ipolicy or {}, True)} {name}")
    return c.EXIT_SUCCESS


# --- tags ------------------------------------------------------------------------

def _setup_one_group(p: argparse.ArgumentParser) -> None:
    p.add_argument("group_name", metavar="GROUP", help="name of the group")


def cmd_list_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the group's tags, one per line."""
    return jobs.list_tags(ctx, c.TAG_NODEGROUP, opts.group_name)


def cmd_add_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Add tags to a group (OP_TAGS_SET)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_SET", c.TAG_NODEGROUP)


def cmd_remove_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove tags from a group (OP_TAGS_DEL)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_DEL", c.TAG_NODEGROUP)


def _setup_tags(p: argparse.ArgumentParser) -> None:
    jobs.add_tag_options(p, "GROUP")


COMMANDS = [
    Command("add", cmd_add, "Add a node group", _setup_add),
    Command("remove", cmd_remove, "Remove an empty node group", _setup_remove),
    Command("rename", cmd_rename, "Rename a node group", _setup_rename),
    Command("modify", cmd_modify, "Change a node group's parameters", _setup_modify,
            "Change a group's allocation policy, node parameters, disk parameters or "
            "instance policy (OP_GROUP_SET_PARAMS) and print what changed."),
    Command("assign-nodes", cmd_assign_nodes, "Move nodes into a node group",
            _setup_assign_nodes),
    Command("evacuate", evac.cmd_group_evacuate, "Evacuate all instances within a group",
            evac.setup_group_evacuate, evac.GROUP_EVACUATE_DESCRIPTION),
    Command("list", cmd_list, "List the node groups", _setup_list,
            "List the node groups (all, or those named or matching a glob pattern; one "
            "argument such as 'node_cnt > 0' is a query filter expression, see -F). "
            "The default fields are "
            f"{', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-group list-fields' shows all."),
    Command("list-fields", cmd_list_fields, "List the fields available for node groups",
            _setup_list_fields),
    Command("info", cmd_info, "Show the parameters of node groups", _setup_names),
    Command("show-ispecs-cmd", cmd_show_ispecs_cmd,
            "Show the command line to re-create node groups' instance specs",
            _setup_show_ispecs),
    Command("list-tags", cmd_list_tags, "List the tags of a node group", _setup_one_group),
    Command("add-tags", cmd_add_tags, "Add tags to a node group", _setup_tags),
    Command("remove-tags", cmd_remove_tags, "Remove tags from a node group", _setup_tags),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-group (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-group", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
