"""ganeti.cli.daemons on pid files whose number another process got since: such a
process is neither reported running nor signalled."""

import os
import signal
import subprocess
import sys
import tempfile

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import daemons
from ganeti.core.paths import Paths

SLEEP = "import time; time.sleep(60)"


@pytest.mark.subprocess
class DaemonStopTest(SynchronousTestCase):
    """``ganeti-vcluster stop`` and friends (ganeti.cli.daemons) on a stale pid file."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ganeti-pidfile-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)
        self.paths = Paths.for_node(os.path.join(self.tmp, "n1.test"), "n1.test")
        os.makedirs(self.paths.run_dir)
        self.pid_file = self.paths.pid_file("ganeti-confd")

    def spawn(self, *args):
        proc = subprocess.Popen([sys.executable, "-c", SLEEP, *args])
        self.addCleanup(proc.wait)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        with open(self.pid_file, "w", encoding="ascii") as f:
            f.write(f"{proc.pid}\n")
        return proc

    def test_stop_leaves_a_process_that_got_a_dead_daemons_number_alone(self):
        stranger = self.spawn()  # a live process that is not the daemon
        self.assertEqual(daemons.state(self.paths, "ganeti-confd").state, daemons.STALE)
        self.assertFalse(daemons.stop(self.paths, "ganeti-confd", timeout=5))
        self.assertIsNone(stranger.poll())  # not signalled
        self.assertFalse(os.path.exists(self.pid_file))  # the stale file is gone

    def test_stop_ends_the_daemon_that_owns_the_file(self):
        daemon = self.spawn("--pidfile", self.pid_file)
        self.assertEqual(daemons.state(self.paths, "ganeti-confd").state, daemons.RUNNING)
        self.assertTrue(daemons.stop(self.paths, "ganeti-confd", timeout=10))
        self.assertEqual(daemon.wait(timeout=10), -signal.SIGTERM)
        self.assertFalse(os.path.exists(self.pid_file))
