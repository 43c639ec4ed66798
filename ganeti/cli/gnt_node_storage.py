"""``gnt-node volumes``, ``list-storage``, ``modify-storage`` and ``repair-storage``.

Opcodes, options, output and exit codes are Ganeti's: the lists are
OP_NODE_QUERYVOLS and OP_NODE_QUERY_STORAGE printed as Ganeti's
``GenerateTable`` prints them (sizes right-aligned and human-readable unless
``--units`` or ``--separator``; allocatable as ``Y``/``N``; the header's last
column padded, the rows' not), the changes OP_NODE_MODIFY_STORAGE and
OP_REPAIR_NODE_STORAGE.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core import storagetypes as st

#: Default fields of ``gnt-node volumes`` and their titles (Ganeti's).
VOLUME_FIELDS = ["node", "phys", "vg", "name", "size", "instance"]
VOLUME_HEADERS = {"node": "Node", "phys": "PhysDev", "vg": "VG", "name": "Name",
                  "size": "Size", "instance": "Instance"}

#: Default fields of ``gnt-node list-storage`` and their titles (Ganeti's).
STORAGE_FIELDS = [st.SF_NODE, st.SF_TYPE, st.SF_NAME, st.SF_SIZE, st.SF_USED, st.SF_FREE,
                  st.SF_ALLOCATABLE]
STORAGE_HEADERS = {st.SF_NODE: "Node", st.SF_TYPE: "Type", st.SF_NAME: "Name",
                   st.SF_SIZE: "Size", st.SF_USED: "Used", st.SF_FREE: "Free",
                   st.SF_ALLOCATABLE: "Allocatable"}

#: Storage types a user may name (Ganeti's ``_USER_STORAGE_TYPE``).
USER_STORAGE_TYPES = [st.ST_FILE, st.ST_LVM_PV, st.ST_LVM_VG, st.ST_SHARED_FILE,
                      st.ST_GLUSTER]
MODIFIABLE_TYPES = sorted(st.MODIFIABLE_STORAGE_FIELDS)
REPAIRABLE_TYPES = sorted(t for t, ops in st.VALID_STORAGE_OPERATIONS.items()
                          if st.SO_FIX_CONSISTENCY in ops)


def generate_table(headers: dict[str, str] | None, fields: Sequence[str],
                   separator: str | None, data: Sequence[Sequence[Any]],
                   numfields: Sequence[str] = (), unitfields: Sequence[str] = (),
                   units: str | None = None) -> list[str]:
    """Lines of a table as Ganeti's ``GenerateTable``."""
    if units is None:
        units = "m" if separator else "h"
    rows: list[list[str]] = []
    for row in data:
        cells = []
        for name, value in zip(fields, row, strict=False):
            if name in unitfields:
                try:
                    value = table.format_unit(int(value), units)
                except (TypeError, ValueError):
                    pass
            cells.append(str(value))
        rows.append(cells)
    if separator is not None:
        lines = [separator.join(headers.get(f, f) for f in fields)] if headers else []
        return lines + [separator.join(cells) for cells in rows]
    widths = [max([len(headers.get(f, f)) if headers else 0]
                  + [len(r[i]) for r in rows if i < len(r)]) for i, f in enumerate(fields)]

    def line(cells: Sequence[str], pad_last: bool) -> str:
        parts = []
        for i, (name, cell) in enumerate(zip(fields, cells, strict=False)):
            width = widths[i] if (pad_last or i < len(fields) - 1 or name in numfields) else 0
            parts.append(cell.rjust(width) if name in numfields else cell.ljust(width))
        return " ".join(parts)
    out = [line([headers.get(f, f) for f in fields], True)] if headers else []
    return out + [line(cells, False) for cells in rows]


def _add_list_options(p: argparse.ArgumentParser, defaults: Sequence[str]) -> None:
    p.add_argument("--no-headers", action="store_true", help="don't display column headers")
    p.add_argument("--separator", metavar="SEP",
                   help="separator between output fields (default: columns padded with "
                        "spaces)")
    p.add_argument("--units", choices=table.UNITS, default=None,
                   help="unit of sizes: h (human-readable, the default without "
                        "--separator), m (MiB, the default with --separator), g, t")
    p.add_argument("-o", "--output", metavar="FIELDS",
                   help="comma-separated list of output fields; '+a,b' adds to the "
                        f"defaults ({','.join(defaults)})")
    jobs.add_priority_option(p)
    p.add_argument("names", nargs="*", metavar="NODE", help="nodes (default: all)")


