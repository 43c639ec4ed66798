"""gnt-job: list, inspect, follow, cancel, reprioritise and archive jobs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, format_error, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, qlang

DESCRIPTION = ("Ganeti job administration: list, info, watch, wait, cancel, change-priority, "
               "archive, autoarchive.")

#: Fields of ``gnt-job list`` without ``-o``.
LIST_DEFAULT_FIELDS = ["id", "status", "summary"]

#: Fields ``gnt-job info`` shows.
INFO_FIELDS = ["id", "status", "ops", "opresult", "opstatus", "oplog", "opstart", "opexec",
               "opend", "received_ts", "start_ts", "end_ts", "wait_reason"]

_PENDING = (c.JOB_STATUS_QUEUED, c.JOB_STATUS_WAITING, c.JOB_STATUS_CANCELING)
_FINALIZED = (c.JOB_STATUS_CANCELED, c.JOB_STATUS_SUCCESS, c.JOB_STATUS_ERROR)


def _timestamps(value: Any) -> str:
    return str([table.format_timestamp(v) for v in value])


#: How ``gnt-job list`` shows some fields.
LIST_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    "status": (str, False),
    "summary": (lambda value: ",".join(value), False),
    "opstart": (_timestamps, False),
    "opexec": (_timestamps, False),
    "opend": (_timestamps, False),
}


def _status_option(p: argparse.ArgumentParser, flag: str, statuses: Sequence[str],
                   help_text: str) -> None:
    p.add_argument(flag, dest="status_filter", action="store_const", const=tuple(statuses),
                   help=help_text)


def _add_pending_options(p: argparse.ArgumentParser) -> None:
    _status_option(p, "--pending", _PENDING,
                   "select jobs pending execution or being canceled")
    _status_option(p, "--queued", (c.JOB_STATUS_QUEUED,), "select queued jobs only")
    _status_option(p, "--waiting", (c.JOB_STATUS_WAITING,), "select waiting jobs only")


# --- list, list-fields -----------------------------------------------------------

def _setup_list(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LIST_DEFAULT_FIELDS)
    _status_option(p, "--pending", _PENDING,
                   "show only jobs pending execution or being canceled")
    _status_option(p, "--running", (c.JOB_STATUS_RUNNING,), "show only running jobs")
    _status_option(p, "--error", (c.JOB_STATUS_ERROR,), "show only failed jobs")
    _status_option(p, "--finished", _FINALIZED, "show only finished jobs")
    p.add_argument("--archived", action="store_true",
                   help="include archived jobs in the list (slow and expensive; adds the "
                        "field 'archived')")
    table.add_filter_option(p)
    p.add_argument("job_ids", nargs="*", metavar="JOB_ID",
                   help="jobs to list: job ids, or one query filter expression such as "
                        "'status == \"error\" and id > 100' (default: all)")


def cmd_list(ctx: Context, opts: argparse.Namespace) -> int:
    """List the jobs: Query("job", fields, filter) as a table.

    The arguments are job ids or a filter expression (as in Ganeti, ids
    are compared as numbers); a status option is and-ed to them.
    """
    fields = table.parse_fields(opts.output, LIST_DEFAULT_FIELDS)
    if opts.archived and "archived" not in fields:
        fields.append("archived")
    qfilter = qlang.make_simple_filter("status", opts.status_filter or ())
    arg_filter = table.name_filter(opts.job_ids, "id", opts.force_filter, numeric=True)
    if arg_filter is not None:
        qfilter = arg_filter if qfilter is None else ["&", arg_filter, qfilter]
    return table.generic_list(ctx, c.QR_JOB, fields, qfilter, opts.separator,
                              not opts.no_headers, LIST_FORMAT, opts.verbose)


def _setup_list_fields(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, None, verbose=False)
    p.add_argument("fields", nargs="*", metavar="FIELD", help="fields to describe "
                                                              "(default: all)")


def cmd_list_fields(ctx: Context, opts: argparse.Namespace) -> int:
    """Describe the job fields (QueryFields)."""
    return table.generic_list_fields(ctx, c.QR_JOB, opts.fields, opts.separator,
                                     not opts.no_headers)


# --- info ------------------------------------------------------------------------

def _job_ids_arg(p: argparse.ArgumentParser, many: bool = True) -> None:
    if many:
        p.add_argument("job_ids", nargs="+", metavar="JOB_ID", help="job id (one or more)")
    else:
        p.add_argument("job_id", metavar="JOB_ID", help="job id")


def _delta(start: Sequence[int], end: Sequence[int]) -> float:
    return end[0] - start[0] + (end[1] - start[1]) / 1000000.0


def _job_timestamp(name: str, ts: Any, prior: Any = None) -> table.Entry:
    if ts is None:
        return (name, f"unknown ({ts})", "job_timestamp")
    delta = f" (delta {_delta(prior, ts):.6f}s)" if prior is not None else ""
    return (name, table.format_timestamp(ts) + delta, "job_timestamp")


def _op_timestamp(name: str, ts: Any) -> table.Entry:
    text = table.format_timestamp(ts) if isinstance(ts, (list, tuple)) else "N/A"
    return (name, text, "opcode_timestamp")


def job_info_entries(row: Sequence[Any]) -> list[table.Entry]:
    """The ordered entries ``gnt-job info`` prints for one job (INFO_FIELDS row)."""
    (job_id, status, ops, opresult, opstatus, oplog, opstart, opexec, opend, recv_ts,
     start_ts, end_ts, wait_reason) = row
    info: list[table.Entry] = [("Job ID", job_id), ("Status", status)]
    if wait_reason and status not in _FINALIZED:  # (unknown to Ganeti's masters: None)
        info.append(("Waiting", wait_reason))
    info.append(_job_timestamp("Received", recv_ts))
    info.append(_job_timestamp("Processing start", start_ts, recv_ts))
    info.append(_job_timestamp("Processing end", end_ts, start_ts))
    if end_ts is not None and recv_ts is not None:
        info.append(("Total processing time", f"{_delta(recv_ts, end_ts):.6f} seconds"))
    else:
        info.append(("Total processing time", "N/A"))
    opcodes = []
    for op, result, op_status, log, s_ts, x_ts, e_ts in zip(
            ops, opresult, opstatus, oplog, opstart, opexec, opend, strict=False):
        entries: list[table.Entry] = [("Opcode", op.get("OP_ID", "?")), ("Status", op_status)]
        entries.append(_op_timestamp("Processing start", s_ts))
        entries.append(_op_timestamp("Execution start", x_ts))
        entries.append(_op_timestamp("Processing end", e_ts))
        entries.append(("Input fields", op))
        entries.append(("Result", result))
        log_entries = []
        for serial, log_ts, log_type, message in log:
            log_entries.append([
                ("Time", table.format_timestamp(log_ts)),
                ("Content", (serial, log_type, jobs.format_log_message(log_type, message))),
            ])
        entries.append(("Execution log", log_entries))
        opcodes.append(entries)
    info.append(("Opcodes", opcodes))
    return info


def cmd_info(ctx: Context, opts: argparse.Namespace) -> int:
    """Show everything about the jobs, YAML-like (Ganeti's PrintGenericInfo)."""
    job_ids = jobs.parse_job_ids(opts.job_ids)
    response = ctx.luxi().call("Query", c.QR_JOB, INFO_FIELDS,
                               qlang.make_simple_filter("id", job_ids))
    rows: dict[int, list[Any]] = {}
    for row in response["data"]:
        (_, job_id), (status, _) = row[0], row[1]
        if status == c.RS_NORMAL:
            rows[job_id] = [value for _, value in row]
    container: list[Any] = []
    for job_id in sorted(set(job_ids)):
        if job_id in rows:
            container.append(job_info_entries(rows[job_id]))
        else:
            container.append(f"Job ID {job_id} not found")
    ctx.out(table.format_generic_info(container))
    return c.EXIT_SUCCESS


# --- watch, wait -----------------------------------------------------------------

def _follow(ctx: Context, job_id: int, reporter: jobs.Reporter) -> int:
    try:
        jobs.poll_job(ctx, job_id, reporter)
    except errors.NoMasterError:
        raise
    except errors.GenericError as err:
        code, message = format_error(err)
        ctx.err(f"Job {job_id} failed: {message}")
        return code
    return c.EXIT_SUCCESS


def cmd_watch(ctx: Context, opts: argparse.Namespace) -> int:
    """Print the job's log messages as they arrive, until it ends."""
    (job_id,) = jobs.parse_job_ids([opts.job_id])
    header = f"Output from job {job_id} follows"
    ctx.out(header)
    ctx.out("-" * len(header))
    return _follow(ctx, job_id, jobs.Reporter(ctx))


def cmd_wait(ctx: Context, opts: argparse.Namespace) -> int:
    """Wait silently until the job ends; 0 if it succeeded."""
    (job_id,) = jobs.parse_job_ids([opts.job_id])
    return _follow(ctx, job_id, jobs.Reporter(ctx, feedback=jobs.quiet))


# --- cancel, change-priority -----------------------------------------------------

Action = Callable[[Any, int], Any]


def _multi_job_action(ctx: Context, opts: argparse.Namespace, question: str,
                      action: Action) -> int:
    """Apply ``action`` to the given jobs, or to those with a status (after asking)."""
    if bool(opts.job_ids) == (opts.status_filter is not None):
        raise errors.OpPrereqError("Either a status filter or job ID(s) must be specified "
                                   "and never both", errors.ECODE_INVAL)
    client = ctx.luxi()
    if opts.status_filter is not None:
        response = client.call("Query", c.QR_JOB, ["id", "status", "summary"],
                               qlang.make_simple_filter("status", opts.status_filter))
        job_ids = [row[0][1] for row in response["data"]]
        if not job_ids:
            raise errors.OpPrereqError("No jobs with the requested status have been found",
                                       errors.ECODE_STATE)
        if not opts.force:
            _, lines = table.format_query_result(response, True, None, LIST_FORMAT)
            for line in lines:
                ctx.out(line)
            if not jobs.ask_user(question):
                ctx.err("Not confirmed (use --force to skip the question).")
                return c.EXIT_CONFIRMATION
    else:
        job_ids = jobs.parse_job_ids(opts.job_ids)
    code = c.EXIT_SUCCESS
    for job_id in job_ids:
        success, message = action(client, job_id)
        if not success:
            code = c.EXIT_FAILURE
        ctx.out(str(message))
    return code


def _setup_cancel(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true",
                   help="with a status filter: do not ask for confirmation")
    p.add_argument("--kill", action="store_true",
                   help="also interrupt running jobs at once (needs --yes-do-it)")
    p.add_argument("--yes-do-it", "--ya-rly", dest="yes_do_it", action="store_true",
                   help="confirm --kill")
    _add_pending_options(p)
    p.add_argument("job_ids", nargs="*", metavar="JOB_ID", help="jobs to cancel")


def cmd_cancel(ctx: Context, opts: argparse.Namespace) -> int:
    """Cancel jobs (CancelJob); --kill interrupts running ones."""
    if opts.kill and not opts.yes_do_it:
        raise errors.OpPrereqError("The --kill option must be confirmed with --yes-do-it",
                                   errors.ECODE_INVAL)
    name = "KILL" if opts.kill else "Cancel"
    return _multi_job_action(ctx, opts, f"{name} job(s) listed above?",
                             lambda cl, job_id: cl.call("CancelJob", job_id, opts.kill))


def _setup_change_priority(p: argparse.ArgumentParser) -> None:
    jobs.add_priority_option(p, "the new priority (required)")
    p.add_argument("-f", "--force", action="store_true",
                   help="with a status filter: do not ask for confirmation")
    _add_pending_options(p)
    p.add_argument("job_ids", nargs="*", metavar="JOB_ID", help="jobs to change")


def cmd_change_priority(ctx: Context, opts: argparse.Namespace) -> int:
    """Change the priority of the jobs' unfinished opcodes (ChangeJobPriority)."""
    priority = jobs.priority_value(opts.priority)
    if priority is None:
        ctx.err("--priority option must be given.")
        return c.EXIT_FAILURE
    return _multi_job_action(ctx, opts, "Change priority of job(s) listed above?",
                             lambda cl, job_id: cl.call("ChangeJobPriority", job_id, priority))


# --- archive, autoarchive --------------------------------------------------------

def cmd_archive(ctx: Context, opts: argparse.Namespace) -> int:
    """Archive finished jobs (ArchiveJob)."""
    code = c.EXIT_SUCCESS
    for job_id in jobs.parse_job_ids(opts.job_ids):
        if not ctx.luxi().call("ArchiveJob", job_id):
            ctx.err(f"Failed to archive job with ID '{job_id}'")
            code = c.EXIT_FAILURE
    return code


def _setup_autoarchive(p: argparse.ArgumentParser) -> None:
    p.add_argument("age", metavar="AGE",
                   help="archive finished jobs older than this: seconds, or a number with "
                        "s, m, h, d or w (30m, 1d, 4w); 'all' for every finished job")


def cmd_autoarchive(ctx: Context, opts: argparse.Namespace) -> int:
    """Archive finished jobs older than AGE (AutoArchiveJobs)."""
    age = -1 if opts.age == "all" else jobs.parse_timespec(opts.age)
    timeout = (c.LUXI_DEF_RWTO - 1) // 2
    archived, left = ctx.luxi().call("AutoArchiveJobs", age, timeout)
    ctx.out(f"Archived {archived} jobs, {left} unchecked left")
    return c.EXIT_SUCCESS


COMMANDS = [
    Command("list", cmd_list, "List the jobs and their status", _setup_list,
            "List the jobs and their status: all, those with the given ids, or those "
            "matching one query filter expression (see -F). The default fields are "
            f"{', '.join(LIST_DEFAULT_FIELDS)}; 'gnt-job list-fields' shows all."),
    Command("list-fields", cmd_list_fields, "List the fields available for jobs",
            _setup_list_fields),
    Command("info", cmd_info, "Show detailed information about jobs",
            lambda p: _job_ids_arg(p)),
    Command("watch", cmd_watch, "Follow a job and print its output as it arrives",
            lambda p: _job_ids_arg(p, many=False)),
    Command("wait", cmd_wait, "Wait for a job to finish (exit 0 if it succeeded)",
            lambda p: _job_ids_arg(p, many=False)),
    Command("cancel", cmd_cancel, "Cancel jobs", _setup_cancel,
            "Cancel the given jobs, or with --pending, --queued or --waiting all jobs "
            "with that status (after a confirmation unless --force)."),
    Command("change-priority", cmd_change_priority, "Change the priority of jobs",
            _setup_change_priority),
    Command("archive", cmd_archive, "Archive finished jobs", lambda p: _job_ids_arg(p)),
    Command("autoarchive", cmd_autoarchive, "Archive finished jobs older than AGE",
            _setup_autoarchive),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-job (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-job", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
