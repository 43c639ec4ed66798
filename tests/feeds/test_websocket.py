"""The feed's WebSocket resource in memory: handshake through twisted.web, messages,
validation, close codes, keepalive on the injected clock, backpressure, origins."""

import json
import struct

from twisted.internet import reactor
from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.resource import Resource
from twisted.web.server import Site

from ganeti.feeds.relay import FeedRelay
from ganeti.feeds.websocket import FeedServerProtocol, feed_resource
from tests.feeds import wsframes
from tests.feeds.fakes import FakeEventSource, job

ADDRESS = IPv4Address("TCP", "127.0.0.1", 40000)


class Transport(StringTransport):
    """Like a TCP transport, unregistering without a producer is not an error."""

    def unregisterProducer(self):
        if self.producer is not None:
            super().unregisterProducer()


class Connection:
    """A client's view of one feed connection over a StringTransport."""

    def __init__(self, testcase, protocol, transport):
        self.testcase = testcase
        self.protocol = protocol
        self.transport = transport
        self.response = None
        self._offset = 0
        self._buffer = b""
        self.frames = []

    def read(self):
        data = self.transport.value()
        self._buffer += data[self._offset:]
        self._offset = len(data)
        if self.response is None:
            head, self._buffer = wsframes.split_handshake(self._buffer)
            if head is None:
                return []
            self.response = head
        frames, self._buffer = wsframes.parse_frames(self._buffer)
        self.frames.extend(frames)
        return frames

    def send(self, message, opcode=wsframes.OP_TEXT):
        payload = message if isinstance(message, bytes | str) else json.dumps(message)
        self.protocol.dataReceived(wsframes.client_frame(payload, opcode))

    def messages(self):
        """Messages of the text frames received since the last call."""
        return [m for op, payload in self.read() if op == wsframes.OP_TEXT
                for m in json.loads(payload)]

    def close_code(self):
        for op, payload in self.frames + self.read():
            if op == wsframes.OP_CLOSE:
                return struct.unpack("!H", payload[:2])[0]
        return None

    def lose(self):
        self.protocol.connectionLost(ConnectionDoneFailure())


def ConnectionDoneFailure():
    from twisted.internet.error import ConnectionDone
    from twisted.python.failure import Failure
    return Failure(ConnectionDone())


class WebSocketTestCase(SynchronousTestCase):
    options = {}

    def setUp(self):
        self.global_calls = set(reactor.getDelayedCalls())
        self.clock = Clock()
        self.source = FakeEventSource()
        self.relay = FeedRelay(self.clock, self.source, history=100, flush_interval=0.025)
        self.relay.start()
        self.source.connect(100)
        self.resource = feed_resource(self.relay, self.clock, **self.options)
        self.factory = self.resource._factory

    def tearDown(self):
        # Nothing may run on autobahn's or the global reactor's timers.
        self.assertEqual(set(reactor.getDelayedCalls()) - self.global_calls, set())

    def connect(self, headers=None):
        proto = self.factory.buildProtocol(ADDRESS)
        transport = Transport(peerAddress=ADDRESS)
        proto.makeConnection(transport)
        request, _ = wsframes.handshake_request(headers=headers)
        proto.dataReceived(request)
        conn = Connection(self, proto, transport)
        conn.read()
        return conn

    def subscribed(self, **fields):
        conn = self.connect()
        conn.send(dict({"type": "subscribe", "jobs": "all"}, **fields))
        self.assertEqual(conn.messages()[0]["type"], "subscribed")
        return conn


