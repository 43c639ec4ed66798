"""The logical-unit contract (design: docs/design/lu-contract.md).

For each lock attempt the processor makes a fresh unit from the job's opcode
and calls, in order:

1. :meth:`LogicalUnit.check_arguments`: the opcode alone (no lock, no config);
2. the cluster level (the BGL: exclusive if ``REQ_BGL``, else shared) is taken;
3. :meth:`LogicalUnit.expand_names`: resolve names to config objects with the
   BGL held, fill ``needed_locks`` (lock keys: node, group and network UUIDs,
   instance names);
4. per later level: :meth:`LogicalUnit.declare_locks` (e.g.
   :meth:`LogicalUnit.lock_instances_nodes`), then ``needed_locks[level]`` is
   acquired (shared where ``share_locks[level]``, the whole level for
   :data:`ALL_SET`, only the free ones where ``opportunistic_locks[level]``);
5. :meth:`LogicalUnit.before_prereq` (asynchronous: an allocator's run) and
   :meth:`LogicalUnit.check_prereq` with every lock held, the pre hooks;
6. :meth:`LogicalUnit.exec`, then a :class:`ResultWithJobs` is submitted,
   then the post hooks.

Locks are released afterwards whatever happened; a unit may release some
earlier (:meth:`LogicalUnit.release_locks`).  A unit made of shared steps
lists :class:`Tasklet` objects in ``tasklets``: the default
``check_prereq``/``exec`` run them in order.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.core.errors import OpExecError
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import OpView, view
from ganeti.master.config import nodes as nodesmod
from ganeti.master.config.configwriter import ConfigWriter
from ganeti.master.config.replication import Replicator
from ganeti.master.config.reservations import ReservationManager
from ganeti.master.locking.manager import (
    BGL,
    LEVEL_CLUSTER,
    LEVEL_INSTANCE,
    LEVEL_NODE,
    LEVELS,
    LockManager,
)
from ganeti.master.lu.hooks import HooksRunner, NodeHooks
from ganeti.master.lu.hostnames import Resolver, SystemResolver
from ganeti.rpc.noderpc import NodeRpc

if TYPE_CHECKING:
    from ganeti.master.iallocator.jobs import TextRunner

R = TypeVar("R")

Feedback = Callable[[str, Any], None]

#: ``needed_locks[level] = ALL_SET``: every lock of the level (the set lock too).
ALL_SET = None
#: How :meth:`LogicalUnit.lock_instances_nodes` fills a level (Ganeti's constants).
LOCKS_REPLACE = "replace"
LOCKS_APPEND = "append"


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
    hooks: HooksRunner | None = None  # the hooks runner; None: no hooks
    #: temporary reservations (MACs, IPs, ports, DRBD minors, LV names) made under
    #: ``owner``; the processor drops them when the opcode ends
    reservations: ReservationManager = field(default_factory=ReservationManager)
    #: host name resolution (blocking: call it through ``run_blocking``)
    resolver: Resolver = field(default_factory=SystemResolver)
    #: values the units of the running opcode recorded in it (:meth:`LogicalUnit.record_op`)
    op_updates: dict[str, Any] = field(default_factory=dict)
    #: runs instance allocator programs (None: this master runs none)
    allocators: TextRunner | None = None


class ResultWithJobs:
    """An exec result that submits follow-up jobs once the unit has succeeded.

    The opcode's result is ``other`` plus ``"jobs": [[true, id], ...]`` (one
    entry per job, as SubmitManyJobs answers), as Ganeti's.  Each submitted
    opcode gets the submitting opcode's debug level, priority (unless set),
    comment ``Submitted by <OP_ID>`` (unless set) and reason trail.
    """

    def __init__(self, jobs: list[list[dict[str, Any]]], **other: Any) -> None:
        if "jobs" in other:
            raise ValueError("'jobs' is the key of the submitted job ids")
        self.jobs = jobs
        self.other = other


def submitted_by(src: Mapping[str, Any], dst: dict[str, Any]) -> dict[str, Any]:
    """``dst``, an opcode a unit submits, with Ganeti's fields copied from ``src``.

    As Ganeti's processor: the comment ``Submitted by <OP_ID>`` unless one is
    set, the priority unless set, the debug level, and the reason trail of
    ``src`` appended to that of ``dst``.
    """
    out = copy.deepcopy(dst)
    if "debug_level" in src:
        out["debug_level"] = src["debug_level"]
    if out.get("priority") is None and "priority" in src:
        out["priority"] = src["priority"]
    if not out.get("comment"):
        out["comment"] = f"Submitted by {src['OP_ID']}"
    if "reason" in src:
        out["reason"] = list(out.get("reason") or []) + copy.deepcopy(list(src["reason"]))
    return out


class Tasklet:
    """A step several units share (migrate, failover and evacuate will share one).

    The unit that owns it takes the locks; the tasklet checks with them held
    (:meth:`check_prereq`) and then does its part (:meth:`exec`).
    """

    def __init__(self, lu: LogicalUnit) -> None:
        self.lu = lu
        self.ctx = lu.ctx

    def check_prereq(self) -> None:
        """Check preconditions with the unit's locks held."""

    async def exec(self) -> Any:
        """Do the step."""
        raise NotImplementedError


