"""The mirrored (``drbd``) template on the master: its disks' layout, their creation on
both nodes, the wait for their sync and the checks of their status (Ganeti's
``_GenerateDRBD8Branch``, ``CreateDisks``, ``WaitForSync``, ``ComputeDiskSizePerVG``).

A drbd disk (Ganeti 3.0's shape): ``logical_id [pnode, snode, port, pminor, sminor,
secret]``, ``nodes [pnode, snode]``, two plain children: the data volume
``<u>.disk<N>_data`` (the disk's size, in the disk's ``vg`` or the cluster's) and the
metadata volume ``<u>.disk<N>_meta`` (:data:`~ganeti.core.constants.DRBD_META_SIZE`
MiB, in the disk's ``metavg`` or the drbd ``metavg`` disk parameter).  Port, minors,
secret and volume names are reserved for the job until it ends (a failed job gives
them back); the LU records the port in its config change (:func:`commit_ports`).

On each node of the disk the children are created first, then the drbd device
(opened on the primary), as Ganeti's ``_CreateBlockDevInner`` does (a drbd device is
created on secondaries too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.core import constants, diskparams, params_fill, storagetypes
from ganeti.core.errors import (
    ECODE_NORES,
    ECODE_STATE,
    OpExecError,
    OpPrereqError,
    RemoteError,
    ReservationError,
)
from ganeti.core.objects import ConfigData, Disk, Instance, Node
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.core.textutil import format_seconds
from ganeti.master.config import nodes as nodesmod
from ganeti.master.config.reservations import as_prereq, commit_port
from ganeti.master.lu.base import LogicalUnit

#: Templates whose disks live on two nodes (Ganeti's DTS_INT_MIRROR).
DTS_INT_MIRROR = frozenset({constants.DT_DRBD8})
#: How often a node that does not answer is asked again for its mirrors' status,
#: and how long to wait between (Ganeti's WaitForSync: 10 times, 6 s).
_RPC_RETRIES = 10
_RPC_RETRY_WAIT = 6.0
#: Degraded but not syncing: asked again this many times, one second apart, so a
#: transient state (a connection being made) is not taken for a broken mirror.
_DEGRADED_RETRIES = 10


def info(lu: LogicalUnit, text: str) -> None:
    """A job-log line as Ganeti's ``LogInfo``."""
    lu.ctx.feedback("message", f" - INFO: {text}")


def warning(lu: LogicalUnit, text: str) -> None:
    """A job-log line as Ganeti's ``LogWarning``."""
    lu.ctx.feedback("message", f" - WARNING: {text}")


async def _sleep(lu: LogicalUnit, seconds: float) -> None:
    from twisted.internet import task
    await task.deferLater(lu.ctx.clock, seconds, lambda: None)


# -- generate --------------------------------------------------------------------------

def default_metavg(cfg: ConfigData, primary_uuid: str) -> str:
    """The drbd ``metavg`` disk parameter of the primary's group (Ganeti's
    ``ComputeLDParams(...)[0]["default-metavg"]``)."""
    node = cfg.nodes.get(primary_uuid)
    group = cfg.nodegroups.get(node.group) if node is not None and node.group else None
    dt_params = params_fill.fill_disk_params(cfg.cluster, group)
    return str(diskparams.compute_ld_params(constants.DT_DRBD8, dt_params)[0]
               ["default-metavg"])


