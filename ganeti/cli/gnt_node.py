"""gnt-node: add, remove, modify, list and inspect the nodes of the cluster."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ganeti.cli import gnt_evacuate as evac
from ganeti.cli import gnt_node_drbd, gnt_node_move, gnt_node_oob, gnt_node_storage, jobs, table
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, params

DESCRIPTION = ("Ganeti node administration: add, remove, modify, migrate, failover, "
               "evacuate, list, list-fields, info, health, power, volumes, storage units, "
               "tags.")

#: Fields of ``gnt-node list`` without ``-o`` (Ganeti's).
LIST_DEFAULT_FIELDS = ["name", "dtotal", "dfree", "mtotal", "mnode", "mfree", "pinst_cnt",
                       "sinst_cnt"]

#: Fields ``gnt-node info`` shows, in the order of :func:`node_info_entries`.
INFO_FIELDS = ["name", "pip", "sip", "pinst_list", "sinst_list", "master_candidate",
               "drained", "offline", "master_capable", "vm_capable", "powered", "ndparams",
               "custom_ndparams"]


def _comma_join(value: Any) -> str:
    return ",".join(str(v) for v in value)


#: How ``gnt-node list`` shows the list fields (Ganeti's overrides).
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    name: (_comma_join, False) for name in ("pinst_list", "sinst_list", "tags")
}


def _ndparams(opts: argparse.Namespace) -> dict[str, str] | None:
    if opts.ndparams is None:
        return None
    return params.parse_keyval(opts.ndparams, "--node-parameters")


def _add_ndparams_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-N", "--node-parameters", dest="ndparams", metavar="KEY=VAL,...",
                   help="node parameters (ssh_port, spindle_count, oob_program, ...)")


def _add_capability_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master-capable", type=jobs.yes_no, metavar="yes|no",
                   help="whether the node may become master or master candidate")
    p.add_argument("--vm-capable", type=jobs.yes_no, metavar="yes|no",
                   help="whether the node may host instances")


# --- add, remove -----------------------------------------------------------------

def _setup_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--primary-ip", metavar="ADDRESS",
                   help="primary IP of the node (an extension: Ganeti resolves the name; "
                        "default: resolve it)")
    p.add_argument("-s", "--secondary-ip", metavar="ADDRESS",
                   help="secondary (replication) IP of the node (default: the primary IP)")
    p.add_argument("--readd", action="store_true",
                   help="re-add a node that is in the configuration (after reinstalling it)")
    # Ganeti's options for its SSH set-up of the node: accepted, and without effect here
    # (nodes are prepared beforehand; the master never logs in to them).
    p.add_argument("--no-ssh-key-check", dest="ssh_key_check", action="store_false",
                   help="accepted for compatibility: no SSH is used to add a node")
    p.add_argument("--no-node-setup", dest="node_setup", action="store_false",
                   help="accepted for compatibility: the node is never set up over SSH")
    p.add_argument("--force-join", action="store_true",
                   help="accepted for compatibility: without effect (Ganeti checks over "
                        "SSH whether the node is in another cluster)")
    p.add_argument("-g", "--node-group", dest="nodegroup", metavar="GROUP",
                   help="node group (name or UUID; default: the cluster's first group)")
    _add_capability_options(p)
    _add_ndparams_option(p)
    jobs.add_job_options(p, submit=False)
    p.add_argument("node_name", metavar="NODE", help="name of the node")


def add_opcode(opts: argparse.Namespace, secondary_ip: str | None) -> dict[str, Any]:
    """The OP_NODE_ADD of ``gnt-node add``."""
    op: dict[str, Any] = {"OP_ID": "OP_NODE_ADD", "node_name": opts.node_name,
                          "readd": opts.readd}
    values = {"primary_ip": opts.primary_ip, "secondary_ip": secondary_ip,
              "group": opts.nodegroup, "master_capable": opts.master_capable,
              "vm_capable": opts.vm_capable, "ndparams": _ndparams(opts)}
    op.update({key: value for key, value in values.items() if value is not None})
    return op


def cmd_add(ctx: Context, opts: argparse.Namespace) -> int:
    """Add a node (OP_NODE_ADD); refuses a known node without --readd and vice versa."""
    try:
        rows = table.query_rows(ctx, c.QR_NODE, ["name", "sip", "master"],
                                [opts.node_name])
    except errors.OpPrereqError:
        rows = []
    if opts.readd:
        if not rows:
            ctx.err(f"Node {opts.node_name} not in the cluster - please retry without "
                    "'--readd'")
            return c.EXIT_FAILURE
        name, sip, is_master = rows[0]
        if is_master:
            ctx.err(f"Node {opts.node_name} is the master, cannot readd")
            return c.EXIT_FAILURE
        secondary_ip = opts.secondary_ip or sip
    else:
        if rows:
            ctx.err(f"Node {opts.node_name} already in the cluster (as {rows[0][0]}) - "
                    "please retry with '--readd'")
            return c.EXIT_FAILURE
        secondary_ip = opts.secondary_ip
    if not opts.node_setup:
        ctx.out("-- WARNING -- \n"
                "--no-node-setup changes nothing: this cluster never sets a node up over "
                "SSH\n(install and start its node daemon with the cluster's certificate "
                "first).\n")
    jobs.submit_opcode(ctx, opts, add_opcode(opts, secondary_ip))
    return c.EXIT_SUCCESS


def _setup_remove(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, submit=False, dry_run=True)
    p.add_argument("node_name", metavar="NODE", help="name of the node")


def cmd_remove(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove a node from the cluster (OP_NODE_REMOVE)."""
    jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_NODE_REMOVE", "node_name": opts.node_name})
    return c.EXIT_SUCCESS


