"""gnt-debug in process against a whole master daemon on a fake clock (no sockets)."""

import json
import os
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

    def test_repeat_n_sleeps_n_times_and_logs_as_ganeti(self):
        # Ganeti: repeat N > 0 sleeps N times, "Test delay iteration i/N-1" from 0.
        r = self.debug("delay", "-r", "2", "3")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, f"{time.ctime(START_TIME)}  - INFO: Test delay iteration 0/1\n"
                                f"{time.ctime(START_TIME + 3)}  - INFO: Test delay iteration "
                                "1/1\n")
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 6)
        r = self.debug("delay", "--repeat", "1", "2")
        self.assertEqual(r.out, f"{time.ctime(START_TIME + 6)}  - INFO: Test delay iteration "
                                "0/0\n")
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 8)

    def test_repeat_zero_sleeps_once_silently(self):
        r = self.debug("delay", "-r", "0", "2")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 2)

    def test_no_master_without_nodes_still_sleeps_on_the_master(self):
        # Ganeti's LUTestDelay: with no node to sleep on, the master sleeps itself.
        r = self.debug("delay", "--no-master", "4")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.master.reactor.seconds(), START_TIME + 4)
        self.assertEqual(self.job_field(1, "status"), "success")

    def test_zero_or_negative_duration_fails_the_job(self):
        for job_id, argv in enumerate((["0"], ["--", "-1"], ["-5"], ["0.0"]), start=1):
            r = self.debug("delay", *argv)
            self.assertEqual(r.code, 1, argv)
            self.assertEqual(r.out, "")
            self.assertIn("Failure: prerequisites not met for this operation:", r.err)
            self.assertIn("Duration must be greater than zero", r.err)
            self.assertNotIn("wrong_input", r.err)  # Ganeti's error has no error code
            self.assertEqual(self.job_field(job_id, "status"), "error")
            self.assertEqual(self.job_field(job_id, "opresult"),
                             [["OpPrereqError", ["Duration must be greater than zero"]]])
        self.assertEqual(self.master.reactor.seconds(), START_TIME)

    def test_reason_trail(self):
        before = time.time_ns()
        self.assertEqual(self.debug("delay", "--reason", "why not", "0.5").code, 0)
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
        self.assertIn("drain", r.err.lower())


class TestJqueueOpcodeTest(DebugTestCase):
    """OP_TEST_JQUEUE without a client (Ganeti's gnt-debug test-jobqueue drives it
    against a real master in tests/integration/test_debug_compat.py)."""

    def log_texts(self, job_id):
        (log,) = self.job_field(job_id, "oplog")
        return [(entry[2], entry[3]) for entry in log]

    def test_plain_run_and_requested_failure(self):
        ok = self.submit({"OP_ID": "OP_TEST_JQUEUE"})
        self.advance(1)
        self.assertEqual(self.job_field(ok, "status"), "success")
        self.assertEqual(self.job_field(ok, "opresult"), [True])
        self.assertEqual(self.log_texts(ok), [("message", " - INFO: Expanding names"),
                                              ("message", " - INFO: Executing")])
        failed = self.submit({"OP_ID": "OP_TEST_JQUEUE", "fail": True},
                             {"OP_ID": "OP_TEST_JQUEUE"})
        self.advance(1)
        self.assertEqual(self.job_field(failed, "opstatus"), ["error", "error"])
        self.assertEqual(self.job_field(failed, "opresult")[0],
                         ["OpExecError", ["Opcode failure was requested"]])

    def test_notification_without_a_client_times_out(self):
        job_id = self.submit({"OP_ID": "OP_TEST_JQUEUE", "log_messages": ["hello"]})
        self.advance(1)
        self.assertEqual(self.job_field(job_id, "status"), "running")
        kind, (path, test, arg) = self.log_texts(job_id)[-1]
        self.assertEqual((kind, test, arg), ("jqueue-test", "startmsg", 1))
        self.assertTrue(path.endswith("/sock"), path)
        self.advance(20)  # Ganeti's time for the client to connect
        self.assertEqual(self.job_field(job_id, "status"), "error")
        self.assertEqual(self.job_field(job_id, "opresult"),
                         [["OpExecError", ["Client didn't connect in time (timed out)"]]])
        self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_waitlock_notification_while_waiting(self):
        job_id = self.submit({"OP_ID": "OP_TEST_JQUEUE", "notify_waitlock": True})
        self.advance(1)
        self.assertEqual(self.job_field(job_id, "status"), "waiting")
        self.assertEqual(self.log_texts(job_id)[-1][1][1:], ["expandnames", None])
        self.advance(20)
        self.assertEqual(self.job_field(job_id, "opresult"),
                         [["OpPrereqError", ["Client didn't connect in time (timed out)"]]])


class TestOsParamsTest(DebugTestCase):
    """gnt-debug test-osparams (OP_TEST_OS_PARAMS, Ganeti's LUTestOsParams): the job shows
    the secret parameters back; what is stored holds their names only."""

    def test_secrets_shown_back_never_stored(self):
        r = self.debug("test-osparams", "--os-parameters-secret",
                       "param1=secret1,param2=secret2")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, f"{time.ctime(START_TIME)} Secret OS parameters: "
                                "{'param1': 'secret1', 'param2': 'secret2'}\n")
        op = self.submitted_op()
        self.assertEqual((op["OP_ID"], op["osparams_secret"]),
                         ("OP_TEST_OS_PARAMS", {"param1": None, "param2": None}))
        queue = self.master.paths.queue_dir
        with open(os.path.join(queue, "job-1"), encoding="utf-8") as f:
            stored = json.load(f)
        self.assertEqual(stored["ops"][0]["input"]["osparams_secret"],
                         {"param1": None, "param2": None})

    def test_without_secrets_the_job_fails(self):
        r = self.debug("test-osparams")
        self.assertEqual((r.code, r.out), (1, ""))
        self.assertIn("Opcode needs secret parameters", r.err)
        self.assertEqual(self.job_field(1, "opresult"),
                         [["OpExecError", ["Opcode needs secret parameters"]]])
        r = self.debug("test-osparams", "--os-parameters-secret", "a=1", "--submit")
        self.assertEqual((r.code, r.err), (0, "JobID: 2\n"))


