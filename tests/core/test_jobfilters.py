"""Filter rules: checking, predicate semantics, order, buckets; property tests."""

import uuid as uuidmod

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import jobfilters
from ganeti.core.errors import OpPrereqError
from ganeti.core.jobfilters import CompiledRule, JobFacts


def rule(action="ACCEPT", predicates=(), priority=0, watermark=0, uuid=None):
    return CompiledRule(uuid or str(uuidmod.uuid4()), watermark, priority, list(predicates),
                        action, [])


def facts(job_id=1, ops=None):
    return JobFacts.of(job_id, ops if ops is not None else [{"OP_ID": "OP_TEST_DELAY"}])


class CheckTest(SynchronousTestCase):
    def test_actions(self):
        for good in ("ACCEPT", "PAUSE", "REJECT", "CONTINUE"):
            self.assertEqual(jobfilters.check_action(good), good)
        self.assertEqual(jobfilters.check_action(["RATE_LIMIT", 3]), ["RATE_LIMIT", 3])
        for bad in ("accept", "DROP", ["RATE_LIMIT", 0], ["RATE_LIMIT", -1],
                    ["RATE_LIMIT", True], ["RATE_LIMIT"], ["RATE_LIMIT", 1, 2], None, 3):
            err = self.assertRaises(OpPrereqError, jobfilters.check_action, bad)
            self.assertEqual(err.args[1], "wrong_input")

    def test_priority_and_uuid(self):
        self.assertEqual(jobfilters.check_priority(0), 0)
        for bad in (-1, 1.0, True, "1", None):
            self.assertRaises(OpPrereqError, jobfilters.check_priority, bad)
        jobfilters.check_uuid(str(uuidmod.uuid4()))
        for bad in ("", "abc", "6a3f7b0e-9b1c-4c6e-8a52", 5, None):
            err = self.assertRaises(OpPrereqError, jobfilters.check_uuid, bad)
            self.assertEqual(err.args[1], "wrong_input")

    def test_predicates(self):
        good = [["jobid", [">", "id", "watermark"]], ["opcode", None],
                ["reason", ["|", ["=~", "reason", "x"], ["==", "source", "gnt:user"]]]]
        self.assertEqual(jobfilters.check_predicates(good), good)
        for bad in ("x", [["jobid"]], [["jobid", 1, 2]], [["JOBID", None]],
                    [["opcode", ["nope", "a", 1]]], [["opcode", ["=~", "a", "("]]],
                    [["opcode", ["==", "a", [1]]]], [None]):
            err = self.assertRaises(OpPrereqError, jobfilters.check_predicates, bad)
            self.assertEqual(err.args[1], "wrong_input", bad)

    def test_predicates_normalised_as_ganeti_stores_them(self):
        # Ganeti's luxid parses predicates into its filter type: "=" is shown as "==",
        # integral numbers as integers; fractions, booleans and null are refused.
        given = [["opcode", ["&", ["=", "OP_ID", "OP_TEST_DELAY"],
                             ["!", ["=", "duration", 3.0]], ["?", "on_master"]]],
                 ["jobid", ["|", ["=", "id", "watermark"], [">=", "id", 7]]],
                 ["reason", ["=[]", "reason", 5]], ["opcode", None]]
        self.assertEqual(jobfilters.check_new_predicates(given), [
            ["opcode", ["&", ["==", "OP_ID", "OP_TEST_DELAY"],
                        ["!", ["==", "duration", 3]], ["?", "on_master"]]],
            ["jobid", ["|", ["==", "id", "watermark"], [">=", "id", 7]]],
            ["reason", ["=[]", "reason", 5]], ["opcode", None]])
        self.assertIsInstance(jobfilters.check_new_predicates(
            [["jobid", ["<", "id", 3.0]]])[0][1][2], int)
        for bad in ([["jobid", ["<=", "id", 7.5]]], [["opcode", ["=", "on_master", True]]],
                    [["opcode", ["&", ["!=", "x", False]]]]):
            err = self.assertRaises(OpPrereqError, jobfilters.check_new_predicates, bad)
            self.assertEqual(err.args[1], "wrong_input", bad)
            self.assertIn("must be a string or an integer", err.args[0])
            # Stored rules (an older config) still load: the lenient check keeps them.
            self.assertEqual(jobfilters.check_predicates(bad)[0][0], bad[0][0])
        self.assertEqual(jobfilters.normalise_filter(["=", "a", "b"]), ["==", "a", "b"])

    def test_reason_trail(self):
        self.assertEqual(jobfilters.check_reason_trail([["a", "b", 1]]), [["a", "b", 1]])
        for bad in ("x", [["a", "b"]], [["a", "b", 1.5]], [[1, "b", 1]]):
            self.assertRaises(OpPrereqError, jobfilters.check_reason_trail, bad)


