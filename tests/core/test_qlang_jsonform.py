"""Query filters: structure checks up front, then evaluation against rows."""

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import qlang
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.qlang import FieldSpec

FIELDS = {
    "id": FieldSpec("number"),
    "name": FieldSpec("text", hostname=True),
    "status": FieldSpec("text"),
    "mem": FieldSpec("unit"),
    "ratio": FieldSpec("float"),
    "ctime": FieldSpec("timestamp"),
    "offline": FieldSpec("bool"),
    "tags": FieldSpec("other"),
    "ops": FieldSpec("other"),
    "received": FieldSpec("other", split_timestamp=True),
}

ROW = {
    "id": 7, "name": "node1.example.com", "status": "running", "mem": 2048, "ratio": 1.5,
    "ctime": 1700000000.5, "offline": False, "tags": ["web", "db", 3],
    "ops": {"a": 1}, "received": [1700000000, 500000],
}


def _getter(row, status=None):
    status = status or {}
    return lambda name: (status.get(name, 0), None if name in status else row[name])


def _matches(flt, row=ROW, status=None):
    return qlang.compile_filter(flt, FIELDS).matches(_getter(row, status))


class EvaluateTest(SynchronousTestCase):
    def test_no_filter(self):
        self.assertIs(qlang.compile_filter(None, FIELDS), qlang.MATCH_ALL)
        self.assertTrue(qlang.MATCH_ALL.matches(_getter(ROW)))
        self.assertEqual(qlang.MATCH_ALL.fields(), frozenset())

    def test_equality(self):
        for op in ("==", "="):
            self.assertTrue(_matches([op, "id", 7]))
            self.assertFalse(_matches([op, "id", 8]))
            self.assertTrue(_matches([op, "status", "running"]))
        self.assertTrue(_matches(["!=", "id", 8]))
        self.assertFalse(_matches(["!=", "status", "running"]))
        self.assertTrue(_matches(["==", "ratio", 1.5]))
        self.assertTrue(_matches(["==", "ratio", 3]) is False)
        self.assertTrue(_matches(["==", "offline", False]))

    def test_gnt_job_list_filter(self):
        flt = ["|", ["=", "id", 1], ["=", "id", 7]]
        self.assertTrue(_matches(flt))
        self.assertFalse(_matches(["|", ["=", "id", 1], ["=", "id", 2]]))
        self.assertEqual(qlang.compile_filter(flt, FIELDS).fields(), {"id"})

    def test_ordering(self):
        self.assertTrue(_matches(["<", "id", 8]))
        self.assertFalse(_matches(["<", "id", 7]))
        self.assertTrue(_matches(["<=", "id", 7]))
        self.assertTrue(_matches([">", "mem", 1024]))
        self.assertTrue(_matches([">=", "mem", 2048]))
        self.assertFalse(_matches([">", "mem", 2048]))
        self.assertTrue(_matches([">", "status", "abc"]))
        self.assertTrue(_matches(["<", "ratio", 2]))
        self.assertTrue(_matches([">", "ctime", 1700000000]))

    def test_logic(self):
        self.assertTrue(_matches(["&", ["=", "id", 7], ["=", "status", "running"]]))
        self.assertFalse(_matches(["&", ["=", "id", 7], ["=", "status", "error"]]))
        self.assertTrue(_matches(["|", ["=", "id", 1], ["=", "status", "running"]]))
        self.assertTrue(_matches(["!", ["=", "id", 1]]))
        self.assertFalse(_matches(["!", ["!", ["=", "id", 1]]]))
        self.assertTrue(_matches(["&"]))
        self.assertFalse(_matches(["|"]))

    def test_true(self):
        self.assertFalse(_matches(["?", "offline"]))
        self.assertTrue(_matches(["?", "tags"]))
        self.assertFalse(_matches(["?", "tags"], dict(ROW, tags=[])))
        self.assertTrue(_matches(["?", "offline"], dict(ROW, offline=True)))

    def test_regexp(self):
        self.assertTrue(_matches(["=~", "status", "^run"]))
        self.assertTrue(_matches(["=~", "name", r"\.example\."]))  # search, not match
        self.assertFalse(_matches(["=~", "status", "^error$"]))

    def test_contains(self):
        self.assertTrue(_matches(["=[]", "tags", "web"]))
        self.assertFalse(_matches(["=[]", "tags", "mail"]))
        self.assertTrue(_matches(["=[]", "tags", 3]))
        self.assertFalse(_matches(["=[]", "tags", "3"]))

    def test_hostname_fields(self):
        self.assertTrue(_matches(["=", "name", "node1"]))
        self.assertTrue(_matches(["=", "name", "NODE1.example"]))
        self.assertTrue(_matches(["=", "name", "node1.example.com"]))
        self.assertFalse(_matches(["=", "name", "node1.ex"]))
        self.assertFalse(_matches(["=", "name", "node"]))
        self.assertTrue(_matches(["!=", "name", "node2"]))
        self.assertFalse(_matches(["=", "status", "RUNNING"]))  # not a hostname field
        self.assertTrue(qlang.hostname_matches("a.b", "A"))

    def test_split_timestamps(self):
        self.assertTrue(_matches([">", "received", 1700000000]))
        self.assertTrue(_matches(["==", "received", 1700000000.5]))
        self.assertFalse(_matches(["<", "received", 1700000000.4]))
        self.assertEqual(qlang.merge_timestamp([3, 250000]), 3.25)

    def test_unavailable_values_are_accepted(self):
        for status in (2, 3, 4):
            for flt in (["=", "id", 1], ["?", "offline"], ["=~", "status", "x"],
                        ["=[]", "tags", "nope"], [">", "mem", 10 ** 9]):
                self.assertTrue(_matches(flt, status={flt[1]: status}), (flt, status))
        self.assertFalse(_matches(["!", ["=", "id", 1]], status={"id": 3}))

    def test_type_mismatch_at_evaluation(self):
        for flt, row in [(["=", "tags", "web"], ROW),
                         (["=", "ops", 1], ROW),
                         (["<", "tags", 1], ROW),
                         (["=", "status", 1], None),
                         (["=~", "tags", "x"], ROW),
                         (["=[]", "ops", "a"], ROW),
                         (["<", "ops", "a"], dict(ROW, ops=True))]:
            if row is None:
                compiled = qlang.compile_filter(flt)  # structure only, no kinds
                row = ROW
            else:
                compiled = qlang.compile_filter(flt, FIELDS)
            err = self.assertRaises(OpPrereqError, compiled.matches, _getter(row))
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertIn(f"'{flt[1]}'", err.args[0])

    def test_structure_only(self):
        flt = qlang.compile_filter(["&", ["=", "anything", 1], ["?", "other"]])
        self.assertEqual(flt.fields(), {"anything", "other"})
        self.assertTrue(flt.matches(lambda name: (0, 1)))
        self.assertEqual(qlang.check_filter(["=", "x", True]), ["=", "x", True])


