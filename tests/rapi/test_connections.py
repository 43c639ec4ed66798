"""Connections of hostile clients, in memory on a fake clock: per-address shares of
the client limit with places kept for new addresses, the deadline for a complete
request (idle new connections, requests sent a byte at a time), and connections
taken over by the WebSocket feed giving their place back."""

import os

from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from twisted.web import resource, server

from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.limits import ConnectionGate
from ganeti.rapi.routing import Method, Route
from ganeti.rapi.server import RapiApp
from ganeti.rapi.web import make_site
from tests.rapi.test_server import ScriptedLuxi


def peer(host, port=40000):
    return IPv4Address("TCP", host, port)


class ConnectionGateTest(SynchronousTestCase):
    def test_per_address_share(self):
        gate = ConnectionGate(max_clients=10, per_address=3, reserve=2)
        self.assertEqual([gate.admit("a") for _ in range(3)], [None] * 3)
        self.assertIn("3 connections from this address", gate.admit("a"))
        self.assertIsNone(gate.admit("b"))  # another address is not affected
        gate.release("a")
        self.assertIsNone(gate.admit("a"))
        self.assertEqual((gate.open, gate.by_address), (4, {"a": 3, "b": 1}))

    def test_last_places_are_kept_for_new_addresses(self):
        gate = ConnectionGate(max_clients=10, per_address=4, reserve=3)
        for host in ("a", "a", "a", "a", "b", "b", "b"):
            self.assertIsNone(gate.admit(host))
        # 7 open = max_clients - reserve: addresses with a connection wait ...
        self.assertIn("kept for addresses without a connection", gate.admit("b"))
        # ... new addresses still get in, one place each, until the limit
        for host in ("c", "d", "e"):
            self.assertIsNone(gate.admit(host))
        self.assertIn("10 clients connected", gate.admit("f"))
        for host in ("c", "d", "e", "b"):
            gate.release(host)
        self.assertEqual(gate.open, 6)
        self.assertIsNone(gate.admit("b"))

    def test_release_of_an_unknown_address_is_harmless(self):
        gate = ConnectionGate(max_clients=2, per_address=2, reserve=0)
        gate.release("nobody")
        self.assertEqual(gate.open, 0)

    def test_bad_limits(self):
        self.assertRaises(ValueError, ConnectionGate, 0)
        self.assertEqual(ConnectionGate(5, per_address=50, reserve=50).reserve, 4)


class FakeWebSocketResource(resource.Resource):
    """Takes the connection over as autobahn's WebSocketResource does."""

    isLeaf = True

    def __init__(self, protocols):
        super().__init__()
        self.protocols = protocols

    def render(self, request):
        from twisted.internet.protocol import Protocol
        from twisted.protocols.policies import ProtocolWrapper

        transport, request.channel.transport = request.channel.transport, None
        assert isinstance(transport, ProtocolWrapper)
        proto = Protocol()
        transport.wrappedProtocol = proto
        proto.makeConnection(transport)
        self.protocols.append(proto)
        return server.NOT_DONE_YET


