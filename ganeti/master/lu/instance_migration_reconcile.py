"""Where does the instance run?  The reconciliation of migrate and failover.

Three users (the state machine: docs/design/migration.md):

- :func:`settle`, after a failed step of a migration (beyond Ganeti, whose
  administrator runs ``--cleanup``): both nodes are asked where the instance
  runs (a node that does not answer is asked again, every
  :data:`RETRY_INTERVAL` seconds on the unit's clock, :data:`RETRIES` times);
  a copy too many is finalized away (the destination's when the memory
  transfer had not completed, else the source's), and the config is made to
  name the node where the instance runs;
- :func:`recover_interrupted`, first thing of every migrate and failover: a
  migration interrupted earlier (the master restarted mid-job, a job failed
  while a node did not answer) left the instance running on another node than
  its primary, or on two nodes: the config follows the instance, the copy that
  is not the primary's is finalized away.  No marker is kept anywhere: what the
  nodes run is the record;
- :func:`cleanup`, Ganeti's ``--cleanup`` (``_ExecCleanup``), with its messages.

For a mirrored (drbd) instance the last two also put the mirror back in
single-master mode with the node that does not run the instance secondary.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import task

from ganeti.core import constants as c
from ganeti.core.errors import OpExecError
from ganeti.core.objects import ConfigData
from ganeti.master.lu import instance_common as ic
from ganeti.master.lu import instance_mirror as mirror
from ganeti.master.lu.base import LogicalUnit
from ganeti.rpc.noderpc import as_target

#: How often, and how far apart (seconds), a node that does not answer is asked again.
RETRIES = 10
RETRY_INTERVAL = 3.0
_BOTH = ("Instance seems to be running on two nodes, or the hypervisor is confused; you "
         "will have to ensure manually that it runs only on one and restart this operation")
_NOWHERE = ("Instance does not seem to be running at all; in this case it's safer to repair "
            "by running 'gnt-instance stop' to ensure disk shutdown, and then restarting it")


def _say(lu: LogicalUnit, text: str) -> None:
    lu.ctx.feedback("message", text)


async def sleep(lu: LogicalUnit, seconds: float) -> None:
    """Wait on the unit's clock."""
    await task.deferLater(lu.ctx.clock, seconds, lambda: None)


async def locate(lu: LogicalUnit, node_uuids: list[str]) -> dict[str, bool | None]:
    """Per node: whether it runs the instance (None: it did not answer)."""
    cfg = lu.ctx.config.config
    inst = lu.instance  # type: ignore[attr-defined]
    nodes = [cfg.nodes[u] for u in node_uuids if u in cfg.nodes]
    hvparams = {inst.hypervisor: dict(cfg.cluster.hvparams.get(inst.hypervisor, {}))}
    results = await lu.ctx.rpc().call([as_target(n) for n in nodes], "instance_list",
                                      [[inst.hypervisor], hvparams])
    out: dict[str, bool | None] = {}
    for node in nodes:
        result = results.get(node.name)
        if result is None or not result.success:
            out[node.uuid] = None
        else:
            out[node.uuid] = inst.name in (result.payload or [])
    return out


async def locate_retrying(lu: LogicalUnit, node_uuids: list[str]) -> dict[str, bool | None]:
    """:func:`locate`, asking again while a node does not answer (:data:`RETRIES`)."""
    where = await locate(lu, node_uuids)
    for _ in range(RETRIES):
        if None not in where.values():
            break
        await sleep(lu, RETRY_INTERVAL)
        where = await locate(lu, node_uuids)
    return where


async def set_primary(lu: LogicalUnit, node_uuid: str) -> None:
    """The config names ``node_uuid`` the instance's primary (the disks of a template
    reached from every node follow it: their node list names the primary)."""
    inst = lu.instance  # type: ignore[attr-defined]
    uuid, now = inst.uuid, lu.ctx.clock.seconds()

    def change(cfg: ConfigData) -> None:
        obj = cfg.instances[uuid]
        if obj.primary_node == node_uuid:
            return
        old = obj.primary_node
        for disk_uuid in obj.disks:
            disk = cfg.disks.get(disk_uuid)
            if disk is not None and disk.dev_type != c.DT_DRBD8:
                disk.nodes = [node_uuid if n == old else n for n in disk.nodes]
                if node_uuid not in disk.nodes:
                    disk.nodes = [node_uuid]
                disk.serial_no = (disk.serial_no or 0) + 1
        obj.primary_node = node_uuid
        obj.serial_no += 1
        obj.mtime = now
    await lu.update_config(change)


