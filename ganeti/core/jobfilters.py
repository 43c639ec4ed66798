"""Job filter rules (docs/filters.md): checking and matching.

A rule has a uuid, a watermark (the highest job id when it was added), a
priority, a list of predicates, an action and a reason trail.  Rules are
evaluated in ascending ``(priority, watermark, uuid)``; the rule that
*applies* to a job is the first one whose predicates all match and whose
action is not CONTINUE.  This module is pure: it checks rules coming from
outside (:func:`check_rule_fields`), compiles them (:class:`CompiledRule`),
finds the applying rule (:func:`applying_rule`) and the ad-hoc rate-limit
buckets of a job (:func:`rate_limit_buckets`).  The job queue decides what
the action means for a job.

Predicates are ``[name, filter]`` with a filter in the JSON form of the
query language (:mod:`ganeti.core.qlang`):

- ``jobid``: one field, ``id``; a value may be a number or the string
  ``"watermark"`` (the rule's watermark).
- ``opcode``: the fields are the keys of an opcode (``OP_ID`` and the
  parameters; ``a.b`` reaches into nested objects); true if the filter holds
  for at least one opcode of the job.
- ``reason``: the fields ``source``, ``reason`` and ``timestamp`` of a
  reason-trail entry; true if the filter holds for at least one entry of
  any opcode.

As in Ganeti's scheduler, a test that cannot be evaluated (an unknown
field, values of different types, an operator that a predicate does not
support) makes the whole predicate false rather than an error: rules are
checked when they are added, jobs are not.  Inside ``jobid`` and
``reason`` only comparisons are supported, and (unlike Ganeti 3.0, which
evaluates it as false) ``=~`` on the text fields of ``reason``, so that the
design's maintenance example works as written.
"""

from __future__ import annotations

import operator
import re
import uuid as uuidmod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core import qlang
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

ACCEPT = "ACCEPT"
PAUSE = "PAUSE"
REJECT = "REJECT"
CONTINUE = "CONTINUE"
RATE_LIMIT = "RATE_LIMIT"
SIMPLE_ACTIONS = (ACCEPT, PAUSE, REJECT, CONTINUE)

PREDICATE_JOBID = "jobid"
PREDICATE_OPCODE = "opcode"
PREDICATE_REASON = "reason"
PREDICATE_NAMES = (PREDICATE_JOBID, PREDICATE_OPCODE, PREDICATE_REASON)

#: The field names of a rule, in Ganeti's order for ``gnt-filter list``.
RULE_FIELDS = ("uuid", "watermark", "priority", "predicates", "action", "reason_trail")

#: ``rate-limit:<n>:<label>`` in a reason-trail ``reason`` makes bucket ``<n>:<label>``.
_BUCKET_RE = re.compile(r"rate-limit:([0-9]+):(.*)", re.DOTALL)

_COMPARISONS = frozenset({c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY, c.QLANG_OP_NOT_EQUAL,
                          c.QLANG_OP_LT, c.QLANG_OP_LE, c.QLANG_OP_GT, c.QLANG_OP_GE})


def _invalid(message: str) -> OpPrereqError:
    return OpPrereqError(f"Invalid filter rule: {message}", ECODE_INVAL)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- checking rules from outside ------------------------------------------------------


def check_uuid(value: Any) -> str:
    """A rule uuid from a client: a string that parses as a UUID (as Ganeti, any case)."""
    if not isinstance(value, str):
        raise _invalid(f"the uuid must be a string, got {_show(value)}")
    try:
        uuidmod.UUID(value)
    except ValueError:
        raise OpPrereqError(f"Unable to parse UUID {_show(value)}", ECODE_INVAL) from None
    return value


def check_priority(value: Any) -> int:
    """A non-negative integer."""
    if not _is_int(value) or value < 0:
        raise _invalid(f"the priority must be a non-negative integer, got {_show(value)}")
    return int(value)


