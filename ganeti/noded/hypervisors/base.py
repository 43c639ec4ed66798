"""What every hypervisor of a node does: one asynchronous interface (Ganeti's
``hv_base.BaseHypervisor``), its errors and the records it answers with.

:class:`Hypervisor` is an abstract base class rather than a Protocol because
Ganeti's base class carries behaviour the hypervisors share: the migration steps
a hypervisor need not prepare for (``migration_info`` answers ``""``,
``accept_instance`` and both finalizations do nothing, ``cleanup`` does
nothing), instance-name checking, and construction from the node's
environment (:meth:`Hypervisor.for_node`).  A class that misses a method cannot
be instantiated, so the table (:mod:`.registry`) never holds half a hypervisor.

Every method is a coroutine run on the reactor: blocking work (files, /proc,
libvirt) goes to the node's thread runner or the libvirt thread.  Failures are
:class:`HypervisorError` with a message naming the instance and what failed;
the node calls (``ganeti.noded.backend.instances``) turn them into RPC
failures.  Instance names have been checked (:func:`check_name`) before any
method is called with one.

Semantics per method are Ganeti's; where they differ the docstring says so.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

from ganeti.core import constants

if TYPE_CHECKING:
    from ganeti.noded.hypervisors.domainxml import DiskSpec
    from ganeti.noded.hypervisors.virt import VirtConnection
    from ganeti.noded.instevents import InstanceEvents

#: What an instance name may be here (a host name; no path separators).
NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,254})")
#: The keys of Ganeti's node info every hypervisor answers (MiB); others are its own.
NODE_MEMORY_KEYS = ("memory_total", "memory_free", "memory_dom0")

Runner = Callable[..., "defer.Deferred[Any]"]


class HypervisorError(Exception):
    """A hypervisor operation failed; the message says which and why."""


class HypervisorUnavailable(HypervisorError):
    """This node cannot serve the hypervisor (no libvirt connection, not built here)."""


def check_name(name: object) -> str:
    """``name`` if it is a valid instance name, else HypervisorError."""
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None or ".." in name:
        raise HypervisorError(f"Invalid instance name {name!r:.80}")
    return name


class InstanceInfo(NamedTuple):
    """Ganeti's instance info tuple: (name, id, memory MiB, vcpus, state, cpu time s)."""

    name: str
    id: str
    memory: int
    vcpus: int
    state: int
    time: float

    def as_dict(self) -> dict[str, Any]:
        """What ``instance_info`` and ``all_instances_info`` answer per instance."""
        return {"memory": self.memory, "vcpus": self.vcpus, "state": self.state,
                "time": self.time}


