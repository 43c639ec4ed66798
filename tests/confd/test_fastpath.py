"""The fast paths of confd: envelope reading, reply signing, the answer cache, direct send.

Each is checked against the plain implementation it replaces: the same
result for every input, never a weaker check.
"""

import json
import random
import socket

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import protocol
from ganeti.confd.server import AnswerCache, ConfdProtocol
from ganeti.core import constants as gc
from tests.confd.test_server import KEY, NOW, answerer, confd_config_dict, request

SAMPLES = [
    '{}', ' {} ', '{"a":"b"}', ' { "a" : "b" , "c":"d" }\n', '{"a":"b","a":"c"}',
    '{"msg":"{\\"protocol\\":1}","salt":"1700000000","hmac":"ab"}',
    '{"a":"\\u00e9\\ud83d\\ude00\\n\\t\\\\\\/"}', '{"a":"\\ud800"}', '{"é":"ü"}',
    # not flat objects of strings: the fast path declines, json.loads decides
    '{"a":1}', '{"a":null}', '{"a":["b"]}', '{"a":{"b":"c"}}', '[]', '"a"', '',
    '{"a":"b",}', '{"a" "b"}', '{"a":"b"', '{"a":"b"}x', '{"a":"\x01"}', '{"a":"\\x"}',
    '{"a":"b"}{"c":"d"}', '{,}', '{"a":"\\"}', '\u00a0{}', '{"a":"b"\u2028}',
    # the form sign() writes, and near misses of it
    '{"msg":"{\\"a\\":1}","salt":"1700000000","hmac":"ab12"}',
    '{"msg":"m","salt":"1","hmac":"h"} ', '{"msg":"m","salt":"\\u0031","hmac":"h"}',
    '{"msg":"m","salt":"\x01","hmac":"h"}', '{"msg":"m\x01","salt":"1","hmac":"h"}',
    '{"msg":"m","salt":"1","hmac":"h","msg":"n"}', '{"msg":"m","salt":"1","hmac":"h"',
    '{"msg":"m","hmac":"h","salt":"1"}', '{"msg":"m,"salt":"1","hmac":"h"}',
]


def old_sign(key, msg, salt):
    """The envelope as it was built before the fast path (the reference)."""
    envelope = {"msg": msg, "salt": salt, "hmac": protocol.hmac_hex(key, msg, salt)}
    return protocol.FOURCC + json.dumps(envelope, separators=(",", ":")).encode("utf-8")


def loads_or_none(text):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return value
    return None


class FlatObjectTest(SynchronousTestCase):
    def test_same_result_as_json_loads(self):
        for text in SAMPLES:
            self.assertEqual(protocol.flat_string_object(text), loads_or_none(text), text)

    def test_random_texts_agree_with_json_loads(self):
        rnd = random.Random(7)
        alphabet = '{}[]":,\\ \tab01\nu"'
        base = [json.dumps({"msg": "x\"y{", "salt": "1", "hmac": "f"}), '{"a":"b"}',
                protocol.sign(KEY, '{"q":"x\\y"}', "1700000000")[4:].decode()]
        for _ in range(20000):
            text = list(rnd.choice(base))
            for _ in range(rnd.randint(1, 3)):
                i = rnd.randrange(len(text) + 1)
                if rnd.random() < 0.5 and text:
                    del text[min(i, len(text) - 1)]
                else:
                    text.insert(i, rnd.choice(alphabet))
            s = "".join(text)
            self.assertEqual(protocol.flat_string_object(s), loads_or_none(s), s)

    def test_nesting_never_reaches_the_parser(self):
        for text in ('{"a":' + "[" * 100_000 + '}', '{"a":"b","c":' + "{" * 50_000,
                     "[" * 200_000):
            self.assertIsNone(protocol.flat_string_object(text))

    def test_unpack_still_classifies_bad_envelopes(self):
        good = json.loads(protocol.sign(KEY, "m", "s")[4:])
        for data, reason in (
                (b"plj0" + b"\xff", "envelope is not JSON"),
                (b"plj0{", "envelope is not JSON"),
                (b'plj0{"msg":"m","salt":"s","hmac":"x","n":[1]}',
                 "envelope is not a flat object"),
                (b'plj0{"msg":"m","salt":"s","hmac":1}',
                 "envelope lacks string msg, salt or hmac"),
                (b'plj0{"msg":"m","salt":"s","hmac":"\xc3\xa9"}', "bad hmac"),
                (b"plj0[]", "envelope is not an object")):
            err = self.assertRaises(BadMessageType, protocol.unpack, KEY, data)
            self.assertEqual(err.reason, reason, data)
        # scalar extras beside a good signature are still accepted (as before)
        extra = json.dumps(dict(good, extra=1)).encode()
        self.assertEqual(protocol.unpack(KEY, b"plj0" + extra), ("m", "s"))


BadMessageType = protocol.BadMessage


class SignTest(SynchronousTestCase):
    def test_byte_identical_to_the_plain_envelope(self):
        for msg, salt in (("m", "s"), ('{"a":"é\\"\n"}', "rsalt-\u2603"), ("", ""),
                          ('{"protocol":1,"status":0,"answer":[1,"x"],"serial":7}',
                           "9aa6ce92-8336-11de-af38-001d093e835f")):
            self.assertEqual(protocol.sign(KEY, msg, salt), old_sign(KEY, msg, salt))

    def test_hmac_hex_is_hmac_sha1(self):
        import hashlib
        import hmac
        self.assertEqual(protocol.hmac_hex(b"k", "msg", "salt\u00e9"),
                         hmac.new(b"k", "salt\u00e9msg".encode(), hashlib.sha1).hexdigest())


class AnswerCacheTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        self.answerer = answerer()
        self.proto = ConfdProtocol(self.clock, KEY, self.answerer)

    def handle(self, atype, query, rsalt):
        data = protocol.pack_request(KEY, atype, query, rsalt, NOW)
        return self.proto.handle(data, ("127.0.0.1", 1))

    def test_replies_equal_uncached_ones(self):
        queries = [(0, None), (1, "node1.example.test"), (1, "nope"), (3, None),
                   (3, {"3": [0, 2]}), (3, {"3": ["1", 0]}), (3, "bad"), (4, None),
                   (6, None), (2, {"1": "192.0.2.50", "0": "br1"}),
                   (2, {"0": "br1", "1": "192.0.2.50"}), (10, "/cluster/cluster_name"),
                   (10, "/nowhere"), (11, None)]
        for rnd in range(3):  # the first round fills the cache, the others hit it
            for i, (atype, query) in enumerate(queries):
                rsalt = f"r{rnd}-{i}"
                reply = self.handle(atype, query, rsalt)
                req = protocol.parse_request(protocol.dump_message(
                    protocol.make_request(atype, query, rsalt)))
                expected = protocol.pack_reply(KEY, *self.answerer.answer(req), rsalt)
                self.assertEqual(reply, expected, (atype, query))
        # two spellings of one dict query (key order) share an entry
        self.assertEqual(len(self.proto.answers), len(queries) - 1)
        self.assertEqual(self.proto.answers.hits, 2 * len(queries) + 1)

    def test_new_answerer_empties_the_cache(self):
        self.handle(3, None, "a")
        raw = confd_config_dict()
        raw["cluster"]["cluster_name"] = "other.example.test"
        raw["cluster"]["serial_no"] = 99
        self.proto.answerer = answerer(raw)
        msg, _ = protocol.unpack(KEY, self.handle(10, "/cluster/cluster_name", "b"))
        self.assertEqual(protocol.parse_reply(msg).answer, "other.example.test")
        msg, _ = protocol.unpack(KEY, self.handle(3, None, "c"))
        self.assertEqual(protocol.parse_reply(msg).serial, 99)
        self.assertEqual(len(self.proto.answers), 2)

    def test_bounded_by_entries_and_bytes(self):
        cache = AnswerCache(max_entries=3, max_bytes=10_000)
        ans = answerer()
        for i in range(10):
            cache.get(ans, request(gc.CONFD_REQ_NODE_ROLE_BYNAME, f"node{i}"))
            self.assertLessEqual(len(cache), 3)
        small = AnswerCache(max_entries=100, max_bytes=300)
        for i in range(10):
            small.get(ans, request(gc.CONFD_REQ_NODE_ROLE_BYNAME, f"node{i}"))
            self.assertLessEqual(small._bytes, 300)

    def test_replay_protection_unchanged_with_the_cache(self):
        data = protocol.pack_request(KEY, 3, None, "same", NOW)
        self.assertIsNotNone(self.proto.handle(data, ("127.0.0.1", 1)))
        self.assertIsNone(self.proto.handle(data, ("127.0.0.1", 1)))
        self.assertEqual(self.proto.stats.dropped, 1)


class FakePortWithSocket:
    def __init__(self, sock):
        self.socket = sock
        self.written = []

    def write(self, data, addr):  # pragma: no cover - must not be used
        self.written.append((data, addr))


class DirectSendTest(SynchronousTestCase):
    def test_replies_go_out_on_the_port_socket(self):
        server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(server.close)
        self.addCleanup(client.close)
        server.bind(("127.0.0.1", 0))
        client.bind(("127.0.0.1", 0))
        client.settimeout(5)
        clock = Clock()
        clock.advance(NOW)
        proto = ConfdProtocol(clock, KEY, answerer())
        port = FakePortWithSocket(server)
        proto.makeConnection(port)
        proto.datagramReceived(protocol.pack_request(KEY, 0, None, "direct", NOW),
                               client.getsockname())
        data = client.recv(65536)
        self.assertEqual(port.written, [])
        self.assertEqual(protocol.unpack(KEY, data)[1], "direct")
        proto.doStop()
        self.assertIsNone(proto._sendto)

    def test_without_a_socket_the_transport_writes(self):
        clock = Clock()
        clock.advance(NOW)
        proto = ConfdProtocol(clock, KEY, answerer())
        port = FakePortWithSocket(None)
        proto.makeConnection(port)
        proto.datagramReceived(protocol.pack_request(KEY, 0, None, "w", NOW), ("127.0.0.1", 9))
        self.assertEqual(len(port.written), 1)

    def test_send_errors_are_logged_not_raised(self):
        clock = Clock()
        clock.advance(NOW)
        proto = ConfdProtocol(clock, KEY, answerer())
        proto.makeConnection(FakePortWithSocket(None))

        def refuse(data, addr):
            raise OSError(105, "No buffer space available")
        proto._sendto = refuse
        lines = []
        proto.drops.logger = type("L", (), {"info": lambda self, fmt, **kw: lines.append(
            kw["reason"])})()
        proto.datagramReceived(protocol.pack_request(KEY, 0, None, "e", NOW), ("127.0.0.1", 9))
        self.assertEqual(len(lines), 1)
        self.assertIn("cannot send the reply", lines[0])
