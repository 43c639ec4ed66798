"""gnt-filter: add, replace, delete, list and inspect the job queue's filter rules.

A filter rule decides what happens to the jobs it matches (accept, pause,
reject, rate-limit); see docs/man/gnt-filter.8.  Rules are changed at once by
the master (LUXI ``ReplaceFilter``/``DeleteFilter``), not through the job
queue, so these commands print their result directly instead of following a
job.  The options and their defaults are Ganeti's: ``add`` and ``replace``
send every field, so ``replace`` resets what is not given to its default.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

from ganeti.cli import table
from ganeti.cli.framework import Command, Context, run_tool
from ganeti.core import constants as c
from ganeti.core import jobfilters, serializer

DESCRIPTION = ("Ganeti job filter rule administration: add, replace, delete, list, "
               "list-fields, info.")

#: Fields of ``gnt-filter list`` without ``-o`` (Ganeti's), also what ``info`` shows.
LIST_DEFAULT_FIELDS = list(jobfilters.RULE_FIELDS)

#: ``RATE_LIMIT n`` as Ganeti's ``filteraction`` option type spells it.
_RATE_LIMIT_RE = re.compile(rf"{jobfilters.RATE_LIMIT}\s+(\d+)")

_ACTION_FORMS = ", ".join([*jobfilters.SIMPLE_ACTIONS, f"'{jobfilters.RATE_LIMIT} n'"])


# --- option types and value formats ----------------------------------------------

def filter_action(text: str) -> Any:
    """An argparse type for ``--action``: ACCEPT, PAUSE, REJECT, CONTINUE, or
    ``RATE_LIMIT n`` (n a positive integer), which becomes ``["RATE_LIMIT", n]``."""
    value = text.strip()
    if value in jobfilters.SIMPLE_ACTIONS:
        return value
    match = _RATE_LIMIT_RE.fullmatch(value)
    if match:
        limit = int(match.group(1))
        if limit < 1:
            raise argparse.ArgumentTypeError(
                f"{jobfilters.RATE_LIMIT} needs a positive number of jobs, got {limit}")
        return [jobfilters.RATE_LIMIT, limit]
    hint = ""
    if value == jobfilters.RATE_LIMIT:
        hint = f" (give the limit in the same argument: --action '{jobfilters.RATE_LIMIT} 5')"
    raise argparse.ArgumentTypeError(f"invalid action {text!r}; use one of "
                                     f"{_ACTION_FORMS}{hint}")


def json_list(text: str) -> list[Any]:
    """An argparse type for ``--predicates``: a JSON list."""
    try:
        value = serializer.load_json(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text!r}") from None
    if not isinstance(value, list):
        raise argparse.ArgumentTypeError(
            f"expected a JSON list of predicates such as "
            f'\'[["jobid", [">", "id", "watermark"]]]\', got {text!r}')
    return value


def format_value(value: Any) -> str:
    """A field as Ganeti's gnt-filter prints it: Python's ``str`` of the decoded JSON
    (``[['jobid', ['>', 'id', 'watermark']]]``, ``['RATE_LIMIT', 3]``)."""
    return str(value)


#: How ``gnt-filter list`` shows the fields of kind "other": as Ganeti, plainly.
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {}


# --- add, replace, delete --------------------------------------------------------

def _add_rule_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--priority", type=int, default=0, metavar="N",
                   help="non-negative priority; rules with lower numbers are evaluated "
                        "first (default: 0)")
    p.add_argument("--predicates", type=json_list, default=[], metavar="JSON",
                   help="JSON list of predicates [name, filter], name one of jobid, "
                        "opcode, reason, e.g. '[[\"jobid\", [\">\", \"id\", "
                        "\"watermark\"]]]'; a rule matches a job if all match "
                        "(default: [], every job)")
    p.add_argument("--action", type=filter_action, default=jobfilters.CONTINUE,
                   metavar="ACTION",
                   help=f"what happens to the jobs the rule matches: {_ACTION_FORMS} "
                        f"(default: {jobfilters.CONTINUE})")
    p.add_argument("--reason", metavar="TEXT",
                   help="why the rule is added, recorded in its reason trail")


def _reason(opts: argparse.Namespace) -> list[list[Any]]:
    """The reason trail sent with a rule: the user's ``--reason`` (Ganeti's source
    ``gnt:user``), or nothing; the master adds its own entry."""
    if not opts.reason:
        return []
    return [[c.OPCODE_REASON_SRC_USER, opts.reason, time.time_ns()]]


def _replace(ctx: Context, opts: argparse.Namespace, uuid: str | None) -> int:
    result = ctx.luxi().call("ReplaceFilter", uuid, opts.priority, opts.predicates,
                             opts.action, _reason(opts))
    ctx.out(str(result))
    return c.EXIT_SUCCESS


def cmd_add(ctx: Context, opts: argparse.Namespace) -> int:
    """Add a rule (ReplaceFilter with no uuid) and print its uuid."""
    return _replace(ctx, opts, None)


def _setup_replace(p: argparse.ArgumentParser) -> None:
    _add_rule_options(p)
    p.add_argument("uuid", metavar="UUID", help="the rule's uuid")


def cmd_replace(ctx: Context, opts: argparse.Namespace) -> int:
    """Replace the rule with this uuid, or add it under this uuid; print the uuid."""
    return _replace(ctx, opts, opts.uuid)


def _setup_one_rule(p: argparse.ArgumentParser) -> None:
    p.add_argument("uuid", metavar="UUID", help="the rule's uuid")


def cmd_delete(ctx: Context, opts: argparse.Namespace) -> int:
    """Remove a rule (DeleteFilter)."""
    ctx.luxi().call("DeleteFilter", opts.uuid)
    return c.EXIT_SUCCESS


# --- list, list-fields, info -----------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LIST_DEFAULT_FIELDS)
    p.add_argument("uuids", nargs="*", metavar="UUID",
                   help="rules to list: uuids, glob patterns, or one query filter "
                        "expression such as 'priority < 3' (default: all, by uuid)")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the rules: Query("filter", fields, uuid filter) as a table."""
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    return table.generic_list(ctx, c.QR_FILTER, fields, table.name_filter(opts.uuids, "uuid"),
                              opts.separator, not opts.no_headers, LIST_FORMAT,
                              opts.verbose)


