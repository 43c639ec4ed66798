"""Feed clients that misbehave, in memory on a fake clock: deeply nested messages get
the protocol's error answer and the connection stays; a client that sends pings and
never reads does not make the server queue pongs; dropped connections are logged at
most once a minute per address."""

from twisted.internet.address import IPv4Address
from twisted.logger import globalLogPublisher

from ganeti.feeds import protocol
from ganeti.feeds.protocol import FeedProtocolError
from tests.feeds import wsframes
from tests.feeds.test_websocket import Connection, Transport, WebSocketTestCase


class DeepMessageTest(WebSocketTestCase):
    def test_parser_refuses_deep_nesting_with_a_protocol_error(self):
        for depth in (101, 30_000):
            payload = b'{"type":"subscribe","jobs":' + b"[" * depth + b"]" * depth + b"}"
            with self.assertRaises(FeedProtocolError) as caught:
                protocol.parse_client_message(payload)
            self.assertIn("nested too deeply", str(caught.exception))

    def test_deep_message_is_answered_and_the_connection_stays(self):
        conn = self.connect()
        conn.send("[" * 30_000 + "]" * 30_000)  # 60,000 bytes: within the size limit
        [answer] = conn.messages()
        self.assertEqual(answer["type"], "error")
        self.assertIn("nested too deeply", answer["message"])
        self.assertFalse(conn.transport.disconnecting)
        self.assertIsNone(conn.close_code())
        conn.send({"type": "subscribe", "jobs": "all"})
        self.assertEqual(conn.messages()[0]["type"], "subscribed")


class PingFloodTest(WebSocketTestCase):
    def pongs(self, conn):
        return [p for op, p in conn.read() if op == wsframes.OP_PONG]

    def test_pings_are_not_answered_while_the_transport_is_full(self):
        conn = self.subscribed()
        conn.send(b"one", opcode=wsframes.OP_PING)
        self.assertEqual(self.pongs(conn), [b"one"])
        conn.transport.producer.pauseProducing()  # the client stopped reading
        before = len(conn.transport.value())
        for _ in range(10_000):
            conn.send(b"x" * 125, opcode=wsframes.OP_PING)
        self.assertEqual(len(conn.transport.value()), before)  # nothing queued
        self.assertEqual(self.factory.stats["pongs_skipped"], 10_000)
        conn.transport.producer.resumeProducing()
        conn.send(b"two", opcode=wsframes.OP_PING)
        self.assertEqual(self.pongs(conn), [b"two"])


class DropLogTest(WebSocketTestCase):
    options = {"ping_interval": 30, "ping_timeout": 10}

    def connect_from(self, host):
        address = IPv4Address("TCP", host, 40000)
        proto = self.factory.buildProtocol(address)
        transport = Transport(peerAddress=address)
        proto.makeConnection(transport)
        request, _ = wsframes.handshake_request()
        proto.dataReceived(request)
        conn = Connection(self, proto, transport)
        conn.read()
        return conn

    def test_drops_are_logged_once_a_minute_per_address(self):
        events = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        conns = [self.connect_from("203.0.113.7") for _ in range(20)]
        conns.append(self.connect_from("198.51.100.8"))
        self.clock.advance(30)  # pings
        self.clock.advance(10)  # no pong from anybody: all dropped
        for conn in conns:
            self.assertTrue(conn.transport.disconnecting)
            conn.lose()
        drops = [e for e in events
                 if "Dropping feed connection" in str(e.get("log_format", ""))]
        self.assertEqual(sorted(e["peer"] for e in drops), ["198.51.100.8", "203.0.113.7"])
        self.assertEqual(self.factory.stats["drops_not_logged"], 19)
        self.assertEqual(self.relay.clients, set())
