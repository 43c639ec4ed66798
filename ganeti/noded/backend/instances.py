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

Two hypervisors are served, chosen per call by the instance's ``hypervisor``:
``fake`` (:mod:`ganeti.noded.hypervisors.fake`; it needs no block device) and
``kvm`` through libvirt (:mod:`ganeti.noded.hypervisors.kvm`, the node context's
connection; where there is none, kvm calls fail naming it).  A kvm instance gets
its disks from ``disks_info`` (assembled again here, as Ganeti's start links
them; a plain disk without device-mapper is its byte range on its physical
volume) and boots with ``maxmem``, as Ganeti's kvm does; the others are refused
with their name.  ``instance_events`` answers the master's long poll from the
node's event ring (:mod:`ganeti.noded.instevents`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from ganeti.core import constants, fileutil
from ganeti.core.hvchecks import SM_POOL
from ganeti.noded import uidpool
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.bdev import devices, lvm
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.hypervisors.domainxml import DiskSpec, NicSpec
from ganeti.noded.hypervisors.fake import FakeHypervisor, HypervisorError, check_name
from ganeti.noded.hypervisors.kvm import KvmHypervisor

#: The reboot types a node performs (a full reboot is a stop and a start by the master).
REBOOT_TYPES = (constants.INSTANCE_REBOOT_SOFT, constants.INSTANCE_REBOOT_HARD)


def _hypervisor(ctx: NodeContext, name: object) -> FakeHypervisor | KvmHypervisor:
    if name == constants.HT_FAKE:
        return FakeHypervisor(ctx.paths.run_dir)
    if name == constants.HT_KVM:
        if ctx.kvm is None:
            raise RPCFail("Hypervisor kvm is not available on this node: the node daemon "
                          "has no libvirt connection")
        return ctx.kvm
    if name in constants.HYPER_TYPES:
        raise RPCFail(f"Hypervisor {name} is not available on this node")
    raise RPCFail(f"Unknown hypervisor type {name!r:.40}")


def _checked(ctx: NodeContext, instance: Mapping[str, Any]
             ) -> tuple[FakeHypervisor | KvmHypervisor, str]:
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


async def _await(d: Any) -> Any:
    """The result of a kvm call (a coroutine), its HypervisorError as an RPC failure."""
    try:
        return await d
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
    if isinstance(hv, KvmHypervisor):
        info = await _await(hv.instance_info(name))
    else:
        info = await _run(ctx, hv.instance_info, name)
    return {} if info is None else _info_dict(info)


async def all_instances_info(ctx: NodeContext, hypervisor_list: list[str],
                             all_hvparams: dict[str, Any]) -> dict[str, Any]:
    """Every running instance of the given hypervisors."""
    out: dict[str, Any] = {}
    for hname in hypervisor_list:
        hv = _hypervisor(ctx, hname)
        if isinstance(hv, KvmHypervisor):
            found = await _await(hv.all_instances_info())
        else:
            found = await _run(ctx, hv.all_instances_info)
        for info in found:
            out[info[0]] = _info_dict(info)
    return out


async def instance_list(ctx: NodeContext, hypervisor_list: list[str],
                        hvparams: dict[str, Any]) -> list[str]:
    """The names of the running instances of the given hypervisors."""
    names: list[str] = []
    for hname in hypervisor_list:
        hv = _hypervisor(ctx, hname)
        if isinstance(hv, KvmHypervisor):
            names.extend(await _await(hv.list_instances()))
        else:
            names.extend(await _run(ctx, hv.list_instances))
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
    if isinstance(hv, KvmHypervisor):
        await _kvm_start(ctx, hv, name, instance, startup_paused, reason)
        return
    await _run(ctx, _start, ctx, hv, name, instance.get("beparams") or {}, reason,
               instance.get("hvparams") or {})


