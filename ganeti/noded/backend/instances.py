"""Instance calls on the node: list, info, start, shutdown, reboot, balloon.

Answers are Ganeti's (backend.py): ``instance_info`` gives ``{}`` for an
instance that does not run, else ``{"memory", "vcpus", "state", "time"}``;
``all_instances_info`` the same per running instance; ``instance_list`` the
names.  Starting an instance that runs, or shutting down one that does not,
succeeds and changes nothing, as Ganeti's; rebooting one that does not run
fails.  The reason trail of a start, shutdown or reboot is stored in
``RUN_DIR/instance-reason/<name>`` (JSON), as Ganeti stores it.

Every call gets its hypervisor by the instance's ``hypervisor`` from the node's
table (:mod:`ganeti.noded.hypervisors.registry`) and works through the one
interface (:class:`ganeti.noded.hypervisors.base.Hypervisor`): one start path,
one shutdown path, one reboot path for every hypervisor.  A start assembles the
instance's disks first where the hypervisor opens them (:mod:`.instdisks`); a
hard reboot is a forced stop and a start, as Ganeti's.

An instance whose hypervisor parameters say ``security_model=pool`` gets a
uid of the cluster's user-id pool when it starts (:mod:`ganeti.noded.uidpool`,
all of it in the thread pool); the uid is recorded with the instance's runtime
state and goes back to the pool when it stops, when its start fails, or when a
start or a stop finds the instance not running (a crash).  A start with an empty
or exhausted pool fails and starts nothing.  ``instance_events`` answers the
master's long poll from the node's event ring (:mod:`ganeti.noded.instevents`).
The migration calls are in :mod:`.migration`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from twisted.logger import Logger

from ganeti.core import constants, fileutil
from ganeti.core.hvchecks import SM_POOL
from ganeti.noded import uidpool
from ganeti.noded.backend import instdisks
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.hypervisors.base import Hypervisor, HypervisorError, check_name

#: The reboot types a node performs (a full reboot is a stop and a start by the master).
REBOOT_TYPES = (constants.INSTANCE_REBOOT_SOFT, constants.INSTANCE_REBOOT_HARD)

T = TypeVar("T")
log = Logger()


def hypervisor(ctx: NodeContext, name: object) -> Hypervisor:
    """The node's hypervisor ``name``; an RPC failure saying why it cannot be used."""
    try:
        return ctx.hypervisor_table().get(name)
    except HypervisorError as err:
        raise RPCFail(str(err)) from None


def checked(ctx: NodeContext, instance: Mapping[str, Any]) -> tuple[Hypervisor, str]:
    """The instance's hypervisor and its checked name."""
    hv = hypervisor(ctx, instance.get("hypervisor"))
    return hv, _name(instance.get("name"))


def _name(name: object) -> str:
    try:
        return check_name(name)
    except HypervisorError as err:
        raise RPCFail(str(err)) from None


async def hv_call(step: Awaitable[T], what: str = "Hypervisor error") -> T:
    """The result of a hypervisor call, its HypervisorError an RPC failure that starts
    with ``what``."""
    try:
        return await step
    except HypervisorError as err:
        raise RPCFail(f"{what}: {err}") from None


async def instance_info(ctx: NodeContext, name: str, hname: str,
                        hvparams: dict[str, Any]) -> dict[str, Any]:
    """One instance's runtime state; ``{}`` if it does not run."""
    hv = hypervisor(ctx, hname)
    info = await hv_call(hv.instance_info(_name(name)))
    return {} if info is None else info.as_dict()


async def all_instances_info(ctx: NodeContext, hypervisor_list: list[str],
                             all_hvparams: dict[str, Any]) -> dict[str, Any]:
    """Every running instance of the given hypervisors."""
    out: dict[str, Any] = {}
    for hname in hypervisor_list:
        for info in await hv_call(hypervisor(ctx, hname).all_instances_info()):
            out[info.name] = info.as_dict()
    return out


async def instance_list(ctx: NodeContext, hypervisor_list: list[str],
                        hvparams: dict[str, Any]) -> list[str]:
    """The names of the running instances of the given hypervisors."""
    names: list[str] = []
    for hname in hypervisor_list:
        names.extend(await hv_call(hypervisor(ctx, hname).list_instances()))
    return names


def _store_reason(ctx: NodeContext, name: str, reason: list[Any]) -> None:
    directory = os.path.join(ctx.paths.run_dir, "instance-reason")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fileutil.atomic_write(os.path.join(directory, name), json.dumps(reason).encode())


def instance_uid(ctx: NodeContext, name: str) -> int | None:
    """The pool uid recorded for instance ``name`` on this node, if any (blocking)."""
    return uidpool.recorded_uid(ctx.paths, name)


