"""Large answers: JSON encoded over several reactor turns (same text as json.dumps),
and bodies written as the transport drains, with the heavy-read ticket held until
the answer is out and a client that stops reading dropped."""

import json
import os

from twisted.internet import defer
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.limits import HeavyReads
from ganeti.rapi.output import SLICE_ITEMS, WRITE_SLICE, encode_json, needs_slices
from ganeti.rapi.routing import Method, Route
from ganeti.rapi.server import RapiApp
from ganeti.rapi.web import make_site
from tests.fakes.clock import TurnClock
from tests.rapi.test_server import ScriptedLuxi


def jobs(count):
    return [{"id": i, "status": "success", "ops": [{"OP_ID": "OP_TEST_DELAY", "x": "é"}],
             "ts": [i, 1.5], "none": None} for i in range(count)]


class EncodeTest(SynchronousTestCase):
    def setUp(self):
        self.clock = TurnClock()

    def turns(self, d):
        count = 0
        while not d.called:
            self.clock.turn()
            count += 1
        return count

    def test_small_values_at_once(self):
        for value in (2, "x", None, [1, 2], {"a": [1] * SLICE_ITEMS}, jobs(SLICE_ITEMS)):
            self.assertFalse(needs_slices(value))
            self.assertEqual(encode_json(value, self.clock),
                             json.dumps(value, separators=(",", ":")).encode())

    def test_long_list_over_several_turns_same_text(self):
        value = jobs(SLICE_ITEMS * 4 + 7)
        d = encode_json(value, self.clock)
        self.assertIsInstance(d, defer.Deferred)
        self.assertEqual(self.turns(d), 4)
        self.assertEqual(self.successResultOf(d),
                         json.dumps(value, separators=(",", ":")).encode())

    def test_query_answer_with_long_data(self):
        value = {"fields": [{"name": "id"}], "data": [[[0, i]] for i in range(1000)],
                 "empty": []}
        d = encode_json(value, self.clock)
        self.turns(d)
        self.assertEqual(json.loads(self.successResultOf(d)), value)
        self.assertEqual(encode_json({1: list(range(600))}, self.clock),  # not sliced
                         json.dumps({1: list(range(600))}, separators=(",", ":")).encode())

    def test_unserialisable_fails(self):
        d = encode_json([object()] * (SLICE_ITEMS + 1), self.clock)
        self.turns(d)
        self.failureResultOf(d, TypeError)


class LargeAnswerTest(SynchronousTestCase):
    def setUp(self):
        self.clock = TurnClock()
        self.clock.advance(1_700_000_000)
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        self.access = AccessLog(os.path.join(directory, "access.log"), self.clock)
        self.access.open()
        self.addCleanup(self.access.close)
        self.value = jobs(3000)
        self.runs = 0

        def get_jobs(request):
            self.runs += 1
            return self.value

        self.heavy = HeavyReads(per_address=2, max_running=1)
        routes = [Route("/2/jobs", {"GET": Method(get_jobs, "jobs", heavy=True)})]
        app = RapiApp(routes, ScriptedLuxi(), self.clock,
                      UsersFile(os.path.join(directory, "users"), self.clock),
                      heavy=self.heavy)
        self.site = make_site(app, self.access, self.clock)

    def connect(self, host="203.0.113.5"):
        address = IPv4Address("TCP", host, 40000)
        proto = self.site.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        proto.makeConnection(transport)
        self.addCleanup(lambda: proto.wrappedProtocol and proto.connectionLost(
            Failure(ConnectionDone())))
        return proto, transport

    def request(self, proto):
        proto.dataReceived(b"GET /2/jobs HTTP/1.1\r\nHost: r\r\n\r\n")

    def body_of(self, raw):
        head, _, body = raw.partition(b"\r\n\r\n")
        return head, body

    def test_body_is_written_as_the_transport_drains(self):
        proto, transport = self.connect()
        channel = proto.wrappedProtocol
        self.request(proto)
        channel.pauseProducing()  # the transport's buffer is full
        self.clock.advance(0)  # run, encode in slices, start writing
        expected = json.dumps(self.value, separators=(",", ":")).encode()
        self.assertGreater(len(expected), 4 * WRITE_SLICE)
        self.assertEqual(transport.value(), b"")  # nothing written while paused
        self.assertEqual(self.heavy.in_flight, {"203.0.113.5": 1})
        channel.resumeProducing()
        head, body = self.body_of(transport.value())
        self.assertIn(b"Content-Length: %d" % len(expected), head)
        written = len(body)
        self.assertTrue(0 < written < len(expected))  # a few slices per turn
        self.clock.turn()
        self.assertGreater(len(self.body_of(transport.value())[1]), written)
        while len(self.body_of(transport.value())[1]) < len(expected):
            self.clock.turn()
        self.assertEqual(self.body_of(transport.value())[1], expected)
        self.assertEqual(self.heavy.in_flight, {})  # the ticket is free once it is out
        self.assertFalse(transport.disconnecting)  # keep-alive goes on

    def test_client_that_stops_reading_is_dropped_and_its_ticket_freed(self):
        proto, transport = self.connect()
        channel = proto.wrappedProtocol
        self.request(proto)
        while not transport.value():  # run, encode, write the first slices
            self.clock.turn()
        channel.pauseProducing()
        self.assertEqual(self.heavy.in_flight, {"203.0.113.5": 1})
        self.clock.advance(59)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(1)
        self.assertTrue(transport.disconnected)
        proto.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(self.heavy.in_flight, {})

    def test_disconnect_while_writing_frees_the_ticket(self):
        proto, transport = self.connect()
        self.request(proto)
        while not transport.value():
            self.clock.turn()
        self.assertEqual(self.heavy.in_flight, {"203.0.113.5": 1})
        proto.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(self.heavy.in_flight, {})
        self.assertEqual([c for c in self.clock.getDelayedCalls() if "_write" in repr(c)], [])

    def test_one_body_for_every_coalesced_request(self):
        conns = [self.connect() for _ in range(2)]
        for proto, _ in conns:
            self.request(proto)
        self.clock.advance(0)
        bodies = {self.body_of(t.value())[1] for _, t in conns}
        self.assertEqual(len(bodies), 1)
        self.assertEqual(self.runs, 1)
