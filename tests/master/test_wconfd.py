"""The master daemon's WConfD socket methods (ganeti/master/wconfd.py): what Ganeti's
``gnt-debug wconfd`` asks, answered from the lock manager and the config writer, and
WConfD's refusals for everything else."""

from __future__ import annotations

from typing import Any

from twisted.internet import task
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.luxi import wire
from ganeti.luxi.server import LuxiServerProtocol
from ganeti.master.locking.manager import LockManager
from ganeti.master.wconfd import METHODS, WconfdDispatcher, WconfdMethods

NODE = "5c4b1a2e-0000-4000-8000-000000000001"


class WconfdMethodsTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = task.Clock()
        self.locks = LockManager(self.clock, nodes=[NODE, "other-node"])
        self.flushed: list[bool] = []
        self.problem: str | None = None

        async def redistribute() -> str | None:
            self.flushed.append(True)
            return self.problem

        self.methods = WconfdMethods(self.locks, redistribute, "/q", pid=42)
        self.dispatcher = WconfdDispatcher(self.methods.implementations(), METHODS)

    def call(self, method: str, *args: Any) -> Any:
        return self.successResultOf(self.dispatcher.dispatch(method, list(args)))

    def refused(self, method: str, *args: Any) -> str:
        failure = self.failureResultOf(self.dispatcher.dispatch(method, list(args)))
        self.assertIs(type(failure.value), errors.GenericError)
        return str(failure.value.args[0])

    def hold(self, owner: str) -> None:
        self.successResultOf(self.locks.acquire(owner, "cluster", ["BGL"], shared=True))
        self.successResultOf(self.locks.acquire(owner, "node", [NODE]))

    def test_echo_cleanup_and_flush(self):
        self.assertEqual(self.call("echo", "hello"), "hello")
        self.assertIsNone(self.call("cleanupLocks"))
        self.assertIsNone(self.call("flushConfig"))
        self.assertEqual(self.flushed, [True])
        self.problem = "node2 did not answer"
        failure = self.failureResultOf(self.dispatcher.dispatch("flushConfig", []))
        self.assertIn("node2 did not answer", str(failure.value))

    def test_locks_as_wconfd_lists_them(self):
        # idle: nothing (as Ganeti's: Answer: [])
        self.assertEqual((self.call("listAllLocks"), self.call("listAllLocksOwners")), ([], []))
        self.hold("job/5")
        self.assertEqual(self.call("listAllLocks"),
                         ["cluster/[lockset]", "cluster/BGL", "node/[lockset]", f"node/{NODE}"])
        client = [5, "/q/job-5", 42]
        self.assertEqual(self.call("listAllLocksOwners"), [
            ["cluster/[lockset]", []], ["cluster/BGL", [[client, "shared"]]],
            ["node/[lockset]", []], [f"node/{NODE}", [[client, "exclusive"]]]])
        self.assertEqual(self.call("listLocks", client),
                         [["cluster/BGL", "shared"], [f"node/{NODE}", "exclusive"]])
        # Ganeti's gnt-debug sends [job id, lock file]: accepted, by job id
        self.assertEqual(len(self.call("listLocks", [5, "/x/livelocks/masterd_1"])), 2)
        self.assertEqual(self.call("listLocks", [6, "", 0]), [])
        self.locks.release_all("job/5")
        self.assertEqual(self.call("listAllLocks"), [])

    def test_refusals(self):
        self.assertEqual(self.refused("readConfig"), "No such method: readConfig")
        self.assertEqual(self.refused("foo"), "No such method: foo")
        self.assertIn("RPC input: ", self.refused("echo", 5))
        self.assertIn("RPC input: ", self.refused("echo"))
        self.assertIn("RPC input: ", self.refused("listAllLocks", "x"))
        self.assertIn("malformed client id", self.refused("listLocks", "5"))

    def test_answers_on_the_wire_are_ganetis_encoded_errors(self):
        proto = LuxiServerProtocol(self.dispatcher, 1 << 20, self.clock)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(wire.encode_request("echo", ["hi"])
                           + wire.encode_request("nope", []))
        frames = wire.FrameSplitter(1 << 20).feed(transport.value())
        self.assertEqual([wire.load_json(f) for f in frames], [
            {"success": True, "result": "hi"},
            {"success": False, "result": ["GenericError", ["No such method: nope"]]}])
