"""Feed protocol: strict validation of client messages, filters, encoding."""

import json

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.feeds import protocol
from ganeti.feeds.protocol import (
    FeedProtocolError,
    Filter,
    Subscribe,
    Unsubscribe,
    entry_from_event,
    parse_client_message,
)
from tests.feeds.fakes import archive, job


class ParseTest(SynchronousTestCase):
    def parse(self, message):
        return parse_client_message(json.dumps(message).encode())

    def error(self, message):
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        with self.assertRaises(FeedProtocolError) as ctx:
            parse_client_message(raw)
        return str(ctx.exception)

    def test_subscribe_all(self):
        self.assertEqual(self.parse({"type": "subscribe", "jobs": "all"}),
                         Subscribe(Filter(), None))

    def test_subscribe_everything_given(self):
        got = self.parse({"type": "subscribe", "jobs": [3, "4", 3], "status": ["success"],
                          "opcode": ["OP_TEST_DELAY"], "since": 17})
        self.assertEqual(got, Subscribe(Filter(frozenset({3, 4}), frozenset({"success"}),
                                               frozenset({"OP_TEST_DELAY"})), 17))

    def test_nulls_mean_no_restriction(self):
        got = self.parse({"type": "subscribe", "jobs": "all", "status": None, "opcode": None,
                          "since": None})
        self.assertTrue(got.filter.everything)

    def test_unsubscribe(self):
        self.assertEqual(self.parse({"type": "unsubscribe"}), Unsubscribe())
        self.assertIn("unknown key(s) jobs", self.error({"type": "unsubscribe", "jobs": "all"}))

    def test_errors(self):
        cases = [
            (b"not json", "not JSON"),
            (b"\xff\xfe", "not JSON"),
            ([1, 2], "must be a JSON object"),
            ({"jobs": "all"}, "no 'type'"),
            ({"type": "hello"}, "unknown message type 'hello'"),
            ({"type": "subscribe"}, "'jobs' is required"),
            ({"type": "subscribe", "jobs": "some"}, "'jobs' must be 'all' or a non-empty"),
            ({"type": "subscribe", "jobs": []}, "non-empty list"),
            ({"type": "subscribe", "jobs": [1.5]}, "invalid job id 1.5"),
            ({"type": "subscribe", "jobs": [True]}, "invalid job id true"),
            ({"type": "subscribe", "jobs": [-1]}, "invalid job id -1"),
            ({"type": "subscribe", "jobs": ["x1"]}, "invalid job id 'x1'"),
            ({"type": "subscribe", "jobs": "all", "status": ["done"]},
             "unknown job status 'done'; known: queued, waiting"),
            ({"type": "subscribe", "jobs": "all", "status": "success"}, "'status' must be"),
            ({"type": "subscribe", "jobs": "all", "status": []}, "'status' must be"),
            ({"type": "subscribe", "jobs": "all", "opcode": ["TEST_DELAY"]},
             "invalid opcode 'TEST_DELAY'"),
            ({"type": "subscribe", "jobs": "all", "opcode": [7]}, "invalid opcode 7"),
            ({"type": "subscribe", "jobs": "all", "since": -1}, "'since' must be"),
            ({"type": "subscribe", "jobs": "all", "since": "5"}, "'since' must be"),
            ({"type": "subscribe", "jobs": "all", "since": False}, "'since' must be"),
            ({"type": "subscribe", "jobs": "all", "filter": 1}, "unknown key(s) filter"),
        ]
        for message, expected in cases:
            with self.subTest(message=message):
                self.assertIn(expected, self.error(message))

    def test_caps(self):
        self.assertIn("at most 1000 job ids", self.error(
            {"type": "subscribe", "jobs": list(range(1001))}))
        self.parse({"type": "subscribe", "jobs": list(range(1000))})
        self.assertIn("at most 100 entries in 'opcode'", self.error(
            {"type": "subscribe", "jobs": "all", "opcode": [f"OP_X{i}" for i in range(101)]}))

    def test_long_values_are_shortened_in_errors(self):
        message = self.error({"type": "x" * 500})
        self.assertLess(len(message), 150)

    @given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                        lambda children: st.lists(children, max_size=4)
                        | st.dictionaries(st.text(max_size=8), children, max_size=4),
                        max_leaves=20))
    def test_any_json_parses_or_raises_a_protocol_error(self, value):
        try:
            parse_client_message(json.dumps(value))
        except FeedProtocolError:
            pass


class FilterTest(SynchronousTestCase):
    def entry(self, event):
        return entry_from_event(event, event["serial"])

    def test_job_filters(self):
        event = self.entry(job(1, job_id=5, status="success", ops=("OP_A", "OP_B")))
        self.assertTrue(Filter().matches(event))
        self.assertTrue(Filter(jobs=frozenset({5})).matches(event))
        self.assertFalse(Filter(jobs=frozenset({6})).matches(event))
        self.assertTrue(Filter(status=frozenset({"success", "error"})).matches(event))
        self.assertFalse(Filter(status=frozenset({"running"})).matches(event))
        self.assertTrue(Filter(opcode=frozenset({"OP_B", "OP_C"})).matches(event))
        self.assertFalse(Filter(opcode=frozenset({"OP_C"})).matches(event))
        self.assertFalse(Filter(jobs=frozenset({5}), status=frozenset({"running"}))
                         .matches(event))

    def test_events_without_ops_do_not_match_an_opcode_filter(self):
        event = self.entry(job(1, ops=None))
        self.assertFalse(Filter(opcode=frozenset({"OP_TEST_DELAY"})).matches(event))
        self.assertTrue(Filter().matches(event))

    def test_archive_matches_on_id_only(self):
        event = self.entry(archive(2, 5))
        self.assertTrue(Filter(jobs=frozenset({5}), status=frozenset({"success"}),
                               opcode=frozenset({"OP_X"})).matches(event))
        self.assertFalse(Filter(jobs=frozenset({6})).matches(event))

    def test_unknown_kinds_are_kept_but_never_sent(self):
        entry = entry_from_event({"serial": 3, "kind": "node", "time": 1.0}, 3)
        self.assertIsNone(entry.data)
        self.assertFalse(Filter().matches(entry))


class EncodingTest(SynchronousTestCase):
    def test_job_message_keeps_masterd_fields_and_says_type(self):
        event = job(7, job_id=3, status="running", log=[[1, [1000, 5], "message", "hi"]])
        message = json.loads(entry_from_event(event, 7).data)
        expected = dict(event, type="job")
        del expected["kind"]
        self.assertEqual(message, expected)
        self.assertEqual(list(message)[:3], ["type", "serial", "time"])

    def test_batch_is_a_json_array(self):
        self.assertEqual(json.loads(protocol.batch_payload([b'{"a":1}', b'{"b":2}'])),
                         [{"a": 1}, {"b": 2}])

    def test_server_messages(self):
        self.assertEqual(json.loads(protocol.subscribed(5, 2)),
                         {"type": "subscribed", "serial": 5, "oldest": 2})
        resync = json.loads(protocol.resync(9, protocol.RESYNC_SLOW))
        self.assertEqual((resync["type"], resync["serial"], resync["code"]),
                         ("resync", 9, "slow_consumer"))
        self.assertIn("did not read fast enough", resync["reason"])
        self.assertEqual(json.loads(protocol.error("bad")), {"type": "error", "message": "bad"})
        self.assertEqual(json.loads(protocol.upstream(False)),
                         {"type": "upstream", "connected": False})
