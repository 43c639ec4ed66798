"""OP_INSTANCE_MIGRATE and OP_INSTANCE_FAILOVER: the units (Ganeti's LUInstanceMigrate,
LUInstanceFailover and the checks of TLMigrateInstance).

What moves where is a table entry (:data:`MOBILITY`): the templates whose storage
every node reaches (Ganeti's DTS_EXT_MIRROR; here ``diskless`` and
``sharedfile``) go to any node, named (``target_node``) or chosen by an
allocator (a ``relocate`` request); a template with a secondary (Ganeti's
DTS_INT_MIRROR, ``drbd``) goes to its secondary; the others are
refused with Ganeti's "Instance's disk layout 'X' does not allow migrations".

The steps on the nodes (:mod:`.instance_migration_exec`,
:mod:`.instance_failover`) and the reconciliation after a failure
(:mod:`.instance_migration_reconcile`) are described in
docs/design/migration.md.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core import params_fill
from ganeti.core.errors import (
    ECODE_ENVIRON,
    ECODE_INVAL,
    ECODE_NORES,
    ECODE_STATE,
    ConfigurationError,
    OpExecError,
    OpPrereqError,
)
from ganeti.core.opcodes.views import OpInstanceFailover, OpInstanceMigrate
from ganeti.core.params_merge import comma_join
from ganeti.master.config import nodes as nodesmod
from ganeti.master.iallocator import build as iabuild
from ganeti.master.iallocator import jobs as iajobs
from ganeti.master.locking.manager import LEVEL_NODE, LEVEL_NODE_RES
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_failover, instance_migration_exec, instance_policy
from ganeti.master.lu import instance_migration_reconcile as rec
from ganeti.master.lu.base import ALL_SET, LOCKS_REPLACE, LogicalUnit
from ganeti.master.lu.instance_ops import InstanceLU

#: Where an instance of a disk template can move: ``EXT`` to any node (the storage is
#: reached from every node: Ganeti's DTS_EXT_MIRROR), ``INT`` to its secondary (the
#: mirror: Ganeti's DTS_INT_MIRROR).  A template not listed cannot move.
EXT, INT = "ext", "int"
MOBILITY: dict[str, str] = {c.DT_DISKLESS: EXT, c.DT_SHARED_FILE: EXT, c.DT_DRBD8: INT}


def disk_types(cfg: Any, inst: Any) -> list[str]:
    """The templates of the instance's disks (``diskless`` for none)."""
    return sorted({cfg.disks[u].dev_type for u in inst.disks if u in cfg.disks}) or [
        c.DT_DISKLESS]


def mobility(cfg: Any, inst: Any) -> tuple[str | None, list[str]]:
    """How the instance moves (:data:`MOBILITY`, None: it cannot, or its disks mix
    kinds) and the templates of its disks that cannot move."""
    types = disk_types(cfg, inst)
    kinds = {MOBILITY.get(t) for t in types}
    bad = [t for t in types if t not in MOBILITY]
    if bad or len(kinds) != 1:
        return None, bad
    return kinds.pop(), []


