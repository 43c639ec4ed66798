"""The WConfD socket of the master daemon.

Ganeti 3.0 splits its master into ``ganeti-luxid`` (queries and the job queue)
and ``ganeti-wconfd`` (the configuration and the locks); ``gnt-debug wconfd``
and other tools talk to the latter over ``RUN_DIR/socket/ganeti-wconfd`` with
the LUXI framing (``{"method", "args"}`` and ``{"success", "result"}``).  Here
``ganeti-masterd`` holds both roles and answers on that socket too, with the
methods that make sense for a daemon that runs its jobs itself:

- ``echo(text)``: the text back;
- ``cleanupLocks()``: nothing to clean (jobs run inside masterd, so no lock can
  outlive its job); null;
- ``flushConfig()``: the configuration written and sent to the nodes again,
  between two commits (as ``gnt-cluster redist-conf`` does); null;
- ``listLocks(clientId)``: ``[[lock, mode], ...]`` the locks that job holds;
- ``listAllLocks()``: the names of the locks held, with their level's set lock;
- ``listAllLocksOwners()``: ``[[lock, [[clientId, mode], ...]], ...]`` for them.

A client id is Ganeti's ``[job id, lock file, pid]``; ours names the job's file
in the queue directory and masterd's pid (jobs have no processes or lock files
here).  ``listLocks`` takes the job id from the first element, so the
two-element ids Ganeti's ``gnt-debug wconfd listlocks`` sends are accepted.
Every other method of Ganeti's WConfD (config reads and writes, reservations,
lock requests) is refused as WConfD refuses an unknown one: ``GenericError``
"No such method"; wrong arguments are ``GenericError`` "RPC input: ...".
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from twisted.internet import defer

from ganeti.core import errors
from ganeti.luxi.methods import ANY, STR, Method
from ganeti.luxi.server import Implementation, LuxiDispatcher
from ganeti.master.locking.lockset import SET_LOCK_SUFFIX
from ganeti.master.locking.manager import LEVEL_NAMES, LockManager

#: The methods served, with their argument shapes (Ganeti's WConfD names).
METHODS: dict[str, Method] = {m.name: m for m in [
    Method("echo", (STR("text"),), "The text back"),
    Method("cleanupLocks", (), "Drop the locks of jobs that died (none can here)"),
    Method("flushConfig", (), "Write and distribute the configuration again"),
    Method("listLocks", (ANY("clientId", "client id [job id, ...]"),),
           "The locks a job holds and their modes"),
    Method("listAllLocks", (), "The names of the locks held"),
    Method("listAllLocksOwners", (), "The locks held, with their owners and modes"),
]}


def _job_id(owner: str) -> int | None:
    return int(owner) if owner.isascii() and owner.isdigit() else None


class WconfdDispatcher(LuxiDispatcher):
    """Dispatches WConfD calls; refusals are WConfD's (``GenericError``)."""

    def dispatch(self, method: str, args: list[Any]) -> defer.Deferred[Any]:
        """Validate and run one call; unknown methods and bad arguments are refused."""
        spec = self.table.get(method)
        if spec is None or method not in self.implementations:
            return defer.fail(errors.GenericError(f"No such method: {method}"))
        try:
            spec.check_args(args)
        except errors.GenericError as err:
            return defer.fail(errors.GenericError(f"RPC input: {err.args[0]}"))
        return super().dispatch(method, args)


class WconfdMethods:
    """The WConfD methods over masterd's lock manager and config writer."""

    def __init__(self, locks: LockManager, redistribute: Callable[[], Awaitable[Any]],
                 queue_dir: str, pid: int | None = None) -> None:
        self.locks = locks
        self.redistribute = redistribute
        self.queue_dir = queue_dir
        self.pid = os.getpid() if pid is None else pid

    def implementations(self) -> dict[str, Implementation]:
        """Method name -> implementation, for :class:`WconfdDispatcher`."""
        return {"echo": self.echo, "cleanupLocks": self.cleanup_locks,
                "flushConfig": self.flush_config, "listLocks": self.list_locks,
                "listAllLocks": self.list_all_locks,
                "listAllLocksOwners": self.list_all_locks_owners}

    def client_id(self, owner: str) -> list[Any]:
        """Ganeti's client id of a lock owner: ``[job id, job file, pid]``."""
        job_id = _job_id(owner)
        if job_id is None:  # not a job (no such owner today): its name
            return [owner, "", self.pid]
        return [job_id, os.path.join(self.queue_dir, f"job-{job_id}"), self.pid]

    @staticmethod
    def echo(text: str) -> str:
        """The text back."""
        return text

    @staticmethod
    def cleanup_locks() -> None:
        """Nothing to do: a job's locks are released when it ends, in this process."""
        return None

    async def flush_config(self) -> None:
        """Write and send the configuration to the nodes again."""
        problem = await self.redistribute()
        if problem:
            raise errors.OpExecError(str(problem))
        return None

    def _held(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """``(lock, [(owner, mode)])`` of the locks held, with their levels' set locks."""
        rows = []
        for name, mode, owners, _pending in self.locks.monitor():
            if owners or name.endswith("/" + SET_LOCK_SUFFIX):
                rows.append((name, [(owner, str(mode)) for owner in owners]))

        def order(row: tuple[str, Any]) -> tuple[int, bool, str]:
            # WConfD's: by level, each level's set lock first
            level, _, member = row[0].partition("/")
            rank = LEVEL_NAMES.index(level) if level in LEVEL_NAMES else len(LEVEL_NAMES)
            return rank, member != SET_LOCK_SUFFIX, member
        return sorted(rows, key=order)

    def list_locks(self, client_id: Any) -> list[list[str]]:
        """``[[lock, mode]]`` of the locks the job named by ``client_id`` holds."""
        if not (isinstance(client_id, list) and 2 <= len(client_id) <= 3
                and isinstance(client_id[0], int) and not isinstance(client_id[0], bool)):
            raise errors.GenericError(f"RPC input: malformed client id: {client_id!r:.100}")
        wanted = str(client_id[0])
        return [[name, mode] for name, owners in self._held()
                for owner, mode in owners if owner == wanted]

    def list_all_locks(self) -> list[str]:
        """The names of the locks held (and their levels' set locks)."""
        return [name for name, _ in self._held()]

    def list_all_locks_owners(self) -> list[list[Any]]:
        """``[[lock, [[client id, mode], ...]], ...]``."""
        return [[name, [[self.client_id(owner), mode] for owner, mode in owners]]
                for name, owners in self._held()]