def generate_drbd_disks(lu: LogicalUnit, cfg: ConfigData, primary_uuid: str,
                        secondary_uuid: str, disk_specs: Sequence[Mapping[str, Any]],
                        base_index: int = 0) -> list[Disk]:
    """New drbd disks for ``disk_specs`` (size, mode, name, vg, metavg) between the
    two nodes, with port, minors, secret and volume names reserved for the job."""
    if primary_uuid == secondary_uuid:
        raise OpPrereqError("The secondary node cannot be the primary node", ECODE_STATE)
    vg_default = cfg.cluster.volume_group_name
    meta_default = default_metavg(cfg, primary_uuid)
    owner, res = lu.ctx.owner, lu.ctx.reservations
    now = lu.ctx.clock.seconds()
    nodes = [primary_uuid, secondary_uuid]
    disks: list[Disk] = []
    for idx, spec in enumerate(disk_specs):
        index = base_index + idx
        data_vg = str(spec.get("vg") or vg_default or "")
        meta_vg = str(spec.get("metavg") or meta_default or data_vg)
        if not data_vg:
            raise OpPrereqError("Cluster has no volume group set; drbd disks need one",
                                ECODE_STATE)
        size = int(spec.get("size") or 0)
        try:
            data = res.generate_lv_names(owner, cfg, data_vg, [f".disk{index}_data"])[0]
            meta = data[:-len("_data")] + "_meta"
            res.reserve_lv(owner, cfg, f"{meta_vg}/{meta}")
            port = res.allocate_port(owner, cfg)
            minors = res.allocate_drbd_minors(owner, cfg, nodes)
            secret = res.generate_drbd_secret(owner, cfg)
        except ReservationError as err:
            raise as_prereq(err, f"Cannot reserve the resources of drbd disk {index}: "
                                 f"{err}", ECODE_NORES) from None

        def child(vg: str, name: str, child_size: int) -> Disk:
            return Disk(uuid=_new_uuid(), dev_type=constants.DT_PLAIN, logical_id=[vg, name],
                        size=child_size, nodes=list(nodes), params={}, serial_no=1,
                        ctime=now, mtime=now)
        disks.append(Disk(
            uuid=_new_uuid(), dev_type=constants.DT_DRBD8,
            logical_id=[primary_uuid, secondary_uuid, port, minors[0], minors[1], secret],
            children=[child(data_vg, data, size),
                      child(meta_vg, meta, constants.DRBD_META_SIZE)],
            nodes=list(nodes), iv_name=f"disk/{index}", size=size,
            mode=str(spec.get("mode") or constants.DISK_RDWR), params={},
            name=spec.get("name") or None, serial_no=1, ctime=now, mtime=now))
    return disks


def _new_uuid() -> str:
    import uuid as uuidmod
    return str(uuidmod.uuid4())


def commit_ports(cfg: ConfigData, disks: Sequence[Disk]) -> None:
    """Record the ports of new drbd disks in the cluster (in a config change)."""
    for disk in disks:
        if disk.dev_type == constants.DT_DRBD8 and disk.logical_id:
            commit_port(cfg.cluster, int(disk.logical_id[2]))


def size_per_vg(template: str, disk_specs: Sequence[Mapping[str, Any]],
                default_vg: str | None) -> dict[str, int]:
    """MiB each volume group needs for the disks (Ganeti's ``ComputeDiskSizePerVG``):
    the sizes, plus the metadata volume of each drbd disk (counted in its data vg)."""
    if template not in (constants.DT_PLAIN, constants.DT_DRBD8):
        return {}
    extra = constants.DRBD_META_SIZE if template == constants.DT_DRBD8 else 0
    out: dict[str, int] = {}
    for spec in disk_specs:
        vg = str(spec.get("vg") or default_vg or "")
        out[vg] = out.get(vg, 0) + int(spec.get("size") or 0) + extra
    return out


# -- create ----------------------------------------------------------------------------

