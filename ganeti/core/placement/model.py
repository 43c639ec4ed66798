"""The cluster as an allocator sees it: groups, nodes and instances, and what they hold.

Everything is a frozen dataclass; sizes are MiB, as in Ganeti's iallocator
protocol.  The model holds exactly what the version-2 input carries (seed 002,
"Input message"), so an input parsed into it renders back to the same dict
(:mod:`ganeti.core.placement.wire`); the derived figures an allocator needs
(instances by node, memory and vCPUs in use, ratios) are methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ganeti.core import constants

#: The DRBD metadata volume each DRBD disk also takes (MiB; Ganeti's DRBD_META_SIZE).
DRBD_META_SIZE = 128

#: Disk space a disk of each template takes on its node(s), from its size
#: (Ganeti's ``ComputeDiskSize``): block devices and diskless take none here.
_DISK_SPACE: dict[str, Callable[[int], int]] = {
    constants.DT_DISKLESS: lambda size: 0,
    constants.DT_PLAIN: lambda size: size,
    constants.DT_DRBD8: lambda size: size + DRBD_META_SIZE,
    constants.DT_FILE: lambda size: size,
    constants.DT_SHARED_FILE: lambda size: size,
    constants.DT_GLUSTER: lambda size: size,
    constants.DT_BLOCK: lambda size: 0,
    constants.DT_RBD: lambda size: size,
    constants.DT_EXT: lambda size: size,
}

#: Templates whose instances live on two nodes (Ganeti's DTS_INT_MIRROR).
INTERNALLY_MIRRORED = frozenset({constants.DT_DRBD8})
#: Templates whose disks another node can reach: mirrored or shared (DTS_MIRRORED).
MIRRORED = INTERNALLY_MIRRORED | frozenset({
    constants.DT_BLOCK, constants.DT_DISKLESS, constants.DT_EXT, constants.DT_GLUSTER,
    constants.DT_RBD, constants.DT_SHARED_FILE})


def disk_space(disks: Iterable[tuple[str, int]]) -> int:
    """The disk space ``(template, size)`` disks need, as Ganeti's ``ComputeDiskSize``.

    Raises ``KeyError`` naming an unknown template."""
    return sum(_DISK_SPACE[template](size) for template, size in disks)


def required_nodes(disk_template: str) -> int:
    """How many nodes an instance of ``disk_template`` is placed on (2 for drbd)."""
    return 2 if disk_template in INTERNALLY_MIRRORED else 1


@dataclass(frozen=True)
class ISpec:
    """One instance specification of a policy (Ganeti's ``ISPECS_PARAMETERS``)."""

    memory_size: int
    cpu_count: int
    disk_size: int
    disk_count: int
    nic_count: int
    spindle_use: int


@dataclass(frozen=True)
class IPolicy:
    """An instance policy: the allowed ranges, the standard spec and the ratios."""

    minmax: tuple[tuple[ISpec, ISpec], ...]
    std: ISpec
    disk_templates: tuple[str, ...]
    vcpu_ratio: float
    spindle_ratio: float

    def allows(self, spec: ISpec, disk_template: str) -> bool:
        """Whether ``spec`` lies in one of the min/max ranges and the template is allowed."""
        if disk_template not in self.disk_templates:
            return False
        names = ("memory_size", "cpu_count", "disk_size", "disk_count", "nic_count",
                 "spindle_use")
        return any(all(getattr(low, n) <= getattr(spec, n) <= getattr(high, n) for n in names)
                   for low, high in self.minmax)


@dataclass(frozen=True)
class Group:
    """A node group: its name, allocation policy, networks and effective policy."""

    uuid: str
    name: str
    alloc_policy: str
    ipolicy: IPolicy
    networks: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    @property
    def allocable(self) -> bool:
        """Whether new instances may go to this group at all."""
        return self.alloc_policy != constants.ALLOC_POLICY_UNALLOCABLE


@dataclass(frozen=True)
class NodeResources:
    """What a node has and has free, from its live data (absent for offline nodes)."""

    total_memory: int
    reserved_memory: int
    free_memory: int
    total_disk: int
    free_disk: int
    total_spindles: int
    free_spindles: int
    total_cpus: int
    reserved_cpus: int
    i_pri_memory: int
    i_pri_up_memory: int


@dataclass(frozen=True)
class Node:
    """A node: its flags and group from the config, its resources from live data."""

    name: str
    group: str
    primary_ip: str
    secondary_ip: str
    resources: NodeResources | None = None
    offline: bool = False
    drained: bool = False
    master_candidate: bool = False
    master_capable: bool = True
    vm_capable: bool = True
    tags: tuple[str, ...] = ()
    ndparams: Mapping[str, Any] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """Whether instances may be placed here (online, not drained, vm_capable, live data)."""
        return (not self.offline and not self.drained and self.vm_capable
                and self.resources is not None)


@dataclass(frozen=True)
class Disk:
    """A disk of an instance (size in MiB; spindles only with exclusive storage)."""

    size: int
    mode: str = "rw"
    dev_type: str | None = None
    spindles: int | None = None


@dataclass(frozen=True)
class Nic:
    """A network interface of an instance (``bridge`` only in bridged mode)."""

    mac: str | None
    ip: str | None = None
    mode: str | None = None
    link: str | None = None
    bridge: str | None = None


@dataclass(frozen=True)
class Instance:
    """An instance: its nodes (primary first) and the resources it holds there."""

    name: str
    nodes: tuple[str, ...]
    memory: int
    vcpus: int
    disk_template: str
    disks: tuple[Disk, ...] = ()
    nics: tuple[Nic, ...] = ()
    spindle_use: int = 1
    admin_state: str = constants.ADMINST_DOWN
    disks_active: bool = False
    os: str | None = None
    hypervisor: str = constants.HT_FAKE
    tags: tuple[str, ...] = ()
    #: A reservation (Ganeti 3.0's forthcoming instance): it holds its memory, vCPUs
    #: and disk space on its nodes for the allocator, but nothing in the nodes' live
    #: figures.
    forthcoming: bool = False

    @property
    def primary(self) -> str:
        """The primary node's name."""
        return self.nodes[0]

    @property
    def secondaries(self) -> tuple[str, ...]:
        """The other nodes (the DRBD peer of a mirrored instance)."""
        return self.nodes[1:]

    @property
    def running(self) -> bool:
        """Whether the instance is meant to run (admin state up)."""
        return self.admin_state == constants.ADMINST_UP

    @property
    def disk_space_total(self) -> int:
        """The disk space the instance takes on each of its nodes."""
        return disk_space((d.dev_type or self.disk_template, d.size) for d in self.disks)


@dataclass(frozen=True)
class Cluster:
    """The whole cluster: its policy, groups by UUID, nodes and instances by name."""

    name: str
    ipolicy: IPolicy
    groups: Mapping[str, Group]
    nodes: Mapping[str, Node]
    instances: Mapping[str, Instance]
    tags: tuple[str, ...] = ()
    enabled_hypervisors: tuple[str, ...] = ()

    def group_of(self, node: str) -> Group:
        """The group of the node called ``node``."""
        return self.groups[self.nodes[node].group]

    def group_nodes(self, group_uuid: str) -> list[Node]:
        """The nodes of a group, by name."""
        return sorted((n for n in self.nodes.values() if n.group == group_uuid),
                      key=lambda n: n.name)

    def primaries(self, node: str) -> list[Instance]:
        """The instances whose primary is ``node``, by name."""
        return sorted((i for i in self.instances.values() if i.primary == node),
                      key=lambda i: i.name)

    def secondaries(self, node: str) -> list[Instance]:
        """The instances with ``node`` as a secondary, by name."""
        return sorted((i for i in self.instances.values() if node in i.secondaries),
                      key=lambda i: i.name)

    def primary_vcpus(self, node: str) -> int:
        """vCPUs of the instances whose primary is ``node``."""
        return sum(i.vcpus for i in self.primaries(node))

    def primary_spindles(self, node: str) -> int:
        """Spindles the primary instances of ``node`` use."""
        return sum(i.spindle_use for i in self.primaries(node))

    def with_instance(self, inst: Instance) -> Cluster:
        """A copy with ``inst`` added and what it holds taken from its nodes: memory on
        the primary (when it runs), its disk space on every node; a forthcoming
        instance takes nothing from the nodes' live figures."""
        nodes = dict(self.nodes)
        for name in () if inst.forthcoming else inst.nodes:
            node = nodes[name]
            res = node.resources
            if res is None:
                raise ValueError(f"node {name} has no resources to hold {inst.name}")
            primary = name == inst.primary
            memory = inst.memory if primary else 0
            nodes[name] = replace(node, resources=replace(
                res, free_disk=res.free_disk - inst.disk_space_total,
                free_memory=res.free_memory - (memory if inst.running else 0),
                i_pri_memory=res.i_pri_memory + memory,
                i_pri_up_memory=res.i_pri_up_memory + (memory if inst.running else 0)))
        return replace(self, nodes=nodes, instances={**self.instances, inst.name: inst})

    def check(self) -> list[str]:
        """Inconsistencies between the parts (an empty list when the model holds)."""
        problems = [f"node {n.name}: unknown group {n.group}"
                    for n in self.nodes.values() if n.group not in self.groups]
        for inst in self.instances.values():
            if not inst.nodes:
                problems.append(f"instance {inst.name}: no nodes")
            problems.extend(f"instance {inst.name}: unknown node {name}"
                            for name in inst.nodes if name not in self.nodes)
        return problems


__all__ = ["DRBD_META_SIZE", "INTERNALLY_MIRRORED", "MIRRORED", "Cluster", "Disk", "Group",
           "IPolicy", "ISpec", "Instance", "Nic", "Node", "NodeResources", "disk_space",
           "required_nodes"]
