"""The job queue: submission, scheduling, execution, cancelling, archiving.

Jobs are :class:`~ganeti.core.jobs.QueuedJob` objects changed only on the
reactor.  Every change goes to the store first; only when the store says it
is durable does the change become visible: the job's *visible* copy (what
queries and WaitForJobChange read) is replaced and an event is published.
See docs/design/jobqueue.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from ganeti.core import constants, errors, jobfilters, jobs, opcodes
from ganeti.core.jobfilters import CompiledRule, JobFacts
from ganeti.core.jobs import QueuedJob, QueuedOpCode
from ganeti.core.opcodes.base import echo_form, run_form
from ganeti.master.jobs.events import EventBus
from ganeti.master.jobs.jobstore import JobStore, JobStoreError, Recovered
from ganeti.master.jobs.processor import JobHandle, Preempted, Processor
from ganeti.master.jobs.scheduler import Scheduler
from ganeti.master.lu.base import LogicalUnit, LUContext
from ganeti.master.lu.registry import REGISTRY

DEFAULT_SIZE_LIMIT = 10000
#: Rule tests per reactor turn when many jobs must be evaluated again (about 10 ms).
EVALUATION_SLICE = 20000
CRASH_MESSAGE = "Job was running when the master daemon stopped (crash or restart)"
#: The reason trail source of the jobs the master submits when it recovers its queue.
RECOVERY_SOURCE = "gnt:daemon:masterd:recovery"
#: Ganeti's texts: results of cancelled and of skipped opcodes, answers of CancelJob.
CANCELED_BY_REQUEST = "Job canceled by request"
PRECEDING_FAILED = "Preceding opcode failed"
QUEUE_DRAINED = "Queue drained"
CANCEL_RUNNING = "Job no longer waiting, can't cancel (informed it anyway)"
CANCEL_WAITING = "Job successfully cancelled"
CANCEL_KILLED = "SIGKILL send to the process"
Limits = Callable[[], tuple[int, int]]  # (max_running_jobs, max_tracked_jobs)
ContextFactory = Callable[[JobHandle, QueuedJob], LUContext]


def _snapshot(data: dict[str, Any]) -> QueuedJob:
    """A read-only job object over ``data`` (fresh from ``to_dict``), without copying.

    The store serialises the same dict in its thread; both only read it.
    """
    return QueuedJob(
        id=data["id"],
        ops=[QueuedOpCode(input=op["input"], status=op["status"], result=op["result"],
                          log=op["log"], priority=op["priority"],
                          start_timestamp=op["start_timestamp"],
                          exec_timestamp=op["exec_timestamp"],
                          end_timestamp=op["end_timestamp"]) for op in data["ops"]],
        received_timestamp=data["received_timestamp"],
        start_timestamp=data["start_timestamp"], end_timestamp=data["end_timestamp"],
        livelock=data.get("livelock"), process_id=data.get("process_id"))


def interrupted_migrations(job: QueuedJob) -> list[str]:
    """The instances of a job's live migrations (not cleanups) that had not finished."""
    names = []
    for op in job.ops:
        inp = op.input if isinstance(op.input, dict) else {}
        if op.status in (jobs.RUNNING, jobs.CANCELING) \
                and inp.get("OP_ID") == "OP_INSTANCE_MIGRATE" \
                and not inp.get("cleanup") and isinstance(inp.get("instance_name"), str):
            names.append(inp["instance_name"])
    return names


