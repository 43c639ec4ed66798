"""OP_INSTANCE_CREATE with an instance allocator: the locks, the request, the choice.

Locks (Ganeti's opportunistic locking, here the rule for every allocator
create): the node and node-resource levels ask for every node but take only
those free at once, so a create never waits for the nodes another job holds;
the allocator sees only the nodes held at both levels (``restrict-to-nodes``)
and the unit keeps just the chosen nodes' locks, so what it chose stays
reserved for the job.  When the allocator finds nothing while some nodes were
skipped as busy, the unit fails with ``ECODE_TEMP_NORES`` and the processor runs
it once more waiting for every node lock (Ganeti's PrepareRetry, "* falling back
to full lock allocation").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_NORES, ECODE_TEMP_NORES, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.placement.model import Disk
from ganeti.core.placement.requests import Allocate
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_INSTANCE, LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.query.instancequeries import disk_template

if TYPE_CHECKING:
    from ganeti.master.lu.instance_create import LUInstanceCreate


def expand_for_allocator(lu: LUInstanceCreate, cfg: ConfigData) -> None:
    """Every node, taken opportunistically; the nodes are chosen later."""
    lu.pnode = None  # type: ignore[assignment]  # chosen in before_prereq
    lu.snode = None
    lu.add_locks[LEVEL_INSTANCE] = [lu.name]
    lu.needed_locks[LEVEL_NODE] = sorted(cfg.nodes)
    lu.needed_locks[LEVEL_NODE_RES] = sorted(cfg.nodes)
    lu.opportunistic_locks[LEVEL_NODE] = lu.opportunistic_allowed
    lu.opportunistic_locks[LEVEL_NODE_RES] = lu.opportunistic_allowed


def declare_allocator_locks(lu: LUInstanceCreate, level: int) -> None:
    """The node resources of the nodes whose node lock was free (Ganeti's)."""
    if level == LEVEL_NODE_RES:
        lu.needed_locks[LEVEL_NODE_RES] = sorted(lu.owned_locks(LEVEL_NODE))


def nic_dicts(nics: list[Any]) -> list[dict[str, Any]]:
    """The NICs as the request shows them (Ganeti's ``NIC.ToDict``)."""
    out = []
    for nic in nics:
        entry = {"mac": nic.mac, "ip": nic.ip, "nicparams": dict(nic.nicparams)}
        if nic.network:
            entry["network"] = nic.network
        if nic.name:
            entry["name"] = nic.name
        out.append(entry)
    return out


def allocate_request(lu: LUInstanceCreate, candidates: list[str] | None) -> Allocate:
    """Ganeti's CreateInstanceAllocRequest from the checked opcode."""
    be = lu.be_full
    return Allocate(
        name=lu.name, memory=int(be[c.BE_MAXMEM]), vcpus=int(be[c.BE_VCPUS]),
        disk_template=lu.template,
        disks=tuple(Disk(size=int(d.get("size", 0)), mode=d.get("mode", "rw"),
                         spindles=d.get("spindles")) for d in lu.disk_specs),
        nics=tuple(nic_dicts(lu.nics)), os=lu.op.os_type or "", hypervisor=lu.hypervisor,
        tags=tuple(lu.op.tags), spindle_use=int(be.get(c.BE_SPINDLE_USE, 1)),
        group_name=lu.op.group_name, restrict_to_nodes=None if candidates is None
        else tuple(candidates))


async def choose_nodes(lu: LUInstanceCreate) -> None:
    """Run the allocator(s) on the nodes held, take its nodes, release the others."""
    cfg = lu.ctx.config.config
    held = lu.owned_locks(LEVEL_NODE) & lu.owned_locks(LEVEL_NODE_RES)
    candidates = sorted(cfg.nodes[u].name for u in held if u in cfg.nodes)
    skipped = len(cfg.nodes) - len(candidates)
    request = allocate_request(lu, candidates if skipped else None)
    ialloc = await iajobs.build_input(lu, request)
    name, answer = await iajobs.run(lu, lu.allocators, ialloc)
    shown = ",".join(lu.allocators)
    if not answer.success:
        if skipped:
            lu.ctx.feedback("message", f" - INFO: IAllocator '{shown}' failed on "
                                       f"opportunistically acquired nodes: {answer.info}")
        raise OpPrereqError(f"Can't compute nodes using iallocator '{shown}': {answer.info}",
                            ECODE_TEMP_NORES if skipped else ECODE_NORES)
    chosen: list[Node] = [n for n in map(cfg.node_by_name, answer.result) if n is not None]
    if skipped:
        busy = [n.name for n in chosen if n.uuid not in held]
        if busy:
            raise OpPrereqError(f"Can't compute nodes using iallocator '{name}': it chose "
                                f"node(s) not locked by this job: {', '.join(busy)}",
                                ECODE_NORES)
    lu.pnode = chosen[0]
    lu.snode = chosen[1] if len(chosen) > 1 else None
    lu.record_op(pnode=lu.pnode.name, pnode_uuid=lu.pnode.uuid, iallocator=name,
                 **({"snode": lu.snode.name, "snode_uuid": lu.snode.uuid}
                    if lu.snode is not None else {}))
    lu.ctx.feedback("message", f" - INFO: Selected nodes for instance {lu.name} via "
                               f"iallocator {name}: {', '.join(n.name for n in chosen)}")
    keep = [n.uuid for n in chosen] + ([lu.src_node_uuid] if lu.src_node_uuid else [])
    lu.release_locks(LEVEL_NODE, keep=keep)
    lu.release_locks(LEVEL_NODE_RES, keep=keep)


async def recreate_nodes(lu: Any) -> list[str]:
    """OP_INSTANCE_RECREATE_DISKS with an allocator (Ganeti's): an allocate request for
    the instance as it is (its disks, memory, vCPUs, OS, tags, one default NIC), run;
    the chosen nodes' UUIDs, as many as the instance has."""
    cfg = lu.ctx.config.config
    inst = lu.instance
    be = params_fill.fill_instance_be(cfg.cluster, inst)
    template = disk_template(cfg, inst) or c.DT_DISKLESS
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    request = Allocate(
        name=inst.name, memory=int(be[c.BE_MAXMEM]), vcpus=int(be[c.BE_VCPUS]),
        disk_template=template,
        disks=tuple(Disk(size=d.size, mode=d.mode, spindles=d.spindles) for d in disks),
        nics=({},), os=inst.os or "", hypervisor=inst.hypervisor, tags=tuple(inst.tags),
        spindle_use=int(be.get(c.BE_SPINDLE_USE, 1)))
    ialloc = await iajobs.build_input(lu, request)
    name, answer = await iajobs.run(lu, lu.allocators, ialloc)
    if not answer.success:
        raise OpPrereqError(f"Can't compute nodes using iallocator "
                            f"'{','.join(lu.allocators)}': {answer.info}", ECODE_NORES)
    chosen = [n for n in map(cfg.node_by_name, answer.result) if n is not None]
    names = [n.name for n in chosen]
    lu.record_op(node_uuids=[n.uuid for n in chosen], nodes=names, iallocator=name)
    lu.ctx.feedback("message", f" - INFO: Selected nodes for instance {inst.name} via "
                               f"iallocator {name}: {', '.join(names)}")
    return [n.uuid for n in chosen]


__all__ = ["allocate_request", "recreate_nodes", "choose_nodes", "declare_allocator_locks",
           "expand_for_allocator", "nic_dicts"]