# --- modify ----------------------------------------------------------------------

def _setup_modify(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="force the operation (and do not ask before --offline no)")
    p.add_argument("-C", "--master-candidate", type=jobs.yes_no, metavar="yes|no",
                   help="set the master_candidate flag")
    p.add_argument("-O", "--offline", type=jobs.yes_no, metavar="yes|no",
                   help="set the offline flag (the cluster does not talk to offline nodes)")
    p.add_argument("-D", "--drained", type=jobs.yes_no, metavar="yes|no",
                   help="set the drained flag (no new instances are placed on the node)")
    _add_capability_options(p)
    p.add_argument("-s", "--secondary-ip", metavar="ADDRESS",
                   help="change the secondary IP")
    p.add_argument("--auto-promote", action="store_true",
                   help="promote other nodes to master candidates as needed")
    p.add_argument("--node-powered", dest="powered", type=jobs.yes_no, metavar="yes|no",
                   help="record whether the node is powered (nodes with an out-of-band "
                        "program only)")
    _add_ndparams_option(p)
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("node_name", metavar="NODE", help="name of the node")


_MODIFY_PARAMS = ("master_candidate", "offline", "drained", "master_capable", "vm_capable",
                  "secondary_ip")


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_NODE_SET_PARAMS of ``gnt-node modify`` (only what was given)."""
    op: dict[str, Any] = {"OP_ID": "OP_NODE_SET_PARAMS", "node_name": opts.node_name,
                          "force": opts.force, "auto_promote": opts.auto_promote}
    for name in (*_MODIFY_PARAMS, "powered"):
        if getattr(opts, name, None) is not None:
            op[name] = getattr(opts, name)
    ndparams = _ndparams(opts)
    if ndparams is not None:
        op["ndparams"] = ndparams
    return op


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change a node's flags or parameters (OP_NODE_SET_PARAMS)."""
    op = modify_opcode(opts)
    if not any(name in op for name in (*_MODIFY_PARAMS, "ndparams")):
        ctx.err("Please give at least one of the parameters.")  # as Ganeti: no usage text
        return c.EXIT_FAILURE
    if op.get("offline") is False and not opts.force:
        question = ("You are setting this node online manually. If the configuration has "
                    "changed, this can cause issues such as split brain. To safely bring a "
                    "node back online, please use --readd instead. If you are confident "
                    "that the configuration hasn't changed, continue?")
        if not jobs.ask_user(question):
            return c.EXIT_FAILURE  # Ganeti says nothing more
    jobs.print_modified(ctx, f"node {opts.node_name}", jobs.submit_or_send(ctx, opts, op))
    return c.EXIT_SUCCESS


