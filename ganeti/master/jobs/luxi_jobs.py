"""LUXI methods of the job queue (reference section 2 and 4).

Answers about many jobs (``QueryJobs`` and ``Query("job")`` of the whole
queue) are built :data:`ROWS_PER_TURN` jobs per reactor turn, so that a
client asking for thousands of jobs does not hold masterd from everybody
else while its answer is built.  Each row is read in one go, so it is
consistent; rows of different turns may be a few milliseconds apart, as
when Ganeti's luxid reads job files one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import task
from twisted.internet.interfaces import IReactorTime

from ganeti.core import constants, errors
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.jobs import QueuedJob
from ganeti.core.opcodes import luxid
from ganeti.core.query import Query
from ganeti.luxi.server import RequestRefused
from ganeti.master.jobs.events import EventBus
from ganeti.master.jobs.filters import FilterMethods
from ganeti.master.jobs.jobqueue import JobQueue
from ganeti.master.locking.manager import LockManager
from ganeti.master.query import jobquery
from ganeti.master.query.jobquery import JobItem
from ganeti.master.query.nodequeries import NodeQueries
from ganeti.master.query.queryregistry import LOCK_TABLE, QueryRegistry, QuerySource

#: luxid's JobLost text for a job it cannot find (WaitForJobChange).
JOB_FILE_MISSING = "Can't load job file"
WFJC_MAX_TIMEOUT = 89  # luxid caps WaitForJobChange at (180 - 1) // 2 seconds
#: Job rows built per reactor turn for a query of many jobs (about 10 ms).
ROWS_PER_TURN = 500

def job_id_arg(value: Any) -> int:
    """A job id from the wire (integer or digit string)."""
    return int(value)


class JobMethods:
    """Implements the job LUXI methods over a :class:`JobQueue`."""

    def __init__(self, queue: JobQueue, locks: LockManager, bus: EventBus,
                 clock: IReactorTime, nodes: NodeQueries | None = None,
                 filters: FilterMethods | None = None) -> None:
        self.nodes = nodes
        self.filters = filters
        self.queue = queue
        self.locks = locks
        self.bus = bus
        self.clock = clock
        #: Every resource Query and QueryFields answer: jobs and locks here, nodes,
        #: groups and job filter rules from their own modules.
        self.registry = QueryRegistry()
        self.registry.register(QuerySource(constants.QR_JOB, jobquery.JOB_FIELDS,
                                           self._query_job, ("QueryJobs", self.query_jobs)))
        self.registry.register(QuerySource(constants.QR_LOCK, LOCK_TABLE, self._query_lock))
        for source in (nodes.sources() if nodes is not None else []):
            self.registry.register(source)
        if filters is not None:
            self.registry.register(filters.query_source())

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation."""
        return {
            "SubmitJob": lambda ops: self.submit("SubmitJob", ops, False),
            "SubmitJobToDrainedQueue": lambda ops: self.submit("SubmitJobToDrainedQueue",
                                                               ops, True),
            "SubmitManyJobs": self.submit_many,
            "WaitForJobChange": self.wait_for_job_change,
            **self.registry.implementations(),  # Query, QueryFields, QueryJobs, ...
            "CancelJob": lambda job_id, kill: self.queue.cancel(job_id_arg(job_id), kill),
            "ArchiveJob": lambda job_id: self.queue.archive(job_id_arg(job_id)),
            "AutoArchiveJobs": self.queue.auto_archive,
            "ChangeJobPriority": lambda job_id, prio: self.queue.change_priority(
                job_id_arg(job_id), prio),
            "SetDrainFlag": self.set_drain_flag,
        }

    async def submit(self, method: str, ops: Any, ignore_drain: bool) -> int:
        """SubmitJob(ToDrainedQueue): an invalid opcode is refused as luxid parses it."""
        try:
            return await self.queue.submit(ops, ignore_drain=ignore_drain)
        except OpPrereqError as err:
            why = luxid.refusal(ops) or str(err.args[0])
            raise RequestRefused.parsing(method, why) from None

    async def submit_many(self, many: Any) -> list[list[Any]]:
        """SubmitManyJobs: all jobs or none; an invalid one refuses the request."""
        try:
            return await self.queue.submit_many(many)
        except OpPrereqError as err:
            jobs = many if isinstance(many, list) else [None]
            why = next((r for r in map(luxid.refusal, jobs) if r is not None),
                       str(err.args[0]))
            raise RequestRefused.parsing("SubmitManyJobs", why) from None

    async def _items(self, ids: Any, archive: bool = False) -> list[JobItem]:
        """The live jobs (ids None or empty, as luxid; with ``archive`` the archived
        ones too), or the given ids, archived too."""
        if not ids and archive:
            ids = sorted(set(self.queue.visible) | set(await self.queue.store.archived_ids()))
            if not ids:
                return []
        if not ids:
            return sorted(self.queue.visible.items())
        if not isinstance(ids, list) or not all(
                isinstance(i, int) or (isinstance(i, str) and i.isascii() and i.isdigit())
                for i in ids):
            # (luxid refuses them while parsing the request)
            raise RequestRefused.parsing("QueryJobs", "job ids must be a list of job ids or "
                                         f"null, got {str(ids)[:100]}")
        wanted = [int(i) for i in ids]
        missing = [i for i in wanted if i not in self.queue.visible]
        archived: dict[int, QueuedJob] = {}
        if missing:
            for job_id, data in (await self.queue.store.read_archived(missing)).items():
                try:
                    archived[job_id] = QueuedJob.from_dict(data, f"archived job-{job_id}")
                except errors.JobQueueError:
                    continue
                archived[job_id].archived = True
        return [(i, self.queue.visible.get(i) or archived.get(i)) for i in wanted]

    async def _next_turn(self) -> None:
        await task.deferLater(self.clock, 0, lambda: None)

    async def query_jobs(self, ids: Any, fields: list[str]) -> list[Any]:
        """QueryJobs: old-style rows; only the id is known of a job that does not exist."""
        items = await self._items(ids, isinstance(fields, list) and "archived" in fields)
        rows = jobquery.old_style_rows(items[:ROWS_PER_TURN], fields)  # checks the fields
        for start in range(ROWS_PER_TURN, len(items), ROWS_PER_TURN):
            await self._next_turn()
            rows.extend(jobquery.old_style_rows(items[start:start + ROWS_PER_TURN], fields))
        # As luxid: a job that does not exist has its id and null for every other field.
        return [row if row is not None else [job_id if f == "id" else None for f in fields]
                for (job_id, _), row in zip(items, rows, strict=True)]

    async def _query_jobs(self, items: list[JobItem], fields: list[str],
                          qfilter: Any, by_id: bool = True) -> dict[str, Any]:
        """Query("job"): the rows of the items passing the filter, by job id (or, with
        ``by_id`` false, in the order of ``items``: the ids the filter names, as luxid)."""
        selected = Query(jobquery.JOB_FIELDS, fields, qfilter)
        if by_id:
            items = sorted(items, key=lambda item: item[0])
        data = selected.rows(items[:ROWS_PER_TURN])
        for start in range(ROWS_PER_TURN, len(items), ROWS_PER_TURN):
            await self._next_turn()
            data.extend(selected.rows(items[start:start + ROWS_PER_TURN]))
        return {"fields": selected.fielddefs(), "data": data}

    async def _query_job(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """Query("job"): jobs asked for by id are listed even if missing (their fields
        unavailable), and archived ones are read from the archive; with the field
        "archived" (gnt-job list --archived) all archived jobs too."""
        wanted = jobquery.requested_job_ids(qfilter) if qfilter is not None else None
        archive = isinstance(fields, list) and "archived" in fields
        return await self._query_jobs(await self._items(wanted, archive), fields, qfilter,
                                      by_id=not wanted)

    def _query_lock(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """Query("lock"): the lock monitor's rows."""
        return Query(LOCK_TABLE, fields, qfilter).response(self.locks.monitor())

    async def query(self, what: str, fields: list[str], qfilter: Any) -> dict[str, Any]:
        """Query(what, fields, filter) of any registered resource."""
        return await self.registry.query(what, fields, qfilter)

    def resources(self) -> list[str]:
        """The resources Query and QueryFields answer."""
        return self.registry.resources()

    def query_fields(self, what: str, fields: list[str] | None) -> dict[str, Any]:
        """QueryFields(what, fields) of any registered resource."""
        return self.registry.query_fields(what, fields)

    def _job_info(self, job: QueuedJob, fields: list[str]) -> list[Any]:
        (row,) = jobquery.old_style_rows([(job.id, job)], fields)
        assert row is not None
        return row

    async def wait_for_job_change(self, job_id: Any, fields: list[str], prev_info: Any,
                                  prev_log_serial: Any, timeout: float) -> Any:
        """WaitForJobChange as luxid: answer at once if anything differs, else wait."""
        jid = job_id_arg(job_id)
        deadline = self.clock.seconds() + max(0.0, min(float(timeout), WFJC_MAX_TIMEOUT))
        if prev_log_serial is not None and not isinstance(prev_log_serial, int):
            raise OpPrereqError("prev_log_serial must be an integer or null", ECODE_INVAL)
        while True:
            job = self.queue.visible.get(jid)
            if job is None:
                raise errors.JobLost(JOB_FILE_MISSING)
            info = self._job_info(job, fields)
            logs = job.log_entries_since(prev_log_serial)
            if job.finalized or info != prev_info or logs:
                return [info, logs]
            remaining = deadline - self.clock.seconds()
            if remaining <= 0:
                return [info, []]  # unchanged, as luxid answers on a timeout
            await self.bus.wait_for(
                lambda e: e.kind in ("job", "archive") and e.data.get("id") == jid, remaining)

    async def set_drain_flag(self, drain: bool) -> bool:
        """SetDrainFlag: create or remove queue/drain."""
        await self.queue.store.set_drain(drain)
        return True
