"""The confd client over an in-memory UDP transport and a fake clock."""

import json
import os
import random
import shutil
import socket
import tempfile

from twisted.internet import task
from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import client, protocol
from ganeti.core.paths import Paths

KEY = b"0123456789abcdef0123456789abcdef\n"
NOW = 1_700_000_000.0
PEERS = ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5",
         "192.0.2.6", "192.0.2.7", "192.0.2.8"]


class FakeUDPPort:
    def __init__(self, proto):
        self.proto = proto
        self.sent = []
        self.stopped = False

    def write(self, data, addr):
        self.sent.append((data, addr))

    def stopListening(self):
        self.stopped = True


class FakeReactor(task.Clock):
    def __init__(self):
        super().__init__()
        self.advance(NOW)
        self.ports = []

    def listenUDP(self, port, proto, interface=""):
        p = FakeUDPPort(proto)
        p.interface = interface
        self.ports.append(p)
        proto.makeConnection(p)
        return p


def reply_datagram(rsalt, status=0, answer="x", serial=1, key=KEY):
    return protocol.pack_reply(key, status, answer, serial, rsalt)


class ClientTestCase(SynchronousTestCase):
    def setUp(self):
        self.reactor = FakeReactor()

    def make(self, peers=PEERS[:3], **kwargs):
        kwargs.setdefault("rng", random.Random(4))
        return client.ConfdClient(self.reactor, KEY, peers, port=11814, **kwargs)

    def start(self, c, *args, **kwargs):
        results = []
        d = c.request(*args, **kwargs)
        d.addBoth(results.append)
        port = self.reactor.ports[-1]
        requests = []
        for data, addr in port.sent:
            text, salt = protocol.unpack(KEY, data)
            requests.append((protocol.parse_request(text), salt, addr))
        port.sent.clear()
        return results, requests

    def answer(self, c, request, peer, **kwargs):
        self.reactor.ports[-1].proto.datagramReceived(
            reply_datagram(request.rsalt, **kwargs), (peer, 11814))


class RequestTest(ClientTestCase):
    def test_request_is_signed_and_salted(self):
        c = self.make()
        results, requests = self.start(c, "node-role", "node1.example.com")
        self.assertEqual(len(requests), 3)
        self.assertEqual({addr for _, _, addr in requests},
                         {(p, 11814) for p in PEERS[:3]})
        req, salt, _ = requests[0]
        self.assertEqual(salt, str(int(NOW)))
        self.assertEqual((req.type, req.query), (1, "node1.example.com"))
        self.assertEqual(len({r.rsalt for r, _, _ in requests}), 1)
        self.assertEqual(results, [])

    def test_types_by_name_number_and_ganeti_constant(self):
        self.assertEqual(client.request_type("ping"), 0)
        self.assertEqual(client.request_type("11"), 11)
        self.assertEqual(client.request_type(7), 7)
        self.assertEqual(client.request_type("NODE_ROLE_BYNAME"), 1)
        self.assertEqual(client.request_type("INSTANCE_DISKS"), 9)
        for bad in ("pong", "12", -1, 99):
            self.assertRaises(client.ConfdError, client.request_type, bad)

    def test_dict_query_keys_become_strings(self):
        c = self.make()
        _, requests = self.start(c, "cluster-master", {3: ["0", "1"]})
        self.assertEqual(requests[0][0].query, {"3": [0, 1]})

    def test_bad_request_fails_the_deferred(self):
        c = self.make()
        self.failureResultOf(c.request("nope"), client.ConfdError)
        self.failureResultOf(c.request("ping", ["a", "list"]), client.ConfdError)

    def test_ipv6_peers_listen_on_ipv6(self):
        c = client.ConfdClient(self.reactor, KEY, ["2001:db8::1"])
        c.request("ping")
        self.assertEqual(self.reactor.ports[-1].interface, "::")
        self.assertRaises(client.ConfdError, client.ConfdClient, self.reactor, KEY,
                          ["2001:db8::1", "192.0.2.1"])

    def test_key_must_be_bytes(self):
        self.assertRaises(TypeError, client.ConfdClient, self.reactor, "text", PEERS)