def check_action(value: Any) -> Any:
    """``ACCEPT``, ``PAUSE``, ``REJECT``, ``CONTINUE`` or ``["RATE_LIMIT", n]`` with n > 0."""
    if isinstance(value, str) and value in SIMPLE_ACTIONS:
        return value
    if isinstance(value, list) and len(value) == 2 and value[0] == RATE_LIMIT:
        if not _is_int(value[1]) or value[1] < 1:
            raise _invalid(f"RATE_LIMIT needs a positive integer, got {_show(value[1])}")
        return [RATE_LIMIT, int(value[1])]
    raise _invalid(f"unknown action {_show(value)}; use one of {', '.join(SIMPLE_ACTIONS)} "
                   f"or [\"RATE_LIMIT\", n] with n a positive integer")


def check_new_predicates(value: Any) -> list[Any]:
    """The predicates of a rule being added or replaced, normalised as Ganeti stores
    them (:func:`normalise_filter`, refusing what Ganeti's luxid cannot parse)."""
    return [[name, normalise_filter(expr, name, strict=True)]
            for name, expr in check_predicates(value)]


def check_predicates(value: Any) -> list[Any]:
    """A list of ``[name, filter]``; each filter is checked and compiled once here.

    Returns them normalised leniently (rules already stored keep values that
    :func:`check_new_predicates` would refuse, so that an old config loads).
    """
    if not isinstance(value, list):
        raise _invalid(f"the predicates must be a list, got {_show(value)}")
    for predicate in value:
        if not (isinstance(predicate, list) and len(predicate) == 2):
            raise _invalid(f"a predicate must be a list [name, filter], got {_show(predicate)}")
        name, expr = predicate
        if name not in PREDICATE_NAMES:
            raise _invalid(f"unknown predicate {_show(name)}; use one of "
                           f"{', '.join(PREDICATE_NAMES)}")
        try:
            qlang.check_filter(expr)
        except OpPrereqError as err:
            raise _invalid(f"predicate {name}: {err.args[0]}") from None
        _compile_predicate(name, expr, 0)  # also checks what only evaluation would find
    return [[name, normalise_filter(expr, name)] for name, expr in value]


def normalise_filter(expr: Any, where: str = "filter", strict: bool = False) -> Any:
    """A (checked) predicate filter as Ganeti stores and shows it.

    ``=`` becomes ``==``, a number that is integral becomes an integer.
    ``strict``: as in Ganeti's luxid, a value must be a string or an
    integer (a fraction, a boolean or null is refused, ``wrong_input``).
    """
    if not isinstance(expr, list) or not expr:
        return expr
    op = expr[0]
    if op in (c.QLANG_OP_AND, c.QLANG_OP_OR):
        return [op, *(normalise_filter(sub, where, strict) for sub in expr[1:])]
    if op == c.QLANG_OP_NOT:
        return [op, normalise_filter(expr[1], where, strict)]
    if op == c.QLANG_OP_TRUE or len(expr) != 3:
        return list(expr)
    if op == c.QLANG_OP_EQUAL_LEGACY:
        op = c.QLANG_OP_EQUAL
    return [op, expr[1], _filter_value(expr[2], where, strict)]


def _filter_value(value: Any, where: str, strict: bool) -> Any:
    if isinstance(value, str) or _is_int(value):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not strict:
        return value
    if isinstance(value, float):
        raise _invalid(f"predicate {where}: a filter value must be a string or an integer, "
                       f"got the fraction {_show(value)}")
    raise _invalid(f"predicate {where}: a filter value must be a string or an integer, "
                   f"got {_show(value)}")


def check_reason_trail(value: Any) -> list[list[Any]]:
    """A reason trail: a list of ``[source, reason, timestamp_ns]``."""
    if not isinstance(value, list):
        raise _invalid(f"the reason trail must be a list, got {_show(value)}")
    trail = []
    for entry in value:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], str) and _is_int(entry[2])):
            raise _invalid(f"a reason-trail entry must be [source, reason, timestamp in "
                           f"nanoseconds], got {_show(entry)}")
        trail.append(list(entry))
    return trail