async def create_on_node(lu: LogicalUnit, cfg: ConfigData, instance: Instance, disk: Disk,
                         node: Node, on_primary: bool, excl: bool, text: str
                         ) -> list[tuple[Node, Any]]:
    """Create a drbd disk's tree on one node: its children, then the device itself
    (Ganeti's ``_CreateBlockDevInner``).  What was created, for an undo: the device
    once it exists, else the children made so far (their wire dicts)."""
    wire = diskparams.disk_wire_dicts(cfg, instance, [disk], node.uuid)[0]
    created: list[tuple[Node, Any]] = []
    try:
        for child, child_wire in zip(disk.children, wire.get("children") or [],
                                     strict=False):
            result = await lu.ctx.rpc().call_one(node, "blockdev_create", [
                child_wire, child.size, instance.name, on_primary, text, excl])
            _raise_create(result, child, node, instance)
            created.append((node, child_wire))
        result = await lu.ctx.rpc().call_one(node, "blockdev_create", [
            DiskArg(disk, instance), disk.size, instance.name, on_primary, text, excl])
        _raise_create(result, disk, node, instance)
    except OpExecError as err:
        err.created = created  # type: ignore[attr-defined]
        raise
    return [(node, DiskArg(disk, instance))]


def _raise_create(result: Any, disk: Disk, node: Node, instance: Instance) -> None:
    if not result.success:
        what = disk.iv_name or f"{disk.dev_type}:{'/'.join(map(str, disk.logical_id or []))}"
        raise OpExecError(f"Can't create block device {what} on node {node.name} for "
                          f"instance {instance.name}: {result.fail_msg}")


# -- wait for sync ---------------------------------------------------------------------

async def wait_for_sync(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                        disks: Sequence[Disk] | None = None, oneshot: bool = False) -> bool:
    """Poll the primary until the instance's mirrored disks are in sync (Ganeti's
    ``WaitForSync``); whether none is left degraded.  ``oneshot``: one look (and a
    few more while degraded without syncing)."""
    all_disks = [cfg.disks[u] for u in instance.disks if u in cfg.disks]
    if not all_disks or (disks is not None and not disks):
        return True
    wanted = [d for d in (all_disks if disks is None else disks)
              if d.dev_type in DTS_INT_MIRROR]
    if not oneshot:
        info(lu, f"Waiting for instance {instance.name} to sync disks")
    node = cfg.nodes.get(instance.primary_node)
    if node is None:
        raise OpExecError(f"Primary node {instance.primary_node} of {instance.name} "
                          "is not in the configuration")
    retries = 0
    degraded_retries = _DEGRADED_RETRIES
    while True:
        done = True
        degraded = False
        max_time = 0.0
        result = await lu.ctx.rpc().call_one(
            node, "blockdev_getmirrorstatus", [[DiskArg(d, instance) for d in wanted]])
        if not result.success:
            warning(lu, f"Can't get any data from node {node.name}: {result.fail_msg}")
            retries += 1
            if retries >= _RPC_RETRIES:
                raise RemoteError(f"Can't contact node {node.name} for mirror data, "
                                  "aborting.")
            await _sleep(lu, _RPC_RETRY_WAIT)
            continue
        retries = 0
        for disk, status in zip(wanted, list(result.payload or []), strict=False):
            if not isinstance(status, dict):
                warning(lu, f"Can't compute data for node {node.name}/{disk.iv_name}")
                continue
            percent = status.get("sync_percent")
            degraded = degraded or (bool(status.get("is_degraded")) and percent is None)
            if percent is not None:
                done = False
                eta = status.get("estimated_time")
                if eta is not None:
                    remaining = f"{format_seconds(eta)} remaining (estimated)"
                    max_time = float(eta)
                else:
                    remaining = "no time estimate"
                    max_time = 5.0
                info(lu, f"- device {disk.iv_name}: {float(percent):5.2f}% done, "
                         f"{remaining}")
        if (done or oneshot) and degraded and degraded_retries > 0:
            degraded_retries -= 1
            await _sleep(lu, 1.0)
            continue
        if done or oneshot:
            break
        await _sleep(lu, min(60.0, max(max_time, 1.0)))
    if done:
        info(lu, f"Instance {instance.name}'s disks are in sync")
    return not degraded


# -- status ----------------------------------------------------------------------------

