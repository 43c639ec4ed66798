"""OP_NODE_MIGRATE: one OP_INSTANCE_MIGRATE job per primary instance of a node.

Ganeti's LUNodeMigrate: the node is locked (shared), nothing is checked, and
the result is Ganeti's job list, ``{"jobs": [[true, job id], ...]}`` (what
``gnt-node migrate`` waits for).  Each job migrates one instance with the
opcode's mode, live flag, target node, allocator, runtime-changes and ipolicy
settings; the instances go in name order.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import hooks as hookdefs
from ganeti.core.opcodes.views import OpNodeMigrate
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import LEVEL_NODE
from ganeti.master.lu.base import LogicalUnit, ResultWithJobs


class LUNodeMigrate(LogicalUnit):
    """OP_NODE_MIGRATE."""

    OP_ID = "OP_NODE_MIGRATE"
    op: OpNodeMigrate
    REQ_BGL = False
    HPATH = "node-migrate"
    HTYPE = hookdefs.HTYPE_NODE

    def expand_names(self) -> None:
        cfg = self.ctx.config.config
        node = nodesmod.find_node(cfg, self.op.node_uuid or self.op.node_name)
        self.node_uuid, self.node_name = node.uuid, node.name
        self.record_op(node_uuid=node.uuid, node_name=node.name)
        self.needed_locks[LEVEL_NODE] = [node.uuid]
        self.share_locks[LEVEL_NODE] = True

    def build_hooks_env(self) -> dict[str, Any]:
        return {"NODE_NAME": self.node_name,
                "ALLOW_RUNTIME_CHANGES": self.op.allow_runtime_changes}

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        master = [self.ctx.config.config.cluster.master_node]
        return master, master

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        primaries = sorted((i for i in cfg.instances.values()
                            if i.primary_node == self.node_uuid), key=lambda i: i.name)
        jobs = [[{"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": inst.name,
                  "mode": self.op.mode, "live": self.op.live,
                  "iallocator": self.op.iallocator, "target_node": self.op.target_node,
                  "allow_runtime_changes": self.op.allow_runtime_changes,
                  "ignore_ipolicy": self.op.ignore_ipolicy}]
                for inst in primaries]
        return ResultWithJobs(jobs)


LUS: tuple[type[LogicalUnit], ...] = (LUNodeMigrate,)
