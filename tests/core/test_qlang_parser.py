"""The text syntax of query filters: each construct, the errors, properties, and a
corpus compared with real Ganeti's parser (Debian's ganeti-3.0)."""

import functools
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import qlang
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

parse = qlang.parse_filter

ROW = {"name": "node1.example.com", "role": "M", "pinst_cnt": 2, "offline": False,
       "tags": ["web", "db"]}
SPECS = {"name": qlang.FieldSpec("text", hostname=True), "role": qlang.FieldSpec("text"),
         "pinst_cnt": qlang.FieldSpec("number"), "offline": qlang.FieldSpec("bool"),
         "tags": qlang.FieldSpec("other")}


def matches(text, row=ROW):
    flt = qlang.compile_filter(parse(text), SPECS)
    return flt.matches(lambda field: (0, row[field]))


class ConstructTest(SynchronousTestCase):
    def check(self, cases):
        for text, expected in cases:
            self.assertEqual(parse(text), expected, text)

    def test_comparisons(self):
        self.check([
            ('name == "node1"', ["==", "name", "node1"]),
            ("pinst_cnt != 2", ["!=", "pinst_cnt", 2]),
            ("a < 1", ["<", "a", 1]), ("a <= 1", ["<=", "a", 1]),
            ("a > 1", [">", "a", 1]), ("a >= 1", [">=", "a", 1]),
            ("a<=1", ["<=", "a", 1]), ("a>-1", [">", "a", -1]),
        ])

    def test_legacy_equal_gives_double_equal(self):
        # Ganeti's parser turns "=" into "=="; the JSON form still accepts "="
        self.assertEqual(parse("pinst_cnt = 2"), ["==", "pinst_cnt", 2])

    def test_numbers(self):
        self.check([("a == +5", ["==", "a", 5]), ("a == -007", ["==", "a", -7]),
                    ("a == -0", ["==", "a", 0]),
                    ("a == 123456789012345678901234567890",
                     ["==", "a", 123456789012345678901234567890])])

    def test_strings_are_taken_as_written(self):
        # no unescaping, as in Ganeti: backslashes and doubled quotes stay
        self.check([
            ("a == ''", ["==", "a", ""]), ('a == "x y"', ["==", "a", "x y"]),
            ("a == 'x\"y'", ["==", "a", 'x"y']), (r'a == "a\"b"', ["==", "a", r"a\"b"]),
            ("a == 'it''s'", ["==", "a", "it''s"]), (r'a == "\x41\t"', ["==", "a", r"\x41\t"]),
            ('a == "é"', ["==", "a", "é"]),
        ])

    def test_field_names(self):
        self.check([("disk.size/0 == 1", ["==", "disk.size/0", 1]),
                    ("a_b", ["?", "a_b"]), ("nota", ["?", "nota"]), ("m", ["?", "m"]),
                    ("AND", ["?", "AND"]), ("innocent", ["?", "innocent"])])

    def test_truth_and_list_membership(self):
        self.check([
            ("master_candidate", ["?", "master_candidate"]),
            ('"web" in tags', ["=[]", "tags", "web"]),
            ("3 in ids", ["=[]", "ids", 3]),
            ("'web' not in tags", ["!", ["=[]", "tags", "web"]]),
            ('not "web" in tags', ["!", ["=[]", "tags", "web"]]),
        ])
        self.assertTrue(matches('"db" in tags and "x" not in tags'))

    def test_regular_expressions(self):
        self.check([
            ("name =~ /^node1\\./", ["=~", "name", "^node1."]),
            ("name =~ m/x/", ["=~", "name", "x"]), ("name =~ m #x#", ["=~", "name", "x"]),
            ("name =~ ^x^", ["=~", "name", "x"]), ("name =~ |x|", ["=~", "name", "x"]),
            ("name =~ /x/i", ["=~", "name", "(?i)x"]),
            ("name =~ /x/si", ["=~", "name", "(?is)x"]),
            ("name !~ /x/", ["!", ["=~", "name", "x"]]),
            ("name =~ //", ["=~", "name", ""]),
        ])
        self.assertTrue(matches("name =~ m/^NODE1/i"))
        self.assertFalse(matches("name !~ /example/"))

    def test_regular_expression_escapes(self):
        # Ganeti's grammar drops a backslash before any character, after turning
        # \t \n \f \r into control characters: \\ is how a backslash gets through
        self.check([
            (r"a =~ /a\/b/", ["=~", "a", "a/b"]), (r"a =~ /a\.b/", ["=~", "a", "a.b"]),
            (r"a =~ /a\\.b/", ["=~", "a", r"a\.b"]), (r"a =~ /\d/", ["=~", "a", "d"]),
            (r"a =~ /\\d/", ["=~", "a", r"\d"]), (r"a =~ |a\|b|", ["=~", "a", "a|b"]),
            (r"a =~ /a\tb/", ["=~", "a", "a\tb"]), (r"a =~ /a\\tb/", ["=~", "a", "a\tb"]),
        ])

    def test_globs(self):
        self.check([
            ('name =* "node?.example.*"', ["=~", "name", r"^node[^.]\.example\.[^.]*(\..*)?$"]),
            ('name !* "web*"', ["!", ["=~", "name", r"^web[^.]*(\..*)?$"]]),
            ('name =* "a+b"', ["=~", "name", r"^a\+b(\..*)?$"]),
        ])
        self.assertTrue(matches('name =* "node?"'))
        self.assertFalse(matches('name =* "*.com"'))  # '*' stops at dots

    def test_precedence_and_grouping(self):
        a, b, c = ["?", "a"], ["?", "b"], ["?", "c"]
        self.check([
            ("a and b and c", ["&", a, b, c]), ("a or b or c", ["|", a, b, c]),
            ("a or b and c", ["|", a, ["&", b, c]]), ("a and b or c", ["|", ["&", a, b], c]),
            ("not a and b", ["&", ["!", a], b]), ("not (a and b)", ["!", ["&", a, b]]),
            ("a and (b and c)", ["&", a, ["&", b, c]]), ("((a))", a),
            ("not not a", ["!", ["!", a]]),
            ("not(a)", ["!", a]), ("not a == 1", ["!", ["==", "a", 1]]),
        ])
        self.assertTrue(matches('role == "M" and (offline or pinst_cnt >= 2)'))

    def test_whitespace(self):
        self.check([("  a  ", ["?", "a"]), ("a\t==\n1", ["==", "a", 1]),
                    ("a==1", ["==", "a", 1]), ("1in f", ["=[]", "f", 1]),
                    ('a == "x"and b', ["&", ["==", "a", "x"], ["?", "b"]])])

    def test_results_pass_check_filter(self):
        for text in ("a", "not a == 1 or 'x' in b", "name =~ /x/i"):
            self.assertEqual(qlang.check_filter(parse(text)), parse(text))


