"""Query answers: Ganeti's Query, QueryFields and old-style queries.

A resource's fields are declared once, without getters, in
:mod:`ganeti.core.queryfields` (name, title, kind, doc, live or not); the
master binds a getter to each declaration by name (:func:`bind`, which
refuses a table with a field missing a getter or a getter without a
field).  From such a table of :class:`Field` objects this module answers

- ``Query(what, fields, filter)``: ``{"fields": [fielddef...], "data":
  [[[status, value], ...], ...]}`` where status is 0 normal, 1 unknown
  field, 2 no data, 3 unavailable, 4 offline (the value is null unless the
  status is 0).  An unknown field is not an error: its definition has kind
  ``unknown`` and every row holds ``[1, null]`` for it;
- ``QueryFields(what, fields)``: ``{"fields": [fielddef...]}``, all fields
  sorted by name when ``fields`` is null;
- old-style queries (``QueryNodes``, ``QueryJobs``, ...): plain values,
  unknown fields refused.

A getter returns the value, or one of :data:`NODATA`, :data:`UNAVAIL`,
:data:`OFFLINE` when there is none.  Filters are checked and evaluated by
:mod:`ganeti.core.qlang`.  Values are not copied: serialise an answer
before the objects it was built from change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ganeti.core import constants as c
from ganeti.core import qlang
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.queryfields.base import FieldDecl, check_field

T = TypeVar("T")


class Special:
    """A getter's answer meaning "no value", with the status to report."""

    def __init__(self, status: int, label: str) -> None:
        self.status = status
        self.label = label

    def __repr__(self) -> str:
        return f"<{self.label}>"


NODATA = Special(c.RS_NODATA, "no data")
UNAVAIL = Special(c.RS_UNAVAIL, "unavailable")
OFFLINE = Special(c.RS_OFFLINE, "offline")


@dataclass(frozen=True)
class Field(Generic[T]):
    """A query field with its getter (normally made by :func:`bind` from a declaration)."""

    name: str
    title: str
    kind: str
    doc: str
    getter: Callable[[T], Any]
    split_timestamp: bool = False
    hostname: bool = False
    live: bool = False
    extension: bool = False

    def __post_init__(self) -> None:
        check_field(self.name, self.title, self.kind, self.doc)

    @classmethod
    def from_decl(cls, decl: FieldDecl, getter: Callable[[T], Any]) -> Field[T]:
        """The declared field, computed by ``getter``."""
        return cls(decl.name, decl.title, decl.kind, decl.doc, getter,
                   split_timestamp=decl.split_timestamp, hostname=decl.hostname,
                   live=decl.live, extension=decl.extension)

    def fielddef(self) -> dict[str, str]:
        """The field definition as sent to clients."""
        return {"name": self.name, "title": self.title, "kind": self.kind, "doc": self.doc}

    def spec(self) -> qlang.FieldSpec:
        """What the filter code needs to know about this field."""
        return qlang.FieldSpec(self.kind, self.split_timestamp, self.hostname)

    def result(self, item: T) -> list[Any]:
        """``[status, value]`` of this field for ``item``."""
        value = self.getter(item)
        if isinstance(value, Special):
            return [value.status, None]
        return [c.RS_NORMAL, value]


def field_table(fields: Iterable[Field[T]]) -> dict[str, Field[T]]:
    """Index fields by name, refusing duplicate names or titles."""
    table: dict[str, Field[T]] = {}
    titles: set[str] = set()
    for fld in fields:
        if fld.name in table:
            raise ValueError(f"duplicate field name {fld.name!r}")
        if fld.title.lower() in titles:
            raise ValueError(f"duplicate field title {fld.title!r}")
        table[fld.name] = fld
        titles.add(fld.title.lower())
    return table


def bind(decls: Mapping[str, FieldDecl],
         getters: Mapping[str, Callable[[T], Any]]) -> dict[str, Field[T]]:
    """The declared fields in their order, each with the getter of its name.

    ValueError names the fields without a getter and the getters without a
    field: a table is complete or it is not made.
    """
    missing = [name for name in decls if name not in getters]
    extra = [name for name in getters if name not in decls]
    if missing or extra:
        raise ValueError(f"fields without a getter: {missing}; getters without a "
                         f"field: {extra}")
    return {name: Field.from_decl(decl, getters[name]) for name, decl in decls.items()}


