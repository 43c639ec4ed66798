"""Identical read-only requests that arrive together are answered by one handler run.

When several clients poll the same resource (dashboards, htools), the
requests that the reactor reads in one turn for the same key (path, query,
user) wait together, and the handler runs once when the turn ends (a
``callLater(0)``); every waiter gets the same answer.  Because the handler,
and so its LUXI call, starts only after the last of them arrived, each
answer is one the request could have had on its own: nothing older than the
request is ever returned.  Only GET requests without a body whose method does
not submit a job are coalesced (the server decides, see ``RapiApp``).

A waiter that is cancelled (its client went away) leaves the batch; the
shared run is cancelled when no waiter is left.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure

T = TypeVar("T")


class _Batch(Generic[T]):
    def __init__(self, start: Callable[[], T | defer.Deferred[T]]) -> None:
        self.start = start
        self.waiters: list[defer.Deferred[T]] = []
        self.running: defer.Deferred[T] | None = None


class Coalescer(Generic[T]):
    """Joins calls with equal keys made within one reactor turn; see the module doc."""

    def __init__(self, clock: IReactorTime) -> None:
        self.clock = clock
        self._open: dict[Hashable, _Batch[T]] = {}
        #: Calls answered and handler runs made (for benchmarks and tests).
        self.calls = 0
        self.runs = 0

    def join(self, key: Hashable, start: Callable[[], T | defer.Deferred[T]]
             ) -> defer.Deferred[T]:
        """The answer of ``start()``, run once for every call with ``key`` this turn."""
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = _Batch(start)
            self.clock.callLater(0, self._run, key, batch)
        self.calls += 1
        waiter: defer.Deferred[T] = defer.Deferred(lambda d: self._leave(batch, d))
        batch.waiters.append(waiter)
        return waiter

    def _run(self, key: Hashable, batch: _Batch[T]) -> None:
        del self._open[key]
        if not batch.waiters:
            return
        self.runs += 1
        try:
            result = batch.start()
        except Exception:
            self._deliver(Failure(), batch)
            return
        if not isinstance(result, defer.Deferred):
            self._deliver(result, batch)
            return
        batch.running = result
        result.addBoth(self._deliver, batch)

    def _deliver(self, result: T | Failure, batch: _Batch[T]) -> None:
        batch.running = None
        waiters, batch.waiters = batch.waiters, []
        for waiter in waiters:
            if isinstance(result, Failure):
                waiter.errback(result)
            else:
                waiter.callback(result)

    def _leave(self, batch: _Batch[T], waiter: defer.Deferred[T]) -> None:
        if waiter in batch.waiters:
            batch.waiters.remove(waiter)
        if not batch.waiters and batch.running is not None:
            running, batch.running = batch.running, None
            running.cancel()
