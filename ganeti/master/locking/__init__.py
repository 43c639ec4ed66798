"""Locks of the master daemon, on Deferreds (design: docs/design/locking.md).

- :class:`SharedLock`: one shared/exclusive lock with priorities, timeouts,
  cancellation, downgrade and deletion;
- :class:`LockSet`: named locks acquired all-or-nothing in sorted order;
- :class:`LockManager`: Ganeti's lock levels and the lock monitor.

Everything takes an injected clock (``IReactorTime``) and no threads are used.
"""

from ganeti.master.locking.lockset import SET_LOCK_SUFFIX, LockSet
from ganeti.master.locking.manager import (
    BGL,
    LEVEL_CLUSTER,
    LEVEL_INSTANCE,
    LEVEL_NAMES,
    LEVEL_NETWORK,
    LEVEL_NODE,
    LEVEL_NODE_RES,
    LEVEL_NODEGROUP,
    LEVELS,
    LEVELS_MOD,
    LOCK_FIELDS,
    LockField,
    LockManager,
    level_index,
)
from ganeti.master.locking.sharedlock import (
    MIN_TIMEOUT,
    MODE_DELETED,
    MODE_EXCLUSIVE,
    MODE_SHARED,
    HandoffQueue,
    LockInfo,
    SharedLock,
)

__all__ = [
    "BGL", "LEVELS", "LEVELS_MOD", "LEVEL_CLUSTER", "LEVEL_INSTANCE", "LEVEL_NAMES",
    "LEVEL_NETWORK", "LEVEL_NODE", "LEVEL_NODEGROUP", "LEVEL_NODE_RES", "LOCK_FIELDS",
    "MIN_TIMEOUT", "MODE_DELETED", "MODE_EXCLUSIVE", "MODE_SHARED", "SET_LOCK_SUFFIX",
    "HandoffQueue", "LockField", "LockInfo", "LockManager", "LockSet", "SharedLock",
    "level_index",
]
