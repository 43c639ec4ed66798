"""LUXI event streams: switch-over, events, backpressure with resync, cleanup."""

import json

from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase

from ganeti.luxi import wire
from ganeti.luxi.server import LuxiDispatcher, LuxiServerFactory
from ganeti.luxi.stream import StreamSender
from ganeti.master.jobs.events import EventBus, subscribe_events_method


def frames(transport):
    return [json.loads(f) for f in transport.value().split(b"\x03") if f]


class StreamTest(SynchronousTestCase):
    def setUp(self):
        self.bus = EventBus(Clock(), history=100, first_serial=0)
        impls = {"SubscribeEvents": subscribe_events_method(self.bus),
                 "QueryConfigValues": lambda fields: [None] * len(fields)}
        self.proto = LuxiServerFactory(LuxiDispatcher(impls), clock=Clock()).buildProtocol(None)
        self.transport = StringTransport()
        self.proto.makeConnection(self.transport)

    def subscribe(self, since=None):
        self.proto.dataReceived(wire.encode_request("SubscribeEvents", [since]))

    def test_reply_then_events(self):
        self.bus.publish("job", {"id": 1})
        self.subscribe()
        self.bus.publish("job", {"id": 2})
        reply, event = frames(self.transport)
        self.assertEqual(reply, {"success": True,
                                 "result": {"last_serial": 1, "oldest_serial": 1}})
        self.assertEqual((event["serial"], event["kind"], event["id"]), (2, "job", 2))

    def test_resume_since(self):
        for i in range(3):
            self.bus.publish("job", {"id": i})
        self.subscribe(since=1)
        self.assertEqual([f.get("id") for f in frames(self.transport)[1:]], [1, 2])

    def test_requests_after_the_switch_are_not_answered(self):
        self.subscribe()
        self.proto.dataReceived(wire.encode_request("QueryConfigValues", [["x"]]))
        self.assertEqual(len(frames(self.transport)), 1)

    def test_pipelined_request_before_subscribe_is_answered(self):
        self.proto.dataReceived(wire.encode_request("QueryConfigValues", [["x"]])
                                + wire.encode_request("SubscribeEvents", [None]))
        first, second = frames(self.transport)
        self.assertEqual(first["result"], [None])
        self.assertIn("last_serial", second["result"])

    def test_slow_reader_gets_resync_and_memory_stays_bounded(self):
        self.subscribe()
        sender = self.proto.stream
        sender.max_queued = 5
        sender.pauseProducing()
        for i in range(50):
            self.bus.publish("job", {"id": i})
        self.assertEqual(len(sender.queue), 0)  # overflowed: dropped, not kept
        sender.resumeProducing()
        self.bus.publish("job", {"id": 50})
        resync, live = frames(self.transport)[1:]
        self.assertEqual(resync["kind"], "resync")
        self.assertEqual(resync["dropped"], 50)
        self.assertEqual(resync["last_dropped_serial"], 50)
        self.assertEqual(live["id"], 50)

    def test_short_pause_delivers_everything_in_order(self):
        self.subscribe()
        self.proto.stream.pauseProducing()
        for i in range(3):
            self.bus.publish("job", {"id": i})
        self.assertEqual(len(frames(self.transport)), 1)
        self.proto.stream.resumeProducing()
        self.assertEqual([f["id"] for f in frames(self.transport)[1:]], [0, 1, 2])

    def test_disconnect_unsubscribes(self):
        self.subscribe()
        self.assertEqual(self.bus.subscriber_count, 1)
        self.proto.connectionLost(None)
        self.assertEqual(self.bus.subscriber_count, 0)

    def test_half_close_keeps_the_stream(self):
        self.subscribe()
        self.proto.readConnectionLost()
        self.bus.publish("job", {"id": 9})
        self.assertEqual(frames(self.transport)[-1]["id"], 9)
        self.assertFalse(self.transport.disconnecting)

    def test_encode(self):
        self.assertEqual(StreamSender.encode({"a": 1}), b'{"a":1}\x03')
