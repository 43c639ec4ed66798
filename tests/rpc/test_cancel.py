"""Cancelling a node call on the master ends the child process it started on the node.

A real noded site over mutual TLS on 127.0.0.1 serves a test-only call (its
own table, never the production one) that runs a long child through
:class:`ganeti.noded.procs.ChildProcesses`.  The master cancels the call's
Deferred, or the call's own timeout passes: the HTTPS request is aborted, noded
cancels the handler and the child's process group gets SIGTERM (SIGKILL after
the grace, on a fake clock).  A child's death is polled with a deadline.
"""

from __future__ import annotations

import os
import signal

import pytest
from twisted.internet import defer, reactor
from twisted.internet.endpoints import SSL4ServerEndpoint
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core import rpcdefs
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.backend.registry import handlers
from ganeti.noded.procs import ChildProcesses
from ganeti.noded.server import make_site
from ganeti.noded.tls import ClusterServerContextFactory
from ganeti.rpc.client import NodeTarget, RpcClient
from tests.noded.helpers import node_paths
from tests.noded.test_procs import alive, read_pids, wait_for
from tests.noded.tlshelpers import cert

# a test-only call: run a shell snippet that records its pids, for a day at most
TEST_CALLS = rpcdefs.build_table(*(d.CALLS for d in rpcdefs.DOMAINS), [
    rpcdefs.RpcCall("test_child", (
        rpcdefs.RpcArg("pidfile", rpcdefs.is_wire_path, "a path"),
        rpcdefs.RpcArg("trap", lambda v: isinstance(v, bool), "a boolean")),
        rpcdefs.RPC_TMO_1DAY, "Run a long child (tests only)."),
])


@pytest.mark.subprocess
class CancelTest(TestCase):
    async def setUp(self):
        self.grace = Clock()
        self.kills: list[tuple[int, int]] = []
        self.procs = ChildProcesses(reactor, self.grace, grace=5.0)
        real_kill = self.procs.kill

        def kill(pid: int, sig: int) -> None:
            self.kills.append((pid, sig))
            real_kill(pid, sig)
        self.procs.kill = kill
        self.addCleanup(self._reap)

        def test_child(ctx, pidfile, trap):
            ignore = "trap '' TERM; " if trap else ""
            return self.procs.run(["/bin/sh", "-c",
                                   f"{ignore}sleep 86400 & echo $$ $! > {pidfile}; wait"])

        paths = node_paths(self)
        self.pidfile = os.path.join(paths.root, "pids")
        ctx = NodeContext(paths=paths, clock=reactor, run=inline_runner)
        calls = dict(handlers(), test_child=test_child)
        site = make_site(ctx, calls, reactor=reactor, calls=TEST_CALLS)
        endpoint = SSL4ServerEndpoint(reactor, 0, ClusterServerContextFactory(
            cert("cluster.example.com")), interface="127.0.0.1")
        self.port = await endpoint.listen(site)
        self.addCleanup(self.port.stopListening)
        self.client = RpcClient(reactor, cert("cluster.example.com"),
                                self.port.getHost().port, calls=TEST_CALLS)
        self.addCleanup(self.client.close)

    async def _reap(self):
        for pid in list(self.procs.running):
            self.procs.kill(pid, signal.SIGKILL)
        for pid in read_pids(self.pidfile):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        await wait_for(lambda: not self.procs.running, "children to be reaped")

    def start(self, trap=False, timeout=None):
        node = NodeTarget("node1", "127.0.0.1")
        return self.client.call([node], "test_child", [self.pidfile, trap], timeout=timeout)

    async def started(self):
        await wait_for(lambda: len(read_pids(self.pidfile)) == 2, "the child to start")
        return read_pids(self.pidfile)

    async def test_cancel_kills_the_child(self):
        d = self.start()
        shell, sleeper = await self.started()
        self.assertTrue(alive(shell) and alive(sleeper))
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        await wait_for(lambda: self.kills, "noded to end the child")
        self.assertEqual(self.kills, [(shell, signal.SIGTERM)])
        await wait_for(lambda: not alive(shell) and not alive(sleeper), "the group to die")
        await wait_for(lambda: not self.procs.running, "the child to be reaped")
        self.assertFalse(self.grace.getDelayedCalls())  # no SIGKILL left pending

    async def test_cancel_escalates_to_sigkill_after_the_grace(self):
        d = self.start(trap=True)
        shell, sleeper = await self.started()
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        await wait_for(lambda: self.kills, "noded to end the child")
        self.assertTrue(alive(shell) and alive(sleeper))  # SIGTERM ignored
        self.grace.advance(5.0)
        self.assertEqual(self.kills, [(shell, signal.SIGTERM), (shell, signal.SIGKILL)])
        await wait_for(lambda: not alive(shell) and not alive(sleeper), "the group to die")

    async def test_timeout_kills_the_child_and_fails_the_result(self):
        d = self.start(timeout=0.5)
        shell, sleeper = await self.started()
        results = await d
        self.assertFalse(results["node1"].success)
        self.assertEqual(results["node1"].fail_msg,
                         "test_child on node1: timed out after 0.5 s")
        await wait_for(lambda: not alive(shell) and not alive(sleeper), "the group to die")

    async def test_other_calls_unaffected(self):
        d = self.start()
        await self.started()
        results = await self.client.call([NodeTarget("node1", "127.0.0.1")], "version")
        self.assertTrue(results["node1"].success)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
