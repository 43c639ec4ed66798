"""ganeti.cli.subreaper with real processes: the command's status and output come
back as if it ran alone, and what it leaves behind is adopted and collected at once."""

import os
import subprocess
import sys

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import daemons, subreaper

#: Bound on waiting for a process to end (it takes milliseconds; this bounds a hang).
DEADLINE = 10.0


def reaper(*argv):
    return subprocess.run([sys.executable, "-m", "ganeti.cli.subreaper", "--", *argv],
                          capture_output=True, text=True, timeout=30, check=False)


def stat(pid):
    """(state, parent pid) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


def wait_until(predicate):
    return daemons.wait_for(predicate, DEADLINE, interval=0.005)


@pytest.mark.subprocess
class SubreaperTest(SynchronousTestCase):
    def test_status_and_output_are_the_commands(self):
        done = reaper("sh", "-c", "echo out; echo err >&2; exit 3")
        self.assertEqual((done.returncode, done.stdout, done.stderr), (3, "out\n", "err\n"))
        self.assertEqual(reaper("true").returncode, 0)
        killed = reaper("sh", "-c", "kill -9 $$")
        self.assertEqual(killed.returncode, 128 + 9)

    def test_a_command_that_cannot_run(self):
        done = reaper("/nonexistent/daemon")
        self.assertEqual(done.returncode, 127)
        self.assertIn("subreaper: cannot run /nonexistent/daemon", done.stderr)

    def test_usage(self):
        self.assertEqual(subreaper.main([]), 2)
        self.assertEqual(subreaper.main(["--"]), 2)
        self.assertEqual(subreaper.main(["-x"]), 2)

    def test_an_orphan_is_adopted_and_collected_as_it_ends(self):
        # the command returns at once, its daemon (a sleep) outlives it, as libvirtd -d
        done = reaper("sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!")
        self.assertEqual(done.returncode, 0, done.stderr)
        daemon = int(done.stdout)
        self.addCleanup(lambda: stat(daemon) and os.kill(daemon, 9))
        state, parent = stat(daemon)
        self.assertNotEqual(parent, 1)
        self.assertIn("ganeti.cli.subreaper", cmdline(parent))
        os.kill(daemon, 9)
        # gone, not a zombie waiting for PID 1 (which collects orphans every ~1.5 s on
        # some machines)
        self.assertTrue(wait_until(lambda: stat(daemon) is None), stat(daemon))
        # and the subreaper ended with its last descendant (PID 1 collects it)
        self.assertTrue(wait_until(lambda: stat(parent) is None or stat(parent)[0] == "Z"))

    def test_exit_code(self):
        self.assertEqual(subreaper.exit_code(0), 0)
        self.assertEqual(subreaper.exit_code(3 << 8), 3)
        self.assertEqual(subreaper.exit_code(15), 128 + 15)
