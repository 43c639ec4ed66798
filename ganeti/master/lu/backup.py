"""Logical units: instance exports (Ganeti's cmdlib/backup.py).

OP_BACKUP_EXPORT in ``local`` mode: the instance is shut down if asked
(``shutdown``), its disks are activated if they are not, the OS export script
dumps each disk on the primary node into a hidden staging directory of its
export directory, the master copies the dumps to the target node in chunks
through the node daemons (mutual TLS, nothing buffered whole), and the
target node writes ``config.ini`` (:mod:`ganeti.core.exportinfo`) and renames
the staging directory to the instance's name.  A failure removes the staging
directories on both nodes, so no partial export is left; the instance is
started again if it was up.  There are no disk snapshots (no device-mapper
on these nodes, no file snapshots), so as in Ganeti a running instance is
only exported with ``shutdown`` and ``long_sleep``.  A diskless instance fails
as in Ganeti 3.0, whose node finalizes an export in the directory that only
disk transfers make: shut down (and started again if it was up), then "Export
failed, errors in export finalization".  Afterwards the exports
of the instance on the other nodes are removed, and with ``remove_instance``
the instance too.  The result is Ganeti's ``[finalized, [disk ok, ...]]``.

OP_BACKUP_PREPARE answers nothing for local exports; remote (inter-cluster)
exports are refused.  OP_BACKUP_REMOVE removes the exports of an instance
(also of a removed one, by name) from every node; OP_BACKUP_QUERY (Ganeti
2.x) answers ``{node: [export, ...] or false}``.
"""

from __future__ import annotations

import uuid as uuidmod
from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.core import constants as c
from ganeti.core import exportinfo, params_fill
from ganeti.core.errors import ECODE_INVAL, ECODE_STATE, OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Instance, Node
from ganeti.core.opcodes.table_backup import EXPORT_MODE_REMOTE
from ganeti.core.opcodes.views import OpBackupExport, OpBackupPrepare, OpBackupQuery, OpBackupRemove
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_storage
from ganeti.master.lu.base import ALL_SET, LogicalUnit
from ganeti.master.lu.instance_ops import InstanceLU, remove_instance
from ganeti.master.query.exportqueries import rpc_list_exports

#: The bytes moved per chunk between nodes (each chunk is one call to each node).
CHUNK = 4 * 1024 * 1024
#: The compression modes of this version: none (the dumps are stored as the OS
#: export script writes them).
COMPRESSION_TOOLS = ("none",)


def new_staging() -> str:
    """A fresh staging directory name (hidden from ``export_list``)."""
    return ".x-" + str(uuidmod.uuid4())


async def export_lists(lu: LogicalUnit, nodes: Sequence[Node]) -> Mapping[str, list[str] | None]:
    """``export_list`` on ``nodes``: per node UUID the export names, None where the
    call failed (an offline node fails at once)."""
    return await rpc_list_exports(lu.ctx.rpc)(list(nodes))


async def remove_exports(lu: LogicalUnit, nodes: Sequence[Node], name: str) -> bool:
    """Remove the export ``name`` from those of ``nodes`` that hold it (failures are
    reported); whether any node held it."""
    cfg = lu.ctx.config.config
    found = False
    for uuid, names in (await export_lists(lu, nodes)).items():
        node = cfg.nodes[uuid]
        if names is None:
            lu.ctx.feedback("message", f"Warning: Failed to query node {node.name} "
                                       "(continuing)")
            continue
        if name not in names:
            continue
        found = True
        result = await lu.ctx.rpc().call_one(node, "export_remove", [name])
        if not result.success:
            lu.ctx.feedback("message", f"Warning: Could not remove export for instance "
                                       f"{name} on node {node.name}: {result.fail_msg}")
    return found


