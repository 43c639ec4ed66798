"""The kvm hypervisor's libvirt calls: functions run in the libvirt thread
(:meth:`ganeti.noded.hypervisors.virt.VirtConnection.call`), the connection first.

Only domains whose metadata says the node daemon started them are instances
(:func:`ours`); a domain may vanish between any two calls (it powered off, QEMU
died), which every function here takes as "not running" (:func:`gone_means`).
libvirt's numbers are kept here so that this module imports without libvirt.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ganeti.core import constants
from ganeti.noded.hypervisors import domainxml
from ganeti.noded.hypervisors.base import HypervisorError, InstanceInfo

HT = constants.HT_KVM

ERR_NO_DOMAIN = 42
ERR_OPERATION_INVALID = 55
START_PAUSED = 1
LIST_ACTIVE = 1
RESIZE_BYTES = 1
STATE_PAUSED = 3
STATE_SHUTOFF = 5
STATE_CRASHED = 6

def code(err: BaseException) -> int | None:
    """libvirt's error number of ``err`` (None for other exceptions)."""
    get = getattr(err, "get_error_code", None)
    return get() if callable(get) else None


def gone_means(value: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A domain can vanish between any two calls (it powered off, QEMU died): a
    "no such domain" error anywhere in the wrapped function answers ``value``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any) -> Any:
            try:
                return fn(*args)
            except Exception as err:  # libvirt.libvirtError
                if code(err) == ERR_NO_DOMAIN:
                    return value() if callable(value) else value
                raise
        return run
    return wrap


def not_running(name: str) -> Callable[[], Any]:
    def fail() -> Any:
        raise HypervisorError(f"instance {name} is not running")
    return fail


def lookup(conn: Any, name: str) -> Any:
    try:
        return conn.lookupByName(name)
    except Exception as err:  # libvirt.libvirtError
        if code(err) == ERR_NO_DOMAIN:
            return None
        raise


def ours(dom: Any) -> dict[str, str] | None:
    """The node daemon's metadata of the domain; None for a domain it did not start."""
    meta = domainxml.read_metadata(dom.XMLDesc(0))
    return meta if meta is not None and meta.get("hypervisor") == HT else None


def lookup_ours(conn: Any, name: str) -> Any:
    """The domain ``name`` if the node daemon started it (never touch another's)."""
    dom = lookup(conn, name)
    return dom if dom is not None and ours(dom) is not None else None


def info_of(dom: Any) -> InstanceInfo:
    state, _max_kib, mem_kib, vcpus, cpu_ns = dom.info()
    hv_state = (constants.HV_STATE_SHUTDOWN if state in (STATE_SHUTOFF, STATE_CRASHED)
                else constants.HV_STATE_RUNNING)
    return InstanceInfo(dom.name(), str(dom.ID()), int(mem_kib) // 1024, int(vcpus), hv_state,
                        round(cpu_ns / 1e9, 3))


@gone_means(None)
def domain_info(conn: Any, name: str) -> InstanceInfo | None:
    dom = lookup(conn, name)
    if dom is None or not dom.isActive() or ours(dom) is None:
        return None
    return info_of(dom)


def all_info(conn: Any) -> list[tuple[InstanceInfo, dict[str, str]]]:
    """Every running domain the node daemon started (others on the libvirtd are not
    instances)."""
    out = []
    for dom in conn.listAllDomains(LIST_ACTIVE):
        found = gone_means(None)(info_and_meta)(dom)
        if found is not None:
            out.append(found)
    return out


def info_and_meta(dom: Any) -> tuple[InstanceInfo, dict[str, str]] | None:
    meta = ours(dom)
    return None if meta is None else (info_of(dom), meta)


def create(conn: Any, xml: str, paused: bool) -> int:
    dom = conn.createXML(xml, START_PAUSED if paused else 0)
    return int(dom.ID())


@gone_means(False)
def shutdown(conn: Any, name: str) -> bool:
    """Ask the guest to power off (ACPI); False if it cannot be asked (not running,
    paused: a destroy follows)."""
    dom = lookup_ours(conn, name)
    if dom is None or not dom.isActive() or dom.state()[0] == STATE_PAUSED:
        return False
    try:
        dom.shutdown()
    except Exception as err:
        if code(err) == ERR_OPERATION_INVALID:  # it stopped meanwhile
            return False
        raise
    return True


@gone_means(False)
def destroy(conn: Any, name: str) -> bool:
    dom = lookup_ours(conn, name)
    if dom is None:
        return False
    try:
        dom.destroy()
    except Exception as err:
        if code(err) != ERR_OPERATION_INVALID:  # "not running": gone meanwhile
            raise
    return True


@gone_means(False)
def exists(conn: Any, name: str) -> bool:
    dom = lookup_ours(conn, name)
    return dom is not None and bool(dom.isActive())


def reboot(conn: Any, name: str) -> None:
    dom = gone_means(not_running(name))(lookup_ours)(conn, name)
    if dom is None:
        not_running(name)()
    gone_means(not_running(name))(dom.reboot)(0)


#: libvirt's VIR_DOMAIN_XML_MIGRATABLE: the document a migration's destination takes.
XML_MIGRATABLE = 8


@gone_means(None)
def xml_of(conn: Any, name: str, flags: int = 0) -> str | None:
    dom = lookup_ours(conn, name)
    return None if dom is None else str(dom.XMLDesc(flags))


def set_memory(conn: Any, name: str, mib: int) -> None:
    dom = gone_means(not_running(name))(lookup_ours)(conn, name)
    if dom is None:
        not_running(name)()
    gone_means(not_running(name))(dom.setMemory)(int(mib) * 1024)


@gone_means(False)
def block_resize(conn: Any, name: str, path: str, size: int) -> bool:
    dom = lookup_ours(conn, name)
    if dom is None or not dom.isActive():
        return False
    dom.blockResize(path, size, RESIZE_BYTES)
    return True


def resize_users(conn: Any, path: str, size: int) -> list[str]:
    """Tell every running domain of ours that opens ``path`` its new size; their names."""
    told = []
    for dom in conn.listAllDomains(LIST_ACTIVE):
        xml = gone_means("")(dom.XMLDesc)(0)
        meta = domainxml.read_metadata(xml)
        if meta is None or meta.get("hypervisor") != HT:
            continue
        for target in domainxml.disk_targets(xml, path):
            if gone_means(False)(dom.blockResize)(target, size, RESIZE_BYTES) is not False:
                told.append(dom.name())
    return told


def suspend_nbd_users(conn: Any, host: str, port: int) -> list[str]:
    """Suspend every running domain of ours with an NBD disk at ``host:port`` (its
    vCPUs stop and its block I/O drains: nothing it writes reaches the disk until it
    resumes); their names."""
    paused = []
    for dom in conn.listAllDomains(LIST_ACTIVE):
        xml = gone_means("")(dom.XMLDesc)(0)
        meta = domainxml.read_metadata(xml)
        if meta is None or meta.get("hypervisor") != HT \
                or not domainxml.nbd_disks(xml, host, port):
            continue
        if gone_means(False)(dom.suspend)() is not False:
            paused.append(dom.name())
    return paused


def resume_all(conn: Any, names: list[str]) -> None:
    """Resume the domains ``names`` (one gone meanwhile is no error)."""
    for name in names:
        dom = lookup_ours(conn, name)
        if dom is not None:
            gone_means(None)(dom.resume)()
