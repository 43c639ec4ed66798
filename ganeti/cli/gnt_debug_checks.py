"""``gnt-debug test-jobqueue``, ``test-osparams`` and ``wconfd``.

``test-jobqueue`` is Ganeti's own check of a master's job queue, run as Ganeti's
client runs it (``TestJobqueue`` in Ganeti's gnt-debug): submissions with invalid
priorities must be refused, relative job dependencies resolved and honoured, and
OP_TEST_JQUEUE's notifications answered: at each ``jqueue-test`` log entry the
client connects to the socket it names, checks the job's status (``waiting``
while it waits for its lock, ``running`` when it executes and logs), and
counts the ``TESTMSG=`` messages; the job succeeds, fails or fails partly as
asked.  Any mismatch fails the command (``OpExecError``).

``test-osparams`` submits OP_TEST_OS_PARAMS with ``--os-parameters-secret``;
``wconfd`` calls the master daemon's WConfD socket (see
:mod:`ganeti.master.wconfd`) and prints ``Answer: <value>`` as Ganeti's does.
"""

from __future__ import annotations

import argparse
import socket
import time
from typing import Any

from ganeti.cli import gnt_instance_opts as iopts
from ganeti.cli import jobs
from ganeti.cli.framework import Context
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.luxi.client import LuxiClient

#: The notifications of OP_TEST_JQUEUE (Ganeti's JQT_*) and its message prefix.
JQT_EXPANDNAMES, JQT_EXEC, JQT_LOGMSG, JQT_STARTMSG = "expandnames", "exec", "logmsg", \
    "startmsg"
JQT_ALL = frozenset({JQT_EXPANDNAMES, JQT_EXEC, JQT_LOGMSG, JQT_STARTMSG})
JQT_MSGPREFIX = "TESTMSG="
#: Seconds the client gives a notification socket (Ganeti's).
NOTIFY_TIMEOUT = 30.0


def _delay(**params: Any) -> dict[str, Any]:
    return {"OP_ID": "OP_TEST_DELAY", "duration": 0, **params}


def _test_submission(ctx: Context, opts: argparse.Namespace) -> None:
    """Jobs holding an opcode with a priority clients may not use must be refused."""
    ctx.out("Testing job submission")
    cases = [(0, 0, c.OP_PRIO_LOWEST), (0, 0, c.OP_PRIO_HIGHEST)]
    for priority in sorted(c.OP_PRIO_SUBMIT_VALID | {c.OP_PRIO_LOWEST, c.OP_PRIO_HIGHEST}):
        for offset in (-1, 1):
            cases += [(0, 0, priority + offset), (3, 0, priority + offset),
                      (0, 3, priority + offset), (4, 2, priority + offset)]
    client = ctx.luxi()
    for before, after, bad in cases:
        ops = ([_delay() for _ in range(before)] + [_delay(priority=bad)]
               + [_delay() for _ in range(after)])
        good = [_delay(), _delay(dry_run=False), _delay(dry_run=True)]
        for method, arg in (("SubmitJob", ops), ("SubmitManyJobs", [good, ops])):
            try:
                client.call(method, arg)
            except errors.GenericError as err:
                if getattr(opts, "debug", 0):
                    ctx.out(f"Ignoring error for 'wrong priority' test: {err}")
            else:
                raise errors.OpExecError(f"{method} with an opcode of priority {bad} did "
                                         "not fail when it should (allowed are "
                                         f"{sorted(c.OP_PRIO_SUBMIT_VALID)})")
    ctx.out("Job submission tests were successful")