class ResourceTest(WebSocketTestCase):
    def test_served_by_twisted_web_takes_over_the_connection(self):
        root = Resource()
        two = Resource()
        root.putChild(b"2", two)
        two.putChild(b"feed", self.resource)
        site = Site(root, reactor=self.clock)
        channel = site.buildProtocol(ADDRESS)
        transport = Transport(peerAddress=ADDRESS)
        transport.protocol = channel
        channel.makeConnection(transport)
        self.assertIsNotNone(transport.producer)  # twisted.web's channel
        request, _ = wsframes.handshake_request()
        channel.dataReceived(request)
        proto = transport.protocol
        self.assertIsInstance(proto, FeedServerProtocol)
        # The protocol replaced twisted.web's channel as the transport's producer.
        self.assertIs(transport.producer, proto)
        self.assertTrue(transport.streaming)
        conn = Connection(self, proto, transport)
        conn.read()
        self.assertTrue(conn.response.startswith(b"HTTP/1.1 101"))
        conn.send({"type": "subscribe", "jobs": [1]})
        self.source.emit(job(101, job_id=1))
        self.assertEqual([m["type"] for m in conn.messages()], ["subscribed", "job"])
        conn.lose()
        self.assertEqual(self.relay.clients, set())
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_handshake_answer(self):
        conn = self.connect()
        self.assertTrue(conn.response.startswith(b"HTTP/1.1 101"))
        self.assertIn(b"Server: ganeti-rapi", conn.response)
        self.assertEqual(len(self.relay.clients), 1)


class MessagesTest(WebSocketTestCase):
    def test_subscribe_receive_unsubscribe(self):
        conn = self.subscribed(since=None)
        self.source.emit(job(101), job(102))
        messages = conn.messages()
        self.assertEqual([m["serial"] for m in messages], [101, 102])
        self.assertEqual(len(conn.frames), 2)  # subscribed, then one batch of two
        conn.send({"type": "unsubscribe"})
        self.clock.advance(1)
        self.source.emit(job(103))
        self.assertEqual(conn.messages(), [])

    def test_invalid_messages_get_an_error_and_the_connection_stays(self):
        conn = self.connect()
        conn.send("{not json")
        conn.send({"type": "subscribe", "jobs": "all", "status": ["finished"]})
        errors = conn.messages()
        self.assertEqual([m["type"] for m in errors], ["error", "error"])
        self.assertIn("unknown job status 'finished'", errors[1]["message"])
        self.assertFalse(self.transport_closed(conn))
        conn.send({"type": "subscribe", "jobs": "all"})
        self.assertEqual(conn.messages()[0]["type"], "subscribed")

    def transport_closed(self, conn):
        return conn.transport.disconnecting or conn.close_code() is not None

    def test_binary_frame_closes_with_1003(self):
        conn = self.connect()
        conn.send(b"\x00\x01", opcode=wsframes.OP_BINARY)
        self.assertEqual(conn.close_code(), 1003)
        # No answer to the closing handshake: dropped on the injected clock.
        self.clock.advance(self.factory.close_timeout)
        self.assertTrue(conn.transport.disconnecting)
        conn.lose()
        self.assertEqual(self.relay.clients, set())

    def test_oversized_message_closes_with_1009(self):
        conn = self.connect()
        conn.send(json.dumps({"type": "subscribe", "jobs": "all", "x": "y" * 70000}))
        self.assertEqual(conn.close_code(), 1009)
        self.clock.advance(self.factory.close_timeout)
        self.assertTrue(conn.transport.disconnecting)

    def test_client_close_is_answered(self):
        conn = self.subscribed()
        conn.send(struct.pack("!H", 1000), opcode=wsframes.OP_CLOSE)
        self.assertEqual(conn.close_code(), 1000)
        conn.lose()
        self.assertEqual(self.relay.clients, set())

    def test_same_filter_shares_one_frame(self):
        calls = []
        prepare = self.factory.prepareMessage

        def counting(payload, *args):
            calls.append(payload)
            return prepare(payload, *args)
        self.factory.prepareMessage = counting
        conns = [self.subscribed() for _ in range(5)]
        calls.clear()
        self.source.emit(job(101), job(102))
        self.assertEqual(len(calls), 1)
        frames = {conn.transport.value()[-200:] for conn in conns}
        self.assertEqual(len(frames), 1)

    def test_relay_stop_closes_with_1001(self):
        conn = self.subscribed()
        self.relay.stop()
        self.assertEqual(conn.close_code(), 1001)