class ErrorTest(SynchronousTestCase):
    def check(self, text, message):
        with self.assertRaises(OpPrereqError) as cm:
            parse(text)
        self.assertEqual(cm.exception.args, (f"Invalid query filter at {message}", ECODE_INVAL))

    def test_empty(self):
        self.check("", "column 1: the filter is empty")
        self.check(" \t ", "column 1: the filter is empty")

    def test_unclosed_string(self):
        self.check('name == "node1', 'column 9: unterminated string: no closing " on the '
                                      'same line')
        self.check("name == 'a\nb'", "line 1, column 9: unterminated string: no closing ' "
                                     "on the same line")
        self.check('a == "\\x"', "column 7: '\\x' in a string needs hexadecimal digits")

    def test_parentheses(self):
        self.check("(a and b", "column 9: expected ')' to close the '(' at column 1, found "
                               "the end of the filter")
        self.check("a)", "column 2: ')' without a matching '('")
        self.check("()", "column 2: expected a condition (a field name, a value before 'in', "
                         "'not' or '('), found ')'")

    def test_unknown_operators_and_characters(self):
        self.check("a <> 1", "column 3: unknown operator '<>'")
        self.check("a === 1", "column 3: unknown operator '==='")
        self.check("a ! = 1", "column 3: unknown operator '!'")
        self.check("a == 1.5", "column 7: unexpected character '.'")
        self.check("_a", "column 1: unexpected character '_'")
        self.check("a\v== 1", "column 2: unexpected character '\\x0b'")
        self.check("a == " + "9" * 10000, "column 6: number too long")

    def test_missing_values(self):
        self.check("id ==", "column 6: expected a value (a number or a quoted string) after "
                            "'==', found the end of the filter")
        self.check("a == true", "column 6: expected a value (a number or a quoted string) "
                                "after '==', found 'true'")
        self.check("a == + 5", "column 6: unexpected character '+'")
        self.check("a =* 1", "column 6: expected a quoted glob pattern after '=*', found '1'")
        self.check('a =~ "x"', "column 6: expected a regular expression such as /text/ after "
                               "'=~', found '\"'")
        self.check('"x" in', "column 7: expected a field name after 'in', found the end of "
                             "the filter")
        self.check('"x" not f', "column 9: expected 'in' after the value \"x\", found 'f'")
        self.check("a or", "column 5: expected a condition (a field name, a value before 'in', "
                           "'not' or '('), found the end of the filter")

    def test_regular_expressions(self):
        self.check("a =~ /x/z", "column 9: unknown regular expression flag(s) 'z' "
                                "(known: i, s)")
        self.check("a =~ /x/Ii", "column 9: unknown regular expression flag(s) 'I' "
                                 "(known: i, s)")
        self.check("a =~ /(/", "column 6: invalid regular expression '(': missing ), "
                               "unterminated subpattern at position 0")
        self.check("a =~ /x", "column 6: unterminated regular expression: no closing / on "
                              "the same line")
        self.check("a =~ m", "column 6: expected a regular expression such as /text/ after "
                             "'=~', found 'm'")

    def test_trailing_garbage(self):
        self.check("a b", "column 3: expected 'and', 'or' or the end of the filter, found 'b'")
        self.check("a == 1 2", "column 8: expected 'and', 'or' or the end of the filter, "
                               "found '2'")
        self.check("a =~ /x/ i", "column 10: expected 'and', 'or' or the end of the filter, "
                                 "found 'i' (regular expression flags go directly after the "
                                 "closing delimiter)")

    def test_keywords_are_not_field_names(self):
        hint = " (and, or, not and in are operators, never field names)"
        self.check("not", "column 4: expected a condition (a field name, a value before "
                          "'in', 'not' or '('), found the end of the filter")
        self.check("a and or", "column 7: expected a condition (a field name, a value before "
                               f"'in', 'not' or '('), found 'or'{hint}")
        self.check('"x" in in', "column 8: expected a field name after 'in', found 'in'")

    def test_keyword_glued_to_a_number(self):
        # as in Ganeti, which reads "1and" as no keyword at all
        self.check("a == 1and b", "column 7: expected a space between the number and 'and'")

    def test_nesting_limit(self):
        # the JSON form's limit (MAX_DEPTH); Ganeti has none but takes exponential time
        self.assertEqual(parse("not " * 63 + "a")[0], "!")
        with self.assertRaises(OpPrereqError) as cm:
            parse("not " * 64 + "a")
        self.assertEqual(cm.exception.args, ("Invalid query filter: nested more than 64 "
                                             "levels deep", ECODE_INVAL))
        self.check("not " * 70 + "a", "column 257: nested more than 64 levels deep")
        self.assertEqual(parse("(" * 64 + "a" + ")" * 64), ["?", "a"])
        self.check("(" * 65 + "a" + ")" * 65, "column 65: nested more than 64 levels deep")
        self.check("(" * 10000, "column 65: nested more than 64 levels deep")

    def test_not_text(self):
        with self.assertRaises(OpPrereqError) as cm:
            parse(["==", "a", 1])
        self.assertEqual(cm.exception.args, ("Invalid query filter: expected text, got list",
                                             ECODE_INVAL))


