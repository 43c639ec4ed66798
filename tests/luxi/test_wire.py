"""LUXI framing and message encoding."""

import json

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.luxi import wire


class FrameSplitterTest(SynchronousTestCase):
    def test_split_and_partial(self):
        s = wire.FrameSplitter(100)
        self.assertEqual(s.feed(b'{"a":1}\x03{"b"'), [b'{"a":1}'])
        self.assertEqual(s.pending, 4)
        self.assertEqual(s.feed(b':2}\x03\x03'), [b'{"b":2}', b""])
        self.assertEqual(s.pending, 0)

    def test_oversized_unterminated(self):
        s = wire.FrameSplitter(10)
        self.assertEqual(s.feed(b"x" * 11), [])
        self.assertIsInstance(s.overflow, wire.FrameTooLarge)
        self.assertEqual(s.feed(b"\x03ok\x03"), [])  # nothing after it is trusted

    def test_frames_before_an_oversized_one_survive(self):
        s = wire.FrameSplitter(10)
        self.assertEqual(s.feed(b"a\x03bb\x03" + b"x" * 11 + b"\x03c\x03"), [b"a", b"bb"])
        self.assertIsInstance(s.overflow, wire.FrameTooLarge)

    @given(st.lists(st.binary(max_size=50).map(lambda b: b.replace(b"\x03", b"")), max_size=8),
           st.integers(min_value=1, max_value=17))
    def test_any_chunking_gives_the_same_frames(self, frames, chunk):
        data = b"".join(f + b"\x03" for f in frames)
        s = wire.FrameSplitter(1000)
        got = []
        for i in range(0, len(data), chunk):
            got += s.feed(data[i:i + chunk])
        self.assertEqual(got, frames)


class MessageTest(SynchronousTestCase):
    def test_request_shape(self):
        frame = wire.encode_request("QueryTags", ["cluster", ""])
        self.assertTrue(frame.endswith(b"\x03"))
        self.assertEqual(json.loads(frame[:-1]),
                         {"method": "QueryTags", "args": ["cluster", ""], "version": 3000000})

    def test_parse_request_like_ganeti_client_sends_it(self):
        # Ganeti's Python client: spaces after separators and a newline before ETX.
        raw = b'{"method": "QueryClusterInfo", "args": [], "version": 3000000}\n'
        self.assertEqual(wire.parse_request(raw), ("QueryClusterInfo", []))

    def test_parse_request_errors(self):
        for raw in (b"{nope", b"[1,2]", b'{"method": 1, "args": []}', b'{"method": "X"}',
                    b'{"method": "X", "args": {}}', b"\xff\xfe"):
            with self.assertRaises(errors.ProtocolError, msg=raw):
                wire.parse_request(raw)

    def test_response_success(self):
        frame = wire.encode_response(True, {"a": [1, 2.5, 4.0]})
        self.assertEqual(frame, b'{"success":true,"result":{"a":[1,2.5,4]}}\x03')
        self.assertEqual(wire.parse_response(frame[:-1]), {"a": [1, 2.5, 4]})

    def test_response_integral_floats_everywhere(self):
        # exponent forms, negatives, nesting and the last value before "}" of the frame
        frame = wire.encode_response(True, [{"k": -3.0}, [1e16, 2.0e-3, 7.25], 5.0])
        self.assertEqual(frame, b'{"success":true,"result":[{"k":-3},'
                                b'[10000000000000000,0.002,7.25],5]}\x03')
        self.assertEqual(wire.encode_response(True, 8.0), b'{"success":true,"result":8}\x03')

    def test_response_without_floats_is_one_dump(self):
        # strings that look like numbers stay untouched, with or without the walk
        value = {"ip": "10.0.0.1", "v": "5.0,", "n": [1, 20, 300], "e": "1e5]"}
        frame = wire.encode_response(True, value)
        self.assertEqual(json.loads(frame[:-1])["result"], value)
        self.assertEqual(wire.encode_response(True, {"ip": "10.0.0.1", "n": [10, 0]}),
                         b'{"success":true,"result":{"ip":"10.0.0.1","n":[10,0]}}\x03')

    def test_raw_response_is_cut_not_parsed(self):
        frame = wire.encode_response(True, [{"a": 1}, "x"])[:-1]
        raw = wire.parse_response_raw(frame)
        self.assertEqual(raw.text, b'[{"a":1},"x"]')
        self.assertEqual(raw.value(), [{"a": 1}, "x"])
        # another daemon's layout (spaces, key order) is parsed and encoded again
        other = b'{"result": [1, 2.5], "success": true}'
        self.assertEqual(wire.parse_response_raw(other).text, b"[1,2.5]")
        with self.assertRaises(errors.OpPrereqError):
            wire.parse_response_raw(wire.encode_error(
                errors.OpPrereqError("no", "wrong_input"))[:-1])
        with self.assertRaises(errors.ProtocolError):
            wire.parse_response_raw(b'{"success":true,"result":')

    def test_response_error_reraises_class(self):
        frame = wire.encode_error(errors.OpPrereqError("Node 'x' not known", "unknown_entity"))
        with self.assertRaises(errors.OpPrereqError) as cm:
            wire.parse_response(frame[:-1])
        self.assertEqual(cm.exception.args, ("Node 'x' not known", "unknown_entity"))

    def test_plain_string_error(self):
        with self.assertRaises(errors.RequestError) as cm:
            wire.parse_response(b'{"success":false,"result":"Failed to parse request"}')
        self.assertEqual(cm.exception.args, ("Failed to parse request",))

    def test_invalid_response(self):
        for raw in (b"{", b'{"success":true}', b"[]"):
            with self.assertRaises(errors.ProtocolError):
                wire.parse_response(raw)


class ErrorEncodingTest(SynchronousTestCase):
    def test_round_trip_of_every_class(self):
        for cls in (errors.OpPrereqError, errors.OpExecError, errors.JobLost,
                    errors.ConfigurationError, errors.JobQueueDrainError, errors.TagError):
            encoded = errors.encode_exception(cls("msg", "wrong_input"))
            self.assertEqual(encoded, [cls.__name__, ["msg", "wrong_input"]])
            self.assertIsInstance(errors.decode_exception(encoded), cls)

    def test_foreign_exceptions_become_generic(self):
        self.assertEqual(errors.encode_exception(KeyError("k")),
                         ["GenericError", ["KeyError: 'k'"]])

    def test_unknown_class_is_not_decoded(self):
        self.assertIsNone(errors.decode_exception(["NoSuchError", ["x"]]))
        self.assertIsNone(errors.decode_exception("text"))