def _test_dependencies(ctx: Context, opts: argparse.Namespace) -> None:
    """A relative dependency outside SubmitManyJobs is refused; inside, it is resolved
    to the job's id and the jobs run in the order their dependencies say."""
    ctx.out("Testing job dependencies")
    try:
        jobs.poll_job(ctx, jobs.send_job(ctx, [_delay(depends=[[-1, None]])]))
    except errors.GenericError as err:
        if getattr(opts, "debug", 0):
            ctx.out(f"Ignoring error for 'wrong dependencies' test: {err}")
    else:
        raise errors.OpExecError("Submitting plain opcode with relative job ID did not "
                                 "fail as expected")
    success = [c.JOB_STATUS_SUCCESS]
    submitted = ctx.luxi().call("SubmitManyJobs", [
        [_delay(duration=1)], [_delay(duration=1, depends=[[-1, []]])],
        [_delay(duration=1, depends=[[-2, success]])], [_delay(duration=1, depends=[])],
        [_delay(duration=1, depends=[[-2, success]])]])
    if not (isinstance(submitted, list) and len(submitted) == 5
            and all(isinstance(r, list) and len(r) == 2 and r[0] is True for r in submitted)):
        raise errors.OpExecError(f"Job submission failed: {submitted}")
    results = jobs.wait_for_jobs(ctx, submitted)
    if not all(ok for ok, _ in results):
        raise errors.OpExecError(f"At least one of the submitted jobs failed: {results}")
    ids = [int(job_id) for _, job_id in submitted]
    rows = ctx.luxi().call("QueryJobs", ids, ["id", "opexec", "ops"])
    opexec = [row[1] for row in rows]
    for index, target in ((1, ids[0]), (2, ids[0]), (4, ids[2])):
        depends = rows[index][2][0].get("depends") or [[None]]
        if depends[0][0] != target:
            raise errors.OpExecError(f"Job {index}'s opcode doesn't depend on correct job "
                                     f"ID ({target})")
    if not (opexec[0] <= opexec[1] and opexec[0] <= opexec[2] <= opexec[4]):
        raise errors.OpExecError(f"Jobs did not run in correct order: {rows}")
    ctx.out("Job dependency tests were successful")


class _QueueTestReporter(jobs.Reporter):
    """Answers OP_TEST_JQUEUE's notifications and collects its test messages."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.messages: list[str] = []
        self._current: list[str] | None = None

    def log_message(self, job_id: int, serial: int, timestamp: list[int], log_type: str,
                    message: Any) -> None:
        if log_type == c.ELOG_JQUEUE_TEST:
            self._notified_by(job_id, *message)
        elif (log_type == c.ELOG_MESSAGE and isinstance(message, str)
              and message.startswith(JQT_MSGPREFIX)):
            if self._current is None:
                raise errors.OpExecError("Received test message without a preceding start "
                                         "message")
            self._current.append(message[len(JQT_MSGPREFIX):])
            self.messages.append(message[len(JQT_MSGPREFIX):])
        else:
            super().log_message(job_id, serial, timestamp, log_type, message)

    def _notified_by(self, job_id: int, path: str, test: str, arg: Any) -> None:
        if test not in JQT_ALL:
            raise errors.OpExecError(f"Received invalid test message {test}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(NOTIFY_TIMEOUT)
            sock.connect(path)
            rows = self.ctx.luxi().call("QueryJobs", [job_id], ["status"])
            if not rows or not rows[0]:
                raise errors.OpExecError(f"Can't find job {job_id}")
            status = rows[0][0]
            wanted = {JQT_EXPANDNAMES: c.JOB_STATUS_WAITING, JQT_EXEC: c.JOB_STATUS_RUNNING,
                      JQT_LOGMSG: c.JOB_STATUS_RUNNING}.get(test)
            if wanted is not None and status != wanted:
                raise errors.OpExecError(f"Job status during '{test}' is '{status}', not "
                                         f"'{wanted}' as expected")
            if test == JQT_STARTMSG:
                self._current = []
            elif test == JQT_LOGMSG and (self._current is None or len(self._current) != arg):
                raise errors.OpExecError(f"Received {len(self._current or [])} test "
                                         f"messages when {arg} are expected")


def _run_queue_test(ctx: Context, opts: argparse.Namespace, title: str, fails: list[bool],
                    messages: list[str]) -> None:
    """One OP_TEST_JQUEUE job (one opcode per entry of ``fails``), checked."""
    ctx.out(title)
    ops = [{"OP_ID": "OP_TEST_JQUEUE", "notify_waitlock": True, "notify_exec": True,
            "log_messages": messages, "fail": fail} for fail in fails]
    jobs.set_generic_options(ctx, opts, ops)
    job_id = jobs.send_job(ctx, ops)
    reporter = _QueueTestReporter(ctx)
    failing = any(fails)
    try:
        results = jobs.poll_job(ctx, job_id, reporter)
    except errors.OpExecError as err:
        if not failing:
            raise
        ctx.out(f"Ignoring error for 'job fail' test: {err.args[0] if err.args else err}")
    else:
        if failing:
            raise errors.OpExecError("Job didn't fail when it should")
        if len(results) != len(fails):
            raise errors.OpExecError(f"Received {len(results)} results ({results}), "
                                     f"expected {len(fails)}")
    ran = fails.index(True) + 1 if failing else len(fails)
    if reporter.messages != messages * ran:
        raise errors.OpExecError(f"Received test messages don't match input (input "
                                 f"{messages * ran!r}, received {reporter.messages!r})")
    rows = ctx.luxi().call("QueryJobs", [job_id], ["status", "opstatus"])
    status, opstatus = rows[0]
    expected = [c.JOB_STATUS_SUCCESS] * len(fails) if not failing else \
        [c.JOB_STATUS_SUCCESS] * (ran - 1) + [c.JOB_STATUS_ERROR] * (len(fails) - ran + 1)
    final = c.JOB_STATUS_ERROR if failing else c.JOB_STATUS_SUCCESS
    if status != final or opstatus != expected:
        raise errors.OpExecError(f"Job status is {status} {opstatus}, expected {final} "
                                 f"{expected}")


def setup_test_jobqueue(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-debug test-jobqueue``."""
    jobs.add_priority_option(p)