def action_text(action: Any) -> str:
    """``PAUSE`` or ``RATE_LIMIT 3``, for messages."""
    if isinstance(action, list):
        return " ".join(str(part) for part in action)
    return str(action)


# --- evaluation --------------------------------------------------------------------------


class _Invalid(Exception):
    """A test that cannot be evaluated: its predicate is false."""


class _Missing:
    """The value of a field an item does not have."""


_MISSING = _Missing()
Getter = Callable[[Any], Any]  # item -> field value, or _MISSING
Test = Callable[[Any], bool]  # item -> whether the test holds; raises _Invalid


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_kind(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if _number(a):
        return _number(b)
    return isinstance(a, str) and isinstance(b, str)


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    c.QLANG_OP_EQUAL: operator.eq,
    c.QLANG_OP_EQUAL_LEGACY: operator.eq,
    c.QLANG_OP_NOT_EQUAL: operator.ne,
    c.QLANG_OP_LT: operator.lt,
    c.QLANG_OP_LE: operator.le,
    c.QLANG_OP_GT: operator.gt,
    c.QLANG_OP_GE: operator.ge,
}
_EQUALITY = frozenset({c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY, c.QLANG_OP_NOT_EQUAL})


def _never(item: Any) -> bool:
    raise _Invalid()


def _comparison(op: str, get: Getter, value: Any) -> Test:
    fn = _COMPARE[op]
    ordered = op not in _EQUALITY
    if ordered and isinstance(value, bool):
        return _never
    value_type = type(value)

    def test(item: Any) -> bool:
        actual = get(item)
        if type(actual) is value_type:  # the usual case, checked cheaply
            return bool(fn(actual, value))
        if not _same_kind(actual, value) or (ordered and isinstance(actual, bool)):
            raise _Invalid()
        return bool(fn(actual, value))
    return test


def _regexp(get: Getter, pattern: re.Pattern[str]) -> Test:
    search = pattern.search

    def test(item: Any) -> bool:
        actual = get(item)
        if not isinstance(actual, str):
            raise _Invalid()
        return search(actual) is not None
    return test


def _contains(get: Getter, value: Any) -> Test:
    def test(item: Any) -> bool:
        actual = get(item)
        if not isinstance(actual, list):
            raise _Invalid()
        return any(_same_kind(x, value) and x == value for x in actual)
    return test


def _truth(get: Getter) -> Test:
    def test(item: Any) -> bool:
        actual = get(item)
        if not isinstance(actual, bool):
            raise _Invalid()
        return actual
    return test


def _compile(expr: Any, leaf: Callable[[list[Any]], Test]) -> Test:
    """``expr`` (already structurally checked) as a test; ``leaf`` compiles the tests."""
    if expr is None:
        return lambda item: True
    op = expr[0]
    if op in (c.QLANG_OP_OR, c.QLANG_OP_AND):
        children = [_compile(sub, leaf) for sub in expr[1:]]
        # Every child is evaluated, so that an invalid test anywhere is noticed
        # (Ganeti evaluates the whole filter; an invalid test makes it false).
        if op == c.QLANG_OP_OR:
            return lambda item: any([child(item) for child in children])
        return lambda item: all([child(item) for child in children])
    if op == c.QLANG_OP_NOT:
        child = _compile(expr[1], leaf)
        return lambda item: not child(item)
    return leaf(expr)


def _jobid_leaf(watermark: int) -> Callable[[list[Any]], Test]:
    def leaf(expr: list[Any]) -> Test:
        op = expr[0]
        if op not in _COMPARISONS or len(expr) != 3 or expr[1] != "id":
            return _never
        value = expr[2]
        if value == "watermark":
            value = watermark
        elif not _number(value):
            return _never
        return _comparison(op, lambda job_id: job_id, value)
    return leaf