def status_tuple(status: Any) -> list[Any] | None:
    """A ``blockdev_find`` answer as OP_INSTANCE_QUERY_DATA's 7-tuple (path, major,
    minor, sync percent, estimated time, degraded, local disk status)."""
    if not isinstance(status, dict):
        return None
    return [status.get("dev_path"), status.get("major"), status.get("minor"),
            status.get("sync_percent"), status.get("estimated_time"),
            bool(status.get("is_degraded")),
            status.get("ldisk_status", storagetypes.LDS_UNKNOWN)]


async def find_status(lu: LogicalUnit, node: Node | None, wire: Any) -> list[Any] | None:
    """A device's status on a node as a 7-tuple; None for an offline node or a
    device that does not exist (``OpExecError`` if the node fails)."""
    if node is None or node.offline:
        return None
    result = await lu.ctx.rpc().call_one(node, "blockdev_find", [wire])
    if result.offline:
        return None
    result.raise_if_failed("Can't compute disk status")
    return status_tuple(result.payload)


def drbd_info(cfg: ConfigData, instance: Instance, disk: Disk) -> dict[str, Any] | None:
    """OP_INSTANCE_QUERY_DATA's ``drbd_info`` of a drbd disk (the primary's end first)."""
    lid = disk.logical_id or []
    if disk.dev_type != constants.DT_DRBD8 or len(lid) != 6:
        return None
    if lid[0] == instance.primary_node:
        snode, pminor, sminor = lid[1], lid[3], lid[4]
    else:
        snode, pminor, sminor = lid[0], lid[4], lid[3]

    def name(uuid: str) -> str:
        node = cfg.nodes.get(uuid)
        return node.name if node is not None else uuid
    return {"primary_node": name(instance.primary_node), "primary_minor": pminor,
            "secondary_node": name(snode), "secondary_minor": sminor, "port": lid[2]}


async def disk_status_tree(lu: LogicalUnit, cfg: ConfigData, instance: Instance,
                           disk: Disk, static: bool) -> dict[str, Any]:
    """A disk for OP_INSTANCE_QUERY_DATA with its status on the primary and (drbd) on
    the secondary, its children likewise (Ganeti's ``_ComputeDiskStatus``)."""
    pnode = cfg.nodes.get(instance.primary_node)
    snode_uuid = None
    if disk.dev_type == constants.DT_DRBD8 and disk.logical_id:
        lid = disk.logical_id
        snode_uuid = lid[1] if lid[0] == instance.primary_node else lid[0]
    snode = cfg.nodes.get(snode_uuid) if snode_uuid else None

    async def walk(dev: Disk, pwire: Any, swire: Any) -> dict[str, Any]:
        logical_id = list(dev.logical_id or [])
        if dev.dev_type == constants.DT_DRBD8 and logical_id:
            logical_id[-1] = None  # the secret is not shown
        entry: dict[str, Any] = {
            "iv_name": dev.iv_name, "dev_type": dev.dev_type, "logical_id": logical_id,
            "drbd_info": drbd_info(cfg, instance, dev),
            "pstatus": None if static else await find_status(lu, pnode, pwire),
            "sstatus": (None if static or snode is None
                        else await find_status(lu, snode, swire)),
            "children": [], "mode": dev.mode, "size": dev.size, "spindles": dev.spindles,
            "name": dev.name, "uuid": dev.uuid}
        pchildren = (pwire.get("children") or []) if isinstance(pwire, dict) else []
        schildren = (swire.get("children") or []) if isinstance(swire, dict) else []
        for i, child in enumerate(dev.children):
            entry["children"].append(await walk(
                child, pchildren[i] if i < len(pchildren) else None,
                schildren[i] if i < len(schildren) else None))
        return entry

    pwire = (diskparams.disk_wire_dicts(cfg, instance, [disk], pnode.uuid)[0]
             if pnode is not None and not static else None)
    swire = (diskparams.disk_wire_dicts(cfg, instance, [disk], snode.uuid)[0]
             if snode is not None and not static else None)
    return await walk(disk, pwire, swire)