def unknown_fielddef(name: str) -> dict[str, str]:
    """The definition reported for a field that does not exist."""
    return {"name": name, "title": name, "kind": c.QFT_UNKNOWN,
            "doc": f"Unknown field '{name}'"}


def _check_names(names: Any, what: str) -> list[str]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise OpPrereqError(f"{what} must be a list of field names, got {names!r:.80}",
                            ECODE_INVAL)
    return list(names)


def nice_sort_key(name: str) -> list[Any]:
    """Sort key putting ``node2`` before ``node10`` (Ganeti's nice sort)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", name) if part]


def query_fields(table: Mapping[str, Field[Any]], names: Any) -> dict[str, Any]:
    """The answer to QueryFields: the named fields in order, or all sorted by name
    (Ganeti's: extension fields only when named)."""
    if names is None:
        return {"fields": [table[n].fielddef() for n in sorted(table, key=nice_sort_key)
                           if not table[n].extension]}
    return {"fields": [table[n].fielddef() if n in table else unknown_fielddef(n)
                       for n in _check_names(names, "Fields")]}


class Query(Generic[T]):
    """A query over items of one resource: selected fields plus an optional filter.

    Creating it checks the field list and the filter (unknown fields in
    the filter, bad operators or values are ``wrong_input`` errors);
    unknown *selected* fields are allowed and reported as such.
    """

    def __init__(self, table: Mapping[str, Field[T]], fields: Any,
                 qfilter_data: Any = None) -> None:
        self.table = table
        self.names = _check_names(fields, "Fields")
        self.selected: list[Field[T] | None] = [table.get(n) for n in self.names]
        self.filter = qlang.compile_filter(
            qfilter_data, {name: fld.spec() for name, fld in table.items()})

    def fielddefs(self) -> list[dict[str, str]]:
        """Definitions of the selected fields, unknown ones included."""
        return [fld.fielddef() if fld is not None else unknown_fielddef(name)
                for name, fld in zip(self.names, self.selected, strict=True)]

    def unknown_fields(self) -> list[str]:
        """The selected names that are not fields of this resource."""
        return [n for n, fld in zip(self.names, self.selected, strict=True) if fld is None]

    def filter_fields(self) -> frozenset[str]:
        """The fields the filter reads (a caller may need to collect their data)."""
        return self.filter.fields()

    def matches(self, item: T) -> bool:
        """Whether ``item`` passes the filter."""
        def getter(name: str) -> tuple[int, Any]:
            status, value = self.table[name].result(item)
            return status, value
        return self.filter.matches(getter)

    def row(self, item: T) -> list[list[Any]]:
        """``[[status, value], ...]`` for the selected fields."""
        return [fld.result(item) if fld is not None else [c.RS_UNKNOWN, None]
                for fld in self.selected]

    def rows(self, items: Iterable[T]) -> list[list[list[Any]]]:
        """Rows of the items that pass the filter, in the order given."""
        return [self.row(item) for item in items if self.matches(item)]

    def response(self, items: Iterable[T]) -> dict[str, Any]:
        """The answer to Query: ``{"fields": [...], "data": [...]}``."""
        return {"fields": self.fielddefs(), "data": self.rows(items)}

    def old_style(self, items: Iterable[T]) -> list[list[Any]]:
        """Plain values (null where there is none); unknown fields are refused."""
        unknown = self.unknown_fields()
        if unknown:
            raise OpPrereqError("Unknown output fields selected: " + ", ".join(unknown),
                                ECODE_INVAL)
        return [[value for _, value in row] for row in self.rows(items)]


__all__ = [
    "NODATA", "OFFLINE", "UNAVAIL", "Field", "Query", "Special", "bind", "field_table",
    "nice_sort_key", "query_fields", "unknown_fielddef",
]
