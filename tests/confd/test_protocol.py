"""The confd wire format: signing, unpacking and message validation."""

import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import protocol
from ganeti.confd.protocol import BadMessage
from ganeti.core import constants

KEY = b"0123456789abcdef"


class SignTest(SynchronousTestCase):
    def test_round_trip(self):
        data = protocol.sign(KEY, '{"a":1}', "1700000000")
        self.assertTrue(data.startswith(b"plj0"))
        self.assertEqual(protocol.unpack(KEY, data), ('{"a":1}', "1700000000"))

    def test_envelope_shape_and_hmac(self):
        env = json.loads(protocol.sign(KEY, "m", "s")[4:])
        self.assertEqual(set(env), {"msg", "salt", "hmac"})
        # A known HMAC-SHA1 vector: key "key", message "The quick brown fox ...".
        self.assertEqual(protocol.hmac_hex(b"key", "he lazy dog",
                                           "The quick brown fox jumps over t"),
                         "de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9")

    def test_uppercase_hmac_accepted(self):
        env = json.loads(protocol.sign(KEY, "m", "s")[4:])
        env["hmac"] = env["hmac"].upper()
        data = b"plj0" + json.dumps(env).encode()
        self.assertEqual(protocol.unpack(KEY, data), ("m", "s"))
        self.assertEqual(protocol.unpack_signed(KEY, data)[2], env["hmac"].lower())

    def assertBad(self, data, reason, key=KEY):
        err = self.assertRaises(BadMessage, protocol.unpack, key, data)
        self.assertEqual(err.reason, reason)

    def test_rejections(self):
        good = protocol.sign(KEY, "m", "s")
        self.assertBad(b"xxx0" + good[4:], "wrong fourcc")
        self.assertBad(b"", "wrong fourcc")
        self.assertBad(b"plj0{not json", "envelope is not JSON")
        self.assertBad(b"plj0\xff\xfe", "envelope is not JSON")
        self.assertBad(b"plj0[1,2]", "envelope is not an object")
        self.assertBad(b'plj0{"msg":"m","salt":"s"}', "envelope lacks string msg, salt or hmac")
        self.assertBad(b'plj0{"msg":1,"salt":"s","hmac":"00"}',
                       "envelope lacks string msg, salt or hmac")
        self.assertBad(good, "bad hmac", key=b"other key")
        env = json.loads(good[4:])
        env["msg"] = "n"
        self.assertBad(b"plj0" + json.dumps(env).encode(), "bad hmac")
        env["hmac"] = "\u00e9"
        self.assertBad(b"plj0" + json.dumps(env).encode(), "bad hmac")


class MessageTest(SynchronousTestCase):
    def test_request_round_trip(self):
        req = protocol.make_request(constants.CONFD_REQ_NODE_ROLE_BYNAME, "node1", "r1")
        self.assertEqual(req, {"protocol": 1, "type": 1, "query": "node1", "rsalt": "r1"})
        parsed = protocol.parse_request(protocol.dump_message(req))
        self.assertEqual(parsed, protocol.Request(type=1, query="node1", rsalt="r1"))

    def test_dict_query_keys_and_fields(self):
        req = protocol.make_request(3, {3: ["0", 1, "2"]}, "r")
        self.assertEqual(req["query"], {"3": [0, 1, 2]})
        parsed = protocol.parse_request('{"protocol":1,"type":3,"query":{"3":["1"]},"rsalt":"r"}')
        self.assertEqual(parsed.query, {"3": [1]})

    def test_request_rejections(self):
        bad = [
            "not json", "[1]", '{"protocol":2,"type":0,"query":null,"rsalt":"r"}',
            '{"protocol":true,"type":0,"query":null,"rsalt":"r"}',
            '{"protocol":1,"type":12,"query":null,"rsalt":"r"}',
            '{"protocol":1,"type":-1,"query":null,"rsalt":"r"}',
            '{"protocol":1,"type":"0","query":null,"rsalt":"r"}',
            '{"protocol":1,"type":true,"query":null,"rsalt":"r"}',
            '{"protocol":1,"type":0,"query":[1],"rsalt":"r"}',
            '{"protocol":1,"type":0,"query":5,"rsalt":"r"}',
            '{"protocol":1,"type":0,"query":null,"rsalt":5}',
            '{"protocol":1,"type":0,"query":null}',
        ]
        for text in bad:
            self.assertRaises(BadMessage, protocol.parse_request, text)
        self.assertRaises(BadMessage, protocol.make_request, 99, None, "r")
        self.assertRaises(BadMessage, protocol.make_request, 0, None, 5)
        self.assertRaises(BadMessage, protocol.make_request, 0, {None: 1}, "r")

    def test_missing_query_is_null(self):
        self.assertIsNone(protocol.parse_request('{"protocol":1,"type":0,"rsalt":"r"}').query)

    def test_reply_round_trip(self):
        rep = protocol.make_reply(0, ["a"], 42)
        self.assertEqual(protocol.parse_reply(protocol.dump_message(rep)),
                         protocol.Reply(status=0, answer=["a"], serial=42))
        data = protocol.pack_reply(KEY, 1, 0, 0, "rsalt-1")
        msg, salt = protocol.unpack(KEY, data)
        self.assertEqual(salt, "rsalt-1")
        self.assertEqual(protocol.parse_reply(msg).status, 1)

    def test_reply_rejections(self):
        for text in ['{"protocol":1,"status":3,"answer":0,"serial":1}',
                     '{"protocol":1,"status":0,"answer":0,"serial":"1"}',
                     '{"protocol":1,"status":0,"serial":1}',
                     '{"protocol":0,"status":0,"answer":0,"serial":1}']:
            self.assertRaises(BadMessage, protocol.parse_reply, text)

    def test_pack_request_and_salt_time(self):
        data = protocol.pack_request(KEY, 0, None, "r", 1700000000.7)
        msg, salt = protocol.unpack(KEY, data)
        self.assertEqual(salt, "1700000000")
        self.assertEqual(protocol.salt_time(salt), 1700000000)
        self.assertEqual(protocol.parse_request(msg).type, 0)
        for salt in ["", "abc", "12a", "1" * 30, "\u0661\u0662"]:
            self.assertRaises(BadMessage, protocol.salt_time, salt)
