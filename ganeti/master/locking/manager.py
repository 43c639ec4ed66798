"""The master's lock manager: Ganeti's lock levels, their order, and the lock monitor.

Lock keys are Ganeti's: node, node-res, node group and network locks are
named by the object's UUID (a rename changes no lock), instance locks by
the instance name.  The lock monitor shows the keys, as Ganeti's does
(``node/<uuid>``).

An owner (a job, named by ``str(owner)``) takes levels in increasing order
(reference section 7.1): cluster (the single lock ``BGL``), instance,
nodegroup, node, node-res, network.  Taking a level while holding or acquiring
anything at a later level is refused, which together with the sorted order
inside a level rules out deadlocks between owners that follow the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.core.errors import ECODE_INVAL, LockError, OpPrereqError
from ganeti.core.queryfields.base import FieldDecl
from ganeti.core.queryfields.locks import LOCK_FIELDS as LOCK_DECLS
from ganeti.master.locking.lockset import SET_LOCK_SUFFIX, LockSet, Names
from ganeti.master.locking.sharedlock import MODE_DELETED, HandoffQueue, LockInfo, Owner

LEVEL_CLUSTER = 0
LEVEL_INSTANCE = 1
LEVEL_NODEGROUP = 2
LEVEL_NODE = 3
LEVEL_NODE_RES = 4
LEVEL_NETWORK = 5

#: Levels in acquisition order.
LEVELS = (LEVEL_CLUSTER, LEVEL_INSTANCE, LEVEL_NODEGROUP, LEVEL_NODE, LEVEL_NODE_RES,
          LEVEL_NETWORK)
LEVEL_NAMES = ("cluster", "instance", "nodegroup", "node", "node-res", "network")
#: Levels whose members can be added and removed.
LEVELS_MOD = frozenset(LEVELS[1:])
#: The one lock of the cluster level, the "Big Ganeti Lock".
BGL = "BGL"

Level = int | str


#: A field of the lock monitor's query resource ("lock").
LockField = FieldDecl
#: The fields of query resource "lock" (declared in ganeti.core.queryfields.locks).
LOCK_FIELDS: dict[str, LockField] = LOCK_DECLS

#: How the monitor shows a member lock: ``(level name, member) -> shown name``
#: (none by default: the keys are shown, as Ganeti's monitor does).
MonitorNames = Callable[[str, str], str]


def monitor_owner(owner: str) -> str:
    """An owner as the lock monitor shows it: a job ``job/N`` as ``N``."""
    if owner.startswith("job/") and owner[4:].isascii() and owner[4:].isdigit():
        return owner[4:]
    return owner


def _owner_key(owner: str) -> tuple[int, int, str]:
    return (0, int(owner), "") if owner.isascii() and owner.isdigit() else (1, 0, owner)


def _monitor_owners(owners: Iterable[str]) -> list[str]:
    return sorted((monitor_owner(o) for o in owners), key=_owner_key)


_LEVEL_KEYS: dict[Level, int] = {**{n: i for i, n in enumerate(LEVEL_NAMES)},
                                  **{i: i for i in LEVELS}}


def level_index(level: Level) -> int:
    """The level number of ``level`` (a number or a name such as "node-res")."""
    try:
        return _LEVEL_KEYS[level]
    except (KeyError, TypeError):
        raise LockError(f"Unknown lock level {level!r}") from None


class LockManager:
    """All of the master's locks, one LockSet per level, sharing one hand-off queue."""

    def __init__(self, clock: IReactorTime, nodes: Iterable[str] = (),
                 nodegroups: Iterable[str] = (), instances: Iterable[str] = (),
                 networks: Iterable[str] = ()) -> None:
        self._clock = clock
        self._handoff = HandoffQueue()
        #: How the lock monitor shows member locks (None: by their names).
        self.monitor_names: MonitorNames | None = None
        nodes = list(nodes)
        members: tuple[Iterable[str], ...] = ([BGL], instances, nodegroups, nodes, nodes,
                                              networks)
        self._sets = tuple(LockSet(LEVEL_NAMES[level], members[level], clock, self._handoff)
                           for level in LEVELS)
        # Per level, the later levels' (name, owned, acquiring) maps: the order check.
        self._later = tuple(tuple((ls.name, ls._owned, ls._acquiring)
                                  for ls in self._sets[level + 1:]) for level in LEVELS)

    def lockset(self, level: Level) -> LockSet:
        """The LockSet of one level."""
        return self._sets[level_index(level)]

    def _held_above(self, owner: Owner, index: int) -> str | None:
        for name, owned, acquiring in self._later[index]:
            if owner in owned or owner in acquiring:
                return name
        return None

    def acquire(self, owner: Owner, level: Level, names: Names | None = None,
                shared: bool = False, priority: int = 0, timeout: float | None = None,
                opportunistic: bool = False) -> defer.Deferred[set[str] | None]:
        """Acquire locks of one level; see :meth:`LockSet.acquire` for the result.

        Fails with ``LockError`` if ``owner`` holds or is acquiring locks at
        this level or a later one.
        """
        try:
            index = _LEVEL_KEYS[level]
        except (KeyError, TypeError):
            return defer.fail(LockError(f"Unknown lock level {level!r}"))
        above = self._held_above(owner, index)
        if above is not None:
            return defer.fail(LockError(
                f"Cannot acquire {LEVEL_NAMES[index]} locks while holding {above} locks"))
        return self._sets[index].acquire(owner, names, shared, priority, timeout,
                                         opportunistic)

    def release(self, owner: Owner, level: Level, names: Names | None = None) -> None:
        """Release locks of one level (None: all of them).

        The BGL cannot be released while other levels are still held.
        """
        index = level_index(level)
        if index == LEVEL_CLUSTER:
            above = self._held_above(owner, index)
            if above is not None:
                raise LockError(f"Cannot release the {BGL} while holding {above} locks")
        self._sets[index].release(owner, names)

    def release_all(self, owner: Owner) -> None:
        """Release everything ``owner`` holds, last level first."""
        for lockset in reversed(self._sets):
            if owner in lockset._owned:
                lockset.release(owner)

    def downgrade(self, owner: Owner, level: Level, names: Names | None = None) -> None:
        """Change held locks of one level to shared mode."""
        self._sets[level_index(level)].downgrade(owner, names)

    def owned(self, owner: Owner, level: Level) -> set[str]:
        """The names ``owner`` holds at ``level``."""
        return self._sets[level_index(level)].owned(owner)

    def is_owned(self, owner: Owner, level: Level) -> bool:
        """Whether ``owner`` holds anything at ``level``."""
        return self._sets[level_index(level)].is_owned(owner)

    def names(self, level: Level) -> list[str]:
        """The lock names of a level, sorted."""
        return self._sets[level_index(level)].names()

    def add(self, level: Level, names: Names, owner: Owner | None = None,
            shared: bool = False) -> defer.Deferred[None]:
        """Add locks to a modifiable level (optionally acquired by ``owner``).

        Waits while someone holds the whole level.  An ``owner`` must either
        hold the whole level exclusively or hold nothing at a later level.
        """
        try:
            index = level_index(level)
            if index not in LEVELS_MOD:
                raise LockError(f"Locks cannot be added at level {LEVEL_NAMES[index]}")
            lockset = self._sets[index]
            if owner is not None and not lockset.owns_all(owner):
                above = self._held_above(owner, index)
                if above is not None:
                    raise LockError(f"Cannot add {LEVEL_NAMES[index]} locks while holding "
                                    f"{above} locks")
        except LockError as err:
            return defer.fail(err)
        return lockset.add(names, owner, shared)

    def remove(self, owner: Owner, level: Level, names: Names) -> list[str]:
        """Remove locks ``owner`` holds exclusively at a modifiable level."""
        index = level_index(level)
        if index not in LEVELS_MOD:
            raise LockError(f"Locks cannot be removed at level {LEVEL_NAMES[index]}")
        return self._sets[index].remove(owner, names)

    # -- lock monitor ----------------------------------------------------------

    def lock_info(self) -> list[LockInfo]:
        """Every lock's ``(name, mode, owners, pending)``, sorted by name (idle ones too,
        owners as the lock manager knows them: for tests and debugging)."""
        infos = [lock.info() for lockset in self._sets for lock in lockset.all_locks()]
        infos.sort(key=lambda info: info[0])
        return infos

    def monitor(self) -> list[LockInfo]:
        """The lock monitor's rows, as Ganeti's: ``(name, mode, owners, pending)``.

        Only locks that are held or waited for are listed, and with them the
        set lock (``<level>/[lockset]``) of each level that has one (idle
        unless the whole level is held); deleted locks are not listed.  Owners
        are job ids; member names go through :attr:`monitor_names`.
        """
        rows: list[LockInfo] = []
        for level, lockset in enumerate(self._sets):
            level_name = LEVEL_NAMES[level]
            busy = []
            set_row: LockInfo | None = None
            for lock in lockset.all_locks():
                name, mode, owners, pending = lock.info()
                member = name[len(level_name) + 1:]
                if member == SET_LOCK_SUFFIX:
                    set_row = (name, mode, _monitor_owners(owners),
                               [(pmode, _monitor_owners(who)) for pmode, who in pending])
                    continue
                if mode == MODE_DELETED or (mode is None and not pending):
                    continue
                if self.monitor_names is not None:
                    name = f"{level_name}/{self.monitor_names(level_name, member)}"
                busy.append((name, mode, _monitor_owners(owners),
                             [(pmode, _monitor_owners(who)) for pmode, who in pending]))
            if set_row is not None and (busy or set_row[1] is not None or set_row[3]):
                rows.append(set_row)
            rows.extend(busy)
        rows.sort(key=lambda info: info[0])
        return rows

    def query(self, fields: Sequence[str]) -> list[list[Any]]:
        """Rows of query resource "lock" (:meth:`monitor`) with ``fields``, by lock name.

        ``owner`` is a list of owner names, ``pending`` a list of
        ``[mode, [owner names]]``; unknown fields fail with ``OpPrereqError``.
        """
        unknown = [f for f in fields if f not in LOCK_FIELDS]
        if unknown:
            raise OpPrereqError(f"Unknown lock field(s): {', '.join(unknown)}", ECODE_INVAL)
        rows = []
        for name, mode, owners, pending in self.monitor():
            values: dict[str, Any] = {
                "name": name, "mode": mode, "owner": owners,
                "pending": [[pmode, names] for pmode, names in pending],
            }
            rows.append([values[f] for f in fields])
        return rows
