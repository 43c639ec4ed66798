"""Ganeti query filters: JSON prefix lists, checked up front, then evaluated.

A filter is ``null`` (everything matches) or a list whose first element is an
operator::

    ["|", f1, f2, ...]   any of the filters holds      ["&", f1, ...]  all hold
    ["!", f]             f does not hold                ["?", field]    field is true
    ["==", field, v]     equal ("=" is the old spelling)
    ["!=", field, v]     ["<", ...] [">", ...] ["<=", ...] [">=", ...]
    ["=~", field, re]    the text matches the regular expression (search)
    ["=[]", field, v]    the list contains v

Values are JSON strings or numbers (booleans only against boolean fields).
:func:`compile_filter` checks the whole structure before anything is
evaluated: operators, operand counts, field names and, when the field kinds
are known, whether a value can be compared with its field.  Every problem
is an ``OpPrereqError(..., "wrong_input")``.  ``gnt-job list 1 2`` sends
``["|", ["==", "id", 1], ["==", "id", 2]]``.

Evaluation follows Ganeti's luxid where Python and Haskell differ: a test
on a value that is not available (no data, unavailable, offline) accepts
the item, and comparing values of different JSON types is an error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

#: ``getter(field) -> (status, value)`` for the item being tested.
Getter = Callable[[str], tuple[int, Any]]

#: How deeply filters may nest (a guard for the recursion, far above real use).
MAX_DEPTH = 64

_LOGIC_OPS = frozenset({c.QLANG_OP_OR, c.QLANG_OP_AND})
_EQUALITY_OPS = frozenset({c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY, c.QLANG_OP_NOT_EQUAL})
_ORDER_OPS = frozenset({c.QLANG_OP_LT, c.QLANG_OP_LE, c.QLANG_OP_GT, c.QLANG_OP_GE})
_BINARY_OPS = _EQUALITY_OPS | _ORDER_OPS | {c.QLANG_OP_REGEXP, c.QLANG_OP_CONTAINS}
ALL_OPERATORS = _LOGIC_OPS | _BINARY_OPS | {c.QLANG_OP_NOT, c.QLANG_OP_TRUE}

_ORDER_FN: dict[str, Callable[[Any, Any], bool]] = {
    c.QLANG_OP_LT: lambda a, b: bool(a < b),
    c.QLANG_OP_LE: lambda a, b: bool(a <= b),
    c.QLANG_OP_GT: lambda a, b: bool(a > b),
    c.QLANG_OP_GE: lambda a, b: bool(a >= b),
}


@dataclass(frozen=True)
class FieldSpec:
    """What the filter needs to know about a field.

    ``kind`` is a ``QFT_*`` kind.  ``split_timestamp`` marks values stored
    as ``[seconds, microseconds]`` that compare as one number;
    ``hostname`` lets ``==`` match a short name against a full one
    (``node1`` matches ``node1.example.com``), as Ganeti does for names.
    """

    kind: str
    split_timestamp: bool = False
    hostname: bool = False


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _invalid(message: str) -> OpPrereqError:
    return OpPrereqError(f"Invalid query filter: {message}", ECODE_INVAL)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if _is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_split_timestamp(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value))


def merge_timestamp(value: list[int]) -> float:
    """``[seconds, microseconds]`` as one float."""
    return float(value[0]) + value[1] / 1e6


def hostname_matches(name: str, key: str) -> bool:
    """Whether ``key`` names ``name`` (equal, or a leading dot-separated part).

    Case-insensitive: ``node1`` and ``NODE1.example`` both match
    ``node1.example.com``; ``node1.ex`` does not.
    """
    name_l, key_l = name.lower(), key.lower()
    return name_l == key_l or name_l.startswith(key_l + ".")


class Filter:
    """A checked filter; :meth:`matches` evaluates it for one item."""

    def matches(self, getter: Getter) -> bool:
        """Whether the item seen through ``getter`` passes the filter."""
        raise NotImplementedError

    def fields(self) -> frozenset[str]:
        """The names of the fields the filter reads."""
        raise NotImplementedError


class _All(Filter):
    def matches(self, getter: Getter) -> bool:
        return True

    def fields(self) -> frozenset[str]:
        return frozenset()


MATCH_ALL: Filter = _All()


class _Logic(Filter):
    def __init__(self, op: str, children: list[Filter]) -> None:
        self.is_or = op == c.QLANG_OP_OR
        self.children = children

    def matches(self, getter: Getter) -> bool:
        if self.is_or:
            return any(child.matches(getter) for child in self.children)
        return all(child.matches(getter) for child in self.children)

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(child.fields() for child in self.children))


class _Not(Filter):
    def __init__(self, child: Filter) -> None:
        self.child = child

    def matches(self, getter: Getter) -> bool:
        return not self.child.matches(getter)

    def fields(self) -> frozenset[str]:
        return self.child.fields()


class _FieldTest(Filter):
    """A test on one field; items whose value is not available are accepted."""

    def __init__(self, field: str) -> None:
        self.field = field

    def matches(self, getter: Getter) -> bool:
        status, value = getter(self.field)
        if status != c.RS_NORMAL:
            return True
        return self.test(value)

    def test(self, value: Any) -> bool:
        raise NotImplementedError

    def fields(self) -> frozenset[str]:
        return frozenset({self.field})


class _True(_FieldTest):
    def test(self, value: Any) -> bool:
        return bool(value)


class _Compare(_FieldTest):
    def __init__(self, op: str, field: str, value: Any, spec: FieldSpec | None) -> None:
        super().__init__(field)
        self.op = op
        self.value = value
        self.spec = spec or FieldSpec(c.QFT_OTHER)

    def _mismatch(self, value: Any) -> OpPrereqError:
        return OpPrereqError(
            f"Query filter: cannot compare field '{self.field}' ({_type_name(value)} "
            f"{_show(value)}) with {_type_name(self.value)} {_show(self.value)}",
            ECODE_INVAL)

    def test(self, value: Any) -> bool:
        rhs = self.value
        if self.spec.split_timestamp and _is_split_timestamp(value):
            value = merge_timestamp(value)
        if self.op in _EQUALITY_OPS:
            if (self.spec.hostname and isinstance(value, str) and isinstance(rhs, str)):
                equal = hostname_matches(value, rhs)
            elif _same_type(value, rhs):
                equal = value == rhs
            else:
                raise self._mismatch(value)
            return equal if self.op != c.QLANG_OP_NOT_EQUAL else not equal
        if not _same_type(value, rhs) or isinstance(value, bool):
            raise self._mismatch(value)
        return _ORDER_FN[self.op](value, rhs)


class _Regexp(_FieldTest):
    def __init__(self, field: str, pattern: re.Pattern[str]) -> None:
        super().__init__(field)
        self.pattern = pattern

    def test(self, value: Any) -> bool:
        if not isinstance(value, str):
            raise OpPrereqError(f"Query filter: field '{self.field}' is a "
                                f"{_type_name(value)}, a regular expression needs text",
                                ECODE_INVAL)
        return self.pattern.search(value) is not None


class _Contains(_FieldTest):
    def __init__(self, field: str, value: Any) -> None:
        super().__init__(field)
        self.value = value

    def test(self, value: Any) -> bool:
        if not isinstance(value, list):
            raise OpPrereqError(f"Query filter: field '{self.field}' is a "
                                f"{_type_name(value)}, '=[]' needs a list", ECODE_INVAL)
        return any(_same_type(item, self.value) and item == self.value for item in value)


def _same_type(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if _is_number(a) and _is_number(b):
        return True
    return isinstance(a, str) and isinstance(b, str)


# --- checking --------------------------------------------------------------

_KIND_VALUES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    c.QFT_TEXT: ("a string", lambda v: isinstance(v, str)),
    c.QFT_BOOL: ("a boolean", lambda v: isinstance(v, bool)),
    c.QFT_NUMBER: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    c.QFT_UNIT: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    c.QFT_NUMBER_FLOAT: ("a number", _is_number),
    c.QFT_TIMESTAMP: ("a number", _is_number),
}


class _Compiler:
    def __init__(self, fields: Mapping[str, FieldSpec] | None) -> None:
        self.known = fields

    def field(self, name: Any, where: list[Any]) -> FieldSpec | None:
        if not isinstance(name, str) or not name:
            raise _invalid(f"field name must be a non-empty string, got {_show(name)} "
                           f"in {_show(where)}")
        if self.known is None:
            return None
        spec = self.known.get(name)
        if spec is None:
            raise _invalid(f"unknown field '{name}'")
        return spec

    def compile(self, data: Any, depth: int) -> Filter:
        if not isinstance(data, list) or not data:
            raise _invalid(f"expected an operator list, got {_show(data)}")
        if depth >= MAX_DEPTH:
            raise _invalid(f"nested more than {MAX_DEPTH} levels deep")
        op, operands = data[0], data[1:]
        if not isinstance(op, str) or op not in ALL_OPERATORS:
            raise _invalid(f"unknown operator {_show(op)} in {_show(data)}")
        if op in _LOGIC_OPS:
            return _Logic(op, [self.compile(sub, depth + 1) for sub in operands])
        if op in (c.QLANG_OP_NOT, c.QLANG_OP_TRUE):
            if len(operands) != 1:
                raise _invalid(f"operator '{op}' takes exactly one operand, "
                               f"got {len(operands)} in {_show(data)}")
            if op == c.QLANG_OP_NOT:
                return _Not(self.compile(operands[0], depth + 1))
            self.field(operands[0], data)
            return _True(operands[0])
        if len(operands) != 2:
            raise _invalid(f"operator '{op}' takes a field and a value, "
                           f"got {len(operands)} operand(s) in {_show(data)}")
        name, value = operands
        spec = self.field(name, data)
        return self.binary(op, name, value, spec, data)

    def binary(self, op: str, name: str, value: Any, spec: FieldSpec | None,
               where: list[Any]) -> Filter:
        if not (isinstance(value, str) or _is_number(value) or isinstance(value, bool)):
            raise _invalid(f"value must be a string or a number, got {_show(value)} "
                           f"in {_show(where)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _invalid(f"value must be finite, got {value} in {_show(where)}")
        kind = spec.kind if spec is not None else c.QFT_OTHER
        if op == c.QLANG_OP_REGEXP:
            if not isinstance(value, str):
                raise _invalid(f"'=~' needs a regular expression string, got "
                               f"{_show(value)} in {_show(where)}")
            if kind not in (c.QFT_TEXT, c.QFT_OTHER):
                raise _invalid(f"'=~' needs a text field, '{name}' is of kind '{kind}'")
            try:
                pattern = re.compile(value)
            except re.error as err:
                raise _invalid(f"bad regular expression {_show(value)}: {err}") from None
            return _Regexp(name, pattern)
        if isinstance(value, bool) and spec is not None and kind != c.QFT_BOOL:
            raise _invalid(f"value must be a string or a number, got {_show(value)} "
                           f"in {_show(where)}")
        if op == c.QLANG_OP_CONTAINS:
            if kind != c.QFT_OTHER:
                raise _invalid(f"'=[]' needs a list field, '{name}' is of kind '{kind}'")
            return _Contains(name, value)
        if kind == c.QFT_BOOL and op in _ORDER_OPS:
            raise _invalid(f"boolean field '{name}' cannot be ordered with '{op}'")
        if spec is not None and spec.split_timestamp:
            expected: tuple[str, Callable[[Any], bool]] | None = ("a number", _is_number)
        else:
            expected = _KIND_VALUES.get(kind)
        if expected is not None and not expected[1](value):
            raise _invalid(f"field '{name}' is of kind '{kind}' and cannot be compared "
                           f"with {_show(value)}, expected {expected[0]}")
        return _Compare(op, name, value, spec)


def compile_filter(data: Any, fields: Mapping[str, FieldSpec] | None = None) -> Filter:
    """Check a filter and return it ready for evaluation.

    With ``fields`` (name -> :class:`FieldSpec`) unknown field names and
    values that cannot be compared with their field are refused; without,
    only the structure is checked.  ``None`` gives :data:`MATCH_ALL`.
    """
    if data is None:
        return MATCH_ALL
    return _Compiler(fields).compile(data, 0)


def check_filter(data: Any) -> Any:
    """Check only the structure of a filter; return it unchanged."""
    compile_filter(data, None)
    return data


def requested_values(data: Any, field: str) -> list[Any] | None:
    """The values a filter asks for in ``field``, if that is all it does.

    For ``["==", field, v]`` or an ``|`` of such equalities the result is
    the values (duplicates removed, order kept), so a caller can fetch just
    those items; for anything else, including no filter, it is None.
    The filter must already have been checked.
    """
    if not isinstance(data, list) or not data:
        return None
    if data[0] in (c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY):
        terms = [data]
    elif data[0] == c.QLANG_OP_OR and len(data) > 1:
        terms = data[1:]
    else:
        return None
    values: list[Any] = []
    for term in terms:
        if not (isinstance(term, list) and len(term) == 3
                and term[0] in (c.QLANG_OP_EQUAL, c.QLANG_OP_EQUAL_LEGACY)
                and term[1] == field):
            return None
        if not any(_same_type(term[2], v) and term[2] == v for v in values):
            values.append(term[2])
    return values
