"""Debian Ganeti 3.0's ``gnt-debug``, ``gnt-job`` and ``gnt-filter`` against our master
daemon on a two-node virtual cluster: what they print and how they exit must be
what they print and how they exit against real Ganeti.

The expected texts were taken from a real Ganeti 3.0 cluster
(/work/shared/tools/real-ganeti) running the same commands:

- ``gnt-debug delay 0`` (and ``-1``): exit 1, on stderr
  ``Failure: prerequisites not met for this operation:`` and
  ``Duration must be greater than zero``; the job exists and failed.
- ``gnt-debug delay --repeat 2 D``: two iterations, logged as
  ``<ctime>  - INFO: Test delay iteration 0/1`` and ``... 1/1``.
- ``gnt-debug delay --no-master D`` (no ``-n``): the master sleeps anyway.
- ``gnt-debug locks`` on an idle cluster: the header only; with a delay
  running: ``cluster/BGL``, ``cluster/[lockset]``, ``node/<uuid>`` and
  ``node/[lockset]``, owners by job id.
- ``gnt-job list --archived``: a column ``Archived`` (Y/N) and the archived
  jobs too; an archived job asked for by id is listed without it.
- ``gnt-filter list``: ``=`` shown as ``==``, rules sorted by uuid.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import time

from tests.integration.clustercase import ClusterCase, needs_debian_tool
from tests.integration.helpers import node_env, run
from tests.integration.jobtools import delay, wait_for_job, wait_for_status

DEBIAN = "/usr/share/ganeti/3.0"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIME = r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}"  # time.ctime()


class DebugCompatTest(ClusterCase):
    PREFIX = "ganeti-debug-"
    NODES = 2
    REQUIRES = (needs_debian_tool("gnt-debug"),)

    def gnt(self, tool, *argv, timeout=60):
        assert self.cluster is not None
        env = node_env(self.cluster.dir)
        env["PYTHONHASHSEED"] = "0"
        return run([os.path.join(DEBIAN, tool), *argv], env=env, check=False,
                   timeout=timeout)

    def ours(self, tool, *argv, timeout=60):
        """Our own client (bin/), as the cluster's master node runs it."""
        assert self.cluster is not None
        env = node_env(self.cluster.dir)
        return run([sys.executable, os.path.join(ROOT, "bin", tool), *argv], env=env,
                   check=False, timeout=timeout)

    def luxi(self, method, *args):
        assert self.cluster is not None
        with self.cluster.client() as client:
            return client.call(method, *args)

    def last_job(self):
        return max(row[0] for row in self.luxi("QueryJobs", None, ["id"]))

    def node_uuid(self, name):
        rows = self.luxi("Query", "node", ["name", "uuid"], ["=", "name", name])["data"]
        return rows[0][1][1]

    # gnt-debug delay

    def test_delay_not_greater_than_zero_fails_the_job(self):
        for argv in (["0"], ["--", "-1"], ["0.0"]):
            r = self.gnt("gnt-debug", "delay", *argv)
            self.assertEqual((r.returncode, r.stdout), (1, ""), argv)
            self.assertEqual(r.stderr, "Failure: prerequisites not met for this operation:\n"
                                       "Duration must be greater than zero\n", argv)
            job_id = self.last_job()
            self.assertEqual(self.luxi("QueryJobs", [job_id], ["status", "opresult"])[0],
                             ["error", [["OpPrereqError",
                                         ["Duration must be greater than zero"]]]])

    def test_repeat_n_runs_n_iterations(self):
        r = self.gnt("gnt-debug", "delay", "--repeat", "2", "0.2")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        for line, text in zip(lines, ("0/1", "1/1"), strict=True):
            self.assertRegex(line, rf"^{TIME}  - INFO: Test delay iteration {text}$")
        r = self.gnt("gnt-debug", "delay", "-r", "1", "0.1")
        self.assertRegex(r.stdout, rf"^{TIME}  - INFO: Test delay iteration 0/0\n$")
        r = self.gnt("gnt-debug", "delay", "0.1")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    def test_no_master_still_sleeps_without_nodes(self):
        start = time.monotonic()
        r = self.gnt("gnt-debug", "delay", "--no-master", "1.5")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertGreaterEqual(time.monotonic() - start, 1.5)
        ((started,), (ended,)) = self.luxi("QueryJobs", [self.last_job()],
                                           ["opexec", "opend"])[0]
        self.assertGreaterEqual(ended[0] + ended[1] / 1e6 - started[0] - started[1] / 1e6,
                                1.5)

    def test_delay_on_another_node_only(self):
        assert self.cluster is not None
        start = time.monotonic()
        r = self.gnt("gnt-debug", "delay", "--no-master", "-n", self.cluster.nodes[1], "1")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        self.assertGreaterEqual(time.monotonic() - start, 1.0)

    def test_interruptible_delay_through_the_test_socket(self):
        assert self.cluster is not None
        job_id = self.luxi("SubmitJob", [delay(60, interruptible=True, repeat=3)])
        deadline = time.monotonic() + 30
        path = None
        while path is None and time.monotonic() < deadline:
            (log,) = self.luxi("QueryJobs", [job_id], ["oplog"])[0]
            path = next((entry[3][0] for entry in log[0] if entry[2] == "delay-test"), None)
            if path is None:
                time.sleep(0.05)
        self.assertIsNotNone(path)
        # in the master's temporary directory (TMPDIR: the test's own, inherited)
        self.assertRegex(path, rf"^{re.escape(tempfile.gettempdir())}/tmp[^/]+/sock$")
        start = time.monotonic()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(path)
            sock.send(b"x")
        with self.cluster.client() as client:
            self.assertEqual(wait_for_job(client, job_id), "success")
        self.assertLess(time.monotonic() - start, 30)
        (log,) = self.luxi("QueryJobs", [job_id], ["oplog"])[0]
        texts = [str(entry[3]) for entry in log[0]]
        self.assertEqual(texts[0], " - INFO: Test delay iteration 0/2")
        self.assertRegex(texts[2], r"^Received connection, time to go is \d+$")
        self.assertRegex(texts[3], r"^Interrupted, time spent waiting: \d+$")
        self.assertEqual(len(texts), 4)  # the other iterations were skipped
        self.assertFalse(os.path.exists(os.path.dirname(path)))  # the socket is gone

    def test_ganetis_test_jobqueue_passes(self):
        # Ganeti's own queue test: submission checks, dependencies, and OP_TEST_JQUEUE's
        # socket notifications, test messages and (partial) failures.
        r = self.gnt("gnt-debug", "test-jobqueue", timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        for expected in ("Job submission tests were successful",
                         "Job dependency tests were successful",
                         "Testing partial job failure", "Job queue test successful"):
            self.assertIn(expected, lines)
        self.assertEqual(lines[-1], "Job queue test successful")
        self.assertEqual(r.stdout.count("Ignoring error for 'job fail' test: Opcode failure "
                                        "was requested"), 2)

    def test_our_test_jobqueue_passes(self):
        r = self.ours("gnt-debug", "test-jobqueue", timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = [line for line in r.stdout.splitlines() if "INFO" not in line]
        self.assertEqual([line for line in lines if not line.startswith("Waiting for job")],
                         ["Testing job submission", "Job submission tests were successful",
                          "Testing job dependencies", lines[3],
                          "Job dependency tests were successful", "Testing job success",
                          "Testing multiple successful opcodes", "Testing job failure",
                          "Ignoring error for 'job fail' test: Opcode failure was requested",
                          "Testing partial job failure",
                          "Ignoring error for 'job fail' test: Opcode failure was requested",
                          "Job queue test successful"])
        self.assertRegex(lines[3], r"^Submitted jobs \d+, \d+, \d+, \d+, \d+$")

    # gnt-debug test-osparams (real Ganeti: the same line, exit 0; without: exit 1)

    def test_test_osparams(self):
        for tool in (self.gnt, self.ours):
            r = tool("gnt-debug", "test-osparams", "--os-parameters-secret",
                     "param1=secret1,param2=secret2")
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.assertRegex(r.stdout, rf"^{TIME} Secret OS parameters: "
                                       r"\{'param1': 'secret1', 'param2': 'secret2'\}\n$")
            (op,) = self.luxi("QueryJobs", [self.last_job()], ["ops"])[0][0]
            self.assertEqual(op["osparams_secret"], {"param1": None, "param2": None})
            r = tool("gnt-debug", "test-osparams")
            self.assertEqual(r.returncode, 1)
            self.assertIn("Opcode needs secret parameters", r.stderr)

    # gnt-debug wconfd: real Ganeti answers these on WConfD's socket, ours in masterd

    def test_wconfd(self):
        for argv, out in ((("echo", "hello"), "Answer: hello\n"),
                          (("listalllocks",), "Answer: []\n"),
                          (("listalllocksowners",), "Answer: []\n"),
                          (("cleanuplocks",), "Stale locks cleaned up.\n"),
                          (("flushconfig",), "Configuration flushed.\n")):
            for tool in (self.gnt, self.ours):
                r = tool("gnt-debug", "wconfd", *argv)
                self.assertEqual((r.returncode, r.stdout, r.stderr), (0, out, ""), argv)
        r = self.gnt("gnt-debug", "wconfd", "foo")
        self.assertEqual((r.returncode, r.stderr), (1, "Command 'foo' not supported\n"))
        holder = self.luxi("SubmitJob", [delay(30, no_locks=False)])
        with self.cluster.client() as client:  # type: ignore[union-attr]
            wait_for_status(client, holder, {"running"})
        try:
            master = self.node_uuid(self.cluster.master)  # type: ignore[union-attr]
            for tool in (self.gnt, self.ours):
                r = tool("gnt-debug", "wconfd", "listalllocks")
                self.assertEqual(r.stdout, "Answer: ['cluster/[lockset]', 'cluster/BGL', "
                                           f"'node/[lockset]', 'node/{master}']\n")
            r = self.ours("gnt-debug", "wconfd", "listlocks", str(holder))
            self.assertEqual(r.stdout, f"Answer: [['cluster/BGL', 'shared'], "
                                       f"['node/{master}', 'exclusive']]\n")
        finally:
            self.luxi("CancelJob", holder, True)
            with self.cluster.client() as client:  # type: ignore[union-attr]
                wait_for_job(client, holder)

    # gnt-debug locks

    def test_locks_lists_only_held_and_pending_locks(self):
        assert self.cluster is not None
        r = self.gnt("gnt-debug", "locks")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "Name Mode Owner Pending\n", ""))
        holder = self.luxi("SubmitJob", [delay(30, no_locks=False)])
        waiter = self.luxi("SubmitJob", [delay(30, no_locks=False)])
        with self.cluster.client() as client:
            wait_for_status(client, holder, {"running"})
            wait_for_status(client, waiter, {"waiting"})
        try:
            r = self.gnt("gnt-debug", "locks", "--no-headers", "--separator=|")
            self.assertEqual(r.returncode, 0, r.stderr)
            master = self.node_uuid(self.cluster.master)
            self.assertEqual(r.stdout.splitlines(), sorted([
                f"cluster/BGL|shared|{holder},{waiter}|-",
                "cluster/[lockset]|-|-|-",
                f"node/{master}|exclusive|{holder}|exclusive:{waiter}",
                "node/[lockset]|-|-|-"]))
            r = self.gnt("gnt-debug", "locks", "-o", "name,colour")
            self.assertEqual(r.returncode, 14)
            self.assertIn("Warning: Queried for unknown fields colour", r.stderr)
        finally:
            for job_id in (waiter, holder):
                self.luxi("CancelJob", job_id, True)
            with self.cluster.client() as client:
                for job_id in (waiter, holder):
                    wait_for_job(client, job_id)
        fields = self.luxi("QueryFields", "lock", None)["fields"]
        self.assertEqual([(f["name"], f["title"], f["kind"]) for f in fields],
                         [("mode", "Mode", "other"), ("name", "Name", "other"),
                          ("owner", "Owner", "other"), ("pending", "Pending", "other")])

    # gnt-job list --archived

    def test_job_list_archived(self):
        done = self.luxi("SubmitJob", [delay(0.1)])
        kept = self.luxi("SubmitJob", [delay(0.1)])
        with self.cluster.client() as client:  # type: ignore[union-attr]
            self.assertEqual(wait_for_job(client, done), "success")
            self.assertEqual(wait_for_job(client, kept), "success")
        r = self.gnt("gnt-job", "archive", str(done))
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        r = self.gnt("gnt-job", "list", "--no-headers", "-o", "id")
        self.assertNotIn(str(done), r.stdout.split())
        r = self.gnt("gnt-job", "list", "--archived")
        self.assertEqual(r.returncode, 0, r.stderr)
        header, *lines = r.stdout.splitlines()
        self.assertEqual(header.split(), ["ID", "Status", "Summary", "Archived"])
        rows = {line.split()[0]: line.split() for line in lines}
        self.assertEqual(rows[str(done)], [str(done), "success", "TEST_DELAY(0.1)", "Y"])
        self.assertEqual(rows[str(kept)], [str(kept), "success", "TEST_DELAY(0.1)", "N"])
        r = self.gnt("gnt-job", "list", "--no-headers", "-o", "id,archived", str(done),
                     str(kept))
        self.assertEqual(r.stdout.split(), [str(done), "Y", str(kept), "N"])
        r = self.gnt("gnt-job", "list-fields", "archived")
        self.assertEqual(r.stdout.splitlines()[1].split(),
                         ["archived", "Boolean", "Archived", "Whether", "job", "is",
                          "archived"])

    # gnt-filter

    def test_filter_predicates_as_ganeti_stores_them(self):
        r = self.gnt("gnt-filter", "add", "--predicates",
                     '[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]], '
                     '["jobid", ["|", ["=", "id", 3.0], [">", "id", "watermark"]]]]',
                     "--action", "CONTINUE")
        self.assertEqual(r.returncode, 0, r.stderr)
        uid = r.stdout.strip()
        other = self.gnt("gnt-filter", "add").stdout.strip()
        try:
            r = self.gnt("gnt-filter", "list", "--no-headers", "-o", "uuid,predicates",
                         "--separator=|")
            self.assertEqual(r.stdout.splitlines(), sorted([
                f"{uid}|[['opcode', ['==', 'OP_ID', 'OP_TEST_DELAY']], "
                "['jobid', ['|', ['==', 'id', 3], ['>', 'id', 'watermark']]]]",
                f"{other}|[]"]))
            r = self.gnt("gnt-filter", "add", "--predicates", '[["jobid", ["<", "id", 7.5]]]')
            self.assertEqual((r.returncode, r.stdout), (1, ""))
            self.assertRegex(r.stderr, re.compile("must be a string or an integer"))
        finally:
            for u in (uid, other):
                self.gnt("gnt-filter", "delete", u)
