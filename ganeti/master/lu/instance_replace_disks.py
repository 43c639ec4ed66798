"""OP_INSTANCE_REPLACE_DISKS: rebuild a mirrored (drbd) instance's storage (Ganeti's
LUInstanceReplaceDisks and the checks of TLReplaceDisks).

Modes (Ganeti's): ``replace_on_primary`` / ``replace_on_secondary`` put new
volumes under the mirror on that node; ``replace_new_secondary`` moves the
mirror's other side to a new node, named (``remote_node``) or chosen by an
allocator (a ``relocate`` request off the current secondary);
``replace_auto`` finds the side whose local disks are faulty and repairs it
(nothing when none is).  The steps on the nodes: :mod:`.instance_replace_disks_exec`.

Locks: the instance, its nodes (and the new secondary; every node while an
allocator chooses, then only the nodes touched), the same node resources.
Checks that ask the nodes (are the disks active, which side is faulty) run first
thing in ``exec``, before anything changes, as ``OpPrereqError``.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import (
    ECODE_FAULT,
    ECODE_INVAL,
    ECODE_NOENT,
    ECODE_NORES,
    ECODE_STATE,
    OpPrereqError,
)
from ganeti.core.opcodes.views import OpInstanceReplaceDisks
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import build as iabuild
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_mirror as mirror
from ganeti.master.lu import instance_policy
from ganeti.master.lu.base import ALL_SET, LOCKS_APPEND, LOCKS_REPLACE, LogicalUnit
from ganeti.master.lu.instance_ops import InstanceLU
from ganeti.master.lu.instance_replace_disks_exec import Replacer
from ganeti.master.lu.instance_storage import instance_disks


class LUInstanceReplaceDisks(InstanceLU):
    """OP_INSTANCE_REPLACE_DISKS."""

    OP_ID = "OP_INSTANCE_REPLACE_DISKS"
    op: OpInstanceReplaceDisks
    HPATH = "mirrors-replace"
    ALLOW_FORTHCOMING = True

    def check_arguments(self) -> None:
        op = self.op
        if op.mode == c.REPLACE_DISK_CHG:
            if op.remote_node is None and op.remote_node_uuid is None and \
                    op.iallocator is None:
                raise OpPrereqError("When changing the secondary either an iallocator "
                                    "script must be used or the new node given",
                                    ECODE_INVAL)
            if op.iallocator is not None and (op.remote_node or op.remote_node_uuid):
                raise OpPrereqError("Do not specify both, iallocator and node", ECODE_INVAL)
        elif op.remote_node is not None or op.remote_node_uuid is not None or \
                op.iallocator is not None:
            raise OpPrereqError("The iallocator and new node options can only be used when "
                                "changing the secondary node", ECODE_INVAL)

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self.remote_uuid: str | None = None
        if self.op.remote_node or self.op.remote_node_uuid:
            node = nodesmod.find_node(cfg, self.op.remote_node_uuid or self.op.remote_node)
            self.remote_uuid = node.uuid
            self.record_op(remote_node=node.name, remote_node_uuid=node.uuid)
            self.needed_locks[LEVEL_NODE] = [node.uuid]
            self.recalculate_locks[LEVEL_NODE] = LOCKS_APPEND
        else:
            self.needed_locks[LEVEL_NODE] = []
            self.recalculate_locks[LEVEL_NODE] = LOCKS_REPLACE
        self.needed_locks[LEVEL_NODE_RES] = []

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_NODE:
            if self.op.iallocator is not None:
                # (Ganeti locks the instance's groups' nodes; every node here, then the
                # allocator's choice is kept)
                self.recalculate_locks.pop(level, None)
                self.needed_locks[level] = ALL_SET
            else:
                self.lock_instances_nodes()
        elif level == LEVEL_NODE_RES:
            wanted = self.needed_locks.get(LEVEL_NODE)
            self.needed_locks[level] = None if wanted is ALL_SET else list(wanted or [])

    # --- hooks -----------------------------------------------------------------

    def build_hooks_env(self) -> dict[str, Any]:
        cfg = self.ctx.config.config
        inst = self.instance
        secondaries = nodesmod.secondary_nodes(cfg, inst)
        env = {"MODE": self.op.mode,
               "NEW_SECONDARY": (ic.node_name(cfg, self.remote_uuid)
                                 if self.remote_uuid else None),
               "OLD_SECONDARY": ic.node_name(cfg, secondaries[0]) if secondaries else ""}
        env.update(super().build_hooks_env())
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        nodes = [cfg.cluster.master_node, self.instance.primary_node]
        if self.remote_uuid is not None:
            nodes.append(self.remote_uuid)
        return nodes, nodes

    # --- checks ----------------------------------------------------------------

    def _secondary(self) -> str:
        secondaries = nodesmod.secondary_nodes(self.ctx.config.config, self.instance)
        if len(secondaries) != 1:
            raise OpPrereqError(f"The instance has a strange layout, expected one secondary "
                                f"but found {len(secondaries)}", ECODE_FAULT)
        return secondaries[0]

    async def before_prereq(self) -> None:
        """The allocator's choice of the new secondary (Ganeti's _RunAllocator)."""
        if self.op.iallocator is None:
            return
        cfg = self.ctx.config.config
        inst = self.instance
        secondary = self._secondary()
        names = iajobs.allocator_names(cfg, self.op.iallocator, False)
        request = iabuild.relocate_request(cfg, inst, [secondary])
        ialloc = await iajobs.build_input(self, request)
        name, answer = await iajobs.run(self, names, ialloc)
        if not answer.success:
            raise OpPrereqError(f"Can't compute nodes using iallocator '{name}': "
                                f"{answer.info}", ECODE_NORES)
        chosen = answer.result[0] if answer.result else None
        node = cfg.node_by_name(chosen) if isinstance(chosen, str) else None
        if node is None:
            raise OpPrereqError(f"Node {chosen} not found in configuration", ECODE_NOENT)
        self.remote_uuid = node.uuid
        self.record_op(iallocator=name, remote_node=node.name, remote_node_uuid=node.uuid)
        mirror.log_info(self, f"Selected new secondary for instance '{inst.name}': "
                              f"{node.name}")

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        secondary = self._secondary()
        remote = self.remote_uuid
        if remote is not None and remote == inst.primary_node:
            raise OpPrereqError("The specified node is the primary node of the instance",
                                ECODE_INVAL)
        if remote is not None and remote == secondary:
            raise OpPrereqError("The specified node is already the secondary node of the "
                                "instance", ECODE_INVAL)
        mode = self.op.mode
        self.disks: list[int] = list(self.op.disks)
        if self.disks and mode in (c.REPLACE_DISK_AUTO, c.REPLACE_DISK_CHG):
            raise OpPrereqError("Cannot specify disks to be replaced", ECODE_INVAL)
        self.early_release = self.op.early_release
        self.new_node: str | None = None
        self.target_node: str | None = None
        self.other_node: str | None = None
        check_nodes: list[str] = []
        if mode == c.REPLACE_DISK_PRI:
            self.target_node, self.other_node = inst.primary_node, secondary
        elif mode == c.REPLACE_DISK_SEC:
            self.target_node, self.other_node = secondary, inst.primary_node
        elif mode == c.REPLACE_DISK_CHG:
            assert remote is not None
            self.new_node, self.other_node, self.target_node = (remote, inst.primary_node,
                                                                secondary)
            check_nodes = [remote, inst.primary_node]
            ic.check_node_not_drained(cfg.nodes[remote])
            ic.check_node_vm_capable(cfg.nodes[remote])
            old = cfg.nodes[secondary]
            if old.offline and not self.early_release:
                self.early_release = True  # (nothing to wait for on an offline node)
                mirror.log_info(self, f"Old secondary {old.name} is offline, automatically "
                                      "enabling early-release mode")
        if mode in (c.REPLACE_DISK_PRI, c.REPLACE_DISK_SEC):
            check_nodes = [self.target_node or "", self.other_node or ""]
        if mode != c.REPLACE_DISK_AUTO and not self.disks:
            self.disks = list(range(len(inst.disks)))
        disks = instance_disks(cfg, inst)
        if not disks or any(d.dev_type != c.DT_DRBD8 for d in disks):
            raise OpPrereqError("Can only run replace disks for DRBD8-based instances",
                                ECODE_INVAL)
        if remote is not None:
            instance_policy.check_target_policy(cfg, inst, cfg.nodes[remote].group,
                                              self.op.ignore_ipolicy,
                                              lambda text: mirror.say(self, text))
        for uuid in check_nodes:
            ic.check_node_online(cfg.nodes[uuid])
        if mode == c.REPLACE_DISK_AUTO:
            # the touched nodes are known once the faulty side is (in exec)
            touched = {inst.primary_node, secondary}
        else:
            touched = {u for u in (self.new_node, self.other_node, self.target_node) if u}
        self.release_locks(LEVEL_NODE, keep=touched)
        self.release_locks(LEVEL_NODE_RES, keep=touched)
        self.touched = sorted(touched)
        for idx in self.disks:
            if not 0 <= idx < len(inst.disks):
                raise OpPrereqError(f"Invalid disk index: {idx} (instace has disks 0 to "
                                    f"{len(inst.disks) - 1}", ECODE_INVAL)

    async def _choose_faulty_side(self) -> None:
        """Ganeti's replace_auto: the disks must be active; the faulty side is rebuilt
        (faulty disks on both sides cannot be repaired automatically)."""
        inst = self.instance
        secondary = self._secondary()
        replacer = Replacer(self)
        if not await replacer.disks_activated():
            raise OpPrereqError(f"Please run activate-disks on instance {inst.name} first",
                                ECODE_STATE)
        on_primary = await mirror.find_faulty(self, inst, inst.primary_node)
        on_secondary = await mirror.find_faulty(self, inst, secondary)
        if on_primary and on_secondary:
            raise OpPrereqError(f"Instance {inst.name} has faulty disks on more than one "
                                "node and can not be repaired automatically", ECODE_STATE)
        if on_primary:
            self.disks = on_primary
            self.target_node, self.other_node = inst.primary_node, secondary
        elif on_secondary:
            self.disks = on_secondary
            self.target_node, self.other_node = secondary, inst.primary_node
        else:
            self.disks = []
        for uuid in (self.target_node, self.other_node):
            if uuid and self.disks:
                ic.check_node_online(self.ctx.config.config.nodes[uuid])

    async def exec(self) -> Any:
        if self.op.mode == c.REPLACE_DISK_AUTO:
            await self._choose_faulty_side()
        if self.op.dry_run:
            return None
        await Replacer(self).run()
        return None


LUS: tuple[type[LogicalUnit], ...] = (LUInstanceReplaceDisks,)
