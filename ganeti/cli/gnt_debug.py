"""gnt-debug: test opcodes and the lock monitor."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from ganeti.cli import gnt_debug_allocator as allocator
from ganeti.cli import gnt_debug_checks as checks
from ganeti.cli import jobs, table
from ganeti.cli.framework import Command, Context, UsageError, format_error, run_tool
from ganeti.core import constants as c
from ganeti.core import errors, serializer

DESCRIPTION = ("Ganeti debugging commands: delay (OP_TEST_DELAY), submit-job (jobs from "
               "JSON files), test-jobqueue (Ganeti's job queue test), test-osparams "
               "(secret OS parameters), iallocator (an allocator's input or output), locks "
               "(the lock monitor), wconfd (the master daemon's WConfD socket).")

#: The most bytes read from one opcode file of ``submit-job``.
MAX_OPCODE_FILE = 16 * 1024 * 1024

#: Fields of ``gnt-debug locks`` without ``-o``.
LOCKS_DEFAULT_FIELDS = ["name", "mode", "owner", "pending"]


def _duration(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def _setup_delay(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-master", dest="on_master", action="store_false",
                   help="do not sleep on the master (it still does if no node is given)")
    p.add_argument("-n", dest="on_nodes", action="append", default=[], metavar="NODE",
                   help="also sleep on this node, at the same time (repeatable)")
    p.add_argument("-r", "--repeat", type=int, default=0, metavar="N",
                   help="sleep N times, logging each iteration (default: 0, once)")
    p.add_argument("-i", "--interruptible", action="store_true",
                   help="allow interrupting the sleep by cancelling the job")
    p.add_argument("-l", "--no-locks", action="store_true",
                   help="take no locks while sleeping (default: the locks are taken)")
    jobs.add_job_options(p, dry_run=True)
    p.add_argument("duration", type=_duration, metavar="DURATION",
                   help="seconds to sleep (a decimal number greater than zero)")


def cmd_delay(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit OP_TEST_DELAY and wait for it (unless --submit)."""
    if opts.repeat < 0:
        raise UsageError("-r/--repeat must not be negative")
    op: dict[str, Any] = {
        "OP_ID": "OP_TEST_DELAY",
        "duration": opts.duration,
        "on_master": opts.on_master,
        "on_nodes": list(opts.on_nodes),
        "repeat": opts.repeat,
        "interruptible": opts.interruptible,
        "no_locks": opts.no_locks,
    }
    jobs.submit_or_send(ctx, opts, op)
    return c.EXIT_SUCCESS


