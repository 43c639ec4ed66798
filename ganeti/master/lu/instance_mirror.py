"""The mirror's steps on the nodes, shared by migrate, failover, replace-disks and the
reconciliation (Ganeti's ``TLMigrateInstance`` disk helpers, ``CheckDiskConsistency``
and ``FindFaultyInstanceDisks``).

Each step is one node call on the instance's mirrored (``drbd``) disks with Ganeti's
progress line and error: the consistency check (``blockdev_find`` of the device, and
of its children where the node is the primary), ``blockdev_close`` /
``blockdev_open`` (the device's role), ``drbd_disconnect_net`` (standalone),
``drbd_attach_net`` (single- or dual-master), ``drbd_wait_sync`` polled until every
node is done (Ganeti's WaitForSync, on the primary, is
:func:`~.instance_drbd.wait_for_sync`).  Waits run on the unit's clock.

:func:`restore_single_primary` is the reconciliation of the mirror: after any failed
step of a move, the node that does not run the instance is made secondary and both
are reconnected in single-master mode, asked again (on the clock) while a node does
not answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.internet import task

from ganeti.core import constants as c
from ganeti.core import storagetypes
from ganeti.core.errors import ECODE_ENVIRON, OpExecError
from ganeti.core.objects import Disk, Instance
from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_drbd
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.instance_storage import instance_disks
from ganeti.rpc.noderpc import as_target
from ganeti.rpc.result import RpcResult

#: Seconds between two ``drbd_wait_sync`` rounds (Ganeti's _WaitUntilSync).
SYNC_POLL = 2.0
#: How often, and how far apart (seconds), the mirror's reconnection is tried again.
RESTORE_RETRIES = 10
RESTORE_INTERVAL = 3.0


def say(lu: LogicalUnit, text: str) -> None:
    """A line in the job's log."""
    lu.ctx.feedback(c.ELOG_MESSAGE, text)


log_info = instance_drbd.info


def log_warning(lu: LogicalUnit, text: str, hint: str | None = None) -> None:
    """Ganeti's LogWarning (with its hint line)."""
    instance_drbd.warning(lu, text)
    if hint:
        say(lu, f"      Hint: {hint}")


async def sleep(lu: LogicalUnit, seconds: float) -> None:
    """Wait on the unit's clock."""
    await task.deferLater(lu.ctx.clock, seconds, lambda: None)


def is_mirrored(disks: Sequence[Disk]) -> bool:
    """Whether any disk is mirrored between two nodes (Ganeti's DTS_INT_MIRROR)."""
    return any(d.dev_type == c.DT_DRBD8 for d in disks)


def mirrored(lu: LogicalUnit, inst: Instance) -> list[Disk]:
    """The instance's mirrored disks, in order."""
    return [d for d in instance_disks(lu.ctx.config.config, inst) if d.dev_type == c.DT_DRBD8]


def args(inst: Instance, disks: Sequence[Disk]) -> list[DiskArg]:
    """``disks`` as the node calls take them (each node gets its dynamic parameters)."""
    return [DiskArg(d, inst) for d in disks]


def node_name(lu: LogicalUnit, uuid: str) -> str:
    return ic.node_name(lu.ctx.config.config, uuid)


async def call_nodes(lu: LogicalUnit, node_uuids: Sequence[str], name: str,
                     call_args: list[Any]) -> list[tuple[str, RpcResult]]:
    """``name`` on several nodes at once; ``(node uuid, result)`` in the order given."""
    cfg = lu.ctx.config.config
    nodes = [cfg.nodes[u] for u in node_uuids]
    results = await lu.ctx.rpc().call([as_target(n) for n in nodes], name, call_args)
    return [(n.uuid, results[n.name]) for n in nodes]


# -- consistency ------------------------------------------------------------------------

def _assembles_on_secondary(disk: Disk) -> bool:
    return disk.dev_type == c.DT_DRBD8


async def _consistent(lu: LogicalUnit, inst: Instance, disk: Disk, node_uuid: str,
                      on_primary: bool, ldisk: bool) -> bool:
    result = True
    if on_primary or _assembles_on_secondary(disk):
        node = lu.ctx.config.config.nodes[node_uuid]
        found = await lu.ctx.rpc().call_one(node, "blockdev_find", [DiskArg(disk, inst)])
        status = found.payload if isinstance(found.payload, dict) else None
        if not found.success:
            log_warning(lu, f"Can't find disk on node {node.name}: {found.fail_msg}")
            result = False
        elif status is None:
            log_warning(lu, f"Can't find disk on node {node.name}")
            result = False
        elif ldisk:
            result = status.get("ldisk_status") == storagetypes.LDS_OKAY
        else:
            result = not status.get("is_degraded")
    for child in disk.children or []:
        # (the children's ldisk is not asked for: Ganeti's recursion drops it)
        result = result and await _consistent(lu, inst, child, node_uuid, on_primary, False)
    return result


async def check_consistency(lu: LogicalUnit, inst: Instance, disk: Disk, node_uuid: str,
                            on_primary: bool, ldisk: bool = False) -> bool:
    """Ganeti's CheckDiskConsistency: the disk is not degraded on the node (with
    ``ldisk``: its local data is in order), nor are its children there."""
    return await _consistent(lu, inst, disk, node_uuid, on_primary, ldisk)