class BadFilterTest(SynchronousTestCase):
    def _bad(self, flt, *fragments, fields=FIELDS):
        err = self.assertRaises(OpPrereqError, qlang.compile_filter, flt, fields)
        self.assertEqual(err.args[1], ECODE_INVAL)
        self.assertTrue(err.args[0].startswith("Invalid query filter: "), err.args[0])
        for fragment in fragments:
            self.assertIn(fragment, err.args[0])

    def test_bad_structure(self):
        self._bad("id", "expected an operator list")
        self._bad([], "expected an operator list")
        self._bad(5, "expected an operator list")
        self._bad({"op": "="}, "expected an operator list")
        self._bad(["~~", "id", 1], "unknown operator '~~'")
        self._bad([1, "id", 1], "unknown operator 1")
        self._bad(["|", ["=", "id", 1], "x"], "expected an operator list")
        self._bad(["&", []], "expected an operator list")

    def test_operand_counts(self):
        self._bad(["!"], "'!' takes exactly one operand, got 0")
        self._bad(["!", ["?", "offline"], ["?", "offline"]], "exactly one operand, got 2")
        self._bad(["?"], "'?' takes exactly one operand")
        self._bad(["=", "id"], "takes a field and a value, got 1")
        self._bad(["=", "id", 1, 2], "got 3")
        self._bad(["=~", "status"], "takes a field and a value")

    def test_fields(self):
        self._bad(["=", "nope", 1], "unknown field 'nope'")
        self._bad(["?", "nope"], "unknown field 'nope'")
        self._bad(["=", 5, 1], "field name must be a non-empty string")
        self._bad(["?", ""], "field name must be a non-empty string")
        self._bad(["?", ["id"]], "field name", fields=None)

    def test_values(self):
        self._bad(["=", "id", [1]], "string or a number")
        self._bad(["=", "id", None], "string or a number")
        self._bad(["=", "id", {"a": 1}], "string or a number")
        self._bad(["=", "id", True], "string or a number")
        self._bad(["=", "id", float("nan")], "finite")
        self._bad(["=", "id", "7"], "kind 'number'", "expected an integer")
        self._bad(["=", "id", 7.5], "expected an integer")
        self._bad(["=", "mem", "1G"], "kind 'unit'")
        self._bad(["=", "status", 1], "kind 'text'", "expected a string")
        self._bad(["=", "ratio", "x"], "expected a number")
        self._bad(["=", "offline", 1], "expected a boolean")
        self._bad(["<", "offline", True], "cannot be ordered")
        self._bad(["=", "received", "yesterday"], "expected a number")

    def test_operators_need_fitting_fields(self):
        self._bad(["=~", "status", "("], "bad regular expression")
        self._bad(["=~", "status", 5], "regular expression string")
        self._bad(["=~", "id", "1"], "needs a text field")
        self._bad(["=[]", "status", "x"], "needs a list field")
        self._bad(["=[]", "tags", [1]], "string or a number")

    def test_depth_limit(self):
        flt = ["?", "offline"]
        for _ in range(qlang.MAX_DEPTH):
            flt = ["!", flt]
        self._bad(flt, "nested more than")
        ok = ["?", "offline"]
        for _ in range(qlang.MAX_DEPTH - 1):
            ok = ["!", ok]
        qlang.compile_filter(ok, FIELDS)