async def instance_shutdown(ctx: NodeContext, instance: dict[str, Any], timeout: float,
                            reason: list[Any]) -> None:
    """Stop the instance (nothing if it does not run)."""
    hv, name = _checked(ctx, instance)
    if isinstance(hv, KvmHypervisor):
        await _await(hv.stop(name, timeout))
        await ctx.run(_release_uid, ctx, name)
        await ctx.run(_store_reason, ctx, name, reason)
        return
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
    if isinstance(hv, KvmHypervisor):
        await _kvm_reboot(ctx, hv, name, instance, reboot_type, reason)
        return
    await _run(ctx, _reboot, ctx, hv, name, instance.get("beparams") or {}, reboot_type,
               reason, instance.get("hvparams") or {})


async def instance_balloon_memory(ctx: NodeContext, instance: dict[str, Any],
                                  memory: int) -> None:
    """Set a running instance's memory (nothing if it does not run)."""
    hv, name = _checked(ctx, instance)
    if isinstance(hv, KvmHypervisor):
        kvm = hv
        if await _await(kvm.instance_info(name)) is not None:
            await _await(kvm.balloon(name, memory))
        return

    def balloon() -> None:
        if hv.instance_info(name) is not None:
            hv.balloon(name, memory)

    await _run(ctx, balloon)


# --- kvm -------------------------------------------------------------------------------

async def _kvm_disks(ctx: NodeContext, name: str, instance: Mapping[str, Any]
                     ) -> list[DiskSpec]:
    """The instance's disks as the domain opens them (Ganeti's block devices)."""
    specs = []
    for idx, disk in enumerate(instance.get("disks_info") or []):
        if not isinstance(disk, dict):
            raise RPCFail(f"Could not start instance {name}: disk {idx} is not an object")
        try:
            kind = devices.template(disk)
            path = await devices.assemble(ctx, disk)
        except BlockDeviceError as err:
            raise RPCFail(f"Could not start instance {name}: disk {idx}: {err}") from None
        if path is None:
            continue  # diskless
        if kind == constants.DT_PLAIN and not lvm.dm_available():
            specs.append(await _volume_range(ctx, name, idx, disk))
            continue
        local = devices.local_path(ctx, kind, path)
        block = kind in (constants.DT_PLAIN, constants.DT_BLOCK)
        if block and not await ctx.run(os.path.exists, local):
            raise RPCFail(f"Could not start instance {name}: disk {idx}: {local} does not "
                          "exist on this node (volumes need device-mapper)")
        specs.append(DiskSpec(local, block=block, read_only=disk.get("mode") == "ro"))
    return specs


async def _volume_range(ctx: NodeContext, name: str, idx: int, disk: dict[str, Any]
                        ) -> DiskSpec:
    """A logical volume without device-mapper: its extents on its physical volume, as a
    byte range QEMU opens directly (one segment on one PV only)."""
    def fail(why: str) -> RPCFail:
        return RPCFail(f"Could not start instance {name}: disk {idx}: {why}")

    try:
        vg, lv = lvm.vg_lv(disk)
    except BlockDeviceError as err:
        raise fail(str(err)) from None
    rows = await _lvm_rows(ctx, "lvs", "lv_size,devices,vg_extent_size", f"{vg}/{lv}")
    if rows is None or len(rows) != 1:
        raise fail(f"volume {vg}/{lv} is missing or has several segments (without "
                   "device-mapper only a volume of one segment can be used)")
    match = re.fullmatch(r"(/[^(,]+)\((\d+)\)", str(rows[0].get("devices", "")))
    if match is None:
        raise fail(f"volume {vg}/{lv} lies on several physical volumes")
    pv, first_pe = match.group(1), int(match.group(2))
    pvs = await _lvm_rows(ctx, "pvs", "pv_name,pe_start", pv)
    if not pvs:
        raise fail(f"cannot read physical volume {pv}")
    try:
        offset = int(pvs[0]["pe_start"]) + first_pe * int(rows[0]["vg_extent_size"])
        size = int(rows[0]["lv_size"])
    except (KeyError, ValueError) as err:
        raise fail(f"cannot read the extents of {vg}/{lv}: {err}") from None
    return DiskSpec(pv, block=True, read_only=disk.get("mode") == "ro", offset=offset,
                    size=size)