_REASON_FIELDS = {"source": 0, "reason": 1, "timestamp": 2}


def _reason_leaf(expr: list[Any]) -> Test:
    op = expr[0]
    if len(expr) != 3 or expr[1] not in _REASON_FIELDS:
        return _never
    get = operator.itemgetter(_REASON_FIELDS[expr[1]])
    if op in _COMPARISONS:
        return _comparison(op, get, expr[2])
    if op == c.QLANG_OP_REGEXP and expr[1] != "timestamp" and isinstance(expr[2], str):
        return _regexp(get, re.compile(expr[2]))
    return _never


def _opcode_getter(field: str) -> Getter:
    parts = field.split(".")
    if len(parts) == 1:
        return lambda op: op.get(field, _MISSING)

    def get(op: Any) -> Any:
        value = op
        for part in parts:
            if not isinstance(value, Mapping) or part not in value:
                return _MISSING
            value = value[part]
        return value
    return get


def _opcode_leaf(expr: list[Any]) -> Test:
    op = expr[0]
    get = _opcode_getter(expr[1])
    if op == c.QLANG_OP_TRUE:
        return _truth(get)
    value = expr[2]
    if op in _COMPARISONS:
        return _comparison(op, get, value)
    if op == c.QLANG_OP_REGEXP:
        return _regexp(get, re.compile(value))
    return _contains(get, value)


def _compile_predicate(name: str, expr: Any, watermark: int) -> Test:
    if name == PREDICATE_JOBID:
        return _compile(expr, _jobid_leaf(watermark))
    if name == PREDICATE_REASON:
        return _compile(expr, _reason_leaf)
    return _compile(expr, _opcode_leaf)


def required_op_ids(expr: Any) -> frozenset[str] | None:
    """The OP_IDs an opcode must have for ``expr`` to hold, if the filter says so.

    ``["==", "OP_ID", X]``, an ``&`` containing one, or an ``|`` of such:
    a job none of whose opcodes has one of these ids cannot match.  None
    when the filter does not restrict OP_ID that way.
    """
    if not isinstance(expr, list) or not expr:
        return None
    op = expr[0]
    if (op in (c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY) and len(expr) == 3
            and expr[1] == "OP_ID" and isinstance(expr[2], str)):
        return frozenset({expr[2]})
    if op == c.QLANG_OP_AND:
        found = [ids for ids in map(required_op_ids, expr[1:]) if ids is not None]
        return frozenset.intersection(*found) if found else None
    if op == c.QLANG_OP_OR and len(expr) > 1:
        subs = [required_op_ids(sub) for sub in expr[1:]]
        if any(ids is None for ids in subs):
            return None
        return frozenset().union(*[ids for ids in subs if ids is not None])
    return None


@dataclass(frozen=True)
class JobFacts:
    """What predicates look at: the job id, its opcodes (input form) and reason entries."""

    id: int
    ops: tuple[Mapping[str, Any], ...]
    reasons: tuple[Sequence[Any], ...]
    op_ids: frozenset[str] = frozenset()

    @classmethod
    def of(cls, job_id: int, ops: Iterable[Mapping[str, Any]]) -> JobFacts:
        """The facts of job ``job_id`` with opcodes ``ops``."""
        op_list = tuple(ops)
        reasons = tuple(entry for op in op_list for entry in (op.get("reason") or ())
                        if isinstance(entry, (list, tuple)) and len(entry) == 3)
        op_ids = frozenset(str(op["OP_ID"]) for op in op_list
                           if isinstance(op.get("OP_ID"), str))
        return cls(job_id, op_list, reasons, op_ids)


def _any_holds(test: Test, items: Iterable[Any]) -> bool:
    for item in items:
        try:
            if test(item):
                return True
        except _Invalid:
            continue
    return False


