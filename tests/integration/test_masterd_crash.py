"""Acceptance crash test: kill -9 a real ganeti-masterd at random moments while a client
submits jobs, restart it, and check what the job queue promises.

- every job id returned to the client exists after the restart and finishes;
- jobs that were running at the kill end in ``error`` with a message saying the master
  daemon stopped; queued ones run after the restart; finished ones stay as they were;
- no job file is corrupt (``queue/corrupt`` stays empty, the log has no recovery
  problems);
- job ids given out after a restart are larger than every earlier one.
"""

import json
import os
import random
import signal
import subprocess
import threading
import time

from ganeti.core import errors, jobs
from ganeti.luxi.client import LuxiClient
from tests.integration import realganeti
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, VCLUSTER
from tests.integration.jobtools import FINAL, delay, wait_for_jobs, wait_for_status

ROUNDS = 6
SEED = 20240611
CRASH_WORDS = "master daemon stopped"


def durable_jobs(queue_dir):
    """The jobs as a restart will find them: job files with the journals replayed over them.

    Read-only and independent of the daemon's code (the journal format is in
    docs/design/jobqueue.md); a torn last journal line is a batch that never committed.
    """
    found = {}
    for name in os.listdir(queue_dir):
        if name.startswith("job-") and name[4:].isdigit():
            with open(os.path.join(queue_dir, name), encoding="utf-8") as f:
                found[int(name[4:])] = json.load(f)
    generations = sorted(int(n[8:]) for n in os.listdir(queue_dir)
                         if n.startswith("journal.") and n[8:].isdigit())
    for gen in generations:
        with open(os.path.join(queue_dir, f"journal.{gen}"), "rb") as f:
            lines = f.read().split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines):
                    continue  # torn last line
                raise
            if record["t"] == "job":
                found[record["id"]] = record["data"]
            elif record["t"] == "archive":
                found.pop(record["id"], None)
    return found


def status_of(job_data):
    return jobs.job_status(op["status"] for op in job_data["ops"])


def wait_until_reaped(pid, timeout=30.0):
    """Wait until a killed daemon's pid is gone for good (pid 1 reaps it when it likes).

    A bounded poll: no signal tells another process that a zombie was reaped.  See
    MasterdZombieTest for why a restart has to wait for this.
    """
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{pid}"):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} still exists {timeout}s after SIGKILL")
        time.sleep(0.01)


class Submitter(threading.Thread):
    """Submits OP_TEST_DELAY jobs (single and in batches) until the daemon goes away."""

    def __init__(self, socket_path, rng):
        super().__init__(daemon=True)
        self.socket_path = socket_path
        self.rng = rng
        self.acked = []
        self.cond = threading.Condition()
        self.rejected = []
        self.error = None

    def _job(self, index):
        op = delay(self.rng.choice([0.001, 0.01]))
        if index and self.rng.random() < 0.3:
            op["depends"] = [[-1, []]]  # the previous job of the batch, any final status
        return [op]

    def run(self):
        client = LuxiClient(self.socket_path, timeout=30, connect_timeout=5)
        try:
            while True:
                if self.rng.random() < 0.3:
                    batch = [self._job(i) for i in range(self.rng.randint(2, 25))]
                    result = client.call("SubmitManyJobs", batch)
                    ids = [value for ok, value in result if ok]
                    self.rejected.extend(value for ok, value in result if not ok)
                else:
                    ids = [client.call("SubmitJob", self._job(0))]
                with self.cond:
                    self.acked.extend(ids)
                    self.cond.notify_all()
        except (errors.ProtocolError, OSError) as err:  # the daemon was killed
            self.error = err
        finally:
            client.close()
            with self.cond:
                self.cond.notify_all()

    def wait_for_acks(self, count, timeout=30.0):
        with self.cond:
            return self.cond.wait_for(lambda: len(self.acked) >= count or not self.is_alive(),
                                      timeout)


