"""Bad allocators as real programs, through a job: the master's real runner spawns them
(on the real reactor) while the master runs on a fake clock, so a hanging allocator is
ended by advancing that clock, not by waiting.  Each failure names the allocator, fails
the job and changes nothing in the config."""

from __future__ import annotations

import os
import stat

import pytest
from twisted.internet import defer, reactor
from twisted.trial.unittest import TestCase

from ganeti.core import constants as c
from ganeti.master.iallocator import runner
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet
from tests.master.test_lu_allocate import alloc_op


def _watch(ended: defer.Deferred) -> defer.Deferred:
    """A Deferred firing when ``ended`` does, leaving ``ended``'s result to its owner."""
    mine: defer.Deferred = defer.Deferred()

    def relay(result):
        mine.callback(None)
        return result
    ended.addBoth(relay)
    return mine


@pytest.mark.subprocess
class BadProgramTest(TestCase):
    def setUp(self):
        tmp = os.path.abspath(self.mktemp())
        os.makedirs(tmp)
        self.dir = os.path.join(tmp, "iallocators")
        os.makedirs(self.dir)
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE],
                           enabled_disk_templates=[c.DT_DISKLESS, c.DT_FILE])
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.runner = runner.AllocatorRunner(reactor, reactor, search_path=[self.dir],
                                             max_output=10_000, tmp_dir=tmp)
        self.master = InProcessMaster(tmp, cfg=cfg, rpc=self.net, allocators=self.runner)
        self.runner.clock = self.master.reactor
        self.addCleanup(self.master.stop)
        self.net.clock = self.master.reactor
        self.net.config = lambda: self.master.config
        self.net.add("node1.test", "127.0.1.1", paths=self.master.paths)

    def script(self, name: str, body: str) -> None:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    async def run_job(self, op, hang: bool = False):
        """Drive the job: the fake clock while no program runs; a running program is
        waited for (or, with ``hang``, timed out by advancing the clock)."""
        job_id = self.master.submit(op)
        queue = self.master.daemon.queue
        for _ in range(10000):
            job = queue.visible.get(job_id)
            if job is not None and job.finalized:
                break
            if self.runner.active:
                ended = [child.ended for child in self.runner.active]
                if hang:
                    self.master.reactor.advance(runner.DEFAULT_TIMEOUT)
                await defer.DeferredList([_watch(d) for d in ended], fireOnOneCallback=True)
                continue
            pending = [d.getTime() for d in self.master.reactor.getDelayedCalls() if d.active()]
            self.assertTrue(pending, "the job waits for nothing")
            self.master.reactor.advance(max(0.0, min(pending) - self.master.reactor.seconds()))
        status, results, _log = self.master.finish(job_id)
        self.assertEqual(status, "error", results)
        cls, args = results[-1]
        return cls, args[0]

    async def test_each_bad_program_fails_the_job_and_changes_nothing(self):
        self.script("exits", "echo no luck >&2; exit 1\n")
        self.script("flood", "yes\n")
        self.script("ghost", 'echo \'{"success": true, "info": "", "result": ["ghost.test"]}\'\n')
        self.script("shape", 'echo \'{"success": true, "info": "", "result": "node1.test"}\'\n')
        self.script("hang", "sleep 600 & sleep 600\n")
        serial = self.master.config.serial_no
        cases = [
            ("exits", False, "OpExecError",
             "Failure while running the iallocator script: iallocator module 'exits' failed: "
             "exited with exit code 1, output 'no luck\n'"),
            ("flood", False, "OpExecError",
             "Failure while running the iallocator script: iallocator module 'flood' failed: "
             "killed: its output exceeded 10000 bytes, output '"),
            ("ghost", False, "ResultValidationError",
             "iallocator returned unknown node(s): ghost.test"),
            ("shape", False, "ResultValidationError",
             "iallocator returned invalid result, expected"),
            ("hang", True, "OpExecError",
             "Failure while running the iallocator script: iallocator module 'hang' failed: "
             "terminated after timeout of 300.00 seconds"),
            ("absent", False, "OpExecError",
             "Failure while running the iallocator script: iallocator module 'absent' not "
             "found in the search path"),
        ]
        for name, hang, cls_want, start in cases:
            cls, msg = await self.run_job(alloc_op(f"{name}.test", iallocator=name), hang)
            self.assertEqual(cls, cls_want, (name, msg[:300]))
            self.assertTrue(msg.startswith(start), (name, msg[:300]))
            self.assertIsNone(self.master.config.instance_by_name(f"{name}.test"))
        self.assertEqual(self.master.config.serial_no, serial)
        self.assertEqual(self.runner.active, set())