class MakeFilterTest(SynchronousTestCase):
    def test_names_and_globs(self):
        self.assertIsNone(qlang.make_filter([], False))
        self.assertEqual(qlang.make_filter(["node1", "web*"], False), [
            "|", ["==", "name", "node1"], ["=~", "name", r"^web[^.]*(\..*)?$"]])
        self.assertEqual(qlang.make_filter(["default"], False, "uuid"),
                         ["|", ["==", "uuid", "default"]])

    def test_expression_detection(self):
        for char in sorted(qlang.FILTER_DETECTION_CHARS):
            self.assertTrue(qlang.is_filter_text(f"a{char}b"), repr(char))
        self.assertEqual(qlang.FILTER_DETECTION_CHARS, frozenset("\t\n\v\f\r !\"'()/<=>\\~"))
        self.assertEqual(qlang.make_filter(["a == 1"], False), ["==", "a", 1])
        # a word alone is a name; -F makes it an expression
        self.assertEqual(qlang.make_filter(["offline"], False), ["|", ["==", "name", "offline"]])
        self.assertEqual(qlang.make_filter(["offline"], True), ["?", "offline"])
        # several arguments are always names
        self.assertEqual(qlang.make_filter(["a", "b c"], False),
                         ["|", ["==", "name", "a"], ["==", "name", "b c"]])

    def test_force_filter_needs_one_argument(self):
        for args in ([], ["a", "b"]):
            with self.assertRaises(OpPrereqError) as cm:
                qlang.make_filter(args, True)
            self.assertEqual(cm.exception.args, ("Exactly one argument must be given as a "
                                                 "filter", ECODE_INVAL))

    def test_numeric_names(self):
        self.assertEqual(qlang.make_filter(["1", "+2", "03"], False, "id", numeric=True),
                         ["|", ["==", "id", 1], ["==", "id", 2], ["==", "id", 3]])
        self.assertEqual(qlang.make_filter(["id > 3"], False, "id", numeric=True),
                         [">", "id", 3])
        with self.assertRaises(OpPrereqError) as cm:
            qlang.make_filter(["1*"], False, "id", numeric=True)
        self.assertEqual(cm.exception.args, ("Invalid job ID passed: '1*'", ECODE_INVAL))

    def test_simple_filter(self):
        self.assertIsNone(qlang.make_simple_filter("status", []))
        self.assertEqual(qlang.make_simple_filter("status", ["error", "a*"]),
                         ["|", ["==", "status", "error"], ["==", "status", "a*"]])


