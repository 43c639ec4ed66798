"""Forthcoming instances (seed 004): reservations that hold capacity in the config.

A reservation is an ordinary entry of the config's ``instances`` with
``forthcoming: true`` (its disks too), administratively down, on nodes chosen
when it was made (the allocator's or the user's, checked by the built-in
allocator's rules, which count every other reservation as real).  Nothing
exists on a node: making, renaming, modifying and removing a reservation only
change the config.  Made without a name, its UUID names it until it is renamed.

``OP_INSTANCE_CREATE`` with ``commit`` turns a reservation into a real instance
on its nodes: the reservation supplies every parameter the opcode leaves out,
the usual checks then run (a missing OS or disk fails with Ganeti's error and
the reservation stays), and a failure after the config changed puts the
reservation back as it was.

This module holds what :mod:`.instance_create` and the other instance units
call for reservations; node memory checks count them
(:func:`ganeti.master.lu.instance_common.check_node_free_memory`).
"""

from __future__ import annotations

import dataclasses
import uuid as uuidmod
from typing import TYPE_CHECKING, Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import ECODE_INVAL, ECODE_NORES, ECODE_STATE, OpPrereqError
from ganeti.core.objects import ConfigData, Disk, Instance
from ganeti.core.placement.model import Disk as PDisk
from ganeti.core.placement.requests import Allocate
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_placement as placement
from ganeti.master.query.instancequeries import disk_template

if TYPE_CHECKING:
    from ganeti.master.lu.instance_create import LUInstanceCreate

_CREATE = "create"
#: Ganeti's refusal of an operation on a forthcoming instance (no error code, as Ganeti)
NOT_SUPPORTED = "forthcoming instances not supported for this operation"


def is_forthcoming(inst: Instance | None) -> bool:
    return bool(inst is not None and inst.forthcoming)


def refuse(inst: Instance) -> None:
    """Ganeti's refusal for the units that do not handle reservations."""
    if inst.forthcoming:
        raise OpPrereqError(NOT_SUPPORTED)


# --- OP_INSTANCE_CREATE -------------------------------------------------------------

def _disk_spec(disk: Disk) -> dict[str, Any]:
    spec: dict[str, Any] = {"size": disk.size, "mode": disk.mode}
    if disk.name:
        spec["name"] = disk.name
    if disk.spindles is not None:
        spec["spindles"] = disk.spindles
    return spec


def prepare(lu: LUInstanceCreate) -> Any:
    """The opcode the unit works on: Ganeti's mutual exclusion checked; for a
    reservation the create's defaults (its UUID as its name, no disks, one default
    NIC, no start, no name or IP check: nothing outside the config is asked); for a
    commit every parameter the opcode leaves out taken from the reservation, which
    must exist."""
    op = lu.op
    lu.forthcoming, lu.commit = bool(op.forthcoming), bool(op.commit)
    lu.reservation = None
    lu.new_uuid = str(uuidmod.uuid4())
    if lu.forthcoming and lu.commit:
        raise OpPrereqError("Forthcoming generation and commiting are mutually exclusive",
                            ECODE_INVAL)
    if (lu.forthcoming or lu.commit) and op.mode not in (None, _CREATE):
        raise OpPrereqError("forthcoming instances can only be created, not imported",
                            ECODE_INVAL)
    if lu.forthcoming:
        # without disks and a template, a reservation holds no disk: diskless (the
        # cluster's first template would want a disk its policy counts)
        enabled = lu.ctx.config.config.cluster.enabled_disk_templates
        template = op.disk_template or (c.DT_DISKLESS if not op.disks
                                        and c.DT_DISKLESS in enabled else None)
        return dataclasses.replace(
            op, instance_name=op.instance_name or lu.new_uuid, mode=_CREATE,
            disk_template=template,
            disks=list(op.disks or []),
            nics=list(op.nics) if op.nics is not None else [{}],  # gnt-instance add's one NIC
            name_check=False,
            ip_check=False, start=False)
    if not lu.commit:
        return op
    cfg = lu.ctx.config.config
    try:
        inst = ic.find_instance(cfg, str(op.instance_name))
    except OpPrereqError:  # Ganeti's words for a commit of an unknown name
        raise OpPrereqError(f"Instance {op.instance_name} unknown", ECODE_INVAL) from None
    if not inst.forthcoming:
        raise OpPrereqError(f"Instance {inst.name} (with uuid {inst.uuid}) not forthcoming "
                            "but --commit was passed.", ECODE_STATE)
    if inst.name == inst.uuid:
        raise OpPrereqError(f"The forthcoming instance {inst.uuid} has no name yet: rename "
                            "it before committing it", ECODE_INVAL)
    template = disk_template(cfg, inst) or c.DT_DISKLESS
    if op.disk_template and op.disk_template != template and inst.disks:
        raise OpPrereqError(f"Forthcoming instance {inst.name} is reserved with disk "
                            f"template {template}, not {op.disk_template}", ECODE_INVAL)
    if op.hypervisor and op.hypervisor != inst.hypervisor:
        raise OpPrereqError(f"Forthcoming instance {inst.name} is reserved for hypervisor "
                            f"{inst.hypervisor}, not {op.hypervisor}", ECODE_INVAL)
    secondaries = [u for u in nodesmod.instance_nodes(cfg, inst) if u != inst.primary_node]
    lu.ctx.feedback("message", f" - INFO: Nodes of instance {inst.name}: "
                               f"{[cfg.nodes[u].name for u in [inst.primary_node, *secondaries]]}")
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    given = list(op.disks or [])
    if disks and given and [d.get("size") for d in given] != [d.size for d in disks]:
        # Ganeti's: the reservation's disks are made, whatever the commit says
        lu.ctx.feedback("message", f" - WARNING: the disks given are ignored: instance "
                                   f"{inst.name} is committed with its reserved disks of "
                                   f"{', '.join(str(d.size) for d in disks)} MiB")
    lu.reservation = inst.clone()
    lu.keep_nics = op.nics is None  # the reservation's NICs (MACs, IPs) as they are
    lu.reserved_disks = tuple(d.clone() for d in disks)
    lu.new_uuid = inst.uuid
    return dataclasses.replace(
        op, instance_name=inst.name, mode=_CREATE,
        disk_template=op.disk_template or (template if disks or template == c.DT_DISKLESS
                                           else None),
        disks=[_disk_spec(d) for d in disks] if disks else list(given),
        nics=list(op.nics or []),
        os_type=op.os_type or inst.os or None, hypervisor=inst.hypervisor,
        beparams={**inst.beparams, **op.beparams}, hvparams={**inst.hvparams, **op.hvparams},
        osparams={**inst.osparams, **op.osparams},
        osparams_private={**inst.osparams_private, **(op.osparams_private or {})},
        tags=sorted(set(inst.tags) | set(op.tags)), iallocator=None, group_name=None,
        pnode=None, pnode_uuid=inst.primary_node, snode=None,
        snode_uuid=secondaries[0] if secondaries else None)


