"""Running one opcode: the logical-unit contract, locks with Ganeti's retry strategy.

For every lock attempt a fresh logical unit is made (the queue hands over a
factory), so a unit that appends to its lock lists never finds them filled
by an earlier attempt.  An attempt takes the cluster level (the BGL) first,
then lets the unit expand names under it, then takes the later levels in
Ganeti's order (docs/design/lu-contract.md).  One attempt must get every
level within the attempt's timeout (the timeouts of
:mod:`ganeti.core.lockstrategy`); an attempt that times out releases all it
took, so jobs needing only some of those locks can run meanwhile (docs/design/locking.md,
"operation C"), and the next attempt waits longer; when the timeouts are used
up the priority rises and the strategy starts over.  A lock that vanished
while waited for (its object was removed) starts the attempt over at once:
the new unit then finds the object missing.  Whatever happens, every lock is
released at the end, and errors reach the client as Ganeti's error classes.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core.errors import (
    ECODE_ENVIRON,
    ECODE_NOTUNIQUE,
    ECODE_TEMP_NORES,
    GenericError,
    LockError,
    OpExecError,
    OpPrereqError,
)
from ganeti.core.lockstrategy import LockAttemptSchedule
from ganeti.master.config.reservations import ReservationManager
from ganeti.master.locking.manager import LEVEL_CLUSTER, LockManager
from ganeti.master.locking.sharedlock import LockGone
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs, submitted_by
from ganeti.master.lu.hooks import HooksRunner

#: Makes the logical unit of the opcode being run; called once per lock attempt.
LUFactory = Callable[[], LogicalUnit]


def _is_temp_nores(err: OpPrereqError) -> bool:
    """Whether a unit failed for want of resources on opportunistically locked nodes."""
    return len(err.args) > 1 and err.args[1] == ECODE_TEMP_NORES

#: How often in a row an attempt may find a lock gone before the opcode fails.
MAX_GONE_RETRIES = 5

_log = Logger()


class Preempted(Exception):
    """The opcode gave up waiting for its locks because a PAUSE rule now applies to it;
    it has not started and is run again when the job goes on."""


class JobHandle:
    """The running state of one job, through which it can be cancelled."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.owner = f"job/{job_id}"
        self.cancel_requested = False
        self.kill_requested = False
        self.interruptible = False  # the current opcode may be interrupted by a cancel
        self.waiting_for_locks = False
        self.paused = False  # held between opcodes by a PAUSE filter rule
        self.pause_requested = False  # a PAUSE rule applies: give up a lock wait
        self.current: defer.Deferred[Any] | None = None

    def request_cancel(self, kill: bool) -> None:
        """Cancel at the next lock wait or opcode boundary; ``kill`` also stops the opcode."""
        self.cancel_requested = True
        self.kill_requested = self.kill_requested or kill
        if self.current is not None and (self.waiting_for_locks or self.paused or kill
                                         or self.interruptible):
            self.current.cancel()

    def request_pause(self) -> None:
        """A PAUSE rule now applies: stop waiting for locks (releasing those held)."""
        self.pause_requested = True
        if self.current is not None and self.waiting_for_locks:
            self.current.cancel()

    async def wait(self, d: defer.Deferred[Any]) -> Any:
        """Await ``d`` so that a cancel request can interrupt it."""
        self.current = d
        try:
            return await d
        finally:
            self.current = None


class _Gone(Exception):
    """An attempt found one of its locks removed."""


