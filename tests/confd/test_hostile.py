"""Hostile datagrams: deep nesting, the HMAC checked before the message is parsed,
bounded logging (issue 13, item 9)."""

import json

from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import protocol
from ganeti.confd.protocol import BadMessage
from ganeti.confd.server import ConfdProtocol, RateLimitedLog
from ganeti.core import constants as gc
from ganeti.core import serializer
from tests.confd.test_client import PEERS, ClientTestCase
from tests.confd.test_server import KEY, NOW, answerer

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000


def deep_request_text(depth=5000):
    """A request whose query nests ``depth`` levels (valid JSON)."""
    return ('{"protocol":1,"type":1,"rsalt":"r","query":' + '{"a":' * depth + "1"
            + "}" * depth + "}")


def envelope(msg, salt, digest, **extra):
    env = {"msg": msg, "salt": salt, "hmac": digest, **extra}
    return b"plj0" + json.dumps(env).encode()


class Lines:
    """A logger stand-in recording (reason, suppressed) of every line."""

    def __init__(self):
        self.lines = []

    def info(self, fmt, **kw):
        self.lines.append((kw["reason"], kw["suppressed"]))


class EnvelopeDepthTest(SynchronousTestCase):
    def assertBad(self, data, reason):
        err = self.assertRaises(BadMessage, protocol.unpack, KEY, data)
        self.assertEqual(err.reason, reason)

    def test_deep_envelope_refused_without_recursion(self):
        self.assertBad(b"plj0" + DEEP.encode(), "envelope is not a flat object")
        self.assertBad(b"plj0" + DEEP_OBJECT.encode(), "envelope is not a flat object")
        # nesting anywhere in the envelope, even beside a good signature
        good = json.loads(protocol.sign(KEY, "m", "s")[4:])
        self.assertBad(envelope("m", "s", good["hmac"], x=[[1]]),
                       "envelope is not a flat object")
        self.assertBad(b"plj0" + ("[" * 200_000).encode(), "envelope is not a flat object")

    def test_brackets_inside_strings_are_not_nesting(self):
        msg = '{"protocol":1,"type":0,"query":"[[[[{{{{","rsalt":"r]]]}}"}'
        data = protocol.sign(KEY, msg, "1700000000")
        self.assertEqual(protocol.unpack(KEY, data), (msg, "1700000000"))
        self.assertEqual(protocol.parse_request(msg).query, "[[[[{{{{")

    def test_deep_msg_is_refused_after_the_hmac(self):
        for text in (DEEP, deep_request_text()):
            data = protocol.sign(KEY, text, "1700000000")
            msg, _ = protocol.unpack(KEY, data)  # the envelope itself is fine
            err = self.assertRaises(BadMessage, protocol.parse_request, msg)
            self.assertEqual(err.reason, "message nested too deep")
            err = self.assertRaises(BadMessage, protocol.parse_reply, msg)
            self.assertEqual(err.reason, "message nested too deep")

    def test_moderate_nesting_still_parses(self):
        text = deep_request_text(serializer.MAX_JSON_DEPTH - 2)
        self.assertEqual(protocol.parse_request(text).type, 1)


class HmacBeforeParseTest(SynchronousTestCase):
    """The inner message is parsed only once its HMAC verified."""

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        self.proto = ConfdProtocol(self.clock, KEY, answerer())
        self.logger = Lines()
        self.proto.drops.logger = self.logger
        self.parsed = []
        real = serializer.load_json

        def counting(text, max_depth=serializer.MAX_JSON_DEPTH, **kw):
            self.parsed.append((text, max_depth))
            return real(text, max_depth, **kw)

        self.patch(serializer, "load_json", counting)
        real_flat = protocol.flat_string_object

        def counting_flat(text):
            # the envelope's fast path reads string literals only: depth 1
            self.parsed.append((text, protocol.ENVELOPE_MAX_DEPTH))
            return real_flat(text)

        self.patch(protocol, "flat_string_object", counting_flat)

    def test_wrong_hmac_never_reaches_the_message_parser(self):
        salt = str(int(NOW))
        for text in (DEEP, deep_request_text()):
            self.parsed.clear()
            forged = envelope(text, salt, protocol.hmac_hex(b"not the key", text, salt))
            self.assertIsNone(self.proto.handle(forged, ("127.0.0.1", 1)))
            # one parse: the envelope, bounded to a flat object; never the msg
            self.assertEqual([d for _, d in self.parsed], [protocol.ENVELOPE_MAX_DEPTH])
            self.assertTrue(self.parsed[0][0].startswith('{"msg":'))
            self.assertNotIn(text, [t for t, _ in self.parsed])
        self.assertEqual(self.logger.lines, [("bad hmac", 0)])

    def test_right_hmac_then_bounded_message_parse(self):
        text = deep_request_text()
        self.assertIsNone(self.proto.handle(protocol.sign(KEY, text, str(int(NOW))),
                                            ("127.0.0.1", 1)))
        self.assertEqual([d for _, d in self.parsed],
                         [protocol.ENVELOPE_MAX_DEPTH, serializer.MAX_JSON_DEPTH])
        self.assertEqual(self.parsed[1][0], text)
        self.assertEqual(self.logger.lines, [("message nested too deep", 0)])


