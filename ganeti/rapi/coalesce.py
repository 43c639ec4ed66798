"""Identical read-only requests that arrive together are answered by one handler run.

When several clients poll the same resource (dashboards, htools), the
requests that the reactor reads in one turn for the same key (route, path,
parsed query, user; see :func:`ganeti.rapi.routing.query_key`) wait
together, and the handler runs once when the turn ends (a
``callLater(0)``); every waiter gets the same answer.  Because the handler,
and so its LUXI call, starts only after the last of them arrived, each
answer is one the request could have had on its own: nothing older than the
request is ever returned.  Only GET requests without a body whose method does
not submit a job are coalesced (the server decides, see ``RapiApp``).

A run may have to wait for a slot first (``acquire``: heavy reads run a few
at a time, :class:`ganeti.rapi.limits.HeavyReads`).  While it waits, the
batch stays open: requests with the same key that arrive meanwhile join it,
which is still correct (the run starts after they arrived) and makes a
backlog of identical requests cost one run.

A waiter that is cancelled (its client went away) leaves the batch; the
shared run (or its wait for a slot) is cancelled when no waiter is left.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure

T = TypeVar("T")

#: Gives a run its slot: fires with the callable that frees the slot again.
Acquire = Callable[[], "defer.Deferred[Callable[[], None]]"]


class _Batch(Generic[T]):
    def __init__(self, start: Callable[[], T | defer.Deferred[T]],
                 acquire: Acquire | None) -> None:
        self.start = start
        self.acquire = acquire
        self.waiters: list[defer.Deferred[T]] = []
        self.running: defer.Deferred[T] | None = None
        self.slot: defer.Deferred[Callable[[], None]] | None = None


class Coalescer(Generic[T]):
    """Joins calls with equal keys made within one reactor turn; see the module doc."""

    def __init__(self, clock: IReactorTime) -> None:
        self.clock = clock
        self._open: dict[Hashable, _Batch[T]] = {}
        #: Calls answered and handler runs made (for benchmarks and tests).
        self.calls = 0
        self.runs = 0

    def join(self, key: Hashable, start: Callable[[], T | defer.Deferred[T]],
             acquire: Acquire | None = None) -> defer.Deferred[T]:
        """The answer of ``start()``, run once for every call with ``key`` this turn
        (or, with ``acquire``, until the run gets its slot)."""
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = _Batch(start, acquire)
            self.clock.callLater(0, self._turn_ended, key, batch)
        self.calls += 1
        waiter: defer.Deferred[T] = defer.Deferred(lambda d: self._leave(key, batch, d))
        batch.waiters.append(waiter)
        return waiter

    def _turn_ended(self, key: Hashable, batch: _Batch[T]) -> None:
        if not batch.waiters:
            self._close(key, batch)
            return
        if batch.acquire is None:
            self._run(key, batch, None)
            return
        slot = batch.slot = batch.acquire()
        slot.addCallback(lambda release: self._run(key, batch, release))
        slot.addErrback(lambda f: None if f.check(defer.CancelledError) else f)

    def _close(self, key: Hashable, batch: _Batch[T]) -> None:
        if self._open.get(key) is batch:
            del self._open[key]

    def _run(self, key: Hashable, batch: _Batch[T],
             release: Callable[[], None] | None) -> None:
        self._close(key, batch)
        batch.slot = None
        if not batch.waiters:
            if release is not None:
                release()
            return
        self.runs += 1
        try:
            result = batch.start()
        except Exception:
            self._deliver(Failure(), batch, release)
            return
        if not isinstance(result, defer.Deferred):
            self._deliver(result, batch, release)
            return
        batch.running = result
        result.addBoth(self._deliver, batch, release)

    def _deliver(self, result: T | Failure, batch: _Batch[T],
                 release: Callable[[], None] | None) -> None:
        if release is not None:
            release()
        batch.running = None
        waiters, batch.waiters = batch.waiters, []
        for waiter in waiters:
            if isinstance(result, Failure):
                waiter.errback(result)
            else:
                waiter.callback(result)

    def _leave(self, key: Hashable, batch: _Batch[T], waiter: defer.Deferred[T]) -> None:
        if waiter in batch.waiters:
            batch.waiters.remove(waiter)
        if batch.waiters:
            return
        if batch.slot is not None:  # still waiting for a slot: give the wait up
            self._close(key, batch)
            slot, batch.slot = batch.slot, None
            slot.cancel()
        elif batch.running is not None:
            running, batch.running = batch.running, None
            running.cancel()