class RenderTest(SynchronousTestCase):
    def test_round_trip_of_examples(self):
        for text in ('status == "success" and id > 3', "not (a or b) and c",
                     "a or b and c", "a and (b and c)", "'x\"' not in tags",
                     "name =~ m/^a\\/b/i", 'name =* "node?"', "not not a", "x == -3"):
            self.assertEqual(parse(qlang.render(parse(text))), parse(text), text)

    def test_output(self):
        self.assertEqual(qlang.render(["|", ["&", ["?", "a"], ["!", ["=[]", "t", "x"]]],
                                       ["=~", "n", "a/b"]]),
                         "a and not \"x\" in t or n =~ #a/b#")
        self.assertEqual(qlang.render(["&", ["|", ["?", "a"], ["?", "b"]], ["?", "c"]]),
                         "(a or b) and c")
        # every delimiter in use: "/" it is, escaped, as is each backslash
        self.assertEqual(qlang.render(["=~", "n", "/#^|\\\\"]), "n =~ /\\/#^|\\\\\\\\/")

    def test_normalisations(self):
        self.assertEqual(parse(qlang.render(["=", "a", 1])), ["==", "a", 1])
        self.assertEqual(qlang.render(["|", ["==", "name", "x"]]), 'name == "x"')
        self.assertEqual(qlang.render(["&", ["|", ["?", "a"]], ["?", "b"]]), "a and b")

    def test_what_cannot_be_written(self):
        for flt in (None, ["==", "a", 1.5], ["==", "a", True], ["|"], ["?", "and"],
                    ["?", "a-b"], ["==", "a", "x\ny"], ["==", "a", "\"'"], ["==", "a", "x\\"],
                    ["=~", "a", "\\t"]):
            self.assertRaises(ValueError, qlang.render, flt)
        self.assertRaises(OpPrereqError, qlang.render, ["~", "a"])


