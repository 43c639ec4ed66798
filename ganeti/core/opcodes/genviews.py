"""Generate :mod:`ganeti.core.opcodes.views` from the opcode table.

The table (:mod:`ganeti.core.opcodes.table` and its parts) stays the one
definition of every opcode; this script turns it into one frozen dataclass per
opcode so that mypy checks what logical units read (``self.op.node_name``):
``views_base.py`` holds the common parameters' class, ``views_<part>.py`` the
classes of one part of the table (:data:`catalog.PARTS`), and ``views.py``
imports them all, maps OP_IDs to classes and builds a view.  Run::

    python -m ganeti.core.opcodes.genviews          # rewrite the views modules
    python -m ganeti.core.opcodes.genviews --check  # exit 1 if one is out of date
    python -m ganeti.core.opcodes.genviews --docs docs/design/opcodes-and-jobs.md
                                                    # also the opcode reference (make regen)

A field's type is its kind's ``py`` text; ``| None`` is added when null can
be stored (a nullable kind, or an optional parameter whose default is
null).  Defaults are the table's; mutable ones get a ``default_factory``.
Reserved parameters are never stored, so they have no field.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from ganeti.core.opcodes import catalog
from ganeti.core.opcodes.base import COMMON_PARAMS, OpCode, Param

DIRECTORY = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(DIRECTORY, "views.py")

_GENERATED = """
GENERATED from :mod:`ganeti.core.opcodes.table` by
``python -m ganeti.core.opcodes.genviews``; do not edit by hand (a test
fails when this file is out of date)."""

_HEADER = '''"""Typed, read-only views of opcodes: the class of every opcode, ``VIEWS`` and
:func:`view`.
''' + _GENERATED + '''  Logical units read their opcode
through these views (``self.op.node_name``); job files and query answers
keep the submitted dict.  The classes are in ``views_base`` and one
``views_<part>`` module per part of the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError
'''

_PART_HEADER = '''"""Typed, read-only views of {what}.
''' + _GENERATED + '''
"""

from __future__ import annotations

from dataclasses import dataclass{field}
from typing import {typing}
{base}'''

_FOOTER = '''

def view(op: Mapping[str, Any]) -> OpView:
    """The typed view of ``op`` (a stored or run form, see ``opcodes.base``).

    Keys the view does not declare are ignored; a null given for a field
    that cannot be null takes the default (as validation does); a missing
    required parameter is an ``OpPrereqError``.  An unknown or missing
    ``OP_ID`` gives the common parameters only.
    """
    cls = VIEWS.get(str(op.get("OP_ID")), OpView)
    values: dict[str, Any] = {}
    for f in fields(cls):
        value = op.get(f.name)
        if value is None and (f.name not in op or f.name in cls.NOT_NULL):
            if f.name in cls.REQUIRED:
                raise OpPrereqError(f"Parameter '{cls.OP_ID}.{f.name}' is required but "
                                    "missing", ECODE_INVAL)
            continue
        values[f.name] = value
    return cls(**values)