async def _call(lu: LogicalUnit, node_uuid: str, name: str, args: list[Any]) -> Any:
    node = lu.ctx.config.config.nodes[node_uuid]
    result = await lu.ctx.rpc().call_one(node, name, args)
    if not result.success:
        _say(lu, f" - WARNING: {name} on {node.name} failed: {result.fail_msg}")
    return result


async def finalize_away(lu: LogicalUnit, node_uuid: str, as_source: bool, live: bool,
                        info: str = "") -> None:
    """End the instance's copy on ``node_uuid``: finalize it as a source whose migration
    succeeded, or as a destination whose migration failed; a copy still listed then is
    shut down."""
    arg = ic.instance_arg(lu.instance)  # type: ignore[attr-defined]
    if as_source:
        await _call(lu, node_uuid, "instance_finalize_migration_src", [arg, True, live])
    else:
        await _call(lu, node_uuid, "instance_finalize_migration_dst", [arg, info, False])
    if (await locate(lu, [node_uuid])).get(node_uuid):
        await _call(lu, node_uuid, "instance_shutdown", [arg, 0, ic.reason_trail(lu)])


async def settle(lu: LogicalUnit, source: str, target: str, completed: bool, live: bool,
                 info: str = "") -> str | None:
    """After a failed step: the instance runs on exactly one of ``source`` and
    ``target`` and the config names it; that node (None: neither answered, or the
    instance runs on neither; the config is left as it is)."""
    cfg = lu.ctx.config.config
    name = lu.instance.name  # type: ignore[attr-defined]
    _say(lu, "* reconciling: checking where the instance runs")
    where = await locate_retrying(lu, [source, target])
    on_src, on_dst = where.get(source), where.get(target)
    if on_src and on_dst:
        # transfer completed: the destination has the newer state; else the source
        if completed:
            await finalize_away(lu, source, True, live)
        else:
            await finalize_away(lu, target, False, live, info)
        on_src, on_dst = (False, True) if completed else (True, False)
    elif completed and not on_src and on_dst is False:
        # finalized nowhere yet: the destination holds the memory, take it there
        arg = ic.instance_arg(lu.instance)  # type: ignore[attr-defined]
        await _call(lu, target, "instance_finalize_migration_dst", [arg, info, True])
        on_dst = bool((await locate_retrying(lu, [target])).get(target))
    if on_dst:
        _say(lu, f"* instance running on {ic.node_name(cfg, target)}, updating config")
        await set_primary(lu, target)
        return target
    if on_src and not completed:
        # the abort may not have reached the source: its migration is ended again
        arg = ic.instance_arg(lu.instance)  # type: ignore[attr-defined]
        await _call(lu, source, "instance_finalize_migration_src", [arg, False, live])
    if on_src or on_src is None and on_dst is False:
        _say(lu, f"* instance confirmed to be running on its primary node "
                 f"({ic.node_name(cfg, source)})" if on_src else
                 f"* {ic.node_name(cfg, source)} does not answer and {name} does not run on "
                 f"{ic.node_name(cfg, target)}: the config keeps "
                 f"{ic.node_name(cfg, source)}")
        await set_primary(lu, source)
        return source
    _say(lu, f" - WARNING: could not tell where instance {name} runs (source: "
             f"{_state(on_src)}, target: {_state(on_dst)}); the config is unchanged")
    return None


def _state(value: bool | None) -> str:
    return "no answer" if value is None else ("running" if value else "not running")


async def recover_interrupted(lu: LogicalUnit) -> bool:
    """The instance runs where its config says, and only there: a copy on another node
    (an interrupted migration's) is finalized away; an instance found only on another
    node becomes its primary there.  Whether the primary changed.  Nodes that do not
    answer are left out (the next run looks again)."""
    cfg = lu.ctx.config.config
    inst = lu.instance  # type: ignore[attr-defined]
    await end_recorded(lu, inst.primary_node)
    online = sorted(u for u, n in cfg.nodes.items() if not n.offline and n.vm_capable)
    where = await locate(lu, online)
    running = [u for u, on in where.items() if on]
    primary = inst.primary_node
    if not running or running == [primary]:
        return False
    names = ",".join(sorted(ic.node_name(cfg, u) for u in running))
    _say(lu, f"* instance {inst.name} runs on {names}, its config names "
             f"{ic.node_name(cfg, primary)}: an interrupted migration, reconciling")
    if primary in running or where.get(primary) is None:
        for node in running:
            if node != primary:
                await finalize_away(lu, node, False, False)
        await _restore_mirror(lu, primary)
        return False
    if len(running) > 1:
        raise OpExecError(_BOTH)
    await set_primary(lu, running[0])
    _say(lu, f"* instance running on {ic.node_name(cfg, running[0])}, updated config")
    await _restore_mirror(lu, running[0])
    return True


