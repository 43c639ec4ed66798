"""gnt-os: list, inspect, diagnose and modify the operating system definitions.

Like Ganeti's, every command but ``modify`` submits OP_OS_DIAGNOSE and waits
for it; ``modify`` submits OP_CLUSTER_SET_PARAMS with the per-OS parameters
(``os_hvp``, ``osparams``, ``osparams_private_cluster``) and the hidden and
blacklisted lists.  The output is Ganeti's, except that ``diagnose`` names the
nodes (Ganeti 3.0 prints their UUIDs, the keys of ``node_status``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import params, query

DESCRIPTION = "Ganeti operating system definitions: list, info, diagnose, modify."

#: What ``gnt-os info`` asks for, in Ganeti's order.
INFO_FIELDS = ["name", "valid", "variants", "parameters", "api_versions", "blacklisted",
               "hidden", "os_hvp", "osparams", "trusted"]
#: What ``gnt-os diagnose`` asks for.
DIAGNOSE_FIELDS = ["name", "valid", "variants", "node_status", "hidden", "blacklisted"]


def os_names(name: str, variants: Sequence[str] | None) -> list[str]:
    """Every name an OS can be called by (Ganeti's ``CalculateOSNames``)."""
    return [f"{name}+{v}" for v in variants] if variants else [name]


def diagnose(ctx: Context, opts: argparse.Namespace, fields: list[str]) -> list[list[Any]]:
    """The rows of OP_OS_DIAGNOSE for ``fields`` (all OSes)."""
    result = jobs.submit_opcode(ctx, opts, {"OP_ID": "OP_OS_DIAGNOSE",
                                            "output_fields": fields, "names": []})
    return list(result or [])


# --- list, info ------------------------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-headers", action="store_true", help="do not print the header line")
    jobs.add_priority_option(p)


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """The valid, visible OSes, one name (``os+variant``) per line."""
    names = [n for name, variants in diagnose(ctx, opts, ["name", "variants"])
             for n in os_names(name, variants)]
    if not opts.no_headers:  # Ganeti pads the header (only) to the widest name
        ctx.out("Name".ljust(max([len(n) for n in names] + [0])))
    for name in names:
        ctx.out(name)
    return c.EXIT_SUCCESS


def _setup_info(p: argparse.ArgumentParser) -> None:
    jobs.add_priority_option(p)
    p.add_argument("names", nargs="*", metavar="OS",
                   help="OSes to show (default: all); a name with a variant shows its "
                        "cluster parameters")


def os_info_lines(row: Sequence[Any]) -> list[str]:
    """What ``gnt-os info`` prints of one OS (a row of :data:`INFO_FIELDS`)."""
    name, valid, variants, parameters, api_versions, blk, hid, _, _, trusted = row
    lines = [f"{name}:", f"  - valid: {valid}", f"  - hidden: {hid}",
             f"  - blacklisted: {blk}"]
    if valid:
        lines.append("  - API versions:")
        lines.extend(f"    - {v}" for v in sorted(api_versions))
        lines.append("  - variants:")
        lines.extend(f"    - {v}" for v in variants)
        lines.append("  - parameters:")
        lines.extend(f"    - {pname}: {pdesc}" for pname, pdesc in parameters)
    lines.extend([f"  - trusted: {trusted}", ""])
    return lines


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Details of the OSes (all, or those named), as Ganeti prints them."""
    wanted = list(opts.names)
    all_hvp: dict[str, Any] = {}
    all_osp: dict[str, Any] = {}
    for row in diagnose(ctx, opts, INFO_FIELDS):
        all_hvp.update(row[7])
        all_osp.update(row[8])
        if opts.names:
            if row[0] not in wanted:
                continue
            wanted.remove(row[0])
        for line in os_info_lines(row):
            ctx.out(line)
    for name in wanted:  # names with a variant: their cluster parameters
        if name not in all_hvp and name not in all_osp:
            ctx.out(f"{name}: ")
        else:
            ctx.out(table.format_generic_info([
                (name, [("OS-specific hypervisor parameters", all_hvp.get(name, {})),
                        ("OS parameters", all_osp.get(name, {}))])]))
        ctx.out("")
    return c.EXIT_SUCCESS


# --- diagnose --------------------------------------------------------------------

def _status(ok: bool, message: str) -> str:
    return "valid" if ok else f"invalid - {message}"


def describe_node(entries: list[Any]) -> tuple[bool, str, list[str]]:
    """One node's view of an OS: ``(valid, message, lines of its shadowed copies)``."""
    if not entries:
        return False, "OS not found", []
    path, ok, message, variants, parameters, api, trusted = entries[0]
    text = f"{_status(ok, message)} (path: {path})"
    top = max(api) if api else 0
    text += f" [API versions: {', '.join(str(v) for v in api)}]" if api else \
        " [no API versions declared]"
    if top >= 15:
        text += f" [variants: {', '.join(variants)}]" if variants else " [no variants]"
    if top >= 20:
        text += (f" [parameters: {', '.join(p[0] for p in parameters)}]" if parameters
                 else " [no parameters]")
    text += " [trusted]" if trusted else " [untrusted]"
    hidden = [f"    [hidden] path: {e[0]}, status: {_status(e[1], e[2])}" for e in entries[1:]]
    return bool(ok), text, hidden


def diagnose_lines(row: Sequence[Any], node_names: Mapping[str, str]) -> tuple[bool, list[str]]:
    """What ``gnt-os diagnose`` prints of one OS, and whether it is bad somewhere."""
    name, _, variants, node_data, hidden, blacklisted = row
    good: dict[str, tuple[str, list[str]]] = {}
    bad: dict[str, tuple[str, list[str]]] = {}
    for key, entries in node_data.items():
        ok, text, shadowed = describe_node(entries)
        (good if ok else bad)[node_names.get(key, key)] = (text, shadowed)
    if good and not bad:
        status = "valid"
    elif bad and not good:
        status = "invalid"
    else:
        status = "partial valid"
    head = f"OS: {name} [global status: {status}]"
    head += " [hidden]" if hidden else ""
    head += " [blacklisted]" if blacklisted else ""
    lines = [head]
    if variants:
        lines.append(f"  Variants: [{', '.join(variants)}]")
    for group in (good, bad):
        for node in sorted(group, key=query.nice_sort_key):
            text, shadowed = group[node]
            lines.append(f"  Node: {node}, status: {text}")
            lines.extend(shadowed)
    lines.append("")
    return status != "valid", lines


def cmd_diagnose(ctx: Context, opts: argparse.Namespace) -> int:
    """Every OS on every node; exit code 1 if one is not valid everywhere."""
    rows = diagnose(ctx, opts, DIAGNOSE_FIELDS)
    names = {uuid: name for name, uuid in table.query_rows(ctx, c.QR_NODE, ["name", "uuid"],
                                                           [])}
    has_bad = False
    for row in rows:
        bad, lines = diagnose_lines(row, names)
        has_bad = has_bad or bad
        for line in lines:
            ctx.out(line)
    return int(has_bad)


# --- modify ----------------------------------------------------------------------

def _setup_modify(p: argparse.ArgumentParser) -> None:
    p.add_argument("-H", "--hypervisor-parameters", action="append", default=[],
                   metavar="HYPERVISOR:KEY=VAL,...",
                   help="OS-specific hypervisor parameters (repeatable)")
    p.add_argument("-O", "--os-parameters", metavar="KEY=VAL,...",
                   help="OS parameters (-KEY removes one)")
    p.add_argument("--os-parameters-private", metavar="KEY=VAL,...",
                   help="private OS parameters (-KEY removes one)")
    p.add_argument("--hidden", type=jobs.yes_no, metavar="yes|no",
                   help="hide the OS from 'gnt-os list' or show it again")
    p.add_argument("--blacklisted", type=jobs.yes_no, metavar="yes|no",
                   help="forbid new instances of the OS or allow them again")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("os_name", metavar="OS", help="the OS (name or name+variant)")


def _os_params(text: str, flag: str) -> dict[str, Any]:
    """``-O`` values as Ganeti splits them: ``-key`` removes a key (null)."""
    return {key[1:] if key.startswith("-") else key: None if key.startswith("-") else value
            for key, value in params.parse_keyval(text, flag).items()}


def modify_opcode(opts: argparse.Namespace) -> dict[str, Any]:
    """The OP_CLUSTER_SET_PARAMS of ``gnt-os modify`` (only what was given)."""
    name = opts.os_name
    op: dict[str, Any] = {"OP_ID": "OP_CLUSTER_SET_PARAMS"}
    if opts.hypervisor_parameters:
        op["os_hvp"] = {name: jobs.ident_keyval(opts.hypervisor_parameters, "-H",
                                                "HYPERVISOR")}
    if opts.os_parameters:
        op["osparams"] = {name: _os_params(opts.os_parameters, "-O")}
    if opts.os_parameters_private:
        op["osparams_private_cluster"] = {
            name: _os_params(opts.os_parameters_private, "--os-parameters-private")}
    for flag, param in (("hidden", "hidden_os"), ("blacklisted", "blacklisted_os")):
        value = getattr(opts, flag)
        if value is not None:
            op[param] = [["add" if value else "remove", name]]
    return op


def cmd_modify(ctx: Context, opts: argparse.Namespace) -> int:
    """Change an OS's cluster parameters or its hidden/blacklisted state."""
    op = modify_opcode(opts)
    if len(op) == 1:
        ctx.err("At least one of OS parameters or hypervisor parameters must be passed")
        return c.EXIT_FAILURE
    jobs.submit_or_send(ctx, opts, op)
    return c.EXIT_SUCCESS


COMMANDS = [
    Command("list", cmd_list, "Lists all valid operating systems on the cluster",
            _setup_list),
    Command("diagnose", cmd_diagnose, "Diagnose all operating systems",
            lambda p: jobs.add_priority_option(p)),
    Command("info", cmd_info, "Show detailed information about operating systems",
            _setup_info),
    Command("show", cmd_info, "Show detailed information about operating systems (alias "
            "of info)", _setup_info),
    Command("modify", cmd_modify, "Modify the OS parameters", _setup_modify,
            "Change the cluster's parameters of one OS (hypervisor and OS parameters, "
            "private ones too) or hide or blacklist it (OP_CLUSTER_SET_PARAMS)."),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-os (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-os", DESCRIPTION, COMMANDS, argv, **kwargs)


__all__ = ["COMMANDS", "DIAGNOSE_FIELDS", "INFO_FIELDS", "main", "os_names"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
