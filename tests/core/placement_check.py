"""An independent check of placements against Ganeti's hard rules, for the placement tests.

It shares nothing with the allocator: from the model alone it says whether the
instances, moved to new nodes, still fit (the nodes an instance newly uses online,
not drained, vm_capable; distinct nodes, a drbd pair within one group, memory for
the running primaries, disk for local storage; what reservations -- forthcoming
instances -- hold counted as used).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ganeti.core.placement import model

_LOCAL = {"drbd", "plain"}


def _disk(inst: model.Instance) -> int:
    return sum(d.size + (128 if inst.disk_template == "drbd" else 0) for d in inst.disks)


def violations(cluster: model.Cluster, moved: Mapping[str, Sequence[str]]) -> list[str]:
    """The hard rules ``moved`` (instance -> new nodes, primary first) breaks."""
    problems = []
    mem_delta: dict[str, int] = {}
    disk_delta: dict[str, int] = {}
    # what reservations (forthcoming instances) hold is in no node's free figures
    reserved_mem: dict[str, int] = {}
    reserved_disk: dict[str, int] = {}
    for inst in cluster.instances.values():
        if inst.forthcoming:
            reserved_mem[inst.primary] = reserved_mem.get(inst.primary, 0) + inst.memory
            if inst.disk_template in _LOCAL:
                for n in inst.nodes:
                    reserved_disk[n] = reserved_disk.get(n, 0) + _disk(inst)
    for name, nodes in moved.items():
        inst = cluster.instances[name]
        if len(set(nodes)) != len(nodes):
            problems.append(f"{name}: nodes not distinct {nodes}")
        if len(nodes) != len(inst.nodes):
            problems.append(f"{name}: {len(nodes)} nodes for {inst.disk_template}")
        for node_name in nodes:
            node = cluster.nodes[node_name]
            # a node the instance keeps may be one being emptied (a failover off an
            # offline primary leaves it the secondary); a new one must take instances
            if node_name not in inst.nodes and (node.offline or node.drained
                                                or not node.vm_capable):
                problems.append(f"{name}: {node_name} cannot take instances")
        if len({cluster.nodes[n].group for n in nodes}) > 1:
            problems.append(f"{name}: nodes in different groups")
        if inst.running or inst.forthcoming:
            mem_delta[inst.primary] = mem_delta.get(inst.primary, 0) - inst.memory
            mem_delta[nodes[0]] = mem_delta.get(nodes[0], 0) + inst.memory
        if inst.disk_template in _LOCAL:
            for n in inst.nodes:
                disk_delta[n] = disk_delta.get(n, 0) - _disk(inst)
            for n in nodes:
                disk_delta[n] = disk_delta.get(n, 0) + _disk(inst)
    for name, delta in mem_delta.items():
        res = cluster.nodes[name].resources
        free = None if res is None else res.free_memory - reserved_mem.get(name, 0)
        if delta > 0 and (free is None or delta >= free):
            problems.append(f"{name}: {delta} MiB more memory, {free} free")
    for name, delta in disk_delta.items():
        res = cluster.nodes[name].resources
        free = None if res is None else res.free_disk - reserved_disk.get(name, 0)
        if delta > 0 and (free is None or delta >= free):
            problems.append(f"{name}: {delta} MiB more disk, {free} free")
    return problems


__all__ = ["violations"]