def setup_volumes(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node volumes``."""
    _add_list_options(p, VOLUME_FIELDS)


def cmd_volumes(ctx: Context, opts: argparse.Namespace) -> int:
    """List the logical volumes of nodes (OP_NODE_QUERYVOLS)."""
    fields = table.parse_fields(opts.output, VOLUME_FIELDS)
    op = {"OP_ID": "OP_NODE_QUERYVOLS", "nodes": list(opts.names), "output_fields": fields}
    rows = jobs.submit_opcode(ctx, opts, op)
    headers = None if opts.no_headers else dict(VOLUME_HEADERS)
    for line in generate_table(headers, fields, opts.separator, rows, numfields=["size"],
                               unitfields=["size"], units=opts.units):
        ctx.out(line)
    return c.EXIT_SUCCESS


def setup_list_storage(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node list-storage``."""
    p.add_argument("-t", "--storage-type", dest="user_storage_type",
                   choices=USER_STORAGE_TYPES, default=None, metavar="STORAGE_TYPE",
                   help=f"storage type ({', '.join(USER_STORAGE_TYPES)})")
    _add_list_options(p, STORAGE_FIELDS)


def cmd_list_storage(ctx: Context, opts: argparse.Namespace) -> int:
    """List the storage units of nodes (OP_NODE_QUERY_STORAGE)."""
    fields = table.parse_fields(opts.output, STORAGE_FIELDS)
    op = {"OP_ID": "OP_NODE_QUERY_STORAGE", "nodes": list(opts.names),
          "storage_type": opts.user_storage_type, "output_fields": fields}
    rows = jobs.submit_opcode(ctx, opts, op)
    shown = []
    for row in rows:
        cells = []
        for name, value in zip(fields, row, strict=False):
            if name == st.SF_ALLOCATABLE:
                value = "Y" if value else "N"
            cells.append(value if name in (st.SF_SIZE, st.SF_USED, st.SF_FREE)
                         else str(value))
        shown.append(cells)
    headers = None if opts.no_headers else dict(STORAGE_HEADERS)
    sizes = [st.SF_SIZE, st.SF_USED, st.SF_FREE]
    for line in generate_table(headers, fields, opts.separator, shown, numfields=sizes,
                               unitfields=sizes, units=opts.units):
        ctx.out(line)
    return c.EXIT_SUCCESS


def _storage_args(p: argparse.ArgumentParser, types: Sequence[str]) -> None:
    # As Ganeti's client: any storage type a user may name is sent; the master says
    # which can be changed or repaired (only the completion suggests ``types``).
    p.add_argument("node_name", metavar="NODE", help="name of the node")
    p.add_argument("storage_type", metavar="STORAGE_TYPE",
                   help=f"storage type ({', '.join(USER_STORAGE_TYPES)}; "
                        f"{', '.join(types)} accept this command)")
    p.add_argument("volume_name", metavar="NAME", help="name of the storage unit")


def user_storage_type(name: str) -> str:
    """A storage type a user may name, else OpPrereqError (Ganeti's
    ``ConvertStorageType``)."""
    if name not in USER_STORAGE_TYPES:
        raise errors.OpPrereqError(f"Unknown storage type: {name}", errors.ECODE_INVAL)
    return name


def setup_modify_storage(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node modify-storage``."""
    p.add_argument("--allocatable", type=jobs.yes_no, default=None, metavar="yes|no",
                   help="set the allocatable flag on a volume")
    jobs.add_job_options(p, dry_run=True)
    _storage_args(p, MODIFIABLE_TYPES)


def cmd_modify_storage(ctx: Context, opts: argparse.Namespace) -> int:
    """Change a storage unit (OP_NODE_MODIFY_STORAGE); nothing to change: a message."""
    storage_type = user_storage_type(opts.storage_type)
    changes: dict[str, Any] = {}
    if opts.allocatable is not None:
        changes[st.SF_ALLOCATABLE] = opts.allocatable
    if not changes:
        ctx.err("No changes to perform, exiting.")
        return c.EXIT_SUCCESS
    jobs.submit_or_send(ctx, opts, {
        "OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": opts.node_name,
        "storage_type": storage_type, "name": opts.volume_name, "changes": changes})
    return c.EXIT_SUCCESS


def setup_repair_storage(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-node repair-storage``."""
    p.add_argument("--ignore-consistency", action="store_true", default=False,
                   help="ignore the consistency of the disks on the secondary")
    jobs.add_job_options(p, dry_run=True)
    _storage_args(p, REPAIRABLE_TYPES)


def cmd_repair_storage(ctx: Context, opts: argparse.Namespace) -> int:
    """Repair a storage unit (OP_REPAIR_NODE_STORAGE)."""
    storage_type = user_storage_type(opts.storage_type)
    jobs.submit_or_send(ctx, opts, {
        "OP_ID": "OP_REPAIR_NODE_STORAGE", "node_name": opts.node_name,
        "storage_type": storage_type, "name": opts.volume_name,
        "ignore_consistency": opts.ignore_consistency})
    return c.EXIT_SUCCESS

