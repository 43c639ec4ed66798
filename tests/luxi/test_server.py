"""The LUXI server protocol: ordering, pipelining and bad input, on an in-memory transport."""

import json

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.luxi import wire
from ganeti.luxi.methods import METHODS, STR, Method
from ganeti.luxi.server import LuxiDispatcher, LuxiServerFactory

TABLE = dict(METHODS)
TABLE["Echo"] = Method("Echo", (STR("text"),), "test")
TABLE["Slow"] = Method("Slow", (), "test")
TABLE["Crash"] = Method("Crash", (), "test")


def responses(transport):
    return [json.loads(f) for f in transport.value().split(b"\x03") if f]


class ServerTest(SynchronousTestCase):
    def setUp(self):
        self.slow = []

        def slow():
            d = defer.Deferred()
            self.slow.append(d)
            return d

        def crash():
            raise KeyError("internal")

        async def echo(text):
            return text

        impls = {"Echo": echo, "Slow": slow, "Crash": crash,
                 "QueryTags": lambda kind, name: [kind]}
        self.clock = Clock()
        factory = LuxiServerFactory(LuxiDispatcher(impls, TABLE), max_frame=1024,
                                    clock=self.clock)
        self.proto = factory.buildProtocol(None)
        self.transport = StringTransport()
        self.proto.makeConnection(self.transport)

    def send(self, data):
        self.proto.dataReceived(data)

    def test_pipelined_requests_answered_in_order(self):
        self.send(wire.encode_request("Echo", ["a"]) + wire.encode_request("Slow", [])
                  + wire.encode_request("Echo", ["b"]))
        self.assertEqual(responses(self.transport), [{"success": True, "result": "a"}])
        self.slow[0].callback("s")
        self.assertEqual([r["result"] for r in responses(self.transport)], ["a", "s", "b"])

    def test_many_synchronous_requests_do_not_recurse(self):
        self.send(wire.encode_request("Echo", ["x"]) * 5000)
        while self.clock.getDelayedCalls():
            self.clock.advance(0)
        self.assertEqual(len(responses(self.transport)), 5000)

    def test_malformed_json_gets_error_and_connection_stays(self):
        self.send(b"{not json\x03" + wire.encode_request("Echo", ["ok"]))
        first, second = responses(self.transport)
        self.assertFalse(first["success"])
        self.assertIsInstance(first["result"], str)
        self.assertIn("Invalid LUXI request", first["result"])
        self.assertEqual(second, {"success": True, "result": "ok"})
        self.assertFalse(self.transport.disconnecting)

    def test_unknown_method(self):
        self.send(wire.encode_request("NoSuchMethod", []))
        (resp,) = responses(self.transport)
        self.assertEqual(resp["success"], False)
        self.assertEqual(resp["result"], "Failed to parse request: Unable to parse LUXI request "
                                         'method: Invalid string value for type LuxiReq: '
                                         '"NoSuchMethod"')

    def test_wrong_argument_count(self):
        # As luxid: a request it cannot parse is answered with a plain string.
        self.send(wire.encode_request("Echo", []))
        (resp,) = responses(self.transport)
        self.assertFalse(resp["success"])
        self.assertTrue(resp["result"].startswith("Failed to parse request: "))
        self.assertIn("takes 1 argument", resp["result"])

    def test_wrong_argument_type(self):
        self.send(wire.encode_request("QueryTags", [1, None]))
        (resp,) = responses(self.transport)
        self.assertFalse(resp["success"])
        self.assertIn("Failed to parse request: QueryTags: argument 'kind' must be a string",
                      resp["result"])

    def test_internal_error_is_reported_not_fatal(self):
        self.send(wire.encode_request("Crash", []) + wire.encode_request("Echo", ["after"]))
        first, second = responses(self.transport)
        self.assertEqual(first["result"][0], "GenericError")
        self.assertEqual(second["result"], "after")
        self.flushLoggedErrors(KeyError)

    def test_oversized_frame_closes_connection(self):
        self.send(b"x" * 2000)
        (resp,) = responses(self.transport)
        self.assertEqual(resp["result"][0], "ProtocolError")
        self.assertIn("exceeds the limit", resp["result"][1][0])
        self.assertTrue(self.transport.disconnecting)

    def test_requests_before_an_oversized_frame_are_answered(self):
        self.send(wire.encode_request("Echo", ["first"]) + wire.encode_request("Slow", [])
                  + b"x" * 2000)
        self.assertFalse(self.transport.disconnecting)  # Slow is still running
        self.slow[0].callback("second")
        results = responses(self.transport)
        self.assertEqual([r["result"] for r in results[:2]], ["first", "second"])
        self.assertEqual(results[2]["result"][0], "ProtocolError")
        self.assertTrue(self.transport.disconnecting)

    def test_half_close_still_answers(self):
        self.send(wire.encode_request("Slow", []) + wire.encode_request("Echo", ["b"]))
        self.proto.readConnectionLost()
        self.assertFalse(self.transport.disconnecting)
        self.slow[0].callback("a")
        self.assertEqual([r["result"] for r in responses(self.transport)], ["a", "b"])
        self.assertTrue(self.transport.disconnecting)

    def test_no_write_after_disconnect(self):
        self.send(wire.encode_request("Slow", []))
        self.proto.connectionLost(None)
        self.slow[0].callback("late")
        self.assertEqual(self.transport.value(), b"")

    def test_dispatcher_refuses_methods_outside_the_table(self):
        with self.assertRaises(errors.ProgrammerError):
            LuxiDispatcher({"Nope": lambda: None}, TABLE)
