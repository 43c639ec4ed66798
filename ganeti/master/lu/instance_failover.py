"""A failover on the nodes (Ganeti's ``_ExecFailover``): the instance is stopped on its
primary, its disks deactivated there, the config names the target, and an
instance whose admin state is up gets its disks activated and is started there.

A mirrored (drbd) instance whose disks are active has them checked on the
target first: a degraded disk aborts the failover unless ``ignore_consistency``
(or the primary is offline, with Ganeti's message); its disks are then shut down
on both nodes and assembled again with the target as primary (a secondary that
fails, the old primary, is a warning).  ``ignore_consistency`` (or an offline
primary) lets a failed shutdown pass with Ganeti's warning; a forthcoming
instance moves in the config only, with Ganeti's message ("Instance is
forthcoming, just updating the  configuration", two spaces, as Ganeti 3.0.2
prints it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ganeti.core import constants as c
from ganeti.core.errors import OpExecError
from ganeti.core.objects import Node
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_migration_reconcile as rec
from ganeti.master.lu import instance_mirror as mirror
from ganeti.master.lu import instance_storage

if TYPE_CHECKING:
    from ganeti.master.lu.instance_migration import MoveLU


class Failover:
    """One failover of ``lu``'s instance to ``lu.target_uuid``."""

    def __init__(self, lu: MoveLU) -> None:
        self.lu = lu
        # (a migration that falls back to a failover: Ganeti's defaults)
        self.shutdown_timeout = getattr(lu.op, "shutdown_timeout", c.DEFAULT_SHUTDOWN_TIMEOUT)
        self.ignore_consistency = bool(getattr(lu.op, "ignore_consistency", False))

    def say(self, text: str) -> None:
        self.lu.ctx.feedback("message", text)

    async def run(self) -> None:
        lu = self.lu
        cfg = lu.ctx.config.config
        inst = lu.instance
        target = cfg.nodes[lu.target_uuid or ""]
        self.say(f"Failover instance {inst.name}")
        if inst.forthcoming:
            self.say("Instance is forthcoming, just updating the  configuration")
            await rec.set_primary(lu, target.uuid)
            return
        source = cfg.nodes[inst.primary_node]
        # (Ganeti marks a running diskless instance's disks active; here none are)
        if inst.disks_active or (not inst.disks and inst.admin_state == c.ADMINST_UP):
            # (shared storage is the same on every node: only a mirror degrades)
            self.say("* checking disk consistency between source and target")
            await self._check_target_disks(source, target)
        else:
            self.say("* not checking disk consistency as instance is not running")
        self.say("* shutting down instance on source node")
        result = await lu.ctx.rpc().call_one(
            source, "instance_shutdown",
            [ic.instance_arg(inst), self.shutdown_timeout, ic.reason_trail(lu)])
        if not result.success:
            if self.ignore_consistency or source.offline:
                self.say(f" - WARNING: Could not shutdown instance {inst.name} on node "
                         f"{source.name}, proceeding anyway; please make sure node "
                         f"{source.name} is down; error details: {result.fail_msg}")
            else:
                raise OpExecError(f"Could not shutdown instance {inst.name} on node "
                                  f"{source.name}: {result.fail_msg}")
        self.say("* deactivating the instance's disks on source node")
        if inst.disks and not await instance_storage.shutdown_disks(
                lu, lu.ctx.config.config, lu.instance, ignore_primary=True):
            raise OpExecError("Can't shut down the instance's disks")
        await rec.set_primary(lu, target.uuid)
        inst = lu.instance
        if inst.admin_state != c.ADMINST_UP:
            return
        self.say(f"* activating the instance's disks on target node {target.name}")
        cfg = lu.ctx.config.config
        if inst.disks:
            try:
                await instance_storage.assemble_disks(lu, cfg, inst, ignore_secondaries=True)
            except OpExecError:
                await instance_storage.shutdown_disks(lu, lu.ctx.config.config, lu.instance)
                raise OpExecError("Can't activate the instance's disks") from None
        self.say(f"* starting the instance on the target node {target.name}")
        result = await lu.ctx.rpc().call_one(
            target, "instance_start", [ic.instance_arg(lu.instance), False,
                                       ic.reason_trail(lu)])
        if not result.success:
            if lu.instance.disks:
                await instance_storage.shutdown_disks(lu, lu.ctx.config.config, lu.instance)
            raise OpExecError(f"Could not start instance {inst.name} on node {target.name}: "
                              f"{result.fail_msg}")

    async def _check_target_disks(self, source: Node, target: Node) -> None:
        """Ganeti's: a mirrored disk degraded on the target aborts the failover, unless
        consistency is ignored or the primary is offline (then it is said)."""
        lu = self.lu
        inst = lu.instance
        disks = instance_storage.instance_disks(lu.ctx.config.config, inst)
        if not mirror.is_mirrored(disks):
            return
        for idx, disk in enumerate(disks):
            if await mirror.check_consistency(lu, inst, disk, target.uuid, False):
                continue
            if source.offline:
                self.say(f"Node {source.name} is offline, ignoring degraded disk {idx} on "
                         f"target node {target.name}")
            elif not self.ignore_consistency:
                raise OpExecError(f"Disk {idx} is degraded on target node, aborting "
                                  "failover")
