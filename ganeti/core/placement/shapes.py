"""Shapes of the iallocator protocol's values, and readers that name what is wrong.

A :class:`Shape` is a predicate with a description, as Ganeti's ``ht`` checks
the answers of allocators; the readers (:func:`get`, :func:`as_int`, ...) read
one key of an input dict and raise ``ParseError`` naming its path
(``nodes.node1.free_memory: missing``), so that a bad input file tells where.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ganeti.core.errors import ParseError

T = TypeVar("T")

#: Evacuation modes (Ganeti's ``IALLOCATOR_NEVAC_*``).
EVAC_MODES = frozenset({"primary-only", "secondary-only", "all"})
#: The opcodes an evacuation or group-change answer may hold (Ganeti's ``_JOB_LIST``).
EVAC_OPCODES = frozenset({"OP_INSTANCE_FAILOVER", "OP_INSTANCE_MIGRATE",
                          "OP_INSTANCE_REPLACE_DISKS"})


def bad(message: str) -> ParseError:
    """The error for an input that does not have the protocol's shape."""
    return ParseError(f"Invalid iallocator input: {message}")


@dataclass(frozen=True)
class Shape:
    """A predicate on JSON values, with the description used in error messages."""

    description: str
    check: Callable[[Any], bool]


def _nonempty_string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _list_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(item(v) for v in value)


def _items(*items: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: (isinstance(value, list) and len(value) == len(items)
                          and all(check(v) for check, v in zip(items, value, strict=True)))


def _maybe_string(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _evac_opcode(value: Any) -> bool:
    return isinstance(value, dict) and value.get("OP_ID") in EVAC_OPCODES


STRING = Shape("a node name (string)", _nonempty_string)
NODE_LIST = Shape("a list of node names", _list_of(_nonempty_string))
MULTI_ALLOC_RESULT = Shape(
    "[[[instance, [node, ...]], ...], [failed instance, ...]]",
    _items(_list_of(_items(_nonempty_string, _list_of(_nonempty_string))),
           _list_of(_nonempty_string)))
EVAC_RESULT = Shape(
    "[[[instance, group, [node, ...]], ...], [[instance, reason or null], ...], "
    "[[opcode (failover, migrate or replace-disks), ...], ...]]",
    _items(_list_of(_items(_nonempty_string, _nonempty_string, _list_of(_nonempty_string))),
           _list_of(_items(_nonempty_string, _maybe_string)),
           _list_of(_list_of(_evac_opcode))))

CAPACITY_RESULT = Shape(
    '{"count": N, "allocations": [[node, ...], ...], "limit": reason}',
    lambda value: (isinstance(value, dict) and isinstance(value.get("count"), int)
                   and not isinstance(value.get("count"), bool)
                   and _list_of(_list_of(_nonempty_string))(value.get("allocations"))
                   and isinstance(value.get("limit"), str)))


_MISSING = object()


def get(data: Mapping[str, Any], key: str, kind: type[T], where: str) -> T:
    """``data[key]``, which must be a ``kind``."""
    if type(data) is dict:  # the common case, without the ABC check
        value = data.get(key, _MISSING)
        if type(value) is kind:
            return value
    if not isinstance(data, Mapping):
        raise bad(f"{where}: not an object")
    if key not in data:
        raise bad(f"{where}.{key}: missing")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise bad(f"{where}.{key}: {value!r} is not a {kind.__name__}")
    return value


def as_int(data: Mapping[str, Any], key: str, where: str) -> int:
    """An integer (a float with an integral value is accepted, as JSON may carry one)."""
    if type(data) is dict:
        value = data.get(key)
        if type(value) is int:
            return value
    value = data.get(key) if isinstance(data, Mapping) else None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return get(data, key, int, where)


def as_float(data: Mapping[str, Any], key: str, where: str) -> float:
    """A number."""
    value = data.get(key) if isinstance(data, Mapping) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return get(data, key, float, where)


def as_str(data: Mapping[str, Any], key: str, where: str) -> str:
    """A string."""
    return get(data, key, str, where)


def as_bool(data: Mapping[str, Any], key: str, where: str) -> bool:
    """A boolean."""
    return get(data, key, bool, where)


def as_str_list(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    """A list of strings."""
    values = get(data, key, list, where)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise bad(f"{where}.{key}[{i}]: {value!r} is not a str")
    return values


__all__ = ["CAPACITY_RESULT", "EVAC_MODES", "EVAC_OPCODES", "EVAC_RESULT",
           "MULTI_ALLOC_RESULT", "NODE_LIST", "STRING", "Shape", "as_bool", "as_float",
           "as_int", "as_str", "as_str_list", "bad", "get"]
