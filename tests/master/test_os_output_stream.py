"""OS script output streamed into the job's log while the script runs.

A whole master on a fake clock reaches in-process node daemons (the real
``instance_os_add``/``instance_run_rename``/``os_output`` handlers); the
script itself is played on the same clock by a stand-in for the node's child
processes, which hands its output to the node's log writer chunk by chunk.
So the test can look at the job's log between two chunks: the lines are
there, in order, while the job runs; secret values never are; a long output
is cut with a line naming the log file on the node; a node daemon without
``os_output`` and failing reads do not fail the job; cancelling the job ends
the script.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.internet import defer

from ganeti.master.lu import osoutput
from ganeti.noded.backend.context import RPCFail
from ganeti.noded.procs import ProcessOutcome
from tests.master.test_lu_instance import InstanceCase, create_op
from tests.noded.test_osdefs import make_os

SECRET = "tok-SECRET-12345"
PRIVATE = "hunter2-private"


class PlayedScripts:
    """Stands in for the node's ChildProcesses: every script but ``create`` and
    ``rename`` exits 0 at once; those write ``chunks`` (seconds after their start,
    bytes) on the clock and exit with ``exit_code`` after ``end`` seconds."""

    def __init__(self, clock: Any, chunks: list[tuple[float, bytes]], end: float,
                 exit_code: int = 0) -> None:
        self.clock = clock
        self.chunks = chunks
        self.end = end
        self.exit_code = exit_code
        self.started: float | None = None
        self.cancelled = False
        self.argv: list[list[str]] = []

    def run(self, argv: list[str], env: Any = None, timeout: Any = None, cwd: str = "/",
            stdin: Any = None, on_output: Any = None,
            merge_stderr: bool = False) -> defer.Deferred[ProcessOutcome]:
        self.argv.append(list(argv))
        if os.path.basename(argv[0]) not in ("create", "rename"):
            return defer.succeed(ProcessOutcome(tuple(argv), 0, None, b"", b""))
        self.started = self.clock.seconds()
        calls: list[Any] = []

        def cancel(_: Any) -> None:
            self.cancelled = True
            for call in calls:
                if call.active():
                    call.cancel()
        d: defer.Deferred[ProcessOutcome] = defer.Deferred(cancel)
        for at, chunk in self.chunks:
            calls.append(self.clock.callLater(at, on_output, chunk))
        calls.append(self.clock.callLater(self.end, lambda: d.callback(
            ProcessOutcome(tuple(argv), self.exit_code, None, b"", b""))))
        return d


class StreamCase(InstanceCase):
    def setUp(self) -> None:
        super().setUp()
        top = self.net.paths("node1.test").os_search_path[0]
        os.makedirs(top, exist_ok=True)
        make_os(top, "streamos", parameters="token a token\npw a password\n")
        self.clock = self.master.reactor

    def play(self, chunks: list[tuple[float, bytes]], end: float,
             exit_code: int = 0) -> PlayedScripts:
        self.net.children = PlayedScripts(self.clock, chunks, end, exit_code)
        return self.net.children

    def create(self, **params: Any) -> int:
        return self.master.submit(create_op(
            os_type="streamos+default", no_install=False, osparams_secret={"token": SECRET},
            osparams_private={"pw": PRIVATE}, **params))

    def status_and_log(self, job: int) -> tuple[str, list[str]]:
        status, log = self.master.client().call("QueryJobs", [job], ["status", "oplog"])[0]
        return status, [str(entry[3]) for entries in log for entry in entries]

    def streamed(self, job: int, prefix: str = "OS create: ") -> tuple[str, list[str]]:
        status, log = self.status_and_log(job)
        return status, [line[len(prefix):] for line in log if line.startswith(prefix)]

    def until_started(self, played: PlayedScripts) -> float:
        for _ in range(400):
            if played.started is not None:
                return played.started
            self.clock.advance(0.25)
        raise AssertionError("the script did not start")

    def advance_to(self, when: float) -> None:
        while self.clock.seconds() < when:
            self.clock.advance(min(0.25, when - self.clock.seconds()))


class StreamTest(StreamCase):
    def test_lines_reach_the_job_log_in_order_while_the_script_runs(self):
        played = self.play([(0.5, b"step 1\n"), (2.5, b"step 2: token " + SECRET.encode()
                                                    + b" pw " + PRIVATE.encode() + b"\n"),
                            (4.5, b"partial"), (6.0, b" end\nno newline at the end")],
                           end=8.0)
        job = self.create()
        t0 = self.until_started(played)
        self.advance_to(t0 + 1.5)
        self.assertEqual(self.streamed(job), ("running", ["step 1"]))
        self.advance_to(t0 + 3.5)
        self.assertEqual(self.streamed(job), (
            "running", ["step 1", "step 2: token <redacted> pw <redacted>"]))
        self.advance_to(t0 + 5.5)  # a partial line waits for its end
        self.assertEqual(self.streamed(job)[1][-1], "step 2: token <redacted> pw <redacted>")
        self.advance_to(t0 + 7.5)
        self.assertEqual(self.streamed(job), (
            "running", ["step 1", "step 2: token <redacted> pw <redacted>", "partial end"]))
        status, results, log = self.master.finish(job)
        self.assertEqual(status, "success", results)
        status, lines = self.streamed(job)
        self.assertEqual(lines, ["step 1", "step 2: token <redacted> pw <redacted>",
                                 "partial end", "no newline at the end"])
        for line in log:
            self.assertNotIn(SECRET, line)
            self.assertNotIn(PRIVATE, line)
        # the lines come after the step that runs the script
        self.assertLess(log.index("* running the instance OS create scripts..."),
                        log.index("OS create: step 1"))
        # the node's own log file has the same (hidden) text
        [name] = os.listdir(self.net.paths("node1.test").os_log_dir)
        self.assertTrue(name.startswith("add-streamos+default-inst1.test-"), name)
        with open(os.path.join(self.net.paths("node1.test").os_log_dir, name)) as f:
            text = f.read()
        self.assertNotIn(SECRET, text)
        self.assertIn("step 2: token <redacted> pw <redacted>\n", text)

    def test_failing_script_streams_and_fails_with_its_tail(self):
        self.play([(0.5, b"formatting\n"), (1.5, b"mkfs: no space left\n")], end=2.0,
                  exit_code=1)
        job = self.create()
        status, results, log = self.master.finish(job)
        self.assertEqual(status, "error")
        self.assertIn("mkfs: no space left", results[0][1][0])
        self.assertEqual(self.streamed(job)[1], ["formatting", "mkfs: no space left"])
        self.assertIsNone(self.config.instance_by_name("inst1.test"))

    def test_long_output_is_cut_with_the_log_file_named(self):
        body = b"".join(b"line %d\n" % i for i in range(1, 1201))
        self.play([(0.5, body)], end=1.0)
        job = self.create()
        status, results, _ = self.master.finish(job)
        self.assertEqual(status, "success", results)
        lines = self.streamed(job)[1]
        self.assertEqual(len(lines), 1001)
        self.assertEqual(lines[:1000], [f"line {i}" for i in range(1, 1001)])
        self.assertRegex(lines[1000], r"^\.\.\. output truncated, see /var/log/ganeti/os/"
                                      r"add-streamos\+default-inst1\.test-[\d_-]+\.log on "
                                      r"node node1\.test$")

    def test_the_masters_own_cap(self):
        self.patch(osoutput, "MAX_LINES", 3)
        self.play([(0.5, b"a\nb\n"), (1.5, b"c\nd\ne\n")], end=3.0)
        job = self.create()
        self.assertEqual(self.master.finish(job)[0], "success")
        lines = self.streamed(job)[1]
        self.assertEqual(lines[:3], ["a", "b", "c"])
        self.assertEqual(len(lines), 4)
        self.assertTrue(lines[3].startswith("... output truncated, see /var/log/ganeti/os/"))

    def test_node_daemon_without_os_output(self):
        seen: list[int] = []
        original = self.net.handlers["instance_os_add"]

        def old_os_add(ctx, *args):
            seen.append(len(args))
            return original(ctx, *args)

        def unknown(ctx, *args):
            raise RPCFail("404 Not Found: unknown call os_output")
        self.patch(self.net, "handlers", {**self.net.handlers, "os_output": unknown,
                                          "instance_os_add": old_os_add})
        self.play([(0.5, b"step 1\n")], end=2.0)
        job = self.create()
        self.assertEqual(self.master.finish(job)[0], "success")
        self.assertEqual(seen, [3])  # called without a run id
        self.assertEqual(self.streamed(job)[1], [])

    def test_failing_reads_do_not_fail_the_job(self):
        reads: list[Any] = []
        original = self.net.handlers["os_output"]

        def flaky(ctx, run_id, offset):
            reads.append(offset)
            if len(reads) > 1:
                raise RPCFail("connection reset")
            return original(ctx, run_id, offset)
        self.patch(self.net, "handlers", {**self.net.handlers, "os_output": flaky})
        self.play([(0.5, b"step 1\n")], end=30.0)
        job = self.create()
        status, results, _ = self.master.finish(job)
        self.assertEqual(status, "success", results)
        self.assertEqual(len(reads), 1 + osoutput.MAX_FAILED_READS)  # then it stops asking

    def test_cancelling_the_job_ends_the_script(self):
        played = self.play([(0.5, b"copying the image\n")], end=3600.0)
        job = self.create()
        t0 = self.until_started(played)
        self.advance_to(t0 + 1.5)
        self.assertEqual(self.streamed(job), ("running", ["copying the image"]))
        self.master.run_until(defer.Deferred.fromCoroutine(
            self.master.daemon.queue.cancel(job, True)))
        status, _, _ = self.master.finish(job)
        self.assertIn(status, ("canceled", "error"))
        self.assertTrue(played.cancelled)
        self.assertIsNone(self.config.instance_by_name("inst1.test"))

    def test_reinstall_and_rename_stream_too(self):
        self.play([(0.5, b"first\n")], end=1.0)
        self.assertEqual(self.master.finish(self.create(
            disk_template="file", disks=[{"size": 1024}]))[0], "success")
        self.play([(0.5, b"again " + SECRET.encode() + b"\n")], end=1.0)
        job = self.master.submit({"OP_ID": "OP_INSTANCE_REINSTALL",
                                  "instance_name": "inst1.test",
                                  "osparams_secret": {"token": SECRET}})
        self.assertEqual(self.master.finish(job)[0], "success")
        self.assertEqual(self.streamed(job)[1], ["again <redacted>"])
        self.play([(0.5, b"renaming\n")], end=1.0)
        job = self.master.submit({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": "inst1.test",
                                  "new_name": "inst2.test", "name_check": False,
                                  "ip_check": False})
        self.assertEqual(self.master.finish(job)[0], "success")
        self.assertEqual(self.streamed(job, "OS rename: ")[1], ["renaming"])