async def copy_file(lu: LogicalUnit, src: Node, path: str, dst: Node, staging: str,
                    name: str) -> int:
    """Copy ``path`` (below the source's export directory) into ``staging/name`` on
    ``dst``, chunk by chunk through the master; the bytes copied."""
    rpc = lu.ctx.rpc()
    offset = 0
    while True:
        got = await rpc.call_one(src, "export_read", [path, offset, CHUNK])
        got.raise_if_failed(f"Could not read {path} on node {src.name}")
        data = got.payload
        if not isinstance(data, str):
            raise OpExecError(f"Node {src.name} answered a chunk of {path} that is not text")
        if not data and offset > 0:
            return offset
        put = await rpc.call_one(dst, "export_write", [staging, name, offset, data])
        put.raise_if_failed(f"Could not write {name} on node {dst.name}")
        if not data:
            return 0
        offset += len(data) * 3 // 4 - data[-2:].count("=")


async def abort_staging(lu: LogicalUnit, nodes: Sequence[Node], staging: str) -> None:
    """Remove a staging directory on ``nodes`` (failures are only reported)."""
    for node in nodes:
        result = await lu.ctx.rpc().call_one(node, "export_abort", [staging])
        if not result.success:
            lu.ctx.feedback("message", f"Warning: could not remove {staging} on node "
                                       f"{node.name}: {result.fail_msg}")


def export_config(cfg: ConfigData, inst: Instance, now: float) -> str:
    """The ``config.ini`` text of ``inst`` (its parameters filled as Ganeti's RPC
    encoding fills them; secret OS parameters are never stored, so never written)."""
    cluster = cfg.cluster
    disks = instance_storage.instance_disks(cfg, inst)
    nics = [exportinfo.ExportNic(mac=n.mac, ip=n.ip, network=n.network, name=n.name,
                                 nicparams=params_fill.fill_instance_nic(cluster, n))
            for n in inst.nics]
    return exportinfo.build_config(
        name=inst.name, source=inst.primary_node, os_name=inst.os, timestamp=int(now),
        beparams=params_fill.fill_instance_be(cluster, inst),
        hvparams=params_fill.fill_instance_hv(cluster, inst),
        osparams=params_fill.fill_os(cluster, inst.os, inst.osparams),
        osparams_private=dict(inst.osparams_private),
        disk_template=inst.disk_template or c.DT_DISKLESS, hypervisor=inst.hypervisor,
        tags=sorted(inst.tags), nics=nics,
        disks=[exportinfo.ExportDisk(iv_name=d.iv_name or f"disk/{i}", dump=d.uuid,
                                     size=d.size, name=d.name)
               for i, d in enumerate(disks)],
        hv_globals=params_fill.HVC_GLOBALS)


class LUBackupQuery(LogicalUnit):
    """OP_BACKUP_QUERY (Ganeti 2.x's): the exports of the named nodes (all when none
    are named): ``{node name: [export, ...], or false where the node failed}``."""

    OP_ID = "OP_BACKUP_QUERY"
    REQ_BGL = False
    op: OpBackupQuery

    @property
    def uses_locks(self) -> bool:
        return False

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        nodes = ([nodesmod.find_node(cfg, n) for n in self.op.nodes] if self.op.nodes
                 else sorted(cfg.nodes.values(), key=lambda n: n.name))
        lists = await export_lists(self, nodes)
        return {n.name: (lists[n.uuid] if lists[n.uuid] is not None else False)
                for n in nodes}


class LUBackupPrepare(InstanceLU):
    """OP_BACKUP_PREPARE: nothing to prepare for a local export; remote (inter-cluster)
    exports are not supported."""

    OP_ID = "OP_BACKUP_PREPARE"
    op: OpBackupPrepare

    def check_arguments(self) -> None:
        if self.op.mode == EXPORT_MODE_REMOTE:
            raise OpPrereqError("Remote (inter-cluster) exports are not supported yet",
                                ECODE_INVAL)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        ic.check_node_online(cfg.nodes[self.instance.primary_node])

    async def exec(self) -> Any:
        return None