def check_still_reserved(lu: LUInstanceCreate) -> None:
    """Under the locks: the reservation a commit started from is unchanged (Ganeti's
    "no longer forthcoming" and "nodes changed" checks)."""
    old = lu.reservation
    if old is None:
        return
    cfg = lu.ctx.config.config
    now = cfg.instances.get(old.uuid)
    if now is None:
        raise OpPrereqError(f"Instance {old.name} disappeared from the cluster while "
                            "waiting for locks", ECODE_STATE)
    if not now.forthcoming:
        raise OpPrereqError(f"Instance {now.name} (with uuid {now.uuid}) is no longer "
                            "forthcoming", ECODE_STATE)
    if (nodesmod.instance_nodes(cfg, now) != nodesmod.instance_nodes(cfg, old)
            or now.serial_no != old.serial_no):
        raise OpPrereqError(f"Forthcoming instance {now.name} changed since locks were "
                            "acquired; retry the operation", ECODE_STATE)


async def check_fits(lu: LUInstanceCreate) -> None:
    """A reservation on the user's nodes: the built-in allocator's rules on just those
    nodes (memory, disk, vCPU ratio, policy; every reservation counted as real)."""
    wanted = [lu.pnode] + ([lu.snode] if lu.snode is not None else [])
    request = placement.allocate_request(lu, [n.name for n in wanted])
    ialloc = await iajobs.build_input(lu, request)
    _, answer = await iajobs.run(lu, [iajobs.BUILTIN], ialloc)
    if not answer.success:
        raise OpPrereqError(f"Cannot reserve instance {lu.name} on "
                            f"{', '.join(n.name for n in wanted)}: {answer.info}", ECODE_NORES)
    # a pair (drbd): the allocator answers its best order of the two; the pair fits
    if sorted(answer.result) != sorted(n.name for n in wanted):
        raise OpPrereqError(f"Cannot reserve instance {lu.name} on "
                            f"{', '.join(n.name for n in wanted)}: only "
                            f"{', '.join(answer.result)} would fit", ECODE_NORES)


def mark(inst: Instance, disks: list[Disk], forthcoming: bool) -> None:
    """Set (or clear) the forthcoming flag of an instance and its disks (children too)."""
    inst.forthcoming = True if forthcoming else None

    def flag(disk: Disk) -> None:
        disk.forthcoming = True if forthcoming else None
        for child in disk.children:
            flag(child)
    for disk in disks:
        flag(disk)


def mark_disks(disks: list[Disk]) -> None:
    """New disks of a reservation are forthcoming too."""
    for disk in disks:
        disk.forthcoming = True
        mark_disks(disk.children)


