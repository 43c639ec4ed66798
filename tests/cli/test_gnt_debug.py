"""gnt-debug in process against a whole master daemon on a fake clock (no sockets)."""

import time

from ganeti.cli import gnt_debug
from tests.fakes.clirun import MasterCliTestCase, delay_op
from tests.fakes.masterd import START_TIME


class DebugTestCase(MasterCliTestCase):
    def debug(self, *argv):
        return self.run_tool(gnt_debug, *argv)

    def submitted_op(self, job_id=1):
        (op,) = self.job_field(job_id, "ops")
        return op


class DelayTest(DebugTestCase):
    def test_delay_waits_for_the_job(self):
        r = self.debug("delay", "2.5")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 2.5)
        self.assertEqual(self.job_field(1, "status"), "success")
        op = self.submitted_op()
        self.assertEqual(
            {k: op[k] for k in ("duration", "on_master", "on_nodes", "repeat",
                                "interruptible", "no_locks", "priority", "dry_run",
                                "debug_level")},
            {"duration": 2.5, "on_master": True, "on_nodes": [], "repeat": 0,
             "interruptible": False, "no_locks": False, "priority": 0, "dry_run": False,
             "debug_level": 0})
        self.assertEqual(self.methods()[0], "SubmitJob")
        self.assertEqual(self.methods()[-1], "QueryJobs")

    def test_options(self):
        r = self.debug("delay", "--no-master", "-l", "-i", "-r", "2", "--priority", "high",
                       "-d", "--dry-run", "1")
        self.assertEqual(r.code, 0, r.err)
        op = self.submitted_op()
        self.assertEqual((op["on_master"], op["no_locks"], op["interruptible"], op["repeat"],
                          op["priority"], op["debug_level"], op["dry_run"]),
                         (False, True, True, 2, -10, 1, True))

    def test_repeat_prints_the_log(self):
        r = self.debug("delay", "-r", "1", "3")
        self.assertEqual(r.out, f"{time.ctime(START_TIME)} Test delay iteration 1/2\n"
                                f"{time.ctime(START_TIME + 3)} Test delay iteration 2/2\n")

    def test_reason_trail(self):
        before = time.time_ns()
        self.assertEqual(self.debug("delay", "--reason", "why not", "0").code, 0)
        reason = self.submitted_op()["reason"]
        self.assertEqual([entry[:2] for entry in reason],
                         [["gnt:user", "why not"], ["gnt:client:gnt-debug", "delay"],
                          ["gnt:opcode:test_delay", "job=1;index=0"]])
        self.assertTrue(all(before <= entry[2] <= time.time_ns() for entry in reason[:2]))

    def test_submit_only(self):
        r = self.debug("delay", "--submit", "30")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 1\n"))
        self.assertEqual(self.methods(), ["SubmitJob"])
        self.assertEqual(self.job_field(1, "status"), "running")
        r = self.debug("delay", "--submit", "--print-jobid", "30")
        self.assertEqual((r.out, r.err), ("2\n", "JobID: 2\n"))

    def test_print_jobid_while_waiting(self):
        r = self.debug("delay", "--print-jobid", "1")
        self.assertEqual((r.code, r.out), (0, "1\n"))

    def test_failing_job(self):
        r = self.debug("delay", "-n", "nosuch.test", "1")
        self.assertEqual(r.code, 1)
        self.assertIn("Failure: prerequisites not met for this operation: Node 'nosuch.test' "
                      "not known", r.err)
        self.assertEqual(self.job_field(1, "status"), "error")

    def test_refused_at_submission(self):
        r = self.debug("delay", "-5")
        self.assertEqual(r.code, 1)
        self.assertIn("OP_TEST_DELAY.duration", r.err)
        self.assertEqual(self.job_field(1, "status"), None)

    def test_bad_duration(self):
        for argv in (["delay", "soon"], ["delay"], ["delay", "nan"], ["delay", "-r", "-1",
                                                                       "1"]):
            r = self.debug(*argv)
            self.assertEqual(r.code, 1, argv)
            self.assertTrue(r.err.startswith("Usage error: "), r.err)
        self.assertEqual(self.master.calls, [])

    def test_drained_queue(self):
        self.master.client().call("SetDrainFlag", True)
        r = self.debug("delay", "1")
        self.assertEqual(r.code, 1)
        self.assertIn("job queue is marked for drain", r.err)


class LocksTest(DebugTestCase):
    def test_free_locks(self):
        r = self.debug("locks")
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[0], "Name                Mode Owner Pending")
        self.assertIn("cluster/BGL         -    -     -", lines)
        self.assertIn("node/node1.test     -    -     -", lines)
        self.assertEqual(self.master.calls[-1],
                         ("Query", ("lock", ["name", "mode", "owner", "pending"], None)))

    def test_owners_and_pending(self):
        self.submit(delay_op(10, no_locks=False))
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["x"]})
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["y"]})
        r = self.debug("locks", "--no-headers", "--separator=|")
        self.assertIn("cluster/BGL|shared|job/1|exclusive:job/2, exclusive:job/3\n", r.out)
        r = self.debug("locks", "-o", "name,owner", "--no-headers")
        self.assertIn("cluster/BGL         job/1\n", r.out)

    def test_unknown_field(self):
        r = self.debug("locks", "-o", "+bogus")
        self.assertEqual(r.code, 14)
        self.assertIn("Warning: Queried for unknown fields bogus", r.err)

    def test_interval(self):
        sleeps = []

        def sleep(seconds):
            sleeps.append(seconds)
            if len(sleeps) == 2:
                raise KeyboardInterrupt
        self.patch(gnt_debug.time, "sleep", sleep)
        r = self.debug("locks", "--interval", "2", "-o", "name", "--no-headers")
        self.assertEqual(r.code, 1)
        self.assertEqual(sleeps, [2.0, 2.0])
        self.assertEqual(r.out.count("cluster/BGL\n"), 2)
        self.assertEqual(r.err, "Aborted.\n")


class HelpTest(DebugTestCase):
    def test_help_everywhere(self):
        r = self.debug("--help")
        self.assertEqual(r.code, 0)
        for cmd in gnt_debug.COMMANDS:
            self.assertIn(cmd.name, r.out)
            sub = self.debug(cmd.name, "--help")
            self.assertEqual(sub.code, 0, cmd.name)
            self.assertIn("usage: gnt-debug " + cmd.name, sub.out)
        self.assertIn("--no-locks", self.debug("delay", "--help").out)
        self.assertEqual(self.master.calls, [])