async def degraded_disks(lu: LogicalUnit, cfg: ConfigData, instance: Instance
                         ) -> list[tuple[bool, str]]:
    """cluster verify's findings on an instance whose disks are active (Ganeti's
    ``_VerifyInstance``): ``(is_error, text)`` for each drbd disk that cannot be looked
    at or is degraded on one of its online nodes (``blockdev_getmirrorstatus_multi``,
    one call per node, the status merged with the volumes'); degraded with a good
    local disk (resyncing, or only the peer missing) is a warning."""
    if not instance.disks_active:
        return []
    by_node: dict[str, list[tuple[int, Disk]]] = {}
    for idx, uuid in enumerate(instance.disks):
        disk = cfg.disks.get(uuid)
        if disk is None or disk.dev_type != constants.DT_DRBD8:
            continue
        for node_uuid in disk.nodes:
            node = cfg.nodes.get(node_uuid)
            if node is not None and not node.offline:
                by_node.setdefault(node_uuid, []).append((idx, disk))
    if not by_node:
        return []
    nodes = sorted((cfg.nodes[u] for u in by_node), key=lambda n: n.name)
    results = await lu.ctx.rpc().call(
        [nodesmod.target(n) for n in nodes], "blockdev_getmirrorstatus_multi",
        [{u: [DiskArg(d, instance) for _, d in pairs] for u, pairs in by_node.items()}])
    out: list[tuple[bool, str]] = []
    for node in nodes:
        pairs = by_node[node.uuid]
        result = results.get(node.name)
        if result is None or not result.success:
            reason = result.fail_msg if result is not None else "no answer"
            entries: list[Any] = [[False, reason]] * len(pairs)
        else:
            entries = list(result.payload or [])
            entries += [[False, "Invalid result from the remote node"]] * (
                len(pairs) - len(entries))
        for (idx, _disk), (ok, status) in zip(pairs, entries, strict=False):
            if not ok or not isinstance(status, dict):
                out.append((True, f"couldn't retrieve status for disk/{idx} on "
                                  f"{node.name}: {status}"))
            elif status.get("is_degraded"):
                ldisk = status.get("ldisk_status", storagetypes.LDS_UNKNOWN)
                out.append((ldisk not in (storagetypes.LDS_OKAY, storagetypes.LDS_SYNC),
                            f"disk/{idx} on {node.name} is degraded; local disk state "
                            f"is '{storagetypes.LDS_NAMES.get(ldisk, ldisk)}'"))
    return out


async def needs_activation(lu: LogicalUnit, cfg: ConfigData, instances: Sequence[Instance],
                           node_errors: dict[str, str]) -> set[str]:
    """Names of the instances whose drbd disks a node reports as needing an activation
    (Ganeti's ``_VerifyDrbdStates``): only instances whose disks are active; a node
    that cannot answer is noted in ``node_errors``."""
    by_node: dict[str, list[Instance]] = {}
    for inst in instances:
        disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
        if not inst.disks_active or not any(d.dev_type == constants.DT_DRBD8
                                            for d in disks):
            continue
        nodes = [inst.primary_node] + [n for d in disks for n in d.nodes
                                       if n != inst.primary_node]
        for node_uuid in dict.fromkeys(nodes):
            by_node.setdefault(node_uuid, []).append(inst)
    names: set[str] = set()
    for node_uuid, insts in sorted(by_node.items()):
        node = cfg.nodes.get(node_uuid)
        if node is None or node.offline:
            continue
        args = [DiskArg(cfg.disks[u], inst) for inst in insts for u in inst.disks
                if u in cfg.disks and cfg.disks[u].dev_type == constants.DT_DRBD8]
        result = await lu.ctx.rpc().call_one(node, "drbd_needs_activation", [args])
        if not result.success:
            node_errors[node_uuid] = result.fail_msg or "failed"
            continue
        faulty = set(result.payload or [])
        names.update(inst.name for inst in insts if faulty & set(inst.disks))
    return names
