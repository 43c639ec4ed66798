"""The node's instance event ring and its long poll (``instance_events``), on a Clock."""

from __future__ import annotations

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.instevents import MAX_WAIT, InstanceEvents


class InstanceEventsTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1000)
        self.ring = InstanceEvents(self.clock, size=3, boot_id="b1")

    def wait(self, since: int, timeout: float) -> defer.Deferred:
        return defer.ensureDeferred(self.ring.wait(since, timeout))

    def test_answers_at_once_with_newer_events(self) -> None:
        self.ring.emit("a", "kvm", "started", "the domain started")
        self.ring.emit("a", "kvm", "crashed", "qemu died")
        answer = self.successResultOf(self.wait(1, 30))
        self.assertEqual(answer["boot_id"], "b1")
        self.assertEqual(answer["serial"], 2)
        self.assertEqual(answer["events"], [
            {"serial": 2, "instance": "a", "hypervisor": "kvm", "event": "crashed",
             "reason": "qemu died", "time": 1000.0}])

    def test_holds_until_an_event_arrives(self) -> None:
        d = self.wait(0, 30)
        self.assertNoResult(d)
        self.clock.advance(5)
        self.ring.emit("a", "kvm", "shutdown")
        answer = self.successResultOf(d)
        self.assertEqual([e["event"] for e in answer["events"]], ["shutdown"])
        self.assertEqual(answer["events"][0]["time"], 1005.0)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_times_out_empty_and_clamps_the_hold(self) -> None:
        d = self.wait(0, 3600)
        self.clock.advance(MAX_WAIT - 0.1)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.assertEqual(self.successResultOf(d), {"boot_id": "b1", "serial": 0, "events": []})
        self.assertEqual(self.successResultOf(self.wait(0, -5))["events"], [])

    def test_ring_keeps_the_last_events(self) -> None:
        for i in range(5):
            self.ring.emit(f"i{i}", "kvm", "started")
        answer = self.successResultOf(self.wait(0, 0))
        self.assertEqual([e["serial"] for e in answer["events"]], [3, 4, 5])

    def test_a_serial_from_the_future_gets_everything(self) -> None:
        self.ring.emit("a", "kvm", "started")
        answer = self.successResultOf(self.wait(99, 30))
        self.assertEqual([e["serial"] for e in answer["events"]], [1])

    def test_cancel_forgets_the_waiter(self) -> None:
        d = self.wait(0, 30)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.ring.emit("a", "kvm", "started")  # nobody to wake

    def test_unknown_event_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            self.ring.emit("a", "kvm", "exploded")

    def test_boot_ids_differ(self) -> None:
        self.assertNotEqual(InstanceEvents(self.clock).boot_id, InstanceEvents(self.clock).boot_id)


class InstanceEventsCallTest(SynchronousTestCase):
    """``instance_events`` over the node's HTTP interface."""

    def test_held_then_answered_empty_or_with_news(self) -> None:
        from tests.noded.helpers import MemoryNode, node_paths
        node = MemoryNode(node_paths(self))
        status, reply = node.put("instance_events", [0, 10], advance=10)
        self.assertEqual(status, 200)
        self.assertEqual(reply[1]["events"], [])
        self.assertEqual(reply[1]["boot_id"], node.ctx.events.boot_id)
        node.ctx.events.emit("a.example.com", "kvm", "crashed", "qemu died")
        status, reply = node.put("instance_events", [0, 10])
        self.assertEqual([e["event"] for e in reply[1]["events"]], ["crashed"])
        status, reply = node.put("instance_events", [-1, 10])
        self.assertEqual(status, 400)