# --- list, list-fields, info -----------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LIST_DEFAULT_FIELDS, units=True)
    table.add_filter_option(p)
    p.add_argument("names", nargs="*", metavar="NODE",
                   help="nodes to list: names or glob patterns, or one query filter "
                        "expression (default: all)")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the nodes: Query("node", fields, filter) as a table."""
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    qfilter = table.name_filter(opts.names, force_filter=opts.force_filter)
    return table.generic_list(ctx, c.QR_NODE, fields, qfilter, opts.separator,
                              not opts.no_headers, LIST_FORMAT, opts.verbose, opts.units)


def _setup_list_fields(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD",
                   help="fields to describe (default: all)")


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the node fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_NODE, opts.fields, opts.separator,
                                     not opts.no_headers)


def node_info_entries(row: Sequence[Any], accel: str | None = None) -> list[table.Entry]:
    """What ``gnt-node info`` shows of one node (a row of :data:`INFO_FIELDS`);
    ``accel``: what its kvm guests run under (``hv_accel``), when known."""
    (name, pip, sip, pinst, sinst, is_mc, drained, offline, master_capable, vm_capable,
     powered, ndparams, custom_ndparams) = row
    info: list[table.Entry] = [
        ("Node name", name),
        ("primary ip", pip),
        ("secondary ip", sip),
        ("master candidate", is_mc),
        ("drained", drained),
        ("offline", offline),
    ]
    if powered is not None:
        info.append(("powered", powered))
    info.append(("master_capable", master_capable))
    info.append(("vm_capable", vm_capable))
    if vm_capable and accel:
        info.append(("kvm guests run under", accel))
    if vm_capable:
        info.append(("primary for instances", sorted(pinst or [])))
        info.append(("secondary for instances", sorted(sinst or [])))
    info.append(("node parameters", table.format_params_info(custom_ndparams,
                                                             ndparams or {})))
    return info


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the nodes' details (all nodes without names), YAML-like.

    As Ganeti's: the classic QueryNodes, which skips unknown names (exit 0).
    """
    rows = ctx.luxi().call("QueryNodes", list(opts.names), INFO_FIELDS, False)
    accel = _kvm_accel(ctx, rows)
    ctx.out(table.format_generic_info([node_info_entries(row, accel.get(row[0]))
                                       for row in rows]))
    return c.EXIT_SUCCESS


