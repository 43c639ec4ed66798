"""The job queue of a real ganeti-masterd, through its LUXI socket and with Debian's
Ganeti 3.0 tools (gnt-job, gnt-debug, gnt-cluster queue).

One virtual cluster per test class.  Nothing here sleeps: waiting for a job is
WaitForJobChange with a timeout (tests/integration/jobtools.py).
"""

import json
import os
import socket
import time

from ganeti.core import errors
from ganeti.luxi import wire
from tests.integration.clustercase import ClusterCase, needs_files
from tests.integration.helpers import node_env, run
from tests.integration.jobtools import (
    FINAL,
    delay,
    poll_until,
    wait_for_job,
    wait_for_jobs,
    wait_for_status,
)

ALL_FIELDS = ["id", "status", "priority", "ops", "opresult", "opstatus", "oplog", "opstart",
              "opexec", "opend", "oppriority", "summary", "received_ts", "start_ts", "end_ts",
              "archived"]
CRASH_WORDS = "master daemon stopped"
GNT_JOB = "/usr/share/ganeti/3.0/gnt-job"
GNT_DEBUG = "/usr/share/ganeti/3.0/gnt-debug"
GNT_CLUSTER = "/usr/share/ganeti/3.0/gnt-cluster"


def ts(value):
    """[sec, usec] -> float seconds."""
    return value[0] + value[1] / 1e6


class _ClusterCase(ClusterCase):
    """A virtual cluster for the class and a LUXI client per test."""

    PREFIX = "ganeti-jobs-"

    def setUp(self):
        self.c = self.cluster.client()
        self.addCleanup(self.c.close)

    def submit(self, *ops):
        jid = self.c.call("SubmitJob", list(ops))
        self.assertIsInstance(jid, int)
        self.assertNotIsInstance(jid, bool)
        return jid

    def row(self, jid, fields):
        (row,) = self.c.call("QueryJobs", [jid], list(fields))
        self.assertIsNotNone(row, f"job {jid} not found")
        return dict(zip(fields, row, strict=True))

    def long_running(self, duration=30, **params):
        """A job that is running (checked), killed again at the end of the test."""
        jid = self.submit(delay(duration, **params))
        self.addCleanup(self._kill, jid)
        wait_for_status(self.c, jid, {"running"})
        return jid

    def _kill(self, jid):
        with self.cluster.client() as c:
            if c.call("QueryJobs", [jid], ["status"])[0][0] not in FINAL:
                c.call("CancelJob", jid, True)
            wait_for_job(c, jid)

    def job_count(self):
        old = self.c.call("QueryJobs", None, ["id"])
        new = self.c.call("Query", "job", ["id"], None)["data"]
        self.assertEqual(len(old), len(new))
        return len(old)


