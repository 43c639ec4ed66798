"""Ganeti's ``fake`` hypervisor: instances that only exist as state files.

A running instance is the file ``RUN_DIR/fake-hypervisor/<name>`` holding
three lines, as Ganeti's fake hypervisor writes them: an id (``0``), the
memory in MiB and the number of VCPUs.  Starting writes the file, stopping
removes it, a soft reboot does nothing, ballooning rewrites the memory.  The
file work runs in the node's thread pool (``env.run``).

Migration moves the state file's content from the source node to the
destination (each node has its own RUN_DIR): ``migration_info`` on the source
answers the instance's memory and VCPUs, ``accept_instance`` on the
destination records the incoming instance in
``fake-hypervisor/.incoming/<name>``, ``migrate_instance`` on the source records
the outgoing one in ``fake-hypervisor/.outgoing/<name>`` (the target and the
start time on the node's clock), ``migration_status`` reports it: completed at
once, or, with a ``migration_rate`` (MiB/s, tests), active with the bytes sent
so far until all memory is sent.  ``finalize_migration_dst`` writes the state
file on the destination from the source's info (so ballooned memory moves with
the instance; Ganeti's fake recomputes the start memory), and
``finalize_migration_source`` removes it on the source; a failed migration
(``success`` false) removes the destination's and keeps the source's.  Names
starting with a dot are never instances (:data:`~.base.NAME_RE`).

Instance names become file names, so every name is checked against
:data:`~.base.NAME_RE` first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from twisted.internet.interfaces import IReactorTime

from ganeti.core import constants
from ganeti.noded.hypervisors.base import (
    NAME_RE,
    Hypervisor,
    HypervisorError,
    InstanceInfo,
    MigrationStatus,
    NodeEnv,
    Runner,
    check_name,
    instance_name,
    linux_node_info,
    read_meminfo,
    start_memory,
)

if TYPE_CHECKING:
    from ganeti.noded.hypervisors.domainxml import DiskSpec

# HypervisorError and check_name live in .base; they stay importable from here for
# ganeti/noded/backend/blockdev.py (reshaped on another branch)
__all__ = ["FakeHypervisor", "HypervisorError", "check_name", "held_memory", "mark_running"]

#: The directory of the state files, under RUN_DIR (Ganeti's).
DIR_NAME = "fake-hypervisor"
INCOMING = ".incoming"
OUTGOING = ".outgoing"
MIB = 1024 * 1024


def state_dir(run_dir: str) -> str:
    """Where the fake hypervisor of the node with ``run_dir`` keeps its instances."""
    return os.path.join(run_dir, DIR_NAME)


# --- blocking file work (thread pool) ---------------------------------------------------

def _read(root: str, name: str) -> InstanceInfo | None:
    try:
        with open(os.path.join(root, check_name(name)), encoding="ascii") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise HypervisorError(f"Failed to list instance {name}: {err.strerror}") from err
    inst_id = lines[0].strip() if lines else "0"
    memory = _int(lines[1] if len(lines) > 1 else "", 0)
    vcpus = _int(lines[2] if len(lines) > 2 else "", 1)
    return InstanceInfo(name, inst_id, memory, vcpus, constants.HV_STATE_RUNNING, 0.0)


def _names(root: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(root) if NAME_RE.fullmatch(n))
    except FileNotFoundError:
        return []


def _all(root: str) -> list[InstanceInfo]:
    return [info for info in map(lambda n: _read(root, n), _names(root)) if info is not None]


def _write(root: str, name: str, memory: int, vcpus: int, what: str) -> None:
    try:
        os.makedirs(root, mode=0o775, exist_ok=True)
        # a dot first: never taken for an instance (names start with a letter or digit)
        tmp = os.path.join(root, f".{name}.new")
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"0\n{int(memory)}\n{int(vcpus)}\n")
        os.replace(tmp, os.path.join(root, check_name(name)))
    except OSError as err:
        raise HypervisorError(f"Failed to {what} instance {name}: {err.strerror}") from err


def _remove(path: str) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _write_json(path: str, data: Mapping[str, Any], what: str) -> None:
    try:
        os.makedirs(os.path.dirname(path), mode=0o775, exist_ok=True)
        with open(f"{path}.new", "w", encoding="utf-8") as f:
            json.dump(dict(data), f)
        os.replace(f"{path}.new", path)
    except OSError as err:
        raise HypervisorError(f"Failed to {what}: {err.strerror}") from err


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mark_running(run_dir: str, name: str, memory: int, vcpus: int) -> None:
    """Write the state file of a running instance, as a start does (blocking; for
    tests and simulations that need a running fake instance without a node call)."""
    _write(state_dir(run_dir), name, memory, vcpus, "start")


def held_memory(run_dir: str) -> int:
    """MiB the running fake instances of the node hold (blocking): they use none of the
    host's memory, so the node's free memory is reported less this."""
    return sum(info.memory for info in _all(state_dir(run_dir)))


class FakeHypervisor(Hypervisor):
    """The fake hypervisor of one node, its state under ``run_dir``; ``meminfo``
    reads the host's memory (MiB by /proc/meminfo key); ``migration_rate`` (MiB/s
    on ``clock``) makes migrations take time, None completes them at once."""

    name = constants.HT_FAKE
    uses_block_devices = False

    def __init__(self, run_dir: str, run: Runner, clock: IReactorTime,
                 meminfo: Callable[[], dict[str, int]] = read_meminfo,
                 migration_rate: float | None = None) -> None:
        self.root = state_dir(run_dir)
        self.run = run
        self.clock = clock
        self.meminfo = meminfo
        self.migration_rate = migration_rate

    @classmethod
    def for_node(cls, env: NodeEnv) -> FakeHypervisor:
        return cls(env.run_dir, env.run, env.clock, **env.options.get(cls.name, {}))

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.run(fn, *args)

    def _marker(self, kind: str, name: str) -> str:
        return os.path.join(self.root, kind, check_name(name))

    # --- what runs ---------------------------------------------------------------

    async def list_instances(self) -> list[str]:
        names: list[str] = await self._call(_names, self.root)
        return names

    async def instance_info(self, name: str) -> InstanceInfo | None:
        info: InstanceInfo | None = await self._call(_read, self.root, name)
        return info

    async def all_instances_info(self) -> list[InstanceInfo]:
        found: list[InstanceInfo] = await self._call(_all, self.root)
        return found

    # --- life cycle --------------------------------------------------------------

    def _node_info(self) -> dict[str, int]:
        out = linux_node_info(self.meminfo())
        out["memory_free"] = max(0, out["memory_free"] - sum(i.memory for i in _all(self.root)))
        return out

    def _start(self, instance: Mapping[str, Any]) -> None:
        name = instance_name(instance)
        if _read(self.root, name) is not None:
            raise HypervisorError(f"Failed to start instance {name}: already running")
        memory = start_memory(instance, self._node_info()["memory_free"])
        vcpus = int((instance.get("beparams") or {}).get(constants.BE_VCPUS, 1))
        _write(self.root, name, memory, vcpus, "start")

    async def start(self, instance: Mapping[str, Any], disks: Sequence[DiskSpec],
                    paused: bool, uid: int | None) -> None:
        await self._call(self._start, instance)

    def _stop(self, name: str) -> None:
        if not _remove(os.path.join(self.root, check_name(name))):
            raise HypervisorError(f"Failed to stop instance {name}: not running")

    async def stop(self, name: str, timeout: float, force: bool = False) -> None:
        await self._call(self._stop, name)

    async def reboot(self, name: str) -> None:
        """Nothing: the fake machine has no guest to reboot."""

    def _balloon(self, name: str, memory: int) -> None:
        info = _read(self.root, name)
        if info is None:
            raise HypervisorError(f"Failed to balloon memory for {name}: not running")
        _write(self.root, name, memory, info.vcpus, "balloon memory for")

    async def balloon(self, name: str, memory: int) -> None:
        await self._call(self._balloon, name, memory)

    # --- the node ----------------------------------------------------------------

    def serial_console(self, name: str) -> str | None:
        return None  # "Console not available for fake hypervisor" (the master says so)

    async def node_info(self) -> dict[str, Any]:
        """The host's memory less what the running fake instances hold."""
        info: dict[str, Any] = await self._call(self._node_info)
        return info

    def _verify(self) -> str | None:
        try:
            os.makedirs(self.root, mode=0o775, exist_ok=True)
        except OSError as err:
            return f"The required directory '{self.root}' cannot be created: {err.strerror}"
        return None

    async def verify(self) -> str | None:
        problem: str | None = await self._call(self._verify)
        return problem

    # --- migration ---------------------------------------------------------------

    def _migration_info(self, name: str) -> str:
        info = _read(self.root, name)
        if info is None:
            raise HypervisorError(f"instance {name} is not running")
        return json.dumps({"memory": info.memory, "vcpus": info.vcpus})

    async def migration_info(self, instance: Mapping[str, Any]) -> str:
        """The instance's memory and VCPUs (JSON), for the destination."""
        info: str = await self._call(self._migration_info, instance_name(instance))
        return info

    def _accept(self, name: str, info: str, target: str) -> None:
        if _read(self.root, name) is not None:
            raise HypervisorError("Can't accept instance, already running")
        _write_json(self._marker(INCOMING, name), {"info": info, "target": target},
                    f"accept instance {name}")

    async def accept_instance(self, instance: Mapping[str, Any], info: str,
                              target: str) -> None:
        """Refuse an instance that runs here already; record the incoming one."""
        await self._call(self._accept, instance_name(instance), info, target)

    def _migrate(self, name: str, target: str, live: bool, now: float) -> None:
        info = _read(self.root, name)
        if info is None:
            raise HypervisorError(f"Failed to migrate instance {name}: not running")
        if _read_json(self._marker(OUTGOING, name)) is not None:
            raise HypervisorError(f"Failed to migrate instance {name}: a migration is "
                                  "already in progress")
        _write_json(self._marker(OUTGOING, name),
                    {"target": target, "live": live, "started": now, "memory": info.memory},
                    f"migrate instance {name}")

    async def migrate_instance(self, cluster_name: str, instance: Mapping[str, Any],
                               target: str, live: bool) -> None:
        """Record the outgoing migration (the instance keeps running here until the
        source is finalized)."""
        await self._call(self._migrate, instance_name(instance), target, live,
                         self.clock.seconds())

    def _status(self, name: str, now: float) -> MigrationStatus:
        record = _read_json(self._marker(OUTGOING, name))
        if record is None:
            raise HypervisorError(f"no migration of instance {name} is in progress on "
                                  "this node")
        total = int(record.get("memory", 0)) * MIB
        if self.migration_rate is None:
            return MigrationStatus(constants.HV_MIGRATION_COMPLETED, total, total)
        sent = int(max(0.0, now - float(record.get("started", now))) * self.migration_rate
                   * MIB)
        if sent >= total:
            return MigrationStatus(constants.HV_MIGRATION_COMPLETED, total, total)
        return MigrationStatus(constants.HV_MIGRATION_ACTIVE, sent, total)

    async def migration_status(self, instance: Mapping[str, Any]) -> MigrationStatus:
        status: MigrationStatus = await self._call(self._status, instance_name(instance),
                                                   self.clock.seconds())
        return status

    def _finalize_dst(self, instance: Mapping[str, Any], info: str, success: bool) -> None:
        name = instance_name(instance)
        _remove(self._marker(INCOMING, name))
        if not success:
            _remove(os.path.join(self.root, name))  # ensure it is down
            return
        try:
            state = json.loads(info)
            memory, vcpus = int(state["memory"]), int(state["vcpus"])
        except (ValueError, TypeError, KeyError):  # no usable info: as Ganeti's fake
            memory = start_memory(instance, self._node_info()["memory_free"])
            vcpus = int((instance.get("beparams") or {}).get(constants.BE_VCPUS, 1))
        _write(self.root, name, memory, vcpus, "finalize the migration of")

    async def finalize_migration_dst(self, instance: Mapping[str, Any], info: str,
                                     success: bool) -> None:
        await self._call(self._finalize_dst, instance, info, success)

    def _finalize_source(self, name: str, success: bool) -> None:
        _remove(self._marker(OUTGOING, name))
        if success:
            _remove(os.path.join(self.root, name))

    async def finalize_migration_source(self, instance: Mapping[str, Any], success: bool,
                                        live: bool) -> None:
        await self._call(self._finalize_source, instance_name(instance), success)


def _int(text: str, default: int) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return default
