"""Fast paths for config objects: converters compiled once per class, and cloning.

:mod:`ganeti.core.objects` checks every key of ``config.data`` against its
annotation.  Interpreting the annotation for each of the ~40,000 objects of a
large config costs seconds, so :func:`compile_converter` turns each
annotation into a small function once per class.  A compiled converter
accepts exactly what the generic checker accepts and builds the same value;
when it meets anything else it raises :class:`Slow`, and the caller runs the
generic checker, which produces the error message with the full path.

:func:`clone_value` copies a value of a config object: JSON containers are
copied, atoms shared, nested config objects cloned through their own
``clone`` (much cheaper than :func:`copy.deepcopy`, which the copy-on-write
config drafts of :mod:`ganeti.core.configdraft` call for every object a
change touches).
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Callable
from typing import Any

Converter = Callable[[Any], Any]
ATOMS = frozenset({str, int, float, bool, type(None)})


class Slow(Exception):
    """The fast converter declines; the generic checker decides (and words the error)."""


def _identity(value: Any) -> Any:
    return value


def _exact(tp: type) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is tp:
            return value
        raise Slow
    return convert


def _float(value: Any) -> Any:
    tp = type(value)
    if tp is float:
        return value
    if tp is int:
        return float(value)
    raise Slow


def _optional(inner: Converter) -> Converter:
    def convert(value: Any) -> Any:
        return None if value is None else inner(value)
    return convert


def _list_of(item: Converter | None, atom: type | None) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is not list:
            raise Slow
        if item is None:
            return list(value)
        if atom is not None:
            for v in value:
                if type(v) is not atom:
                    raise Slow
            return list(value)
        return [item(v) for v in value]
    return convert


def _dict_of(item: Converter | None) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is not dict:
            raise Slow
        if item is None:
            return dict(value)
        return {k: item(v) for k, v in value.items()}
    return convert


def compile_converter(tp: Any, is_object: Callable[[Any], bool]) -> Converter:
    """A converter for values annotated ``tp`` (``is_object``: a config class)."""
    if tp is Any:
        return _identity
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(tp) if o is not type(None)]
        if len(options) != 1 or len(typing.get_args(tp)) != 2:
            raise TypeError(f"no fast path for {tp!r}")
        return _optional(compile_converter(options[0], is_object))
    if origin is list:
        (item_tp,) = typing.get_args(tp) or (Any,)
        if item_tp is Any:
            return _list_of(None, None)
        if item_tp in (str, bool):
            return _list_of(_exact(item_tp), item_tp)
        if item_tp is int:
            return _list_of(_exact(int), int)
        return _list_of(compile_converter(item_tp, is_object), None)
    if origin is dict:
        _, val_tp = typing.get_args(tp) or (str, Any)
        return _dict_of(None if val_tp is Any else compile_converter(val_tp, is_object))
    if is_object(tp):
        def convert_object(value: Any) -> Any:
            if type(value) is not dict:
                raise Slow
            return tp.from_dict(value)
        return convert_object
    if tp is float:
        return _float
    if tp in (int, bool, str):
        return _exact(tp)
    raise TypeError(f"no fast path for {tp!r}")


def clone_value(value: Any) -> Any:
    """A copy of a config value: containers copied, atoms shared, objects cloned."""
    tp = type(value)
    if tp in ATOMS:
        return value
    if tp is list:
        return [v if type(v) in ATOMS else clone_value(v) for v in value]
    if tp is dict:
        return {k: v if type(v) in ATOMS else clone_value(v) for k, v in value.items()}
    clone = getattr(value, "clone", None)
    if clone is not None:
        return clone()
    return copy.deepcopy(value)


def compile_builder(cls: type, fields: list[tuple[str, Any, bool, Any]],
                    is_object: Callable[[Any], bool]) -> Callable[[dict[str, Any]], Any]:
    """A function building a ``cls`` from a dict whose keys and values are all as expected.

    ``fields``: (name, annotation, required, default factory or None).  The
    function raises :class:`Slow` for anything unusual (an unknown key, a
    value of another type); the caller then takes the generic path.  It is
    generated once per class so that each key costs a few byte codes.
    """
    env: dict[str, Any] = {"Slow": Slow, "_new": object.__new__, "cls": cls,
                           "MISS": object(), "frozenset": frozenset, "float": float,
                           "list": list, "dict": dict, "str": str, "int": int,
                           "bool": bool, "type": type,
                           "KNOWN": frozenset(name for name, *_ in fields),
                           "OPTIONAL": frozenset(name for name, _, req, _ in fields if not req)}
    lines = ["def build(data):",
             "    obj = _new(cls)",
             "    d = obj.__dict__",
             "    found = 0"]
    for i, (name, tp, required, factory) in enumerate(fields):
        env[f"conv{i}"] = compile_converter(tp, is_object)
        env[f"factory{i}"] = factory
        lines.append(f"    v = data.get({name!r}, MISS)")
        lines.append("    if v is MISS:")
        lines.append("        raise Slow" if required else f"        d[{name!r}] = factory{i}()")
        lines.append("    else:")
        lines.append("        found += 1")
        simple = {str: "str", int: "int", bool: "bool"}.get(tp)
        args = typing.get_args(tp)
        optional = (typing.get_origin(tp) in (typing.Union, types.UnionType)
                    and len(args) == 2 and type(None) in args)
        inner = next((a for a in args if a is not type(None)), None) if optional else None
        if optional and inner in (str, int, bool):
            simple = {str: "str", int: "int", bool: "bool"}[inner]
            lines.append(f"        if v is None or type(v) is {simple}:")
            lines.append(f"            d[{name!r}] = v")
            lines.append("        else:")
            lines.append("            raise Slow")
        elif simple is not None:
            lines.append(f"        if type(v) is {simple}:")
            lines.append(f"            d[{name!r}] = v")
            lines.append("        else:")
            lines.append("            raise Slow")
        elif tp is float:
            lines.append("        if type(v) is float:")
            lines.append(f"            d[{name!r}] = v")
            lines.append("        elif type(v) is int:")
            lines.append(f"            d[{name!r}] = float(v)")
            lines.append("        else:")
            lines.append("            raise Slow")
        else:
            lines.append(f"        d[{name!r}] = conv{i}(v)")
    lines += ["    if found != len(data):",
              "        raise Slow  # keys this class does not know",
              "    d['extra'] = {}",
              "    if found < len(KNOWN):",
              "        absent = OPTIONAL - data.keys()",
              "        if absent:",
              "            d['_absent'] = frozenset(absent)",
              "    return obj"]
    exec("\n".join(lines), env)  # generated from the class's own annotations
    builder: Callable[[dict[str, Any]], Any] = env["build"]
    return builder
