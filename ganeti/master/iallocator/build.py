"""The placement model of the cluster, built from the config and the nodes' live data.

What Ganeti's master puts into an iallocator input (``masterd/iallocator.py``,
``_ComputeClusterData``): every group with its effective policy; every node with
its config flags and filled node parameters, and -- for online vm_capable
nodes -- its memory, CPU and storage from live data, the memory of its
primary instances, and its free memory less what running instances may still
grow into; every instance with its filled backend parameters, NICs, disks and
nodes, and ``"forthcoming": true`` for a reservation (htools 3.0.2 reads the key
and counts the reservation in its ``*_forth`` figures; Ganeti's own master never
writes it).  The caller gathers the live data (node RPC) and passes it in, so this
module does no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core import storagetypes as st
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Instance, NodeGroup
from ganeti.core.params_fill import fill_be, fill_ipolicy, fill_nd, fill_nic
from ganeti.core.placement import model
from ganeti.core.placement.requests import MODE_RELOC, AnyRequest, Relocate
from ganeti.core.placement.wire import AllocatorInput, ipolicy_from_wire
from ganeti.master.config.nodes import secondary_nodes
from ganeti.master.query.instancequeries import disk_template

#: Storage types whose free space nodes report (Ganeti's ``STS_REPORT``).
REPORTED_STORAGE = frozenset({st.ST_FILE, st.ST_LVM_PV, st.ST_LVM_VG})
#: Templates on LVM, whose spindles are the physical volumes' (Ganeti's ``DTS_LVM``).
LVM_TEMPLATES = frozenset({c.DT_PLAIN, c.DT_DRBD8})


@dataclass(frozen=True)
class LiveNode:
    """A node's live figures (MiB, CPUs); ``storage`` is storage type -> (total, free)."""

    memory_total: int
    memory_free: int
    memory_dom0: int
    cpu_total: int
    cpu_dom0: int
    storage: Mapping[str, tuple[int, int]]

    @classmethod
    def from_node_info(cls, payload: Mapping[str, Any]) -> LiveNode:
        """From the payload of this project's ``node_info`` call (the file storage
        directory's size is its only storage figure)."""
        storage: dict[str, tuple[int, int]] = {}
        if "disk_total" in payload and "disk_free" in payload:
            storage[st.ST_FILE] = (int(payload["disk_total"]), int(payload["disk_free"]))
        for key in ("memory_total", "memory_free", "memory_dom0", "cpu_total", "cpu_dom0"):
            if not isinstance(payload.get(key), int) or isinstance(payload.get(key), bool):
                raise OpExecError(f"Node info did not return an integer '{key}': "
                                  f"{payload.get(key)!r}")
        return cls(memory_total=payload["memory_total"], memory_free=payload["memory_free"],
                   memory_dom0=payload["memory_dom0"], cpu_total=payload["cpu_total"],
                   cpu_dom0=payload["cpu_dom0"], storage=storage)


def _group(cfg: ConfigData, group: NodeGroup) -> model.Group:
    return model.Group(uuid=group.uuid, name=group.name, alloc_policy=group.alloc_policy,
                       ipolicy=ipolicy_from_wire(fill_ipolicy(cfg.cluster, group)),
                       networks=tuple(group.networks), tags=tuple(group.tags))


def _storage(name: str, live: LiveNode, template: str) -> tuple[int, int, int, int]:
    """(total disk, free disk, total spindles, free spindles) for ``template``."""
    kind = st.DISK_TEMPLATE_STORAGE_TYPE[template]
    if kind not in REPORTED_STORAGE:
        return 0, 0, 0, 0
    if kind not in live.storage:
        raise OpExecError(f"Node '{name}' didn't return space info for disk template "
                          f"'{template}'")
    total, free = live.storage[kind]
    spindles = (0, 0)
    if template in LVM_TEMPLATES and st.ST_LVM_PV in live.storage:
        spindles = live.storage[st.ST_LVM_PV]
    return total, free, spindles[0], spindles[1]


def _instance(cfg: ConfigData, inst: Instance, be_base: Mapping[str, Any],
              nic_base: Mapping[str, Any]) -> model.Instance:
    # the cluster's flat defaults, filled once per input (Ganeti's FillBE/FillNIC
    # layers; only read here, so no copies)
    be = {**be_base, **inst.beparams}
    nics = []
    for nic in inst.nics:
        params = {**nic_base, **nic.nicparams}
        bridged = params.get(c.NIC_MODE) == c.NIC_MODE_BRIDGED
        nics.append(model.Nic(mac=nic.mac, ip=nic.ip, mode=params.get(c.NIC_MODE),
                              link=params.get(c.NIC_LINK),
                              bridge=params.get(c.NIC_LINK) if bridged else None))
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    names = [cfg.nodes[u].name for u in [inst.primary_node, *secondary_nodes(cfg, inst)]
             if u in cfg.nodes]
    return model.Instance(
        name=inst.name, nodes=tuple(names), memory=int(be[c.BE_MAXMEM]),
        vcpus=int(be[c.BE_VCPUS]), spindle_use=int(be[c.BE_SPINDLE_USE]),
        disk_template=disk_template(cfg, inst) or c.DT_DISKLESS,
        disks=tuple(model.Disk(size=d.size, mode=d.mode, dev_type=d.dev_type,
                               spindles=d.spindles) for d in disks),
        nics=tuple(nics), admin_state=inst.admin_state, disks_active=inst.disks_active,
        os=inst.os, hypervisor=inst.hypervisor, tags=tuple(inst.tags),
        forthcoming=bool(inst.forthcoming))