'''


def class_name(op_id: str) -> str:
    """``OP_NODE_SET_PARAMS`` -> ``OpNodeSetParams``."""
    return "Op" + "".join(part.capitalize() for part in op_id[3:].split("_"))


def _literal(value: Any) -> str:
    """Python source for a JSON default (strings in double quotes)."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"default {value!r} has no literal form")


def field_line(param: Param) -> str:
    """One dataclass field for ``param``."""
    py = param.kind.py
    nullable = param.kind.nullable or (not param.strictly_required and param.factory is None
                                       and param.default is None)
    if nullable and py != "Any" and not py.endswith("| None"):
        py = f"{py} | None"
    if param.strictly_required:
        return f"    {param.name}: {py}"
    if param.factory is not None:
        return f"    {param.name}: {py} = field(default_factory={param.factory.__name__})"
    if isinstance(param.default, (list, dict)):
        return (f"    {param.name}: {py} = field(default_factory=lambda: "
                f"{_literal(param.default)})")
    return f"    {param.name}: {py} = {_literal(param.default)}"


def _not_null(params: Sequence[Param]) -> list[str]:
    """Parameters whose null means "the default" (their type excludes None)."""
    return sorted(p.name for p in params
                  if not p.kind.nullable and (p.strictly_required or p.factory is not None
                                              or p.default is not None))


def _frozen(attr: str, names: list[str]) -> list[str]:
    """``    ATTR: ClassVar[frozenset[str]] = frozenset({...})``, wrapped at 100 columns."""
    head = f"    {attr}: ClassVar[frozenset[str]] = "
    if not names:
        return [head + "frozenset()"]
    items = ", ".join(json.dumps(n) for n in names)
    one = f"{head}frozenset({{{items}}})"
    if len(one) <= 100:
        return [one]
    body = textwrap.wrap(items, width=100 - 8, break_long_words=False,
                         break_on_hyphens=False)
    return [head + "frozenset({"] + [" " * 8 + line for line in body] + ["    })"]


def _class(name: str, base: str | None, op_id: str, doc: str,
           params: Sequence[Param], inherited: Sequence[Param]) -> list[str]:
    stored = [p for p in params if not p.reserved]
    everything = list(inherited) + stored
    lines = ["", "", "@dataclass(frozen=True, kw_only=True)",
             f"class {name}{f'({base})' if base else ''}:",
             f'    """{op_id}: {doc}."""' if op_id else f'    """{doc}."""', "",
             f"    OP_ID: ClassVar[str] = {json.dumps(op_id)}"]
    lines += _frozen("REQUIRED", sorted(p.name for p in everything if p.strictly_required))
    lines += _frozen("NOT_NULL", _not_null(everything))
    lines += [field_line(p) for p in stored]
    return lines


def _uses_field(lines: Sequence[str]) -> bool:
    return any("field(default_factory" in line for line in lines)


def render_part(what: str, classes: list[str], base: bool) -> str:
    """A views module: a header and the lines of its classes."""
    body = "\n".join(classes)
    head = _PART_HEADER.format(
        what=what, field=", field" if _uses_field(classes) else "",
        typing="Any, ClassVar" if "Any" in body else "ClassVar",
        base="\nfrom ganeti.core.opcodes.views_base import OpView\n" if base else "")
    return head.rstrip("\n") + "\n" + body + "\n"


def render_all(parts: Sequence[tuple[str, Sequence[OpCode]]] = catalog.PARTS
               ) -> dict[str, str]:
    """The text of every views module, by file name."""
    out = {"views_base.py": render_part(
        "the parameters every opcode has", _class("OpView", None, "",
                                                  "The parameters every opcode has",
                                                  COMMON_PARAMS, ()), base=False)}
    imports = {"views_base": ["from ganeti.core.opcodes.views_base import OpView"]}
    everything: list[OpCode] = []
    for part, opcodes in sorted(parts, key=lambda p: p[0]):
        classes: list[str] = []
        for op in sorted(opcodes, key=lambda o: o.op_id):
            classes += _class(class_name(op.op_id), "OpView", op.op_id, op.doc.rstrip("."),
                              op.params, COMMON_PARAMS)
        out[f"views_{part}.py"] = render_part(f"the opcodes of the table's {part} part",
                                              classes, base=True)
        names = sorted((class_name(op.op_id) for op in opcodes), key=str.lower)
        imports[f"views_{part}"] = ([f"from ganeti.core.opcodes.views_{part} import ("]
                                    + [f"    {n}," for n in names] + [")"])
        everything += opcodes
    lines = [_HEADER.rstrip("\n")] + [line for module in sorted(imports)
                                      for line in imports[module]]
    lines += ["", "#: OP_ID -> view class, for every declared opcode.",
              "VIEWS: dict[str, type[OpView]] = {"]
    lines += [f"    {json.dumps(op.op_id)}: {class_name(op.op_id)},"
              for op in sorted(everything, key=lambda o: o.op_id)]
    lines.append("}")
    names = ["OpView", "VIEWS", "view"] + sorted(class_name(op.op_id) for op in everything)
    footer = _FOOTER + "\n\n__all__ = [\n" + "".join(
        f"    {json.dumps(n)},\n" for n in names) + "]\n"
    out["views.py"] = "\n".join(lines) + "\n" + footer
    return out


def render() -> str:
    """The text of views.py (the other modules: :func:`render_all`)."""
    return render_all()["views.py"]


_BEGIN = "<!-- BEGIN GENERATED OPCODE REFERENCE -->\n"
_END = "<!-- END GENERATED OPCODE REFERENCE -->"


def _with_reference(doc: str) -> str:
    """``doc`` with its generated opcode reference section rewritten."""
    from ganeti.core.opcodes.checks import reference_markdown
    start = doc.index(_BEGIN) + len(_BEGIN)
    return doc[:start] + "\n" + reference_markdown().strip() + "\n\n" + doc[doc.index(_END):]


def _sync(path: str, text: str, check: bool) -> bool:
    """Write ``text`` to ``path`` (or with ``check`` only compare); True if it was current."""
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except FileNotFoundError:
        current = ""
    if current == text:
        return True
    if check:
        print(f"{path} is out of date: run python -m ganeti.core.opcodes.genviews",
              file=sys.stderr)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Write the views modules (and with ``--docs FILE`` the opcode reference in FILE); with
    ``--check`` only report whether they are up to date."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    current = True
    for name, text in render_all().items():
        current = _sync(os.path.join(DIRECTORY, name), text, check) and current
    if "--docs" in args:
        doc = args[args.index("--docs") + 1]
        with open(doc, encoding="utf-8") as f:
            current = _sync(doc, _with_reference(f.read()), check) and current
    return 1 if check and not current else 0


if __name__ == "__main__":
    sys.exit(main())
