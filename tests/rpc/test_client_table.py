"""The client and the table: timeouts up to a day (fake clock), per-call overrides,
master-side encoders (shared and per node), result decoders, cancellation, and
results that raise with the node and call named (Ganeti's ``Raise``)."""

from __future__ import annotations

import json

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors, rpcdefs
from ganeti.rpc.client import NodeTarget, RpcClient, RpcResult
from tests.noded.tlshelpers import cert


def _upper(value, ctx):
    if not isinstance(value, str):
        raise ValueError("not a name")
    return {"name": value.upper(), "cluster": ctx.config["cluster"], "node": ctx.node}


def _filled(value, ctx):
    # as a filled-parameters encoder would: cluster defaults under the caller's values
    return {**ctx.config["defaults"], **value}


def _is_obj(v):
    return isinstance(v, dict)


TABLE = rpcdefs.build_table([
    rpcdefs.RpcCall("long", (), rpcdefs.RPC_TMO_1DAY, "A day-long call."),
    rpcdefs.RpcCall("delay", (rpcdefs.RpcArg("d", lambda v: isinstance(v, int), "an int"),),
                    lambda args: args[0] + 5, "Timeout from the arguments."),
    rpcdefs.RpcCall("fill", (rpcdefs.RpcArg("params", _is_obj, "an object", encode=_filled),),
                    60, "A shared body with filled parameters."),
    rpcdefs.RpcCall("each", (rpcdefs.RpcArg("who", _is_obj, "an object", encode=_upper,
                                            per_node=True),), 60, "One body per node."),
    rpcdefs.RpcCall("typed", (), 60, "A decoded result.", decode=lambda p: int(p["n"])),
])


class _FakeRequests(SynchronousTestCase):
    """A client on a Clock whose requests the test answers (no network)."""

    def setUp(self):
        self.clock = Clock()
        self.config = {"cluster": "c1", "defaults": {"a": 1, "b": 2}}
        self.client = RpcClient(self.clock, cert("cluster.example.com"), 1811,
                                config=lambda: self.config, calls=TABLE)
        self.sent: list[tuple[str, str, object]] = []
        self.pending: dict[str, defer.Deferred] = {}
        self.cancelled: list[str] = []  # requests aborted (the HTTPS request, for real)
        self.client._request = self._request  # no network: answer from the test

    async def _request(self, node, call, body):
        self.sent.append((node.name, call.name, json.loads(body)))
        d = defer.Deferred(lambda _: self.cancelled.append(node.name))
        self.pending[node.name] = d
        return await d

    def nodes(self, *names):
        return [NodeTarget(n, "192.0.2.1") for n in names]