class RequestedValuesTest(SynchronousTestCase):
    def test_requested_values(self):
        rv = qlang.requested_values
        self.assertEqual(rv(["|", ["=", "id", 1], ["==", "id", 2], ["=", "id", 1]], "id"),
                         [1, 2])
        self.assertEqual(rv(["=", "id", 3], "id"), [3])
        self.assertIsNone(rv(None, "id"))
        self.assertIsNone(rv(["|", ["=", "id", 1], ["=", "name", "x"]], "id"))
        self.assertIsNone(rv(["|", ["=", "id", 1], [">", "id", 5]], "id"))
        self.assertIsNone(rv(["&", ["=", "id", 1]], "id"))
        self.assertIsNone(rv(["|"], "id"))
        self.assertIsNone(rv(["=", "name", "x"], "id"))
        self.assertEqual(rv(["|", ["=", "id", 1], ["=", "id", True]], "id"), [1, True])


_atoms = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
_filters = st.recursive(
    _atoms | st.sampled_from(sorted(qlang.ALL_OPERATORS)) | st.sampled_from(sorted(FIELDS)),
    lambda inner: st.lists(inner, max_size=4) | st.builds(
        lambda op, rest: [op, *rest], st.sampled_from(sorted(qlang.ALL_OPERATORS)),
        st.lists(inner, max_size=3)),
    max_leaves=15)


class FuzzTest(SynchronousTestCase):
    @settings(max_examples=400, deadline=None)
    @given(_filters)
    def test_compile_raises_only_wrong_input(self, data):
        try:
            compiled = qlang.compile_filter(data, FIELDS)
        except OpPrereqError as err:
            self.assertEqual(err.args[1], ECODE_INVAL)
            return
        try:
            self.assertIsInstance(compiled.matches(_getter(ROW)), bool)
        except OpPrereqError as err:  # a type mismatch found while evaluating
            self.assertEqual(err.args[1], ECODE_INVAL)
