"""gnt-network: add, remove, modify, connect, disconnect, list and inspect IP networks."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, params

DESCRIPTION = ("Ganeti network administration: add, remove, modify, connect, disconnect, "
               "list, list-fields, info, tags.")

#: Fields of ``gnt-network list`` without ``-o`` (Ganeti's).
LIST_DEFAULT_FIELDS = ["name", "network", "gateway", "mac_prefix", "group_list", "tags"]

#: Fields ``gnt-network info`` reads, in the order of :func:`network_info_lines`.
INFO_FIELDS = ["name", "network", "gateway", "network6", "gateway6", "mac_prefix",
               "free_count", "reserved_count", "map", "group_list", "inst_list",
               "external_reservations", "serial_no", "uuid"]


def _group_list(value: Any) -> str:
    return ", ".join(f"{name} ({mode}, {link}, {vlan})" for name, mode, link, vlan in value)


def _comma_join(value: Any) -> str:
    return ",".join(str(v) for v in value)


#: How ``gnt-network list`` shows some fields (Ganeti's overrides).
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    "group_list": (_group_list, False),
    "inst_list": (_comma_join, False),
    "tags": (_comma_join, False),
}


def reserved_ips(value: str | None) -> list[str] | None:
    """``--add-reserved-ips``/``--remove-reserved-ips``: a comma-separated list
    (a backslash escapes a comma, as Ganeti's ``UnescapeAndSplit``)."""
    if value is None:
        return None
    if not value:
        return []
    items, current, chars = [], "", iter(value)
    for char in chars:
        if char == "\\":
            current += next(chars, "\\")
        elif char == ",":
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    return items


# --- add, modify, remove ---------------------------------------------------------

def _address_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gateway", metavar="GATEWAY", help="IPv4 gateway of the network")
    p.add_argument("--add-reserved-ips", metavar="IPS",
                   help="comma-separated addresses to reserve outside Ganeti")
    p.add_argument("--mac-prefix", metavar="PREFIX",
                   help="MAC prefix of the network's NICs (three octets, aa:00:00)")
    p.add_argument("--network6", metavar="NETWORK6", help="IPv6 subnet (CIDR)")
    p.add_argument("--gateway6", metavar="GATEWAY6", help="IPv6 gateway")


def _setup_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--network", metavar="NETWORK", help="IPv4 subnet in CIDR notation "
                   "(mandatory)")
    _address_options(p)
    p.add_argument("--no-conflicts-check", dest="conflicts_check", action="store_false",
                   help="do not reserve the node and master addresses in the network")
    p.add_argument("--tags", metavar="TAG,...", help="comma-separated tags of the network")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("network_name", metavar="NETWORK", help="name of the new network")


def add_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_NETWORK_ADD of ``gnt-network add``."""
    if opts.network is None:
        raise errors.OpPrereqError("The --network option must be given", errors.ECODE_INVAL)
    return {"OP_ID": "OP_NETWORK_ADD", "network_name": opts.network_name,
            "network": opts.network, "gateway": opts.gateway, "network6": opts.network6,
            "gateway6": opts.gateway6, "mac_prefix": opts.mac_prefix,
            "add_reserved_ips": reserved_ips(opts.add_reserved_ips),
            "conflicts_check": opts.conflicts_check,
            "tags": opts.tags.split(",") if opts.tags is not None else []}


def cmd_add(ctx: Context, opts: argparse.Namespace) -> int:
    """Add a network (OP_NETWORK_ADD)."""
    jobs.submit_or_send(ctx, opts, add_opcode(opts))
    return c.EXIT_SUCCESS


def _setup_modify(p: argparse.ArgumentParser) -> None:
    _address_options(p)
    p.add_argument("--remove-reserved-ips", metavar="IPS",
                   help="comma-separated addresses to release")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("network_name", metavar="NETWORK", help="name or UUID of the network")


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any] | None:
    """The OP_NETWORK_SET_PARAMS of ``gnt-network modify``; None if nothing was given."""
    changes = {"gateway": opts.gateway,
               "add_reserved_ips": reserved_ips(opts.add_reserved_ips),
               "remove_reserved_ips": reserved_ips(opts.remove_reserved_ips),
               "mac_prefix": opts.mac_prefix, "gateway6": opts.gateway6,
               "network6": opts.network6}
    if all(value is None for value in changes.values()):
        return None
    return {"OP_ID": "OP_NETWORK_SET_PARAMS", "network_name": opts.network_name, **changes}


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change a network's parameters (OP_NETWORK_SET_PARAMS)."""
    op = modify_opcode(opts)
    if op is None:
        ctx.err("Please give at least one of the parameters.")
        return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, op)
    return c.EXIT_SUCCESS


