"""The QMP client in memory: greeting, ids, answers, errors, events, timeouts, loss."""

import json

from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.bdev import qmp


def sent(transport):
    lines = [json.loads(x) for x in transport.value().splitlines() if x.strip()]
    transport.clear()
    return lines


class QMPProtocolTest(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.proto = qmp.QMPProtocol(self.clock, timeout=5)
        self.transport = StringTransport()
        self.proto.makeConnection(self.transport)

    def feed(self, *msgs):
        self.proto.dataReceived(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))

    def test_greeting_then_commands_matched_by_id(self):
        self.feed({"QMP": {"version": {}, "capabilities": []}})
        self.assertIn("QMP", self.successResultOf(self.proto.greeting))
        first = self.proto.execute("query-block-jobs")
        second = self.proto.execute("blockdev-del", {"node-name": "peer"})
        out = sent(self.transport)
        self.assertEqual([m["execute"] for m in out], ["query-block-jobs", "blockdev-del"])
        self.assertEqual(out[1]["arguments"], {"node-name": "peer"})
        self.assertNotIn("arguments", out[0])
        self.assertNotEqual(out[0]["id"], out[1]["id"])
        # answers may come in any order
        self.feed({"return": {}, "id": out[1]["id"]}, {"return": [1], "id": out[0]["id"]})
        self.assertEqual(self.successResultOf(first), [1])
        self.assertEqual(self.successResultOf(second), {})

    def test_error_answer(self):
        d = self.proto.execute("blockdev-add")
        ident = sent(self.transport)[0]["id"]
        self.feed({"error": {"class": "GenericError", "desc": "Connection refused"},
                   "id": ident})
        err = self.failureResultOf(d, qmp.QMPError).value
        self.assertEqual((err.error_class, err.desc), ("GenericError", "Connection refused"))
        self.assertIn("blockdev-add", str(err))

    def test_events_reach_listeners_split_lines_are_joined(self):
        got = []
        self.proto.listeners.append(lambda name, data: got.append((name, data)))
        line = json.dumps({"event": "BLOCK_JOB_READY", "data": {"device": "mirror"}}) + "\n"
        self.proto.dataReceived(line[:10].encode())
        self.assertEqual(got, [])
        self.proto.dataReceived(line[10:].encode() + b"garbage\n")
        self.assertEqual(got, [("BLOCK_JOB_READY", {"device": "mirror"})])

    def test_timeout_on_the_clock(self):
        d = self.proto.execute("query-block-jobs", timeout=2)
        self.clock.advance(1.9)
        self.assertNoResult(d)
        self.clock.advance(0.2)
        self.failureResultOf(d, qmp.QMPTimeout)
        self.assertEqual(self.proto.pending, {})

    def test_connection_lost_fails_pending_and_refuses_new(self):
        d = self.proto.execute("quit")
        self.proto.connectionLost(Failure(ConnectionDone()))
        self.failureResultOf(d, qmp.QMPDisconnected)
        self.failureResultOf(self.proto.greeting, qmp.QMPDisconnected)
        self.successResultOf(self.proto.lost)
        self.failureResultOf(self.proto.execute("query-block-jobs"), qmp.QMPDisconnected)
