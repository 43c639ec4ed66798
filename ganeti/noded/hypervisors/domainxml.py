"""libvirt domain XML from an instance's filled kvm parameters (pure; no libvirt).

The mapping docs/design/hypervisor-kvm.md describes: Ganeti's kvm hypervisor
parameters, the backend parameters and the node's view of the disks and NICs
become one ``<domain>`` document for ``createXML`` (a transient domain).  A
parameter value this mapping cannot express raises :class:`UnsupportedParameter`
naming it; :data:`IGNORED` lists the parameters that do not change the domain
(migration settings, or what the node handles around the domain).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import hvchecks

#: Domain types: ``kvm`` where the node found that KVM boots a guest, else TCG.
ACCEL_KVM = "kvm"
ACCEL_TCG = "qemu"

#: Ganeti's disk_type / nic_type values and libvirt's bus / model for them.
DISK_BUSES = {"paravirtual": "virtio", "ide": "ide", "scsi": "scsi", "sd": "sd",
              "mtd": None, "pflash": None}
NIC_MODELS = {"paravirtual": "virtio", "e1000": "e1000", "i82551": "i82551",
              "i8259er": "i82559er", "i82559er": "i82559er", "pcnet": "pcnet",
              "rtl8139": "rtl8139", "ne2k_pci": "ne2k_pci", "ne2k_isa": "ne2k_isa"}
DISK_CACHES = {"default": None, "none": "none", "writethrough": "writethrough",
               "writeback": "writeback"}
BOOT_DEVICES = {"disk": "hd", "cdrom": "cdrom", "network": "network", "floppy": "fd"}
#: Parameters that never change the domain document.
IGNORED = frozenset({
    "migration_bandwidth", "migration_downtime", "migration_mode", "migration_port",
    "reboot_behavior", "user_shutdown", "kvm_flag", "security_model", "security_domain",
    "root_path", "keymap", "acpi", "use_localtime",
})

#: Parameters the document is made from (a test keeps MAPPED | IGNORED equal to
#: every kvm parameter, so that a new one is a decision, not an oversight).
MAPPED = frozenset({
    "boot_order", "cdrom_image_path", "cpu_cores", "cpu_mask", "cpu_sockets", "cpu_threads",
    "cpu_type", "disk_cache", "disk_type", "initrd_path", "kernel_args", "kernel_path",
    "kvm_extra", "machine_version", "mem_path", "nic_type", "serial_console", "serial_speed",
    "usb_mouse", "vnc_bind_address", "vnc_password_file", "vnc_tls",
})

#: The namespace of the node daemon's ``<metadata>`` element.
METADATA_NS = "http://ganeti.org/ns/kvm-instance/1"
METADATA_TAG = f"{{{METADATA_NS}}}instance"
ET.register_namespace("ganeti", METADATA_NS)

_CPU_MASK = re.compile(r"all|\d+(-\d+)?(,\d+(-\d+)?)*")


class UnsupportedParameter(ValueError):
    """A parameter value the domain cannot express; ``param`` names it."""

    def __init__(self, param: str, why: str) -> None:
        super().__init__(f"Parameter '{param}' cannot be honoured: {why}")
        self.param = param


@dataclass(frozen=True)
class DiskSpec:
    """A disk as the node has it: a file or block device path; ``offset`` and
    ``size`` (bytes) select a range of it (a volume's extents on its PV, where
    device-mapper is missing).  With ``nbd`` (host, port) the disk is the NBD
    export named ``path`` there (a mirrored disk of the ``qemu`` engine: the
    node's own mirror daemon)."""

    path: str
    block: bool = False
    read_only: bool = False
    offset: int | None = None
    size: int | None = None
    nbd: tuple[str, int] | None = None


@dataclass(frozen=True)
class NicSpec:
    """A NIC: its MAC, the bridge it joins (bridged mode) or the tap the node made."""

    mac: str
    bridge: str | None = None
    tap: str | None = None


@dataclass(frozen=True)
class DomainSpec:
    """Everything the document is made from."""

    name: str
    uuid: str
    hvparams: Mapping[str, Any]
    memory_mib: int
    vcpus: int
    disks: Sequence[DiskSpec] = ()
    nics: Sequence[NicSpec] = ()
    accel: str = ACCEL_TCG
    vnc_port: int | None = None
    uid: int | None = None  # from the uid pool (pool) or the user's (security_model=user)
    gid: int | None = None  # the user's group (user); the uid's number otherwise
    emulator: str | None = None
    #: the serial console as a unix socket QEMU listens on, with a log of its output
    #: (else a pty); see the shared interfaces of issue 17, item 3
    serial_socket: str | None = None
    serial_log: str | None = None
    #: the VNC password (first line of ``vnc_password_file``, read by the node)
    vnc_password: str | None = None
    #: what the node daemon finds again after a restart (``<metadata>``)
    metadata: Mapping[str, str] | None = None


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrs)
    if text is not None:
        element.text = text
    return element