def _setup_remove(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true", help="force the operation")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("network_name", metavar="NETWORK", help="name or UUID of the network")


def cmd_remove(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove a network no group is connected to (OP_NETWORK_REMOVE)."""
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_NETWORK_REMOVE",
                                    "network_name": opts.network_name,
                                    "force": opts.force})
    return c.EXIT_SUCCESS


# --- connect, disconnect ---------------------------------------------------------

def _groups(ctx: Context, names: Sequence[str]) -> list[str]:
    """The groups given, or (as Ganeti's) the UUIDs of all groups."""
    if names:
        return list(names)
    return [row[0] for row in ctx.luxi().call("QueryGroups", [], ["uuid"], False)]


def _setup_connect(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-conflicts-check", dest="conflicts_check", action="store_false",
                   help="do not look for NIC addresses of the groups' instances in the "
                        "network")
    p.add_argument("-N", "--nic-parameters", dest="nicparams", metavar="KEY=VAL,...",
                   help="NIC parameters of the network in the groups: mode, link, vlan")
    jobs.add_job_options(p, submit=False)
    p.add_argument("network_name", metavar="NETWORK", help="name or UUID of the network")
    p.add_argument("groups", nargs="*", metavar="GROUP", help="groups (default: all)")


def connect_opcodes(ctx: Context, opts: argparse.Namespace) -> list[dict[str, Any]]:
    """One OP_NETWORK_CONNECT per group, NIC parameters filled from Ganeti's defaults."""
    given = params.parse_keyval(opts.nicparams or "", "--nic-parameters")
    nicparams = {**c.NICC_DEFAULTS,
                 **params.check_params(given, c.NICC_DEFAULTS, "--nic-parameters")}
    return [{"OP_ID": "OP_NETWORK_CONNECT", "group_name": group,
             "network_name": opts.network_name, "network_mode": nicparams[c.NIC_MODE],
             "network_link": nicparams[c.NIC_LINK], "network_vlan": nicparams[c.NIC_VLAN],
             "conflicts_check": opts.conflicts_check}
            for group in _groups(ctx, opts.groups)]


def cmd_connect(ctx: Context, opts: argparse.Namespace) -> int:
    """Connect a network to groups (OP_NETWORK_CONNECT each, one after another)."""
    for op in connect_opcodes(ctx, opts):
        jobs.submit_opcode(ctx, opts, op)
    return c.EXIT_SUCCESS


def _setup_disconnect(p: argparse.ArgumentParser) -> None:
    jobs.add_job_options(p, submit=False)
    p.add_argument("network_name", metavar="NETWORK", help="name or UUID of the network")
    p.add_argument("groups", nargs="*", metavar="GROUP", help="groups (default: all)")


def cmd_disconnect(ctx: Context, opts: argparse.Namespace) -> int:
    """Disconnect a network from groups (OP_NETWORK_DISCONNECT each)."""
    for group in _groups(ctx, opts.groups):
        jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_NETWORK_DISCONNECT",
                                       "group_name": group,
                                       "network_name": opts.network_name})
    return c.EXIT_SUCCESS


# --- list, list-fields, info -----------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LIST_DEFAULT_FIELDS)
    p.add_argument("names", nargs="*", metavar="NETWORK",
                   help="networks to list: names or glob patterns, or one query filter "
                        "expression (default: all)")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the networks: Query("network", fields, filter) as a table."""
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    qfilter = table.name_filter(opts.names)
    return table.generic_list(ctx, c.QR_NETWORK, fields, qfilter, opts.separator,
                              not opts.no_headers, LIST_FORMAT, opts.verbose)


def _setup_list_fields(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD",
                   help="fields to describe (default: all)")


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the network fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_NETWORK, opts.fields, opts.separator,
                                     not opts.no_headers)


def network_info_lines(row: Sequence[Any], nic_ips: dict[str, list[str]]) -> list[str]:
    """What ``gnt-network info`` prints of one network (a row of :data:`INFO_FIELDS`);
    ``nic_ips``: per instance using it, ``index:ip`` of its NICs on the network."""
    (name, network, gateway, network6, gateway6, mac_prefix, free, reserved, usage,
     groups, instances, ext_res, serial, uuid) = row
    size = free + reserved
    lines = [f"Network name: {name}", f"UUID: {uuid}", f"Serial number: {serial}",
             f"  Subnet: {network}", f"  Gateway: {gateway}",
             f"  IPv6 Subnet: {network6}", f"  IPv6 Gateway: {gateway6}",
             f"  Mac Prefix: {mac_prefix}", f"  Size: {size}",
             f"  Free: {free} ({100 * free / size:.2f}%)" if size else f"  Free: {free}",
             "  Usage map:"]
    for start in range(0, len(usage), 64):
        lines.append(f"     {str(start).rjust(4)} {usage[start:start + 64].ljust(64)} "
                     f"{start + 63}")
    lines.append("         (X) used    (.) free")
    if ext_res:
        lines.append("  externally reserved IPs:")
        lines.extend(f"    {line}" for line in textwrap.wrap(ext_res, width=64))
    if groups:
        lines.append("  connected to node groups:")
        lines.extend(f"    {group} (mode:{mode} link:{link} vlan:{vlan})"
                     for group, mode, link, vlan in groups)
    else:
        lines.append("  not connected to any node group")
    if instances:
        lines.append(f"  used by {len(instances)} instances:")
        lines.extend(f"    {inst}: {', '.join(nic_ips.get(inst, []))}" for inst in instances)
    else:
        lines.append("  not used by any instances")
    return lines


def _nic_ips(ctx: Context, instance: str, network_uuid: str) -> list[str]:
    rows = ctx.luxi().call("QueryInstances", [instance], ["nic.ips", "nic.networks"], False)
    if not rows:
        return []
    ips, networks = rows[0]
    return [f"{index}:{ip}" for index, (ip, net) in enumerate(zip(ips, networks, strict=False))
            if net == network_uuid]


def _setup_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NETWORK", help="networks (default: all)")


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the networks' pools, groups and users (QueryNetworks)."""
    rows = ctx.luxi().call("QueryNetworks", list(opts.names), INFO_FIELDS, False)
    for row in rows:
        users = {inst: _nic_ips(ctx, inst, row[-1]) for inst in row[10] or []}
        for line in network_info_lines(row, users):
            ctx.out(line)
    return c.EXIT_SUCCESS


# --- tags ------------------------------------------------------------------------

def _setup_one_network(p: argparse.ArgumentParser) -> None:
    p.add_argument("network_name", metavar="NETWORK", help="name of the network")


def cmd_list_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the network's tags, one per line."""
    return jobs.list_tags(ctx, c.TAG_NETWORK, opts.network_name)


def cmd_add_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Add tags to a network (OP_TAGS_SET)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_SET", c.TAG_NETWORK)


def cmd_remove_tags(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove tags from a network (OP_TAGS_DEL)."""
    return jobs.tags_command(ctx, opts, "OP_TAGS_DEL", c.TAG_NETWORK)


def _setup_tags(p: argparse.ArgumentParser) -> None:
    jobs.add_tag_options(p, "NETWORK")


COMMANDS = [
    Command("add", cmd_add, "Add a new IP network to the cluster", _setup_add),
    Command("remove", cmd_remove, "Remove an (empty) network from the cluster",
            _setup_remove),
    Command("modify", cmd_modify, "Alter the parameters of a network", _setup_modify,
            "Change a network's gateways, IPv6 subnet, MAC prefix or externally reserved "
            "addresses (OP_NETWORK_SET_PARAMS); its IPv4 subnet cannot change."),
    Command("connect", cmd_connect, "Map a network to node groups with NIC parameters",
            _setup_connect,
            "Connect a network to the named node groups (all without names) with the NIC "
            "mode, link and VLAN of -N (defaults: the cluster's NIC defaults)."),
    Command("disconnect", cmd_disconnect, "Unmap a network from node groups",
            _setup_disconnect),
    Command("list", cmd_list, "List the IP networks", _setup_list,
            "List the networks (all, or those named or matching a glob pattern; one "
            "argument such as 'free_count < 10' is a query filter expression). The "
            f"default fields are {', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-network "
            "list-fields' shows all."),
    Command("list-fields", cmd_list_fields, "List the fields available for networks",
            _setup_list_fields),
    Command("info", cmd_info, "Show information about networks", _setup_info),
    Command("list-tags", cmd_list_tags, "List the tags of a network", _setup_one_network),
    Command("add-tags", cmd_add_tags, "Add tags to a network", _setup_tags),
    Command("remove-tags", cmd_remove_tags, "Remove tags from a network", _setup_tags),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-network (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-network", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
