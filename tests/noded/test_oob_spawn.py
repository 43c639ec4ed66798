"""run_oob through spawnProcess: the same answers as the blocking run, its timeout on
the node's clock, and the program's group ended when the master cancels the call."""

from __future__ import annotations

import os
import stat

import pytest
from twisted.internet import defer, reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core.paths import Paths
from ganeti.noded.backend import oob
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from tests.noded.test_procs import alive, read_pids, wait_for


@pytest.mark.subprocess
class SpawnedOobTest(TestCase):
    def setUp(self) -> None:
        self.tmp = os.path.abspath(self.mktemp())
        os.makedirs(self.tmp)
        self.clock = Clock()
        self.ctx = NodeContext(paths=Paths.for_node(os.path.join(self.tmp, "n1"), "n1"),
                               clock=self.clock, run=inline_runner, processes=reactor)
        self.pidfile = os.path.join(self.tmp, "pid")

    def script(self, body: str) -> str:
        path = os.path.join(self.tmp, "oob")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def run_oob(self, program: str, command: str = "power-on", timeout: int = 10):
        return oob.run_oob(self.ctx, program, command, "node2.test", timeout)

    async def failure(self, program: str) -> str:
        with self.assertRaises(RPCFail) as caught:
            await self.run_oob(program)
        return str(caught.exception)

    async def test_answers_and_failures_as_the_blocking_run(self):
        self.assertEqual(await self.run_oob(self.script('echo "[[\\"$1\\", \\"$2\\"]]"'),
                                            "health"), [["health", "node2.test"]])
        self.assertIsNone(await self.run_oob(self.script("true")))
        program = self.script("echo out; exit 2")
        self.assertEqual(await self.failure(program),
                         f"'{program} power-on node2.test' failed with reason 'exited with "
                         "exit code 2'; output: out\n")
        self.assertIn("not JSON", await self.failure(self.script("echo '{'")))
        missing = os.path.join(self.tmp, "missing")
        self.assertEqual(await self.failure(missing),
                         f"'{missing} power-on node2.test' failed with reason 'No such file "
                         "or directory'; output: ")
        self.assertIn("absolute path", await self.failure("oob"))

    async def test_timeout_on_the_clock(self):
        program = self.script(f"echo $$ > {self.pidfile}; echo partial; exec sleep 60")
        d = self.run_oob(program, timeout=3)
        await wait_for(lambda: read_pids(self.pidfile), "the program to start")
        self.clock.advance(3)
        with self.assertRaises(RPCFail) as caught:
            await d
        self.assertEqual(str(caught.exception),
                         f"'{program} power-on node2.test' failed with reason 'timeout after "
                         "3s'; output: partial\n")
        self.assertFalse(alive(read_pids(self.pidfile)[0]))

    async def test_cancel_ends_the_program(self):
        d = self.run_oob(self.script(f"echo $$ > {self.pidfile}; exec sleep 60"))
        await wait_for(lambda: read_pids(self.pidfile), "the program to start")
        pid = read_pids(self.pidfile)[0]
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        await wait_for(lambda: not alive(pid), "the program to die")
