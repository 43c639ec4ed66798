"""Tables and YAML-like info output, as Ganeti's command-line tools print them.

``format_table`` lays out rows in columns: left-aligned text, right-aligned
numbers, one space between columns and no trailing spaces, or the columns
joined by ``--separator`` without padding.  ``generic_list`` runs a LUXI
``Query`` and prints its answer the way Ganeti's ``GenericList`` does
(headers from the field titles, ``-o``/``--output`` with ``+field`` to add to
the defaults, sizes in ``--units``, markers for values that are missing, a
warning and exit code 14 for unknown fields); ``generic_list_fields``
answers ``list-fields``; ``name_filter`` turns the arguments of a list
command (names, glob patterns or one filter expression, see
:func:`ganeti.core.qlang.make_filter`) into a query filter.
``format_generic_info`` renders nested data as Ganeti's ``PrintGenericInfo``
(``gnt-job info``, ``gnt-node info``), ``format_params_info`` shows
parameters with their defaults for it.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors, qlang
from ganeti.core.queryfields import base as queryfields_base

#: Ganeti's exit code for a query that asked for unknown fields.
EXIT_UNKNOWN_FIELD = c.EXIT_UNKNOWN_FIELD

#: How values whose status is not "normal" are shown: (verbose, short).
RESULT_STATUS_TEXT: dict[int, tuple[str, str]] = {
    c.RS_UNKNOWN: ("(unknown)", "??"),
    c.RS_NODATA: ("(nodata)", "?"),
    c.RS_UNAVAIL: ("(unavail)", "-"),
    c.RS_OFFLINE: ("(offline)", "*"),
}

#: Names of the field kinds in ``list-fields`` output (declared with the fields).
KIND_NAMES: dict[str, str] = queryfields_base.KIND_NAMES

Formatter = Callable[[Any], str]
#: field name -> (formatter, align right), overriding the default for its kind.
FormatOverride = Mapping[str, tuple[Formatter, bool]]


@dataclass(frozen=True)
class Column:
    """One table column: title, how a value becomes text, alignment."""

    title: str
    format: Formatter
    align_right: bool = False


#: ``--units`` choices: human-readable (M/G/T suffix), MiB, GiB, TiB.
UNITS = ("h", "m", "g", "t")

#: Characters that make a command-line argument a filter expression, not a name.
FILTER_DETECTION_CHARS = qlang.FILTER_DETECTION_CHARS

#: Characters that make a name a glob pattern.
GLOB_DETECTION_CHARS = qlang.GLOB_DETECTION_CHARS

#: The regular expression of a host-name glob pattern (``*`` and ``?`` stay
#: within one dot-separated part).
glob_pattern = qlang.glob_pattern


def parse_fields(selected: str | None, default: Sequence[str]) -> list[str]:
    """The fields of ``-o``: the defaults, ``+a,b`` added to them, or ``a,b`` alone."""
    if selected is None:
        return list(default)
    if selected.startswith("+"):
        return list(default) + selected[1:].split(",")
    return selected.split(",")


def format_table(rows: Sequence[Sequence[Any]], columns: Sequence[Column], header: bool,
                 separator: str | None) -> list[str]:
    """Lines of a table (Ganeti's ``FormatTable``)."""
    data: list[list[str]] = [[col.title for col in columns]] if header else []
    widths = [len(col.title) if header else 0 for col in columns]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"row has {len(row)} values for {len(columns)} columns")
        cells = [col.format(value) for value, col in zip(row, columns, strict=True)]
        widths = [max(w, len(cell)) for w, cell in zip(widths, cells, strict=True)]
        data.append(cells)
    if separator is not None:
        return [separator.join(cells) for cells in data]
    if columns and not columns[-1].align_right:
        widths[-1] = 0  # no padding at the end of the line
    lines = []
    for cells in data:
        parts = [cell.rjust(w) if col.align_right else cell.ljust(w)
                 for cell, col, w in zip(cells, columns, widths, strict=True)]
        lines.append(" ".join(parts))
    return lines


