"""Ganeti's ``kvm`` hypervisor on this node, through libvirt, on the one hypervisor
interface (:class:`.base.Hypervisor`); the functions run in the libvirt thread are in
:mod:`.kvmcalls`, the migration steps in :mod:`.kvmmigration`.

Instances are transient libvirt domains named after the instance
(``createXML`` from :mod:`.domainxml`), so a stopped instance leaves nothing
defined.  Every libvirt call runs in the connection's own thread
(:mod:`.virt`); the methods here run on the reactor and return when libvirt has
answered.  Blocking file work (the accel probe, console directories) goes
through the node's thread runner.

Runtime state per instance (the instance name, its pool uid, its VNC port) is
written into the domain's ``<metadata>``; when noded (re)connects it lists the
running domains and takes those with that metadata as its own again, without
emitting events for them.  libvirtd keeps guests running across noded and
libvirtd restarts.

Lifecycle events become instance events (:mod:`ganeti.noded.instevents`):
``started``; ``stopped`` when a node call stopped the domain; ``shutdown`` when
the guest powered itself off; ``crashed`` when it died unasked (qemu killed,
guest panic, destroyed outside Ganeti).

The serial console is a unix socket at ``RUN_DIR/kvm-hypervisor/ctrl/<name>.serial``
with a log of its output at ``RUN_DIR/kvm-hypervisor/console/<name>.log``,
truncated at each start.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import constants
from ganeti.noded.hypervisors import accel, domainxml
from ganeti.noded.hypervisors import kvmcalls as calls
from ganeti.noded.hypervisors.base import (
    Hypervisor,
    HypervisorError,
    HypervisorUnavailable,
    InstanceInfo,
    MigrationStatus,
    NodeEnv,
    Runner,
    instance_name,
    linux_node_info,
    read_meminfo,
)
from ganeti.noded.hypervisors.kvmcalls import HT
from ganeti.noded.hypervisors.kvmmigration import KvmMigrations
from ganeti.noded.hypervisors.virt import LibvirtUnavailable, VirtConnection, VirtError
from ganeti.noded.instevents import InstanceEvents

# libvirt's numbers (kept here so that this module imports without libvirt)
EVENT_STARTED = 2
EVENT_STOPPED = 5
EVENT_CRASHED = 8
STARTED_MIGRATED = 1
STOPPED_SHUTDOWN = 0
STOPPED_DESTROYED = 1
STOPPED_CRASHED = 2
STOPPED_MIGRATED = 3
STOPPED_SAVED = 4
STOPPED_FAILED = 5
#: Why the hypervisor cannot be served without a libvirt connection.
NO_CONNECTION = ("Hypervisor kvm is not available on this node: the node daemon has no "
                 "libvirt connection")

#: How often a stop checks whether the domain is gone (events normally end the wait).
STOP_POLL = 1.0

_STOP_REASONS = {
    STOPPED_SHUTDOWN: ("shutdown", "the guest powered off"),
    STOPPED_DESTROYED: ("crashed", "the domain was destroyed outside Ganeti"),
    STOPPED_CRASHED: ("crashed", "the guest crashed"),
    STOPPED_FAILED: ("crashed", "the emulator exited unexpectedly"),
    STOPPED_SAVED: ("stopped", "the domain was saved"),
}

log = Logger()


def _read_password(path: str) -> str:
    """The first line of a VNC password file (Ganeti's)."""
    with open(path, encoding="utf-8") as f:
        return f.readline().strip()


class LibvirtDown(HypervisorError):
    """The call failed because libvirtd cannot be reached (the message says so)."""


# --- the hypervisor ------------------------------------------------------------------

class KvmHypervisor(Hypervisor):
    """The kvm hypervisor of one node daemon: its libvirt connection, the runtime
    state of its domains and the events they produce."""

    name = constants.HT_KVM

    def __init__(self, virt: VirtConnection, run_dir: str, clock: IReactorTime,
                 run: Runner, events: InstanceEvents | None = None,
                 choose_accel: Callable[..., tuple[str, str]] = accel.choose) -> None:
        self.virt = virt
        self.run_dir = run_dir
        self.root = os.path.join(run_dir, "kvm-hypervisor")
        self.clock = clock
        self.run = run
        self.events = events
        self._choose_accel = choose_accel
        #: our running domains: name -> metadata
        self.known: dict[str, dict[str, str]] = {}
        self._expected_stop: set[str] = set()
        self._crashed: set[str] = set()
        self._starting: set[str] = set()
        self._attached = False  # the first listing of running domains was done
        self._gone: dict[str, list[defer.Deferred[None]]] = {}
        self.accel: tuple[str, str] | None = None
        self.migrations = KvmMigrations(self)
        virt.on_event = self.handle_event
        virt.on_connect = lambda: defer.ensureDeferred(self.reattach())

    @classmethod
    def for_node(cls, env: NodeEnv) -> KvmHypervisor:
        if env.virt is None:
            raise HypervisorUnavailable(NO_CONNECTION)
        return cls(env.virt, env.run_dir, env.clock, env.run, env.events,
                   **env.options.get(cls.name, {}))

    # --- paths --------------------------------------------------------------------
    def serial_socket(self, name: str) -> str:
        """The serial console's socket of instance ``name``."""
        return os.path.join(self.root, "ctrl", f"{name}.serial")

    def console_log(self, name: str) -> str:
        """The log of everything the serial console printed since the last start."""
        return os.path.join(self.root, "console", f"{name}.log")

    def serial_console(self, name: str) -> str | None:
        return self.serial_socket(name)

    # --- calls --------------------------------------------------------------------
    async def call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(conn, *args)`` in the libvirt thread; its failure a HypervisorError
        that starts with ``what`` (LibvirtDown when libvirtd cannot be reached)."""
        try:
            return await self.virt.call(fn, *args)
        except LibvirtUnavailable as err:
            raise LibvirtDown(f"{what}: {err}") from None
        except VirtError as err:
            raise HypervisorError(f"{what}: libvirt: {err}") from None

    async def instance_info(self, name: str) -> InstanceInfo | None:
        """The running instance ``name``, or None."""
        info: InstanceInfo | None = await self.call(f"Failed to get instance {name}",
                                                     calls.domain_info, name)
        return info

    async def all_instances_info(self) -> list[InstanceInfo]:
        """Every running domain of this node."""
        found = await self.call("Failed to list instances", calls.all_info)
        return [info for info, _meta in found]

    async def list_instances(self) -> list[str]:
        """The names of the running domains."""
        return sorted(info[0] for info in await self.all_instances_info())

    async def reattach(self) -> None:
        """Take the running domains with our metadata as ours.

        On the first connection this makes no events.  On a reconnection (libvirtd
        restarted), a domain known before that no longer runs died unseen: it is
        reported as crashed.  Calls are run in order, so a domain whose start
        finished before the listing is in it, and one whose start finishes after
        is added by the start itself."""
        first = not self._attached
        try:
            found = await self.virt.call(calls.all_info)
        except (LibvirtUnavailable, VirtError) as err:
            log.warn("Cannot list the running domains: {error}", error=err)
            return
        self._attached = True
        running = {info[0]: meta for info, meta in found}
        if not first:
            for name in sorted(set(self.known) - set(running)):
                if name in self._expected_stop:
                    self._expected_stop.discard(name)
                    self._emit(name, "stopped", "stopped by a node call")
                else:
                    self._emit(name, "crashed", "stopped while libvirtd was unreachable")
                self.known.pop(name, None)
        for name, meta in running.items():
            self.known.setdefault(name, meta)
        if first and running:
            log.info("Found running kvm instances: {names}", names=", ".join(sorted(running)))

    async def choose_accel(self, hvparams: Mapping[str, Any]) -> str:
        """The domain type for a guest with these parameters (probed once)."""
        flag = str(hvparams.get("kvm_flag") or "") or None
        if flag is None and self.accel is not None:
            return self.accel[0]
        kind, why = await self.run(self._choose_accel, self.run_dir, flag,
                                   str(hvparams.get("kernel_path") or "") or None,
                                   str(hvparams.get("initrd_path") or "") or None)
        if flag is None:
            if self.accel is None:
                log.info("kvm hypervisor: guests run under {accel} ({why})",
                         accel=accel.describe(kind), why=why)
            self.accel = (kind, why)
        return str(kind)

    def domain_spec(self, instance: Mapping[str, Any], disks: Sequence[domainxml.DiskSpec],
                    nics: Sequence[domainxml.NicSpec], memory: int, accel_kind: str,
                    uid: int | None) -> domainxml.DomainSpec:
        """What the domain of ``instance`` is made from."""
        name = str(instance["name"])
        hv = instance.get("hvparams") or {}
        be = instance.get("beparams") or {}
        port = instance.get("network_port")
        vnc_port = int(port) if isinstance(port, int) and hv.get("vnc_bind_address") else None
        try:
            dom_uuid = str(uuidlib.UUID(str(instance.get("uuid"))))
        except ValueError:
            dom_uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, name))
        meta = {"name": name, "hypervisor": HT}
        gid = None
        if uid is None and hv.get("security_model") == "user":
            user = str(hv.get("security_domain") or "")
            try:
                entry = pwd.getpwnam(user)
            except KeyError:
                raise HypervisorError(f"Failed to start instance {name}: unknown user "
                                      f"'{user}' (security_domain)") from None
            uid, gid = entry.pw_uid, entry.pw_gid
        if uid is not None:
            meta["uid"] = str(uid)
        if vnc_port is not None:
            meta["vnc_port"] = str(vnc_port)
        return domainxml.DomainSpec(
            name=name, uuid=dom_uuid, hvparams=hv, memory_mib=memory,
            vcpus=int(be.get(constants.BE_VCPUS, 1)), disks=tuple(disks), nics=tuple(nics),
            accel=accel_kind, vnc_port=vnc_port, uid=uid, gid=gid,
            serial_socket=self.serial_socket(name), serial_log=self.console_log(name),
            metadata=meta)

    def prepare_console(self, name: str) -> None:
        """The console directories, no stale socket, an empty log (blocking)."""
        for path in (self.serial_socket(name), self.console_log(name)):
            os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
        try:
            os.unlink(self.serial_socket(name))
        except FileNotFoundError:
            pass
        with open(self.console_log(name), "wb"):
            pass  # truncated at each start

    async def start(self, instance: Mapping[str, Any], disks: Sequence[domainxml.DiskSpec],
                    paused: bool, uid: int | None) -> None:
        """Boot the instance with ``maxmem`` (Ganeti's kvm), its NICs on their bridges."""
        name = instance_name(instance)
        nics = nic_specs(name, instance)
        accel_kind = await self.choose_accel(instance.get("hvparams") or {})
        memory = int((instance.get("beparams") or {}).get(constants.BE_MAXMEM, 0))
        spec = self.domain_spec(instance, disks, nics, memory, accel_kind, uid)
        await self.start_domain(spec, paused)

    async def start_domain(self, spec: domainxml.DomainSpec, paused: bool = False) -> None:
        """Create and start the transient domain; nothing is left if it fails."""
        name = spec.name
        password_file = str(spec.hvparams.get("vnc_password_file") or "")
        if spec.hvparams.get("vnc_bind_address") and password_file:
            try:
                password = await self.run(_read_password, password_file)
            except OSError as err:
                raise HypervisorError(f"Failed to start instance {name}: cannot read the "
                                      f"VNC password file {password_file}: "
                                      f"{err.strerror}") from None
            spec = dataclasses.replace(spec, vnc_password=password)
        try:
            xml = domainxml.domain_xml(spec)
        except domainxml.UnsupportedParameter as err:
            raise HypervisorError(f"Failed to start instance {name}: {err}") from None
        try:
            await self.run(self.prepare_console, name)
        except OSError as err:
            raise HypervisorError(f"Failed to start instance {name}: {err}") from None
        self._expected_stop.discard(name)
        self._crashed.discard(name)
        self._starting.add(name)
        try:
            await self.call(f"Failed to start instance {name}", calls.create, xml, paused)
        except HypervisorError:
            self._starting.discard(name)
            try:
                await self.virt.call(calls.destroy, name)
            except (LibvirtUnavailable, VirtError):
                pass
            raise
        self.known[name] = dict(spec.metadata or {})
        self._starting.discard(name)

    async def stop(self, name: str, timeout: float, force: bool = False) -> None:
        """ACPI power-off, wait up to ``timeout`` (ended early by the domain's stop
        event), then destroy; no domain is left.  ``force``: destroy at once."""
        what = f"Failed to stop instance {name}"
        self._expected_stop.add(name)
        if not force:
            asked = await self.call(what, calls.shutdown, name)
            if asked and await self._wait_gone(name, timeout):
                self.known.pop(name, None)
                return
        if not await self.call(what, calls.destroy, name):
            self._expected_stop.discard(name)  # it was not running: no event will come
        self.known.pop(name, None)

    async def _wait_gone(self, name: str, timeout: float) -> bool:
        deadline = self.clock.seconds() + max(0.0, float(timeout))
        while True:
            if not await self.call(f"Failed to stop instance {name}", calls.exists, name):
                return True
            left = deadline - self.clock.seconds()
            if left <= 0:
                return False
            d: defer.Deferred[None] = defer.Deferred()
            self._gone.setdefault(name, []).append(d)
            try:
                await d.addTimeout(min(left, STOP_POLL), self.clock)
            except defer.TimeoutError:
                pass
            finally:
                waiters = self._gone.get(name, [])
                if d in waiters:
                    waiters.remove(d)

    async def reboot(self, name: str) -> None:
        """Ask the guest to reboot (ACPI)."""
        await self.call(f"Failed to soft reboot instance {name}", calls.reboot, name)

    async def domain_xml(self, name: str) -> str | None:
        """The running domain's document (None if it does not run)."""
        xml: str | None = await self.call(f"Failed to read instance {name}", calls.xml_of, name)
        return xml

    async def balloon(self, name: str, memory: int) -> None:
        """Set the running guest's memory through its balloon device."""
        await self.call(f"Failed to balloon memory for {name}", calls.set_memory, name, memory)

    async def block_resize(self, name: str, path: str, size: int) -> bool:
        """Tell the running domain that its disk at ``path`` is now ``size`` bytes."""
        done: bool = await self.call(f"Failed to resize a disk of {name}", calls.block_resize,
                                      name, path, size)
        return done

    async def disk_grown(self, path: str, size: int) -> list[str]:
        """A disk at ``path`` is now ``size`` bytes: tell the running guests that use it
        (libvirt's blockResize); the names of those told."""
        told: list[str] = await self.call(f"Failed to tell guests that {path} grew",
                                           calls.resize_users, path, size)
        return told

    async def pause_nbd_users(self, host: str, port: int) -> list[str]:
        """Suspend the running guests whose disk is the NBD export at ``host:port`` (the
        last round of a mirror's resync); their names, for :meth:`resume_guests`."""
        paused: list[str] = await self.call(f"Failed to pause the guests of {host}:{port}",
                                            calls.suspend_nbd_users, host, port)
        return paused

    async def resume_guests(self, names: list[str]) -> None:
        await self.call("Failed to resume guests", calls.resume_all, names)

    # --- events (reactor) ------------------------------------------------------------
    def handle_event(self, name: str, event: int, detail: int) -> None:
        """A lifecycle event of domain ``name`` from libvirt (other domains of the
        libvirtd than ours are ignored)."""
        if not (name in self.known or name in self._starting or name in self._expected_stop
                or name in self._crashed or name in self.migrations.incoming):
            return
        if event == EVENT_STARTED:
            self._emit(name, "started", "migrated here" if detail == STARTED_MIGRATED
                       else "the domain started")
        elif event == EVENT_CRASHED:
            self._crashed.add(name)
            self._emit(name, "crashed", "the guest crashed (panic)")
        elif event == EVENT_STOPPED:
            self.known.pop(name, None)
            waiters = self._gone.pop(name, [])
            for d in waiters:
                if not d.called:
                    d.callback(None)
            if name in self._crashed:
                self._crashed.discard(name)
                self._expected_stop.discard(name)
                return
            if name in self._expected_stop:
                self._expected_stop.discard(name)
                self._emit(name, "stopped", "stopped by a node call")
                return
            if detail == STOPPED_MIGRATED:
                return  # the migration code reports its own outcome
            kind, reason = _STOP_REASONS.get(detail, ("crashed", f"stopped (detail {detail})"))
            self._emit(name, kind, reason)

    # --- the node ----------------------------------------------------------------------
    def _accel_now(self) -> tuple[str, str]:
        """What guests run under here: the probe's answer, else what a start would use
        without probing (blocking: reads the kept answer)."""
        return self.accel if self.accel is not None else accel.choose(self.run_dir, None, None)

    async def node_info(self) -> dict[str, Any]:
        """The host's memory (a guest's use shows in MemFree itself) and, as ours,
        ``hv_accel`` (what guests run under: "kvm" or "qemu (TCG)") with
        ``hv_accel_reason``."""
        out: dict[str, Any] = linux_node_info(await self.run(read_meminfo))
        kind, why = await self.run(self._accel_now)
        out["hv_accel"] = accel.describe(kind)
        out["hv_accel_reason"] = why
        return out

    async def verify(self) -> str | None:
        """None if libvirtd answers, else why not."""
        try:
            await self.call("Cannot reach libvirtd", lambda conn: conn.getVersion())
        except HypervisorError as err:
            return str(err)
        return None

    # --- migration (:mod:`.kvmmigration`) -------------------------------------------
    async def migration_info(self, instance: Mapping[str, Any]) -> str:
        return await self.migrations.info(instance_name(instance))

    async def accept_instance(self, instance: Mapping[str, Any], info: str,
                              target: str) -> None:
        await self.migrations.accept(instance_name(instance))

    async def migrate_instance(self, cluster_name: str, instance: Mapping[str, Any],
                               target: str, live: bool) -> None:
        await self.migrations.migrate(instance, target, live)

    async def migration_status(self, instance: Mapping[str, Any]) -> MigrationStatus:
        return await self.migrations.status(instance_name(instance))

    async def finalize_migration_dst(self, instance: Mapping[str, Any], info: str,
                                     success: bool) -> None:
        await self.migrations.finalize_dst(instance_name(instance), success)

    async def finalize_migration_source(self, instance: Mapping[str, Any], success: bool,
                                        live: bool) -> None:
        await self.migrations.finalize_source(instance_name(instance), success)

    def _emit(self, name: str, kind: str, reason: str) -> None:
        if self.events is not None:
            self.events.emit(name, HT, kind, reason)

    async def close(self) -> None:
        """End the libvirt thread (the daemon stops; the guests keep running)."""
        await self.virt.stop()


def nic_specs(name: str, instance: Mapping[str, Any]) -> list[domainxml.NicSpec]:
    """The instance's NICs: bridged ones join their link's bridge; other modes are
    refused, naming the NIC."""
    specs = []
    for idx, nic in enumerate(instance.get("nics") or []):
        params = nic.get("nicparams") or {} if isinstance(nic, dict) else {}
        mode, link = params.get("mode"), params.get("link")
        if mode != constants.NIC_MODE_BRIDGED or not isinstance(link, str) or not link:
            raise HypervisorError(f"Could not start instance {name}: NIC {idx}: mode "
                                  f"{mode!r} is not supported by the kvm hypervisor yet "
                                  "(bridged only)")
        specs.append(domainxml.NicSpec(str(nic.get("mac")), bridge=link))
    return specs