class MoveLU(InstanceLU):
    """What migrate and failover share: the target, the locks, Ganeti's checks.

    After :meth:`check_prereq`: ``self.failover`` (the unit fails over: a
    failover, or a migration falling back), ``self.target_uuid``,
    ``self.source_uuid``, ``self.live``.
    """

    REQ_BGL = False
    FAILOVER = False
    op: Any

    # --- names and locks -------------------------------------------------------

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self.target_uuid: str | None = None
        if self.op.target_node or self.op.target_node_uuid:
            node = nodesmod.find_node(cfg, self.op.target_node_uuid or self.op.target_node)
            self.target_uuid = node.uuid
            self.record_op(target_node=node.name, target_node_uuid=node.uuid)
        for level in (LEVEL_NODE, LEVEL_NODE_RES):
            self.needed_locks[level] = []
            self.recalculate_locks[level] = LOCKS_REPLACE

    def declare_locks(self, level: int) -> None:
        inst = self.instance
        if level == LEVEL_NODE:
            kind, _bad = mobility(self.ctx.config.config, inst)
            if kind == EXT:
                self.recalculate_locks.pop(level, None)
                self.needed_locks[level] = (
                    ALL_SET if self.target_uuid is None
                    else sorted({inst.primary_node, self.target_uuid}))
            else:
                self.lock_instances_nodes()
        elif level == LEVEL_NODE_RES:
            self.recalculate_locks.pop(level, None)
            wanted = self.needed_locks.get(LEVEL_NODE)
            self.needed_locks[level] = None if wanted is ALL_SET else list(wanted or [])

    # --- checks ----------------------------------------------------------------

    def check_arguments(self) -> None:
        self.failover = self.FAILOVER
        self.fallback = bool(getattr(self.op, "allow_failover", False))
        self.cleanup = bool(self.op.cleanup)
        if self.failover and self.cleanup:  # (Ganeti asserts; docs/design/migration.md)
            raise OpPrereqError("A failover cannot clean up a migration; use migrate with "
                                "cleanup", ECODE_INVAL)

    async def before_prereq(self) -> None:
        """The template's rule for the target; an allocator runs here (Ganeti's
        CheckIAllocatorOrNode and _RunAllocator)."""
        cfg = self.ctx.config.config
        inst = self.instance
        if (not self.cleanup and inst.admin_state != c.ADMINST_UP and not self.failover
                and self.fallback):
            self.ctx.feedback("message", " - INFO: Instance is marked down or offline, "
                                         "fallback allowed, switching to failover")
            self.failover = True
        kind, bad = mobility(cfg, inst)
        if kind is None:
            if not bad:
                raise OpPrereqError("Instance mixes internal and external mirroring. This "
                                    "is not currently supported.")
            text = "failovers" if self.failover else "migrations"
            raise OpPrereqError(f"Instance's disk layout '{comma_join(bad)}' does not allow "
                                f"{text}", ECODE_STATE)
        if kind == INT:  # (drbd: the secondary is the target)
            secondaries = nodesmod.secondary_nodes(cfg, inst)
            if not secondaries:
                raise ConfigurationError(f"No secondary node but using "
                                         f"{comma_join(disk_types(cfg, inst))} disk template")
            if self.op.iallocator or (self.target_uuid and self.target_uuid
                                      not in secondaries[:1]):
                what = "failed over" if self.failover else "migrated"
                raise OpPrereqError(f"Instances with disk types "
                                    f"{comma_join(disk_types(cfg, inst))} cannot"
                                    f" be {what} to arbitrary nodes (neither an iallocator "
                                    "nor a target node can be passed)", ECODE_INVAL)
            self.target_uuid = secondaries[0]
            return
        allocators = iajobs.allocator_names(cfg, self.op.iallocator,
                                            self.target_uuid is not None)
        if allocators:
            await self._run_allocator(allocators)

    async def _run_allocator(self, allocators: list[str]) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        request = iabuild.relocate_request(cfg, inst, [inst.primary_node])
        ialloc = await iajobs.build_input(self, request)
        name, answer = await iajobs.run(self, allocators, ialloc)
        if not answer.success:
            raise OpPrereqError(f"Can't compute nodes using iallocator '{name}': "
                                f"{answer.info}", ECODE_NORES)
        chosen = [n for n in map(cfg.node_by_name, answer.result) if n is not None]
        if not chosen:
            raise OpPrereqError(f"Can't compute nodes using iallocator '{name}': no node",
                                ECODE_NORES)
        self.target_uuid = chosen[0].uuid
        self.record_op(iallocator=name)
        self.ctx.feedback("message", f" - INFO: Selected nodes for instance {inst.name} via "
                                     f"iallocator {name}: "
                                     f"{', '.join(n.name for n in chosen)}")

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        inst = self.instance
        assert self.target_uuid is not None
        target = cfg.nodes[self.target_uuid]
        self.source_uuid = inst.primary_node
        source = cfg.nodes[self.source_uuid]
        if target.group != source.group:  # Ganeti's CheckTargetNodeIPolicy
            instance_policy.check_target_policy(
                cfg, inst, target.group, self.op.ignore_ipolicy,
                lambda text: self.ctx.feedback("message", text))
        if self.target_uuid == inst.primary_node:
            raise OpPrereqError(f"Cannot migrate instance {inst.name} to its primary "
                                f"({source.name})", ECODE_STATE)
        # held: the instance's nodes and the target (the allocator's choice kept)
        if self.needed_locks.get(LEVEL_NODE) is ALL_SET:
            keep = [inst.primary_node, self.target_uuid]
            self.release_locks(LEVEL_NODE, keep=keep)
            self.release_locks(LEVEL_NODE_RES, keep=keep)
        self.be = params_fill.fill_instance_be(cfg.cluster, inst)
        self.check_memory = not self.cleanup and (
            not self.failover or inst.admin_state == c.ADMINST_UP)
        if not self.check_memory:
            self.ctx.feedback("message", " - INFO: Not checking memory on the secondary "
                                         "node as instance will not be started")
        if not self.cleanup and not self.failover and self.be.get(c.BE_ALWAYS_FAILOVER):
            self.ctx.feedback("message", " - INFO: Instance configured to always failover; "
                                         "fallback to failover")
            self.failover = True
        if not self.cleanup:
            ic.check_node_not_drained(target)
        # (Ganeti 3.0.2 moves instances onto a node that is not vm_capable: refused here)
        ic.check_node_vm_capable(target)
        self.live = False
        if not self.failover:
            self._migration_mode()

    def _migration_mode(self) -> None:
        live, mode = getattr(self.op, "live", None), getattr(self.op, "mode", None)
        if live is not None and mode is not None:
            raise OpPrereqError("Only one of the 'live' and 'mode' parameters are accepted",
                                ECODE_INVAL)
        if live is not None:
            mode = c.HT_MIGRATION_LIVE if live else c.HT_MIGRATION_NONLIVE
        elif mode is None:
            hvp = params_fill.fill_instance_hv(self.ctx.config.config.cluster, self.instance)
            mode = hvp.get("migration_mode", c.HT_MIGRATION_LIVE)
        self.record_op(mode=mode, live=None)
        self.live = mode == c.HT_MIGRATION_LIVE

    # --- hooks -----------------------------------------------------------------

    def _move_env(self) -> dict[str, Any]:
        cfg = self.ctx.config.config
        env = {"OLD_PRIMARY": ic.node_name(cfg, self.source_uuid),
               "NEW_PRIMARY": ic.node_name(cfg, self.target_uuid or ""),
               "OLD_SECONDARY": "", "NEW_SECONDARY": ""}
        secondaries = nodesmod.secondary_nodes(cfg, self.instance)
        if mobility(cfg, self.instance)[0] == INT and secondaries:
            # the mirror's secondary becomes the primary and the primary the secondary
            env.update(OLD_SECONDARY=ic.node_name(cfg, secondaries[0]),
                       NEW_SECONDARY=ic.node_name(cfg, self.source_uuid))
        return env

    # --- node checks, in exec ----------------------------------------------------

    async def recover(self) -> bool:
        """The reconciliation of an interrupted migration, before anything else (not for
        a cleanup, which is one, nor a reservation, nor a dry run); whether the
        instance turned out to run on the target already (nothing left to do)."""
        inst = self.instance
        if self.cleanup or inst.forthcoming or self.op.dry_run:
            return False
        if not await rec.recover_interrupted(self):
            return False
        cfg = self.ctx.config.config
        inst = self.instance
        if inst.primary_node == self.target_uuid:
            self.ctx.feedback("message", f"* instance {inst.name} already runs on "
                                         f"{ic.node_name(cfg, inst.primary_node)}")
            return True
        raise OpExecError(f"Instance {inst.name} was found running on "
                          f"{ic.node_name(cfg, inst.primary_node)}, its config now says "
                          "so; submit the operation again")

    async def node_checks(self) -> int | None:
        """Ganeti's checks that ask the nodes (free memory on the target; for a
        migration: the instance runs on the source, else the fallback to failover).
        The instance's current memory when it is to be migrated, else None."""
        cfg = self.ctx.config.config
        inst = self.instance
        target = cfg.nodes[self.target_uuid or ""]
        if self.check_memory:
            await ic.check_node_free_memory(self, target, f"migrating instance {inst.name}",
                                            int(self.be.get(c.BE_MINMEM) or 0))
        if target.offline:  # Ganeti's bridge check on the target refuses it so
            raise OpPrereqError(f"Error checking bridges on destination node "
                                f"'{target.name}': Node is marked offline", ECODE_ENVIRON)
        if self.failover or self.cleanup:
            return None
        source = cfg.nodes[inst.primary_node]
        hvparams = params_fill.fill_instance_hv(cfg.cluster, inst)
        result = await self.ctx.rpc().call_one(source, "instance_info",
                                               [inst.name, inst.hypervisor, hvparams])
        # Ganeti's instance_migratable: the source must answer that the instance runs
        failure = (result.fail_msg if not result.success else
                   None if result.payload else f"Instance {inst.name} is not running")
        if failure:
            if self.fallback:
                self.ctx.feedback("message", " - INFO: Can't migrate, instance offline, "
                                             "fallback to failover")
                self.failover, self.live = True, False
                return None
            raise OpPrereqError(f"Can't migrate, please use failover: {failure}",
                                ECODE_STATE)
        return int((result.payload or {}).get("memory") or 0)