class CoverageTest(ClientTestCase):
    def test_default_is_at_most_six(self):
        c = self.make(PEERS)
        _, requests = self.start(c, "ping")
        self.assertEqual(len(requests), 6)
        c = self.make(PEERS[:2])
        _, requests = self.start(c, "ping")
        self.assertEqual(len(requests), 2)

    def test_all_and_explicit(self):
        c = self.make(PEERS)
        _, requests = self.start(c, "ping", coverage=-1)
        self.assertEqual(len(requests), 8)
        _, requests = self.start(c, "ping", coverage=3)
        self.assertEqual(len(requests), 3)

    def test_too_many_or_invalid(self):
        c = self.make(PEERS[:3])
        self.failureResultOf(c.request("ping", coverage=4), client.ConfdError)
        self.failureResultOf(c.request("ping", coverage=-2), client.ConfdError)
        self.failureResultOf(self.make([]).request("ping"), client.ConfdError)

    def test_peers_are_shuffled(self):
        chosen = {tuple(client.choose_peers(PEERS, 3, random.Random(seed))) for seed in range(20)}
        self.assertGreater(len(chosen), 1)

    def test_needed_replies(self):
        self.assertEqual([client.needed_replies(n) for n in range(1, 10)],
                         [1, 2, 2, 3, 3, 4, 4, 5, 5])


class ReplyTest(ClientTestCase):
    def test_waits_for_enough_replies_and_takes_highest_serial(self):
        c = self.make(PEERS[:4])  # 4 peers: 3 replies needed
        results, requests = self.start(c, "config-query", "/cluster/name")
        req = requests[0][0]
        self.answer(c, req, PEERS[0], answer="old", serial=4)
        self.answer(c, req, PEERS[1], answer="new", serial=5)
        self.assertEqual(results, [])
        self.answer(c, req, PEERS[2], answer="old", serial=4)
        (r,) = results
        self.assertEqual((r.status, r.answer, r.serial, r.server), (0, "new", 5, PEERS[1]))
        self.assertTrue(r.consistent)
        self.assertFalse(r.timed_out)
        self.assertEqual(r.servers, PEERS[:3])
        self.assertEqual(r.sent, 4)
        # the expiry timer was cancelled
        self.assertEqual(self.reactor.getDelayedCalls(), [])

    def test_disagreement_at_the_same_serial(self):
        c = self.make(PEERS[:2])
        results, requests = self.start(c, "node-role", "n1")
        req = requests[0][0]
        self.answer(c, req, PEERS[0], answer=1, serial=7)
        self.answer(c, req, PEERS[1], answer=0, serial=7)
        (r,) = results
        self.assertFalse(r.consistent)
        self.assertEqual((r.answer, r.server), (1, PEERS[0]))

    def test_lower_serial_disagreement_is_fine(self):
        c = self.make(PEERS[:2])
        results, requests = self.start(c, "node-role", "n1")
        req = requests[0][0]
        self.answer(c, req, PEERS[0], answer=1, serial=6)
        self.answer(c, req, PEERS[1], answer=0, serial=7)
        self.assertTrue(results[0].consistent)
        self.assertEqual(results[0].answer, 0)

    def test_expiry(self):
        c = self.make(PEERS[:3], expiry=2.5)
        results, requests = self.start(c, "ping")
        self.answer(c, requests[0][0], PEERS[0], answer=2, serial=0)
        self.reactor.advance(2.4)
        self.assertEqual(results, [])
        self.reactor.advance(0.1)
        (r,) = results
        self.assertTrue(r.timed_out)
        self.assertEqual((r.answer, r.servers), (2, [PEERS[0]]))
        # a late reply for the expired request is dropped
        self.answer(c, requests[0][0], PEERS[1], answer=2, serial=0)
        self.assertEqual(len(results), 1)

    def test_expiry_without_any_reply(self):
        c = self.make(PEERS[:1])
        results, _ = self.start(c, "ping")
        self.reactor.advance(client.DEFAULT_EXPIRY)
        (r,) = results
        self.assertEqual((r.status, r.answer, r.serial, r.server, r.replies),
                         (None, None, None, None, ()))
        self.assertTrue(r.timed_out)
        self.assertFalse(r.answered)

    def test_mis_signed_and_unknown_salt_replies_are_dropped(self):
        c = self.make(PEERS[:1])
        results, requests = self.start(c, "ping")
        proto = self.reactor.ports[-1].proto
        rsalt = requests[0][0].rsalt
        proto.datagramReceived(reply_datagram(rsalt, key=b"wrong key"), (PEERS[0], 11814))
        proto.datagramReceived(reply_datagram("some-other-salt"), (PEERS[0], 11814))
        proto.datagramReceived(b"garbage", (PEERS[0], 11814))
        proto.datagramReceived(protocol.sign(KEY, json.dumps({"protocol": 1}), rsalt),
                               (PEERS[0], 11814))
        self.assertEqual(results, [])
        self.answer(c, requests[0][0], PEERS[0], answer=2, serial=0)
        self.assertEqual(results[0].answer, 2)

    def test_duplicate_replies_from_one_server_count_once(self):
        c = self.make(PEERS[:2])
        results, requests = self.start(c, "ping")
        self.answer(c, requests[0][0], PEERS[0], answer=2, serial=0)
        self.answer(c, requests[0][0], PEERS[0], answer=2, serial=0)
        self.assertEqual(results, [])

    def test_concurrent_requests_are_kept_apart(self):
        c = self.make(PEERS[:1])
        r1, q1 = self.start(c, "ping")
        r2, q2 = self.start(c, "cluster-master")
        self.assertEqual(len(self.reactor.ports), 1)  # one UDP port for both
        self.answer(c, q2[0][0], PEERS[0], answer="master", serial=3)
        self.assertEqual((r1, r2[0].answer), ([], "master"))
        self.answer(c, q1[0][0], PEERS[0], answer=2, serial=0)
        self.assertEqual(r1[0].answer, 2)

    def test_close_expires_outstanding_requests(self):
        c = self.make(PEERS[:1])
        results, _ = self.start(c, "ping")
        self.successResultOf(c.close())
        self.assertTrue(results[0].timed_out)
        self.assertTrue(self.reactor.ports[-1].stopped)
        self.assertEqual(self.reactor.getDelayedCalls(), [])


