"""Disk verification: ``OP_CLUSTER_VERIFY_DISKS`` and ``OP_GROUP_VERIFY_DISKS``.

As in Ganeti, the cluster opcode only submits one ``OP_GROUP_VERIFY_DISKS``
job per node group and returns their ids; it submits none when every
instance uses external storage (``ext``), which includes the case of a
cluster without instances.  The group opcode answers ``[node errors, instances
whose disks need activating, missing volumes by instance]``.  Instances
whose disks are active have their plain volumes looked up on their nodes
(file disks have no activation state); the nodes of active drbd disks say which
of them need an activation (``drbd_needs_activation``: missing, disconnected or
without their local disk), as Ganeti's ``_VerifyDrbdStates``.
"""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import OpClusterVerifyDisks, OpGroupVerifyDisks
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODEGROUP
from ganeti.master.lu import instance_drbd
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs


def _checkable(cfg: ConfigData) -> list[str]:
    """UUIDs of the instances not on external storage (Ganeti skips only those) and
    not forthcoming (a reservation's disks exist only in the config)."""
    return sorted(inst.uuid for inst in cfg.instances.values()
                  if inst.disk_template != constants.DT_EXT and not inst.forthcoming)


class LUClusterVerifyDisks(LogicalUnit):
    """OP_CLUSTER_VERIFY_DISKS: ``{"jobs": [[true, id], ...]}``, one job per group."""

    OP_ID = "OP_CLUSTER_VERIFY_DISKS"
    REQ_BGL = False
    op: OpClusterVerifyDisks

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        if self.op.group_name:
            groups = [nodesmod.find_group(cfg, self.op.group_name)]
        else:
            groups = list(cfg.nodegroups.values())
        self.groups = sorted(g.uuid for g in groups)  # Ganeti's jobs name them by UUID
        self.needed_locks[LEVEL_NODEGROUP] = sorted(g.uuid for g in groups)
        self.share_locks[LEVEL_NODEGROUP] = True

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        if not _checkable(cfg):
            # Ganeti: only external storage (or no instance at all): nothing to verify
            return ResultWithJobs([])
        return ResultWithJobs([[{"OP_ID": "OP_GROUP_VERIFY_DISKS", "group_name": name}]
                               for name in self.groups])


class LUGroupVerifyDisks(LogicalUnit):
    """OP_GROUP_VERIFY_DISKS: ``[{node: error}, [instance], {instance: [[node, lv]]}]``."""

    OP_ID = "OP_GROUP_VERIFY_DISKS"
    REQ_BGL = False
    op: OpGroupVerifyDisks

    def expand_names(self) -> None:
        super().expand_names()
        self.group = copy.deepcopy(nodesmod.find_group(self.ctx.config.config,
                                                       self.op.group_name))
        self.needed_locks[LEVEL_NODEGROUP] = [self.group.uuid]
        self.share_locks[LEVEL_NODEGROUP] = True

    async def exec(self) -> Any:
        """Ganeti's LUGroupVerifyDisks for the templates served here: the plain
        volumes of the group's instances whose disks are active are looked up on
        their nodes (``lv_list``); a node that cannot answer is a node error, an
        instance with an inactive volume needs its disks activated, a volume that
        is not there is missing.  File disks have no activation state to check."""
        cfg = self.ctx.config.config
        members = {u for u, n in cfg.nodes.items() if n.group == self.group.uuid}
        wanted: dict[tuple[str, str], str] = {}  # (node uuid, "vg/lv") -> instance name
        backing: set[tuple[str, str]] = set()  # the volumes under drbd disks
        for inst in cfg.instances.values():
            if inst.primary_node not in members or not inst.disks_active:
                continue
            for disk_uuid in inst.disks:
                disk = cfg.disks.get(disk_uuid)
                if disk is None:
                    continue
                nodes = disk.nodes or [inst.primary_node]
                for vol in [disk, *disk.children]:  # a drbd disk's volumes, on both nodes
                    lid = vol.logical_id or []
                    if vol.dev_type == constants.DT_PLAIN and len(lid) == 2:
                        for node_uuid in nodes:
                            wanted[(node_uuid, f"{lid[0]}/{lid[1]}")] = inst.name
                            if vol is not disk:
                                # held by the mirror, not linked: its state is the
                                # mirror's (drbd_needs_activation below); only missing
                                # volumes count here
                                backing.add((node_uuid, f"{lid[0]}/{lid[1]}"))
        node_errors: dict[str, str] = {}
        offline_disk_instances: set[str] = set()
        nodes = sorted({node for node, _ in wanted}, key=lambda u: cfg.nodes[u].name
                       if u in cfg.nodes else u)
        online = [cfg.nodes[u] for u in nodes if u in cfg.nodes and not cfg.nodes[u].offline]
        vgs = sorted({lv.split("/", 1)[0] for _, lv in wanted})
        results = (await self.ctx.rpc().call([nodesmod.target(n) for n in online],
                                             "lv_list", [vgs]) if online else {})
        for node in online:
            result = results.get(node.name)
            if result is None or not result.success:
                node_errors[node.uuid] = (result.fail_msg or "failed") if result else \
                    "no answer"
                wanted = {k: v for k, v in wanted.items() if k[0] != node.uuid}
                continue
            for lv_name, info in (result.payload or {}).items():
                inst_name = wanted.pop((node.uuid, lv_name), None)
                online_lv = bool(info[2]) if isinstance(info, list) and len(info) > 2 else True
                if inst_name is not None and not online_lv \
                        and (node.uuid, lv_name) not in backing:
                    offline_disk_instances.add(inst_name)
        missing: dict[str, list[list[str]]] = {}
        for (node_uuid, lv_name), inst_name in sorted(wanted.items()):
            if node_uuid in cfg.nodes and cfg.nodes[node_uuid].offline:
                continue
            missing.setdefault(inst_name, []).append([node_uuid, lv_name])
        group_instances = sorted((i for i in cfg.instances.values()
                                  if i.primary_node in members and not i.forthcoming),
                                 key=lambda i: i.name)
        offline_disk_instances |= await instance_drbd.needs_activation(
            self, cfg, group_instances, node_errors)
        return [node_errors, sorted(offline_disk_instances), missing]