class MatchTest(SynchronousTestCase):
    def test_jobid_and_watermark(self):
        drain = rule(predicates=[["jobid", [">", "id", "watermark"]]], watermark=10)
        self.assertFalse(drain.matches(facts(10)))
        self.assertTrue(drain.matches(facts(11)))
        self.assertTrue(rule(predicates=[["jobid", ["==", "id", 3]]]).matches(facts(3)))
        # Anything but a comparison on "id" with a number or "watermark" is false.
        for expr in (["==", "id", "3"], ["==", "other", 3], ["=~", "id", "3"], ["?", "id"],
                     ["!", ["==", "id", "x"]], ["|", ["==", "id", 3], ["==", "x", 1]]):
            self.assertFalse(rule(predicates=[["jobid", expr]]).matches(facts(3)), expr)
        self.assertTrue(rule(predicates=[["jobid", ["!", ["==", "id", 4]]]]).matches(facts(3)))

    def test_opcode_fields(self):
        ops = [{"OP_ID": "OP_TEST_DELAY", "duration": 5, "nested": {"a": {"b": "deep"}},
                "flag": True, "names": ["x", "y"]},
               {"OP_ID": "OP_TAGS_SET", "tags": ["t"]}]
        job = facts(1, ops)
        for expr, expected in [
            (["=", "OP_ID", "OP_TAGS_SET"], True),  # any opcode
            (["==", "duration", 5], True),
            ([">", "duration", 5], False),
            (["==", "nested.a.b", "deep"], True),
            (["=~", "nested.a.b", "^de"], True),
            (["?", "flag"], True),
            (["=[]", "names", "y"], True),
            (["=[]", "tags", "t"], True),
            (["==", "missing", 1], False),
            (["==", "duration", "5"], False),  # a string is not a number
            (["!", ["==", "missing", 1]], False),  # invalid: the opcode does not count
            (["&", ["=", "OP_ID", "OP_TEST_DELAY"], ["=[]", "tags", "t"]], False),
        ]:
            self.assertEqual(rule(predicates=[["opcode", expr]]).matches(job), expected, expr)

    def test_reason_fields(self):
        job = facts(1, [{"OP_ID": "OP_TEST_DELAY",
                         "reason": [["gnt:user", "maintenance pink bunny", 1000],
                                    ["gnt:opcode:test_delay", "job=1;index=0", 2000]]}])
        for expr, expected in [
            (["=~", "reason", "pink bunny"], True),
            (["==", "source", "gnt:user"], True),
            ([">", "timestamp", 1500], True),
            (["&", ["==", "source", "gnt:user"], [">", "timestamp", 1500]], False),
            (["=~", "timestamp", "1"], False),
            (["==", "colour", "x"], False),
        ]:
            self.assertEqual(rule(predicates=[["reason", expr]]).matches(job), expected, expr)
        self.assertFalse(rule(predicates=[["reason", None]]).matches(facts(1)))  # no entries

    def test_all_predicates_must_match(self):
        both = rule(predicates=[["jobid", [">", "id", 5]], ["opcode", ["?", "x"]]])
        self.assertTrue(both.matches(facts(6, [{"OP_ID": "A", "x": True}])))
        self.assertFalse(both.matches(facts(6, [{"OP_ID": "A", "x": False}])))
        self.assertFalse(both.matches(facts(5, [{"OP_ID": "A", "x": True}])))
        self.assertTrue(rule().matches(facts(1)))  # no predicates: every job

    def test_order_and_continue(self):
        a = rule("CONTINUE", priority=0, uuid="00000000-0000-0000-0000-000000000001")
        b = rule("PAUSE", priority=1, watermark=5, uuid="00000000-0000-0000-0000-000000000002")
        c = rule("REJECT", priority=1, watermark=5, uuid="00000000-0000-0000-0000-000000000003")
        d = rule("ACCEPT", priority=1, watermark=4, uuid="00000000-0000-0000-0000-000000000009")
        ordered = jobfilters.sorted_rules([c, b, a, d])
        self.assertEqual(ordered, [a, d, b, c])
        self.assertIs(jobfilters.applying_rule(ordered, facts()), d)
        self.assertIsNone(jobfilters.applying_rule([a], facts()))

    def test_buckets(self):
        job = facts(1, [{"OP_ID": "A", "reason": [["s", "rate-limit:2:evacuate node1", 1]]},
                        {"OP_ID": "B", "reason": [["s", "rate-limit:2:evacuate node1", 1],
                                                  ["s", "rate-limit:5:evacuate node1", 1],
                                                  ["s", "rate-limit:0:zero", 1],
                                                  ["s", "rate-limit:x:bad", 1],
                                                  ["s", "rate-limit:3:", 1],
                                                  ["s", "xrate-limit:3:y", 1]]}])
        self.assertEqual(jobfilters.rate_limit_buckets(job),
                         {"2:evacuate node1", "5:evacuate node1", "3:"})
        self.assertEqual(jobfilters.bucket_limit("2:evacuate node1"), 2)


