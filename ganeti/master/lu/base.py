"""The logical-unit lifecycle of seed 003, on Deferreds.

The processor calls, in order: :meth:`LogicalUnit.expand_names` (resolve
names, fill ``needed_locks``), for each lock level :meth:`declare_locks` then
acquires ``needed_locks[level]`` (shared where ``share_locks[level]``),
:meth:`check_prereq` with the locks held, and :meth:`exec`.  Locks are
released afterwards whatever happened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.core.errors import OpExecError
from ganeti.master.configwriter import ConfigWriter
from ganeti.master.locking.manager import LEVEL_CLUSTER, LEVELS, LockManager
from ganeti.master.replication import NodeRpc, Replicator

Feedback = Callable[[str, Any], None]


def _no_rpc() -> NodeRpc:
    raise OpExecError("this master has no node RPC client")


@dataclass
class LUContext:
    """What a logical unit may use."""

    config: ConfigWriter
    clock: IReactorTime
    locks: LockManager
    feedback: Feedback
    query: Callable[[str, Any, Any], Awaitable[dict[str, Any]]]  # (what, fields, filter)
    query_fields: Callable[[str, Any], dict[str, Any]]  # (what, fields)
    owner: str = ""  # the lock owner of the job
    rpc: Callable[[], NodeRpc] = field(default=_no_rpc)
    replicator: Replicator | None = None
    run_blocking: Callable[..., defer.Deferred[Any]] = field(default=defer.maybeDeferred)
    job_texts: Callable[[], dict[int, str]] = field(default=dict)
    submit_jobs: Callable[[list[list[dict[str, Any]]]], Awaitable[list[Any]]] | None = None
    # the job queue's problems for cluster verify: (is_error, message); blocking
    queue_health: Callable[[], list[tuple[bool, str]]] = field(default=list)


class LogicalUnit:
    """Base of all logical units.

    ``REQ_BGL``: take the Big Ganeti Lock exclusively (True) or shared
    (False).  ``NO_LOCKS`` units take no lock at all.
    """

    OP_ID: ClassVar[str] = ""
    REQ_BGL: ClassVar[bool] = True

    def __init__(self, ctx: LUContext, op: dict[str, Any]) -> None:
        self.ctx = ctx
        self.op = op
        self.needed_locks: dict[int, list[str] | None] = {}
        self.share_locks: dict[int, bool] = {}

    @property
    def uses_locks(self) -> bool:
        """Whether the unit takes any lock (False skips the whole lock phase)."""
        return True

    def expand_names(self) -> None:
        """Resolve names and fill ``needed_locks``; the default takes just the BGL."""
        self.needed_locks[LEVEL_CLUSTER] = ["BGL"]
        self.share_locks[LEVEL_CLUSTER] = not self.REQ_BGL

    async def before_locks(self) -> None:
        """Work after :meth:`expand_names`, before the locks are taken, while the
        opcode is waiting (OP_TEST_JQUEUE's notification); the default: none."""

    def declare_locks(self, level: int) -> None:
        """Refine ``needed_locks[level]`` once the previous levels are held."""

    def check_prereq(self) -> None:
        """Check preconditions with the locks held; raise OpPrereqError if unmet."""

    async def exec(self) -> Any:
        """Do the work; the return value becomes the opcode's result."""
        raise NotImplementedError

    def levels(self) -> tuple[int, ...]:
        """The lock levels in acquisition order."""
        return LEVELS
