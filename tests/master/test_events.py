"""The event bus: order, serials, resuming, resync, waiting with a timeout."""

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.master.jobs.events import RESYNC, EventBus


class EventBusTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.clock.advance(1000)
        self.bus = EventBus(self.clock, history=5)

    def test_serials_start_at_start_time_and_grow(self):
        self.assertEqual(self.bus.last_serial, 1000 * 1_000_000)
        e1 = self.bus.publish("job", {"id": 1})
        e2 = self.bus.publish("job", {"id": 2})
        self.assertEqual(e2.serial, e1.serial + 1)
        self.assertEqual(e1.to_dict(), {"serial": e1.serial, "kind": "job", "time": 1000,
                                        "id": 1})

    def test_live_delivery_in_order(self):
        got = []
        self.bus.subscribe(got.append)
        for i in range(3):
            self.bus.publish("job", {"id": i})
        self.assertEqual([e.data["id"] for e in got], [0, 1, 2])

    def test_resume_from_a_serial(self):
        events = [self.bus.publish("job", {"id": i}) for i in range(4)]
        got = []
        self.bus.subscribe(got.append, since=events[1].serial)
        self.bus.publish("job", {"id": 4})
        self.assertEqual([e.data["id"] for e in got], [2, 3, 4])

    def test_resume_when_up_to_date(self):
        e = self.bus.publish("job", {"id": 0})
        got = []
        self.bus.subscribe(got.append, since=e.serial)
        self.assertEqual(got, [])

    def test_too_old_gets_resync(self):
        first = self.bus.publish("job", {"id": 0})
        for i in range(1, 10):
            self.bus.publish("job", {"id": i})
        got = []
        self.bus.subscribe(got.append, since=first.serial)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0].kind, RESYNC)
        self.assertEqual(got[0].data["oldest"], self.bus.oldest_serial)
        self.bus.publish("job", {"id": 10})
        self.assertEqual(got[-1].data, {"id": 10})

    def test_serial_from_before_a_restart_resyncs(self):
        got = []
        self.bus.subscribe(got.append, since=5)  # a serial of an earlier run
        self.assertEqual([e.kind for e in got], [RESYNC])
        self.bus.publish("job", {})
        self.assertEqual([e.kind for e in got], [RESYNC, "job"])

    def test_cancel_and_failing_subscriber(self):
        got = []
        sub = self.bus.subscribe(got.append)
        sub.cancel()

        def broken(event):
            raise ValueError("oops")

        self.bus.subscribe(broken)
        self.bus.publish("job", {})
        self.assertEqual(got, [])
        self.assertEqual(self.bus.subscriber_count, 0)
        self.assertEqual(len(self.flushLoggedErrors(ValueError)), 1)

    def test_wait_for_match(self):
        d = self.bus.wait_for(lambda e: e.data.get("id") == 2, timeout=10)
        self.bus.publish("job", {"id": 1})
        self.assertNoResult(d)
        self.bus.publish("job", {"id": 2})
        self.assertEqual(self.successResultOf(d).data, {"id": 2})
        self.assertEqual(self.bus.subscriber_count, 0)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_wait_for_timeout(self):
        d = self.bus.wait_for(lambda e: True, timeout=10)
        self.clock.advance(9.9)
        self.assertNoResult(d)
        self.clock.advance(0.2)
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.bus.subscriber_count, 0)

    def test_wait_for_cancel(self):
        d = self.bus.wait_for(lambda e: True, timeout=10)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.bus.subscriber_count, 0)
        self.assertEqual(self.clock.getDelayedCalls(), [])
