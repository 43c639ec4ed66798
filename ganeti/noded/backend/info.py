"""version and node_info."""

from __future__ import annotations

import os
from typing import Any

from ganeti.core import constants, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.hypervisors import fake
from ganeti.noded.hypervisors.base import NODE_MEMORY_KEYS

MIB = 1024 * 1024


def version(ctx: NodeContext) -> int:
    """The internode protocol version."""
    return constants.PROTOCOL_VERSION


def parse_meminfo(text: str) -> dict[str, int]:
    """``/proc/meminfo`` as key -> KiB."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[key.strip()] = int(fields[0])
    return out


def _cpu_sockets(cpuinfo: str) -> int | None:
    ids = {line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
           if line.startswith("physical id")}
    return len(ids) or None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def storage_dir(paths: Paths) -> str:
    """The file storage directory from ssconf if it exists here, else DATA_DIR."""
    value = _read(paths.ssconf_file("file_storage_dir")).strip()
    for candidate in (value, rpcdefs.from_wire_path(paths.root, value) if value else ""):
        if candidate and os.path.isdir(candidate):
            return candidate
    return paths.data_dir


def collect_node_info(paths: Paths, proc: str = "/proc", sys_dir: str = "/sys") -> dict[str, Any]:
    """Memory, CPU and storage figures of this node (blocking).

    As Ganeti's node info: free memory is MemFree + Buffers + Cached less what the
    fake hypervisor's running instances hold (they use none of the host's; a kvm
    guest's use shows in MemFree itself), and dom0's memory is the kernel's Active."""
    mem = parse_meminfo(_read(os.path.join(proc, "meminfo")))
    free_kib = mem.get("MemFree", 0) + mem.get("Buffers", 0) + mem.get("Cached", 0)
    fake_mib = fake.held_memory(paths.run_dir)
    node_dir = os.path.join(sys_dir, "devices/system/node")
    try:
        numa = len([n for n in os.listdir(node_dir) if n[4:].isdigit() and n.startswith("node")])
    except OSError:
        numa = 0
    sdir = storage_dir(paths)
    st = os.statvfs(sdir)
    total_mib = mem.get("MemTotal", 0) // 1024
    return {
        "bootid": _read(os.path.join(proc, "sys/kernel/random/boot_id")).strip() or None,
        "memory_total": total_mib,
        "memory_dom0": mem.get("Active", max(0, total_mib * 1024 - free_kib)) // 1024,
        "cpu_dom0": os.cpu_count() or 1,
        "memory_free": max(0, free_kib // 1024 - fake_mib),
        "cpu_total": os.cpu_count() or 1,
        "cpu_sockets": _cpu_sockets(_read(os.path.join(proc, "cpuinfo"))) or 1,
        "cpu_nodes": numa or 1,
        "storage_dir": rpcdefs.to_wire_path(paths.root, sdir),
        "disk_total": st.f_blocks * st.f_frsize // MIB,
        "disk_free": st.f_bavail * st.f_frsize // MIB,
    }


async def node_info(ctx: NodeContext) -> dict[str, Any]:
    """node_info, read in the thread pool, with each served hypervisor's own facts
    (its node info beyond the memory figures; kvm's ``hv_accel`` says what its guests
    run under, "kvm" or "qemu (TCG)", and ``hv_accel_reason`` why)."""
    out: dict[str, Any] = await ctx.run(collect_node_info, ctx.paths)
    for hv in ctx.hypervisor_table().served():
        facts = await hv.node_info()
        out.update((k, v) for k, v in facts.items() if k not in NODE_MEMORY_KEYS)
    return out
