"""One shared/exclusive lock whose waiters are Deferreds, and the hand-off queue.

Semantics follow Ganeti's ``SharedLock`` (reference section 7.2): waiters are
served by priority (lower number first) and first come, first served within a
priority; shared waiters of one priority wait together as one group and are
granted together; a newcomer never overtakes a waiter of the same or a more
urgent priority; the lock is not recursive.

Nothing here ever grants a waiter from inside another grant's callback.  Every
lock that may have become grantable is put on a :class:`HandoffQueue`, and the
queue's single loop does the grants.  A release made from inside a grantee's
callback therefore only updates the lock's state and returns; the loop that is
already running picks up the next waiter.  The stack stays flat however long the
chain of hand-offs is (Twisted's ``DeferredLock`` recurses instead and fails
after a few hundred synchronous hand-offs).
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from ganeti.core.errors import LockError

MODE_EXCLUSIVE = "exclusive"
MODE_SHARED = "shared"
MODE_DELETED = "deleted"

#: A timeout below this, with the lock not immediately available, fails at once
#: without queueing (Ganeti's ``_LOCK_ACQUIRE_MIN_TIMEOUT``).
MIN_TIMEOUT = 0.001

Owner = Hashable
#: ``(name, mode, owner names, [(mode, [waiter names]), ...])``
LockInfo = tuple[str, str | None, list[str], list[tuple[str, list[str]]]]

_log = Logger()


class LockGone(LockError):
    """The lock asked for does not exist (any more): its object was removed.

    The processor answers it by starting the lock attempt over, so that the
    unit resolves its names again and reports the missing object.
    """


class HandoffQueue:
    """Runs the grants of many locks one after another, never nested.

    Locks that share a queue hand off to each other iteratively: a release
    that happens while the queue is running only schedules the lock, and the
    running loop grants its waiters next.  Locks that are used together (the
    members of a lock manager) should share one queue.
    """

    __slots__ = ("_locks", "_running")

    def __init__(self) -> None:
        self._locks: deque[SharedLock] = deque()
        self._running = False

    def schedule(self, lock: SharedLock) -> None:
        """Grant ``lock``'s waiters now, or right after the running hand-off."""
        if lock._scheduled:
            return
        lock._scheduled = True
        self._locks.append(lock)
        if self._running:
            return
        self._running = True
        locks = self._locks
        try:
            while locks:
                lock = locks.popleft()
                try:
                    lock._grant_waiters()
                except Exception:  # a bug; keep the other locks moving
                    _log.failure("Hand-off of {lock} failed", lock=lock.name)
        finally:
            self._running = False


class Waiter(Protocol):
    """What a lock needs from a pending acquire.

    The lock sets ``timer``, ``group`` and ``waiting`` itself and reports the
    outcome once: ``lock_granted(True)`` granted, ``lock_granted(False)``
    timed out, ``lock_failed(LockError)`` deleted.  :class:`LockRequest` (a
    Deferred) is the public kind; a LockSet acquisition is its own waiter, on
    one lock at a time.
    """

    owner: Owner
    shared: bool
    priority: int
    timer: IDelayedCall | None
    group: _SharedGroup | None
    waiting: bool

    def lock_granted(self, ok: bool) -> object:
        """Granted (True) or timed out (False)."""

    def lock_failed(self, err: Exception) -> object:
        """The lock was deleted."""


class LockRequest(defer.Deferred[bool]):
    """The Deferred returned by :meth:`SharedLock.acquire`; it is its own waiter."""

    def __init__(self, lock: SharedLock, owner: Owner, shared: bool, priority: int) -> None:
        super().__init__(lock._canceller)
        self.owner = owner
        self.shared = shared
        self.priority = priority
        self.timer: IDelayedCall | None = None
        self.group: _SharedGroup | None = None
        self.waiting = False

    lock_granted = defer.Deferred.callback
    lock_failed = defer.Deferred.errback


