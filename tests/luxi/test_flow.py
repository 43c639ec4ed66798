"""LUXI server flow control (issue 13): bounded pending input, bounded output,
answers in slices per reactor turn, nothing computed for a client that left,
deep JSON answered, and a log budget for what clients cause."""

import json

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import Logger
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.serializer import MAX_JSON_DEPTH
from ganeti.luxi import wire
from ganeti.luxi.loglimit import LogBudget
from ganeti.luxi.methods import INT, METHODS, STR, Method
from ganeti.luxi.server import FlowLimits, LuxiDispatcher, LuxiServerFactory

TABLE = dict(METHODS)
TABLE["Echo"] = Method("Echo", (STR("text"),), "test")
TABLE["Slow"] = Method("Slow", (), "test")
TABLE["Big"] = Method("Big", (INT("size"),), "test")
TABLE["Crash"] = Method("Crash", (), "test")


def answers(transport):
    return [json.loads(f) for f in transport.value().split(b"\x03") if f]


class BufferingTransport(StringTransport):
    """A StringTransport that, like a real one, pauses its streaming producer while
    more than ``buffer_size`` bytes are unsent, and resumes it on :meth:`drain`."""

    def __init__(self, buffer_size):
        super().__init__()
        self.buffer_size = buffer_size
        self.unsent = 0
        self.producer_paused = False

    def write(self, data):
        super().write(data)
        self.unsent += len(data)
        if (self.producer is not None and self.streaming and not self.producer_paused
                and self.unsent > self.buffer_size):
            self.producer_paused = True
            self.producer.pauseProducing()

    def drain(self):
        """The client reads everything sent so far."""
        self.unsent = 0
        if self.producer is not None and self.producer_paused:
            self.producer_paused = False
            self.producer.resumeProducing()


class FlowTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.slow = []
        self.computed = []

        def slow():
            d = defer.Deferred()
            self.slow.append(d)
            return d

        def echo(text):
            self.computed.append(text)
            return text

        def big(size):
            self.computed.append(size)
            return "x" * size

        def crash():
            raise KeyError("internal")

        self.dispatcher = LuxiDispatcher(
            {"Echo": echo, "Slow": slow, "Big": big, "Crash": crash}, TABLE)

    def connect(self, limits=None, transport=None, max_frame=64 * 1024):
        factory = LuxiServerFactory(self.dispatcher, max_frame=max_frame, clock=self.clock,
                                    limits=limits)
        self.factory = factory
        proto = factory.buildProtocol(None)
        transport = transport if transport is not None else StringTransport()
        proto.makeConnection(transport)
        return proto, transport

    def turn(self):
        """One reactor turn: like a real reactor (and unlike ``Clock.advance``), run
        only the calls already due when it starts, not those they schedule."""
        due = [c for c in self.clock.getDelayedCalls() if c.getTime() <= self.clock.seconds()]
        for call in due:
            self.clock.calls.remove(call)
            call.called = 1
            call.func(*call.args, **call.kw)

    def run_turns(self):
        turns = 0
        while self.clock.getDelayedCalls():
            self.turn()
            turns += 1
        return turns

    def test_reading_pauses_above_pending_bound_and_resumes_below(self):
        proto, transport = self.connect(FlowLimits(max_pending=8, per_turn=3))
        proto.dataReceived(wire.encode_request("Slow", [])
                           + b"".join(wire.encode_request("Echo", [str(i)]) for i in range(7)))
        self.assertEqual(proto.pending, 7)
        self.assertEqual(transport.producerState, "producing")  # 7 < 8
        proto.dataReceived(wire.encode_request("Echo", ["7"]))
        self.assertEqual(transport.producerState, "paused")  # 8 waiting behind Slow
        self.slow[0].callback("s")
        self.assertEqual(proto.pending, 5)  # one slice of 3 answered
        self.assertEqual(transport.producerState, "paused")  # still above 8 // 2
        self.turn()
        self.assertEqual(proto.pending, 2)
        self.assertEqual(transport.producerState, "producing")
        self.run_turns()
        self.assertEqual([a["result"] for a in answers(transport)],
                         ["s"] + [str(i) for i in range(8)])

    def test_frames_beyond_the_bound_stay_unparsed(self):
        # One read can carry thousands of frames: they wait as bytes, not as objects.
        proto, transport = self.connect(FlowLimits(max_pending=8, per_turn=4))
        proto.dataReceived(wire.encode_request("Slow", []) + b"{}\x03" * 5000)
        self.assertEqual(transport.producerState, "paused")
        self.assertEqual(proto.pending, 5000)
        self.assertEqual(answers(transport), [])

    def test_input_bytes_behind_a_pending_call_are_bounded(self):
        proto, transport = self.connect(FlowLimits(max_buffered=1000))
        proto.dataReceived(wire.encode_request("Slow", []) + b'{"method": "Echo", "args": ["')
        self.assertEqual(transport.producerState, "producing")
        proto.dataReceived(b"y" * 2000)  # a large frame still coming, behind Slow
        self.assertEqual(transport.producerState, "paused")
        self.slow[0].callback("s")
        self.assertEqual(transport.producerState, "producing")  # nothing left to answer
        proto.dataReceived(b'"]}\x03')
        self.assertEqual([a["result"] for a in answers(transport)], ["s", "y" * 2000])

    def test_one_large_frame_is_read_whole_when_nothing_waits(self):
        proto, transport = self.connect(FlowLimits(max_buffered=1000))
        proto.dataReceived(b'{"method": "Echo", "args": ["' + b"z" * 5000)
        self.assertEqual(transport.producerState, "producing")
        proto.dataReceived(b'"]}\x03')
        self.assertEqual(answers(transport), [{"success": True, "result": "z" * 5000}])

    def test_reading_and_answering_pause_while_output_is_unsent(self):
        transport = BufferingTransport(buffer_size=25000)
        proto, _ = self.connect(FlowLimits(per_turn=100), transport)
        self.assertIs(transport.producer, proto)
        self.assertTrue(transport.streaming)
        proto.dataReceived(b"".join(wire.encode_request("Big", [10000]) for _ in range(10)))
        # three answers fill the buffer; the fourth is not computed
        self.assertEqual(len(self.computed), 3)
        self.assertEqual(transport.producerState, "paused")
        self.assertEqual(self.run_turns(), 0)  # nothing scheduled while the client is full
        transport.drain()
        self.assertEqual(len(self.computed), 6)
        for _ in range(3):
            transport.drain()
        self.assertEqual(len(self.computed), 10)
        self.assertEqual(transport.producerState, "producing")
        self.assertEqual(len(answers(transport)), 10)

    def test_answers_per_reactor_turn_are_bounded(self):
        proto, transport = self.connect(FlowLimits(max_pending=1000, per_turn=5))
        proto.dataReceived(b"".join(wire.encode_request("Echo", [str(i)]) for i in range(23)))
        self.assertEqual(len(self.computed), 5)
        self.turn()
        self.assertEqual(len(self.computed), 10)
        self.assertEqual(self.run_turns(), 3)
        self.assertEqual(self.computed, [str(i) for i in range(23)])
        self.assertEqual(len(answers(transport)), 23)

    def test_a_resume_between_turns_leaves_one_scheduled_turn(self):
        transport = BufferingTransport(buffer_size=10 ** 9)
        proto, _ = self.connect(FlowLimits(max_pending=1000, per_turn=5), transport)
        proto.dataReceived(b"".join(wire.encode_request("Echo", [str(i)]) for i in range(12)))
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        proto.resumeProducing()  # the transport drained before the turn came
        self.assertEqual(len(self.computed), 10)
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        proto.connectionLost(None)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_nothing_is_computed_after_the_client_left(self):
        proto, transport = self.connect(FlowLimits(per_turn=5))
        proto.dataReceived(b"".join(wire.encode_request("Echo", [str(i)]) for i in range(50)))
        self.assertEqual(len(self.computed), 5)
        proto.connectionLost(None)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertEqual(proto.pending, 0)
        proto.dataReceived(wire.encode_request("Echo", ["late"]))
        self.assertEqual(len(self.computed), 5)

    def test_frames_behind_a_pending_call_are_dropped_when_the_client_leaves(self):
        proto, transport = self.connect()
        proto.dataReceived(wire.encode_request("Slow", [])
                           + wire.encode_request("Echo", ["a"]) * 10)
        proto.readConnectionLost()  # the client closed its end
        proto.connectionLost(None)  # the first write or the hang-up tells us it is gone
        written = transport.value()
        self.slow[0].callback("late")
        self.assertEqual(self.computed, [])
        self.assertEqual(transport.value(), written)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_half_closed_client_still_gets_every_answer_in_slices(self):
        proto, transport = self.connect(FlowLimits(per_turn=4))
        proto.dataReceived(b"".join(wire.encode_request("Echo", [str(i)]) for i in range(10)))
        proto.readConnectionLost()
        self.assertFalse(transport.disconnecting)
        self.run_turns()
        self.assertEqual(len(answers(transport)), 10)
        self.assertTrue(transport.disconnecting)

    def test_deep_json_gets_the_documented_error_and_the_connection_stays(self):
        proto, transport = self.connect()
        deep = b"[" * 5000 + b"]" * 5000
        deep_args = (b'{"method": "Echo", "args": ' + b"[" * (MAX_JSON_DEPTH + 1)
                     + b"]" * (MAX_JSON_DEPTH + 1) + b"}")
        proto.dataReceived(deep + b"\x03" + deep_args + b"\x03"
                           + wire.encode_request("Echo", ["ok"]))
        first, second, third = answers(transport)
        for answer in (first, second):
            self.assertEqual(answer, {
                "success": False, "result": "Invalid LUXI request: JSON nested more than "
                                            f"{MAX_JSON_DEPTH} levels deep"})
        self.assertEqual(third, {"success": True, "result": "ok"})
        self.assertFalse(transport.disconnecting)

    def test_malformed_json_keeps_its_answer(self):
        proto, transport = self.connect()
        proto.dataReceived(b"{not json\x03")
        (answer,) = answers(transport)
        self.assertEqual(answer["success"], False)
        self.assertTrue(answer["result"].startswith("Invalid LUXI request: not UTF-8 JSON ("))

    def test_oversized_frame_stops_reading_and_closes_after_earlier_answers(self):
        proto, transport = self.connect(max_frame=1024)
        proto.dataReceived(wire.encode_request("Slow", []) + b"x" * 2000)
        self.assertEqual(transport.producerState, "paused")
        proto.dataReceived(b"more garbage")  # discarded, not buffered
        self.assertEqual(proto.splitter.pending, 0)
        self.slow[0].callback("s")
        first, second = answers(transport)
        self.assertEqual(first["result"], "s")
        self.assertEqual(second["result"][0], "ProtocolError")
        self.assertTrue(transport.disconnecting)

    def test_stream_takes_over_as_the_transports_producer(self):
        from ganeti.master.jobs.events import EventBus, subscribe_events_method
        bus = EventBus(self.clock, history=10, first_serial=0)
        self.dispatcher = LuxiDispatcher({"SubscribeEvents": subscribe_events_method(bus)})
        proto, transport = self.connect(FlowLimits(max_pending=2))
        self.assertIs(transport.producer, proto)
        proto.dataReceived(wire.encode_request("SubscribeEvents", [None]))
        self.assertIs(transport.producer, proto.stream)
        proto.dataReceived(b"{}\x03" * 10)  # ignored, and reading goes on (to see the close)
        self.assertEqual(transport.producerState, "producing")
        self.assertEqual(len(answers(transport)), 1)


class LogBudgetTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.events = []
        self.budget = LogBudget(self.clock, Logger(observer=self.events.append), burst=3,
                                interval=60)

    def test_burst_then_silence_then_the_count(self):
        logged = [self.budget.warn("bad", "bad input {n}", n=i) for i in range(10)]
        self.assertEqual(logged, [True] * 3 + [False] * 7)
        self.clock.advance(60)
        self.assertTrue(self.budget.warn("bad", "bad input {n}", n=10))
        self.assertEqual(len(self.events), 4)
        self.assertEqual(self.events[-1]["suppressed"], 7)
        self.assertIn("7 similar messages were suppressed",
                      self.events[-1]["log_format"].format(**self.events[-1]))

    def test_kinds_have_separate_budgets(self):
        for _ in range(5):
            self.budget.warn("a", "a")
            self.budget.warn("b", "b")
        self.assertEqual(len(self.events), 6)

    def test_internal_errors_from_one_client_log_a_bounded_number_of_tracebacks(self):
        clock = Clock()
        dispatcher = LuxiDispatcher({"Crash": lambda: (_ for _ in ()).throw(KeyError("x"))},
                                    TABLE)
        factory = LuxiServerFactory(dispatcher, clock=clock)
        factory.budget = LogBudget(clock, Logger(observer=self.events.append), burst=3)
        for _ in range(20):  # reconnecting does not reset the budget
            proto = factory.buildProtocol(None)
            transport = StringTransport()
            proto.makeConnection(transport)
            proto.dataReceived(wire.encode_request("Crash", []) * 5)
            while clock.getDelayedCalls():
                clock.advance(0)
            self.assertEqual(len(answers(transport)), 5)
        self.assertEqual(len(self.events), 3)
        self.assertIsNotNone(self.events[0].get("log_failure"))

    def test_oversized_frames_on_many_connections_log_a_bounded_number_of_lines(self):
        clock = Clock()
        factory = LuxiServerFactory(LuxiDispatcher({}, TABLE), max_frame=1024, clock=clock)
        factory.budget = LogBudget(clock, Logger(observer=self.events.append), burst=3)
        for _ in range(20):
            proto = factory.buildProtocol(None)
            transport = StringTransport()
            proto.makeConnection(transport)
            proto.dataReceived(b"x" * 2000)
            self.assertTrue(transport.disconnecting)
        self.assertEqual(len(self.events), 3)
