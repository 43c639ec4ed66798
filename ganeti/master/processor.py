"""Running one opcode: locks with Ganeti's retry strategy, then the logical unit.

Locks are taken level by level in Ganeti's order.  One attempt must get every
level within the attempt's timeout (the timeouts of
:mod:`ganeti.core.lockstrategy`); an attempt that times out releases all it
took, so jobs needing only some of those locks can run meanwhile (seed 001,
"operation C"), and the next attempt waits longer; when the timeouts are used
up the priority rises and the strategy starts over.  Whatever happens, every
lock is released at the end.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.core.lockstrategy import LockAttemptSchedule
from ganeti.master.locking.manager import LockManager
from ganeti.master.lu.base import LogicalUnit


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


class Processor:
    """Executes logical units for the job queue."""

    def __init__(self, locks: LockManager, clock: IReactorTime,
                 rng: random.Random | None = None) -> None:
        self.locks = locks
        self.clock = clock
        self.rng = rng or random.Random()

    async def execute(self, lu: LogicalUnit, handle: JobHandle, priority: int,
                      on_running: Callable[[], Awaitable[None]]) -> Any:
        """Run ``lu`` for ``handle``'s job; ``on_running`` records the switch to running."""
        try:
            lu.expand_names()
            await handle.wait(defer.Deferred.fromCoroutine(lu.before_locks()))
            if lu.uses_locks:
                try:
                    await self._acquire(lu, handle, priority)
                except defer.CancelledError:
                    if handle.pause_requested and not handle.cancel_requested:
                        raise Preempted() from None
                    raise
            if handle.cancel_requested:
                raise defer.CancelledError()
            await on_running()
            lu.check_prereq()
            handle.interruptible = bool(lu.op.get("interruptible"))
            return await handle.wait(defer.Deferred.fromCoroutine(lu.exec()))
        finally:
            handle.interruptible = False
            self.locks.release_all(handle.owner)

    async def _acquire(self, lu: LogicalUnit, handle: JobHandle, priority: int) -> None:
        schedule = LockAttemptSchedule(priority, self.rng)
        while True:
            if handle.pause_requested and not handle.cancel_requested:
                raise Preempted()
            timeout = schedule.next_timeout()
            if await self._attempt(lu, handle, schedule.priority, timeout):
                return
            self.locks.release_all(handle.owner)
            schedule.check_priority_increase()

    async def _attempt(self, lu: LogicalUnit, handle: JobHandle, priority: int,
                       timeout: float | None) -> bool:
        deadline = None if timeout is None else self.clock.seconds() + timeout
        for level in lu.levels():
            lu.declare_locks(level)
            if level not in lu.needed_locks:
                continue
            remaining = None if deadline is None else max(deadline - self.clock.seconds(), 0.0)
            handle.waiting_for_locks = True
            try:
                got = await handle.wait(self.locks.acquire(
                    handle.owner, level, lu.needed_locks[level],
                    shared=lu.share_locks.get(level, False), priority=priority,
                    timeout=remaining))
            finally:
                handle.waiting_for_locks = False
            if got is None:
                return False
        return True
