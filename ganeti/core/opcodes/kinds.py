"""Parameter kinds: what a parameter value may look like on the wire.

A :class:`Kind` is a name (used in error messages and in the generated
reference) and a check.  The check returns the value in its stored form (an
integer given for a float parameter becomes a float, as Ganeti does) or
raises :class:`KindMismatch`.  Kinds nest: ``list_of(maybe(STRING))``.
Mismatches inside containers carry the path to the bad element, so that the
error names ``uid_pool[1]`` and not just ``uid_pool``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


class KindMismatch(Exception):
    """A value does not have the expected kind.

    ``path`` is the position inside the parameter (``[2]``, ``['kvm']``),
    ``detail`` replaces the generic "expected ..., got ..." wording when a
    check has something more precise to say.
    """

    def __init__(self, expected: str, got: Any, detail: str | None = None) -> None:
        super().__init__(expected, got, detail)
        self.expected = expected
        self.got = got
        self.detail = detail
        self.path = ""

    def describe(self) -> str:
        """The problem in one phrase."""
        if self.detail is not None:
            return self.detail
        return f"expected {self.expected}, got {show(self.got)}"


def show(value: Any, limit: int = 80) -> str:
    """A short JSON-like rendering of a value for error messages."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


Check = Callable[[Any], Any]


@dataclass(frozen=True)
class Kind:
    """A named check: ``check(value)`` returns the stored form or raises."""

    name: str
    check: Check
    nullable: bool = False
    #: The Python type of the stored form, as annotation text (typed opcode views).
    py: str = "Any"

    def __call__(self, value: Any) -> Any:
        """Check ``value``; see :class:`Kind`."""
        return self.check(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and not (
        isinstance(value, float) and not math.isfinite(value))


def simple(name: str, test: Callable[[Any], bool], py: str = "Any") -> Kind:
    """A kind whose values are stored unchanged when ``test`` accepts them."""
    def check(value: Any) -> Any:
        if not test(value):
            raise KindMismatch(name, value)
        return value
    return Kind(name, check, py=py)


ANY = Kind("any JSON value", lambda v: v, nullable=True)
BOOL = simple("a boolean", lambda v: isinstance(v, bool), "bool")
INT = simple("an integer", _is_int, "int")
STRING = simple("a string", lambda v: isinstance(v, str), "str")
NON_EMPTY_STRING = simple("a non-empty string", lambda v: isinstance(v, str) and v != "",
                          "str")
OBJECT = simple("an object with string keys",
                lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                "dict[str, Any]")

#: A DNS host name: dot-separated labels of ASCII letters, digits and inner
#: hyphens.  Matched whole (fullmatch): with ``re.match`` and ``$`` a name
#: ending in a newline would pass.
HOSTNAME_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
                         r"(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*")
MAX_HOSTNAME_LEN = 255


def is_hostname(value: Any) -> bool:
    """Whether ``value`` is a string that is a host name as a whole."""
    return (isinstance(value, str) and len(value) <= MAX_HOSTNAME_LEN
            and HOSTNAME_RE.fullmatch(value) is not None)


def is_printable_name(value: Any) -> bool:
    """A non-empty one-line name: printable characters (space allowed inside), no
    control characters, line separators or surrounding spaces.

    Names end up in line-oriented files (ssconf, ``gnt-* list`` output), where
    a newline would forge an extra entry.
    """
    return (isinstance(value, str) and value != "" and value.isprintable()
            and value.strip() == value)


HOSTNAME = simple("a host name", is_hostname, "str")
PRINTABLE_NAME = simple("a one-line printable name", is_printable_name, "str")


