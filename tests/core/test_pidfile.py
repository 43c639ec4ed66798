"""ganeti.core.pidfile with real processes: a pid file's number counts only while its
process names the file, so a number another process got since is not signalled."""

import os
import signal
import subprocess
import sys
import tempfile

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import pidfile

SLEEP = "import time; print('ready', flush=True); time.sleep(60)"


@pytest.mark.subprocess
class PidFileTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ganeti-pidfile-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)
        self.path = os.path.join(self.tmp, "run", "d.pid")
        os.makedirs(os.path.dirname(self.path))

    def spawn(self, *args):
        """A process whose command line has ``args`` (it has started: right after the
        fork /proc still shows the parent's command line)."""
        proc = subprocess.Popen([sys.executable, "-c", SLEEP, *args], stdout=subprocess.PIPE)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        return proc

    def write(self, pid):
        with open(self.path, "w", encoding="ascii") as f:
            f.write(f"{pid}\n")

    def test_read_pid(self):
        self.assertIsNone(pidfile.read_pid(self.path))
        for text in ("", "x\n", "0\n", "-3\n"):
            with open(self.path, "w", encoding="ascii") as f:
                f.write(text)
            self.assertIsNone(pidfile.read_pid(self.path), text)
        self.write(1234)
        self.assertEqual(pidfile.read_pid(self.path), 1234)

    def test_the_owner_names_the_file(self):
        for args in (("--pidfile", self.path), (f"--pidfile={self.path}",),
                     ("-d", "-p", self.path)):
            proc = self.spawn(*args)
            self.write(proc.pid)
            self.assertEqual(pidfile.running_pid(self.path), proc.pid, args)

    def test_the_same_file_through_a_link(self):
        link = os.path.join(self.tmp, "short")
        os.symlink(os.path.join(self.tmp, "run"), link)
        proc = self.spawn("--pidfile", os.path.join(link, "d.pid"))
        self.write(proc.pid)
        self.assertEqual(pidfile.running_pid(self.path), proc.pid)
        # another file of the same name elsewhere is not this one
        other = os.path.join(self.tmp, "d.pid")
        self.assertFalse(pidfile.names_file(proc.pid, other))

    def test_a_number_another_process_got_is_not_the_owner(self):
        stranger = self.spawn("--pidfile", os.path.join(self.tmp, "other.pid"))
        self.write(stranger.pid)
        self.assertTrue(pidfile.pid_alive(stranger.pid))
        self.assertIsNone(pidfile.running_pid(self.path))
        self.write(os.getpid())
        self.assertIsNone(pidfile.running_pid(self.path))

    def test_ended_and_zombie_processes_are_gone(self):
        proc = subprocess.Popen([sys.executable, "-c", "", "--pidfile", self.path])
        proc.wait()
        self.write(proc.pid)
        self.assertIsNone(pidfile.running_pid(self.path))
        zombie = self.spawn("--pidfile", self.path)
        os.kill(zombie.pid, signal.SIGKILL)
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # dead, not collected
        self.write(zombie.pid)
        self.assertFalse(pidfile.pid_alive(zombie.pid))
        self.assertIsNone(pidfile.running_pid(self.path))