class LUBackupExport(InstanceLU):
    """OP_BACKUP_EXPORT (local mode); the result is ``[finalized, [disk ok, ...]]``."""

    OP_ID = "OP_BACKUP_EXPORT"
    op: OpBackupExport
    HPATH = "instance-export"

    def check_arguments(self) -> None:
        op = self.op
        if op.mode == EXPORT_MODE_REMOTE:
            raise OpPrereqError("Remote (inter-cluster) exports are not supported yet",
                                ECODE_INVAL)
        if op.long_sleep and not op.shutdown:
            raise OpPrereqError("The long sleep option only makes sense when the "
                                "instance can be shut down.", ECODE_INVAL)
        if op.compress not in COMPRESSION_TOOLS:
            raise OpPrereqError(f"Compression tool not allowed, tools allowed are "
                                f"[{', '.join(COMPRESSION_TOOLS)}]", ECODE_INVAL)

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        target = self.op.target_node_uuid or self.op.target_node
        if not isinstance(target, str) or not target:
            raise OpPrereqError("Target node must be specified", ECODE_INVAL)
        self.target = nodesmod.find_node(cfg, target)
        # as Ganeti: every node, an older export of the instance is removed anywhere
        self.needed_locks[LEVEL_NODE] = ALL_SET

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env.update({"EXPORT_MODE": self.op.mode, "EXPORT_NODE": self.target.name,
                    "EXPORT_DO_SHUTDOWN": self.op.shutdown,
                    "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout,
                    "REMOVE_INSTANCE": str(bool(self.op.remove_instance))})
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        nodes = [cfg.cluster.master_node, self.instance.primary_node, self.target.uuid]
        return nodes, nodes

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        ic.check_node_online(cfg.nodes[inst.primary_node])
        if (self.op.remove_instance and inst.admin_state == c.ADMINST_UP
                and not self.op.shutdown):
            raise OpPrereqError("Can not remove instance without shutting it down before",
                                ECODE_STATE)
        target = cfg.nodes.get(self.target.uuid)
        if target is None:
            raise OpPrereqError(f"Node '{self.target.name}' not known", "unknown_entity")
        ic.check_node_online(target)
        ic.check_node_not_drained(target)
        if inst.disks and not inst.os:
            raise OpPrereqError(f"Instance {inst.name} has no OS: exporting raw disks is "
                                "not supported", ECODE_STATE)

    def _try_snapshot(self) -> bool:
        return (not self.op.remove_instance
                and self.instance.admin_state == c.ADMINST_UP)

    def _do_reboot(self) -> bool:
        return (self.op.shutdown and self.instance.admin_state == c.ADMINST_UP
                and not self.op.remove_instance)

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        inst = self.instance
        cfg = self.ctx.config.config
        src = cfg.nodes[inst.primary_node]
        # Ganeti: with no disk, every disk is "snapshotted" (a running instance is
        # started again before the transfer); no other disk here can be snapshotted
        snapshots = not inst.disks
        if self._try_snapshot() and not snapshots:
            if not self.op.shutdown:
                raise OpExecError("Not all disks could be snapshotted, and you requested a "
                                  "live export; aborting")
            if not self.op.long_sleep:
                raise OpExecError("Not all disks could be snapshotted, and you did not "
                                  "allow the instance to remain offline for a longer time "
                                  "through the --long-sleep option; aborting")
        if self.op.shutdown:
            self.ctx.feedback("message", f"Shutting down instance {inst.name}")
            await ic.shutdown_on_node(self, inst, self.op.shutdown_timeout)
        # Ganeti marks a diskless instance's (no) disks active while it is up
        active = inst.disks_active or (not inst.disks and inst.admin_state == c.ADMINST_UP)
        result: list[Any] = []
        try:
            if not active:
                self.ctx.feedback("message", f"Activating disks for {inst.name}")
                await self.start_disks()
            restarted = False
            try:
                if self._do_reboot() and snapshots:
                    restarted = True
                    self.ctx.feedback("message", f"Starting instance {inst.name}")
                    await ic.start_on_node(self, self.instance)
                result = await self._export(src, self.target)
            finally:
                if self._do_reboot() and not restarted:
                    self.ctx.feedback("message", f"Starting instance {inst.name}")
                    await ic.start_on_node(self, self.instance)
        finally:
            if not active:
                self.ctx.feedback("message", f"Deactivating disks for {inst.name}")
                await self.stop_disks()
        if not result[0]:
            raise OpExecError("Export failed, errors in export finalization")
        if self.op.remove_instance:
            self.ctx.feedback("message", f"Removing instance {inst.name}")
            await remove_instance(self, self.instance, self.op.ignore_remove_failures)
        await self._cleanup_exports(inst.name)
        return result

    async def _export(self, src: Node, dst: Node) -> list[Any]:
        """Dump, copy and finalize; on any failure the staging directories go."""
        inst = self.instance
        cfg = self.ctx.config.config
        if not inst.disks:
            # Ganeti 3.0's node writes config.ini into the directory the disk transfers
            # make: with no disk there is none, and finalizing fails
            self.ctx.feedback("message", f"Finalizing export on {dst.name}")
            self.ctx.feedback("message", f" - WARNING: Could not finalize export for "
                                         f"instance {inst.name} on node {dst.name}: no disk "
                                         "was exported, so there is no export directory to "
                                         "finalize")
            return [False, []]
        staging = new_staging()
        nodes = [src] if src.uuid == dst.uuid else [src, dst]
        try:
            disks = instance_storage.instance_disks(cfg, inst)
            arg = ic.instance_arg(inst)
            for idx, disk in enumerate(disks):
                self.ctx.feedback("message", f"Exporting disk/{idx} of {inst.name} to "
                                             f"node {dst.name}")
                dumped = await self.ctx.rpc().call_one(
                    src, "export_dump", [arg, idx, staging, self.op.debug_level or 0])
                dumped.raise_if_failed(
                    f"Could not export disk/{idx} of {inst.name} on node {src.name}")
                if src.uuid != dst.uuid:
                    await copy_file(self, src, f"{staging}/{disk.uuid}", dst, staging,
                                    disk.uuid)
            self.ctx.feedback("message", f"Finalizing export on {dst.name}")
            text = export_config(cfg, inst, self.ctx.clock.seconds())
            done = await self.ctx.rpc().call_one(dst, "export_finalize",
                                                 [staging, inst.name, text])
            done.raise_if_failed(
                f"Export failed, errors in export finalization on node {dst.name}")
        except BaseException:
            await abort_staging(self, nodes, staging)
            raise
        if src.uuid != dst.uuid:
            await abort_staging(self, [src], staging)
        return [True, [True] * len(disks)]

    async def _cleanup_exports(self, name: str) -> None:
        """Remove the instance's exports from every other node (Ganeti's
        ``_CleanupExports``)."""
        cfg = self.ctx.config.config
        others = [n for n in cfg.nodes.values() if n.uuid != self.target.uuid]
        if not others:
            return
        self.ctx.feedback("message", f"Removing old exports for instance {name}")
        await remove_exports(self, others, name)


