"""A named set of SharedLocks acquired all-or-nothing (reference section 7.3).

Members are acquired one by one in sorted name order, so two owners asking
for overlapping sets cannot deadlock each other.  Acquiring the whole set
(``names=None``) first takes the set's own lock (``<set>/[lockset]``, in the
requested mode) so no members can be added until it is released; ``add`` takes
that lock exclusively.  A timeout is a budget for the whole acquisition: when
it runs out, everything taken so far is released and the result is None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from ganeti.core.errors import LockError
from ganeti.master.locking.sharedlock import (
    HandoffQueue,
    LockGone,
    LockInfo,
    Owner,
    SharedLock,
    _SharedGroup,
)

Names = str | Iterable[str]

SET_LOCK_SUFFIX = "[lockset]"


def _as_list(names: Names) -> list[str]:
    if isinstance(names, str):
        return [names]
    return list(names)


class _SetChange:
    """Owner of the set lock while ``add`` inserts members for nobody in particular."""

    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __str__(self) -> str:
        return self.label


class _Acquisition(defer.Deferred[set[str] | None]):
    """One ``LockSet.acquire`` in progress: a small state machine, never recursive.

    It is the Deferred handed to the caller, and also the waiter queued on
    the one lock it currently waits for (see ``sharedlock.Waiter``), so an
    acquisition costs one object.  :meth:`advance` takes locks in a loop for
    as long as they are granted on the spot and returns when it has to wait;
    the lock's :meth:`lock_granted` resumes the loop.
    """

    def __init__(self, lockset: LockSet, owner: Owner, names: list[str] | None, want_all: bool,
                 count: int, shared: bool, priority: int, deadline: float | None,
                 opportunistic: bool) -> None:
        super().__init__(lockset._canceller)
        self.lockset = lockset
        self.owner = owner
        self.shared = shared
        self.priority = priority
        self.deadline = deadline
        self.opportunistic = opportunistic
        self.want_all = want_all
        # With want_all, names stays None until the set lock is held.  The
        # first ``count`` names are already held.
        self.names = names
        self.index = count
        self.taken: list[str] = [] if names is None else names[:count]
        self.waiting_on: SharedLock | None = None
        self.timer: IDelayedCall | None = None
        self.group: _SharedGroup | None = None
        self.waiting = False

    def _timeout(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self.lockset._clock.seconds())

    def advance(self) -> None:
        """Take the next locks until one has to be waited for, or all are held."""
        ls = self.lockset
        if self.names is None:  # acquire-all: the set lock comes first
            set_lock = ls._set_lock
            result = set_lock._submit(self, self._timeout())
            if result is None:
                self.waiting_on = set_lock
                return
            if not result:
                self._give_up()
                return
            self.names = sorted(ls._locks)
        names = self.names
        locks = ls._locks
        taken = self.taken
        index = self.index
        count = len(names)
        opportunistic = self.opportunistic
        deadline = self.deadline
        timeout: float | None = 0.0 if opportunistic else None
        while index < count:
            name = names[index]
            lock = locks.get(name)
            if lock is None:  # removed while we waited for an earlier one
                if self.want_all:
                    index += 1
                    continue
                self._fail(LockGone(f"Lock {ls.name}/{name} has been removed"))
                return
            if deadline is not None and not opportunistic:
                timeout = max(0.0, deadline - ls._clock.seconds())
            try:
                result = lock._submit(self, timeout)
            except LockError as err:
                if self.want_all and lock.deleted:
                    index += 1
                    continue
                self._fail(err)
                return
            if result is None:
                self.index = index
                self.waiting_on = lock
                return
            if result:
                taken.append(name)
            elif not opportunistic:
                self._give_up()
                return
            index += 1
        # Everything is held.
        del ls._acquiring[self.owner]
        if taken or self.want_all:
            ls._owned[self.owner] = taken
        self.callback(set(taken))

    def lock_granted(self, ok: bool) -> None:
        """The lock waited for was granted (True) or the wait timed out (False)."""
        self.waiting_on = None
        if not ok:
            self._give_up()
            return
        names = self.names
        if names is None:
            self.names = sorted(self.lockset._locks)
        else:
            self.taken.append(names[self.index])
            self.index += 1
        self.advance()

    def lock_failed(self, err: Exception) -> None:
        """The lock waited for was deleted."""
        self.waiting_on = None
        if self.want_all and self.names is not None:  # a member was removed: skip it
            self.index += 1
            self.advance()
        else:
            self._fail(err)

    def _release_taken(self) -> None:
        ls = self.lockset
        del ls._acquiring[self.owner]
        for name in reversed(self.taken):
            lock = ls._locks.get(name)
            if lock is not None and lock.is_owned(self.owner):
                lock.release(self.owner)
        if self.want_all and self.names is not None:
            ls._set_lock.release(self.owner)

    def _give_up(self) -> None:
        self._release_taken()
        self.callback(None)

    def _fail(self, err: Exception) -> None:
        self._release_taken()
        self.errback(err)

    def _cancel(self) -> None:
        lock = self.waiting_on
        if lock is not None:
            self.waiting_on = None
            lock._withdraw(self)
        self._release_taken()


class LockSet:
    """Named locks acquired together, all or nothing, in sorted order.

    ``name`` prefixes the member locks' names (``instance/inst1``); the set
    lock is ``<name>/[lockset]``.  Members can be added and removed while the
    set is in use.
    """

    def __init__(self, name: str, names: Iterable[str], clock: IReactorTime,
                 handoff: HandoffQueue | None = None) -> None:
        self.name = name
        self._clock = clock
        self._handoff = handoff if handoff is not None else HandoffQueue()
        self._set_lock = SharedLock(f"{name}/{SET_LOCK_SUFFIX}", clock, self._handoff)
        self._locks: dict[str, SharedLock] = {}
        # Members held, per owner, in sorted order (a list: cheap, deterministic).
        self._owned: dict[Owner, list[str]] = {}
        self._acquiring: dict[Owner, _Acquisition] = {}
        self._canceller: Callable[[Any], None] = self._cancel_acquisition
        for member in names:
            if member in self._locks:
                raise LockError(f"Duplicate lock {name}/{member}")
            self._locks[member] = self._new_lock(member)

    @staticmethod
    def _cancel_acquisition(acq: _Acquisition) -> None:
        acq._cancel()

    def _new_lock(self, member: str) -> SharedLock:
        return SharedLock(f"{self.name}/{member}", self._clock, self._handoff)

    # -- acquiring and releasing ---------------------------------------------

    def acquire(self, owner: Owner, names: Names | None = None, shared: bool = False,
                priority: int = 0, timeout: float | None = None,
                opportunistic: bool = False) -> defer.Deferred[set[str] | None]:
        """Acquire ``names`` (None: every member, plus the set lock) for ``owner``.

        Fires with the set of member names acquired, or with None if
        ``timeout`` seconds (in total) passed first; then nothing is held.
        With ``opportunistic`` the members that are not free at once are
        skipped instead of waited for, and the result says which were taken.
        Fails with ``LockError`` for unknown names, if ``owner`` already holds
        or is acquiring locks of this set, or if a named member is removed
        while waited for (when acquiring all, removed members are skipped).
        Cancelling withdraws the request and releases what it took.
        """
        if owner is None:
            return defer.fail(LockError("A lock owner must not be None"))
        # Whoever holds the set lock is in _owned or _acquiring (or is add's token).
        if owner in self._owned or owner in self._acquiring:
            return defer.fail(LockError(f"{owner} already holds or is acquiring locks of "
                                        f"{self.name}"))
        locks = self._locks
        took_set_lock = False
        if names is None:
            if not self._set_lock._take_now(owner, shared, priority):
                return self._acquire_slowly(owner, None, 0, shared, priority, timeout,
                                            opportunistic)
            took_set_lock = True
            wanted = sorted(locks)
        else:
            wanted = [names] if isinstance(names, str) else sorted(set(names))
            unknown = [n for n in wanted if n not in locks]
            if unknown:
                return defer.fail(LockGone(f"Unknown {self.name} lock(s): "
                                            f"{', '.join(unknown)}"))
        # Fast path: take what is free on the spot, without any bookkeeping.
        count = 0
        for member in wanted:
            if not locks[member]._take_now(owner, shared, priority):
                return self._acquire_slowly(owner, wanted, count, shared, priority, timeout,
                                            opportunistic, took_set_lock)
            count += 1
        self._owned[owner] = wanted
        return defer.succeed(set(wanted))

    def _acquire_slowly(self, owner: Owner, wanted: list[str] | None, count: int,
                        shared: bool, priority: int, timeout: float | None,
                        opportunistic: bool, took_set_lock: bool = False,
                        ) -> defer.Deferred[set[str] | None]:
        """Continue an acquisition that has to wait, ``count`` members already taken."""
        deadline = None if timeout is None else self._clock.seconds() + timeout
        acq = _Acquisition(self, owner, wanted, wanted is None or took_set_lock, count, shared,
                           priority, deadline, opportunistic)
        self._acquiring[owner] = acq
        acq.advance()
        return acq

    def release(self, owner: Owner, names: Names | None = None) -> None:
        """Release ``names`` (None: everything ``owner`` holds here).

        Releasing anything also gives up the set lock: the owner no longer
        holds the whole set.
        """
        held = self._owned.get(owner)
        if held is None:
            raise LockError(f"{owner} holds no locks of {self.name}")
        locks = self._locks
        if names is None:
            del self._owned[owner]
            for member in held:
                locks[member].release(owner)
        else:
            chosen = set(_as_list(names))
            missing = chosen.difference(held)
            if missing:
                raise LockError(f"{owner} does not hold {self.name} lock(s) "
                                f"{', '.join(sorted(missing))}")
            remaining = [n for n in held if n not in chosen]
            if remaining:
                self._owned[owner] = remaining
            else:
                del self._owned[owner]
            for member in held:
                if member in chosen:
                    locks[member].release(owner)
        set_lock = self._set_lock
        if (set_lock._exclusive is not None or set_lock._shared) and set_lock.is_owned(owner):
            set_lock.release(owner)

    def downgrade(self, owner: Owner, names: Names | None = None) -> None:
        """Change ``names`` (None: all held here, and the set lock) to shared mode."""
        held = self._owned.get(owner)
        if held is None:
            raise LockError(f"{owner} holds no locks of {self.name}")
        chosen = sorted(held) if names is None else sorted(set(_as_list(names)))
        missing = [n for n in chosen if n not in held]
        if missing:
            raise LockError(f"{owner} does not hold {self.name} lock(s) {', '.join(missing)}")
        for member in chosen:
            self._locks[member].downgrade(owner)
        if names is None and self._set_lock.is_owned(owner):
            self._set_lock.downgrade(owner)

    # -- adding and removing members -----------------------------------------

    def add(self, names: Names, owner: Owner | None = None,
            shared: bool = False) -> defer.Deferred[None]:
        """Add members; with ``owner`` they are created already acquired by it.

        Waits (exclusively on the set lock) until nobody holds the whole set,
        unless ``owner`` holds it exclusively.  An owner that holds some
        members but not the whole set exclusively cannot add (it would wait
        for the set lock out of order).  Existing names fail with ``LockError``.
        """
        new = _as_list(names)
        try:
            self._check_new(new)
        except LockError as err:
            return defer.fail(err)
        if owner is not None:
            if owner in self._acquiring:
                return defer.fail(LockError(f"{owner} is still acquiring locks of "
                                            f"{self.name}"))
            if self._set_lock.is_owned(owner, shared=False):
                self._create(new, owner, shared)
                return defer.succeed(None)
            if self._set_lock.is_owned(owner) or owner in self._owned:
                return defer.fail(LockError(f"Cannot add to {self.name} while holding part of "
                                            "it or its set lock shared"))
        token = _SetChange(f"{self.name}/add")

        def locked(_ok: bool) -> None:
            try:
                self._check_new(new)
                self._create(new, owner, shared)
            finally:
                self._set_lock.release(token)

        return self._set_lock.acquire(token).addCallback(locked)

    def _check_new(self, names: list[str]) -> None:
        if len(set(names)) != len(names):
            raise LockError(f"Duplicate names in {names!r}")
        existing = [n for n in names if n in self._locks]
        if existing:
            raise LockError(f"Lock(s) {', '.join(sorted(existing))} already exist in "
                            f"{self.name}")

    def _create(self, names: list[str], owner: Owner | None, shared: bool) -> None:
        for member in names:
            lock = self._locks[member] = self._new_lock(member)
            if owner is not None:
                lock._adopt(owner, shared)
        if owner is not None and names:
            held = self._owned.setdefault(owner, [])
            held.extend(names)
            held.sort()

    def remove(self, owner: Owner, names: Names) -> list[str]:
        """Delete members ``owner`` holds exclusively; their waiters fail with LockError.

        Returns the removed names, sorted.  Nothing is removed if any name is
        unknown or not held exclusively by ``owner``.
        """
        chosen = sorted(set(_as_list(names)))
        if owner in self._acquiring:
            raise LockError(f"{owner} is still acquiring locks of {self.name}")
        for member in chosen:
            lock = self._locks.get(member)
            if lock is None:
                raise LockError(f"Unknown {self.name} lock {member}")
            if not lock.is_owned(owner, shared=False):
                raise LockError(f"{owner} must hold {lock.name} exclusively to remove it")
        for member in chosen:
            self._locks.pop(member)._delete_now()
        held = [n for n in self._owned[owner] if n not in chosen]
        if held or self._set_lock.is_owned(owner):
            self._owned[owner] = held
        else:
            del self._owned[owner]
        return chosen

    # -- queries ---------------------------------------------------------------

    def names(self) -> list[str]:
        """The member names, sorted."""
        return sorted(self._locks)

    def __contains__(self, name: object) -> bool:
        return name in self._locks

    def lock(self, name: str) -> SharedLock:
        """The member lock ``name`` (KeyError if unknown)."""
        return self._locks[name]

    def owned(self, owner: Owner) -> set[str]:
        """The member names ``owner`` holds (a copy)."""
        return set(self._owned.get(owner, ()))

    def is_owned(self, owner: Owner) -> bool:
        """Whether ``owner`` holds any member or the set lock."""
        return owner in self._owned or self._set_lock.is_owned(owner)

    def owns_all(self, owner: Owner) -> bool:
        """Whether ``owner`` acquired the whole set (holds the set lock)."""
        return self._set_lock.is_owned(owner)

    def involves(self, owner: Owner) -> bool:
        """Whether ``owner`` holds or is acquiring anything in this set."""
        return owner in self._owned or owner in self._acquiring

    def all_locks(self) -> list[SharedLock]:
        """The set lock and every member lock."""
        return [self._set_lock, *self._locks.values()]

    def info(self) -> list[LockInfo]:
        """Lock monitor entries for the set lock and the members, sorted by name."""
        return sorted((lock.info() for lock in self.all_locks()), key=lambda i: i[0])