def cmd_test_jobqueue(ctx: Context, opts: argparse.Namespace) -> int:
    """Ganeti's job queue test (see the module docstring)."""
    _test_submission(ctx, opts)
    _test_dependencies(ctx, opts)
    for mode, title, fails in (
            (0, "Testing job success", [False]),
            (1, "Testing multiple successful opcodes", [False, False]),
            (2, "Testing job failure", [True]),
            (3, "Testing partial job failure", [False, False, True, False])):
        messages = [f"Testing mode {mode}", "Hello World", "A", "", "B", "Foo|bar|baz",
                    time.strftime("%Y-%m-%d_%H_%M_%S")]
        _run_queue_test(ctx, opts, title, fails, messages)
    ctx.out("Job queue test successful")
    return c.EXIT_SUCCESS


def setup_test_osparams(p: argparse.ArgumentParser) -> None:
    """Options of ``gnt-debug test-osparams``."""
    p.add_argument("--os-parameters-secret", dest="osparams_secret", metavar="KEY=VAL,...",
                   help="secret OS parameters (shown back by the job, never stored)")
    jobs.add_job_options(p)


def cmd_test_osparams(ctx: Context, opts: argparse.Namespace) -> int:
    """Submit OP_TEST_OS_PARAMS: the job shows the secret parameters it received."""
    secret = iopts.split_keyval("--os-parameters-secret", opts.osparams_secret)
    jobs.submit_or_send(ctx, opts, {"OP_ID": "OP_TEST_OS_PARAMS",
                                    "osparams_secret": secret})
    return c.EXIT_SUCCESS


#: ``gnt-debug wconfd`` commands: (WConfD method, argument count, printed on success).
WCONFD_COMMANDS: dict[str, tuple[str, int, str | None]] = {
    "echo": ("echo", 1, None),
    "cleanuplocks": ("cleanupLocks", 0, "Stale locks cleaned up."),
    "listlocks": ("listLocks", 1, None),
    "listalllocks": ("listAllLocks", 0, None),
    "listalllocksowners": ("listAllLocksOwners", 0, None),
    "flushconfig": ("flushConfig", 0, "Configuration flushed."),
}


def setup_wconfd(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gnt-debug wconfd``."""
    p.add_argument("wconfd_command", metavar="COMMAND",
                   help=f"one of {', '.join(WCONFD_COMMANDS)}")
    p.add_argument("wconfd_args", nargs="*", metavar="ARG",
                   help="its arguments: echo TEXT, listlocks JOB_ID")


def cmd_wconfd(ctx: Context, opts: argparse.Namespace) -> int:
    """Call the WConfD socket (the master daemon holds WConfD's role)."""
    name, args = opts.wconfd_command, list(opts.wconfd_args)
    if name not in WCONFD_COMMANDS:
        ctx.err(f"Command '{name}' not supported")
        return c.EXIT_FAILURE
    method, count, done = WCONFD_COMMANDS[name]
    if len(args) != count:
        ctx.err(f"Command '{name}' takes {'no' if not count else 'precisely one'} "
                f"argument{'s' if not count else ''}.")
        return c.EXIT_FAILURE
    call_args: list[Any] = list(args)
    if name == "listlocks":
        try:
            call_args = [[int(args[0]), "", 0]]  # a client id: the job's id
        except ValueError:
            ctx.err(f"Command 'listlocks' needs a job id, not '{args[0]}'.")
            return c.EXIT_FAILURE
    with LuxiClient(ctx.paths.wconfd_socket) as client:
        result = client.call(method, *call_args)
    ctx.out(done if done is not None else f"Answer: {result}")
    return c.EXIT_SUCCESS