class SiteCase(SynchronousTestCase):
    """A RAPI site on a fake clock; connections over StringTransports."""

    gate = {"max_clients": 20, "per_address": 4, "reserve": 5}

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        self.users = UsersFile(os.path.join(directory, "users"), self.clock)
        self.access = AccessLog(os.path.join(directory, "access.log"), self.clock)
        self.access.open()
        self.addCleanup(self.access.close)
        self.luxi = ScriptedLuxi()
        self.feeds = []
        routes = [Route("/version", {"GET": Method(lambda r: 2, "version")}),
                  Route("/2/info", {"GET": Method(
                      lambda r: r.luxi.call("QueryClusterInfo"), "info")})]
        self.app = RapiApp(routes, self.luxi, self.clock, self.users,
                           websocket=lambda: FakeWebSocketResource(self.feeds))
        self.site = make_site(self.app, self.access, self.clock, timeout=60, **self.gate)
        self.events = []
        globalLogPublisher.addObserver(self.events.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def connect(self, host="198.51.100.7"):
        proto = self.site.buildProtocol(peer(host))
        transport = StringTransport(peerAddress=peer(host))
        proto.makeConnection(transport)
        self.addCleanup(self.lose, proto)
        return proto, transport

    @staticmethod
    def lose(proto):
        proto.connectionLost(Failure(ConnectionDone()))

    def send(self, proto, path="/version", extra=b""):
        proto.dataReceived(f"GET {path} HTTP/1.1\r\nHost: rapi\r\n".encode() + extra +
                           b"\r\n")
        self.clock.advance(0)

    def answered(self, transport):
        return transport.value().startswith(b"HTTP/1.1 200")

    def logged(self, text):
        return [e for e in self.events if text in str(e.get("log_format", ""))]


class MakeSiteTest(SiteCase):
    def test_shares_follow_the_client_limit(self):
        for max_clients, share, kept in ((1000, 100, 100), (50, 5, 5), (5, 1, 0)):
            gate = make_site(self.app, self.access, self.clock, max_clients=max_clients).gate
            self.assertEqual((gate.max_clients, gate.per_address, gate.reserve),
                             (max_clients, share, kept))
        gate = make_site(self.app, self.access, self.clock, per_address=7, reserve=3).gate
        self.assertEqual((gate.max_clients, gate.per_address, gate.reserve), (1000, 7, 3))


class ConnectionShareTest(SiteCase):
    def test_one_address_cannot_take_more_than_its_share(self):
        held = [self.connect("203.0.113.1") for _ in range(4)]
        refused = [self.connect("203.0.113.1") for _ in range(3)]
        for _, transport in refused:
            self.assertTrue(transport.disconnected)  # aborted at once
            self.assertEqual(transport.value(), b"")
        for _, transport in held:
            self.assertFalse(transport.disconnecting)
        self.assertEqual(self.site.gate.by_address, {"203.0.113.1": 4})
        # a new address still gets in and is served
        proto, transport = self.connect("203.0.113.2")
        self.send(proto)
        self.assertTrue(self.answered(transport))
        # refusals are logged once per address and minute
        self.assertEqual(len(self.logged("Refusing a connection")), 1)
        self.clock.advance(61)
        self.connect("203.0.113.1")
        self.assertEqual(len(self.logged("Refusing a connection")), 2)

    def test_closing_gives_the_place_back(self):
        held = [self.connect("203.0.113.1") for _ in range(4)]
        self.lose(held[0][0])
        self.lose(held[0][0])  # a second notice changes nothing
        proto, transport = self.connect("203.0.113.1")
        self.assertFalse(transport.disconnecting)
        self.assertEqual(self.site.gate.open, 4)

    def test_new_addresses_get_in_when_the_daemon_is_nearly_full(self):
        # 15 of 20 places taken by four addresses; the last 5 are kept for new ones
        for index in range(15):
            self.connect(f"203.0.113.{index % 4}")
        self.assertTrue(self.connect("203.0.113.0")[1].disconnected)
        for index in range(5):
            proto, transport = self.connect(f"198.51.100.{100 + index}")
            self.send(proto)
            self.assertTrue(self.answered(transport))
        self.assertTrue(self.connect("198.51.100.200")[1].disconnected)  # now full

    def test_a_feed_connection_gives_its_place_back_when_it_closes(self):
        proto, transport = self.connect("203.0.113.9")
        proto.dataReceived(b"GET /2/feed HTTP/1.1\r\nHost: r\r\nUpgrade: websocket\r\n\r\n")
        [feed] = self.feeds
        self.assertIs(proto.wrappedProtocol, feed)
        self.assertEqual(self.site.gate.by_address, {"203.0.113.9": 1})
        self.clock.advance(3600)  # a feed is not a request in progress: no deadline
        self.assertFalse(transport.disconnecting)
        self.lose(proto)
        self.assertEqual(self.site.gate.by_address, {})


class RequestDeadlineTest(SiteCase):
    def test_idle_new_connection_is_closed_after_ten_seconds(self):
        proto, transport = self.connect()
        self.clock.advance(9.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnected)  # aborted: nothing to say to it
        self.assertEqual(len(self.logged("no complete request")), 1)
        self.lose(proto)
        self.assertEqual(self.site.gate.open, 0)

    def test_a_request_sent_slowly_is_cut_off(self):
        proto, transport = self.connect()
        for byte in b"GET /version HTTP/1.1\r\nHost: r\r\n":
            proto.dataReceived(bytes([byte]))  # 32 bytes, 0.4 s apart
            self.clock.advance(0.4)
        self.assertTrue(transport.disconnected)
        self.assertEqual(transport.value(), b"")

    def test_keep_alive_connection_idles_for_the_idle_timeout(self):
        proto, transport = self.connect()
        self.clock.advance(5)
        self.send(proto)
        self.assertTrue(self.answered(transport))
        self.clock.advance(59)
        self.assertFalse(transport.disconnecting)  # idle between requests: 60 s
        self.send(proto, "/2/info")  # the next request restarts the idle clock
        self.clock.advance(59)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(1)
        self.assertTrue(transport.disconnecting)

    def test_idle_timeouts_are_logged_once_per_address_and_minute(self):
        conns = [self.connect("203.0.113.4") for _ in range(4)]
        for proto, _ in conns:
            self.send(proto)
        self.clock.advance(60)
        for _, transport in conns:
            self.assertTrue(transport.disconnecting)
            self.assertFalse(transport.disconnected)
        self.assertEqual(len(self.logged("Closing idle connections")), 1)
        self.assertEqual(self.logged("Timing out client"), [])  # twisted.web's own line
        self.clock.advance(15)  # a client that does not close is aborted
        for _, transport in conns:
            self.assertTrue(transport.disconnected)
        self.assertEqual(self.logged("Forcibly timing out"), [])

    def test_later_requests_have_the_deadline_from_their_first_byte(self):
        proto, transport = self.connect()
        self.send(proto)
        self.clock.advance(30)
        proto.dataReceived(b"GET /ver")
        self.clock.advance(9.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnected)

    def test_a_slow_answer_is_not_cut_off(self):
        self.luxi.pending["QueryClusterInfo"] = None
        proto, transport = self.connect()
        self.send(proto, "/2/info")
        self.clock.advance(30)  # masterd is slow: the request arrived, no deadline
        self.assertFalse(transport.disconnecting)
        self.luxi.pending["QueryClusterInfo"].callback({"late": True})
        self.assertTrue(self.answered(transport))

    def test_pipelined_partial_request_gets_the_deadline(self):
        self.luxi.pending["QueryClusterInfo"] = None
        proto, transport = self.connect()
        proto.dataReceived(b"GET /2/info HTTP/1.1\r\nHost: r\r\n\r\nGET /vers")
        self.clock.advance(20)  # the first request waits for masterd
        self.assertFalse(transport.disconnecting)
        self.luxi.pending["QueryClusterInfo"].callback({})
        self.clock.advance(9.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnected)