@dataclass(frozen=True)
class MigrationStatus:
    """Ganeti's ``objects.MigrationStatus``: one of
    :data:`~ganeti.core.constants.HV_MIGRATION_VALID_STATUSES` and, where the
    hypervisor knows them, the bytes of memory sent and to send."""

    status: str
    transferred_ram: int | None = None
    total_ram: int | None = None
    postcopy_status: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form (Ganeti serialises the object's set slots only)."""
        out: dict[str, Any] = {"status": self.status}
        for key in ("transferred_ram", "total_ram", "postcopy_status"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class NodeEnv:
    """What a hypervisor of a node daemon is made from: the node's RUN_DIR, its clock,
    its thread runner, its instance event ring and (kvm) its libvirt connection."""

    run_dir: str
    clock: IReactorTime
    run: Runner
    events: InstanceEvents | None = None
    virt: VirtConnection | None = None
    #: per hypervisor name, keyword arguments for its constructor (tests)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class Hypervisor(abc.ABC):
    """One hypervisor of one node daemon."""

    #: Ganeti's hypervisor name (``constants.HT_*``).
    name: ClassVar[str]
    #: Whether the instance's disks are assembled and handed to :meth:`start` (the
    #: fake hypervisor runs nothing that could open them).
    uses_block_devices: ClassVar[bool] = True

    @classmethod
    @abc.abstractmethod
    def for_node(cls, env: NodeEnv) -> Hypervisor:
        """This hypervisor for the node daemon of ``env``;
        :class:`HypervisorUnavailable` if the node cannot serve it."""

    # --- what runs ---------------------------------------------------------------

    @abc.abstractmethod
    async def list_instances(self) -> list[str]:
        """The names of the running instances, sorted (Ganeti's ListInstances)."""

    @abc.abstractmethod
    async def instance_info(self, name: str) -> InstanceInfo | None:
        """The running instance ``name``, or None if it does not run here
        (GetInstanceInfo)."""

    @abc.abstractmethod
    async def all_instances_info(self) -> list[InstanceInfo]:
        """Every running instance (GetAllInstancesInfo)."""

    # --- life cycle --------------------------------------------------------------

    @abc.abstractmethod
    async def start(self, instance: Mapping[str, Any], disks: Sequence[DiskSpec],
                    paused: bool, uid: int | None) -> None:
        """Start ``instance`` (the node call's filled instance dict) with its assembled
        ``disks`` (empty unless :attr:`uses_block_devices`), paused if asked, under
        the pool ``uid`` if one was handed out (StartInstance).  The hypervisor
        chooses the start memory.  HypervisorError if it already runs; a failed
        start leaves nothing running."""

    @abc.abstractmethod
    async def stop(self, name: str, timeout: float, force: bool = False) -> None:
        """Stop the instance (StopInstance): ask the guest to power off and wait up to
        ``timeout`` seconds, then destroy it; ``force`` destroys at once.
        HypervisorError if it cannot be stopped (the caller checks whether it still
        runs: one that is gone counts as stopped, as Ganeti's InstanceShutdown)."""

    async def cleanup(self, name: str) -> None:
        """What is left after a stop (CleanupInstance): nothing by default."""
        return None  # Ganeti's base: nothing to do

    @abc.abstractmethod
    async def reboot(self, name: str) -> None:
        """A soft reboot: the guest reboots, the machine stays (RebootInstance).  A hard
        reboot is a stop and a start by the node call."""

    @abc.abstractmethod
    async def balloon(self, name: str, memory: int) -> None:
        """Set the running instance's memory to ``memory`` MiB
        (BalloonInstanceMemory); HypervisorError if it does not run."""

    # --- the node ----------------------------------------------------------------

    @abc.abstractmethod
    def serial_console(self, name: str) -> str | None:
        """The unix socket the serial console of instance ``name`` is served on here,
        None if this hypervisor has none (the console object itself is computed on
        the master, :mod:`ganeti.core.consoles`, as Ganeti's GetInstanceConsole)."""

    @abc.abstractmethod
    async def node_info(self) -> dict[str, Any]:
        """The node as this hypervisor sees it (GetNodeInfo): at least
        :data:`NODE_MEMORY_KEYS` in MiB; other keys are this hypervisor's own facts."""

    @abc.abstractmethod
    async def verify(self) -> str | None:
        """What is wrong with this hypervisor on this node, None if nothing (Verify)."""

    # --- migration (Ganeti's order: info on the source, accept on the destination,
    # migrate and poll the status on the source, finalize on both) -----------------

    async def migration_info(self, instance: Mapping[str, Any]) -> str:
        """Opaque data the destination needs, from the source (MigrationInfo); ``""``
        by default."""
        return ""

    async def accept_instance(self, instance: Mapping[str, Any], info: str,
                              target: str) -> None:
        """Prepare this node (the destination, reached at address ``target``) to
        receive the instance (AcceptInstance); nothing by default."""
        return None  # Ganeti's base: nothing to do

    @abc.abstractmethod
    async def migrate_instance(self, cluster_name: str, instance: Mapping[str, Any],
                               target: str, live: bool) -> None:
        """Start sending the running instance to the node at address ``target``
        (MigrateInstance); the master then polls :meth:`migration_status`."""

    @abc.abstractmethod
    async def migration_status(self, instance: Mapping[str, Any]) -> MigrationStatus:
        """How the migration of ``instance`` from this node goes (GetMigrationStatus)."""

    async def finalize_migration_dst(self, instance: Mapping[str, Any], info: str,
                                     success: bool) -> None:
        """On the destination: take the instance as running here if ``success``, else
        undo what :meth:`accept_instance` prepared (FinalizeMigrationDst)."""
        return None  # Ganeti's base: nothing to do

    async def finalize_migration_source(self, instance: Mapping[str, Any], success: bool,
                                        live: bool) -> None:
        """On the source: forget the instance if ``success``, else keep it running
        here (FinalizeMigrationSource).  Aborting a migration is both finalizations
        with ``success`` false (Ganeti's ``_AbortMigration``)."""
        return None  # Ganeti's base: nothing to do


def instance_name(instance: Mapping[str, Any]) -> str:
    """The checked name of an instance dict."""
    return check_name(instance.get("name"))


def start_memory(instance: Mapping[str, Any], free: int) -> int:
    """Ganeti's ``_InstanceStartupMemory``: the maximum if it is free, never less than
    the minimum."""
    be = instance.get("beparams") or {}
    return max(int(be.get(constants.BE_MINMEM, 0)), min(int(be.get(constants.BE_MAXMEM, 0)),
                                                         free))


def linux_node_info(meminfo: Mapping[str, int]) -> dict[str, int]:
    """Ganeti's GetLinuxNodeInfo memory figures (MiB) from /proc/meminfo (MiB by key)."""
    total = meminfo.get("MemTotal", 0)
    free = meminfo.get("MemFree", 0) + meminfo.get("Buffers", 0) + meminfo.get("Cached", 0)
    return {"memory_total": total, "memory_free": free, "memory_dom0": max(0, total - free)}


def read_meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    """/proc/meminfo in MiB (empty if it cannot be read; blocking)."""
    out: dict[str, int] = {}
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) // 1024
    except OSError:
        pass
    return out