# --- properties ----------------------------------------------------------------

_fields = st.from_regex(r"[A-Za-z][A-Za-z0-9_/.]{0,6}", fullmatch=True).filter(
    lambda name: name not in qlang.KEYWORDS)
_safe = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\"'\\")
_strings = st.one_of(
    st.text(_safe, max_size=8),
    st.text(st.one_of(_safe, st.just('"')), max_size=8),
    st.text(st.one_of(_safe, st.just("'")), max_size=8),
    st.lists(st.sampled_from(["a", " ", "\\d", "\\\\", '""', "*", "?", "é", "\t"]),
             max_size=6).map("".join),
)
_values = st.one_of(st.integers(min_value=-10**20, max_value=10**20), _strings)


def _valid_regexp(text):
    try:
        re.compile(text)
    except re.error:
        return False
    return True


_regexps = st.tuples(
    st.sampled_from(["", "(?i)", "(?s)", "(?is)"]),
    st.lists(st.sampled_from(["a", "Z", "0", ".", ".*", "+", "?", "\\d", "\\.", "\\\\",
                              "[a-z]", "(x|y)", "/", "#", "^", "|", "$", " ", "\t", "\n",
                              "é", "\\/"]), max_size=8).map("".join),
).map("".join).filter(_valid_regexp)

_leaves = st.one_of(
    st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), _fields, _values)
    .map(list),
    st.tuples(st.just("=~"), _fields, _regexps).map(list),
    st.tuples(st.just("=[]"), _fields, _values).map(list),
    st.tuples(st.just("?"), _fields).map(list),
)
#: Filters in the normal form the parser produces (no "=", and/or of two or more).
_filters = st.recursive(_leaves, lambda sub: st.one_of(
    st.tuples(st.just("!"), sub).map(list),
    st.lists(sub, min_size=2, max_size=4).map(lambda xs: ["&", *xs]),
    st.lists(sub, min_size=2, max_size=4).map(lambda xs: ["|", *xs]),
), max_leaves=12)

#: Pieces of the syntax, to make random texts that are often nearly right.
_pieces = st.sampled_from([
    "a", "name", "x.y", "m", "i", "s", "==", "=", "!=", "<", "<=", ">=", "=~", "!~", "=*",
    "!*", "/x/", "/", "#", "|", "^", '"s"', "'t'", '"', "'", "1", "-2", "+", "and", "or",
    "not", "in", "(", ")", " ", " ", "\t", "\n", "\\", "*", "?", "é", "_", ".", "$",
])
_texts = st.one_of(st.text(max_size=30), st.lists(_pieces, max_size=14).map("".join))


class PropertyTest(SynchronousTestCase):
    @settings(max_examples=500, deadline=None)
    @given(_filters)
    def test_render_then_parse_gives_the_filter_back(self, flt):
        qlang.check_filter(flt)
        self.assertEqual(parse(qlang.render(flt)), flt)

    @settings(max_examples=1000, deadline=None)
    @given(_texts)
    def test_any_text_parses_or_gives_a_clear_error(self, text):
        try:
            result = parse(text)
        except OpPrereqError as err:
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertTrue(err.args[0].startswith("Invalid query filter"), err.args[0])
            return
        self.assertEqual(qlang.check_filter(result), result)
        self.assertEqual(parse(qlang.render(result)), result)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.text(min_size=1, max_size=10), max_size=4), st.booleans())
    def test_make_filter_gives_checked_filters_or_clear_errors(self, args, force):
        try:
            result = qlang.make_filter(args, force)
        except OpPrereqError as err:
            self.assertEqual(err.args[1], ECODE_INVAL)
            return
        if result is not None:
            qlang.check_filter(result)
        if not force and not (len(args) == 1 and qlang.is_filter_text(args[0])):
            self.assertEqual(result, qlang.make_name_filter(args))


