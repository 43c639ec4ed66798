"""A writer killed at any moment leaves the old or the new config, never a mix,
and never loses an acknowledged change."""

import os
import random
import signal
import subprocess
import sys
import threading

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from tests.fakes.configs import small_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILLS = 25


@pytest.mark.subprocess
class CrashTest(SynchronousTestCase):
    def test_kill_writer_at_random_moments(self):
        path = os.path.join(os.path.abspath(self.mktemp()), "config.data")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write(configmod.dump(small_config()))
        rng = random.Random(2026)
        env = dict(os.environ, PYTHONPATH=ROOT)
        for _ in range(KILLS):
            proc = subprocess.Popen([sys.executable, "-m", "tests.master.crash_writer", path],
                                    stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
            watchdog = threading.Timer(60, proc.kill)  # a hung child fails the test
            watchdog.start()
            wanted = rng.randint(1, 30)
            acked = 0
            last = 0
            for line in proc.stdout:
                last = int(line.split()[1])
                acked += 1
                if acked >= wanted:
                    break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            watchdog.cancel()
            proc.stdout.close()
            self.assertGreaterEqual(acked, 1, "the writer acknowledged nothing")
            cfg = configmod.load_file(path)  # parses and verifies, or raises
            self.assertGreaterEqual(cfg.serial_no, last, "an acknowledged change was lost")
            # the content is exactly what the writer produced for that serial
            self.assertEqual(len(cfg.cluster.tags), cfg.cluster.serial_no - 1)