def _kvm_accel(ctx: Context, rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """Node name -> what its kvm guests run under ("kvm" or "qemu (TCG)"), for the
    online vm_capable nodes of ``rows`` when the cluster enables kvm: the
    ``hv_accel`` field (an extension, asked of the nodes; nothing is shown where a
    node does not answer)."""
    names = [row[0] for row in rows if row[9] and not row[7]]
    if not names:
        return {}
    info = ctx.luxi().call("QueryClusterInfo")
    if c.HT_KVM not in (info or {}).get("enabled_hypervisors", []):
        return {}
    found = ctx.luxi().call("QueryNodes", names, ["name", "hv_accel"], False)
    return {name: value for name, value in found if isinstance(value, str)}


# --- tags ------------------------------------------------------------------------

def cmd_list_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the node's tags, one per line."""
    return jobs.list_tags(ctx, c.TAG_NODE, opts.node_name)


def cmd_add_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Add tags to a node (OP_TAGS_SET)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_SET", c.TAG_NODE)


def cmd_remove_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove tags from a node (OP_TAGS_DEL)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_DEL", c.TAG_NODE)


def _setup_names(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NODE", help="nodes (default: all)")


def _setup_one_node(p: argparse.ArgumentParser) -> None:
    p.add_argument("node_name", metavar="NODE", help="name of the node")


def _setup_tags(p: argparse.ArgumentParser) -> None:
    jobs.add_tag_options(p, "NODE")


COMMANDS = [
    Command("add", cmd_add, "Add a node to the cluster", _setup_add,
            "Add a node to the cluster (OP_NODE_ADD) and wait for the job. The node must "
            "be prepared beforehand (software installed, node daemon able to start); "
            "there is no SSH setup. --primary-ip is an extension for names that do not "
            "resolve."),
    Command("remove", cmd_remove, "Remove a node from the cluster", _setup_remove),
    Command("modify", cmd_modify, "Change a node's flags and parameters", _setup_modify,
            "Change a node's role flags, capabilities, secondary IP or node parameters "
            "(OP_NODE_SET_PARAMS) and print what changed."),
    Command("migrate", gnt_node_move.cmd_migrate,
            "Migrate all the primary instances of a node away from it",
            gnt_node_move.setup_migrate, gnt_node_move.MIGRATE_DESCRIPTION),
    Command("failover", gnt_node_move.cmd_failover,
            "Fail over all the primary instances of a node",
            gnt_node_move.setup_failover, gnt_node_move.FAILOVER_DESCRIPTION),
    Command("evacuate", evac.cmd_node_evacuate,
            "Relocate the primary and/or secondary instances from a node",
            evac.setup_node_evacuate, evac.NODE_EVACUATE_DESCRIPTION),
    Command("list", cmd_list, "List the nodes", _setup_list,
            "List the nodes (all, or those named; glob patterns such as 'node*' work; "
            "one argument such as 'master_candidate and not offline' is a query filter "
            "expression, see -F). "
            f"The default fields are {', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-node "
            "list-fields' shows all. Sizes are human-readable unless --units or "
            "--separator is given."),
    Command("list-fields", cmd_list_fields, "List the fields available for nodes",
            _setup_list_fields),
    Command("info", cmd_info, "Show information about nodes", _setup_names),
    Command("show", cmd_info, "Show information about nodes (same as info)", _setup_names),
    Command("health", gnt_node_oob.cmd_health, "Show the health of nodes (out-of-band)",
            gnt_node_oob.setup_health,
            "Run the out-of-band program's health command (OP_OOB_COMMAND) for the nodes "
            "(all without names) and show the items it reports; nodes without the ndparam "
            "oob_program show (unavail). Exit 1 if a node gave no answer."),
    Command("power", gnt_node_oob.cmd_power, "Change or show the power state of nodes",
            gnt_node_oob.setup_power,
            "Power nodes on, off or cycle them, or show their power state, through the "
            "out-of-band program (OP_OOB_COMMAND). 'off' first marks the nodes offline "
            "unless --ignore-status; on, off and cycle ask for confirmation unless -f and "
            "never act on the master."),
    Command("volumes", gnt_node_storage.cmd_volumes, "List logical volumes on node(s)",
            gnt_node_storage.setup_volumes,
            "List the logical volumes of the nodes (all without names) with their "
            "physical device, volume group, size and instance (OP_NODE_QUERYVOLS)."),
    Command("list-storage", gnt_node_storage.cmd_list_storage,
            "List the storage units of node(s)", gnt_node_storage.setup_list_storage,
            "List the storage units of the nodes (OP_NODE_QUERY_STORAGE); the storage type "
            "defaults to that of the first enabled disk template. The available fields "
            f"are: {', '.join(gnt_node_storage.STORAGE_FIELDS)}."),
    Command("modify-storage", gnt_node_storage.cmd_modify_storage,
            "Modify a storage unit on a node", gnt_node_storage.setup_modify_storage,
            "Change a storage unit of a node (OP_NODE_MODIFY_STORAGE): the allocatable "
            "flag of an LVM physical volume."),
    Command("repair-storage", gnt_node_storage.cmd_repair_storage,
            "Repair a storage unit on a node", gnt_node_storage.setup_repair_storage,
            "Repair a storage unit of a node (OP_REPAIR_NODE_STORAGE): make an LVM volume "
            "group consistent again (vgreduce --removemissing)."),
    Command("list-drbd", gnt_node_drbd.cmd_list_drbd,
            "Query the list of used DRBD minors on the given node",
            gnt_node_drbd.setup_list_drbd, gnt_node_drbd.DESCRIPTION),
    Command("list-tags", cmd_list_tags, "List the tags of a node", _setup_one_node),
    Command("add-tags", cmd_add_tags, "Add tags to a node", _setup_tags),
    Command("remove-tags", cmd_remove_tags, "Remove tags from a node", _setup_tags),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-node (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-node", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