def _setup_list_fields(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD",
                   help="fields to describe (default: all)")


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the rule fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_FILTER, opts.fields, opts.separator,
                                     not opts.no_headers)


def _setup_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("uuids", nargs="*", metavar="UUID",
                   help="rules to show (default: all, by uuid)")


def rule_info(row: Sequence[Any]) -> list[str]:
    """The lines ``gnt-filter info`` prints for one rule (Ganeti's layout)."""
    uuid, watermark, priority, predicates, action, reason_trail = row
    return [f"UUID: {uuid}",
            f"  Watermark: {watermark}",
            f"  Priority: {priority}",
            f"  Predicates: {format_value(predicates)}",
            f"  Action: {format_value(action)}",
            f"  Reason trail: {format_value(reason_trail)}"]


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show the rules (QueryFilters; an unknown uuid is an error)."""
    rows = ctx.luxi().call("QueryFilters", list(opts.uuids) or None,
                           list(LIST_DEFAULT_FIELDS))
    for row in rows:
        for line in rule_info(row):
            ctx.out(line)
    return c.EXIT_SUCCESS


COMMANDS = [
    Command("add", cmd_add, "Add a job filter rule and print its uuid", _add_rule_options,
            "Add a job filter rule (at once, not as a job) and print its uuid."),
    Command("replace", cmd_replace, "Replace a job filter rule", _setup_replace,
            "Replace the rule with this uuid by one made of the options (options not "
            "given take their defaults), or add it under this uuid if there is none; "
            "print the uuid."),
    Command("delete", cmd_delete, "Remove a job filter rule", _setup_one_rule),
    Command("list", cmd_list, "List the job filter rules", _setup_list,
            "List the job filter rules (all, by uuid, or those given). The "
            f"default fields are {', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-filter "
            "list-fields' shows all."),
    Command("list-fields", cmd_list_fields, "List the fields available for filter rules",
            _setup_list_fields),
    Command("info", cmd_info, "Show job filter rules in detail", _setup_info),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-filter (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-filter", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
