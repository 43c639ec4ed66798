"""Instance calls on the node: list, info, start, shutdown, reboot, balloon.

Answers are Ganeti's (backend.py): ``instance_info`` gives ``{}`` for an
instance that does not run, else ``{"memory", "vcpus", "state", "time"}``;
``all_instances_info`` the same per running instance; ``instance_list`` the
names.  Starting an instance that runs, or shutting down one that does not,
succeeds and changes nothing, as Ganeti's; rebooting one that does not run
fails.  The reason trail of a start, shutdown or reboot is stored in
``RUN_DIR/instance-reason/<name>`` (JSON), as Ganeti stores it.

An instance whose hypervisor parameters say ``security_model=pool`` gets a
uid of the cluster's user-id pool when it starts (:mod:`ganeti.noded.uidpool`);
the uid is recorded in ``RUN_DIR/instance-uid/<name>`` with the instance's
runtime state and goes back to the pool when it stops, or when a start or a
stop finds the instance not running (a crash).  A start with an empty or
exhausted pool fails and starts nothing.

Only the ``fake`` hypervisor is served here (:mod:`ganeti.noded.hypervisors.fake`);
the others are refused with their name.  Disks of instances come with the
disk calls: the fake hypervisor needs no block device.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants, fileutil
from ganeti.core.hvchecks import SM_POOL
from ganeti.noded import uidpool
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.hypervisors.fake import FakeHypervisor, HypervisorError, check_name

#: The reboot types a node performs (a full reboot is a stop and a start by the master).
REBOOT_TYPES = (constants.INSTANCE_REBOOT_SOFT, constants.INSTANCE_REBOOT_HARD)


def _hypervisor(ctx: NodeContext, name: object) -> FakeHypervisor:
    if name == constants.HT_FAKE:
        return FakeHypervisor(ctx.paths.run_dir)
    if name in constants.HYPER_TYPES:
        raise RPCFail(f"Hypervisor {name} is not available on this node")
    raise RPCFail(f"Unknown hypervisor type {name!r:.40}")


def _checked(ctx: NodeContext, instance: Mapping[str, Any]) -> tuple[FakeHypervisor, str]:
    hv = _hypervisor(ctx, instance.get("hypervisor"))
    try:
        return hv, check_name(instance.get("name"))
    except HypervisorError as err:
        raise RPCFail(str(err)) from None


async def _run(ctx: NodeContext, f: Any, *args: Any) -> Any:
    try:
        return await ctx.run(f, *args)
    except HypervisorError as err:
        raise RPCFail(f"Hypervisor error: {err}") from None


def _info_dict(info: tuple[Any, ...]) -> dict[str, Any]:
    return {"memory": info[2], "vcpus": info[3], "state": info[4], "time": info[5]}


async def instance_info(ctx: NodeContext, name: str, hname: str,
                        hvparams: dict[str, Any]) -> dict[str, Any]:
    """One instance's runtime state; ``{}`` if it does not run."""
    hv = _hypervisor(ctx, hname)
    try:
        check_name(name)
    except HypervisorError as err:
        raise RPCFail(str(err)) from None
    info = await _run(ctx, hv.instance_info, name)
    return {} if info is None else _info_dict(info)


async def all_instances_info(ctx: NodeContext, hypervisor_list: list[str],
                             all_hvparams: dict[str, Any]) -> dict[str, Any]:
    """Every running instance of the given hypervisors."""
    out: dict[str, Any] = {}
    for hname in hypervisor_list:
        hv = _hypervisor(ctx, hname)
        for info in await _run(ctx, hv.all_instances_info):
            out[info[0]] = _info_dict(info)
    return out


async def instance_list(ctx: NodeContext, hypervisor_list: list[str],
                        hvparams: dict[str, Any]) -> list[str]:
    """The names of the running instances of the given hypervisors."""
    names: list[str] = []
    for hname in hypervisor_list:
        names.extend(await _run(ctx, _hypervisor(ctx, hname).list_instances))
    return names


def _store_reason(ctx: NodeContext, name: str, reason: list[Any]) -> None:
    directory = os.path.join(ctx.paths.run_dir, "instance-reason")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fileutil.atomic_write(os.path.join(directory, name), json.dumps(reason).encode())


def _uid_file(ctx: NodeContext, name: str) -> str:
    return os.path.join(ctx.paths.run_dir, "instance-uid", name)