# --- property tests -------------------------------------------------------------------

_values = st.one_of(st.integers(-3, 12), st.sampled_from(["a", "b", "watermark"]))
_fields = st.sampled_from(["id", "OP_ID", "duration", "reason", "source", "timestamp", "x"])
_leaf = st.builds(lambda op, f, v: [op, f, v],
                  st.sampled_from(["==", "=", "!=", "<", "<=", ">", ">="]), _fields, _values)
_expr = st.recursive(_leaf, lambda sub: st.one_of(
    st.builds(lambda xs: ["&", *xs], st.lists(sub, max_size=3)),
    st.builds(lambda xs: ["|", *xs], st.lists(sub, max_size=3)),
    st.builds(lambda x: ["!", x], sub)), max_leaves=6)
_predicate = st.builds(lambda name, e: [name, e],
                       st.sampled_from(["jobid", "opcode", "reason"]), _expr)
_action = st.one_of(st.sampled_from(["ACCEPT", "PAUSE", "REJECT", "CONTINUE"]),
                    st.builds(lambda n: ["RATE_LIMIT", n], st.integers(1, 3)))
_rule = st.builds(lambda p, prio, wm, act, n: CompiledRule(
    f"00000000-0000-0000-0000-{n:012d}", wm, prio, p, act, []),
    st.lists(_predicate, max_size=2), st.integers(0, 3), st.integers(0, 10), _action,
    st.integers(0, 30))


def _job(job_id, duration, reason):
    return {"OP_ID": "OP_TEST_DELAY", "duration": duration,
            "reason": [["gnt:user", reason, job_id * 10]]}


_jobs = st.lists(st.builds(_job, st.integers(1, 12), st.integers(0, 5),
                           st.sampled_from(["a", "b", "rate-limit:1:x"])),
                 min_size=1, max_size=12)


def _unique(rules):
    seen = {}
    for r in rules:
        seen[r.uuid] = r
    return list(seen.values())


class PropertyTest(SynchronousTestCase):
    @settings(max_examples=200, deadline=None)
    @given(st.lists(_rule, max_size=6), _jobs)
    def test_applying_rule_is_the_first_matching_non_continue(self, rules, ops):
        rules = _unique(rules)
        ordered = jobfilters.sorted_rules(rules)
        for index, op in enumerate(ops):
            job = facts(index + 1, [op])
            found = jobfilters.applying_rule(ordered, job)
            expected = next((r for r in ordered if r.kind != "CONTINUE" and r.matches(job)),
                            None)
            self.assertIs(found, expected)
            if found is not None:  # no earlier rule applies
                for r in ordered[:ordered.index(found)]:
                    self.assertTrue(r.kind == "CONTINUE" or not r.matches(job))

    @settings(max_examples=300, deadline=None)
    @given(st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=5),
                                  st.booleans()),
                        lambda sub: st.lists(sub, max_size=4), max_leaves=10))
    def test_random_predicates_are_checked_or_refused(self, data):
        """Any JSON either passes the check (and then evaluates without error) or is
        refused with OpPrereqError."""
        try:
            checked = jobfilters.check_predicates(data)
        except OpPrereqError:
            return
        r = rule("PAUSE", checked)
        r.matches(facts(3, [{"OP_ID": "X", "reason": [["a", "b", 1]]}]))