def _choice(hv: Mapping[str, Any], param: str, table: Mapping[str, Any]) -> Any:
    value = hv.get(param)
    if not isinstance(value, str) or value not in table:
        raise UnsupportedParameter(param, f"unknown value {value!r}")
    mapped = table[value]
    if mapped is None and value not in ("default",):
        raise UnsupportedParameter(param, f"'{value}' is not available through libvirt")
    return mapped


def cpu_set(mask: str) -> str | None:
    """One CPU list of a ``cpu_mask`` as libvirt's cpuset (None for ``all``)."""
    if not _CPU_MASK.fullmatch(mask):
        raise UnsupportedParameter("cpu_mask", f"'{mask}' is not a CPU list")
    return None if mask == "all" else mask


def cpu_pins(mask: str, vcpus: int) -> tuple[str | None, list[tuple[int, str]]]:
    """A ``cpu_mask`` as (cpuset of the domain, [(vCPU, cpuset), ...]).

    One list pins every vCPU; Ganeti's per-vCPU masks (``0-1:all:3``, one entry
    per vCPU, as many as the instance has) pin each vCPU (``<vcpupin>``)."""
    if ":" not in mask:
        return cpu_set(mask), []
    parts = mask.split(":")
    if len(parts) != vcpus:
        raise UnsupportedParameter("cpu_mask", f"{len(parts)} CPU masks for "
                                               f"{vcpus} vCPU(s)")
    pins = []
    for index, part in enumerate(parts):
        cpuset = cpu_set(part)
        if cpuset is not None:
            pins.append((index, cpuset))
    return None, pins


def _os(domain: ET.Element, spec: DomainSpec) -> None:
    hv = spec.hvparams
    os_el = _sub(domain, "os")
    machine = str(hv.get("machine_version") or "")
    _sub(os_el, "type", "hvm", arch="x86_64", **({"machine": machine} if machine else {}))
    kernel = str(hv.get("kernel_path") or "")
    if kernel:
        _sub(os_el, "kernel", kernel)
        initrd = str(hv.get("initrd_path") or "")
        if initrd:
            _sub(os_el, "initrd", initrd)
        args = str(hv.get("kernel_args") or "")
        root = str(hv.get("root_path") or "")
        # the serial console at serial_speed, unless kernel_args name one already
        if hv.get("serial_console") and not any(a.startswith("console=ttyS0")
                                                for a in args.split()):
            args = f"{args} console=ttyS0,{int(hv.get('serial_speed') or 38400)}".strip()
        _sub(os_el, "cmdline", f"root={root} {args}".strip() if root else args)
    else:
        _sub(os_el, "boot", dev=_choice(hv, "boot_order", BOOT_DEVICES))