def refuse_changes(op: Any) -> None:
    """OP_INSTANCE_SET_PARAMS on a reservation: what needs a real instance is refused
    (its parameters, NICs and disks change in the config only)."""
    needs_real = [name for name, given in (
        ("offline", op.offline is not None), ("runtime_mem", op.runtime_mem is not None),
        ("disk_template", bool(op.disk_template)), ("pnode", bool(op.pnode or op.pnode_uuid)),
        ("hotplug", bool(op.hotplug))) if given]
    if needs_real:
        raise OpPrereqError(f"{NOT_SUPPORTED} (changing {', '.join(needs_real)} of a "
                            "forthcoming instance)", ECODE_STATE)


async def check_resized(lu: Any, new: Instance, disks: list[Disk]) -> None:
    """A reservation whose memory, vCPUs or disks grow must still fit where it is: the
    built-in allocator's rules on its nodes, the cluster seen without it."""
    cfg = lu.ctx.config.config
    old = cfg.instances[new.uuid]
    old_disks = [cfg.disks[u] for u in old.disks if u in cfg.disks]
    be_old = params_fill.fill_instance_be(cfg.cluster, old)
    be_new = params_fill.fill_instance_be(cfg.cluster, new)
    grows = (int(be_new[c.BE_MAXMEM]) > int(be_old[c.BE_MAXMEM])
             or int(be_new[c.BE_VCPUS]) > int(be_old[c.BE_VCPUS])
             or sum(d.size for d in disks) > sum(d.size for d in old_disks))
    if not grows:
        return
    view = cfg.view(instances={u: i for u, i in cfg.instances.items() if u != new.uuid})
    nodes = [cfg.nodes[u].name for u in nodesmod.instance_nodes(cfg, old) if u in cfg.nodes]
    primary = cfg.nodes[old.primary_node].name
    nodes = [primary] + [n for n in nodes if n != primary]
    request = Allocate(
        name=new.name, memory=int(be_new[c.BE_MAXMEM]), vcpus=int(be_new[c.BE_VCPUS]),
        disk_template=disk_template(cfg, old) or c.DT_DISKLESS,
        disks=tuple(PDisk(size=d.size, mode=d.mode, spindles=d.spindles) for d in disks),
        nics=tuple(placement.nic_dicts(new.nics)), os=new.os or "",
        hypervisor=new.hypervisor, tags=tuple(new.tags),
        spindle_use=int(be_new.get(c.BE_SPINDLE_USE, 1)), restrict_to_nodes=tuple(nodes))
    ialloc = await iajobs.build_input(lu, request, view)
    _, answer = await iajobs.run(lu, [iajobs.BUILTIN], ialloc)
    if not answer.success or list(answer.result) != nodes:
        why = answer.info if not answer.success else "it would have to move"
        raise OpPrereqError(f"Forthcoming instance {new.name} does not fit on "
                            f"{', '.join(nodes)} any more with these changes: {why}",
                            ECODE_NORES)


def result(cfg: ConfigData, inst: Instance) -> dict[str, Any]:
    """A reservation job's result: the UUID and the nodes (primary first)."""
    names = [cfg.nodes[u].name for u in nodesmod.instance_nodes(cfg, inst) if u in cfg.nodes]
    primary = cfg.nodes[inst.primary_node].name if inst.primary_node in cfg.nodes else None
    ordered = ([primary] if primary else []) + [n for n in names if n != primary]
    return {"uuid": inst.uuid, "nodes": ordered}


def replace_change(lu: LUInstanceCreate, inst: Instance, disks: list[Disk]) -> Any:
    """The config change of a commit: the reservation becomes ``inst``."""
    old = lu.reservation
    assert old is not None

    def change(cfg: ConfigData) -> None:
        current = cfg.instances.get(old.uuid)
        if current is None or not current.forthcoming:
            raise OpPrereqError(f"Instance {old.name} (with uuid {old.uuid}) is no longer "
                                "forthcoming", ECODE_STATE)
        ic.commit_nic_ips(cfg, current.nics, release=True)
        for disk in disks:
            cfg.disks[disk.uuid] = disk.clone()
        obj = inst.clone()
        obj.serial_no = current.serial_no + 1
        obj.ctime = current.ctime
        cfg.instances[old.uuid] = obj
        ic.commit_nic_ips(cfg, inst.nics)
    return change


def restore_change(lu: LUInstanceCreate) -> Any:
    """Undo a commit in the config: the reservation as it was, its disks forthcoming."""
    old = lu.reservation
    assert old is not None
    disks = list(lu.reserved_disks)

    def change(cfg: ConfigData) -> None:
        current = cfg.instances.get(old.uuid)
        if current is not None:
            ic.commit_nic_ips(cfg, current.nics, release=True)
        for disk in disks:
            cfg.disks[disk.uuid] = disk.clone()
        cfg.instances[old.uuid] = old.clone()
        ic.commit_nic_ips(cfg, old.nics)
    return change


__all__ = ["NOT_SUPPORTED", "check_fits", "check_resized", "check_still_reserved",
           "is_forthcoming", "mark", "mark_disks", "prepare", "refuse", "refuse_changes",
           "replace_change", "restore_change", "result"]