class CompiledRule:
    """A checked rule, ready to be matched against jobs many times."""

    def __init__(self, uuid: str, watermark: int, priority: int, predicates: list[Any],
                 action: Any, reason_trail: list[Any]) -> None:
        self.uuid = uuid
        self.watermark = watermark
        self.priority = priority
        self.predicates = predicates
        self.action = action
        self.reason_trail = reason_trail
        self.key = (priority, watermark, uuid)
        self.kind = action[0] if isinstance(action, list) else action
        self.limit = int(action[1]) if isinstance(action, list) else 0
        self._tests = [(name, _compile_predicate(name, expr, watermark))
                       for name, expr in predicates]
        # A cheap first test: the opcode ids a job needs for the rule to match.
        needed = [required_op_ids(expr) for name, expr in predicates
                  if name == PREDICATE_OPCODE]
        sets = [ids for ids in needed if ids is not None]
        self._op_ids = frozenset.intersection(*sets) if sets else None

    @classmethod
    def from_object(cls, rule: Any) -> CompiledRule:
        """From a config :class:`~ganeti.core.objects.FilterRule` (trusted, already checked)."""
        return cls(rule.uuid, rule.watermark, rule.priority, rule.predicates, rule.action,
                   rule.reason_trail)

    def same_as(self, other: CompiledRule) -> bool:
        """Whether both rules have the same uuid and content (reason trail included:
        it shows in the reasons jobs wait)."""
        return (self.key == other.key and self.predicates == other.predicates
                and self.action == other.action and self.reason_trail == other.reason_trail)

    def matches(self, job: JobFacts) -> bool:
        """Whether every predicate holds for ``job`` (true without predicates)."""
        if self._op_ids is not None and self._op_ids.isdisjoint(job.op_ids):
            return False
        for name, test in self._tests:
            if name == PREDICATE_JOBID:
                try:
                    if not test(job.id):
                        return False
                except _Invalid:
                    return False
            elif not _any_holds(test, job.ops if name == PREDICATE_OPCODE else job.reasons):
                return False
        return True

    def describe(self) -> str:
        """``filter rule <uuid> (PAUSE, reason "...")`` for messages."""
        reasons = [entry[1] for entry in self.reason_trail
                   if isinstance(entry, list) and len(entry) == 3 and entry[1]]
        extra = f", reason {reasons[0]!r}" if reasons else ""
        return f"filter rule {self.uuid} ({action_text(self.action)}{extra})"


def sorted_rules(rules: Iterable[CompiledRule]) -> list[CompiledRule]:
    """Rules in evaluation order: ascending (priority, watermark, uuid)."""
    return sorted(rules, key=lambda rule: rule.key)


def applying_rule(rules: Sequence[CompiledRule], job: JobFacts) -> CompiledRule | None:
    """The first rule (of ``rules``, in evaluation order) whose predicates all match
    ``job`` and whose action is not CONTINUE; None if there is none."""
    for rule in rules:
        if rule.kind != CONTINUE and rule.matches(job):
            return rule
    return None


def rate_limit_buckets(job: JobFacts) -> frozenset[str]:
    """The ad-hoc buckets ``"<n>:<label>"`` of ``job`` (``rate-limit:<n>:<label>`` reasons).

    ``n`` must be a positive integer; buckets with different ``n`` are distinct.
    """
    buckets = set()
    for entry in job.reasons:
        reason = entry[1]
        if not isinstance(reason, str):
            continue
        match = _BUCKET_RE.fullmatch(reason)
        if match is not None and int(match.group(1)) > 0:
            buckets.add(f"{int(match.group(1))}:{match.group(2)}")
    return frozenset(buckets)


def bucket_limit(bucket: str) -> int:
    """How many jobs of ``bucket`` may run at once."""
    return int(bucket.split(":", 1)[0])


def rule_dict(rule: Any) -> dict[str, Any]:
    """The six fields of a rule object as Ganeti shows them."""
    return {name: getattr(rule, name) for name in RULE_FIELDS}