class ClientTableTest(_FakeRequests):
    def test_a_day_long_timeout_on_the_clock(self):
        d = self.client.call(self.nodes("n1"), "long")
        self.clock.advance(rpcdefs.RPC_TMO_1DAY - 1)
        self.assertNoResult(d)
        self.clock.advance(1)
        result = self.successResultOf(d)["n1"]
        self.assertEqual(result.fail_msg, "long on n1: timed out after 86400 s")
        self.assertEqual(result.call, "long")

    def test_timeout_from_the_arguments_and_override(self):
        d = self.client.call(self.nodes("n1"), "delay", [10])
        self.clock.advance(14.9)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.assertIn("timed out after 15 s", self.successResultOf(d)["n1"].fail_msg)
        d = self.client.call(self.nodes("n1"), "long", timeout=2 * 3600)
        self.clock.advance(2 * 3600)
        self.assertIn("timed out after 7200 s", self.successResultOf(d)["n1"].fail_msg)

    def test_bad_overrides_refused_before_sending(self):
        for bad in (0, -1, float("inf"), float("nan"), rpcdefs.MAX_TIMEOUT + 1, "60", True):
            self.assertRaises(rpcdefs.RpcArgumentError, self.client.call, self.nodes("n1"),
                              "long", timeout=bad)
        self.assertEqual(self.sent, [])

    def test_declared_timeouts_bounded(self):
        for call in rpcdefs.CALLS.values():
            self.assertLessEqual(call.timeout_for([0] * len(call.args)), rpcdefs.MAX_TIMEOUT)
        bad = rpcdefs.RpcCall("x", (), rpcdefs.RPC_TMO_1DAY + 1, "too long")
        self.assertRaises(rpcdefs.RpcArgumentError, bad.timeout_for, [])

    def test_shared_encoder_sees_the_config(self):
        self.client.call(self.nodes("n1", "n2"), "fill", [{"b": 3}])
        self.assertEqual(self.sent, [("n1", "fill", [{"a": 1, "b": 3}]),
                                     ("n2", "fill", [{"a": 1, "b": 3}])])
        self.config["defaults"] = {"a": 9}  # encoders read the config of the moment
        self.client.call(self.nodes("n1"), "fill", [{}])
        self.assertEqual(self.sent[-1], ("n1", "fill", [{"a": 9}]))

    def test_per_node_encoder(self):
        d = self.client.call(self.nodes("n1", "n2") + [NodeTarget("n3", "x", True)],
                             "each", ["inst"])
        self.assertEqual(self.sent, [
            ("n1", "each", [{"name": "INST", "cluster": "c1", "node": "n1"}]),
            ("n2", "each", [{"name": "INST", "cluster": "c1", "node": "n2"}])])
        for name in ("n1", "n2"):
            self.pending[name].callback(RpcResult(name, True, payload=name, call="each"))
        results = self.successResultOf(d)
        self.assertTrue(results["n3"].offline)

    def test_encoder_refusal_and_wire_check(self):
        err = self.assertRaises(rpcdefs.RpcArgumentError, self.client.call, self.nodes("n1"),
                                "each", [7])
        self.assertIn("each: cannot encode argument who: not a name", str(err))
        self.assertEqual(self.sent, [])

    def test_decoder(self):
        call = TABLE["typed"]
        self.assertEqual(call.decode_payload({"n": "4"}), 4)
        err = self.assertRaises(rpcdefs.RpcReplyError, call.decode_payload, {"m": 1})
        self.assertIn("unexpected typed result", str(err))

    def test_cancel_fails_with_cancelled_error_and_cancels_every_request(self):
        d = self.client.call(self.nodes("n1", "n2"), "long")
        self.pending["n1"].callback(RpcResult("n1", True, payload=1, call="long"))
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.cancelled, ["n2"])
        self.assertFalse(self.clock.getDelayedCalls())  # the timeouts are gone too

    def test_unknown_call(self):
        self.assertRaises(rpcdefs.RpcArgumentError, self.client.call, self.nodes("n1"),
                          "version")  # not in this client's table


class RaiseTest(SynchronousTestCase):
    def test_success_does_not_raise(self):
        RpcResult("n1", True, payload=1, call="version").raise_if_failed()

    def test_default_message_names_call_and_node(self):
        r = RpcResult("node2.example.com", False, fail_msg="connection refused",
                      call="node_info")
        err = self.assertRaises(errors.OpExecError, r.raise_if_failed)
        self.assertEqual(str(err.args[0]), "Call 'node_info' to node 'node2.example.com' has "
                                           "failed: connection refused")

    def test_message_prereq_and_code(self):
        r = RpcResult("n1", False, fail_msg="timed out", call="version")
        err = self.assertRaises(errors.OpPrereqError, r.raise_if_failed,
                                "Node n1 fails to report its version", prereq=True,
                                ecode=errors.ECODE_STATE)
        self.assertEqual(err.args, ("Node n1 fails to report its version: timed out",
                                    errors.ECODE_STATE))
        err = self.assertRaises(errors.OpExecError, r.raise_if_failed, "Failure on n1")
        self.assertEqual(err.args, ("Failure on n1: timed out",))

    def test_warn(self):
        seen: list[str] = []
        self.assertFalse(RpcResult("n1", True).warn("x", seen.append))
        self.assertTrue(RpcResult("n1", False, fail_msg="boom").warn("Could not x", seen.append))
        self.assertEqual(seen, ["Could not x: boom"])


class LuCancelTest(_FakeRequests):
    """An LU awaits its calls in a coroutine; cancelling the LU's Deferred reaches them."""

    def test_cancelling_the_awaiting_coroutine_aborts_the_requests(self):
        reached: list[str] = []

        async def exec_like_an_lu():
            results = await self.client.call(self.nodes("n1", "n2"), "long")
            reached.append("after")  # never: the call is cancelled
            return results

        lu = defer.Deferred.fromCoroutine(exec_like_an_lu())
        self.assertEqual(sorted(n for n, _, _ in self.sent), ["n1", "n2"])
        lu.cancel()
        self.failureResultOf(lu, defer.CancelledError)
        self.assertEqual(sorted(self.cancelled), ["n1", "n2"])
        self.assertEqual(reached, [])
        self.assertFalse(self.clock.getDelayedCalls())