def _setup_submit_job(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print the ids of the submitted jobs")
    p.add_argument("--op-repeat", dest="rep_op", type=int, default=1, metavar="N",
                   help="repeat the opcodes of each file N times in its job (default: 1)")
    p.add_argument("--job-repeat", dest="rep_job", type=int, default=1, metavar="N",
                   help="submit the jobs N times (default: 1)")
    p.add_argument("--timing-stats", action="store_true",
                   help="show counts and the time spent submitting and executing")
    p.add_argument("--each", action="store_true",
                   help="submit each job separately (SubmitJob) instead of all at once "
                        "(SubmitManyJobs)")
    jobs.add_job_options(p, submit=False, dry_run=True)
    p.add_argument("files", nargs="+", metavar="OPCODES_FILE",
                   help="a JSON file holding a list of opcodes (one job per file)")


def _load_opcodes(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_OPCODE_FILE + 1)
    except OSError as err:
        raise errors.OpPrereqError(f"Cannot read {path}: {err.strerror or err}",
                                   errors.ECODE_INVAL) from None
    if len(data) > MAX_OPCODE_FILE:
        raise errors.OpPrereqError(f"{path} is larger than {MAX_OPCODE_FILE} bytes",
                                   errors.ECODE_INVAL)
    try:
        ops = serializer.load_json(data)
    except ValueError as err:
        raise errors.OpPrereqError(f"{path} is not valid JSON: {err}",
                                   errors.ECODE_INVAL) from None
    if not isinstance(ops, list) or not all(isinstance(op, dict) and "OP_ID" in op
                                            for op in ops):
        raise errors.OpPrereqError(f"{path} must hold a JSON list of opcodes (objects with "
                                   "an OP_ID)", errors.ECODE_INVAL)
    return ops


def cmd_submit_job(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit one job per file (times --job-repeat) and wait for them, as Ganeti's
    ``gnt-debug submit-job`` (its JobExecutor)."""
    if opts.rep_op < 1 or opts.rep_job < 1:
        raise UsageError("--op-repeat and --job-repeat must be at least 1")
    if opts.timing_stats:
        ctx.out("Loading...")
    loaded = {path: _load_opcodes(path) for path in dict.fromkeys(opts.files)}
    queue: list[tuple[str, list[dict[str, Any]]]] = []
    op_count = 0
    for job_index in range(opts.rep_job):
        for path in opts.files:
            ops = [dict(op) for op in loaded[path] * opts.rep_op]
            jobs.set_generic_options(ctx, opts, ops)
            queue.append((f"file {path}/{job_index}", ops))
            op_count += len(ops)
    t1 = time.time()
    if opts.timing_stats:
        ctx.out("Submitting...")
    client = ctx.luxi()
    if opts.each:
        submitted = [[True, client.call("SubmitJob", ops)] for _, ops in queue]
    else:
        submitted = client.call("SubmitManyJobs", [ops for _, ops in queue])
    t2 = time.time()
    if opts.timing_stats:
        ctx.out("Executing...")
    _wait_named(ctx, [(name, bool(ok), value)
                      for (name, _), (ok, value) in zip(queue, submitted, strict=True)],
                opts.verbose)
    t3 = time.time()
    if opts.timing_stats:
        ctx.out(f"C:op     {op_count:4d}")
        ctx.out(f"C:job    {len(queue):4d}")
        ctx.out(f"T:submit {t2 - t1:4.4f}")
        ctx.out(f"T:exec   {t3 - t2:4.4f}")
        ctx.out(f"T:total  {t3 - t1:4.4f}")
    return c.EXIT_SUCCESS  # as Ganeti: failed jobs are reported, not in the exit code


def _wait_named(ctx: Context, submitted: list[tuple[str, bool, Any]], verbose: bool) -> None:
    """Ganeti's JobExecutor.GetResults: follow each job, naming it by its file."""
    if verbose:
        ok = [str(value) for _, success, value in submitted if success]
        if ok:
            ctx.out("Submitted jobs " + ", ".join(ok))
    for name, success, value in submitted:
        if not success:
            ctx.err(f"Failed to submit job for {name}: {value}")
    for name, success, value in submitted:
        if not success:
            continue
        job_id = int(value)
        ctx.out(f"Waiting for job {job_id} for {name} ...")
        try:
            jobs.poll_job(ctx, job_id)
        except errors.JobLost:
            ctx.err(f"Job {job_id} for {name} has been archived, cannot check its result")
        except errors.NoMasterError:
            raise
        except errors.GenericError as err:
            ctx.err(f"Job {job_id} for {name} has failed: {format_error(err)[1]}")


def _dash_if_empty(fn: table.Formatter) -> table.Formatter:
    def fmt(value: Any) -> str:
        return "-" if not value else fn(value)
    return fmt


def _format_pending(value: Any) -> str:
    return ", ".join(f"{mode}:{','.join(str(o) for o in owners)}" for mode, owners in value)


#: How ``gnt-debug locks`` shows the list fields.
LOCKS_FORMAT: dict[str, tuple[table.Formatter, bool]] = {
    "mode": (_dash_if_empty(str), False),
    "owner": (_dash_if_empty(lambda owners: ",".join(str(o) for o in owners)), False),
    "pending": (_dash_if_empty(_format_pending), False),
}


def _setup_locks(p: argparse.ArgumentParser) -> None:
    table.add_output_options(p, LOCKS_DEFAULT_FIELDS)
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="repeat the listing every SECONDS until interrupted")


def cmd_locks(ctx: Context, opts: argparse.Namespace) -> int:
    """List the master daemon's locks: Query("lock", fields, null)."""
    fields = table.parse_fields(opts.output, LOCKS_DEFAULT_FIELDS)
    if opts.interval is not None and opts.interval <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    while True:
        code = table.generic_list(ctx, c.QR_LOCK, fields, None, opts.separator,
                                  not opts.no_headers, LOCKS_FORMAT, opts.verbose)
        if code != c.EXIT_SUCCESS or not opts.interval:
            return code
        ctx.out("")
        ctx.stdout.flush()
        time.sleep(opts.interval)


COMMANDS = [
    Command("delay", cmd_delay, "Run OP_TEST_DELAY (sleep in a job)", _setup_delay,
            "Submit a job with one OP_TEST_DELAY opcode and wait for it. As in Ganeti, "
            "a duration not greater than zero fails the job, and the opcode takes locks "
            "(the BGL shared, the nodes' exclusively) unless -l/--no-locks is given."),
    Command("submit-job", cmd_submit_job, "Submit jobs built from JSON files of opcodes",
            _setup_submit_job,
            "Submit one job per file, each file holding a JSON list of opcodes, and wait "
            "for them, printing their output. As in Ganeti, a job that fails is reported "
            "on standard error but does not change the exit status."),
    Command("test-jobqueue", checks.cmd_test_jobqueue, "Test a few aspects of the job queue",
            checks.setup_test_jobqueue,
            "Ganeti's own test of the job queue: invalid priorities refused at "
            "submission, job dependencies resolved and honoured, and OP_TEST_JQUEUE's "
            "notifications, log messages and (partial) failures checked. Exit status 1 "
            "and the reason if anything differs."),
    Command("test-osparams", checks.cmd_test_osparams,
            "Test secret OS parameter transmission", checks.setup_test_osparams,
            "Submit OP_TEST_OS_PARAMS with the --os-parameters-secret given: the job "
            "shows them back in its log; the job's stored opcode holds their names "
            "only. Without any the job fails ('Opcode needs secret parameters')."),
    Command("wconfd", checks.cmd_wconfd, "Directly talk to WConfD (the master daemon)",
            checks.setup_wconfd,
            "Call the WConfD socket, which the master daemon serves: echo TEXT, "
            "cleanuplocks, listlocks JOB_ID, listalllocks, listalllocksowners, "
            "flushconfig (write and distribute the configuration again)."),
    Command("iallocator", allocator.cmd_iallocator, "Run an instance allocator test",
            allocator.setup,
            "Submit OP_TEST_ALLOCATOR: --dir in prints the input an allocator gets for "
            "the request (-m allocate, multi-allocate, relocate, node-evacuate, "
            "change-group, and our capacity and balance), --dir out runs the allocator "
            "(-I NAME) and prints its output."),
    Command("allocator", allocator.cmd_iallocator,
            "Run an instance allocator test (same as iallocator)", allocator.setup),
    Command("locks", cmd_locks, "Show the locks of the master daemon", _setup_locks,
            "List the locks that are held or waited for (as Ganeti, not the idle ones), "
            "with their owners and pending acquisitions (job ids)."),
]


def main(argv: Sequence[str] | None = None, **kwargs: Any) -> int:
    """Entry point of bin/gnt-debug (keyword arguments: stdout, stderr, environ,
    luxi_factory)."""
    return run_tool("gnt-debug", DESCRIPTION, COMMANDS, argv, **kwargs)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