# --- the corpus, against real Ganeti ---------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "data", "qlang-corpus.txt")
DEBIAN_PYTHON = "/usr/bin/python3"
DEBIAN_GANETI = "/usr/share/ganeti/3.0"

_GANETI_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ganeti import qlang

def plain(value):
    if hasattr(value, "asList"):
        value = value.asList()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value

out = []
for case in json.load(sys.stdin):
    try:
        if case[0] == "parse":
            result = qlang.ParseFilter(case[1])
        else:
            args, force, field, numeric = case[1:]
            result = qlang.MakeFilter(args, force, namefield=field, isnumeric=numeric)
        out.append({"ok": plain(result)})
    except Exception as err:
        out.append({"error": type(err).__name__})
json.dump(out, sys.stdout)
"""

_PARSE_ERROR = {"error": "QueryFilterParseError"}

#: Corpus entries where we differ from Ganeti on purpose (docs/qlang.md):
#: text -> (Ganeti's outcome, ours, why).
EXPECTED_DIFFERENCES = {
    "name =~ /x/ and b": (
        _PARSE_ERROR, {"ok": ["&", ["=~", "name", "x"], ["?", "b"]]},
        "Ganeti reads the word after a regular expression as its flags, even after a space"),
    "name =~ /x/ or b": (
        _PARSE_ERROR, {"ok": ["|", ["=~", "name", "x"], ["?", "b"]]},
        "as above"),
    "name =~ /x/ i": (
        {"ok": ["=~", "name", "(?i)x"]},
        {"error": "Invalid query filter at column 13: expected 'and', 'or' or the end of the "
                  "filter, found 'i' (regular expression flags go directly after the closing "
                  "delimiter)"},
        "flags must follow the closing delimiter directly"),
    "a=~ m /x/ i": (
        {"ok": ["=~", "a", "(?i)x"]},
        {"error": "Invalid query filter at column 11: expected 'and', 'or' or the end of the "
                  "filter, found 'i' (regular expression flags go directly after the closing "
                  "delimiter)"},
        "as above"),
    "not": (
        {"ok": ["?", "not"]},
        {"error": "Invalid query filter at column 4: expected a condition (a field name, a "
                  "value before 'in', 'not' or '('), found the end of the filter"},
        "and, or, not and in are never field names"),
    "not not": (
        {"ok": ["!", ["?", "not"]]},
        {"error": "Invalid query filter at column 8: expected a condition (a field name, a "
                  "value before 'in', 'not' or '('), found the end of the filter"},
        "as above"),
    "not and": (
        {"ok": ["!", ["?", "and"]]},
        {"error": "Invalid query filter at column 5: expected a condition (a field name, a "
                  "value before 'in', 'not' or '('), found 'and' (and, or, not and in are "
                  "operators, never field names)"},
        "as above"),
    "and and and": (
        {"ok": ["&", ["?", "and"], ["?", "and"]]},
        {"error": "Invalid query filter at column 1: expected a condition (a field name, a "
                  "value before 'in', 'not' or '('), found 'and' (and, or, not and in are "
                  "operators, never field names)"},
        "as above"),
    "a and or": (
        {"ok": ["&", ["?", "a"], ["?", "or"]]},
        {"error": "Invalid query filter at column 7: expected a condition (a field name, a "
                  "value before 'in', 'not' or '('), found 'or' (and, or, not and in are "
                  "operators, never field names)"},
        "as above"),
    '"x" in in': (
        {"ok": ["=[]", "in", "x"]},
        {"error": "Invalid query filter at column 8: expected a field name after 'in', found "
                  "'in'"},
        "as above"),
    '"x" infield': (
        {"ok": ["=[]", "field", "x"]},
        {"error": "Invalid query filter at column 5: expected 'in' or 'not in' after the "
                  "value \"x\", found 'infield'"},
        "'in' and 'not in' are whole words; Ganeti matches them as prefixes"),
    '"x" notinb': (
        {"ok": ["!", ["=[]", "b", "x"]]},
        {"error": "Invalid query filter at column 5: expected 'in' or 'not in' after the "
                  "value \"x\", found 'notinb'"},
        "as above"),
}


def load_corpus(path=CORPUS):
    """The corpus entries: ("parse", text) or ("make", args, force, field, numeric)."""
    cases = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith("@json "):
                cases.append(("parse", json.loads(line[len("@json "):])))
            elif line.startswith("@make "):
                spec = json.loads(line[len("@make "):])
                cases.append(("make", spec["args"], spec["force"], spec["field"],
                              spec["numeric"]))
            else:
                cases.append(("parse", line))
    return cases


@functools.lru_cache(maxsize=1)
def ganeti_results():
    """Real Ganeti's outcome for every corpus entry, from one subprocess."""
    qlang_py = os.path.join(DEBIAN_GANETI, "ganeti", "qlang.py")
    missing = [p for p in (DEBIAN_PYTHON, qlang_py) if not os.path.exists(p)]
    if missing:
        raise AssertionError(f"{', '.join(missing)} missing: the corpus test compares with "
                             "Debian's Ganeti 3.0 parser; install it with "
                             "'make install-compat' (package ganeti-3.0)")
    cases = [list(case) for case in load_corpus()]
    proc = subprocess.run([DEBIAN_PYTHON, "-I", "-c", _GANETI_SCRIPT, DEBIAN_GANETI],
                          input=json.dumps(cases),
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"Ganeti's parser failed to run: {proc.stderr}")
    return json.loads(proc.stdout)


