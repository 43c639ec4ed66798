"""The user-id pool on a node: hand out a uid no process uses, take it back.

Ganeti's design (seed 001, "User-id pool"): the pool is the cluster's
``uid_pool``, read here from the node's ssconf.  A request tries the pool's
uids in random order, those without a lock file first; for each it opens (or
creates) ``RUN_DIR/uid-pool/<uid>``, takes an exclusive lock on it without
waiting (a uid whose file another request holds is skipped), checks that no
process runs with that uid (``/proc/<pid>/status``), and hands it out
still locked.  The caller starts its process, then :meth:`LockedUid.claim`
writes the owner's name into the lock file and unlocks it.  Release removes
the file.

Instances (``security_model=pool``) go through :func:`take_uid`,
:func:`keep_uid` (the start succeeded: the uid is recorded in
``RUN_DIR/instance-uid/<name>`` and claimed), :func:`give_back` (the start
failed) and :func:`release_instance_uid` (the instance stopped or crashed);
the node calls run them in the thread pool, whatever the hypervisor.

A lock file that names an owner is taken: it is never handed out again until
released (the fake hypervisor runs no process under the uid, so the process
check alone could not tell).  A lock file without an owner is what a request
that died half-way leaves: it is tried after the free ones, with the same
checks.  Every function here blocks (files, /proc): node calls run them in the
thread pool.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import random
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ganeti.core import fileutil, ssconf, uidpool
from ganeti.core.errors import ConfigurationError, OpPrereqError
from ganeti.core.paths import Paths

T = TypeVar("T")

#: The directory of the lock files, under RUN_DIR (Ganeti's UIDPOOL_LOCKDIR).
LOCK_DIR_NAME = "uid-pool"
#: The directory of the uid each running instance holds, under RUN_DIR.
INSTANCE_DIR_NAME = "instance-uid"


class UidPoolError(Exception):
    """No uid could be handed out (empty or exhausted pool, lock directory trouble)."""


def lock_dir(paths: Paths) -> str:
    return os.path.join(paths.run_dir, LOCK_DIR_NAME)


def pool_uids(paths: Paths) -> set[int]:
    """Every uid of the cluster's pool, from this node's ssconf (empty: no pool)."""
    try:
        text = ssconf.read(paths, "uid_pool")
    except ConfigurationError:
        return set()
    try:
        ranges = uidpool.parse(text, separator="\n")
    except OpPrereqError as err:
        raise UidPoolError(f"Invalid user-id pool in ssconf: {err.args[0]}") from None
    return {uid for low, high in ranges for uid in range(low, high + 1)}


def uid_in_use(uid: int, proc_root: str = "/proc") -> bool:
    """Whether a process runs with ``uid`` (real, effective, saved or filesystem)."""
    try:
        pids = [p for p in os.listdir(proc_root) if p.isdigit()]
    except OSError as err:
        raise UidPoolError(f"Failed to get list of used user-ids: {err}") from None
    for pid in pids:
        try:
            with open(os.path.join(proc_root, pid, "status"), encoding="ascii",
                      errors="replace") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if str(uid) in line.split()[1:]:
                            return True
                        break
        except OSError:
            continue  # the process ended meanwhile
    return False


class LockedUid:
    """A uid handed out, its lock file held until :meth:`claim` or :meth:`unlock`."""

    def __init__(self, uid: int, path: str, fd: int) -> None:
        self.uid = uid
        self.path = path
        self._fd: int | None = fd

    def claim(self, owner: str) -> None:
        """Record ``owner`` in the lock file (the uid stays taken) and unlock it."""
        if self._fd is None:
            raise UidPoolError(f"User-id {self.uid} is no longer locked")
        data = owner.encode() + b"\n"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)
        self.unlock()

    def unlock(self) -> None:
        """Let go of the lock (the file stays: the uid is most probably in use)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _owner(fd: int) -> str:
    return os.pread(fd, 256, 0).decode(errors="replace").strip()


def request_unused_uid(directory: str, all_uids: Iterable[int], proc_root: str = "/proc",
                       rng: random.Random | None = None) -> LockedUid:
    """An unused uid of ``all_uids``, its lock file held (Ganeti's RequestUnusedUid).

    UidPoolError when the pool is empty or every uid is taken or in use.
    """
    pool = set(all_uids)
    if not pool:
        raise UidPoolError("The user-id pool is empty")
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        present = {int(n) for n in os.listdir(directory) if n.isdigit()}
    except OSError as err:
        raise UidPoolError(f"Failed to create user-id pool lock dir: {err}") from None
    shuffle = (rng or random.SystemRandom()).shuffle
    free = sorted(pool - present)
    stale = sorted(pool & present)
    shuffle(free)
    shuffle(stale)
    for uid in free + stale:
        path = os.path.join(directory, str(uid))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise UidPoolError(f"Failed to create lockfile for user-id {uid}: {err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                continue  # another request holds it
            raise UidPoolError(f"Failed to lock the lockfile for user-id {uid}: {err}") \
                from None
        locked = LockedUid(uid, path, fd)
        if _owner(fd) or uid_in_use(uid, proc_root):
            locked.unlock()
            continue
        return locked
    raise UidPoolError("Failed to find an unused user-id (all user-ids of the pool are "
                       "in use)")


def release_uid(directory: str, uid: int) -> None:
    """Give ``uid`` back to the pool (remove its lock file; a missing one is fine)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(directory, str(int(uid))))


def exec_with_unused_uid(fn: Callable[..., T], all_uids: Iterable[int], directory: str,
                         owner: str, *args: Any, proc_root: str = "/proc") -> T:
    """Run ``fn(uid, *args)`` with an unused uid (Ganeti's ExecWithUnusedUid).

    When ``fn`` returns, the uid is claimed for ``owner`` and stays taken; when
    it raises, the uid goes back to the pool.
    """
    locked = request_unused_uid(directory, all_uids, proc_root)
    try:
        result = fn(locked.uid, *args)
    except BaseException:
        locked.unlock()
        release_uid(directory, locked.uid)
        raise
    locked.claim(owner)
    return result


# --- the uids of instances ------------------------------------------------------------

def _instance_file(paths: Paths, name: str) -> str:
    return os.path.join(paths.run_dir, INSTANCE_DIR_NAME, name)


def recorded_uid(paths: Paths, name: str) -> int | None:
    """The pool uid recorded for instance ``name`` on this node, if any."""
    try:
        with open(_instance_file(paths, name), encoding="ascii") as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def take_uid(paths: Paths) -> LockedUid:
    """An unused uid of the cluster's pool for an instance about to start, still locked
    (UidPoolError if the pool is empty or exhausted)."""
    return request_unused_uid(lock_dir(paths), pool_uids(paths))


def keep_uid(paths: Paths, name: str, locked: LockedUid) -> None:
    """The instance started under ``locked``: record the uid and claim it for ``name``."""
    path = _instance_file(paths, name)
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    fileutil.atomic_write(path, f"{locked.uid}\n".encode())
    locked.claim(name)


def give_back(paths: Paths, locked: LockedUid) -> None:
    """The start under ``locked`` failed: the uid goes back to the pool."""
    locked.unlock()
    release_uid(lock_dir(paths), locked.uid)


def release_instance_uid(paths: Paths, name: str) -> None:
    """Give the uid of instance ``name`` back (it stopped or crashed; nothing if it
    holds none)."""
    uid = recorded_uid(paths, name)
    if uid is not None:
        release_uid(lock_dir(paths), uid)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_instance_file(paths, name))