def make_node(testcase, peers, key=KEY):
    """A node directory with ssconf master_candidates_ips and hmac.key; its Paths."""
    tmp = tempfile.mkdtemp()
    testcase.addCleanup(shutil.rmtree, tmp)
    paths = Paths.for_node(os.path.join(tmp, "node1.example.com"), "node1.example.com")
    os.makedirs(os.path.dirname(paths.ssconf_file("master_candidates_ips")))
    with open(paths.ssconf_file("master_candidates_ips"), "w") as f:
        f.write("".join(p + "\n" for p in peers))
    with open(paths.hmac_key, "wb") as f:
        f.write(key)
    return paths


class FromPathsTest(SynchronousTestCase):
    def test_reads_ssconf_and_key(self):
        paths = make_node(self, ["192.0.2.1", "192.0.2.2"])
        c = client.ConfdClient.from_paths(FakeReactor(), paths)
        self.assertEqual((c.peers, c.hmac_key, c.port), (["192.0.2.1", "192.0.2.2"], KEY, 1814))


class BlockingTest(SynchronousTestCase):
    """query_blocking against a tiny echo server on loopback sockets (no sleeping:
    the server answers from a select loop in the same thread via a fake clock)."""

    def test_no_peer_answers_before_the_deadline(self):
        times = iter([NOW, NOW + 0.2, NOW + 5])
        r = client.query_blocking(["127.0.0.1"], KEY, "ping", port=self.closed_port(),
                                  timeout=0.1, now=lambda: next(times))
        self.assertTrue(r.timed_out)
        self.assertFalse(r.answered)

    def closed_port(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port

    def test_answer_from_a_loopback_server(self):
        server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(server.close)
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        sock_sendto = socket.socket.sendto
        # reply synchronously as soon as the client sends, from the same thread
        sent = []

        class ReplyingSocket(socket.socket):
            def sendto(self, data, addr):
                n = sock_sendto(self, data, addr)
                request, addr_from = server.recvfrom(65536)
                text, _ = protocol.unpack(KEY, request)
                req = protocol.parse_request(text)
                sent.append(req)
                server.sendto(reply_datagram(req.rsalt, answer="node1", serial=9), addr_from)
                return n

        self.patch(client.socket, "socket", ReplyingSocket)
        r = client.query_blocking(["127.0.0.1"], KEY, "cluster-master", port=port,
                                  timeout=5)
        self.assertEqual((r.status, r.answer, r.serial, r.server), (0, "node1", 9, "127.0.0.1"))
        self.assertFalse(r.timed_out)
        self.assertEqual(sent[0].type, 3)