class SubmitJobTest(DebugTestCase):
    def opfile(self, ops):
        path = self.mktemp()
        with open(path, "w") as f:
            json.dump(ops, f)
        return path

    def test_one_job_per_file_named_as_ganeti(self):
        path = self.opfile([delay_op(1), {"OP_ID": "OP_TAGS_GET", "kind": "cluster"}])
        r = self.debug("submit-job", path)
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, f"Waiting for job 1 for file {path}/0 ...\n")
        self.assertEqual(self.job_field(1, "status"), "success")
        self.assertEqual([op["OP_ID"] for op in self.job_field(1, "ops")],
                         ["OP_TEST_DELAY", "OP_TAGS_GET"])
        self.assertIn("SubmitManyJobs", self.methods())

    def test_repeats_verbose_timing_and_each(self):
        path = self.opfile([delay_op(1)])
        r = self.debug("submit-job", "--job-repeat", "2", "--op-repeat", "3", "-v",
                       "--timing-stats", "--priority", "low", path)
        self.assertEqual(r.code, 0, r.err)
        lines = r.out.splitlines()
        self.assertEqual(lines[:6], ["Loading...", "Submitting...", "Executing...",
                                     "Submitted jobs 1, 2",
                                     f"Waiting for job 1 for file {path}/0 ...",
                                     f"Waiting for job 2 for file {path}/1 ..."])
        self.assertEqual(lines[6:8], ["C:op        6", "C:job       2"])
        self.assertRegex(lines[8], r"^T:submit \d+\.\d{4}$")
        self.assertEqual(len(self.job_field(2, "ops")), 3)
        self.assertEqual(self.job_field(2, "ops")[0]["priority"], 10)
        r = self.debug("submit-job", "--each", path, path)
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.methods().count("SubmitJob"), 2)

    def test_failed_job_reported_exit_zero_as_ganeti(self):
        path = self.opfile([delay_op(0)])
        r = self.debug("submit-job", path)
        self.assertEqual(r.code, 0)
        self.assertEqual(r.out, f"Waiting for job 1 for file {path}/0 ...\n")
        self.assertIn(f"Job 1 for file {path}/0 has failed: Failure: prerequisites not met "
                      "for this operation: Duration must be greater than zero", r.err)

    def test_bad_files(self):
        missing = os.path.join(self.mktemp(), "nope.json")
        for path, text in ((missing, "Cannot read"),
                           (self.opfile({"OP_ID": "OP_TEST_DELAY"}), "must hold a JSON list"),
                           (self.opfile([1]), "must hold a JSON list")):
            r = self.debug("submit-job", path)
            self.assertEqual(r.code, 1, path)
            self.assertIn(text, r.err)
        bad = self.mktemp()
        with open(bad, "w") as f:
            f.write("[{")
        self.assertIn("is not valid JSON", self.debug("submit-job", bad).err)
        r = self.debug("submit-job", "--op-repeat", "0", self.opfile([delay_op(1)]))
        self.assertEqual(r.code, 1)
        self.assertEqual(self.master.calls, [])


class LocksTest(DebugTestCase):
    def test_idle_locks_are_not_listed(self):
        # Ganeti lists only locks that are held or waited for: an idle cluster, none.
        r = self.debug("locks")
        self.assertEqual((r.code, r.out, r.err), (0, "Name Mode Owner Pending\n", ""))
        self.assertEqual(self.master.calls[-1],
                         ("Query", ("lock", ["name", "mode", "owner", "pending"], None)))

    def test_owners_and_pending(self):
        self.submit(delay_op(10, no_locks=False, on_master=False))  # just the BGL, shared
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["x"]})
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["y"]})
        r = self.debug("locks", "--no-headers", "--separator=|")
        self.assertEqual(r.out, "cluster/BGL|shared|1|exclusive:2, exclusive:3\n"
                                "cluster/[lockset]|-|-|-\n")
        r = self.debug("locks", "-o", "name,owner", "--no-headers")
        self.assertEqual(r.out, "cluster/BGL       1\ncluster/[lockset] -\n")

    def test_node_locks_by_uuid_as_ganeti(self):
        master = self.master.config.nodes[self.master.config.cluster.master_node]
        self.submit(delay_op(10, no_locks=False))  # the master's node lock, exclusive
        self.submit(delay_op(10, no_locks=False))  # waits for it
        r = self.debug("locks")
        self.assertEqual(r.code, 0, r.err)
        rows = [line.split() for line in r.out.splitlines()]
        self.assertEqual(rows[0], ["Name", "Mode", "Owner", "Pending"])
        self.assertEqual(rows[1:], sorted([
            ["cluster/BGL", "shared", "1,2", "-"],
            ["cluster/[lockset]", "-", "-", "-"],
            [f"node/{master.uuid}", "exclusive", "1", "exclusive:2"],
            ["node/[lockset]", "-", "-", "-"],
        ]))

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
        self.submit(delay_op(10, no_locks=False, on_master=False))
        r = self.debug("locks", "--interval", "2", "-o", "name", "--no-headers")
        self.assertEqual(r.code, 1)
        self.assertEqual(sleeps, [2.0, 2.0])
        self.assertEqual(r.out, "cluster/BGL\ncluster/[lockset]\n\n" * 2)
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