def int_range(low: int | None = None, high: int | None = None) -> Kind:
    """An integer in ``[low, high]`` (either bound may be open)."""
    if low is not None and high is None:
        name = "a non-negative integer" if low == 0 else f"an integer >= {low}"
    elif low is None and high is not None:
        name = f"an integer <= {high}"
    elif low is not None and high is not None:
        name = f"an integer from {low} to {high}"
    else:
        return INT

    def check(value: Any) -> Any:
        if not _is_int(value) or (low is not None and value < low) or (
                high is not None and value > high):
            raise KindMismatch(name, value)
        return value
    return Kind(name, check, py="int")


def float_kind(low: float | None = None) -> Kind:
    """A finite number stored as a float; integers are accepted and converted."""
    name = "a number" if low is None else f"a number >= {low:g}"

    def check(value: Any) -> Any:
        if not _is_number(value) or (low is not None and value < low):
            raise KindMismatch(name, value)
        return float(value)
    return Kind(name, check, py="float")


FLOAT = float_kind()


def one_of(values: Iterable[Any], what: str = "one of") -> Kind:
    """A value from a fixed set (compared by type as well as value)."""
    choices = sorted(values, key=lambda v: (str(type(v)), v))
    listed = ", ".join(show(v) for v in choices)
    name = f"{what} {listed}"

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not any(
                type(value) is type(c) and value == c for c in choices):
            raise KindMismatch(name, value)
        return value
    types = {type(c).__name__ for c in choices}
    return Kind(name, check, py=types.pop() if len(types) == 1 and types <= {
        "str", "int", "float"} else "Any")


def maybe(kind: Kind) -> Kind:
    """``kind`` or null."""
    def check(value: Any) -> Any:
        return None if value is None else kind.check(value)
    py = kind.py if kind.py == "Any" or kind.nullable else f"{kind.py} | None"
    return Kind(f"{kind.name} or null", check, nullable=True, py=py)


def list_of(kind: Kind, name: str | None = None) -> Kind:
    """A list whose every element has ``kind``."""
    label = name or f"a list of ({kind.name})"

    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise KindMismatch(label, value)
        result = []
        for index, item in enumerate(value):
            try:
                result.append(kind.check(item))
            except KindMismatch as err:
                err.path = f"[{index}]{err.path}"
                raise
        return result
    return Kind(label, check, py=f"list[{kind.py}]")


def dict_of(key: Kind, value_kind: Kind, name: str | None = None) -> Kind:
    """An object whose keys have ``key`` and whose values have ``value_kind``."""
    label = name or f"an object mapping ({key.name}) to ({value_kind.name})"

    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise KindMismatch(label, value)
        result = {}
        for k, v in value.items():
            try:
                key.check(k)
            except KindMismatch as err:
                raise KindMismatch(label, value, f"key {show(k)}: {err.describe()}") from None
            try:
                result[k] = value_kind.check(v)
            except KindMismatch as err:
                err.path = f"[{show(k)}]{err.path}"
                raise
        return result
    key_py = key.py if key.py in ("str", "int") else "str"
    return Kind(label, check, py=f"dict[{key_py}, {value_kind.py}]")


def tuple_of(*kinds: Kind, name: str | None = None) -> Kind:
    """A list of fixed length whose elements have the given kinds in order."""
    label = name or "a list of [" + ", ".join(k.name for k in kinds) + "]"

    def check(value: Any) -> Any:
        if not isinstance(value, list) or len(value) != len(kinds):
            raise KindMismatch(label, value)
        result = []
        for index, (kind, item) in enumerate(zip(kinds, value, strict=True)):
            try:
                result.append(kind.check(item))
            except KindMismatch as err:
                err.path = f"[{index}]{err.path}"
                raise
        return result
    return Kind(label, check, py="list[Any]")


def refine(kind: Kind, name: str, extra: Callable[[Any], str | None]) -> Kind:
    """``kind`` plus a further check; ``extra`` returns a problem or None."""
    def check(value: Any) -> Any:
        result = kind.check(value)
        problem = extra(result)
        if problem is not None:
            raise KindMismatch(name, value, problem)
        return result
    return Kind(name, check, nullable=kind.nullable, py=kind.py)
