"""A query field declaration and the tables made of them.

A :class:`FieldDecl` says everything a client can learn about a field
without asking for values: its name, title, kind (Ganeti's ``QFT_*``),
one-line description, whether its value needs live data from the nodes,
and (for the remote API's OpenAPI document) the JSON schema of a value.
Which function computes the value is the master's business
(:func:`ganeti.core.query.bind`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants as c

_NAME_RE = re.compile(r"[a-z0-9/._]+")  # both matched whole (fullmatch)
_TITLE_RE = re.compile(r"[^\s]+")

#: Names of the field kinds as ``list-fields`` shows them.
KIND_NAMES: dict[str, str] = {
    c.QFT_UNKNOWN: "Unknown",
    c.QFT_TEXT: "Text",
    c.QFT_BOOL: "Boolean",
    c.QFT_NUMBER: "Number",
    c.QFT_NUMBER_FLOAT: "Floating-point number",
    c.QFT_UNIT: "Storage size",
    c.QFT_TIMESTAMP: "Timestamp",
    c.QFT_OTHER: "Custom",
}

#: JSON schema of a value by kind, when the declaration gives none.
_KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    c.QFT_TEXT: {"type": "string"},
    c.QFT_BOOL: {"type": "boolean"},
    c.QFT_NUMBER: {"type": "integer"},
    c.QFT_UNIT: {"type": "integer"},
    c.QFT_NUMBER_FLOAT: {"type": "number"},
    c.QFT_TIMESTAMP: {"type": "number", "nullable": True},
    c.QFT_OTHER: {},
}


def check_field(name: str, title: str, kind: str, doc: str) -> None:
    """ValueError unless these make a valid field (Ganeti's naming rules)."""
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"bad field name {name!r}")
    if not _TITLE_RE.fullmatch(title):
        raise ValueError(f"field {name}: bad title {title!r}")
    if kind not in c.QFT_ALL or kind == c.QFT_UNKNOWN:
        raise ValueError(f"field {name}: bad kind {kind!r}")
    if not doc or "\n" in doc or doc.strip() != doc:
        raise ValueError(f"field {name}: doc must be one line")


@dataclass(frozen=True)
class FieldDecl:
    """A query field as clients see it.

    ``live``: the value comes from the nodes (a node_info call), not from
    the config; ``split_timestamp`` and ``hostname`` tell the filter code
    how to compare (:class:`ganeti.core.qlang.FieldSpec`); ``schema``: the
    JSON schema of a value, when its kind alone does not say enough;
    ``extension``: a field of ours that Ganeti does not have, answered when
    asked for by name but left out of the list of all fields (QueryFields
    without names, ``list-fields``), so that list stays Ganeti's.
    """

    name: str
    title: str
    kind: str
    doc: str
    live: bool = False
    split_timestamp: bool = False
    hostname: bool = False
    schema: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    extension: bool = False

    def __post_init__(self) -> None:
        check_field(self.name, self.title, self.kind, self.doc)

    def fielddef(self) -> dict[str, str]:
        """The field definition as sent to clients."""
        return {"name": self.name, "title": self.title, "kind": self.kind, "doc": self.doc}

    def value_schema(self) -> dict[str, Any]:
        """The JSON schema of a value (a copy): the declared one, else by kind;
        a live number may be null (offline or unreachable node)."""
        if self.schema is not None:
            return copy.deepcopy(dict(self.schema))
        schema = dict(_KIND_SCHEMAS[self.kind])
        if self.live:
            schema["nullable"] = True
        return schema


def decl_table(decls: Iterable[FieldDecl]) -> dict[str, FieldDecl]:
    """Index declarations by name, refusing duplicate names or titles."""
    table: dict[str, FieldDecl] = {}
    titles: set[str] = set()
    for decl in decls:
        if decl.name in table:
            raise ValueError(f"duplicate field name {decl.name!r}")
        if decl.title.lower() in titles:
            raise ValueError(f"duplicate field title {decl.title!r}")
        table[decl.name] = decl
        titles.add(decl.title.lower())
    return table


def object_schema(table: Mapping[str, FieldDecl], names: Iterable[str],
                  **extra: Any) -> dict[str, Any]:
    """The JSON schema of ``{name: value}`` for the named fields (an old-style row
    as the remote API answers it); ``extra`` adds keywords (a description)."""
    return {"type": "object",
            "properties": {name: table[name].value_schema() for name in names}, **extra}


__all__ = ["KIND_NAMES", "FieldDecl", "check_field", "decl_table", "object_schema"]