class LUInstanceMigrate(MoveLU):
    """OP_INSTANCE_MIGRATE."""

    OP_ID = "OP_INSTANCE_MIGRATE"
    op: OpInstanceMigrate
    HPATH = "instance-migrate"

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env.update(self._move_env())
        env.update(MIGRATE_LIVE=self.live, MIGRATE_CLEANUP=self.op.cleanup,
                   ALLOW_RUNTIME_CHANGES=self.op.allow_runtime_changes)
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        inst = self.instance
        nodes = [cfg.cluster.master_node, inst.primary_node,
                 *nodesmod.secondary_nodes(cfg, inst), self.target_uuid or ""]
        return nodes, nodes

    async def exec(self) -> Any:
        if await self.recover():
            return None
        current_mem = await self.node_checks()
        if self.op.dry_run:
            return None
        if self.failover:
            return await instance_failover.Failover(self).run()
        return await instance_migration_exec.Migration(self, current_mem).run()


class LUInstanceFailover(MoveLU):
    """OP_INSTANCE_FAILOVER (a forthcoming instance moves in the config only)."""

    OP_ID = "OP_INSTANCE_FAILOVER"
    op: OpInstanceFailover
    HPATH = "instance-failover"
    FAILOVER = True
    ALLOW_FORTHCOMING = True

    def build_hooks_env(self) -> dict[str, Any]:
        env = super().build_hooks_env()
        env.update(self._move_env())
        env.update(IGNORE_CONSISTENCY=self.op.ignore_consistency,
                   SHUTDOWN_TIMEOUT=self.op.shutdown_timeout,
                   FAILOVER_CLEANUP=self.op.cleanup)
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        cfg = self.ctx.config.config
        inst = self.instance
        nodes = [cfg.cluster.master_node, *nodesmod.secondary_nodes(cfg, inst),
                 self.target_uuid or ""]
        return nodes, [*nodes, inst.primary_node]

    async def exec(self) -> Any:
        if await self.recover():
            return None
        await self.node_checks()
        if self.op.dry_run:
            return None
        return await instance_failover.Failover(self).run()


LUS: tuple[type[LogicalUnit], ...] = (LUInstanceMigrate, LUInstanceFailover)