class JobQueueTest(_ClusterCase):
    """Submission, waiting, dependencies, cancelling, priorities, drain, queries, events."""

    @classmethod
    def setUpCluster(cls):
        with cls.cluster.client() as c:  # job 1, for the queries by id
            cls.first = c.call("SubmitJob", [delay(0.01)])
            wait_for_job(c, cls.first)

    # Submission and the job's fields (reference 4.5)

    def check_timestamp(self, value):
        self.assertIsInstance(value, list)
        self.assertEqual(len(value), 2)
        self.assertTrue(all(isinstance(v, int) and not isinstance(v, bool) for v in value))
        self.assertTrue(0 <= value[1] < 1000000, value)

    def test_submit_delay_succeeds_with_all_fields(self):
        # (a duration of 0 fails the opcode, as in Ganeti 3.0: see test_gnt_debug)
        before = time.time()
        jid = self.submit(delay(0.01))
        self.assertEqual(wait_for_job(self.c, jid), "success")
        job = self.row(jid, ALL_FIELDS)
        self.assertEqual(job["id"], jid)
        self.assertEqual(job["status"], "success")
        self.assertEqual(job["priority"], 0)
        self.assertEqual(job["opresult"], [None])
        self.assertEqual(job["opstatus"], ["success"])
        self.assertEqual(job["oplog"], [[]])
        self.assertEqual(job["oppriority"], [0])
        self.assertEqual(job["summary"], ["TEST_DELAY(1.0e-2)"])
        (op,) = job["ops"]
        self.assertEqual(op["OP_ID"], "OP_TEST_DELAY")
        self.assertEqual(op["duration"], 0.01)
        source, reason, stamp = op["reason"][-1]
        self.assertEqual((source, reason), ("gnt:opcode:test_delay", f"job={jid};index=0"))
        self.assertIsInstance(stamp, int)
        for name in ("received_ts", "start_ts", "end_ts"):
            self.check_timestamp(job[name])
        for name in ("opstart", "opexec", "opend"):
            self.assertEqual(len(job[name]), 1)
            self.check_timestamp(job[name][0])
        order = [ts(job["received_ts"]), ts(job["opstart"][0]), ts(job["opexec"][0]),
                 ts(job["opend"][0]), ts(job["end_ts"])]
        self.assertEqual(order, sorted(order))
        self.assertLessEqual(ts(job["received_ts"]), ts(job["start_ts"]))
        self.assertLessEqual(ts(job["start_ts"]), ts(job["opstart"][0]))
        self.assertGreaterEqual(ts(job["received_ts"]), before - 1)
        self.assertLess(ts(job["end_ts"]) - ts(job["received_ts"]), 5)

    def test_submit_delay_sleeps(self):
        jid = self.submit(delay(0.2))
        self.assertEqual(wait_for_job(self.c, jid), "success")
        job = self.row(jid, ["opexec", "opend", "start_ts", "end_ts", "summary", "opresult"])
        self.assertGreaterEqual(ts(job["opend"][0]) - ts(job["opexec"][0]), 0.2)
        self.assertGreaterEqual(ts(job["end_ts"]) - ts(job["start_ts"]), 0.2)
        self.assertEqual(job["summary"], ["TEST_DELAY(0.2)"])
        self.assertEqual(job["opresult"], [None])

    def test_job_with_two_opcodes_and_log_messages(self):
        jid = self.submit(delay(0.01, repeat=3), delay(0.01))
        self.assertEqual(wait_for_job(self.c, jid), "success")
        job = self.row(jid, ["opstatus", "oplog", "summary", "opresult"])
        self.assertEqual(job["opstatus"], ["success", "success"])
        self.assertEqual(job["summary"], ["TEST_DELAY(1.0e-2)", "TEST_DELAY(1.0e-2)"])
        self.assertEqual(job["opresult"], [None, None])
        log, second = job["oplog"]
        self.assertEqual(second, [])
        self.assertEqual([entry[0] for entry in log], [1, 2, 3])
        for serial, stamp, kind, message in log:
            self.check_timestamp(stamp)
            self.assertEqual(kind, "message")
            self.assertIn(f"iteration {serial - 1}/2", message)  # (Ganeti's numbering)
        # WaitForJobChange hands out the log entries after prev_log_serial
        info, entries = self.c.call("WaitForJobChange", jid, ["status"], None, 1, 5)
        self.assertEqual(info, ["success"])
        self.assertEqual([e[0] for e in entries], [2, 3])

    # Dependencies

    def test_relative_dependency_runs_in_order(self):
        result = self.c.call("SubmitManyJobs", [
            [delay(0.2)], [delay(0.01, depends=[[-1, ["success"]]])]])
        self.assertEqual([ok for ok, _ in result], [True, True])
        first, second = (jid for _, jid in result)
        self.assertEqual(second, first + 1)
        self.assertEqual(wait_for_jobs(self.c, [first, second]),
                         {first: "success", second: "success"})
        a = self.row(first, ["start_ts", "end_ts"])
        b = self.row(second, ["start_ts", "end_ts", "ops"])
        self.assertGreaterEqual(ts(b["start_ts"]), ts(a["end_ts"]))
        self.assertEqual(b["ops"][0]["depends"], [[first, ["success"]]])

    def test_dependency_on_error_fails_after_success(self):
        result = self.c.call("SubmitManyJobs", [
            [delay(0.01)], [delay(0.01, depends=[[-1, ["error"]]])]])
        first, second = (jid for _, jid in result)
        self.assertEqual(wait_for_job(self.c, second), "error")
        self.assertEqual(wait_for_job(self.c, first), "success")
        b = self.row(second, ["opstatus", "opresult"])
        self.assertEqual(b["opstatus"], ["error"])
        self.assertEqual(b["opresult"][0][0], "OpExecError")
        self.assertIn(str(first), b["opresult"][0][1][0])

    # WaitForJobChange

    def test_wait_for_job_change_returns_when_the_status_changes(self):
        jid = self.submit(delay(0.5))
        (status,) = wait_for_status(self.c, jid, {"running"})
        start = time.monotonic()
        info, _ = self.c.call("WaitForJobChange", jid, ["status"], [status], None, 20)
        self.assertEqual(info, ["success"])
        self.assertLess(time.monotonic() - start, 10)

    def test_wait_for_job_change_times_out_with_the_unchanged_value(self):
        jid = self.long_running()
        start = time.monotonic()
        answer = self.c.call("WaitForJobChange", jid, ["status", "opstatus"],
                             ["running", ["running"]], None, 1)
        elapsed = time.monotonic() - start
        self.assertEqual(answer, [["running", ["running"]], []])
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 5)

    def test_wait_for_job_change_on_a_missing_job(self):
        with self.assertRaises(errors.JobLost):
            self.c.call("WaitForJobChange", 999999, ["status"], None, None, 1)

    # Cancelling

    def test_cancel_a_queued_job(self):
        running = self.long_running()
        jid = self.submit(delay(0.01, depends=[[running, []]]))
        (status,) = self.row(jid, ["status"]).values()
        self.assertIn(status, ("queued", "waiting"))
        ok, message = self.c.call("CancelJob", jid, False)
        self.assertTrue(ok, message)
        self.assertIsInstance(message, str)
        self.assertEqual(wait_for_job(self.c, jid), "canceled")
        job = self.row(jid, ["opstatus", "end_ts", "opend", "start_ts"])
        self.assertEqual(job["opstatus"], ["canceled"])
        self.check_timestamp(job["end_ts"])
        self.check_timestamp(job["opend"][0])
        self.assertEqual(self.row(running, ["status"])["status"], "running")

    def test_cancel_with_kill_stops_a_running_delay(self):
        jid = self.long_running(30)
        start = time.monotonic()
        ok, message = self.c.call("CancelJob", jid, True)
        self.assertTrue(ok, message)
        self.assertEqual(wait_for_job(self.c, jid, timeout=10), "canceled")
        self.assertLess(time.monotonic() - start, 5)
        job = self.row(jid, ["opstatus", "opresult", "start_ts", "end_ts"])
        self.assertEqual(job["opstatus"], ["canceled"])
        self.assertLess(ts(job["end_ts"]) - ts(job["start_ts"]), 10)

    def test_cancel_a_job_waiting_for_locks(self):
        holder = self.long_running(30, no_locks=False)  # holds the BGL (shared)
        jid = self.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS"})  # wants it exclusively
        wait_for_status(self.c, jid, {"waiting"})
        locks = self.c.call("Query", "lock", ["name", "mode", "owner", "pending"],
                            ["=", "name", "cluster/BGL"])["data"]
        self.assertEqual(locks, [[[0, "cluster/BGL"], [0, "shared"], [0, [str(holder)]],
                                  [0, [["exclusive", [str(jid)]]]]]])  # job ids, as Ganeti
        ok, _ = self.c.call("CancelJob", jid, False)
        self.assertTrue(ok)
        self.assertEqual(wait_for_job(self.c, jid), "canceled")
        self.assertEqual(self.row(holder, ["status"])["status"], "running")

    def test_cancel_finished_or_unknown_job_fails(self):
        ok, message = self.c.call("CancelJob", self.first, False)
        self.assertFalse(ok)
        self.assertIsInstance(message, str)
        self.assertEqual(message, f"Job {self.first} not found in queue")  # luxid's
        ok, message = self.c.call("CancelJob", 999999, False)
        self.assertFalse(ok)
        self.assertEqual(message, "Job 999999 not found in queue")
        self.assertEqual(self.row(self.first, ["status"])["status"], "success")

    # Priorities

    def test_change_job_priority(self):
        running = self.long_running()
        jid = self.submit(delay(0.01, depends=[[running, []]]))
        self.addCleanup(self._kill, jid)
        ok, message = self.c.call("ChangeJobPriority", jid, 10)
        self.assertTrue(ok, message)
        self.assertEqual(self.row(jid, ["priority", "oppriority"]),
                         {"priority": 10, "oppriority": [10]})
        with self.assertRaises(errors.OpPrereqError) as cm:
            self.c.call("ChangeJobPriority", jid, 5)
        self.assertEqual(cm.exception.args[1], "wrong_input")
        ok, _ = self.c.call("ChangeJobPriority", self.first, -10)
        self.assertFalse(ok)
        ok, _ = self.c.call("ChangeJobPriority", 999999, -10)
        self.assertFalse(ok)

    # Drain

    def test_drain_flag(self):
        drain_file = os.path.join(self.cluster.queue_dir, "drain")
        self.assertIs(self.c.call("SetDrainFlag", True), True)
        self.addCleanup(self.c.call, "SetDrainFlag", False)
        self.assertEqual(self.c.call("QueryConfigValues", ["drain_flag"]), [True])
        self.assertTrue(os.path.exists(drain_file))
        count = self.job_count()
        for method, args in (("SubmitJob", [delay(0.1)]), ("SubmitManyJobs", [[delay(0.1)]])):
            with self.assertRaises(errors.GenericError) as cm:  # luxid's class and text
                self.c.call(method, args)
            self.assertEqual(cm.exception.args, ("Queue drained",))
        self.assertEqual(self.job_count(), count)
        jid = self.c.call("SubmitJobToDrainedQueue", [delay(0.01)])
        self.assertIsInstance(jid, int)
        self.assertEqual(wait_for_job(self.c, jid), "success")
        self.assertIs(self.c.call("SetDrainFlag", False), True)
        self.assertEqual(self.c.call("QueryConfigValues", ["drain_flag"]), [False])
        self.assertFalse(os.path.exists(drain_file))
        self.assertEqual(wait_for_job(self.c, self.submit(delay(0.01))), "success")

    # Bad input

    def test_bad_input_creates_no_job(self):
        bad = {
            "unknown OP_ID": [{"OP_ID": "OP_NO_SUCH_THING"}],
            "missing duration": [{"OP_ID": "OP_TEST_DELAY"}],
            "duration not a number": [delay("x")],
            "priority 5": [delay(0, priority=5)],
            "bad dependency id": [delay(0, depends=[["abc", []]])],
            "bad dependency status": [delay(0, depends=[[1, ["finished"]]])],
            "unknown parameter": [delay(0, no_such_parameter=1)],
            "no opcodes": [],
            "opcode not an object": ["OP_TEST_DELAY"],
            "unresolvable relative dependency": [delay(0, depends=[[-1000000, []]])],
        }
        count = self.job_count()
        for what, ops in bad.items():
            # As luxid: refused while the request is parsed (a plain-text answer,
            # which clients raise as RequestError).
            with self.assertRaises(errors.RequestError, msg=what) as cm:
                self.c.call("SubmitJob", ops)
            self.assertTrue(cm.exception.args[0].startswith(
                "Failed to parse request: SubmitJob: "), what)
            self.assertEqual(self.job_count(), count, what)
        # in a batch, one bad job refuses the whole request, as luxid does
        with self.assertRaises(errors.RequestError) as cm:
            self.c.call("SubmitManyJobs", [[delay(0.1)], bad["unknown OP_ID"]])
        self.assertIn("OP_NO_SUCH_THING", cm.exception.args[0])
        self.assertEqual(self.job_count(), count)

    # Queries

    def test_query_job_by_id(self):
        answer = self.c.call("Query", "job", ["id", "status"], ["|", ["=", "id", self.first]])
        self.assertEqual(answer["data"], [[[0, self.first], [0, "success"]]])
        self.assertEqual([f["name"] for f in answer["fields"]], ["id", "status"])
        self.assertEqual(answer["fields"][0]["kind"], "number")
        self.assertEqual(answer["fields"][1]["kind"], "text")

    def test_query_fields_of_jobs(self):
        fields = self.c.call("QueryFields", "job", None)["fields"]
        # exactly Ganeti's (QA compares the list); ours, why a queued job waits, is
        # answered when named
        self.assertEqual(sorted(f["name"] for f in fields), sorted(ALL_FIELDS))
        self.assertEqual(self.c.call("QueryFields", "job", ["wait_reason"])["fields"][0]["kind"],
                         "text")
        for f in fields:
            self.assertEqual(set(f), {"name", "title", "kind", "doc"})
        self.assertEqual(self.c.call("QueryFields", "job", ["status", "nope"])["fields"][1],
                         {"name": "nope", "title": "nope", "kind": "unknown",
                          "doc": "Unknown field 'nope'"})

    def test_query_jobs_rows_and_missing_jobs(self):
        rows = self.c.call("QueryJobs", [self.first, str(self.first), 999999], ["id", "status"])
        self.assertEqual(rows[:2], [[self.first, "success"]] * 2)
        # Real luxid 3.0: a missing job has its id and null fields (not a null row)
        self.assertEqual(rows[2], [999999, None])
        with self.assertRaises(errors.OpPrereqError):
            self.c.call("QueryJobs", [self.first], ["id", "no_such_field"])

    def test_query_jobs_with_an_empty_list_lists_every_job(self):
        # Real luxid 3.0 (checked against the oracle): an empty id list means all jobs,
        # exactly like null.
        everything = self.c.call("QueryJobs", None, ["id"])
        self.assertTrue(everything)
        self.assertEqual(self.c.call("QueryJobs", [], ["id"]), everything)

    def test_query_job_filter_on_a_missing_id_gives_an_unavailable_row(self):
        # Real luxid 3.0: asking for a job by id that does not exist answers a row whose
        # fields other than the id have status RS_UNAVAIL (3).
        answer = self.c.call("Query", "job", ["id", "status"], ["=", "id", 999999])
        self.assertEqual(answer["data"], [[[0, 999999], [3, None]]])

    def test_query_locks_lists_no_idle_lock(self):
        # Ganeti lists only held or pending locks (held ones: test_debug_compat)
        answer = self.c.call("Query", "lock", ["name", "mode", "owner", "pending"], None)
        self.assertEqual([f["name"] for f in answer["fields"]],
                         ["name", "mode", "owner", "pending"])
        self.assertEqual(answer["data"], [])

    # The event stream (SubscribeEvents)

    def test_event_stream_follows_a_job(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(self.cluster.socket)
        self.addCleanup(sock.close)
        sock.sendall(wire.encode_request("SubscribeEvents", [None]))
        frames, buf = [], b""

        def read_frame():
            nonlocal buf
            while b"\x03" not in buf:
                chunk = sock.recv(65536)
                self.assertTrue(chunk, "the event stream ended")
                buf += chunk
            frame, buf = buf.split(b"\x03", 1)
            return json.loads(frame)

        reply = read_frame()
        self.assertTrue(reply["success"], reply)
        last = reply["result"]["last_serial"]
        jid = self.submit(delay(0.05))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            event = read_frame()
            frames.append(event)
            if event.get("kind") == "job" and event["id"] == jid and event["status"] in FINAL:
                break
        serials = [e["serial"] for e in frames]
        self.assertEqual(serials, list(range(last + 1, last + 1 + len(frames))))
        mine = [e for e in frames if e.get("kind") == "job" and e["id"] == jid]
        statuses = [e["status"] for e in mine]
        self.assertEqual(statuses[0], "queued")
        self.assertIn("running", statuses)
        self.assertEqual(statuses[-1], "success")
        self.assertEqual(statuses.index("running"), len(statuses) - 2)
        final = mine[-1]
        self.assertEqual(final["opstatus"], ["success"])
        for key in ("received_ts", "start_ts", "end_ts"):
            self.check_timestamp(final[key])
        self.assertIsInstance(final["time"], (int, float))


class SchedulerTest(_ClusterCase):
    """With max_running_jobs 1 (OP_CLUSTER_SET_PARAMS), jobs really queue up."""

    @classmethod
    def setUpCluster(cls):
        with cls.cluster.client() as c:
            jid = c.call("SubmitJob", [{"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                        "max_running_jobs": 1}])
            assert wait_for_job(c, jid) == "success"
            assert c.call("QueryClusterInfo")["max_running_jobs"] == 1

    def test_priority_decides_which_queued_job_runs_next(self):
        blocker = self.long_running(30)
        low = self.submit(delay(0.01))
        high = self.submit(delay(0.01))
        self.assertEqual([self.row(j, ["status"])["status"] for j in (low, high)],
                         ["queued", "queued"])
        ok, _ = self.c.call("ChangeJobPriority", high, -10)
        self.assertTrue(ok)
        self.assertEqual(self.row(high, ["priority"])["priority"], -10)
        self.c.call("CancelJob", blocker, True)
        self.assertEqual(wait_for_jobs(self.c, [blocker, low, high]),
                         {blocker: "canceled", low: "success", high: "success"})
        self.assertLessEqual(ts(self.row(high, ["end_ts"])["end_ts"]),
                             ts(self.row(low, ["start_ts"])["start_ts"]))

    def test_cancel_a_queued_job(self):
        blocker = self.long_running(30)
        jid = self.submit(delay(0.01))
        self.assertEqual(self.row(jid, ["status"])["status"], "queued")
        ok, _ = self.c.call("CancelJob", jid, False)
        self.assertTrue(ok)
        self.assertEqual(wait_for_job(self.c, jid), "canceled")
        job = self.row(jid, ["opstatus", "start_ts", "end_ts"])
        self.assertEqual(job["opstatus"], ["canceled"])
        self.assertIsNone(job["start_ts"])
        self.c.call("CancelJob", blocker, True)
        self.assertEqual(wait_for_job(self.c, blocker), "canceled")

    def test_one_job_at_a_time(self):
        result = self.c.call("SubmitManyJobs", [[delay(0.05)] for _ in range(4)])
        ids = [jid for _, jid in result]
        self.assertEqual(set(wait_for_jobs(self.c, ids).values()), {"success"})
        spans = sorted((ts(r[0]), ts(r[1]))
                       for r in self.c.call("QueryJobs", ids, ["start_ts", "end_ts"]))
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            self.assertLessEqual(end, start)


class ArchiveTest(_ClusterCase):
    """ArchiveJob and AutoArchiveJobs move job files into queue/archive/0."""

    def archived(self, jid):
        return (os.path.exists(os.path.join(self.cluster.queue_dir, "archive", "0",
                                            f"job-{jid}"))
                and not os.path.exists(os.path.join(self.cluster.queue_dir, f"job-{jid}")))

    def test_archive_job(self):
        jid = self.submit(delay(0.01))
        self.assertEqual(wait_for_job(self.c, jid), "success")
        running = self.long_running()
        self.assertIs(self.c.call("ArchiveJob", running), False)  # not finished
        self.assertIs(self.c.call("ArchiveJob", jid), True)
        self.assertTrue(poll_until(self.c, lambda: self.archived(jid)), "file not moved")
        self.assertNotIn([jid], self.c.call("QueryJobs", None, ["id"]))
        with open(os.path.join(self.cluster.queue_dir, "archive", "0", f"job-{jid}")) as f:
            self.assertEqual(json.load(f)["id"], jid)
        self.assertIs(self.c.call("ArchiveJob", jid), False)  # already archived
        self.assertIs(self.c.call("ArchiveJob", 999999), False)

    def test_auto_archive_all_finished_jobs(self):
        result = self.c.call("SubmitManyJobs", [[delay(0.01)] for _ in range(3)])
        done = [jid for _, jid in result]
        wait_for_jobs(self.c, done)
        running = self.long_running()
        finished = [r[0] for r in self.c.call("QueryJobs", None, ["id", "status"])
                    if r[1] in FINAL]
        archived, left = self.c.call("AutoArchiveJobs", -1, 10)
        self.assertEqual((archived, left), (len(finished), 0))
        self.assertEqual(self.c.call("QueryJobs", None, ["id"]), [[running]])
        for jid in done:
            self.assertTrue(poll_until(self.c, lambda j=jid: self.archived(j)), jid)
        self.assertEqual(self.c.call("AutoArchiveJobs", -1, 10), [0, 0])

    def test_archived_job_can_still_be_queried_by_id(self):
        # Real luxid 3.0 (checked against the oracle) loads archived jobs when asked by
        # id: QueryJobs([id]) and Query("job", ..., ["=", "id", id]) return them, so
        # `gnt-job info <archived id>` and RAPI /2/jobs/<id> keep working.
        jid = self.submit(delay(0.01))
        self.assertEqual(wait_for_job(self.c, jid), "success")
        self.assertIs(self.c.call("ArchiveJob", jid), True)
        self.assertEqual(self.c.call("QueryJobs", [jid], ["id", "status"]),
                         [[jid, "success"]])
        answer = self.c.call("Query", "job", ["id", "status"], ["=", "id", jid])
        self.assertEqual(answer["data"], [[[0, jid], [0, "success"]]])


class DebianToolsTest(ClusterCase):
    """Debian's real Ganeti 3.0 gnt-debug, gnt-job and gnt-cluster against our masterd."""

    PREFIX = "ganeti-jobs-compat-"
    REQUIRES = (needs_files(GNT_JOB),)

    def tool(self, path, *argv):
        env = node_env(self.cluster.dir)
        env["PYTHONHASHSEED"] = "0"
        return run([path, *argv], env=env, check=False, timeout=60)

    def submitted(self):
        r = self.tool(GNT_DEBUG, "delay", "--submit", "0.1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Ganeti's CLI reports the submitted job id on stderr
        self.assertRegex(r.stdout + r.stderr, r"^JobID: \d+\n$")
        jid = int((r.stdout + r.stderr).split()[1])
        with self.cluster.client() as c:
            self.assertEqual(wait_for_job(c, jid), "success")
        return jid

    def test_gnt_debug_delay(self):
        r = self.tool(GNT_DEBUG, "delay", "0.1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_submit_list_info_watch(self):
        jid = self.submitted()
        r = self.tool(GNT_JOB, "list", "--no-headers", "-o", "id,status,summary")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{jid} success TEST_DELAY(0.1)", [" ".join(line.split())
                                                         for line in r.stdout.splitlines()])
        r = self.tool(GNT_JOB, "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Status", r.stdout.splitlines()[0])
        r = self.tool(GNT_JOB, "info", str(jid))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"Job ID: {jid}", r.stdout)
        self.assertIn("Status: success", r.stdout)
        self.assertIn("OP_TEST_DELAY", r.stdout)
        r = self.tool(GNT_JOB, "watch", str(jid))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"Output from job {jid} follows", r.stdout)

    def test_cancel_a_finished_job_fails_cleanly(self):
        jid = self.submitted()
        r = self.tool(GNT_JOB, "cancel", str(jid))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertNotIn("Traceback", r.stdout + r.stderr)
        self.assertIn(str(jid), r.stdout + r.stderr)

    def test_archive(self):
        jid = self.submitted()
        r = self.tool(GNT_JOB, "archive", str(jid))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.tool(GNT_JOB, "list", "--no-headers", "-o", "id")
        self.assertNotIn(str(jid), r.stdout.split())

    def test_queue_drain_info_undrain(self):
        r = self.tool(GNT_CLUSTER, "queue", "drain")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        try:
            r = self.tool(GNT_CLUSTER, "queue", "info")
            self.assertEqual((r.returncode, r.stdout), (0, "The drain flag is set\n"), r.stderr)
            r = self.tool(GNT_DEBUG, "delay", "--submit", "0")
            self.assertNotEqual(r.returncode, 0)
            self.assertNotIn("Traceback", r.stdout + r.stderr)
        finally:
            r = self.tool(GNT_CLUSTER, "queue", "undrain")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.tool(GNT_CLUSTER, "queue", "info")
        self.assertEqual((r.returncode, r.stdout), (0, "The drain flag is unset\n"), r.stderr)

    def test_modify_and_tags(self):
        """gnt-cluster modify sends every OP_CLUSTER_SET_PARAMS parameter, most empty."""
        r = self.tool(GNT_CLUSTER, "modify", "--max-tracked-jobs", "30", "-C", "7")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("Changed", r.stdout + r.stderr)  # Ganeti prints no such line
        r = self.tool(GNT_CLUSTER, "info")
        self.assertIn("candidate pool size: 7", r.stdout)
        self.assertIn("maximal number of jobs simultaneously tracked by the scheduler: 30",
                      r.stdout)
        r = self.tool(GNT_CLUSTER, "add-tags", "compat:tag")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.tool(GNT_CLUSTER, "search-tags", "^compat")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("/cluster compat:tag", r.stdout)
        r = self.tool(GNT_CLUSTER, "remove-tags", "compat:tag")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.tool(GNT_CLUSTER, "list-tags")
        self.assertNotIn("compat:tag", r.stdout)