class JobQueue:
    """All live (unarchived) jobs of the cluster and the machinery that runs them."""

    log = Logger()

    def __init__(self, store: JobStore, bus: EventBus, clock: IReactorTime,
                 processor: Processor, context: ContextFactory, limits: Limits,
                 size_limit: int = DEFAULT_SIZE_LIMIT) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock
        self.processor = processor
        self.context = context
        self.limits = limits
        self.size_limit = size_limit
        self.jobs: dict[int, QueuedJob] = {}  # working copies
        self.visible: dict[int, QueuedJob] = {}  # last durable state of each job
        self.running: dict[int, JobHandle] = {}
        self.scheduler = Scheduler(self.jobs, self._start, self._reject, self._wait_reason,
                                   self._preempt)
        self._evaluating: IDelayedCall | None = None
        self._settled_waiters: list[defer.Deferred[None]] = []
        self._published_log: dict[int, int] = {}
        # A job's opcodes never change: their ids and summaries are computed once.
        self._published_ops: dict[int, tuple[list[str], list[str]]] = {}
        self._scheduling = False
        self._reschedule = False

    # Startup

    async def restore(self, recovered: Recovered) -> None:
        """Take over the jobs found on disk: running ones fail, the rest run again."""
        now = self.clock.seconds()
        saves = []
        interrupted: list[tuple[int, str]] = []
        for job_id in sorted(recovered.jobs):
            try:
                job = QueuedJob.from_dict(recovered.jobs[job_id], f"job-{job_id}")
            except jobs.CorruptJobError as err:  # only from journal records
                self.log.error("Job queue recovery: {error}; the job is not loaded",
                               error=str(err))
                continue
            changed = False
            if any(op.status in (jobs.RUNNING, jobs.CANCELING) for op in job.ops):
                interrupted += [(job_id, name) for name in interrupted_migrations(job)]
                for op in job.ops:
                    if op.status not in jobs.FINALIZED:
                        op.status = jobs.ERROR
                        op.result = errors.encode_exception(errors.OpExecError(CRASH_MESSAGE))
                        op.end_timestamp = jobs.split_time(now)
                job.end_timestamp = jobs.split_time(now)
                changed = True
            elif any(op.status == jobs.WAITING for op in job.ops):
                for op in job.ops:
                    if op.status == jobs.WAITING:
                        op.status = jobs.QUEUED
                changed = True
            self.jobs[job_id] = job
            self.visible[job_id] = _snapshot(job.to_dict())
            self._published_log[job_id] = job.log_serial
            if changed:
                saves.append(defer.Deferred.fromCoroutine(self._persist(job)))
            if not job.finalized:
                self.scheduler.track(job)
            if job.status == jobs.QUEUED:
                self.scheduler.enqueue(job)
        await defer.gatherResults(saves, consumeErrors=True)
        self.schedule()
        for job_id, name in interrupted:
            await self._submit_cleanup(job_id, name, now)

    async def _submit_cleanup(self, job_id: int, name: str, now: float) -> None:
        """The cleanup of a migration whose job the master's stop interrupted, submitted
        by the master itself (Ganeti leaves ``gnt-instance migrate --cleanup`` to the
        administrator): a migration still running is ended, the config follows where
        the instance runs, the mirror is made single-master again."""
        op = {"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": name, "cleanup": True,
              "reason": [[RECOVERY_SOURCE, f"cleanup of the migration of job {job_id}, "
                          "interrupted by the master daemon's stop", int(now * 1e9)]]}
        try:
            new_id = await self.submit([op], ignore_drain=True)
        except errors.GenericError as err:
            self.log.error("Could not submit the cleanup of the interrupted migration of "
                           "{name} (job {job}): {error}", name=name, job=job_id,
                           error=str(err))
            return
        self.log.info("Job {job} (migration of {name}) was interrupted by the master "
                      "daemon's stop: its cleanup is job {new}", job=job_id, name=name,
                      new=new_id)

    # Submission

    def _check_accepting(self, count: int, ignore_drain: bool) -> None:
        failure = self.store.failure
        if failure is not None:
            raise errors.JobQueueError(
                f"The job queue cannot store new jobs now: {failure.describe()}. Free space "
                f"in {self.store.queue_dir} on the master; jobs are accepted again as soon as "
                "it can write (jobs already accepted are kept and go on)")
        if not ignore_drain and self.store.is_drained():
            raise errors.GenericError(QUEUE_DRAINED)  # luxid's class and text
        if len(self.jobs) + count > self.size_limit:
            raise errors.JobQueueFull(f"Job queue is full ({len(self.jobs)} jobs, limit "
                                      f"{self.size_limit}); archive finished jobs")

    async def submit(self, ops: Any, ignore_drain: bool = False) -> int:
        """SubmitJob: validate, store durably, return the job id.

        A job that a REJECT filter rule applies to is accepted and stored
        already cancelled, as luxid does: the client gets its id.
        """
        validated = opcodes.validate_job(ops)
        self._check_accepting(1, ignore_drain)
        (job_id,) = await self._create([validated])
        return job_id

    async def submit_many(self, many: Any) -> list[list[Any]]:
        """SubmitManyJobs: ``[true, id]`` per job, in order; all jobs or none.

        As luxid parses the whole request before it queues anything, one
        invalid job refuses the whole request (OpPrereqError naming the job).
        """
        if not isinstance(many, list):
            raise errors.OpPrereqError("SubmitManyJobs needs a list of jobs",
                                       errors.ECODE_INVAL)
        checked: list[list[dict[str, Any]]] = []
        for index, ops in enumerate(many):
            try:
                checked.append(opcodes.validate_job(ops))
            except errors.OpPrereqError as err:
                raise errors.OpPrereqError(f"Job {index}: {err.args[0]}",
                                           errors.ECODE_INVAL) from None
        self._check_accepting(len(checked), False)
        return [[True, job_id] for job_id in await self._create(checked)]

    async def _create(self, job_ops: list[list[dict[str, Any]]]) -> list[int]:
        """Store new jobs in one batch (all of them or none); their ids in order."""
        ids = self.store.allocate_ids(len(job_ops))
        now = self.clock.seconds()
        created: list[QueuedJob] = []
        for job_id, ops in zip(ids, job_ops, strict=True):
            prepared = [echo_form(op) for op in
                        opcodes.prepare_job_ops(ops, job_id, jobs.time_ns(now))]
            job = QueuedJob.new(job_id, prepared, now)
            rule = self.scheduler.applying(JobFacts.of(job_id, prepared))
            if rule is not None and rule.kind == jobfilters.REJECT:
                self._dequeue(job)
            created.append(job)
        for job in created:
            self.jobs[job.id] = job
        # One batch for the whole submission: all of it is stored, or none of it.
        datas = [job.to_dict(deep=False) for job in created]
        try:
            await self.store.save_new([(job.id, data)
                                       for job, data in zip(created, datas, strict=True)])
        except JobStoreError as err:
            for job in created:
                self.jobs.pop(job.id, None)
            raise errors.JobQueueError(f"Could not store the job(s): {err}; free space in "
                                       f"{self.store.queue_dir} on the master") from None
        for job, data in zip(created, datas, strict=True):
            self._show(job, data)
        for job in created:
            if job.status == jobs.QUEUED:  # not rejected, nor cancelled meanwhile
                self.scheduler.track(job)
                self.scheduler.enqueue(job)
        self.schedule()
        return ids

    # Persistence and visibility

    async def _persist(self, job: QueuedJob, archive: bool = False) -> None:
        """Store the job's state and then make it visible.

        This waits, however long, until the store could make it durable
        (a full disk delays it; it does not fail).
        """
        # Timestamps are replaced, never changed in place, and inputs, results and
        # log entries are never changed once set: a shallow snapshot is enough.
        data = job.to_dict(deep=False)
        await self.store.save(job.id, data)
        if archive:
            await self.store.archive(job.id)
            self.visible.pop(job.id, None)
            self._published_log.pop(job.id, None)
            self._published_ops.pop(job.id, None)
            self.bus.publish("archive", {"id": job.id})
            return
        self._show(job, data)

    def _show(self, job: QueuedJob, data: dict[str, Any]) -> None:
        """A durable state becomes the visible one and is published."""
        snapshot = _snapshot(data)
        snapshot.wait_reason = self.scheduler.wait_reasons.get(job.id)
        self.visible[job.id] = snapshot
        since = self._published_log.get(job.id, 0)
        self._published_log[job.id] = snapshot.log_serial
        self._publish(snapshot, snapshot.log_entries_since(since))

    def _publish(self, snapshot: QueuedJob, log: list[list[Any]]) -> None:
        ops = self._published_ops.get(snapshot.id)
        if ops is None:
            ops = self._published_ops[snapshot.id] = (
                [op.op_id for op in snapshot.ops], snapshot.summary())
        self.bus.publish("job", {
            "id": snapshot.id, "status": snapshot.status,
            "opstatus": [op.status for op in snapshot.ops],
            "ops": ops[0], "summary": ops[1],
            "priority": snapshot.priority,
            "log": log,
            "received_ts": snapshot.received_timestamp,
            "start_ts": snapshot.start_timestamp, "end_ts": snapshot.end_timestamp,
            "wait_reason": snapshot.wait_reason,
        })

    def _wait_reason(self, job_id: int, reason: str | None) -> None:
        """Why a job waits changed: visible at once to queries and in the event stream.

        The reason is runtime state, not part of the job file: the visible
        copy is replaced by one with the new reason (nothing else changes).
        """
        snapshot = self.visible.get(job_id)
        if snapshot is None or snapshot.wait_reason == reason:
            return
        snapshot = dataclasses.replace(snapshot, wait_reason=reason)
        self.visible[job_id] = snapshot
        self._publish(snapshot, [])

    # Scheduling

    def schedule(self) -> None:
        """Start queued jobs while there is room; safe to call at any time."""
        if self._scheduling:
            self._reschedule = True
            return
        self._scheduling = True
        try:
            self._reschedule = True
            while self._reschedule:
                self._reschedule = False
                self._schedule_pass()
        finally:
            self._scheduling = False

    def _schedule_pass(self) -> None:
        max_running = self.limits()[0]
        self.scheduler.run(
            lambda: max_running - (len(self.running) - len(self.scheduler.paused)))

    def _start(self, job: QueuedJob) -> None:
        handle = JobHandle(job.id)
        self.running[job.id] = handle
        d = defer.Deferred.fromCoroutine(self._run(job, handle))
        d.addErrback(self._crashed, job)
        d.addBoth(lambda _: self._finished(job))

    def _crashed(self, failure: Any, job: QueuedJob) -> defer.Deferred[None] | None:
        """A job's coroutine raised: end it in error, durably, rather than leave it running."""
        self.log.failure("Job {job} crashed", failure, job=job.id)
        first = next((i for i, op in enumerate(job.ops) if op.status not in jobs.FINALIZED),
                     None)
        if first is None:
            return None
        self._end_rest(job, first, jobs.ERROR,
                       errors.OpExecError(f"Internal error in the job: {failure.value}"))
        job.end_timestamp = jobs.split_time(self.clock.seconds())
        d = defer.Deferred.fromCoroutine(self._persist(job))
        d.addErrback(lambda f: self.log.failure("Storing crashed job {job} failed", f,
                                                job=job.id))
        return d

    def _finished(self, job: QueuedJob) -> None:
        self.running.pop(job.id, None)
        self.scheduler.forget(job.id)
        self.schedule()

    def _reject(self, job: QueuedJob, rule: CompiledRule) -> None:
        """A queued job that a REJECT rule applies to is dequeued (cancelled)."""
        self._dequeue(job)
        self.scheduler.forget(job.id)
        d = defer.Deferred.fromCoroutine(self._persist(job))
        d.addErrback(lambda f: self.log.failure("Storing cancelled job {job} failed", f,
                                                job=job.id))

    # Filter rules

    def set_rules(self, rules: Iterable[CompiledRule]) -> int:
        """Apply a new set of filter rules; returns the rule tests made so far.

        Jobs whose rule went away are evaluated again in full: at once if
        that is cheap, else in slices of :data:`EVALUATION_SLICE` rule tests,
        one per reactor turn, so that the reactor is never blocked for long;
        those jobs do not start meanwhile.  :meth:`rules_settled` fires when
        every job has been evaluated.
        """
        tested = self.scheduler.set_rules(rules)
        if self.scheduler.pending * len(self.scheduler.rules) <= EVALUATION_SLICE:
            tested += self.scheduler.evaluate_pending(EVALUATION_SLICE)
        elif self._evaluating is None:
            self._evaluating = self.clock.callLater(0, self._evaluate_slice)
        self.schedule()
        self._settle()
        return tested

    def _evaluate_slice(self) -> None:
        self._evaluating = None
        self.scheduler.evaluate_pending(EVALUATION_SLICE)
        if self.scheduler.pending:
            self._evaluating = self.clock.callLater(0, self._evaluate_slice)
        self.schedule()
        self._settle()

    def _settle(self) -> None:
        if self.scheduler.pending:
            return
        waiters, self._settled_waiters = self._settled_waiters, []
        for d in waiters:
            d.callback(None)

    def rules_settled(self) -> defer.Deferred[None]:
        """Fires once every job has been evaluated against the current rules."""
        d: defer.Deferred[None] = defer.Deferred()
        self._settled_waiters.append(d)
        self._settle()
        return d

    def _preempt(self, job_id: int) -> None:
        handle = self.running.get(job_id)
        if handle is not None:
            handle.request_pause()

    async def _pause_point(self, job: QueuedJob, handle: JobHandle) -> None:
        """Between opcodes: wait here while a PAUSE rule applies to the job.

        The job holds no locks here (every opcode releases its locks), and it
        leaves its place among the running jobs to others meanwhile.
        """
        handle.pause_requested = False  # (asked while the last opcode ran: handled here)
        while not handle.cancel_requested:
            rule = self.scheduler.rule_of(job.id)
            if rule is None or rule.kind != jobfilters.PAUSE:
                return
            held = self.scheduler.hold(job.id, rule)
            self.schedule()
            handle.paused = True
            try:
                await handle.wait(held)
            except defer.CancelledError:
                pass
            finally:
                handle.paused = False
                self.scheduler.unhold(job.id)

    # Execution

    def _dependency_verdict(self, op: QueuedOpCode) -> tuple[str, str] | None:
        """None to go on, else (final status, reason) for this opcode."""
        for dep_id, allowed in op.input.get("depends") or []:
            dep = self.jobs.get(int(dep_id))
            if dep is None:
                continue  # archived, hence finished long ago: Ganeti lets it pass too
            status = dep.status
            if status == jobs.CANCELED and jobs.CANCELED not in allowed:
                return jobs.CANCELED, CANCELED_BY_REQUEST  # (luxid cancels it too)
            if allowed and status not in allowed:
                return jobs.ERROR, (f"Dependency job {dep_id} ended with status {status}, "
                                    f"not one of {', '.join(allowed)}")
        return None

    async def _run(self, job: QueuedJob, handle: JobHandle) -> None:
        now = self.clock.seconds
        job.start_timestamp = jobs.split_time(now())
        for op in job.ops:  # (a new dict: inputs are never changed in place)
            op.input = run_form(op.input, opcodes.OPCODES.get(op.op_id))
        index = -1
        while index + 1 < len(job.ops):
            index += 1
            op = job.ops[index]
            if op.status in jobs.FINALIZED:
                continue
            await self._pause_point(job, handle)
            verdict = self._dependency_verdict(op)
            if handle.cancel_requested:
                verdict = (jobs.CANCELED, CANCELED_BY_REQUEST)
            if verdict is not None:
                self._end_rest(job, index, verdict[0], errors.OpExecError(verdict[1]))
                break
            op.start_timestamp = jobs.split_time(now())
            op.status = jobs.WAITING
            lu_class = REGISTRY.get(op.op_id)
            try:
                if lu_class is None:
                    raise errors.OpCodeUnknown(f"No logical unit for {op.op_id}")
                ctx = self.context(handle, job)

                run_input = op.run_input()

                def make_lu(cls: type[LogicalUnit] = lu_class, ctx: LUContext = ctx,
                            data: dict[str, Any] = run_input) -> LogicalUnit:
                    return cls(ctx, data)  # a fresh unit for every lock attempt

                async def on_running(op: QueuedOpCode = op) -> None:
                    op.status = jobs.RUNNING
                    op.exec_timestamp = jobs.split_time(now())
                    await self._persist(job)

                if make_lu().uses_locks:
                    await self._persist(job)  # waiting for locks
                try:
                    result = await self.processor.execute(make_lu, handle, op.priority,
                                                          on_running)
                finally:
                    if ctx.op_updates:  # what its units recorded (a new dict, as always)
                        op.input = {**op.input, **ctx.op_updates}
            except Preempted:
                # Paused while waiting for locks: the opcode has not started, it
                # holds nothing now, and runs again once the job goes on.
                op.status = jobs.QUEUED
                op.start_timestamp = None
                await self._persist(job)
                index -= 1
                continue
            except defer.CancelledError:
                self._end_rest(job, index, jobs.CANCELED,
                               errors.OpExecError(CANCELED_BY_REQUEST))
                break
            except Exception as err:
                if not isinstance(err, errors.GenericError):
                    self.log.failure("Opcode {op_id} of job {job} failed unexpectedly",
                                     op_id=op.op_id, job=job.id)
                self._end_rest(job, index, jobs.ERROR, err)
                break
            op.status = jobs.SUCCESS
            op.result = result
            op.end_timestamp = jobs.split_time(now())
            if index + 1 < len(job.ops):
                await self._persist(job)
        job.end_timestamp = jobs.split_time(now())
        await self._persist(job)

    def _end_rest(self, job: QueuedJob, index: int, status: str, err: Exception) -> None:
        """Opcode ``index`` ends with ``err``; the later ones end with Ganeti's results.

        A cancel gives every unfinished opcode the plain text "Job canceled by
        request"; an error gives the later ones "Preceding opcode failed".
        """
        when = jobs.split_time(self.clock.seconds())
        for i, op in enumerate(job.ops[index:]):
            op.status = status
            if status == jobs.CANCELED:
                op.result = CANCELED_BY_REQUEST
            else:
                op.result = errors.encode_exception(
                    err if i == 0 else errors.OpExecError(PRECEDING_FAILED))
            op.end_timestamp = when

    def _dequeue(self, job: QueuedJob) -> None:
        """A job that never started is cancelled as luxid dequeues it.

        Its unfinished opcodes become canceled with no result and no log, and
        the job gets an end time but no start time (what Ganeti writes for a
        job dequeued on request or refused by a REJECT filter rule).
        """
        when = jobs.split_time(self.clock.seconds())
        for op in job.ops:
            if op.status not in jobs.FINALIZED:
                op.status = jobs.CANCELED
                op.result = None
                op.end_timestamp = when
        job.end_timestamp = when

    def feedback(self, job: QueuedJob, log_type: str, message: Any) -> None:
        """Add a log entry to the running opcode of ``job`` and store it."""
        op = next((o for o in job.ops if o.status in (jobs.RUNNING, jobs.WAITING)), None)
        if op is None:
            return
        op.log.append(jobs.log_entry(job.log_serial + 1, self.clock.seconds(), log_type,
                                     message))
        d = defer.Deferred.fromCoroutine(self._persist(job))
        d.addErrback(lambda f: self.log.failure("Storing a log message failed", f))

    # Cancel, priority, archive

    async def cancel(self, job_id: int, kill: bool) -> list[Any]:
        """CancelJob: ``[success, message]`` with luxid's answers.

        A job that has not started is dequeued (``Dequeued job N``); one
        waiting for locks, or held between opcodes, is cancelled there; one
        whose opcode runs is told to stop before its next opcode and the
        answer is a failure (luxid's "informed it anyway"), unless ``kill``
        interrupts the running opcode.  Finished and unknown jobs are "not
        found in queue".
        """
        job = self.jobs.get(job_id)
        if job is None or job.finalized:
            return [False, f"Job {job_id} not found in queue"]
        handle = self.running.get(job_id)
        if handle is None:  # queued, or waiting for a dependency or a filter rule
            self._dequeue(job)
            self.scheduler.forget(job_id)
            await self._persist(job)
            self.schedule()
            return [True, f"Dequeued job {job_id}"]
        # An opcode that runs goes on (unless killed or interruptible): told only.
        informed = job.status == jobs.RUNNING and not handle.interruptible
        handle.request_cancel(kill)
        if kill:
            return [True, CANCEL_KILLED]
        if informed:
            return [False, CANCEL_RUNNING]
        return [True, CANCEL_WAITING]

    async def change_priority(self, job_id: int, priority: int) -> list[Any]:
        """ChangeJobPriority: new priority for the job's unfinished opcodes."""
        if priority not in constants.OP_PRIO_SUBMIT_VALID:
            raise errors.OpPrereqError(f"Invalid priority {priority!r}; use one of "
                                       f"{sorted(constants.OP_PRIO_SUBMIT_VALID)}",
                                       errors.ECODE_INVAL)
        job = self.jobs.get(job_id)
        if job is None or job.finalized:
            return [False, f"Job {job_id} not found in queue"]  # luxid's answer for both
        for op in job.ops:
            if op.status not in jobs.FINALIZED:
                op.priority = priority
        await self._persist(job)
        if job.status == jobs.QUEUED:
            self.scheduler.enqueue(job)
            self.schedule()
        return [True, f"Priorities of pending opcodes for job {job_id} have been changed "
                      f"to {priority}"]

    async def archive(self, job_id: int) -> bool:
        """ArchiveJob: only finished jobs."""
        job = self.jobs.get(job_id)
        if job is None or not job.finalized or job_id in self.running:
            return False
        del self.jobs[job_id]
        await self._persist(job, archive=True)
        return True

    async def auto_archive(self, age: float, timeout: float) -> list[int]:
        """AutoArchiveJobs: archive finished jobs that ended more than ``age`` seconds ago."""
        now = self.clock.seconds()
        chosen = []
        for job_id, job in list(self.jobs.items()):
            if not job.finalized or job_id in self.running:
                continue
            ended = job.end_timestamp or job.start_timestamp or job.received_timestamp
            if age < 0 or (ended is not None and jobs.merge_time(ended) <= now - age):
                chosen.append(job_id)
        results = await defer.gatherResults([defer.Deferred.fromCoroutine(self.archive(j))
                                             for j in chosen])
        return [sum(1 for r in results if r), 0]
