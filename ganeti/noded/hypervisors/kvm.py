"""Ganeti's ``kvm`` hypervisor on this node, through libvirt.

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
import functools
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
from ganeti.noded.hypervisors.fake import STATE_RUNNING, STATE_SHUTDOWN, HypervisorError
from ganeti.noded.hypervisors.virt import LibvirtUnavailable, VirtConnection, VirtError
from ganeti.noded.instevents import InstanceEvents

HT = constants.HT_KVM

# libvirt's numbers (kept here so that this module imports without libvirt)
EVENT_STARTED = 2
EVENT_STOPPED = 5
EVENT_CRASHED = 8
STOPPED_SHUTDOWN = 0
STOPPED_DESTROYED = 1
STOPPED_CRASHED = 2
STOPPED_MIGRATED = 3
STOPPED_SAVED = 4
STOPPED_FAILED = 5
ERR_NO_DOMAIN = 42
ERR_OPERATION_INVALID = 55
START_PAUSED = 1
LIST_ACTIVE = 1
RESIZE_BYTES = 1
STATE_PAUSED = 3
STATE_SHUTOFF = 5
STATE_CRASHED = 6

#: How often a stop checks whether the domain is gone (events normally end the wait).
STOP_POLL = 1.0

_STOP_REASONS = {
    STOPPED_SHUTDOWN: ("shutdown", "the guest powered off"),
    STOPPED_DESTROYED: ("crashed", "the domain was destroyed outside Ganeti"),
    STOPPED_CRASHED: ("crashed", "the guest crashed"),
    STOPPED_FAILED: ("crashed", "the emulator exited unexpectedly"),
    STOPPED_SAVED: ("stopped", "the domain was saved"),
}

InstanceInfo = tuple[str, str, int, int, int, float]
Runner = Callable[..., "defer.Deferred[Any]"]

log = Logger()


def _read_password(path: str) -> str:
    """The first line of a VNC password file (Ganeti's)."""
    with open(path, encoding="utf-8") as f:
        return f.readline().strip()


class LibvirtDown(HypervisorError):
    """The call failed because libvirtd cannot be reached (the message says so)."""


# --- functions run in the libvirt thread (conn first) --------------------------------

def _code(err: BaseException) -> int | None:
    """libvirt's error number of ``err`` (None for other exceptions)."""
    get = getattr(err, "get_error_code", None)
    return get() if callable(get) else None


def _gone_means(value: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A domain can vanish between any two calls (it powered off, QEMU died): a
    "no such domain" error anywhere in the wrapped function answers ``value``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception as err:  # libvirt.libvirtError
                if _code(err) == ERR_NO_DOMAIN:
                    return value() if callable(value) else value
                raise
        return run
    return wrap


def _not_running(name: str) -> Callable[[], Any]:
    def fail() -> Any:
        raise HypervisorError(f"instance {name} is not running")
    return fail


def _lookup(conn: Any, name: str) -> Any:
    try:
        return conn.lookupByName(name)
    except Exception as err:  # libvirt.libvirtError
        if _code(err) == ERR_NO_DOMAIN:
            return None
        raise


def _ours(dom: Any) -> dict[str, str] | None:
    """The node daemon's metadata of the domain; None for a domain it did not start."""
    meta = domainxml.read_metadata(dom.XMLDesc(0))
    return meta if meta is not None and meta.get("hypervisor") == HT else None


def _lookup_ours(conn: Any, name: str) -> Any:
    """The domain ``name`` if the node daemon started it (never touch another's)."""
    dom = _lookup(conn, name)
    return dom if dom is not None and _ours(dom) is not None else None


def _info_of(dom: Any) -> InstanceInfo:
    state, _max_kib, mem_kib, vcpus, cpu_ns = dom.info()
    hv_state = STATE_SHUTDOWN if state in (STATE_SHUTOFF, STATE_CRASHED) else STATE_RUNNING
    return (dom.name(), str(dom.ID()), int(mem_kib) // 1024, int(vcpus), hv_state,
            round(cpu_ns / 1e9, 3))


@_gone_means(None)
def _domain_info(conn: Any, name: str) -> InstanceInfo | None:
    dom = _lookup(conn, name)
    if dom is None or not dom.isActive() or _ours(dom) is None:
        return None
    return _info_of(dom)


def _all_info(conn: Any) -> list[tuple[InstanceInfo, dict[str, str]]]:
    """Every running domain the node daemon started (others on the libvirtd are not
    instances)."""
    out = []
    for dom in conn.listAllDomains(LIST_ACTIVE):
        found = _gone_means(None)(_info_and_meta)(dom)
        if found is not None:
            out.append(found)
    return out


def _info_and_meta(dom: Any) -> tuple[InstanceInfo, dict[str, str]] | None:
    meta = _ours(dom)
    return None if meta is None else (_info_of(dom), meta)


def _create(conn: Any, xml: str, paused: bool) -> int:
    dom = conn.createXML(xml, START_PAUSED if paused else 0)
    return int(dom.ID())


@_gone_means(False)
def _shutdown(conn: Any, name: str) -> bool:
    """Ask the guest to power off (ACPI); False if it cannot be asked (not running,
    paused: a destroy follows)."""
    dom = _lookup_ours(conn, name)
    if dom is None or not dom.isActive() or dom.state()[0] == STATE_PAUSED:
        return False
    try:
        dom.shutdown()
    except Exception as err:
        if _code(err) == ERR_OPERATION_INVALID:  # it stopped meanwhile
            return False
        raise
    return True


@_gone_means(False)
def _destroy(conn: Any, name: str) -> bool:
    dom = _lookup_ours(conn, name)
    if dom is None:
        return False
    try:
        dom.destroy()
    except Exception as err:
        if _code(err) != ERR_OPERATION_INVALID:  # "not running": gone meanwhile
            raise
    return True


@_gone_means(False)
def _exists(conn: Any, name: str) -> bool:
    dom = _lookup_ours(conn, name)
    return dom is not None and bool(dom.isActive())


def _reboot(conn: Any, name: str) -> None:
    dom = _gone_means(_not_running(name))(_lookup_ours)(conn, name)
    if dom is None:
        _not_running(name)()
    _gone_means(_not_running(name))(dom.reboot)(0)


@_gone_means(None)
def _xml_of(conn: Any, name: str) -> str | None:
    dom = _lookup_ours(conn, name)
    return None if dom is None else str(dom.XMLDesc(0))


def _set_memory(conn: Any, name: str, mib: int) -> None:
    dom = _gone_means(_not_running(name))(_lookup_ours)(conn, name)
    if dom is None:
        _not_running(name)()
    _gone_means(_not_running(name))(dom.setMemory)(int(mib) * 1024)


@_gone_means(False)
def _block_resize(conn: Any, name: str, path: str, size: int) -> bool:
    dom = _lookup_ours(conn, name)
    if dom is None or not dom.isActive():
        return False
    dom.blockResize(path, size, RESIZE_BYTES)
    return True


def _resize_users(conn: Any, path: str, size: int) -> list[str]:
    """Tell every running domain of ours that opens ``path`` its new size; their names."""
    told = []
    for dom in conn.listAllDomains(LIST_ACTIVE):
        xml = _gone_means("")(dom.XMLDesc)(0)
        meta = domainxml.read_metadata(xml)
        if meta is None or meta.get("hypervisor") != HT:
            continue
        for target in domainxml.disk_targets(xml, path):
            if _gone_means(False)(dom.blockResize)(target, size, RESIZE_BYTES) is not False:
                told.append(dom.name())
    return told


# --- the hypervisor ------------------------------------------------------------------

class KvmHypervisor:
    """The kvm hypervisor of one node daemon: its libvirt connection, the runtime
    state of its domains and the events they produce."""

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
        virt.on_event = self.handle_event
        virt.on_connect = lambda: defer.ensureDeferred(self.reattach())

    # --- paths --------------------------------------------------------------------
    def serial_socket(self, name: str) -> str:
        """The serial console's socket of instance ``name``."""
        return os.path.join(self.root, "ctrl", f"{name}.serial")

    def console_log(self, name: str) -> str:
        """The log of everything the serial console printed since the last start."""
        return os.path.join(self.root, "console", f"{name}.log")

    # --- calls --------------------------------------------------------------------
    async def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await self.virt.call(fn, *args)
        except LibvirtUnavailable as err:
            raise LibvirtDown(f"{what}: {err}") from None
        except VirtError as err:
            raise HypervisorError(f"{what}: libvirt: {err}") from None

    async def instance_info(self, name: str) -> InstanceInfo | None:
        """The running instance ``name``, or None."""
        info: InstanceInfo | None = await self._call(f"Failed to get instance {name}",
                                                     _domain_info, name)
        return info

    async def all_instances_info(self) -> list[InstanceInfo]:
        """Every running domain of this node."""
        found = await self._call("Failed to list instances", _all_info)
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
            found = await self.virt.call(_all_info)
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

    def _prepare_console(self, name: str) -> None:
        for path in (self.serial_socket(name), self.console_log(name)):
            os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
        try:
            os.unlink(self.serial_socket(name))
        except FileNotFoundError:
            pass
        with open(self.console_log(name), "wb"):
            pass  # truncated at each start

    async def start(self, spec: domainxml.DomainSpec, paused: bool = False) -> None:
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
            await self.run(self._prepare_console, name)
        except OSError as err:
            raise HypervisorError(f"Failed to start instance {name}: {err}") from None
        self._expected_stop.discard(name)
        self._crashed.discard(name)
        self._starting.add(name)
        try:
            await self._call(f"Failed to start instance {name}", _create, xml, paused)
        except HypervisorError:
            self._starting.discard(name)
            try:
                await self.virt.call(_destroy, name)
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
            asked = await self._call(what, _shutdown, name)
            if asked and await self._wait_gone(name, timeout):
                self.known.pop(name, None)
                return
        if not await self._call(what, _destroy, name):
            self._expected_stop.discard(name)  # it was not running: no event will come
        self.known.pop(name, None)

    async def _wait_gone(self, name: str, timeout: float) -> bool:
        deadline = self.clock.seconds() + max(0.0, float(timeout))
        while True:
            if not await self._call(f"Failed to stop instance {name}", _exists, name):
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

    async def reboot_soft(self, name: str) -> None:
        """Ask the guest to reboot (ACPI)."""
        await self._call(f"Failed to soft reboot instance {name}", _reboot, name)

    async def domain_xml(self, name: str) -> str | None:
        """The running domain's document (None if it does not run)."""
        xml: str | None = await self._call(f"Failed to read instance {name}", _xml_of, name)
        return xml

    async def balloon(self, name: str, memory: int) -> None:
        """Set the running guest's memory through its balloon device."""
        await self._call(f"Failed to balloon memory for {name}", _set_memory, name, memory)

    async def block_resize(self, name: str, path: str, size: int) -> bool:
        """Tell the running domain that its disk at ``path`` is now ``size`` bytes."""
        done: bool = await self._call(f"Failed to resize a disk of {name}", _block_resize,
                                      name, path, size)
        return done

    async def disk_grown(self, path: str, size: int) -> list[str]:
        """A disk at ``path`` is now ``size`` bytes: tell the running guests that use it
        (libvirt's blockResize); the names of those told."""
        told: list[str] = await self._call(f"Failed to tell guests that {path} grew",
                                           _resize_users, path, size)
        return told

    # --- events (reactor) ------------------------------------------------------------
    def handle_event(self, name: str, event: int, detail: int) -> None:
        """A lifecycle event of domain ``name`` from libvirt (other domains of the
        libvirtd than ours are ignored)."""
        if not (name in self.known or name in self._starting or name in self._expected_stop
                or name in self._crashed):
            return
        if event == EVENT_STARTED:
            self._emit(name, "started", "the domain started")
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

    def _emit(self, name: str, kind: str, reason: str) -> None:
        if self.events is not None:
            self.events.emit(name, HT, kind, reason)

    async def close(self) -> None:
        """End the libvirt thread (the daemon stops; the guests keep running)."""
        await self.virt.stop()