async def _start(ctx: NodeContext, hv: Hypervisor, name: str, instance: Mapping[str, Any],
                 paused: bool, reason: list[Any] | None) -> None:
    """Ganeti's StartInstance, for every hypervisor."""
    if await hv_call(hv.instance_info(name)) is not None:
        return  # Ganeti's: "already running, not starting"
    await ctx.run(uidpool.release_instance_uid, ctx.paths, name)  # left by a crash
    disks = await instdisks.gather(ctx, name, instance) if hv.uses_block_devices else []
    locked = None
    if (instance.get("hvparams") or {}).get("security_model") == SM_POOL:
        try:
            locked = await ctx.run(uidpool.take_uid, ctx.paths)
        except uidpool.UidPoolError as err:
            raise RPCFail(f"Could not start instance {name}: security model 'pool': "
                          f"{err}") from None
    try:
        await hv_call(hv.start(instance, disks, paused,
                               locked.uid if locked is not None else None))
        if locked is not None:
            await ctx.run(uidpool.keep_uid, ctx.paths, name, locked)
    except BaseException:
        if locked is not None:
            await ctx.run(uidpool.give_back, ctx.paths, locked)
        raise
    if reason is not None:
        await ctx.run(_store_reason, ctx, name, reason)


async def _shutdown(ctx: NodeContext, hv: Hypervisor, name: str, timeout: float,
                    reason: list[Any] | None, force: bool = False) -> None:
    """Ganeti's InstanceShutdown, for every hypervisor: a stop that fails counts if the
    instance is gone anyway."""
    if await hv_call(hv.instance_info(name)) is None:
        await ctx.run(uidpool.release_instance_uid, ctx.paths, name)  # left by a crash
        return  # Ganeti's: "not running, doing nothing"
    try:
        await hv.stop(name, timeout, force)
    except HypervisorError as err:
        if await hv_call(hv.instance_info(name)) is not None:
            raise RPCFail(f"Failed to stop instance '{name}': {err}") from None
    await ctx.run(uidpool.release_instance_uid, ctx.paths, name)
    if reason is not None:
        await ctx.run(_store_reason, ctx, name, reason)
    try:
        await hv.cleanup(name)
    except HypervisorError as err:
        log.warn("Failed to execute post-shutdown cleanup step: {error}", error=err)


async def instance_start(ctx: NodeContext, instance: dict[str, Any], startup_paused: bool,
                         reason: list[Any]) -> None:
    """Start the instance (nothing if it runs already)."""
    hv, name = checked(ctx, instance)
    await _start(ctx, hv, name, instance, startup_paused, reason)


async def instance_shutdown(ctx: NodeContext, instance: dict[str, Any], timeout: float,
                            reason: list[Any]) -> None:
    """Stop the instance (nothing if it does not run)."""
    hv, name = checked(ctx, instance)
    await _shutdown(ctx, hv, name, timeout, reason)


async def instance_reboot(ctx: NodeContext, instance: dict[str, Any], reboot_type: str,
                          shutdown_timeout: float, reason: list[Any]) -> None:
    """A soft reboot (the guest reboots; nothing for fake instances) or a hard one
    (a forced stop and a start)."""
    hv, name = checked(ctx, instance)
    if reboot_type not in REBOOT_TYPES:
        raise RPCFail(f"Invalid reboot_type received: '{reboot_type}'")
    if await hv_call(hv.instance_info(name)) is None:
        raise RPCFail(f"Cannot reboot instance '{name}' that is not running")
    if reboot_type == constants.INSTANCE_REBOOT_SOFT:
        await hv_call(hv.reboot(name), f"Failed to soft reboot instance '{name}'")
    else:
        await _shutdown(ctx, hv, name, shutdown_timeout, None, force=True)
        await _start(ctx, hv, name, instance, False, None)
    await ctx.run(_store_reason, ctx, name, reason)


async def instance_balloon_memory(ctx: NodeContext, instance: dict[str, Any],
                                  memory: int) -> None:
    """Set a running instance's memory (nothing if it does not run)."""
    hv, name = checked(ctx, instance)
    if await hv_call(hv.instance_info(name)) is None:
        return  # Ganeti's: "not running, cannot balloon"
    await hv_call(hv.balloon(name, memory), "Failed to balloon instance memory")


async def instance_events(ctx: NodeContext, since: int, timeout: float) -> dict[str, Any]:
    """The node's instance events after ``since``, held up to ``timeout`` (max 30 s)."""
    assert ctx.events is not None  # made by NodeContext
    return await ctx.events.wait(int(since), float(timeout))