class Processor:
    """Executes logical units for the job queue."""

    def __init__(self, locks: LockManager, clock: IReactorTime,
                 rng: random.Random | None = None,
                 reservations: ReservationManager | None = None) -> None:
        """``reservations``: the job's temporary reservations are dropped with its locks."""
        self.locks = locks
        self.clock = clock
        self.rng = rng or random.Random()
        self.reservations = reservations

    async def execute(self, factory: LUFactory, handle: JobHandle, priority: int,
                      on_running: Callable[[], Awaitable[None]]) -> Any:
        """Run the opcode whose units ``factory`` makes, for ``handle``'s job.

        ``on_running`` records the switch to running (all locks held).
        Errors that are not Ganeti's client-facing classes become
        ``OpExecError``; cancellation and preemption pass through.
        """
        try:
            return await self._execute(factory, handle, priority, on_running)
        except (defer.CancelledError, Preempted):
            raise
        except LockError as err:
            _log.failure("Lock error in job {job}", job=handle.job_id)
            raise OpExecError(f"Internal lock error: {err}") from None
        except GenericError:
            raise
        except Exception as err:
            _log.failure("Opcode of job {job} failed unexpectedly", job=handle.job_id)
            raise OpExecError(f"Internal error: {type(err).__name__}: {err}") from None
        finally:
            handle.interruptible = False
            self.locks.release_all(handle.owner)
            if self.reservations is not None:
                self.reservations.release(handle.owner)

    async def _execute(self, factory: LUFactory, handle: JobHandle, priority: int,
                       on_running: Callable[[], Awaitable[None]]) -> Any:
        try:
            return await self._execute_once(factory, handle, priority, on_running)
        except OpPrereqError as err:
            if not _is_temp_nores(err):
                raise
        # Ganeti's PrepareRetry: a unit that failed for want of resources on the locks it
        # took opportunistically runs once more, waiting for every lock it asks for
        self.locks.release_all(handle.owner)
        announced: list[bool] = []

        def waiting() -> LogicalUnit:
            lu = factory()
            lu.opportunistic_allowed = False
            if not announced:
                announced.append(True)
                lu.ctx.feedback("message", "* falling back to full lock allocation")
            return lu
        return await self._execute_once(waiting, handle, priority, on_running)

    async def _execute_once(self, factory: LUFactory, handle: JobHandle, priority: int,
                            on_running: Callable[[], Awaitable[None]]) -> Any:
        lu = factory()
        lu.check_arguments()
        if lu.uses_locks:
            try:
                lu = await self._acquire(factory, lu, handle, priority)
            except defer.CancelledError:
                if handle.pause_requested and not handle.cancel_requested:
                    raise Preempted() from None
                raise
        try:
            result = await self._run(lu, handle, on_running)
        except BaseException:
            self._drop_added(lu, handle)
            raise
        self._drop_removed(lu, handle)
        return result

    def _drop_added(self, lu: LogicalUnit, handle: JobHandle) -> None:
        """After a failure: remove the locks the job added for its unit (a failed
        create leaves no instance lock behind), and those the unit asked to remove."""
        for level, names in lu.added_locks.items():
            lu.remove_locks[level] = sorted(set(lu.remove_locks.get(level, [])) | set(names))
        self._drop_removed(lu, handle)

    def _drop_removed(self, lu: LogicalUnit, handle: JobHandle) -> None:
        for level, names in lu.remove_locks.items():
            held = self.locks.owned(handle.owner, level) & set(names)
            if held:
                self.locks.remove(handle.owner, level, sorted(held))
        lu.remove_locks.clear()

    async def _run(self, lu: LogicalUnit, handle: JobHandle,
                   on_running: Callable[[], Awaitable[None]]) -> Any:
        """With the locks held: the prerequisites, pre hooks, exec, submitted jobs,
        post hooks and the config-update hook."""
        if not lu.uses_locks:
            lu.expand_names()
            await handle.wait(defer.Deferred.fromCoroutine(lu.before_locks()))
        if handle.cancel_requested:
            raise defer.CancelledError()
        await on_running()
        await handle.wait(defer.Deferred.fromCoroutine(lu.before_prereq()))
        lu.check_prereq()
        hooks = lu.ctx.hooks
        if hooks is not None:
            await hooks.run_pre(lu)
        handle.interruptible = lu.interruptible
        try:
            result = await handle.wait(defer.Deferred.fromCoroutine(lu.exec()))
            handle.interruptible = False
            if isinstance(result, ResultWithJobs):
                result = await self._submit(lu, result)
            if hooks is not None and not lu.op.dry_run:
                result = await hooks.run_post(lu, result)  # verify reports its hooks in it
        finally:
            handle.interruptible = False
            if hooks is not None and lu.config_writes:
                await self._config_update_hook(hooks, lu)
        return result

    @staticmethod
    async def _config_update_hook(hooks: HooksRunner, lu: LogicalUnit) -> None:
        """Run the "config-update" hook; its own failure is logged, never raised
        (it must not hide the unit's result or error)."""
        try:
            await hooks.run_config_update(lu)
        except Exception:
            _log.failure("The config-update hook after {op} failed", op=lu.OP_ID)

    @staticmethod
    async def _submit(lu: LogicalUnit, result: ResultWithJobs) -> dict[str, Any]:
        """Submit the follow-up jobs; the opcode result with their ids under "jobs"."""
        answer = dict(result.other)
        if not result.jobs:
            answer["jobs"] = []
            return answer
        submit = lu.ctx.submit_jobs
        if submit is None:
            raise OpExecError("this master cannot submit jobs from a job", ECODE_ENVIRON)
        jobs = [[submitted_by(lu.op_input, op) for op in job] for job in result.jobs]
        answer["jobs"] = await submit(jobs)
        return answer

    async def _acquire(self, factory: LUFactory, lu: LogicalUnit | None, handle: JobHandle,
                       priority: int) -> LogicalUnit:
        """Attempts until one gets every lock; the unit of that attempt."""
        schedule = LockAttemptSchedule(priority, self.rng)
        first = True
        gone = 0
        while True:
            if handle.pause_requested and not handle.cancel_requested:
                raise Preempted()
            if lu is None:
                lu = factory()  # a fresh unit for every attempt
                lu.check_arguments()
            timeout = schedule.next_timeout()
            try:
                if await self._attempt(lu, handle, schedule.priority, timeout, first):
                    return lu
                schedule.check_priority_increase()
            except _Gone as err:
                gone += 1
                if gone > MAX_GONE_RETRIES:
                    raise OpExecError(f"Locks keep disappearing: {err}") from None
            except BaseException:
                self._drop_added(lu, handle)
                raise
            finally:
                first = False
            self._drop_added(lu, handle)
            self.locks.release_all(handle.owner)
            lu = None

    async def _attempt(self, lu: LogicalUnit, handle: JobHandle, priority: int,
                       timeout: float | None, first: bool) -> bool:
        """One attempt: BGL, names, later levels; False on timeout, _Gone if a lock went."""
        deadline = None if timeout is None else self.clock.seconds() + timeout
        if LEVEL_CLUSTER in lu.needed_locks:
            if not await self._take(lu, handle, LEVEL_CLUSTER, priority, deadline):
                return False
        lu.expand_names()
        if first:
            started = self.clock.seconds()
            await handle.wait(defer.Deferred.fromCoroutine(lu.before_locks()))
            if deadline is not None:  # the client's time is not the attempt's
                deadline += self.clock.seconds() - started
        for level in lu.levels():
            if level == LEVEL_CLUSTER:
                continue
            lu.declare_locks(level)
            if level in lu.needed_locks:
                if not await self._take(lu, handle, level, priority, deadline):
                    return False
            if lu.add_locks.get(level):
                await self._add(lu, handle, level)
        return True

    async def _add(self, lu: LogicalUnit, handle: JobHandle, level: int) -> None:
        """Create ``lu.add_locks[level]``, held by the job (Ganeti's ``add_locks``: the
        lock of an instance being created); the processor removes them again
        unless the opcode succeeds."""
        names = sorted(lu.add_locks[level])
        try:
            await self.locks.add(level, names, owner=handle.owner)
        except LockError as err:
            raise OpPrereqError(f"Couldn't add locks ({err}), most likely because of another "
                                "job who added them first", ECODE_NOTUNIQUE) from None
        lu.added_locks[level] = names

    async def _take(self, lu: LogicalUnit, handle: JobHandle, level: int, priority: int,
                    deadline: float | None) -> bool:
        """Acquire ``lu.needed_locks[level]`` before ``deadline``; whether it worked."""
        remaining = None if deadline is None else max(deadline - self.clock.seconds(), 0.0)
        names = lu.needed_locks[level]
        opportunistic = lu.opportunistic_locks.get(level, False)
        handle.waiting_for_locks = True
        try:
            got = await handle.wait(self.locks.acquire(
                handle.owner, level, names, shared=lu.share_locks.get(level, False),
                priority=priority, timeout=remaining, opportunistic=opportunistic))
        except LockGone as err:
            raise _Gone(str(err)) from None
        finally:
            handle.waiting_for_locks = False
        if got is None:
            return False
        if opportunistic and names is not None:
            lu.needed_locks[level] = sorted(got)  # what the unit may use
        return True