def build_cluster(cfg: ConfigData, live: Mapping[str, LiveNode | None],
                  running: Mapping[str, Mapping[str, int]], template: str | None = None
                  ) -> model.Cluster:
    """The model of ``cfg``.

    ``live`` holds each online vm_capable node's figures by node UUID (a missing or
    None entry for such a node fails, as Ganeti's "Can't get data for node");
    ``running`` the memory of the instances each node runs, by node UUID and instance
    name; ``template`` is the disk template whose storage the nodes report (the
    request's; default the cluster's first enabled one)."""
    cluster = cfg.cluster
    template = template or default_template(cfg)
    be_base, nic_base = fill_be(cluster, {}), fill_nic(cluster, {})
    # by name, not in the config's (UUID) order: the same cluster always gives the same
    # input, so an allocator's ties (broken by input order, as hail's) fall the same way
    instances = {i.name: _instance(cfg, i, be_base, nic_base)
                 for i in sorted(cfg.instances.values(), key=lambda i: i.name)}
    by_primary: dict[str, list[Instance]] = {}
    for inst in cfg.instances.values():
        by_primary.setdefault(inst.primary_node, []).append(inst)
    nodes: dict[str, model.Node] = {}
    for uuid, node in sorted(cfg.nodes.items(), key=lambda item: item[1].name):
        group = cfg.nodegroups.get(node.group)
        resources = None
        if node.vm_capable and not node.offline:
            figures = live.get(uuid)
            if figures is None:
                raise OpExecError(f"Can't get data for node {node.name}")
            mem_free, pri_mem, pri_up_mem = figures.memory_free, 0, 0
            node_running = running.get(uuid, {})
            for inst in by_primary.get(uuid, ()):
                maxmem = instances[inst.name].memory
                pri_mem += maxmem
                if inst.admin_state == c.ADMINST_UP and not inst.forthcoming:
                    # what a running instance may still grow into is not free
                    mem_free -= max(0, maxmem - int(node_running.get(inst.name, 0)))
                    pri_up_mem += maxmem
            total_disk, free_disk, total_sp, free_sp = _storage(node.name, figures, template)
            resources = model.NodeResources(
                total_memory=figures.memory_total, reserved_memory=figures.memory_dom0,
                free_memory=mem_free, total_disk=total_disk, free_disk=free_disk,
                total_spindles=total_sp, free_spindles=free_sp, total_cpus=figures.cpu_total,
                reserved_cpus=figures.cpu_dom0, i_pri_memory=pri_mem,
                i_pri_up_memory=pri_up_mem)
        nodes[node.name] = model.Node(
            name=node.name, group=node.group, primary_ip=node.primary_ip,
            secondary_ip=node.secondary_ip or node.primary_ip, resources=resources,
            offline=node.offline, drained=node.drained,
            master_candidate=node.master_candidate, master_capable=node.master_capable,
            vm_capable=node.vm_capable, tags=tuple(node.tags),
            ndparams=fill_nd(cluster, group, node))
    return model.Cluster(
        name=cluster.cluster_name, ipolicy=ipolicy_from_wire(fill_ipolicy(cluster)),
        groups={u: _group(cfg, g) for u, g in cfg.nodegroups.items()}, nodes=nodes,
        instances=instances, tags=tuple(cluster.tags),
        enabled_hypervisors=tuple(cluster.enabled_hypervisors))


def relocate_request(cfg: ConfigData, inst: Instance, relocate_from: list[str]) -> Relocate:
    """A relocate request for a mirrored instance, off the nodes (UUIDs) ``relocate_from``
    (Ganeti's checks and figures)."""
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    if not all(d.dev_type in model.MIRRORED for d in disks):  # (diskless passes, as Ganeti)
        raise OpPrereqError("Can't relocate non-mirrored instances", ECODE_INVAL)
    if any(d.dev_type in model.INTERNALLY_MIRRORED for d in disks) and \
            len(secondary_nodes(cfg, inst)) != 1:
        raise OpPrereqError("Instance has not exactly one secondary node", ECODE_STATE)
    return Relocate(name=inst.name, relocate_from=tuple(cfg.nodes[u].name
                                                        for u in relocate_from),
                    disk_space_total=model.disk_space((d.dev_type, d.size) for d in disks))


def default_template(cfg: ConfigData) -> str:
    """The template whose storage an input reports when its request names none (node
    evacuation, change-group, multi-allocation): the cluster's first enabled one, as
    Ganeti."""
    return (cfg.cluster.enabled_disk_templates or [c.DT_DISKLESS])[0]


def request_template(cfg: ConfigData, request: AnyRequest) -> str:
    """The disk template whose storage the input reports: the request's, the
    relocated instance's, else :func:`default_template`."""
    wire = request.to_wire()
    template: str | None = wire.get("disk_template")
    if template is None and wire["type"] == MODE_RELOC:
        inst = cfg.instance_by_name(wire["name"])
        template = disk_template(cfg, inst) if inst is not None else None
    return template or default_template(cfg)


def build_input(cfg: ConfigData, request: AnyRequest, live: Mapping[str, LiveNode | None],
                running: Mapping[str, Mapping[str, int]] | None = None) -> AllocatorInput:
    """The whole input of ``request`` on the cluster of ``cfg``."""
    cluster = build_cluster(cfg, live, running or {}, request_template(cfg, request))
    return AllocatorInput(cluster, request)


__all__ = ["LVM_TEMPLATES", "REPORTED_STORAGE", "LiveNode", "build_cluster", "build_input",
           "default_template", "relocate_request", "request_template"]