class _SharedGroup:
    """The shared waiters of one priority; they are granted together."""

    __slots__ = ("waiters", "live")
    shared = True

    def __init__(self) -> None:
        self.waiters: list[Waiter] = []
        self.live = 0


class SharedLock:
    """A lock held by one owner exclusively or by several owners shared.

    Owners are any hashable objects except ``None``; ``str(owner)`` names them
    in :meth:`info`.  Acquiring is asynchronous (:meth:`acquire` returns a
    Deferred); releasing, downgrading and the queries are synchronous.
    """

    __slots__ = ("name", "_clock", "_handoff", "_exclusive", "_shared", "_pending",
                 "_queues", "_prios", "_open_shared", "_deleted", "_scheduled", "_canceller")

    def __init__(self, name: str, clock: IReactorTime,
                 handoff: HandoffQueue | None = None) -> None:
        self.name = name
        self._clock = clock
        self._handoff = handoff if handoff is not None else HandoffQueue()
        self._exclusive: Owner | None = None
        self._shared: set[Owner] = set()
        # Waiting owners; empty exactly when every queue is empty.
        self._pending: dict[Owner, Waiter] = {}
        # Per priority, the waiting entries in arrival order: an exclusive
        # waiter or the _SharedGroup of that priority.  No queue is ever empty.
        self._queues: dict[int, deque[Waiter | _SharedGroup]] = {}
        self._prios: list[int] = []  # sorted keys of _queues
        self._open_shared: dict[int, _SharedGroup] = {}
        self._deleted = False
        self._scheduled = False
        self._canceller: Callable[[Any], None] = self._cancel

    # -- acquiring ---------------------------------------------------------

    def acquire(self, owner: Owner, shared: bool = False, priority: int = 0,
                timeout: float | None = None) -> defer.Deferred[bool]:
        """Acquire the lock for ``owner``.

        The Deferred fires with True once the lock is held, or with False when
        ``timeout`` seconds pass first (the request is then withdrawn; a timeout
        under a millisecond fails at once if the lock is not free for the
        taking).  Cancelling it withdraws the request.  It fails with
        ``LockError`` if the lock is or gets deleted, or if ``owner`` already
        holds or waits for this lock.
        """
        request = LockRequest(self, owner, shared, priority)
        try:
            result = self._submit(request, timeout)
        except LockError as err:
            request.errback(err)
        else:
            if result is not None:
                request.callback(result)
        return request

    def _take_now(self, owner: Owner, shared: bool, priority: int) -> bool:
        """Grant at once if the lock is free for the taking; else change nothing.

        False covers every case :meth:`_submit` has to look at (busy, queued,
        deleted, double acquire).
        """
        if (self._exclusive is None and not self._deleted and (shared or not self._shared)
                and (not self._prios or priority < self._prios[0])
                and owner not in self._shared and owner not in self._pending):
            if shared:
                self._shared.add(owner)
            else:
                self._exclusive = owner
            return True
        return False

    def _submit(self, waiter: Waiter, timeout: float | None) -> bool | None:
        """Grant now (True), refuse now (False) or queue ``waiter`` (None).

        A queued waiter hears the outcome later, never from in here.
        """
        owner = waiter.owner
        if self._deleted:
            raise LockGone(f"Lock {self.name} has been deleted")
        if owner is None:
            raise LockError("A lock owner must not be None")
        if owner == self._exclusive or owner in self._shared or owner in self._pending:
            raise LockError(f"{owner} already holds or waits for lock {self.name}")
        shared = waiter.shared
        priority = waiter.priority
        if self._exclusive is None and (shared or not self._shared) and (
                not self._prios or priority < self._prios[0]):
            # Free for this mode and nobody as urgent is waiting.
            if shared:
                self._shared.add(owner)
            else:
                self._exclusive = owner
            return True
        if timeout is not None and timeout < MIN_TIMEOUT:
            return False
        queue = self._queues.get(priority)
        if queue is None:
            queue = self._queues[priority] = deque()
            insort(self._prios, priority)
        if shared:
            group = self._open_shared.get(priority)
            if group is None:
                group = self._open_shared[priority] = _SharedGroup()
                queue.append(group)
            group.waiters.append(waiter)
            group.live += 1
            waiter.group = group
        else:
            queue.append(waiter)
            waiter.group = None
        waiter.waiting = True
        self._pending[owner] = waiter
        if timeout is not None:
            waiter.timer = self._clock.callLater(timeout, self._expire, waiter)
        else:
            waiter.timer = None
        return None

    def _adopt(self, owner: Owner, shared: bool) -> None:
        """Give a lock nobody has seen yet straight to ``owner`` (LockSet.add)."""
        assert self._exclusive is None and not self._shared and not self._pending
        if shared:
            self._shared.add(owner)
        else:
            self._exclusive = owner

    def _grant_waiters(self) -> None:
        """Grant the head of the queue while it is compatible (HandoffQueue only)."""
        self._scheduled = False
        queues = self._queues
        prios = self._prios
        pending = self._pending
        while prios and self._exclusive is None:
            prio = prios[0]
            queue = queues[prio]
            head = queue[0]
            if type(head) is _SharedGroup:
                queue.popleft()
                if not queue:
                    del queues[prio]
                    prios.pop(0)
                del self._open_shared[prio]
                grantees = [w for w in head.waiters if w.waiting]
                # The whole group holds the lock before any of them hears of it.
                for waiter in grantees:
                    del pending[waiter.owner]
                    self._shared.add(waiter.owner)
                    if waiter.timer is not None:
                        waiter.timer.cancel()
                        waiter.timer = None
                for waiter in grantees:
                    if waiter.waiting:  # else cancelled meanwhile, and released
                        self._notify(waiter)
            elif self._shared:
                return
            else:
                waiter = head  # type: ignore[assignment]  # not a group: a waiter
                queue.popleft()
                if not queue:
                    del queues[prio]
                    prios.pop(0)
                del pending[waiter.owner]
                self._exclusive = waiter.owner
                if waiter.timer is not None:
                    waiter.timer.cancel()
                    waiter.timer = None
                waiter.waiting = False
                try:
                    waiter.lock_granted(True)
                except Exception:
                    _log.failure("Lock grant callback for {lock} failed", lock=self.name)
            # Callbacks may have released, acquired or deleted: the loop
            # re-reads the state before the next grant.

    def _notify(self, waiter: Waiter) -> None:
        waiter.waiting = False
        try:
            waiter.lock_granted(True)
        except Exception:
            _log.failure("Lock grant callback for {lock} failed", lock=self.name)

    def _cancel(self, request: LockRequest) -> None:
        self._withdraw(request)

    def _withdraw(self, waiter: Waiter) -> bool:
        """Take a waiter out of the queue; False if it was no longer waiting.

        A waiter that was granted but has not been told yet (a later member
        of a shared group being notified) gives the lock back instead.
        """
        if not waiter.waiting:
            return False
        waiter.waiting = False
        if self._pending.get(waiter.owner) is not waiter:
            self.release(waiter.owner)
            return True
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        del self._pending[waiter.owner]
        prio = waiter.priority
        item: Waiter | _SharedGroup = waiter
        if waiter.group is not None:
            item = waiter.group
            item.live -= 1
            if item.live:
                return True
            del self._open_shared[prio]
        queue = self._queues[prio]
        was_head = queue[0] is item and self._prios[0] == prio
        queue.remove(item)
        if not queue:
            del self._queues[prio]
            self._prios.remove(prio)
        if was_head and self._prios:
            self._handoff.schedule(self)
        return True

    def _expire(self, waiter: Waiter) -> None:
        waiter.timer = None
        if self._withdraw(waiter):
            waiter.lock_granted(False)

    # -- releasing -----------------------------------------------------------

    def release(self, owner: Owner) -> None:
        """Release the lock, in whichever mode ``owner`` holds it."""
        if owner is not None and owner == self._exclusive:
            self._exclusive = None
        elif owner in self._shared:
            self._shared.remove(owner)
            if self._shared:
                return
        else:
            raise LockError(f"{owner} does not hold lock {self.name}")
        if self._prios:
            self._handoff.schedule(self)

    def downgrade(self, owner: Owner) -> None:
        """Turn ``owner``'s exclusive hold into a shared one (no-op if shared).

        Shared waiters at the head of the queue are granted at once.
        """
        if owner is not None and owner == self._exclusive:
            self._exclusive = None
            self._shared.add(owner)
            if self._prios:
                self._handoff.schedule(self)
        elif owner not in self._shared:
            raise LockError(f"{owner} does not hold lock {self.name}")

    def delete(self, owner: Owner, timeout: float | None = None,
               priority: int = 0) -> defer.Deferred[bool]:
        """Delete the lock, acquiring it exclusively first unless ``owner`` holds it so.

        Fires True once deleted (nobody owns it then), or False if ``timeout``
        passed first.  All waiters, and every later acquire, fail with
        ``LockError``.  Deleting while holding the lock shared is an error.
        """
        if self._deleted:
            return defer.fail(LockError(f"Lock {self.name} has been deleted"))
        if owner is not None and owner == self._exclusive:
            self._delete_now()
            return defer.succeed(True)
        if owner in self._shared:
            return defer.fail(LockError(f"Cannot delete lock {self.name} while holding it "
                                        "shared"))

        def acquired(ok: bool) -> bool:
            if ok:
                self._delete_now()
            return ok

        return self.acquire(owner, False, priority, timeout).addCallback(acquired)

    def _delete_now(self) -> None:
        self._deleted = True
        self._exclusive = None
        self._shared.clear()
        waiters = list(self._pending.values())
        self._pending.clear()
        self._queues.clear()
        self._prios.clear()
        self._open_shared.clear()
        for waiter in waiters:
            waiter.waiting = False
            if waiter.timer is not None:
                waiter.timer.cancel()
                waiter.timer = None
            waiter.lock_failed(LockGone(f"Lock {self.name} has been deleted"))

    # -- queries -------------------------------------------------------------

    @property
    def deleted(self) -> bool:
        """True once the lock has been deleted."""
        return self._deleted

    def is_owned(self, owner: Owner, shared: bool | None = None) -> bool:
        """Whether ``owner`` holds the lock (in the given mode, if not None)."""
        if owner is not None and owner == self._exclusive:
            return shared is not True
        if owner in self._shared:
            return shared is not False
        return False

    def owners(self) -> frozenset[Owner]:
        """The current owners."""
        if self._exclusive is not None:
            return frozenset((self._exclusive,))
        return frozenset(self._shared)

    def pending_count(self) -> int:
        """How many acquires are waiting."""
        return len(self._pending)

    def info(self) -> LockInfo:
        """``(name, mode, sorted owner names, pending)`` as the lock monitor shows it.

        ``mode`` is "exclusive", "shared", "deleted" or None (free); ``pending``
        lists ``(mode, sorted waiter names)`` per waiting group in grant order.
        """
        if self._deleted:
            return (self.name, MODE_DELETED, [], [])
        if self._exclusive is not None:
            mode: str | None = MODE_EXCLUSIVE
            owners = [str(self._exclusive)]
        elif self._shared:
            mode = MODE_SHARED
            owners = sorted(str(o) for o in self._shared)
        else:
            mode, owners = None, []
        pending: list[tuple[str, list[str]]] = []
        for prio in self._prios:
            for item in self._queues[prio]:
                if isinstance(item, _SharedGroup):
                    names = sorted(str(w.owner) for w in item.waiters if w.waiting)
                    pending.append((MODE_SHARED, names))
                else:
                    pending.append((MODE_EXCLUSIVE, [str(item.owner)]))
        return (self.name, mode, owners, pending)

    def __repr__(self) -> str:
        return f"<SharedLock {self.name}>"
