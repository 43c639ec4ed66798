"""Query fields and responses: Ganeti's Query, QueryFields and old-style queries.

A resource (jobs now; nodes, instances, locks later) declares its fields
once as :class:`Field` objects: name, title, kind, one-line description and
a getter.  From such a table this module answers

- ``Query(what, fields, filter)``: ``{"fields": [fielddef...], "data":
  [[[status, value], ...], ...]}`` where status is 0 normal, 1 unknown
  field, 2 no data, 3 unavailable, 4 offline (the value is null unless the
  status is 0).  An unknown field is not an error: its definition has kind
  ``unknown`` and every row holds ``[1, null]`` for it;
- ``QueryFields(what, fields)``: ``{"fields": [fielddef...]}``, all fields
  sorted by name when ``fields`` is null;
- old-style queries (``QueryJobs``): plain values, unknown fields refused.

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
from ganeti.core.jobs import QueuedJob, QueuedOpCode

T = TypeVar("T")

_NAME_RE = re.compile(r"[a-z0-9/._]+")  # both matched whole (fullmatch)
_TITLE_RE = re.compile(r"[^\s]+")


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
    """A query field: how it is named, shown and documented, and its getter."""

    name: str
    title: str
    kind: str
    doc: str
    getter: Callable[[T], Any]
    split_timestamp: bool = False
    hostname: bool = False

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise ValueError(f"bad field name {self.name!r}")
        if not _TITLE_RE.fullmatch(self.title):
            raise ValueError(f"field {self.name}: bad title {self.title!r}")
        if self.kind not in c.QFT_ALL or self.kind == c.QFT_UNKNOWN:
            raise ValueError(f"field {self.name}: bad kind {self.kind!r}")
        if not self.doc or "\n" in self.doc or self.doc.strip() != self.doc:
            raise ValueError(f"field {self.name}: doc must be one line")

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
    """The answer to QueryFields: the named fields in order, or all sorted by name."""
    if names is None:
        return {"fields": [table[n].fielddef() for n in sorted(table, key=nice_sort_key)]}
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


# --- jobs ----------------------------------------------------------------------

#: A job as queries see it: its id, and the job (None if it does not exist).
JobItem = tuple[int, QueuedJob | None]


def _per_job(fn: Callable[[QueuedJob], Any]) -> Callable[[JobItem], Any]:
    def getter(item: JobItem) -> Any:
        job = item[1]
        return UNAVAIL if job is None else fn(job)
    return getter


def _per_op(fn: Callable[[QueuedOpCode], Any]) -> Callable[[JobItem], Any]:
    return _per_job(lambda job: [fn(op) for op in job.ops])


def _timestamp(fn: Callable[[QueuedJob], Any]) -> Callable[[JobItem], Any]:
    def inner(job: QueuedJob) -> Any:
        value = fn(job)
        return UNAVAIL if value is None else list(value)
    return _per_job(inner)


def _job_id(item: JobItem) -> Any:
    return item[0]


JOB_FIELDS: dict[str, Field[JobItem]] = field_table([
    Field("id", "ID", c.QFT_NUMBER, "Job ID", _job_id),
    Field("status", "Status", c.QFT_TEXT, "Job status", _per_job(lambda j: j.status)),
    Field("priority", "Priority", c.QFT_NUMBER,
          f"Current job priority ({c.OP_PRIO_LOWEST} to {c.OP_PRIO_HIGHEST})",
          _per_job(lambda j: j.priority)),
    Field("ops", "OpCodes", c.QFT_OTHER, "List of all opcodes",
          _per_op(lambda op: op.input)),
    Field("opresult", "OpCode_result", c.QFT_OTHER, "List of opcodes results",
          _per_op(lambda op: op.result)),
    Field("opstatus", "OpCode_status", c.QFT_OTHER, "List of opcodes status",
          _per_op(lambda op: op.status)),
    Field("oplog", "OpCode_log", c.QFT_OTHER, "List of opcode output logs",
          _per_op(lambda op: op.log)),
    Field("opstart", "OpCode_start", c.QFT_OTHER,
          "List of opcode start timestamps (before acquiring locks)",
          _per_op(lambda op: op.start_timestamp)),
    Field("opexec", "OpCode_exec", c.QFT_OTHER,
          "List of opcode execution start timestamps (after acquiring locks)",
          _per_op(lambda op: op.exec_timestamp)),
    Field("opend", "OpCode_end", c.QFT_OTHER, "List of opcode execution end timestamps",
          _per_op(lambda op: op.end_timestamp)),
    Field("oppriority", "OpCode_prio", c.QFT_OTHER, "List of opcode priorities",
          _per_op(lambda op: op.priority)),
    Field("summary", "Summary", c.QFT_OTHER, "List of per-opcode summaries",
          _per_op(lambda op: op.summary())),
    Field("received_ts", "Received", c.QFT_OTHER,
          "Timestamp of when job was received (tuple containing seconds and microseconds)",
          _timestamp(lambda j: j.received_timestamp), split_timestamp=True),
    Field("start_ts", "Start", c.QFT_OTHER,
          "Timestamp of job start (tuple containing seconds and microseconds)",
          _timestamp(lambda j: j.start_timestamp), split_timestamp=True),
    Field("end_ts", "End", c.QFT_OTHER,
          "Timestamp of job end (tuple containing seconds and microseconds)",
          _timestamp(lambda j: j.end_timestamp), split_timestamp=True),
    Field("archived", "Archived", c.QFT_BOOL, "Whether job is archived",
          _per_job(lambda j: j.archived)),
    Field("wait_reason", "WaitReason", c.QFT_TEXT,
          "Why the queued job waits: a filter rule, a rate limit or a dependency "
          "(empty when it does not wait)", _per_job(lambda j: j.wait_reason or "")),
])

#: Field tables by resource name ("what" of Query / QueryFields).
RESOURCES: dict[str, Mapping[str, Field[Any]]] = {c.QR_JOB: JOB_FIELDS}


def resource_fields(what: Any) -> Mapping[str, Field[Any]]:
    """The field table of a resource; unknown resources are ``wrong_input``."""
    if not isinstance(what, str) or what not in RESOURCES:
        known = ", ".join(sorted(RESOURCES))
        raise OpPrereqError(f"Unknown query resource {what!r:.40} (known: {known})",
                            ECODE_INVAL)
    return RESOURCES[what]


def requested_job_ids(qfilter_data: Any) -> list[int] | None:
    """The job ids a (checked) filter asks for by id alone, else None (all jobs)."""
    values = qlang.requested_values(qfilter_data, "id")
    if values is None or not all(isinstance(v, int) and not isinstance(v, bool)
                                 for v in values):
        return None
    return [int(v) for v in values]


def _sorted_jobs(items: Iterable[JobItem]) -> list[JobItem]:
    return sorted(items, key=lambda item: item[0])


def query_jobs(items: Iterable[JobItem], fields: Any, qfilter_data: Any = None,
               ) -> dict[str, Any]:
    """The answer to ``Query("job", fields, filter)``, rows sorted by job id."""
    return Query(JOB_FIELDS, fields, qfilter_data).response(_sorted_jobs(items))


def old_style_rows(items: Iterable[JobItem], fields: Any) -> list[list[Any] | None]:
    """The answer to ``QueryJobs``: plain values per job, None for a missing job.

    Rows keep the order of ``items`` (the ids the client asked for).
    """
    query = Query(JOB_FIELDS, fields)
    unknown = query.unknown_fields()
    if unknown:
        raise OpPrereqError("Unknown output fields selected: " + ", ".join(unknown),
                            ECODE_INVAL)
    return [None if job is None else [value for _, value in query.row((job_id, job))]
            for job_id, job in items]


__all__ = [
    "JOB_FIELDS", "NODATA", "OFFLINE", "RESOURCES", "UNAVAIL", "Field", "JobItem", "Query",
    "Special", "field_table", "nice_sort_key", "old_style_rows", "query_fields", "query_jobs",
    "requested_job_ids", "resource_fields", "unknown_fielddef",
]
