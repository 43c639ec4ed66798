"""A live (or non-live) migration on the nodes: Ganeti's ``_ExecMigration`` steps, and
what a failed step leads to (the state machine: docs/design/migration.md).

Steps: node information from both nodes; for a mirrored (drbd) instance, the
target's disks consistent; the instance's memory ballooned down when the target
has too little free (runtime changes allowed); ``migration_info`` on the source;
for a mirrored instance the target's disks closed, the mirror standalone then
reconnected in dual-master mode and synced, the disks opened (shared) on both
nodes; ``accept_instance`` on the target;
``instance_migrate`` on the source; ``instance_get_migration_status`` every
second on the unit's clock (the progress in the job's log every ten seconds,
as Ganeti); both sides finalized, always; then the config names the target;
for a mirrored instance the source's disks closed and the mirror back in
single-master mode, synced.

A failure before the memory transfer completed aborts on both sides
(``finalize`` with success false, Ganeti's ``_AbortMigration``); a failure
after it (finalizing) does not.  Either way
:func:`~.instance_migration_reconcile.settle` then leaves the instance on
exactly one node with the config naming it, and the job fails with Ganeti's
message for the step; a mirrored instance's mirror is then made single-master
again with the node that does not run the instance secondary
(:func:`~.instance_mirror.restore_single_primary`), whichever step failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ganeti.core import constants as c
from ganeti.core.errors import OpExecError
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_migration_reconcile as rec
from ganeti.master.lu import instance_mirror as mirror
from ganeti.master.lu.instance_storage import instance_disks

if TYPE_CHECKING:
    from ganeti.master.lu.instance_migration import MoveLU

#: Seconds between two status polls, and between two progress lines (Ganeti's).
POLL_INTERVAL = 1.0
FEEDBACK_INTERVAL = 10.0


class Migration:
    """One migration of ``lu``'s instance from its primary to ``lu.target_uuid``."""

    def __init__(self, lu: MoveLU, current_mem: int | None) -> None:
        self.lu = lu
        cfg = lu.ctx.config.config
        self.source = cfg.nodes[lu.instance.primary_node]
        self.target = cfg.nodes[lu.target_uuid or ""]
        self.live = lu.live
        self.current_mem = current_mem or 0
        self.info = ""
        #: whether the memory transfer completed (the destination has the instance)
        self.completed = False
        #: whether the instance's disks are mirrored (drbd): the disk steps run
        self.mirror = mirror.is_mirrored(instance_disks(cfg, lu.instance))

    def say(self, text: str) -> None:
        self.lu.ctx.feedback("message", text)

    def arg(self) -> Any:
        return ic.instance_arg(self.lu.instance)

    @property
    def target_ip(self) -> str:
        return self.target.secondary_ip or self.target.primary_ip

    async def run(self) -> None:
        lu = self.lu
        name = lu.instance.name
        self.say(f"Migrating instance {name}")
        if lu.cleanup:
            await rec.cleanup(lu, self.source.uuid, self.target.uuid, self.live)
            return
        free = await self._node_info()
        self.say("* checking disk consistency between source and target")
        if self.mirror:
            await self._check_target_disks()
        await self._balloon(free)
        result = await lu.ctx.rpc().call_one(self.source, "migration_info", [self.arg()])
        if not result.success:
            raise OpExecError(f"Failed fetching source migration information from "
                              f"{self.source.name}: {result.fail_msg}")
        self.info = str(result.payload or "")
        if self.mirror:
            await self._repairing(self._dual_master, self.source.uuid, self.target.uuid)
        self.say(f"* preparing {self.target.name} to accept the instance")
        result = await lu.ctx.rpc().call_one(self.target, "accept_instance",
                                             [self.arg(), self.info, self.target_ip])
        if not result.success:
            self.say("Pre-migration failed, aborting")
            await self._fail(f"Could not pre-migrate instance {name}: {result.fail_msg}")
        self.say(f"* migrating instance to {self.target.name}")
        result = await lu.ctx.rpc().call_one(
            self.source, "instance_migrate",
            [lu.ctx.config.config.cluster.cluster_name, self.arg(), self.target_ip,
             self.live])
        if not result.success:
            self.say("Migration failed, aborting")
            await self._fail(f"Could not migrate instance {name}: {result.fail_msg}")
        await self._transfer()
        await self._finalize()
        if self.mirror:
            await self._repairing(self._single_master, self.target.uuid, self.source.uuid)
        self.say("* done")

    async def _check_target_disks(self) -> None:
        """Ganeti's: every disk consistent on the target, else the migration aborts."""
        lu = self.lu
        inst = lu.instance
        for idx, disk in enumerate(instance_disks(lu.ctx.config.config, inst)):
            if not await mirror.check_consistency(lu, inst, disk, self.target.uuid, False):
                raise OpExecError(f"Disk {idx} is degraded or not fully synchronized on "
                                  "target node, aborting migration")

    async def _dual_master(self) -> None:
        """The mirror in dual-master mode, synced, the disks open on both sides."""
        lu = self.lu
        inst = lu.instance
        nodes = [self.source.uuid, self.target.uuid]
        await mirror.close_disks(lu, inst, self.target.uuid)
        await mirror.go_standalone(lu, inst, nodes)
        await mirror.go_reconnect(lu, inst, nodes, True)
        await mirror.wait_until_sync(lu, inst, nodes)
        await mirror.open_disks(lu, inst, self.source.uuid, False)
        await mirror.open_disks(lu, inst, self.target.uuid, False)

    async def _single_master(self) -> None:
        """After the move: the old primary's disks closed, the mirror single-master."""
        lu = self.lu
        inst = lu.instance
        nodes = [self.source.uuid, self.target.uuid]
        await mirror.close_disks(lu, inst, self.source.uuid)
        await mirror.wait_until_sync(lu, inst, nodes)
        await mirror.go_standalone(lu, inst, nodes)
        await mirror.go_reconnect(lu, inst, nodes, False)
        await mirror.wait_until_sync(lu, inst, nodes)

    async def _repairing(self, steps: Any, primary: str, secondary: str) -> None:
        """Run the mirror ``steps``; if one fails, the mirror is made single-master
        again with ``primary`` (which runs the instance) before the job fails."""
        try:
            await steps()
        except OpExecError:
            await mirror.restore_single_primary(self.lu, primary, secondary)
            raise

    async def _node_info(self) -> int | None:
        """Both nodes answer (Ganeti compares their hypervisor versions here; ours
        report none); the target's free memory (MiB)."""
        lu = self.lu
        free: int | None = None
        for node in (self.source, self.target):
            result = await lu.ctx.rpc().call_one(node, "node_info", [])
            result.raise_if_failed(f"Unable to retrieve node information from node "
                                   f"'{node.name}'")
            if node is self.target:
                value = (result.payload or {}).get("memory_free")
                free = value if isinstance(value, int) else None
        return free

    async def _balloon(self, free: int | None) -> None:
        lu = self.lu
        if free is None or self.current_mem <= free:
            return
        if not lu.op.allow_runtime_changes:
            raise OpExecError(f"Memory ballooning not allowed and not enough free memory to "
                              f"fit instance {lu.instance.name} on target node "
                              f"{self.target.name} (have {free}MB, need "
                              f"{self.current_mem}MB)")
        self.say(f"* setting instance memory to {free}")
        result = await lu.ctx.rpc().call_one(self.source, "instance_balloon_memory",
                                             [self.arg(), free])
        result.raise_if_failed("Cannot modify instance runtime memory")

    async def _transfer(self) -> None:
        """Poll the source until the memory transfer ends (Ganeti's loop)."""
        lu = self.lu
        clock = lu.ctx.clock
        name = lu.instance.name
        self.say("* starting memory transfer")
        last_feedback = clock.seconds()
        said_postcopy = False
        while True:
            result = await lu.ctx.rpc().call_one(self.source, "instance_get_migration_status",
                                                 [self.arg()])
            status = result.payload if result.success and isinstance(result.payload,
                                                                     dict) else {}
            state = status.get("status")
            if not result.success or state in c.HV_MIGRATION_FAILED_STATUSES:
                self.say("Migration failed, aborting")
                await self._fail(f"Could not migrate instance {name}: "
                                 f"{result.fail_msg or 'hypervisor returned failure'}")
            if (status.get("postcopy_status") == c.HV_KVM_MIGRATION_POSTCOPY_ACTIVE
                    and not said_postcopy):
                self.say("* memory transfer has switched to postcopy")
                said_postcopy = True
            if state not in c.HV_KVM_MIGRATION_ACTIVE_STATUSES:
                self.say("* memory transfer complete")
                self.completed = True
                return
            sent, total = status.get("transferred_ram"), status.get("total_ram")
            if (clock.seconds() - last_feedback >= FEEDBACK_INTERVAL and sent is not None
                    and total):
                self.say(f"* memory transfer progress: {100.0 * sent / total:.2f} %")
                last_feedback = clock.seconds()
            await rec.sleep(lu, POLL_INTERVAL)

    async def _finalize(self) -> None:
        """Both sides, always: the destination first, and the source with success only
        once the destination runs the instance (else the source keeps it: finalized
        with success false); then the config."""
        lu = self.lu
        rpc = lu.ctx.rpc()
        errors: list[str] = []
        dst = await rpc.call_one(self.target, "instance_finalize_migration_dst",
                                 [self.arg(), self.info, True])
        taken = dst.success
        if not taken:
            errors.append(f"{self.target.name}: {dst.fail_msg}")
            # did the destination take it all the same (its answer lost)?
            taken = bool((await rec.locate_retrying(lu, [self.target.uuid])).get(
                self.target.uuid))
        src = await rpc.call_one(self.source, "instance_finalize_migration_src",
                                 [self.arg(), taken, self.live])
        if not src.success:
            errors.insert(0, f"{self.source.name}: {src.fail_msg}")
        if errors:
            where = await rec.settle(lu, self.source.uuid, self.target.uuid, taken,
                                     self.live, self.info)
            await self._restore_mirror(where)
            raise OpExecError(f"Could not finalize instance migration: {' '.join(errors)}")
        await rec.set_primary(lu, self.target.uuid)

    async def _fail(self, msg: str) -> None:
        """Abort on both sides (Ganeti's), reconcile, fail the job with ``msg``."""
        lu = self.lu
        rpc = lu.ctx.rpc()
        arg = self.arg()
        await rpc.call_one(self.target, "instance_finalize_migration_dst",
                           [arg, self.info, False])
        await rpc.call_one(self.source, "instance_finalize_migration_src",
                           [arg, False, self.live])
        where = await rec.settle(lu, self.source.uuid, self.target.uuid, False, self.live,
                                 self.info)
        await self._restore_mirror(where)
        raise OpExecError(msg)

    async def _restore_mirror(self, where: str | None) -> None:
        """After a settled failure: the mirror single-master, the node that runs the
        instance its primary (Ganeti's _RevertDiskStatus, for either outcome)."""
        if not self.mirror:
            return
        if where is None:
            mirror.log_warning(self.lu, "Migration failed and I can't reconnect the drives, "
                                        "please try to recover the instance manually; "
                                        "error 'the instance's node is not known'")
            return
        other = self.target.uuid if where == self.source.uuid else self.source.uuid
        await mirror.restore_single_primary(self.lu, where, other)