class LUBackupRemove(LogicalUnit):
    """OP_BACKUP_REMOVE: the instance's exports removed from every node (its name may
    be that of a removed instance)."""

    OP_ID = "OP_BACKUP_REMOVE"
    REQ_BGL = False
    op: OpBackupRemove

    def expand_names(self) -> None:
        self.needed_locks[LEVEL_NODE] = ALL_SET

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        inst = cfg.instance_by_name(self.op.instance_name.lower()) or (
            cfg.instances.get(self.op.instance_uuid or ""))
        name = inst.name if inst is not None else self.op.instance_name
        found = await remove_exports(self, sorted(cfg.nodes.values(), key=lambda n: n.name),
                                     name)
        if inst is None and not found:
            self.ctx.feedback("message", "Export not found. If trying to remove an export "
                                         "belonging to a deleted instance please use its "
                                         "Fully Qualified Domain Name.")
        return None


LUS: tuple[type[LogicalUnit], ...] = (LUBackupQuery, LUBackupPrepare, LUBackupExport,
                                      LUBackupRemove)

__all__ = ["CHUNK", "LUS", "LUBackupExport", "LUBackupPrepare", "LUBackupQuery",
           "LUBackupRemove", "abort_staging", "copy_file", "export_config", "export_lists",
           "new_staging", "remove_exports"]
