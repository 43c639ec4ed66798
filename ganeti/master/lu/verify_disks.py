"""Disk verification: ``OP_CLUSTER_VERIFY_DISKS`` and ``OP_GROUP_VERIFY_DISKS``.

As in Ganeti, the cluster opcode only submits one ``OP_GROUP_VERIFY_DISKS``
job per node group and returns their ids; it submits none when every
instance uses external storage (``ext``), which includes the case of a
cluster without instances.  The group opcode answers ``[node errors, instances
whose disks need activating, missing volumes by instance]``.  Instances
with disks that need checking come with the instance and storage layers;
until then every instance is diskless or unknown to the nodes, so the
answer is always ``[{}, [], {}]``.
"""

from __future__ import annotations

import copy
from typing import Any

from ganeti.core import constants
from ganeti.core.objects import ConfigData
from ganeti.core.opcodes.views import OpClusterVerifyDisks, OpGroupVerifyDisks
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODEGROUP
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs


def _checkable(cfg: ConfigData) -> list[str]:
    """UUIDs of the instances not on external storage (Ganeti skips only those)."""
    return sorted(inst.uuid for inst in cfg.instances.values()
                  if inst.disk_template != constants.DT_EXT)


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
        self.groups = sorted(g.name for g in groups)
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
        # No storage layer yet: no node can report volumes or DRBD states, so no
        # node error, no disk to activate and no missing volume can be found.
        node_errors: dict[str, str] = {}
        offline_disk_instances: list[str] = []
        missing: dict[str, list[list[str]]] = {}
        return [node_errors, offline_disk_instances, missing]
