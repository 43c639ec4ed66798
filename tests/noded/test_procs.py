"""Child processes of node RPC calls: outcomes, bounded output, and the group ended
on timeout, on cancel and on stop (SIGTERM, SIGKILL after the grace on a fake clock).

The processes are real (the reactor spawns them); timeouts and grace periods
run on a Clock, so nothing waits for them.  Only a child's death is polled,
with a deadline.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from twisted.internet import defer, reactor, task
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.noded.procs import ChildProcesses, ProcessOutcome

DEADLINE = 10.0


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await task.deferLater(reactor, 0.02, lambda: None)


def read_pids(path: str) -> list[int]:
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


@pytest.mark.subprocess
class ProcsTest(TestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.kills: list[tuple[int, int]] = []
        self.procs = ChildProcesses(reactor, self.clock, grace=5.0)
        real_kill = self.procs.kill

        def kill(pid: int, sig: int) -> None:
            self.kills.append((pid, sig))
            real_kill(pid, sig)
        self.procs.kill = kill
        self.tmp = os.path.abspath(self.mktemp())
        os.makedirs(self.tmp)
        self.pidfile = os.path.join(self.tmp, "pids")
        self.addCleanup(self._reap)

    async def _reap(self) -> None:
        # never leave a child behind, whatever the test did
        for pid in list(self.procs.running):
            self.procs.kill(pid, signal.SIGKILL)
        await wait_for(lambda: not self.procs.running, "children to be reaped")

    def sh(self, script: str) -> list[str]:
        return ["/bin/sh", "-c", script]

    async def test_exit_code_and_output(self):
        out = await self.procs.run(self.sh("echo out; echo err >&2; exit 3"))
        self.assertEqual((out.exit_code, out.signal, out.stdout, out.stderr, out.ok),
                         (3, None, b"out\n", b"err\n", False))
        self.assertEqual(out.reason(), "exited with exit code 3")
        ok = await self.procs.run(["/bin/true"])
        self.assertTrue(ok.ok)
        self.assertEqual(ok.reason(), "")

    async def test_environment_stdin_and_cwd(self):
        out = await self.procs.run(self.sh('printf "%s %s " "$GANETI_X" "$(pwd)"; cat'),
                                   env={"GANETI_X": "y", "PATH": "/usr/bin:/bin"},
                                   stdin=b"in", cwd=self.tmp)
        self.assertEqual(out.stdout.decode(), f"y {self.tmp} in")

    async def test_program_that_cannot_start(self):
        out = await self.procs.run([os.path.join(self.tmp, "missing")])
        self.assertEqual(out.exec_error, "No such file or directory")
        self.assertEqual(out.reason(), "No such file or directory")
        self.assertFalse(out.ok)
        path = os.path.join(self.tmp, "not-executable")
        open(path, "w").close()
        out = await self.procs.run([path])
        self.assertEqual(out.exec_error, "Permission denied")

    def test_relative_program_refused(self):
        self.assertRaises(ValueError, self.procs.run, ["sh", "-c", "true"])
        self.assertRaises(ValueError, self.procs.run, [])

    async def test_output_is_bounded(self):
        self.procs.max_output = 1000
        out = await self.procs.run(self.sh("head -c 200000 /dev/zero; echo done >&2"))
        self.assertEqual((len(out.stdout), out.stderr, out.truncated, out.exit_code),
                         (1000, b"done\n", True, 0))

    async def test_own_process_group(self):
        d = self.procs.run(self.sh(f"echo $$ > {self.pidfile}; exec sleep 60"))
        await wait_for(lambda: read_pids(self.pidfile), "the child to start")
        pid = read_pids(self.pidfile)[0]
        self.assertEqual(os.getpgid(pid), pid)
        self.assertEqual(os.getsid(pid), pid)
        self.assertNotEqual(os.getpgid(pid), os.getpgid(0))
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)

    async def test_timeout_on_the_clock(self):
        d = self.procs.run(self.sh(f"echo $$ > {self.pidfile}; exec sleep 60"), timeout=30)
        await wait_for(lambda: read_pids(self.pidfile), "the child to start")
        pid = read_pids(self.pidfile)[0]
        self.clock.advance(29)
        self.assertTrue(alive(pid))
        self.assertNoResult(d)
        self.clock.advance(1)
        self.assertEqual(self.kills, [(pid, signal.SIGTERM)])
        out: ProcessOutcome = await d
        self.assertEqual((out.timed_out, out.signal, out.reason()),
                         (True, signal.SIGTERM, "timeout"))
        self.assertFalse(alive(pid))
        self.assertFalse(self.clock.getDelayedCalls())  # the SIGKILL timer is gone too

    async def test_cancel_ends_the_whole_group_sigkill_after_grace(self):
        # the shell and its child ignore SIGTERM: only the SIGKILL after the grace ends them
        d = self.procs.run(self.sh(f"trap '' TERM; sleep 60 & echo $$ $! > {self.pidfile}; "
                                   "wait"))
        await wait_for(lambda: len(read_pids(self.pidfile)) == 2, "the children to start")
        shell, sleeper = read_pids(self.pidfile)
        self.assertEqual(os.getpgid(sleeper), shell)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)  # at once, not after the grace
        self.assertEqual(self.kills, [(shell, signal.SIGTERM)])
        self.clock.advance(4.9)
        self.assertTrue(alive(shell) and alive(sleeper))
        self.clock.advance(0.1)
        self.assertEqual(self.kills[-1], (shell, signal.SIGKILL))
        await wait_for(lambda: not alive(shell) and not alive(sleeper), "the group to die")
        await wait_for(lambda: not self.procs.running, "the child to be reaped")

    async def test_stop_all(self):
        ds = [self.procs.run(self.sh(f"echo $$ >> {self.pidfile}; exec sleep 60"))
              for _ in range(2)]
        await wait_for(lambda: len(read_pids(self.pidfile)) == 2, "the children to start")
        await self.procs.stop_all()
        self.assertFalse(self.procs.running)
        self.assertFalse(any(alive(p) for p in read_pids(self.pidfile)))
        for d in ds:
            out = await d
            self.assertEqual(out.signal, signal.SIGTERM)

    async def test_escaped_grandchild_does_not_hold_the_outcome(self):
        # a grandchild in a session of its own keeps stdout open after the child exits
        d = self.procs.run(self.sh(f"setsid sleep 60 & echo $! > {self.pidfile}; echo hi"))
        await wait_for(lambda: read_pids(self.pidfile), "the grandchild to start")
        escaped = read_pids(self.pidfile)[0]
        self.addCleanup(os.kill, escaped, signal.SIGKILL)
        await wait_for(lambda: self.clock.getDelayedCalls(), "the child to exit")
        self.assertNoResult(d)
        self.clock.advance(5.0)
        out = await d
        self.assertEqual((out.exit_code, out.stdout, out.truncated), (0, b"hi\n", True))
