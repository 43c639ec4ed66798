"""Submitting opcodes as jobs and waiting for them, as Ganeti's tools do.

Commands that change something build an opcode (a dict in wire form) and
hand it to :func:`submit_or_send`.  The common job options
(:func:`add_job_options`) are applied first: ``--priority``, ``--dry-run``,
``-d``/``--debug`` and the reason trail, which always records the tool and
command (``["gnt:client:gnt-cluster", "modify", ts]``) after the user's
``--reason``.  With ``--submit`` the job id is printed (``JobID: N`` on
stderr, as Ganeti does; ``--print-jobid`` adds the bare id on stdout) and the
command returns at once.  Otherwise :func:`poll_job` follows the job with
``WaitForJobChange``, printing each log message as
``<ctime> <message>`` when it arrives, and returns the opcode results or
raises the job's error, decoded, for the framework to report (exit code 1).
:func:`wait_for_jobs` follows jobs that a job submitted (``gnt-cluster
verify``) one after another, as Ganeti's ``JobExecutor`` does.

The option types and tag commands that several tools share are here too:
:func:`yes_no`, :func:`ident_keyval`, :func:`add_tag_options`,
:func:`tags_command`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ganeti.cli.framework import Context, UsageError, format_error
from ganeti.core import constants as c
from ganeti.core import errors, jobs, params
from ganeti.core.textutil import safe_encode

#: ``--priority`` names and the opcode priorities they stand for.
PRIORITY_NAMES: dict[str, int] = {
    "low": c.OP_PRIO_LOW,
    "normal": c.OP_PRIO_NORMAL,
    "high": c.OP_PRIO_HIGH,
}

#: Seconds one WaitForJobChange call may wait (Ganeti's DEFAULT_WFJC_TIMEOUT).
WFJC_TIMEOUT = 60

#: The answer of an old WaitForJobChange that saw no change (luxid answers
#: with the unchanged value instead; both are understood).
JOB_NOTCHANGED = "nochange"


class JobCanceled(errors.GenericError):
    """The job was canceled before it finished."""


class _Submitted:
    def __repr__(self) -> str:
        return "SUBMITTED"


#: What :func:`submit_or_send` returns with ``--submit``: the job was only sent.
SUBMITTED: Any = _Submitted()


# --- options ---------------------------------------------------------------------

def add_priority_option(p: argparse.ArgumentParser, help_text: str | None = None) -> None:
    """``--priority {low,normal,high}``; stored as the name (see :func:`priority_value`)."""
    p.add_argument("--priority", choices=list(PRIORITY_NAMES), default=None,
                   help=help_text or "priority of the job (default: normal)")


def add_job_options(p: argparse.ArgumentParser, *, submit: bool = True,
                    dry_run: bool = False) -> None:
    """The options of every command that submits a job."""
    add_priority_option(p)
    p.add_argument("--reason", metavar="TEXT",
                   help="reason for the operation, recorded in the job's reason trail")
    p.add_argument("-d", "--debug", action="count", default=0,
                   help="increase the opcode's debug level (repeatable)")
    if dry_run:
        p.add_argument("--dry-run", action="store_true",
                       help="only check whether the operation could be done; change "
                            "nothing")
    if submit:
        p.add_argument("--submit", action="store_true",
                       help="submit the job and print its id; do not wait for it")
        p.add_argument("--print-jobid", action="store_true",
                       help="also print the job id alone as the first line of output "
                            "(for scripts)")


def priority_value(name: str | None) -> int | None:
    """The opcode priority of a ``--priority`` name (None if not given)."""
    return None if name is None else PRIORITY_NAMES[name]


def reason_trail(ctx: Context, opts: argparse.Namespace) -> list[list[Any]]:
    """The reason trail a command starts its opcodes with (Ganeti's order)."""
    trail: list[list[Any]] = []
    reason = getattr(opts, "reason", None)
    if reason:
        trail.append([c.OPCODE_REASON_SRC_USER, reason, time.time_ns()])
    trail.append([f"{c.OPCODE_REASON_SRC_CLIENT}:{ctx.tool}",
                  str(getattr(opts, "command", None) or ""), time.time_ns()])
    return trail


def set_generic_options(ctx: Context, opts: argparse.Namespace,
                        ops: Sequence[dict[str, Any]]) -> None:
    """Apply debug level, dry run, priority and reason trail to ``ops`` (in place)."""
    for op in ops:
        op["debug_level"] = int(getattr(opts, "debug", 0) or 0)
        if hasattr(opts, "dry_run"):
            op["dry_run"] = bool(opts.dry_run)
        priority = priority_value(getattr(opts, "priority", None))
        if priority is not None:
            op["priority"] = priority
        op["reason"] = reason_trail(ctx, opts)


# --- submitting and waiting ------------------------------------------------------

def send_job(ctx: Context, ops: list[dict[str, Any]]) -> int:
    """``SubmitJob(ops)``; the new job's id."""
    return int(ctx.luxi().call("SubmitJob", ops))


def format_log_message(log_type: str, message: Any) -> str:
    """The text of a job log entry, escaped as Ganeti's client does (non-text
    messages are shown with str)."""
    text = message if log_type == c.ELOG_MESSAGE and isinstance(message, str) \
        else str(message)
    return safe_encode(text)


class Reporter:
    """What :func:`poll_job` does with log messages and "still waiting" notices.

    The default prints messages to stdout as ``<ctime> <message>`` and, once
    each, "waiting in queue" / "trying to acquire locks" notices to stderr.
    ``feedback`` replaces the printing of messages (and silences notices).
    """

    def __init__(self, ctx: Context,
                 feedback: Callable[[list[int], str, Any], None] | None = None) -> None:
        self.ctx = ctx
        self.feedback = feedback
        self._notified: set[str] = set()

    def log_message(self, job_id: int, serial: int, timestamp: list[int], log_type: str,
                    message: Any) -> None:
        """A new entry of the job's log."""
        if self.feedback is not None:
            self.feedback(timestamp, log_type, message)
            return
        when = time.ctime(jobs.merge_time(timestamp))
        self.ctx.out(f"{when} {format_log_message(log_type, message)}")

    def not_changed(self, job_id: int, status: str | None) -> None:
        """A WaitForJobChange timed out without news: say why the job waits, once."""
        if self.feedback is not None:
            return
        reason = (self._wait_reason(job_id)
                  if status in (c.JOB_STATUS_QUEUED, c.JOB_STATUS_RUNNING) else "")
        key = f"{status}:{reason}"
        if key in self._notified:
            return
        if reason:
            self.ctx.err(f"Job {job_id} is waiting: {reason}")
        elif status == c.JOB_STATUS_QUEUED:
            self.ctx.err(f"Job {job_id} is waiting in queue")
        elif status == c.JOB_STATUS_WAITING:
            self.ctx.err(f"Job {job_id} is trying to acquire all necessary locks")
        else:
            return
        self._notified.add(key)

    def _wait_reason(self, job_id: int) -> str:
        """Why the job waits (a filter rule, a rate limit), "" if it does not say.

        Asked with Query, which reports an unknown field instead of failing, so
        this is harmless against a master that has no such field.
        """
        try:
            response = self.ctx.luxi().call("Query", c.QR_JOB, ["wait_reason"],
                                            ["==", "id", job_id])
            ((status, value),) = response["data"][0]
        except (errors.GenericError, KeyError, IndexError, TypeError, ValueError):
            return ""
        return value if status == c.RS_NORMAL and isinstance(value, str) else ""


def quiet(timestamp: list[int], log_type: str, message: Any) -> None:
    """A feedback function that drops every message (``gnt-job wait``)."""


def poll_job(ctx: Context, job_id: int, reporter: Reporter | None = None) -> list[Any]:
    """Follow a job until it ends; its opcode results, or its error raised.

    A failed opcode's result is decoded (``OpPrereqError``, ``OpExecError``,
    ...) and raised; a canceled job raises :class:`JobCanceled`; a job that
    disappears raises ``JobLost``.
    """
    reporter = reporter or Reporter(ctx)
    client = ctx.luxi()
    prev_info: Any = None
    prev_serial: int | None = None
    status: str | None = None
    while True:
        answer = client.call("WaitForJobChange", job_id, ["status"], prev_info, prev_serial,
                             WFJC_TIMEOUT)
        if not answer:
            raise errors.JobLost(f"Job with id {job_id} lost")
        if answer == JOB_NOTCHANGED:
            reporter.not_changed(job_id, status)
            continue
        info, entries = answer
        (status,) = info
        if entries:
            for serial, timestamp, log_type, message in entries:
                reporter.log_message(job_id, serial, timestamp, log_type, message)
                prev_serial = serial if prev_serial is None else max(prev_serial, serial)
        elif status in (c.JOB_STATUS_SUCCESS, c.JOB_STATUS_ERROR, c.JOB_STATUS_CANCELING,
                        c.JOB_STATUS_CANCELED):
            break
        elif info == prev_info:
            reporter.not_changed(job_id, status)
        prev_info = info
    return job_results(ctx, job_id)


def job_results(ctx: Context, job_id: int) -> list[Any]:
    """The opcode results of a finished job, or its error raised (Ganeti's rules)."""
    rows = ctx.luxi().call("QueryJobs", [job_id], ["status", "opstatus", "opresult"])
    if not rows or rows[0] is None or rows[0][0] is None:  # (luxid: nulls when missing)
        raise errors.JobLost(f"Job with id {job_id} lost")
    status, opstatus, results = rows[0]
    if status == c.JOB_STATUS_SUCCESS:
        return list(results)
    if status in (c.JOB_STATUS_CANCELING, c.JOB_STATUS_CANCELED):
        raise JobCanceled("Job was canceled")
    has_ok = False
    for index, (op_status, result) in enumerate(zip(opstatus, results, strict=False)):
        if op_status == c.JOB_STATUS_SUCCESS:
            has_ok = True
        elif op_status == c.JOB_STATUS_ERROR:
            decoded = errors.decode_exception(result)
            if decoded is not None:
                raise decoded
            if has_ok:
                raise errors.OpExecError(f"partial failure (opcode {index}): {result}")
            raise errors.OpExecError(str(result))
    raise errors.OpExecError(str(results))


def submit_opcode(ctx: Context, opts: argparse.Namespace | None, op: dict[str, Any],
                  reporter: Reporter | None = None) -> Any:
    """Submit ``op`` as a one-opcode job, wait for it and return its result."""
    if opts is not None:
        set_generic_options(ctx, opts, [op])
    job_id = send_job(ctx, [op])
    if opts is not None and getattr(opts, "print_jobid", False):
        ctx.out(str(job_id))
    return poll_job(ctx, job_id, reporter)[0]


def submit_or_send(ctx: Context, opts: argparse.Namespace, op: dict[str, Any],
                   reporter: Reporter | None = None) -> Any:
    """Wait for ``op`` and return its result, or with ``--submit`` only send it.

    With ``--submit`` the job id is reported (``JobID: N`` on stderr, the bare
    id on stdout with ``--print-jobid``) and :data:`SUBMITTED` is returned.
    """
    if not getattr(opts, "submit", False):
        return submit_opcode(ctx, opts, op, reporter)
    set_generic_options(ctx, opts, [op])
    job_id = send_job(ctx, [op])
    if getattr(opts, "print_jobid", False):
        ctx.out(str(job_id))
    ctx.err(f"JobID: {job_id}")
    return SUBMITTED


def wait_for_jobs(ctx: Context, submitted: Sequence[Sequence[Any]],
                  reporter: Reporter | None = None, names: Sequence[str] | None = None,
                  verbose: bool = True) -> list[tuple[bool, Any]]:
    """Follow jobs one after another; ``(success, opcode results or message)`` each.

    ``submitted`` holds ``[success, job id or error message]`` pairs, as a job
    that submits jobs returns them (``{"jobs": [...]}``).  As Ganeti's
    ``JobExecutor``, it prints "Submitted jobs 2, 3", then "Waiting for job
    N ..." before following each job with its log; a job that was not
    submitted or failed is reported on stderr and counts as unsuccessful.
    ``names`` (one per job) adds " for NAME" to these lines; without
    ``verbose`` the "Submitted jobs" line is left out.
    """
    ok_ids = [int(value) for success, value in submitted if success]
    if ok_ids and verbose:
        ctx.out("Submitted jobs " + ", ".join(str(job_id) for job_id in ok_ids))
    results: list[tuple[bool, Any]] = []
    for index, (success, value) in enumerate(submitted):
        label = f" for {names[index]}" if names else ""
        if not success:
            ctx.err(f"Failed to submit job{label}: {value}")
            results.append((False, value))
            continue
        job_id = int(value)
        ctx.out(f"Waiting for job {job_id}{label} ...")
        try:
            results.append((True, poll_job(ctx, job_id, reporter or Reporter(ctx))))
        except errors.JobLost as err:
            ctx.err(f"Job {job_id}{label} has been archived, cannot check its result")
            results.append((False, format_error(err)[1]))
        except errors.NoMasterError:
            raise
        except errors.GenericError as err:
            message = format_error(err)[1]
            ctx.err(f"Job {job_id}{label} has failed: {message}")
            results.append((False, message))
    return results


def report_submitted(ctx: Context, result: Any, success: str, failure: str) -> int:
    """Follow the jobs an opcode submitted (its result's ``"jobs"``) and report as
    Ganeti's tools do: ``success``, or ``failure`` with ``{bad}`` the number of failed
    jobs; the exit code (1 when a job failed)."""
    submitted = (result or {}).get("jobs") or []
    results = wait_for_jobs(ctx, submitted)
    bad = len([row for row in results if not row[0]])
    if bad == 0:
        ctx.out(success)
        return c.EXIT_SUCCESS
    ctx.out(failure.format(bad=bad))
    return c.EXIT_FAILURE


def print_modified(ctx: Context, what: str, result: Any) -> None:
    """Ganeti's report of a ``modify`` job: the changed ``[param, value]`` pairs."""
    if result and result is not SUBMITTED:
        ctx.out(f"Modified {what}")
        for param, value in result:
            ctx.out(f" - {param:<5} -> {value}")


# --- option types and tag commands shared by the tools ----------------------------

def yes_no(value: str) -> bool:
    """An argparse type for ``yes``/``no`` flags (``true``/``false`` too)."""
    if value.lower() in ("yes", "true", "1"):
        return True
    if value.lower() in ("no", "false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no, not {value!r}")


def ident_keyval(values: Sequence[str], flag: str,
                 ident: str) -> dict[str, dict[str, str]]:
    """``IDENT:key=val,...`` options (``-H``, ``-D``) as ``{ident: {key: val}}``."""
    result: dict[str, dict[str, str]] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name:
            raise UsageError(f"{flag} expects {ident}:key=value,..., not {value!r}")
        result.setdefault(name, {}).update(params.parse_keyval(rest, f"{flag} {name}"))
    return result


def add_ipolicy_options(p: argparse.ArgumentParser) -> None:
    """The instance-policy options gnt-cluster and gnt-group share."""
    p.add_argument("--ipolicy-vcpu-ratio", type=float, metavar="RATIO",
                   help="instance policy: maximal vcpu-to-cpu ratio")
    p.add_argument("--ipolicy-spindle-ratio", type=float, metavar="RATIO",
                   help="instance policy: maximal instances-to-spindle ratio")
    p.add_argument("--ipolicy-disk-templates", metavar="TEMPLATES",
                   help="instance policy: comma-separated allowed disk templates")


def ipolicy_value(opts: argparse.Namespace) -> dict[str, Any]:
    """The ``ipolicy`` change the options of :func:`add_ipolicy_options` ask for."""
    ipolicy: dict[str, Any] = {}
    if opts.ipolicy_vcpu_ratio is not None:
        ipolicy[c.IPOLICY_VCPU_RATIO] = opts.ipolicy_vcpu_ratio
    if opts.ipolicy_spindle_ratio is not None:
        ipolicy[c.IPOLICY_SPINDLE_RATIO] = opts.ipolicy_spindle_ratio
    if opts.ipolicy_disk_templates is not None:
        ipolicy[c.IPOLICY_DTS] = [t.strip() for t in
                                          opts.ipolicy_disk_templates.split(",") if t.strip()]
    return ipolicy


def add_tag_options(p: argparse.ArgumentParser, owner: str | None = None) -> None:
    """Options and arguments of ``add-tags``/``remove-tags`` (``owner``: the
    metavar of the tagged object's name, None for the cluster)."""
    p.add_argument("--from", dest="tags_source", metavar="FILE",
                   help="also read tags from FILE, one per line ('-': standard input)")
    add_job_options(p)
    if owner is not None:
        p.add_argument("tag_owner", metavar=owner, help=f"the {owner.lower()} to tag")
    p.add_argument("tags", nargs="*", metavar="TAG", help="tags")


def read_tags(opts: argparse.Namespace) -> list[str]:
    """The tags given as arguments and in the ``--from`` file."""
    tags = list(opts.tags)
    if opts.tags_source is not None:
        if opts.tags_source == "-":
            lines = sys.stdin.read().splitlines()
        else:
            with open(opts.tags_source, encoding="utf-8") as f:
                lines = f.read().splitlines()
        tags.extend(line.strip() for line in lines)
    return tags


def tags_command(ctx: Context, opts: argparse.Namespace, op_id: str, kind: str) -> int:
    """``add-tags``/``remove-tags``: OP_TAGS_SET or OP_TAGS_DEL on one object."""
    tags = read_tags(opts)
    if not tags:
        verb = "added" if op_id == "OP_TAGS_SET" else "removed"
        raise errors.OpPrereqError(f"No tags to be {verb}", errors.ECODE_INVAL)
    name = getattr(opts, "tag_owner", None) or ""
    submit_or_send(ctx, opts, {"OP_ID": op_id, "kind": kind, "name": name, "tags": tags})
    return c.EXIT_SUCCESS


def list_tags(ctx: Context, kind: str, name: str) -> int:
    """``list-tags``: the object's tags, sorted, one per line."""
    for tag in sorted(ctx.luxi().query_tags(kind, name)):
        ctx.out(tag)
    return c.EXIT_SUCCESS


# --- small helpers shared by the job tools ----------------------------------------

def parse_job_ids(values: Sequence[str]) -> list[int]:
    """Job ids from the command line; anything but digits is ``wrong_input``."""
    result = []
    for value in values:
        text = value.strip()
        if not text.isdigit():
            raise errors.OpPrereqError(f"Invalid job ID passed: {value!r}",
                                       errors.ECODE_INVAL)
        result.append(int(text))
    return result


_TIMESPEC_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_timespec(value: str) -> int:
    """Seconds from ``30``, ``30s``, ``5m``, ``1h``, ``2d`` or ``1w`` (Ganeti's rules)."""
    if not value:
        raise errors.OpPrereqError("Empty time specification passed", errors.ECODE_INVAL)
    multiplier = 1
    number = value
    if value[-1] in _TIMESPEC_UNITS:
        multiplier = _TIMESPEC_UNITS[value[-1]]
        number = value[:-1]
        if not number:
            raise errors.OpPrereqError("Invalid time specification (only suffix passed)",
                                       errors.ECODE_INVAL)
    try:
        return int(number) * multiplier
    except ValueError:
        raise errors.OpPrereqError(f"Invalid time specification '{value}'",
                                   errors.ECODE_INVAL) from None


def ask_user(question: str) -> bool:
    """Ask a yes/no question on the terminal; no terminal means "no" (as Ganeti)."""
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")
    except OSError:
        return False
    with tty:
        for _ in range(3):
            tty.write(f"{question} y/[n]: ")
            tty.flush()
            answer = tty.readline().strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("", "n", "no"):
                return False
    return False


def ask_choice(question: str, choices: Sequence[tuple[str, Any, str]]) -> Any:
    """Ask the user to pick one of ``(key, value, description)`` choices on the
    terminal (``?`` lists them); the value picked, the last choice's without a
    terminal (as Ganeti's AskUser)."""
    default = choices[-1][1]
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")
    except OSError:
        return default
    keys = [key for key, _, _ in choices]
    prompt = "/".join([*keys[:-1], f"[{keys[-1]}]", "?"])
    values = {key: value for key, value, _ in choices}
    with tty:
        while True:
            tty.write(f"{question}\n{prompt}: ")
            tty.flush()
            line = tty.readline()
            if not line:
                return default
            answer = line.strip().lower()
            if answer in values:
                return values[answer]
            if answer == "?":
                tty.write("".join(f" {key} - {text}\n" for key, _, text in choices) + "\n")
