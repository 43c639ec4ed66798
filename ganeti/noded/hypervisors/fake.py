"""Ganeti's ``fake`` hypervisor: instances that only exist as state files.

A running instance is the file ``RUN_DIR/fake-hypervisor/<name>`` holding
three lines, as Ganeti's fake hypervisor writes them: an id (``0``), the
memory in MiB and the number of VCPUs.  Starting writes the file, stopping
removes it, a soft reboot does nothing, ballooning rewrites the memory.  The
methods block (file system calls): node calls run them in the thread pool.

Instance names become file names, so every name is checked against
:data:`NAME_RE` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

#: What an instance name may be here (a host name; no path separators).
NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,254})")
#: Ganeti's HvInstanceState.
STATE_RUNNING = 0
STATE_SHUTDOWN = 1
#: What Ganeti's fake hypervisor reports (name, id, memory, vcpus, state, cpu time).
InstanceInfo = tuple[str, str, int, int, int, float]


class HypervisorError(Exception):
    """A hypervisor operation failed; the message says which and why."""


def check_name(name: object) -> str:
    """``name`` if it is a valid instance name, else HypervisorError."""
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None or ".." in name:
        raise HypervisorError(f"Invalid instance name {name!r:.80}")
    return name


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in MiB (empty if it cannot be read)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) // 1024
    except OSError:
        pass
    return out


class FakeHypervisor:
    """The fake hypervisor of one node, its state under ``run_dir``; ``meminfo``
    reads the host's memory (MiB by /proc/meminfo key)."""

    def __init__(self, run_dir: str, meminfo: Callable[[], dict[str, int]] = _meminfo) -> None:
        self.root = os.path.join(run_dir, "fake-hypervisor")
        self.meminfo = meminfo

    def _file(self, name: str) -> str:
        return os.path.join(self.root, check_name(name))

    def _ensure_root(self) -> None:
        os.makedirs(self.root, mode=0o775, exist_ok=True)

    def list_instances(self) -> list[str]:
        """The names of the running instances, sorted."""
        try:
            return sorted(n for n in os.listdir(self.root) if NAME_RE.fullmatch(n))
        except FileNotFoundError:
            return []

    def instance_info(self, name: str) -> InstanceInfo | None:
        """The running instance ``name``, or None."""
        try:
            with open(self._file(name), encoding="ascii") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise HypervisorError(f"Failed to list instance {name}: {err.strerror}") from err
        inst_id = lines[0].strip() if lines else "0"
        memory = _int(lines[1] if len(lines) > 1 else "", 0)
        vcpus = _int(lines[2] if len(lines) > 2 else "", 1)
        return (name, inst_id, memory, vcpus, STATE_RUNNING, 0.0)

    def all_instances_info(self) -> list[InstanceInfo]:
        """Every running instance."""
        found = []
        for name in self.list_instances():
            info = self.instance_info(name)
            if info is not None:
                found.append(info)
        return found

    def node_info(self) -> dict[str, int]:
        """Memory of the node as the fake hypervisor reports it (MiB): the host's,
        less what running instances use."""
        mem = self.meminfo()
        total = mem.get("MemTotal", 0)
        free = mem.get("MemFree", 0) + mem.get("Buffers", 0) + mem.get("Cached", 0)
        used = sum(info[2] for info in self.all_instances_info())
        return {"memory_total": total, "memory_free": max(0, free - used),
                "memory_dom0": max(0, total - free)}

    def startup_memory(self, minmem: int, maxmem: int) -> int:
        """Ganeti's choice: the maximum if free, never less than the minimum."""
        return max(minmem, min(maxmem, self.node_info()["memory_free"]))

    def start(self, name: str, memory: int, vcpus: int) -> None:
        """Mark ``name`` running; HypervisorError if it already runs."""
        path = self._file(name)
        if os.path.exists(path):
            raise HypervisorError(f"Failed to start instance {name}: already running")
        self._write(path, name, memory, vcpus, "start")

    def stop(self, name: str) -> None:
        """Mark ``name`` stopped; HypervisorError if it does not run."""
        path = self._file(name)
        try:
            os.unlink(path)
        except FileNotFoundError:
            raise HypervisorError(f"Failed to stop instance {name}: not running") from None

    def balloon(self, name: str, memory: int) -> None:
        """Set the running instance's memory."""
        info = self.instance_info(name)
        if info is None:
            raise HypervisorError(f"Failed to balloon memory for {name}: not running")
        self._write(self._file(name), name, memory, info[3], "balloon memory for")

    def _write(self, path: str, name: str, memory: int, vcpus: int, what: str) -> None:
        try:
            self._ensure_root()
            # a dot first: never taken for an instance (names start with a letter or digit)
            tmp = os.path.join(self.root, f".{name}.new")
            with open(tmp, "w", encoding="ascii") as f:
                f.write(f"0\n{int(memory)}\n{int(vcpus)}\n")
            os.replace(tmp, path)
        except OSError as err:
            raise HypervisorError(f"Failed to {what} instance {name}: {err.strerror}") from err


def _int(text: str, default: int) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return default
