"""kill -9 a process using the job store at random moments: nothing acknowledged is lost,
no job file is corrupt, and job ids keep growing."""

import os
import random
import signal
import subprocess
import sys
import threading

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.master.jobs.jobstore import JobStore
from tests.fakes.configs import node_paths

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILLS = 15


@pytest.mark.subprocess
class JobStoreCrashTest(SynchronousTestCase):
    def recover(self, paths):
        store = JobStore(paths, lambda fn, *a: defer.maybeDeferred(fn, *a), Clock())
        rec = store.recover()
        store.close()
        return rec

    def test_kill_at_random_moments(self):
        paths = node_paths(self.mktemp())
        rng = random.Random(7)
        env = dict(os.environ, PYTHONPATH=ROOT)
        highest_acked = 0
        for round_ in range(KILLS):
            # a small checkpoint size makes kills land inside checkpoints too
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.master.crash_jobstore", paths.root,
                 paths.hostname, str(rng.choice([2000, 20000, 10**7]))],
                stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
            watchdog = threading.Timer(60, proc.kill)
            watchdog.start()
            acked, done = set(), set()
            wanted = rng.randint(1, 120)
            for line in proc.stdout:
                kind, jid = line.split()
                (acked if kind == "ack" else done).add(int(jid))
                if len(acked) >= wanted:
                    break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            watchdog.cancel()
            proc.stdout.close()
            rec = self.recover(paths)
            self.assertEqual(rec.problems, [], f"round {round_}")
            self.assertTrue(acked, "the child acknowledged nothing")
            self.assertGreater(min(acked), highest_acked, "a job id was reused")
            for jid in acked:
                self.assertIn(jid, rec.jobs, f"acknowledged job {jid} lost")
            for jid in done:
                self.assertEqual(rec.jobs[jid]["ops"][0]["status"], "success")
            self.assertGreaterEqual(rec.serial, max(acked))
            highest_acked = max(acked)