class LogicalUnit:
    """Base of all logical units (the contract: see the module docstring).

    ``REQ_BGL``: take the Big Ganeti Lock exclusively (True) or shared
    (False).  Units whose ``uses_locks`` is False take no lock at all.
    Subclasses declare their opcode view: ``op: OpNodeSetParams``.

    Hooks (Ganeti's, run by :class:`~ganeti.master.lu.hooks.HooksRunner`):
    ``HPATH`` names the hooks path (``group-add`` runs the scripts of
    ``group-add-pre.d`` and ``-post.d``); a unit without one (the default)
    runs no hooks, and its :meth:`build_hooks_env` and
    :meth:`build_hooks_nodes` are never called.  A unit with one implements
    both; ``HTYPE`` is its ``GANETI_OBJECT_TYPE``.
    """

    OP_ID: ClassVar[str] = ""
    REQ_BGL: ClassVar[bool] = True
    #: Ganeti's HPATH: the hooks path; None runs no hooks.
    HPATH: ClassVar[str | None] = None
    #: Ganeti's HTYPE: the hooks' GANETI_OBJECT_TYPE (:data:`ganeti.core.hooks.HTYPE_NODE`,
    #: ...); None sets no such variable.
    HTYPE: ClassVar[str | None] = None
    op: OpView

    def __init__(self, ctx: LUContext, op: Mapping[str, Any]) -> None:
        self.ctx = ctx
        #: The opcode as submitted (run form): what is echoed and copied into new jobs.
        self.op_input = op
        self.op = view(op)
        self.needed_locks: dict[int, list[str] | None] = {LEVEL_CLUSTER: [BGL]}
        self.share_locks: dict[int, bool] = {LEVEL_CLUSTER: not self.REQ_BGL}
        self.opportunistic_locks: dict[int, bool] = {}
        #: False when the processor runs the opcode again after it failed with
        #: ECODE_TEMP_NORES on opportunistic locks (Ganeti's PrepareRetry): the unit
        #: then waits for every lock it asks for
        self.opportunistic_allowed = True
        #: level -> LOCKS_REPLACE / LOCKS_APPEND, for :meth:`lock_instances_nodes`
        self.recalculate_locks: dict[int, str] = {}
        self.tasklets: list[Tasklet] | None = None
        #: level -> lock names the processor creates, held by the job (Ganeti's
        #: ``add_locks``: a new instance's lock); removed again unless the opcode succeeds
        self.add_locks: dict[int, list[str]] = {}
        #: what the processor did add (filled by the processor)
        self.added_locks: dict[int, list[str]] = {}
        #: level -> lock names the processor removes when the opcode ends (held by the job)
        self.remove_locks: dict[int, list[str]] = {}
        #: How many config changes this unit committed (Ganeti's ``write_count``:
        #: the "config-update" hook runs after a unit that changed the config).
        self.config_writes = 0

    async def update_config(self, change: Callable[[ConfigData], R]) -> R:
        """Commit ``change`` through the config writer (durable and replicated
        when this returns); counted in :attr:`config_writes`."""
        self.config_writes += 1
        return await self.ctx.config.update(change)

    def record_op(self, **values: Any) -> None:
        """Record values in the job's copy of the opcode, as Ganeti's units set
        ``self.op.<name>`` (LUTestDelay's resolved ``on_node_uuids``): the queue
        stores them with the opcode when it ends, and the job field ``ops`` shows
        them.  What the unit itself reads stays :attr:`op`."""
        self.ctx.op_updates.update(copy.deepcopy(values))

    @property
    def uses_locks(self) -> bool:
        """Whether the unit takes any lock (False skips the whole lock phase)."""
        return True

    @property
    def interruptible(self) -> bool:
        """Whether a cancel may interrupt :meth:`exec` (the default: it is only told)."""
        return False

    # -- hooks (used only with an HPATH) ---------------------------------------

    def build_hooks_env(self) -> dict[str, Any]:
        """The unit's hooks variables, without the ``GANETI_`` prefix (Ganeti's
        BuildHooksEnv); a unit with an ``HPATH`` must say."""
        raise NotImplementedError(f"{type(self).__name__} has a hooks path but no "
                                  "hooks environment")

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """The UUIDs of the nodes the pre and the post phase run on (Ganeti's
        BuildHooksNodes); a unit with an ``HPATH`` must say."""
        raise NotImplementedError(f"{type(self).__name__} has a hooks path but no "
                                  "hooks nodes")

    def prepare_post_hook_nodes(self, uuids: list[str]) -> list[str]:
        """The post phase's nodes once :meth:`exec` has run (Ganeti's
        PreparePostHookNodes: node-add adds the new node); by default ``uuids``."""
        return uuids

    def hooks_callback(self, phase: str, found: list[NodeHooks] | None, result: Any) -> Any:
        """Told each phase's per-node results (Ganeti's HooksCallBack); the unit's
        result, which cluster verify changes; by default ``result`` unchanged."""
        return result

    # -- the phases ------------------------------------------------------------

    def check_arguments(self) -> None:
        """Check the opcode alone: no lock is held, the config must not be read."""

    def expand_names(self) -> None:
        """Resolve names (the BGL is held) and fill ``needed_locks``; default: none."""

    async def before_locks(self) -> None:
        """Work after the first :meth:`expand_names`, before the other levels are
        taken, while the opcode is waiting (OP_TEST_JQUEUE's notification);
        run once per opcode, not per lock attempt; the default: none."""

    def declare_locks(self, level: int) -> None:
        """Refine ``needed_locks[level]`` once the previous levels are held."""

    async def before_prereq(self) -> None:
        """Asynchronous work with every lock held, just before :meth:`check_prereq`
        (Ganeti runs allocators in CheckPrereq; here they are child processes);
        the default: none."""

    def check_prereq(self) -> None:
        """Check preconditions with the locks held; raise OpPrereqError if unmet."""
        for tasklet in self.tasklets or []:
            tasklet.check_prereq()

    async def exec(self) -> Any:
        """Do the work; the return value becomes the opcode's result."""
        if self.tasklets is None:
            raise NotImplementedError
        for tasklet in self.tasklets:
            await tasklet.exec()
        return None

    def levels(self) -> tuple[int, ...]:
        """The lock levels in acquisition order."""
        return LEVELS

    # -- helpers for units -----------------------------------------------------

    def owned_locks(self, level: int) -> set[str]:
        """The lock keys the job holds at ``level``."""
        return self.ctx.locks.owned(self.ctx.owner, level)

    def release_locks(self, level: int, names: Iterable[str] | None = None,
                      keep: Iterable[str] | None = None) -> None:
        """Release locks of ``level`` early: ``names``, or all but ``keep``, or all.

        As Ganeti's ``ReleaseLocks``: giving both is an error; names not held
        are ignored.
        """
        if names is not None and keep is not None:
            raise ValueError("release_locks: give names or keep, not both")
        owned = self.owned_locks(level)
        if not owned:
            return
        if names is not None:
            release = owned & set(names)
        elif keep is not None:
            release = owned - set(keep)
        else:
            release = owned
        if release == owned:
            self.ctx.locks.release(self.ctx.owner, level)
        elif release:
            self.ctx.locks.release(self.ctx.owner, level, sorted(release))

    def lock_instances_nodes(self, primary_only: bool = False,
                             level: int = LEVEL_NODE) -> None:
        """In :meth:`declare_locks`: lock the nodes of the locked instances (UUIDs).

        Ganeti's ``_LockInstancesNodes``: ``recalculate_locks[level]`` says
        whether the nodes replace ``needed_locks[level]`` or are appended to
        it; it is consumed.  ``level`` is the node or node-res level.
        """
        mode = self.recalculate_locks.pop(level, LOCKS_REPLACE)
        cfg = self.ctx.config.config
        wanted: set[str] = set()
        for name in self.owned_locks(LEVEL_INSTANCE):
            inst = cfg.instance_by_name(name)
            if inst is None:
                continue
            wanted |= {inst.primary_node} if primary_only else nodesmod.instance_nodes(cfg,
                                                                                    inst)
        current = self.needed_locks.get(level)
        if mode == LOCKS_APPEND and level in self.needed_locks:
            if current is ALL_SET:
                return
            wanted |= set(current or [])
        self.needed_locks[level] = sorted(wanted)