def format_time(seconds: Any, usecs: Any = None) -> str:
    """Local time as ``2024-01-31 12:00:00`` (``.123456`` with microseconds), or N/A."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return "N/A"
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))
    if usecs is not None:
        text += f".{int(usecs):06d}"
    return text


def format_timestamp(ts: Any) -> str:
    """A ``[seconds, microseconds]`` timestamp, or ``?`` (Ganeti's FormatTimestamp)."""
    if not isinstance(ts, (list, tuple)) or len(ts) != 2:
        return "?"
    return format_time(ts[0], ts[1])


def format_unit(value: Any, unit: str) -> str:
    """A size in MiB in ``unit`` (Ganeti's ``FormatUnit``): ``h`` picks M, G or T."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if unit == "m" or (unit == "h" and value < 1024):
        return f"{value:.0f}" + ("M" if unit == "h" else "")
    if unit == "g" or (unit == "h" and value < 1024 * 1024):
        return f"{value / 1024:.1f}" + ("G" if unit == "h" else "")
    return f"{value / 1024 / 1024:.1f}" + ("T" if unit == "h" else "")


def name_filter(names: Sequence[str], field: str = "name", force_filter: bool = False,
                numeric: bool = False) -> list[Any] | None:
    """The query filter for the arguments of a list command (Ganeti's ``MakeFilter``).

    One argument that looks like an expression (or any argument with
    ``force_filter``, the ``-F`` option) is parsed as a filter; otherwise
    each name becomes ``["==", field, name]``, or ``["=~", field, regexp]``
    if it holds ``*`` or ``?``, all or-ed; none gives None (all).
    ``numeric`` names are integers (job ids).  Errors are ``OpPrereqError``.
    """
    return qlang.make_filter(names, force_filter, field, numeric)


def add_filter_option(p: argparse.ArgumentParser) -> None:
    """``-F``/``--filter``: the argument is a query filter expression."""
    p.add_argument("-F", "--filter", dest="force_filter", action="store_true",
                   help="treat the argument as a query filter expression, even one "
                        "without spaces, quotes or operators")


def check_names_found(kind: str, wanted: Sequence[str], found: Sequence[str]) -> None:
    """Refuse names from the command line that matched nothing (``OpPrereqError``).

    A name matches as in filters (``node1`` finds ``node1.example.com``);
    glob patterns may match nothing.
    """
    missing = [name for name in wanted
               if not qlang.is_glob(name)
               and not any(qlang.hostname_matches(item, name) for item in found)]
    if missing:
        raise errors.OpPrereqError(f"{kind}(s) not known: {', '.join(missing)}",
                                   errors.ECODE_NOENT)


def _format_bool(value: Any) -> str:
    return "Y" if value else "N"


_DEFAULT_FORMATS: dict[str, tuple[Formatter, bool]] = {
    c.QFT_TEXT: (str, False),
    c.QFT_BOOL: (_format_bool, False),
    c.QFT_NUMBER: (str, True),
    c.QFT_NUMBER_FLOAT: (str, True),
    c.QFT_UNIT: (str, True),  # replaced by format_unit in the chosen unit
    c.QFT_TIMESTAMP: (format_time, False),
    c.QFT_OTHER: (str, False),
    c.QFT_UNKNOWN: (str, False),
}


def _cell_formatter(fn: Formatter, verbose: bool, seen: set[int]) -> Formatter:
    def fmt(cell: Any) -> str:
        status, value = cell
        seen.add(status)
        if status == c.RS_NORMAL:
            return fn(value)
        verbose_text, short = RESULT_STATUS_TEXT.get(status, ("(invalid)", "!"))
        return verbose_text if verbose else short
    return fmt


def _unit_formatter(unit: str) -> Formatter:
    return lambda value: format_unit(value, unit)


def format_query_result(response: Mapping[str, Any], header: bool, separator: str | None,
                        format_override: FormatOverride | None = None,
                        verbose: bool = False,
                        unit: str | None = None) -> tuple[bool, list[str]]:
    """Lines of a LUXI ``Query`` answer, and whether any field was unknown.

    Sizes (kind ``unit``) are shown in ``unit``; without one, human-readable
    in a table and in MiB with a separator (Ganeti's choice).
    """
    override = format_override or {}
    if unit is None:
        unit = "m" if separator else "h"
    seen: set[int] = set()
    columns = []
    for fdef in response["fields"]:
        if fdef["name"] in override:
            fn, right = override[fdef["name"]]
        elif fdef["kind"] == c.QFT_UNIT:
            fn, right = _unit_formatter(unit), True
        else:
            fn, right = _DEFAULT_FORMATS.get(fdef["kind"], (str, False))
        columns.append(Column(fdef["title"], _cell_formatter(fn, verbose, seen), right))
    lines = format_table(response["data"], columns, header, separator)
    unknown = c.RS_UNKNOWN in seen or any(f["kind"] == c.QFT_UNKNOWN
                                          for f in response["fields"])
    return unknown, lines


def warn_unknown_fields(ctx: Context, fielddefs: Sequence[Mapping[str, Any]]) -> bool:
    """Print Ganeti's warning for unknown fields; whether there were any."""
    unknown = [f["name"] for f in fielddefs if f["kind"] == c.QFT_UNKNOWN]
    if unknown:
        ctx.err("Warning: Queried for unknown fields " + ", ".join(unknown))
    return bool(unknown)


def generic_list(ctx: Context, resource: str, fields: list[str], qfilter: Any,
                 separator: str | None, header: bool,
                 format_override: FormatOverride | None = None,
                 verbose: bool = False, unit: str | None = None) -> int:
    """``Query(resource, fields, qfilter)`` printed as a table; the exit code."""
    response = ctx.luxi().call("Query", resource, fields, qfilter)
    found_unknown = warn_unknown_fields(ctx, response["fields"])
    _, lines = format_query_result(response, header, separator, format_override, verbose,
                                   unit)
    for line in lines:
        ctx.out(line)
    return EXIT_UNKNOWN_FIELD if found_unknown else c.EXIT_SUCCESS


def query_rows(ctx: Context, resource: str, fields: list[str],
               names: Sequence[str]) -> list[list[Any]]:
    """``Query`` of the named items (all without names; names and glob patterns,
    never filter expressions): rows of plain values, None where a value is missing."""
    response = ctx.luxi().call("Query", resource, fields, qlang.make_name_filter(names))
    return [[value if status == c.RS_NORMAL else None for status, value in row]
            for row in response["data"]]


def generic_list_fields(ctx: Context, resource: str, fields: list[str],
                        separator: str | None, header: bool) -> int:
    """``QueryFields(resource, fields)`` as a Name/Type/Title/Description table."""
    response = ctx.luxi().call("QueryFields", resource, fields or None)
    found_unknown = warn_unknown_fields(ctx, response["fields"])
    columns = [Column(title, str) for title in ("Name", "Type", "Title", "Description")]
    rows = [[f["name"], KIND_NAMES.get(f["kind"], f["kind"]), f["title"], f["doc"]]
            for f in response["fields"]]
    for line in format_table(rows, columns, header, separator):
        ctx.out(line)
    return EXIT_UNKNOWN_FIELD if found_unknown else c.EXIT_SUCCESS


def add_output_options(p: argparse.ArgumentParser, default_fields: Sequence[str] | None,
                       verbose: bool = True, units: bool = False) -> None:
    """``--no-headers``, ``--separator``, (with default fields) ``-o``, ``-v``, and
    ``--units`` if asked for."""
    p.add_argument("--no-headers", action="store_true", help="don't display column headers")
    p.add_argument("--separator", metavar="SEP",
                   help="separator between output fields (default: columns padded with "
                        "spaces)")
    if default_fields is not None:
        p.add_argument("-o", "--output", metavar="FIELDS",
                       help="comma-separated list of output fields; '+a,b' adds to the "
                            f"defaults ({','.join(default_fields)})")
    if verbose:
        p.add_argument("-v", "--verbose", action="store_true",
                       help="show missing values as words, e.g. (unavail), not marks")
    if units:
        p.add_argument("--units", choices=UNITS, default=None,
                       help="unit of sizes: h (human-readable, the default without "
                            "--separator), m (MiB, the default with --separator), g, t")


def add_list_options(p: argparse.ArgumentParser, default_fields: Sequence[str],
                     metavar: str, what: str) -> None:
    """The options and arguments of a ``list`` command: output options with
    ``--units``, ``-F`` and the names (or one filter expression)."""
    add_output_options(p, default_fields, units=True)
    add_filter_option(p)
    p.add_argument("names", nargs="*", metavar=metavar,
                   help=f"{what} to list: names or glob patterns, or one query filter "
                        "expression (default: all)")


def list_command(ctx: Context, opts: argparse.Namespace, resource: str,
                 default_fields: Sequence[str],
                 format_override: FormatOverride | None = None) -> int:
    """A ``list`` command with the options of :func:`add_list_options`."""
    fields = parse_fields(opts.output, default_fields)
    qfilter = name_filter(opts.names, force_filter=opts.force_filter)
    return generic_list(ctx, resource, fields, qfilter, opts.separator, not opts.no_headers,
                        format_override, opts.verbose, opts.units)


def add_list_fields_options(p: argparse.ArgumentParser) -> None:
    """The options and arguments of a ``list-fields`` command."""
    add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD",
                   help="fields to describe (default: all)")


# --- PrintGenericInfo ------------------------------------------------------------

#: An ordered mapping for :func:`format_generic_info`: (key, value) or
#: (key, value, alignment group) tuples; keys of a group are padded alike.
Entry = tuple[Any, ...]

_INDENT = "  "


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (list, dict, tuple))


def _serialize(out: list[str], data: Any, level: int, afterkey: bool = False) -> None:
    def start_block() -> bool:
        if afterkey:
            out.append("\n")
        return afterkey

    if isinstance(data, dict):
        if not data:
            out.append("\n")
            return
        indent = start_block()
        for key in sorted(data):
            if indent:
                out.append(_INDENT * level)
            indent = True
            out.append(f"{key}: ")
            _serialize(out, data[key], level + 1, afterkey=True)
    elif isinstance(data, list) and data and isinstance(data[0], tuple):
        indent = start_block()
        widths: dict[Any, int] = {}
        for entry in data:
            if len(entry) > 2:
                widths[entry[2]] = max(widths.get(entry[2], 0), len(entry[0]))
        for entry in data:
            key, value = entry[0], entry[1]
            if indent:
                out.append(_INDENT * level)
            indent = True
            out.append(f"{key}: ")
            if len(entry) > 2:
                out.append(" " * (widths[entry[2]] - len(key)))
            _serialize(out, value, level + 1, afterkey=True)
    elif isinstance(data, tuple) and all(_is_scalar(v) for v in data):
        out.append("[" + ", ".join(str(v) for v in data) + "]\n")
    elif isinstance(data, (list, tuple)):
        if not data:
            out.append("\n")
            return
        indent = start_block()
        for item in data:
            if indent:
                out.append(_INDENT * level)
            indent = True
            out.append("- ")
            _serialize(out, item, level + 1)
    else:
        out.append(f"{data}\n")


def format_params_info(own: Mapping[str, Any] | None,
                       actual: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters for info output (Ganeti's ``FormatParamsDictInfo``).

    A value set on the object itself is shown as it is; an inherited one as
    ``default (value)``.  Non-empty dicts (per hypervisor, per template) are
    shown nested, the same way.
    """
    own = own or {}
    result: dict[str, Any] = {}
    for key, value in actual.items():
        if isinstance(value, dict) and value:
            sub = own.get(key)
            result[key] = format_params_info(sub if isinstance(sub, dict) else {}, value)
        elif key in own:
            result[key] = str(own[key])
        else:
            result[key] = f"default ({value})"
    return result


def format_generic_info(data: Any) -> str:
    """Nested data as Ganeti's ``PrintGenericInfo`` prints it (valid YAML).

    Dicts are printed with sorted keys; lists of tuples are ordered
    mappings (see :data:`Entry`); tuples of scalars are inline lists
    ``[a, b]``; other lists are ``- item`` blocks.
    """
    out: list[str] = []
    _serialize(out, data, 0)
    return "".join(out).rstrip("\n")