async def _lvm_rows(ctx: NodeContext, command: str, fields: str, name: str
                    ) -> list[dict[str, str]] | None:
    """An LVM JSON report in bytes; None if the command fails."""
    out = await lvm.lvm(ctx, command, "--reportformat", "json", "--units", "b",
                        "--nosuffix", "-o", fields, name)
    if not out.ok:
        return None
    try:
        return [row for part in json.loads(out.stdout)["report"] for rows in part.values()
                for row in rows]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _kvm_nics(name: str, instance: Mapping[str, Any]) -> list[NicSpec]:
    """The instance's NICs: bridged ones join their link's bridge."""
    specs = []
    for idx, nic in enumerate(instance.get("nics") or []):
        params = nic.get("nicparams") or {} if isinstance(nic, dict) else {}
        mode, link = params.get("mode"), params.get("link")
        if mode != constants.NIC_MODE_BRIDGED or not isinstance(link, str) or not link:
            raise RPCFail(f"Could not start instance {name}: NIC {idx}: mode {mode!r} is not "
                          "supported by the kvm hypervisor yet (bridged only)")
        specs.append(NicSpec(str(nic.get("mac")), bridge=link))
    return specs


async def _kvm_start(ctx: NodeContext, kvm: KvmHypervisor, name: str,
                     instance: Mapping[str, Any], paused: bool,
                     reason: list[Any] | None) -> None:
    if await _await(kvm.instance_info(name)) is not None:
        return  # Ganeti's: "already running, not starting"
    await ctx.run(_release_uid, ctx, name)  # left by a crash
    hvparams = instance.get("hvparams") or {}
    disks = await _kvm_disks(ctx, name, instance)
    nics = _kvm_nics(name, instance)
    accel_kind = await kvm.choose_accel(hvparams)
    memory = int((instance.get("beparams") or {}).get(constants.BE_MAXMEM, 0))
    locked = None
    if _uses_pool(hvparams):
        directory = uidpool.lock_dir(ctx.paths)
        try:
            locked = await ctx.run(uidpool.request_unused_uid, directory,
                                   uidpool.pool_uids(ctx.paths))
        except uidpool.UidPoolError as err:
            raise RPCFail(f"Could not start instance {name}: security model 'pool': "
                          f"{err}") from None
    try:
        try:
            spec = kvm.domain_spec(instance, disks, nics, memory, accel_kind,
                                   locked.uid if locked is not None else None)
        except HypervisorError as err:
            raise RPCFail(f"Hypervisor error: {err}") from None
        await _await(kvm.start(spec, paused))
        if locked is not None:
            await ctx.run(_record_uid, ctx, name, locked.uid)
    except BaseException:
        if locked is not None:
            locked.unlock()
            uidpool.release_uid(uidpool.lock_dir(ctx.paths), locked.uid)
        raise
    if locked is not None:
        await ctx.run(locked.claim, name)
    if reason is not None:
        await ctx.run(_store_reason, ctx, name, reason)


def _record_uid(ctx: NodeContext, name: str, uid: int) -> None:
    os.makedirs(os.path.dirname(_uid_file(ctx, name)), mode=0o755, exist_ok=True)
    fileutil.atomic_write(_uid_file(ctx, name), f"{uid}\n".encode())


async def _kvm_reboot(ctx: NodeContext, kvm: KvmHypervisor, name: str,
                      instance: Mapping[str, Any], reboot_type: str,
                      reason: list[Any]) -> None:
    if await _await(kvm.instance_info(name)) is None:
        raise RPCFail(f"Cannot reboot instance '{name}' that is not running")
    if reboot_type == constants.INSTANCE_REBOOT_SOFT:
        await _await(kvm.reboot_soft(name))
    else:
        await _await(kvm.stop(name, 0, force=True))
        await ctx.run(_release_uid, ctx, name)
        await _kvm_start(ctx, kvm, name, instance, False, None)
    await ctx.run(_store_reason, ctx, name, reason)


async def instance_events(ctx: NodeContext, since: int, timeout: float) -> dict[str, Any]:
    """The node's instance events after ``since``, held up to ``timeout`` (max 30 s)."""
    assert ctx.events is not None  # made by NodeContext
    return await ctx.events.wait(int(since), float(timeout))