def our_result(case):
    try:
        if case[0] == "parse":
            return {"ok": qlang.parse_filter(case[1])}
        args, force, field, numeric = case[1:]
        return {"ok": qlang.make_filter(args, force, field, numeric)}
    except OpPrereqError as err:
        return {"error": err.args[0]}


@pytest.mark.subprocess
class CorpusTest(SynchronousTestCase):
    def test_corpus_is_large_enough(self):
        cases = load_corpus()
        self.assertGreaterEqual(len(cases), 60)
        texts = [case[1] for case in cases if case[0] == "parse"]
        self.assertEqual(len(texts), len(set(texts)), "duplicate entries")
        for text in EXPECTED_DIFFERENCES:
            self.assertIn(text, texts, "an expected difference missing from the corpus")

    def test_same_as_ganeti(self):
        cases = load_corpus()
        results = ganeti_results()
        self.assertEqual(len(results), len(cases))
        mismatches = []
        for case, theirs in zip(cases, results, strict=True):
            ours = our_result(case)
            if case[0] == "parse" and case[1] in EXPECTED_DIFFERENCES:
                continue
            both_fail = "error" in theirs and "error" in ours
            if not both_fail and theirs != ours:
                mismatches.append(f"{case!r}: Ganeti {theirs}, ours {ours}")
        self.assertEqual(mismatches, [])

    def test_missing_ganeti_fails_with_a_clear_message(self):
        self.patch(sys.modules[__name__], "DEBIAN_PYTHON", "/nonexistent/python3")
        with self.assertRaises(AssertionError) as cm:
            ganeti_results.__wrapped__()
        self.assertIn("/nonexistent/python3 missing", str(cm.exception))
        self.assertIn("make install-compat", str(cm.exception))

    def test_expected_differences(self):
        cases = load_corpus()
        results = dict(zip([json.dumps(case) for case in cases], ganeti_results(),
                           strict=True))
        for text, (theirs, ours, _why) in EXPECTED_DIFFERENCES.items():
            self.assertEqual(results[json.dumps(("parse", text))], theirs, text)
            self.assertEqual(our_result(("parse", text)), ours, text)