def _cpu(domain: ET.Element, spec: DomainSpec) -> None:
    hv = spec.hvparams
    cpuset, pins = cpu_pins(str(hv.get("cpu_mask") or "all"), spec.vcpus)
    _sub(domain, "vcpu", str(spec.vcpus), placement="static",
         **({"cpuset": cpuset} if cpuset else {}))
    if pins:
        tune = _sub(domain, "cputune")
        for vcpu, pinned in pins:
            _sub(tune, "vcpupin", vcpu=str(vcpu), cpuset=pinned)
    cores, threads, sockets = (int(hv.get(k) or 0)
                               for k in ("cpu_cores", "cpu_threads", "cpu_sockets"))
    cpu_type = str(hv.get("cpu_type") or "")
    if not (cpu_type or cores or threads or sockets):
        return
    cpu = _sub(domain, "cpu", **({"mode": "custom", "match": "exact"} if cpu_type else {}))
    if cpu_type:
        _sub(cpu, "model", cpu_type, fallback="forbid")
    if cores or threads or sockets:
        cores, threads = cores or 1, threads or 1
        sockets = sockets or max(1, spec.vcpus // (cores * threads))
        if sockets * cores * threads != spec.vcpus:
            raise UnsupportedParameter(
                "cpu_sockets", f"{sockets} socket(s) x {cores} core(s) x {threads} "
                               f"thread(s) is not the instance's {spec.vcpus} vCPU(s)")
        _sub(cpu, "topology", sockets=str(sockets), cores=str(cores), threads=str(threads))


def _disks(devices: ET.Element, spec: DomainSpec) -> None:
    hv = spec.hvparams
    bus = _choice(hv, "disk_type", DISK_BUSES)
    cache = _choice(hv, "disk_cache", DISK_CACHES)
    prefix = {"virtio": "vd", "scsi": "sd", "sd": "sd", "ide": "hd"}[bus]
    for index, disk in enumerate(spec.disks):
        kind = "network" if disk.nbd else "block" if disk.block else "file"
        el = _sub(devices, "disk", type=kind, device="disk")
        _sub(el, "driver", name="qemu", type="raw", **({"cache": cache} if cache else {}))
        if disk.nbd:
            source = _sub(el, "source", protocol="nbd", name=disk.path)
            _sub(source, "host", name=disk.nbd[0], port=str(disk.nbd[1]))
        else:
            source = _sub(el, "source", **({"dev": disk.path} if disk.block else
                                           {"file": disk.path}))
        if disk.offset is not None or disk.size is not None:
            # a range of the file or device (libvirt's <slices>, inside <source>)
            slices = _sub(source, "slices")
            _sub(slices, "slice", type="storage", offset=str(disk.offset or 0),
                 size=str(disk.size or 0))
        _sub(el, "target", dev=f"{prefix}{chr(ord('a') + index)}", bus=bus)
        if disk.read_only:
            _sub(el, "readonly")
    cdrom = str(hv.get("cdrom_image_path") or "")
    if cdrom:
        el = _sub(devices, "disk", type="file", device="cdrom")
        _sub(el, "driver", name="qemu", type="raw")
        _sub(el, "source", file=cdrom)
        _sub(el, "target", dev="hdc", bus="ide")
        _sub(el, "readonly")


def _nics(devices: ET.Element, spec: DomainSpec) -> None:
    model = _choice(spec.hvparams, "nic_type", NIC_MODELS)
    for nic in spec.nics:
        if nic.bridge:
            el = _sub(devices, "interface", type="bridge")
            _sub(el, "source", bridge=nic.bridge)
        elif nic.tap:
            el = _sub(devices, "interface", type="ethernet")
            _sub(el, "target", dev=nic.tap, managed="no")
        else:
            raise UnsupportedParameter("nic_type", f"NIC {nic.mac} has neither a bridge "
                                                   "nor a tap")
        _sub(el, "mac", address=nic.mac)
        _sub(el, "model", type=model)
        _sub(el, "driver", name="qemu")  # no vhost-net


def _consoles(devices: ET.Element, spec: DomainSpec) -> None:
    hv = spec.hvparams
    if hv.get("serial_console"):
        kind = "unix" if spec.serial_socket else "pty"
        serial = _sub(devices, "serial", type=kind)
        if spec.serial_socket:
            _sub(serial, "source", mode="bind", path=spec.serial_socket)
            if spec.serial_log:
                _sub(serial, "log", file=spec.serial_log, append="off")
        _sub(serial, "target", port="0")
        # the console is the first serial port (libvirt's alias of it)
        console = _sub(devices, "console", type=kind)
        if spec.serial_socket:
            _sub(console, "source", mode="bind", path=spec.serial_socket)
        _sub(console, "target", type="serial", port="0")
    address = str(hv.get("vnc_bind_address") or "")
    if address:
        if spec.vnc_port is None:
            raise UnsupportedParameter("vnc_bind_address", "no VNC port was allocated")
        if hv.get("vnc_tls"):
            raise UnsupportedParameter("vnc_tls", "VNC over TLS is not supported yet")
        attrs = {"port": str(spec.vnc_port), "autoport": "no", "listen": address}
        if spec.vnc_password:
            attrs["passwd"] = spec.vnc_password
        _sub(devices, "graphics", type="vnc", **attrs)
    if hv.get("usb_mouse"):
        _sub(devices, "input", type=str(hv["usb_mouse"]), bus="usb")


def domain_xml(spec: DomainSpec) -> str:
    """The domain document for ``spec``; UnsupportedParameter names what cannot be done."""
    hv = spec.hvparams
    refused = hvchecks.kvm_libvirt_refusal(hv)  # the master's syntax check, again
    if refused is not None:
        raise UnsupportedParameter(*refused)
    if spec.accel not in (ACCEL_KVM, ACCEL_TCG):
        raise UnsupportedParameter("kvm_flag", f"unknown domain type {spec.accel!r}")
    for param in ("mem_path", "kvm_extra"):
        if hv.get(param):
            raise UnsupportedParameter(param, "not expressible in a libvirt domain")
    domain = ET.Element("domain", type=spec.accel)
    _sub(domain, "name", spec.name)
    _sub(domain, "uuid", spec.uuid)
    if spec.metadata:
        meta = _sub(domain, "metadata")
        ET.SubElement(meta, METADATA_TAG, {k: str(v) for k, v in spec.metadata.items()})
    _sub(domain, "memory", str(spec.memory_mib), unit="MiB")
    _cpu(domain, spec)
    _os(domain, spec)
    features = _sub(domain, "features")
    if hv.get("acpi", True):
        _sub(features, "acpi")
    _sub(domain, "clock", offset="localtime" if hv.get("use_localtime") else "utc")
    _sub(domain, "on_poweroff", "destroy")
    _sub(domain, "on_reboot", "destroy" if hv.get("reboot_behavior") == "exit" else "restart")
    _sub(domain, "on_crash", "destroy")
    devices = _sub(domain, "devices")
    if spec.emulator:
        _sub(devices, "emulator", spec.emulator)
    _disks(devices, spec)
    _nics(devices, spec)
    _consoles(devices, spec)
    if spec.uid is not None:
        label = _sub(domain, "seclabel", type="static", model="dac", relabel="yes")
        gid = spec.uid if spec.gid is None else spec.gid
        _sub(label, "label", f"+{spec.uid}:+{gid}")
    ET.indent(domain)
    return ET.tostring(domain, encoding="unicode")


def read_metadata(xml: str) -> dict[str, str] | None:
    """The node daemon's ``<metadata>`` of a domain document; None if it has none
    (a domain the node daemon did not start)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return None
    element = root.find(f"metadata/{METADATA_TAG}")
    return None if element is None else dict(element.attrib)


def _targets(xml: str, opens: Callable[[ET.Element], bool]) -> list[str]:
    """The target devices (``vda``...) of a domain document's disks whose ``<source>``
    ``opens`` accepts."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return []
    found = []
    for disk in root.findall("devices/disk"):
        source, target = disk.find("source"), disk.find("target")
        if source is not None and target is not None and target.get("dev") \
                and opens(source):
            found.append(str(target.get("dev")))
    return found


def disk_targets(xml: str, path: str) -> list[str]:
    """The target devices of a domain document's disks opened at ``path``."""
    return _targets(xml, lambda source: path in (source.get("file"), source.get("dev")))


def nbd_disks(xml: str, host: str, port: int) -> list[str]:
    """The target devices of a domain document's NBD disks at ``host:port``."""
    return _targets(xml, lambda source: source.get("protocol") == "nbd" and any(
        h.get("name") == host and h.get("port") == str(port) for h in source.findall("host")))


def moved_nbd_hosts(xml: str, hosts: Mapping[tuple[str, int], str]) -> str | None:
    """The domain document with its NBD disks' hosts replaced: ``hosts`` maps a
    (host, port) the source opens to the host the destination opens (a mirrored
    disk is served by each node's own mirror daemon at the node's address).  None
    when no disk changes (the document as it is serves the destination)."""
    root = ET.fromstring(xml)
    changed = False
    for disk in root.findall("devices/disk"):
        source = disk.find("source")
        if disk.get("type") != "network" or source is None or source.get("protocol") != "nbd":
            continue
        for host in source.findall("host"):
            try:
                key = (str(host.get("name")), int(host.get("port") or 0))
            except ValueError:
                continue
            if key in hosts:
                host.set("name", hosts[key])
                changed = True
    return ET.tostring(root, encoding="unicode") if changed else None