def instance_uid(ctx: NodeContext, name: str) -> int | None:
    """The pool uid recorded for instance ``name`` on this node, if any (blocking)."""
    try:
        with open(_uid_file(ctx, name), encoding="ascii") as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def _release_uid(ctx: NodeContext, name: str) -> None:
    """Give the instance's pool uid back (the instance stopped or crashed)."""
    uid = instance_uid(ctx, name)
    if uid is not None:
        uidpool.release_uid(uidpool.lock_dir(ctx.paths), uid)
    try:
        os.unlink(_uid_file(ctx, name))
    except FileNotFoundError:
        pass


def _uses_pool(hvparams: Mapping[str, Any]) -> bool:
    return hvparams.get("security_model") == SM_POOL


def _start(ctx: NodeContext, hv: FakeHypervisor, name: str, be: Mapping[str, Any],
           reason: list[Any] | None, hvparams: Mapping[str, Any] | None = None) -> None:
    if hv.instance_info(name) is not None:
        return  # Ganeti's: "already running, not starting"
    _release_uid(ctx, name)  # left by a crash
    memory = hv.startup_memory(int(be.get(constants.BE_MINMEM, 0)),
                               int(be.get(constants.BE_MAXMEM, 0)))
    vcpus = int(be.get(constants.BE_VCPUS, 1))
    if hvparams is not None and _uses_pool(hvparams):
        directory = uidpool.lock_dir(ctx.paths)
        try:
            locked = uidpool.request_unused_uid(directory, uidpool.pool_uids(ctx.paths))
        except uidpool.UidPoolError as err:
            raise RPCFail(f"Could not start instance {name}: security model 'pool': "
                          f"{err}") from None
        try:
            hv.start(name, memory, vcpus)
            os.makedirs(os.path.dirname(_uid_file(ctx, name)), mode=0o755, exist_ok=True)
            fileutil.atomic_write(_uid_file(ctx, name), f"{locked.uid}\n".encode())
        except BaseException:
            locked.unlock()
            uidpool.release_uid(directory, locked.uid)
            raise
        locked.claim(name)
    else:
        hv.start(name, memory, vcpus)
    if reason is not None:
        _store_reason(ctx, name, reason)


def _shutdown(ctx: NodeContext, hv: FakeHypervisor, name: str,
              reason: list[Any] | None) -> None:
    if hv.instance_info(name) is None:
        _release_uid(ctx, name)  # left by a crash
        return  # Ganeti's: "not running, doing nothing"
    hv.stop(name)
    _release_uid(ctx, name)
    if reason is not None:
        _store_reason(ctx, name, reason)


async def instance_start(ctx: NodeContext, instance: dict[str, Any], startup_paused: bool,
                         reason: list[Any]) -> None:
    """Start the instance (nothing if it runs already)."""
    hv, name = _checked(ctx, instance)
    await _run(ctx, _start, ctx, hv, name, instance.get("beparams") or {}, reason,
               instance.get("hvparams") or {})


async def instance_shutdown(ctx: NodeContext, instance: dict[str, Any], timeout: float,
                            reason: list[Any]) -> None:
    """Stop the instance (nothing if it does not run)."""
    hv, name = _checked(ctx, instance)
    await _run(ctx, _shutdown, ctx, hv, name, reason)


def _reboot(ctx: NodeContext, hv: FakeHypervisor, name: str, be: Mapping[str, Any],
            reboot_type: str, reason: list[Any], hvparams: Mapping[str, Any]) -> None:
    if hv.instance_info(name) is None:
        raise RPCFail(f"Cannot reboot instance '{name}' that is not running")
    if reboot_type == constants.INSTANCE_REBOOT_HARD:
        _shutdown(ctx, hv, name, None)
        _start(ctx, hv, name, be, None, hvparams)
    _store_reason(ctx, name, reason)


async def instance_reboot(ctx: NodeContext, instance: dict[str, Any], reboot_type: str,
                          shutdown_timeout: float, reason: list[Any]) -> None:
    """A soft reboot (nothing to do for fake instances) or a hard one (stop, start)."""
    hv, name = _checked(ctx, instance)
    if reboot_type not in REBOOT_TYPES:
        raise RPCFail(f"Invalid reboot_type received: '{reboot_type}'")
    await _run(ctx, _reboot, ctx, hv, name, instance.get("beparams") or {}, reboot_type,
               reason, instance.get("hvparams") or {})


async def instance_balloon_memory(ctx: NodeContext, instance: dict[str, Any],
                                  memory: int) -> None:
    """Set a running instance's memory (nothing if it does not run)."""
    hv, name = _checked(ctx, instance)

    def balloon() -> None:
        if hv.instance_info(name) is not None:
            hv.balloon(name, memory)

    await _run(ctx, balloon)