async def end_recorded(lu: LogicalUnit, node_uuid: str) -> None:
    """A migration still recorded on ``node_uuid`` (its source) belongs to a job that
    died (the caller holds the instance's lock): it is ended there (aborted if it still
    runs), the instance staying."""
    cfg = lu.ctx.config.config
    inst = lu.instance  # type: ignore[attr-defined]
    source = cfg.nodes.get(node_uuid)
    if source is None or source.offline:
        return
    arg = ic.instance_arg(inst)
    status = await lu.ctx.rpc().call_one(source, "instance_get_migration_status", [arg])
    if status.success:
        _say(lu, f"* an interrupted migration of {inst.name} is recorded on "
                 f"{source.name}: ending it")
        await _call(lu, source.uuid, "instance_finalize_migration_src", [arg, False, False])


async def _restore_mirror(lu: LogicalUnit, primary: str) -> None:
    """A mirrored instance's mirror made single-master with ``primary`` its primary,
    after an interrupted migration was found (it may have been left dual-master)."""
    inst = lu.instance  # type: ignore[attr-defined]
    others = [u for d in mirror.mirrored(lu, inst) for u in d.nodes if u != primary]
    if others:
        await mirror.restore_single_primary(lu, primary, others[0])


async def cleanup(lu: LogicalUnit, source: str, target: str, live: bool) -> None:
    """Ganeti's ``--cleanup``: list the instance on the online nodes; on both the source
    and the target: the migration is aborted; on the target only (or on one other
    node): the config follows; on none: refused."""
    cfg = lu.ctx.config.config
    inst = lu.instance  # type: ignore[attr-defined]
    await end_recorded(lu, source)  # (beyond Ganeti: a migration still running ends)
    _say(lu, "* checking where the instance actually runs (if this hangs, the hypervisor "
             "might be in a bad state)")
    online = sorted(u for u, n in cfg.nodes.items() if not n.offline)
    where = await locate(lu, online)
    for node, on in where.items():
        if on is None:
            raise OpExecError(f"Can't contact node {ic.node_name(cfg, node)}")
    running = [u for u, on in where.items() if on]
    _say(lu, f"* instance running on: {','.join(ic.node_name(cfg, u) for u in running)}")
    if source in running and target in running:
        _say(lu, "Trying to cleanup after failed migration")
        arg = ic.instance_arg(inst)
        info = await lu.ctx.rpc().call_one(cfg.nodes[source], "migration_info", [arg])
        if not info.success:
            raise OpExecError(f"Failed fetching source migration information from "
                              f"{ic.node_name(cfg, source)}: {info.fail_msg}")
        dst = await lu.ctx.rpc().call_one(cfg.nodes[target], "instance_finalize_migration_dst",
                                          [arg, info.payload, False])
        src = await lu.ctx.rpc().call_one(cfg.nodes[source], "instance_finalize_migration_src",
                                          [arg, False, live])
        if not (dst.success and src.success):
            raise OpExecError(f"Instance migration cleanup failed: "
                              f"{dst.fail_msg or ''},{src.fail_msg or ''}")
        where = await locate(lu, online)
        running = [u for u, on in where.items() if on]
    if source in running and target in running:
        raise OpExecError(_BOTH)
    if source not in running and target not in running:
        if len(running) != 1:
            raise OpExecError(_NOWHERE)
        target = running[0]
        _say(lu, f"* instance running on unexpected node ({ic.node_name(cfg, target)}), "
                 "updating as the new secondary")
        running = [target]
    if target in running:
        _say(lu, f"* instance running on secondary node ({ic.node_name(cfg, target)}), "
                 "updating config")
        await set_primary(lu, target)
        demoted = source
    else:
        _say(lu, f"* instance confirmed to be running on its primary node "
                 f"({ic.node_name(cfg, source)})")
        demoted = target
    inst = lu.instance  # type: ignore[attr-defined]
    if mirror.mirrored(lu, inst):  # Ganeti's: the mirror back to single-master
        nodes = [inst.primary_node, demoted]
        await mirror.close_disks(lu, inst, demoted)
        try:
            await mirror.wait_until_sync(lu, inst, nodes)
        except OpExecError:
            pass  # (a standalone device cannot sync: it is reconnected next)
        await mirror.go_standalone(lu, inst, nodes)
        await mirror.go_reconnect(lu, inst, nodes, False)
        await mirror.wait_until_sync(lu, inst, nodes)
    _say(lu, "* done")