class FloodTest(SynchronousTestCase):
    """Thousands of bad datagrams: no reply, no traceback, a bounded log."""

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(NOW)
        self.proto = ConfdProtocol(self.clock, KEY, answerer(), log_interval=60)
        self.sent = []
        self.proto.transport = self
        self.events = []
        globalLogPublisher.addObserver(self.events.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.events.append)

    def write(self, data, addr):
        self.sent.append(data)

    def bad_datagrams(self):
        salt = str(int(self.clock.seconds()))  # within the allowed clock skew
        forged = envelope(DEEP, salt, "0" * 40)
        signed_deep = protocol.sign(KEY, deep_request_text(), salt)
        return [b"plj0" + DEEP.encode(), b"plj0" + DEEP_OBJECT.encode(), forged,
                signed_deep, b"plj0{", b"garbage", b"plj0" + b"[" * 60000]

    def test_flood_of_deep_datagrams(self):
        count = 2000
        for i in range(count):
            if i % 100 == 0:
                bad = self.bad_datagrams()
            self.proto.datagramReceived(bad[i % len(bad)], ("203.0.113.9", 1000 + i))
            self.clock.advance(0.3)  # 2,000 datagrams over ten minutes
        self.assertEqual(self.sent, [])
        self.assertEqual(self.proto.stats.dropped, count)
        self.assertEqual(self.flushLoggedErrors(), [])
        self.assertFalse([e for e in self.events if "log_failure" in e])
        # 5 distinct reasons, one line each per 60 s: at most 5 * 11 lines
        reasons = {e["reason"] for e in self.events}
        self.assertEqual(reasons, {"envelope is not a flat object", "bad hmac",
                                   "message nested too deep", "envelope is not JSON",
                                   "wrong fourcc"})
        self.assertLessEqual(len(self.events), len(reasons) * (600 // 60 + 1))
        # and a good query is still answered at once
        good = protocol.pack_request(KEY, gc.CONFD_REQ_PING, None, "ok", self.clock.seconds())
        self.proto.datagramReceived(good, ("127.0.0.1", 5))
        self.assertEqual(len(self.sent), 1)

    def test_unexpected_error_is_a_rate_limited_drop(self):
        def broken(request):
            raise RuntimeError("boom")

        self.proto.answerer.answer = broken
        for i in range(100):
            good = protocol.pack_request(KEY, gc.CONFD_REQ_PING, None, f"r{i}",
                                         self.clock.seconds())
            self.proto.datagramReceived(good, ("127.0.0.1", 5))
        self.assertEqual(self.sent, [])
        self.assertEqual(self.flushLoggedErrors(), [])
        self.assertEqual([e["reason"] for e in self.events],
                         ["internal error: RuntimeError: boom"])
        self.assertEqual(self.proto.stats.dropped, 100)


class RateLimitBoundsTest(SynchronousTestCase):
    def test_distinct_reasons_are_capped(self):
        clock = Clock()
        log = Lines()
        rl = RateLimitedLog(clock, log, interval=60, max_reasons=8)
        for i in range(1000):
            rl.drop(f"bad request type {i}", None)
        self.assertEqual(len(log.lines), 9)  # 8 reasons, then one shared line
        self.assertEqual(log.lines[-1], (RateLimitedLog.OTHER_REASONS, 0))
        self.assertLessEqual(rl.budget.tracked + 1, 9)  # with the shared line
        clock.advance(60)
        for i in range(1000, 2000):
            rl.drop(f"bad request type {i}", None)
        # the old reasons expired: 8 new ones, and the shared line reports the rest
        self.assertEqual(len(log.lines), 18)
        self.assertEqual(log.lines[-1], (RateLimitedLog.OTHER_REASONS, 991))
        self.assertLessEqual(rl.budget.tracked + 1, 9)  # with the shared line

    def test_long_reasons_are_cut(self):
        log = Lines()
        rl = RateLimitedLog(Clock(), log)
        rl.drop("x" * 100_000, None)
        self.assertEqual(len(log.lines[0][0]), RateLimitedLog.MAX_REASON + 3)


class ClientHostileReplyTest(ClientTestCase):
    def test_deep_and_forged_replies_are_dropped_and_logged_sparingly(self):
        events = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        c = self.make(PEERS[:1])
        results, requests = self.start(c, "ping")
        proto = self.reactor.ports[-1].proto
        rsalt = requests[0][0].rsalt
        for _ in range(500):
            proto.datagramReceived(b"plj0" + DEEP.encode(), (PEERS[0], 11814))
            proto.datagramReceived(protocol.sign(KEY, DEEP, rsalt), (PEERS[0], 11814))
            proto.datagramReceived(envelope(DEEP, rsalt, "0" * 40), (PEERS[0], 11814))
        self.assertEqual(results, [])
        self.assertEqual(self.flushLoggedErrors(), [])
        self.assertEqual([e["reason"] for e in events if "reason" in e],
                         ["malformed or mis-signed reply"])
        self.answer(c, requests[0][0], PEERS[0], answer=2, serial=0)
        self.assertEqual(results[0].answer, 2)
