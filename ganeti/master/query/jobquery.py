"""The getters of query resource "job" and the job query answers.

The fields are declared in :mod:`ganeti.core.queryfields.jobs`; here each
gets the function that reads it from a queued job (``ops``: each opcode as luxid
echoes it, :func:`ganeti.core.opcodes.base.luxid_echo`).  A job asked for by id
that does not exist is an item without a job: every field but ``id`` is
unavailable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ganeti.core import qlang
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.jobs import QueuedJob, QueuedOpCode
from ganeti.core.opcodes import OPCODES
from ganeti.core.opcodes.base import luxid_echo
from ganeti.core.query import UNAVAIL, Field, Query, bind
from ganeti.core.queryfields.jobs import JOB_FIELDS as JOB_DECLS

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


JOB_GETTERS: dict[str, Callable[[JobItem], Any]] = {
    "id": lambda item: item[0],
    "status": _per_job(lambda j: j.status),
    "priority": _per_job(lambda j: j.priority),
    "ops": _per_op(lambda op: luxid_echo(op.input, OPCODES.get(op.op_id))),
    "opresult": _per_op(lambda op: op.result),
    "opstatus": _per_op(lambda op: op.status),
    "oplog": _per_op(lambda op: op.log),
    "opstart": _per_op(lambda op: op.start_timestamp),
    "opexec": _per_op(lambda op: op.exec_timestamp),
    "opend": _per_op(lambda op: op.end_timestamp),
    "oppriority": _per_op(lambda op: op.priority),
    "summary": _per_op(lambda op: op.summary()),
    "received_ts": _timestamp(lambda j: j.received_timestamp),
    "start_ts": _timestamp(lambda j: j.start_timestamp),
    "end_ts": _timestamp(lambda j: j.end_timestamp),
    "archived": _per_job(lambda j: j.archived),
    "wait_reason": _per_job(lambda j: j.wait_reason or ""),
}

JOB_FIELDS: dict[str, Field[JobItem]] = bind(JOB_DECLS, JOB_GETTERS)


def requested_job_ids(qfilter_data: Any) -> list[int] | None:
    """The job ids a (checked) filter asks for by id alone, else None (all jobs)."""
    values = qlang.requested_values(qfilter_data, "id")
    if values is None or not all(isinstance(v, int) and not isinstance(v, bool)
                                 for v in values):
        return None
    return [int(v) for v in values]


def query_jobs(items: Iterable[JobItem], fields: Any, qfilter_data: Any = None,
               ) -> dict[str, Any]:
    """The answer to ``Query("job", fields, filter)``, rows sorted by job id."""
    return Query(JOB_FIELDS, fields, qfilter_data).response(
        sorted(items, key=lambda item: item[0]))


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


__all__ = ["JOB_FIELDS", "JOB_GETTERS", "JobItem", "old_style_rows", "query_jobs",
           "requested_job_ids"]
