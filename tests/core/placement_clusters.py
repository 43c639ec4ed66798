"""Generated iallocator inputs for the placement tests: clusters of the issue's shape.

``cluster_input(nodes, ...)`` returns a version-2 input dict (what Ganeti's
master writes for an allocator) of ``nodes`` nodes in ``groups`` groups with
about ``per_node`` instances per node: half drbd, 30 % plain, 20 % diskless,
sizes drawn from a seeded generator so the same arguments give the same dict.
"""

from __future__ import annotations

import random
from typing import Any

_SPEC_MIN = {"memory-size": 128, "cpu-count": 1, "disk-size": 0, "disk-count": 0,
             "nic-count": 0, "spindle-use": 0}
_SPEC_MAX = {"memory-size": 65536, "cpu-count": 16, "disk-size": 1048576, "disk-count": 16,
             "nic-count": 8, "spindle-use": 12}
_SPEC_STD = {"memory-size": 1024, "cpu-count": 1, "disk-size": 10240, "disk-count": 1,
             "nic-count": 1, "spindle-use": 1}
TEMPLATES = ["drbd", "plain", "diskless", "file", "sharedfile", "rbd", "ext", "blockdev"]


def ipolicy(vcpu_ratio: float = 4.0, spindle_ratio: float = 32.0) -> dict[str, Any]:
    """An instance policy allowing every template used here."""
    return {"minmax": [{"min": dict(_SPEC_MIN), "max": dict(_SPEC_MAX)}],
            "std": dict(_SPEC_STD), "spindle-ratio": spindle_ratio, "vcpu-ratio": vcpu_ratio,
            "disk-templates": list(TEMPLATES)}


def _node(group: str, index: int, memory: int, disk: int, cpus: int) -> dict[str, Any]:
    return {"total_memory": memory, "reserved_memory": 1024, "free_memory": memory - 1024,
            "total_disk": disk, "free_disk": disk, "total_spindles": 12, "free_spindles": 12,
            "total_cpus": cpus, "reserved_cpus": 1, "i_pri_memory": 0, "i_pri_up_memory": 0,
            "tags": [], "primary_ip": f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}",
            "secondary_ip": f"10.{128 + (index >> 16 & 127)}.{index >> 8 & 255}.{index & 255}",
            "offline": False, "drained": False, "master_candidate": index < 10, "group": group,
            "master_capable": True, "vm_capable": True,
            "ndparams": {"spindle_count": 1, "exclusive_storage": False, "cpu_speed": 1,
                         "oob_program": "", "ovs": False, "ovs_link": "",
                         "ovs_name": "switch1", "ssh_port": 22}}


def _instance(name: str, nodes: list[str], template: str, memory: int, vcpus: int,
              size: int) -> dict[str, Any]:
    disks = [] if template == "diskless" else [
        {"dev_type": template, "size": size, "mode": "rw", "spindles": None}]
    total = 0 if template in ("diskless", "blockdev") else (
        size + 128 if template == "drbd" else size)
    return {"tags": [], "admin_state": "up", "vcpus": vcpus, "memory": memory,
            "spindle_use": 1, "os": "debootstrap+default", "nodes": nodes,
            "nics": [{"mac": "aa:00:00:00:00:01", "ip": None, "mode": "bridged",
                      "link": "br0", "bridge": "br0"}],
            "disks": disks, "disk_template": template, "disks_active": True,
            "hypervisor": "kvm", "disk_space_total": total}


def cluster_input(nodes: int, *, groups: int = 1, per_node: float = 15.0, seed: int = 1,
                  memory: int = 131072, disk: int = 2 * 1024 * 1024, cpus: int = 32,
                  mix: tuple[tuple[str, float], ...] = (
                      ("drbd", 0.5), ("plain", 0.3), ("diskless", 0.2)),
                  fill: float = 0.6) -> dict[str, Any]:
    """A version-2 input without its request (set ``data["request"]``).

    Instances are placed round-robin-ish at random within a group, so every
    node holds what it can; ``fill`` bounds the memory used on any node."""
    rng = random.Random(seed)
    uuids = [f"00000000-0000-4000-8000-{g:012d}" for g in range(groups)]
    nodegroups = {u: {"name": "default" if g == 0 else f"group{g}", "alloc_policy": "preferred",
                      "networks": [], "ipolicy": ipolicy(), "tags": []}
                  for g, u in enumerate(uuids)}
    node_data: dict[str, dict[str, Any]] = {}
    members: dict[str, list[str]] = {u: [] for u in uuids}
    for i in range(nodes):
        group = uuids[i * groups // nodes]
        name = f"node{i + 1:04d}.example.com"
        node_data[name] = _node(group, i + 1, memory, disk, cpus)
        members[group].append(name)
    instances: dict[str, dict[str, Any]] = {}
    templates = [t for t, _ in mix]
    weights = [w for _, w in mix]
    count = int(nodes * per_node)
    budget = memory * fill
    for k in range(count):
        template = rng.choices(templates, weights)[0]
        group = uuids[rng.randrange(groups)]
        pool = members[group]
        if len(pool) < (2 if template == "drbd" else 1):
            continue
        mem = rng.choice((512, 1024, 2048, 4096, 8192))
        vcpus = rng.choice((1, 1, 2, 2, 4))
        size = rng.choice((2048, 5120, 10240, 20480, 40960))
        chosen = rng.sample(pool, 2 if template == "drbd" else 1)
        pnode = node_data[chosen[0]]
        used = pnode["total_memory"] - pnode["reserved_memory"] - pnode["free_memory"]
        if used + mem > budget:
            continue
        inst = _instance(f"inst{k + 1:05d}.example.com", chosen, template, mem, vcpus, size)
        instances[inst["nodes"][0] and f"inst{k + 1:05d}.example.com"] = inst
        pnode["free_memory"] -= mem
        pnode["i_pri_memory"] += mem
        pnode["i_pri_up_memory"] += mem
        for n in chosen:
            node_data[n]["free_disk"] -= inst["disk_space_total"]
    return {"version": 2, "cluster_name": "cluster.example.com", "cluster_tags": [],
            "enabled_hypervisors": ["kvm"], "ipolicy": ipolicy(), "nodegroups": nodegroups,
            "nodes": node_data, "instances": instances}


def evacuate_request(data: dict[str, Any], node: str, mode: str) -> dict[str, Any]:
    """The node-evacuate request Ganeti's LU sends for ``node`` in ``mode``."""
    wanted = []
    for name, inst in sorted(data["instances"].items()):
        nodes = inst["nodes"]
        if ((mode in ("primary-only", "all") and nodes[0] == node)
                or (mode in ("secondary-only", "all") and node in nodes[1:])):
            wanted.append(name)
    return {"instances": wanted, "evac_mode": mode, "type": "node-evacuate"}


__all__ = ["TEMPLATES", "cluster_input", "evacuate_request", "ipolicy"]