class MasterdCrashTest(ClusterCase):
    CLUSTER = False  # a fresh one per test

    def setUp(self):
        self.cluster = self.new_cluster(prefix="ganeti-crash-")

    def kill_daemon(self):
        pid = self.cluster.pid()
        os.kill(pid, signal.SIGKILL)
        return pid

    def check_round(self, round_, acked, long_job, before):
        """After the restart: compare with the durable state found at the kill."""
        where = f"round {round_}"
        with self.cluster.client() as c:
            everything = sorted(set(acked) | set(before))
            rows = c.call("QueryJobs", everything, ["id"])
            lost = [jid for jid, row in zip(everything, rows, strict=True) if row is None]
            self.assertEqual(lost, [], f"{where}: acknowledged or stored jobs lost")
            final = wait_for_jobs(c, everything, timeout=40)
            results = dict(zip(everything, c.call("QueryJobs", everything, ["opresult"]),
                               strict=True))
        self.assertEqual(final[long_job], "error", where)
        for jid in everything:
            old = status_of(before[jid])
            new = final[jid]
            if old in FINAL:
                self.assertEqual(new, old, f"{where}: job {jid} changed after the restart")
            elif old in ("running", "waiting", "canceling"):
                self.assertEqual(new, "error", f"{where}: job {jid} was {old} at the kill")
                kind, args = results[jid][0][0]
                self.assertEqual(kind, "OpExecError")
                self.assertIn(CRASH_WORDS, args[0], f"{where}: job {jid}")
            else:
                self.assertEqual(new, "success", f"{where}: job {jid} was {old} at the kill")
        return final

    def test_kill_masterd_at_random_moments(self):
        rng = random.Random(SEED)
        corrupt = os.path.join(self.cluster.queue_dir, "corrupt")
        highest = 0
        total = 0
        running_at_kills = 0
        for round_ in range(ROUNDS):
            where = f"round {round_}"
            with self.cluster.client() as c:
                # a long job that is certainly running when the kill comes
                long_job = c.call("SubmitJob", [delay(30)])
                self.assertGreater(long_job, highest, f"{where}: job id reused")
                wait_for_status(c, long_job, {"running"})
            submitter = Submitter(self.cluster.socket, random.Random(rng.random()))
            submitter.start()
            target = rng.randint(20, 150)
            self.assertTrue(submitter.wait_for_acks(target), f"{where}: submissions stalled")
            self.assertIsNone(submitter.error, f"{where}: submitting failed early")
            pid = self.kill_daemon()
            submitter.join(60)
            self.assertFalse(submitter.is_alive(), f"{where}: the client hangs")
            self.assertEqual(submitter.rejected, [], where)
            acked = [long_job, *submitter.acked]
            self.assertEqual(len(acked), len(set(acked)), f"{where}: an id was given twice")
            self.assertGreater(min(acked), highest, f"{where}: ids did not grow")
            wait_until_reaped(pid)
            before = durable_jobs(self.cluster.queue_dir)
            missing = sorted(set(acked) - set(before))
            self.assertEqual(missing, [], f"{where}: acknowledged jobs not on disk")
            running_at_kills += sum(1 for data in before.values()
                                    if status_of(data) == "running")
            self.cluster.start()
            final = self.check_round(round_, acked, long_job, before)
            highest = max(highest, *acked, *final)
            total += len(acked)
            self.assertFalse(os.listdir(corrupt) if os.path.isdir(corrupt) else [],
                             f"{where}: corrupt job files")
            with self.cluster.client() as c:  # finished jobs go, as a busy cluster's would
                c.call("AutoArchiveJobs", -1, 30)
        self.assertGreaterEqual(total, 300)
        self.assertGreaterEqual(running_at_kills, ROUNDS)
        with self.cluster.client() as c:
            self.assertGreater(c.call("SubmitJob", [delay(0.01)]), highest)
        with open(self.cluster.log_file, encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertNotIn("Job queue recovery", log)
        self.assertNotIn("crashed", log)


class MasterdZombieTest(ClusterCase):
    """A restart right after a crash, while the dead daemon is still a zombie.

    After kill -9 the old masterd stays a zombie until its parent reaps it (pid 1 for
    a daemon started by ganeti-vcluster; on this kind of machine that takes a second
    or more).  `ganeti-vcluster start` counts a zombie as gone, so it starts a new
    masterd; the new one must come up.  Here the test process is the zombie's parent
    and does not reap it until the end, which makes the situation deterministic.
    """

    CLUSTER = False  # a fresh one per test

    def setUp(self):
        self.cluster = self.new_cluster(start=False, prefix="ganeti-zombie-")

    def test_restart_while_the_killed_daemon_is_a_zombie(self):
        cl = self.cluster
        env = dict(os.environ, **cl.env)
        proc = subprocess.Popen(
            [os.path.join(BIN, "twistd"), "-n", "--pidfile", cl.pid_file, "--logfile",
             cl.log_file, "--umask", "0027", "ganeti-masterd"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.addCleanup(proc.wait)  # reaps the zombie at the very end
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        realganeti.wait_until_answers(cl.socket, proc, cl.log_file)
        with cl.client() as c:
            jid = c.call("SubmitJob", [delay(30)])
            wait_for_status(c, jid, {"running"})
        self.assertEqual(cl.pid(), proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10  # until the kill has landed (state Z)
        while True:
            with open(f"/proc/{proc.pid}/stat", encoding="ascii") as f:
                if f.read().rsplit(") ", 1)[1].startswith("Z"):
                    break
            self.assertLess(time.monotonic(), deadline, "the killed daemon did not die")
            time.sleep(0.01)
        try:
            started = subprocess.run([VCLUSTER, "start", cl.dir], env=env, capture_output=True,
                                     text=True, timeout=10, check=False)
            outcome = f"exit {started.returncode}: {started.stdout}{started.stderr}"
        except subprocess.TimeoutExpired:
            outcome = "no answer within 10 s"
        with LuxiClient(cl.socket, timeout=10, connect_timeout=5) as c:
            try:
                (status,) = c.call("QueryJobs", [jid], ["status"])[0]
            except errors.ProtocolError as err:
                self.fail(f"masterd did not come back ({outcome}; {err}):\n{cl.log_tail(12)}")
        self.assertEqual(status, "error")


class MasterdStopTest(ClusterCase):
    """SIGTERM (ganeti-vcluster stop) while the job store still has files to write."""

    CLUSTER = False  # a fresh one per test

    def setUp(self):
        self.cluster = self.new_cluster(prefix="ganeti-stop-")

    def test_sigterm_while_the_file_loop_is_busy_exits_cleanly(self):
        cl = self.cluster
        with cl.client() as c:
            result = c.call("SubmitManyJobs", [[delay(0.01)] for _ in range(400)])
            wait_for_jobs(c, [jid for _, jid in result])
            archived, _ = c.call("AutoArchiveJobs", -1, 30)  # 400 renames for the file loop
        self.assertEqual(archived, 400)
        pid = cl.pid()
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and not _is_zombie(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                self.fail(f"masterd did not exit within 10 s of SIGTERM:\n{cl.log_tail(6)}")
            time.sleep(0.01)
        with open(cl.log_file, encoding="utf-8", errors="replace") as f:
            self.assertIn("Server Shut Down.", f.read().rsplit("Received SIGTERM", 1)[1])
        wait_until_reaped(pid)
        cl.start()  # the archive is complete after the restart
        with cl.client() as c:
            self.assertEqual(c.call("QueryJobs", None, ["id"]), [])
        archive = os.path.join(cl.queue_dir, "archive", "0")
        self.assertEqual(len(os.listdir(archive)), 400)


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True
