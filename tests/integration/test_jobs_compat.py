"""The job queue with Ganeti 3.0's own clients: Debian's ``gnt-job``, ``gnt-debug``,
``gnt-filter``, its LUXI client library and its RAPI client against our daemons on
a one-node virtual cluster (issue 14).

The expected outputs, exit codes, error classes and messages are those of a real
Ganeti 3.0 cluster (Debian's luxid, job processes and RAPI daemon) for the same
commands; each test says what it compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from tests.integration.clustercase import needs_files
from tests.integration.helpers import node_env, run
from tests.integration.jobtools import delay, wait_for_job, wait_for_status
from tests.integration.test_rapi_compat import (
    RAPI_CLIENT,
    SYSTEM_PYTHON,
    RapiClientCase,
    call,
)

DEBIAN = "/usr/share/ganeti/3.0"

#: Debian's LUXI client library: the error class and message of each call.
LUXI_DRIVER = textwrap.dedent('''
    import json
    import sys
    sys.path.insert(0, "/usr/share/ganeti/3.0")
    from ganeti import luxi

    request = json.load(sys.stdin)
    out = []
    for method, args in request["calls"]:
        client = luxi.Client(address=request["socket"])
        try:
            out.append({"ok": client.CallMethod(method, args)})
        except Exception as err:
            out.append({"class": type(err).__name__, "args": [str(a) for a in err.args]})
    json.dump(out, sys.stdout)
''')


class JobsCompatTest(RapiClientCase):
    """Debian Ganeti 3.0's clients against a one-node virtual cluster."""

    PREFIX = "ganeti-jobscompat-"
    REQUIRES = (needs_files(f"{DEBIAN}/gnt-job", SYSTEM_PYTHON),)

    @classmethod
    def setUpCluster(cls):
        super().setUpCluster()
        cls.luxi_driver = os.path.join(cls.tmp, "luxi_driver.py")
        with open(cls.luxi_driver, "w", encoding="utf-8") as f:
            f.write(LUXI_DRIVER)

    # helpers

    def gnt(self, tool, *argv):
        """Run Debian's gnt-TOOL on the master; (exit code, stdout, stderr)."""
        assert self.cluster is not None
        proc = run([f"{DEBIAN}/gnt-{tool}", *argv], env=node_env(self.cluster.dir),
                   timeout=120, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def luxi(self, method, *args):
        assert self.cluster is not None
        with self.cluster.client() as client:
            return client.call(method, *args)

    def debian_luxi(self, *calls):
        """Each call through Debian's LUXI client: {"ok": result} or its error."""
        assert self.cluster is not None
        request = json.dumps({"socket": self.cluster.socket,
                              "calls": [[m, list(a)] for m, *a in calls]})
        proc = subprocess.run([SYSTEM_PYTHON, "-I", self.luxi_driver], input=request,
                              capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def last_job(self):
        return max(row[0] for row in self.luxi("QueryJobs", None, ["id"]))

    # tests

    def test_reject_filter_queues_the_job_and_cancels_it(self):
        # Ganeti: gnt-debug delay exits 1 with "Unhandled Ganeti error: Job was
        # canceled"; the job is canceled with no result, no log and no start time.
        code, out, _ = self.gnt("filter", "add", "--action=REJECT",
                                '--predicate=[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]]')
        self.assertEqual(code, 0)
        uuid = out.strip().splitlines()[-1]
        try:
            before = self.last_job()
            code, out, err = self.gnt("debug", "delay", "1")
            self.assertEqual((code, out, err),
                             (1, "", "Unhandled Ganeti error: Job was canceled\n"))
        finally:
            self.luxi("DeleteFilter", uuid)
        job_id = self.last_job()
        self.assertEqual(job_id, before + 1)
        code, out, _ = self.gnt("job", "list", "--no-headers", "-o",
                                "status,opstatus,opresult,oplog,start_ts,summary",
                                str(job_id))
        self.assertEqual(out.split(), ["canceled", "['canceled']", "[None]", "[[]]", "-",
                                       "TEST_DELAY(1.0)"])

    def test_cancel_answers(self):
        # Ganeti: a running job "Job no longer waiting, can't cancel (informed it
        # anyway)" exit 1; a queued one "Dequeued job N" exit 0; then "Job N not
        # found in queue" exit 1, as for any finished or unknown job.
        with self.cluster.client() as client:
            running = client.call("SubmitJob", [delay(30)])
            queued = client.call("SubmitJob", [delay(1, depends=[[running, []]])])
            wait_for_status(client, running, ("running",))
        self.assertEqual(self.gnt("job", "cancel", str(queued)),
                         (0, f"Dequeued job {queued}\n", ""))
        self.assertEqual(self.gnt("job", "cancel", str(running)),
                         (1, "Job no longer waiting, can't cancel (informed it anyway)\n", ""))
        for job_id in (queued, 99999):
            self.assertEqual(self.gnt("job", "cancel", str(job_id)),
                             (1, f"Job {job_id} not found in queue\n", ""))
        self.assertEqual(self.luxi("CancelJob", running, True),
                         [True, "SIGKILL send to the process"])
        with self.cluster.client() as client:
            self.assertEqual(wait_for_job(client, running), "canceled")

    def test_luxi_errors_as_debian_client_sees_them(self):
        good = delay(0.1, reason=[])
        bad = delay("x", reason=[])
        results = self.debian_luxi(
            ("SubmitJob", [bad]),
            ("SubmitJob", [{"OP_ID": "OP_FOO", "reason": []}]),
            ("SubmitManyJobs", [[good], [bad]]),
            ("CancelJob", -1, False),
            ("QueryJobs", [99999], ["id", "status"]),
            ("WaitForJobChange", 99999, ["status"], None, None, 1))
        for outcome, method in zip(results[:4], ["SubmitJob", "SubmitJob", "SubmitManyJobs",
                                                 None], strict=True):
            # Ganeti: RequestError("Failed to parse request: METHOD: ...")
            self.assertEqual(outcome["class"], "RequestError", outcome)
            prefix = "Failed to parse request: " + (f"{method}: " if method else "")
            self.assertTrue(outcome["args"][0].startswith(prefix), outcome)
        self.assertEqual(results[4], {"ok": [[99999, None]]})
        self.assertEqual(results[5], {"class": "JobLost", "args": ["Can't load job file"]})

    def test_drained_queue(self):
        # Ganeti: luxid answers GenericError("Queue drained"); the CLI prints
        # "Unhandled Ganeti error: Queue drained"; RAPI answers 500 "Queue drained".
        self.luxi("SetDrainFlag", True)
        try:
            results = self.debian_luxi(("SubmitJob", [delay(1, reason=[])]),
                                       ("SubmitManyJobs", []))
            self.assertEqual(results, [{"class": "GenericError", "args": ["Queue drained"]}] * 2)
            self.assertEqual(self.gnt("debug", "delay", "1"),
                             (1, "", "Unhandled Ganeti error: Queue drained\n"))
            if os.path.exists(RAPI_CLIENT):
                (outcome,) = self.rapi(call("RedistributeConfig"))
                self.assertEqual((outcome["error"]["code"], outcome["error"]["message"]),
                                 (500, "500 Queue drained: Server got itself in trouble"))
        finally:
            self.luxi("SetDrainFlag", False)

    def test_opcode_echo_and_summaries(self):
        # Ganeti: luxid reads a job's opcodes into their declarations and writes them
        # out again, before and after the job started: unset optional parameters are
        # left out except depends and comment (null), defaults are filled in
        # (debug_level 0). gnt-job list shows luxid's summaries.
        with self.cluster.client() as client:
            blocker = client.call("SubmitJob", [delay(30)])
            queued = client.call("SubmitJob", [delay(0.01, dry_run=None, debug_level=None,
                                                     depends=[[blocker, ["canceled"]]])])
            (op,) = client.call("QueryJobs", [queued], ["ops"])[0][0]
            self.assertEqual({k for k, v in op.items() if v is None}, {"comment"})
            self.assertNotIn("dry_run", op)
            client.call("CancelJob", blocker, True)
            self.assertEqual(wait_for_job(client, queued), "success")
            (op,) = client.call("QueryJobs", [queued], ["ops"])[0][0]
            self.assertNotIn("dry_run", op)
            self.assertEqual((op["debug_level"], op["comment"]), (0, None))
        job_ids = [self.luxi("SubmitJob", [op]) for op in (
            delay(0.01),
            {"OP_ID": "OP_TAGS_GET", "kind": "cluster"},
            {"OP_ID": "OP_GROUP_RENAME", "group_name": "default", "new_name": "default"})]
        with self.cluster.client() as client:
            for job_id in job_ids:
                wait_for_job(client, job_id)
        code, out, _ = self.gnt("job", "list", "--no-headers", "-o", "summary",
                                *map(str, job_ids))
        self.assertEqual(out.split(), ["TEST_DELAY(1.0e-2)", "TAGS_GET(TagKindCluster)",
                                       "GROUP_RENAME"])

    def test_rapi_unknown_job(self):
        # Ganeti's RAPI: GET /2/jobs/N of an unknown job is 200 with the id and
        # nulls; waiting on it is 500 "Can't load job file"; cancelling it is
        # [false, "Job N not found in queue"].
        if not os.path.exists(RAPI_CLIENT):
            self.skipTest("Debian's python3-ganeti-rapi is not installed")
        status, wait, cancel = self.rapi(call("GetJobStatus", 99999),
                                         call("WaitForJobChange", 99999, ["status"], None,
                                              None),
                                         call("CancelJob", 99999))
        self.assertEqual(status["id"], 99999)
        self.assertEqual({k: v for k, v in status.items() if k != "id"},
                         dict.fromkeys(set(status) - {"id"}))
        self.assertEqual((wait["error"]["code"], wait["error"]["message"]),
                         (500, "500 Can&#x27;t load job file: Server got itself in trouble"))
        self.assertEqual(cancel, [False, "Job 99999 not found in queue"])

    def test_debian_test_jobqueue_passes(self):
        # Ganeti's own job queue test: submission (an invalid job refuses the whole
        # SubmitManyJobs), dependencies, and OP_TEST_JQUEUE's statuses, log
        # messages and partial failure. It stopped at the first part before.
        code, out, err = self.gnt("debug", "test-jobqueue")
        self.assertEqual(code, 0, out + err)
        self.assertIn("Job submission tests were successful", out)
        self.assertTrue(out.rstrip().endswith("Job queue test successful"), out)