async def find_faulty(lu: LogicalUnit, inst: Instance, node_uuid: str,
                      prereq: bool = True) -> list[int]:
    """Ganeti's FindFaultyInstanceDisks: the indices of the disks whose local data is
    faulty on the node (``blockdev_getmirrorstatus``)."""
    cfg = lu.ctx.config.config
    node = cfg.nodes[node_uuid]
    disks = instance_disks(cfg, inst)
    result = await lu.ctx.rpc().call_one(node, "blockdev_getmirrorstatus",
                                         [args(inst, disks)])
    result.raise_if_failed(f"Failed to get disk status from node {node.name}",
                           prereq=prereq, ecode=ECODE_ENVIRON)
    return [idx for idx, status in enumerate(result.payload or [])
            if isinstance(status, dict)
            and status.get("ldisk_status") == storagetypes.LDS_FAULTY]


# -- the device's role and the network ---------------------------------------------------

async def close_disks(lu: LogicalUnit, inst: Instance, node_uuid: str,
                      ignore_failure: bool = False) -> None:
    """Ganeti's _CloseInstanceDisks: the node's devices become secondary."""
    node = lu.ctx.config.config.nodes[node_uuid]
    say(lu, f"* closing instance disks on node {node.name}")
    result = await lu.ctx.rpc().call_one(node, "blockdev_close",
                                         [inst.name, args(inst, mirrored(lu, inst))])
    if not result.success:
        if result.offline or ignore_failure:
            log_warning(lu, f"Could not close instance disks on node {node.name}, "
                            "proceeding anyway")
        else:
            raise OpExecError(f"Cannot close instance disks on node {node.name}: "
                              f"{result.fail_msg}")


async def open_disks(lu: LogicalUnit, inst: Instance, node_uuid: str, exclusive: bool) -> None:
    """Ganeti's _OpenInstanceDisks: the node's devices become primary."""
    node = lu.ctx.config.config.nodes[node_uuid]
    mode = "in exclusive mode" if exclusive else "in shared mode"
    say(lu, f"* opening instance disks on node {node.name} {mode}")
    result = await lu.ctx.rpc().call_one(node, "blockdev_open",
                                         [inst.name, args(inst, mirrored(lu, inst)), exclusive])
    result.raise_if_failed(f"Cannot open instance disks on node {node.name}")


async def go_standalone(lu: LogicalUnit, inst: Instance, node_uuids: Sequence[str]) -> None:
    """Ganeti's _GoStandalone: the mirror's network is detached on every node."""
    say(lu, "* changing into standalone mode")
    for uuid, result in await call_nodes(lu, node_uuids, "drbd_disconnect_net",
                                         [args(inst, mirrored(lu, inst))]):
        result.raise_if_failed(f"Cannot disconnect disks node {node_name(lu, uuid)}")


async def go_reconnect(lu: LogicalUnit, inst: Instance, node_uuids: Sequence[str],
                       multimaster: bool) -> None:
    """Ganeti's _GoReconnect: the mirror's network attached again, in dual-master
    mode (both sides may be primary: a live migration) or single-master mode."""
    say(lu, f"* changing disks into {'dual-master' if multimaster else 'single-master'} mode")
    for uuid, result in await call_nodes(lu, node_uuids, "drbd_attach_net",
                                         [args(inst, mirrored(lu, inst)), multimaster]):
        result.raise_if_failed(f"Cannot change disks config on node {node_name(lu, uuid)}")


async def wait_until_sync(lu: LogicalUnit, inst: Instance, node_uuids: Sequence[str]) -> None:
    """Ganeti's _WaitUntilSync: ``drbd_wait_sync`` on every node until all are done
    (the least progress in the log), every :data:`SYNC_POLL` seconds of the clock."""
    say(lu, "* wait until resync is done")
    disks = args(inst, mirrored(lu, inst))
    while True:
        all_done, least = True, 100.0
        for uuid, result in await call_nodes(lu, node_uuids, "drbd_wait_sync", [disks]):
            result.raise_if_failed(f"Cannot resync disks on node {node_name(lu, uuid)}")
            done, percent = (list(result.payload or []) + [True, None])[:2]
            all_done = all_done and bool(done)
            if isinstance(percent, (int, float)) and not isinstance(percent, bool):
                least = min(least, float(percent))
        if all_done:
            return
        if least < 100:
            say(lu, f"   - progress: {least:.1f}%")
        await sleep(lu, SYNC_POLL)


# -- the reconciliation of the mirror ---------------------------------------------------

async def _single_primary(lu: LogicalUnit, inst: Instance, primary: str,
                          secondary: str) -> None:
    await close_disks(lu, inst, secondary)
    nodes = [primary, secondary]
    await go_standalone(lu, inst, nodes)
    await go_reconnect(lu, inst, nodes, False)
    await wait_until_sync(lu, inst, nodes)


async def restore_single_primary(lu: LogicalUnit, primary: str, secondary: str) -> bool:
    """After a failed step: ``secondary`` (which does not run the instance) is made
    secondary and the mirror reconnected in single-master mode and synced, tried again
    every :data:`RESTORE_INTERVAL` seconds while a step fails (:data:`RESTORE_RETRIES`
    times); Ganeti's warning if it never works.  Whether it worked."""
    inst = lu.instance  # type: ignore[attr-defined]
    error: Exception | None = None
    for attempt in range(RESTORE_RETRIES + 1):
        if attempt:
            await sleep(lu, RESTORE_INTERVAL)
        try:
            await _single_primary(lu, inst, primary, secondary)
            return True
        except OpExecError as err:
            error = err
    log_warning(lu, "Migration failed and I can't reconnect the drives, please try to "
                    f"recover the instance manually; error '{error}'")
    return False