class KeepaliveTest(WebSocketTestCase):
    options = {"ping_interval": 30, "ping_timeout": 10}

    def pings(self, conn):
        return [p for op, p in conn.read() if op == wsframes.OP_PING]

    def test_ping_pong(self):
        conn = self.connect()
        self.clock.advance(29)
        self.assertEqual(self.pings(conn), [])
        self.clock.advance(1)
        [payload] = self.pings(conn)
        conn.send(payload, opcode=wsframes.OP_PONG)
        self.clock.advance(10)
        self.assertFalse(conn.transport.disconnecting)
        self.clock.advance(20)
        self.assertEqual(len(self.pings(conn)), 1)

    def test_no_pong_drops_the_connection(self):
        conn = self.subscribed()
        self.clock.advance(30)
        self.assertEqual(len(self.pings(conn)), 1)
        self.clock.advance(9)
        self.assertFalse(conn.transport.disconnecting)
        self.clock.advance(1)
        self.assertTrue(conn.transport.disconnecting)  # aborted, no closing handshake
        conn.lose()
        self.assertEqual(self.relay.clients, set())
        self.assertEqual(self.clock.getDelayedCalls(), [])


    def test_a_client_that_stopped_reading_is_left_to_the_pause_limit(self):
        """Keepalive does not cut short the relay's pause limit (60 s here): a
        client whose transport is full is not pinged, nor dropped for a pong it
        could not send; it is closed at the pause limit, or pinged again once it
        reads."""
        conn = self.subscribed()
        conn.transport.producer.pauseProducing()
        self.clock.advance(30)
        self.assertEqual(self.pings(conn), [])
        self.clock.advance(29)
        self.assertFalse(conn.transport.disconnecting)
        conn.transport.producer.resumeProducing()
        self.clock.advance(1)  # the 60 s ping
        self.assertEqual(len(self.pings(conn)), 1)
        conn.transport.producer.pauseProducing()  # stops reading with the ping unread
        self.clock.advance(10)
        self.assertFalse(conn.transport.disconnecting)
        self.clock.advance(50)  # 60 s paused: the relay's limit
        self.assertTrue(conn.transport.disconnecting)

    def test_a_paused_client_that_reads_again_must_still_answer(self):
        conn = self.subscribed()
        self.clock.advance(30)
        self.assertEqual(len(self.pings(conn)), 1)
        conn.transport.producer.pauseProducing()
        self.clock.advance(10)  # no pong, but paused: not dropped
        self.assertFalse(conn.transport.disconnecting)
        conn.transport.producer.resumeProducing()
        self.clock.advance(30)  # pinged again
        self.assertEqual(len(self.pings(conn)), 1)
        self.clock.advance(10)  # reading, and no pong: dropped
        self.assertTrue(conn.transport.disconnecting)


class BackpressureTest(WebSocketTestCase):
    def test_full_transport_pauses_the_client_and_it_catches_up(self):
        steady = self.subscribed()
        slow = self.subscribed()
        slow.transport.producer.pauseProducing()
        self.assertTrue(slow.protocol.client.paused)
        for serial in range(101, 131):
            self.source.emit(job(serial))
            self.clock.advance(0.01)
        self.assertEqual(slow.messages(), [])
        slow.transport.producer.resumeProducing()
        self.clock.advance(0)
        self.assertEqual([m["serial"] for m in slow.messages()],
                         [m["serial"] for m in steady.messages()])
        self.assertTrue(slow.protocol.client.live)

    def test_stop_producing_forgets_the_client(self):
        conn = self.subscribed()
        conn.transport.producer.stopProducing()
        self.assertEqual(self.relay.clients, set())


class OriginTest(WebSocketTestCase):
    options = {"allowed_origins": ("https://dashboard.example.com/",)}

    def test_same_origin_and_listed_origins_are_accepted(self):
        for origin in ("https://localhost", "https://dashboard.example.com"):
            conn = self.connect(headers={"Origin": origin})
            self.assertTrue(conn.response.startswith(b"HTTP/1.1 101"), origin)

    def test_other_origins_are_refused(self):
        conn = self.connect(headers={"Origin": "https://evil.example.com"})
        self.assertTrue(conn.response.startswith(b"HTTP/1.1 403"), conn.response)
        conn = self.connect(headers={"Origin": "null"})  # autobahn refuses it itself
        self.assertTrue(conn.response.startswith(b"HTTP/1.1 400"), conn.response)
        self.assertEqual(self.relay.clients, set())
