"""The hypervisor parameter checks: cheap syntax checks on the master, the facts the
nodes check, and the files the parameters name.

Ganeti checks hypervisor parameters twice: ``CheckParameterSyntax`` on the
master (values only, no access to the world) and ``ValidateParameters`` on
the nodes (files exist, users exist, ...).  This module holds the first and
the tables both use: per hypervisor, each parameter's check
(:class:`Param`: required or not, a value test with Ganeti's message, and the
kind of thing the node must find), then the checks that look at several
parameters together.  The node side is :mod:`ganeti.noded.hvvalidate`.

Only the parameters present in the dictionary are checked: this project's kvm
knows a subset of Ganeti's parameters, the others every parameter of Ganeti's
(``constants.HVC_DEFAULTS``); names the hypervisor does not know are refused
before this, by the caller.
Messages are Ganeti's (hypervisor/hv_base.py, hv_kvm/validation.py, hv_xen.py),
raised as ``OpPrereqError(..., ECODE_INVAL)`` naming the parameter.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

# --- the values Ganeti allows (Ganeti's constants) -----------------------------------

MIGRATION_MODES = ("live", "non-live")
KVM_BOOT_ORDERS = ("cdrom", "disk", "floppy", "network")
KVM_NIC_TYPES = ("e1000", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci",
                 "paravirtual", "pcnet", "rtl8139")
KVM_DISK_TYPES = ("ide", "mtd", "paravirtual", "pflash", "scsi", "scsi-block", "scsi-cd",
                  "scsi-generic", "scsi-hd", "sd")
KVM_SCSI_CONTROLLER_TYPES = ("lsi", "megasas", "virtio-scsi-pci")
CACHE_TYPES = ("default", "none", "writeback", "writethrough")
KVM_AIO_TYPES = ("native", "threads")
DISCARD_TYPES = ("default", "ignore", "unmap")
KVM_MOUSE_TYPES = ("mouse", "tablet")
KVM_FLAG_VALUES = ("disabled", "enabled")
REBOOT_BEHAVIORS = ("reboot", "exit")
SERIAL_SPEEDS = (75, 110, 300, 600, 1200, 1800, 2400, 4800, 9600, 14400, 19200, 28800,
                 38400, 57600, 115200, 230400, 345600, 460800)
SPICE_LOSSLESS_COMPR = ("auto_glz", "auto_lz", "glz", "lz", "off", "quic")
SPICE_LOSSY_COMPR = ("always", "auto", "never")
SPICE_VIDEO_DETECTION = ("all", "filter", "off")
HVM_NIC_TYPES = ("e1000", "ne2k_isa", "ne2k_pci", "paravirtual", "rtl8139")
HVM_DISK_TYPES = ("ioemu", "paravirtual")
HVM_VIF_TYPES = ("ioemu", "vif")
XEN_COMMANDS = ("xl", "xm")
QEMU_PCI_SLOTS = 32

#: Security models of kvm (``security_model``).
SM_NONE = "none"
SM_USER = "user"
SM_POOL = "pool"
SECURITY_MODELS = (SM_NONE, SM_POOL, SM_USER)

#: What the node must find for a parameter's value (:mod:`ganeti.noded.hvvalidate`).
NODE_FILE = "file"
NODE_DIR = "dir"
NODE_FILE_OR_URL = "file-or-url"

#: Parameters whose value names a VNC password file (Ganeti's VNC password design):
#: the files in use are shipped to the nodes with the ancillary files.
VNC_PASSWORD_FILE = "vnc_password_file"
VNC_HYPERVISORS = (c.HT_KVM, c.HT_XEN_HVM)

_URL_RE = re.compile(r"^(https?|ftp)://", re.I)


# --- value tests ------------------------------------------------------------------

def is_norm_abs_path(value: Any) -> bool:
    """Ganeti's IsNormAbsPath: absolute and normalised (no ``..``, no ``//``)."""
    return isinstance(value, str) and os.path.isabs(value) and os.path.normpath(value) == value


def is_url(value: Any) -> bool:
    return isinstance(value, str) and _URL_RE.match(value) is not None


def is_ip(value: Any, version: int | None = None) -> bool:
    """Whether ``value`` is an IP address (of ``version`` if given)."""
    if not isinstance(value, str):
        return False
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        return False
    return version is None or addr.version == version


def parse_cpu_mask(mask: str) -> list[int]:
    """Ganeti's ParseCpuMask: ``"0-2,5"`` -> ``[0, 1, 2, 5]``; ValueError if malformed."""
    if not mask:
        return []
    cpus: list[int] = []
    for part in mask.split(","):
        bounds = part.split("-")
        if len(bounds) > 2:
            raise ValueError(f"Invalid CPU ID range definition (only one hyphen allowed): "
                             f"{part}")
        low, high = int(bounds[0]), int(bounds[-1])
        if low > high:
            raise ValueError(f"Invalid CPU ID range definition ({low} > {high}): {part}")
        cpus.extend(range(low, high + 1))
    return cpus


def is_cpu_mask(value: Any) -> bool:
    """A single CPU mask: a non-empty list of CPU IDs and ranges."""
    try:
        return isinstance(value, str) and len(parse_cpu_mask(value)) > 0
    except ValueError:
        return False


def is_multi_cpu_mask(value: Any) -> bool:
    """Ganeti's multiple CPU mask: masks or ``all`` separated by ``:``."""
    if not isinstance(value, str):
        return False
    try:
        for part in value.split(":"):
            if part != "all":
                parse_cpu_mask(part)
    except ValueError:
        return False
    return True


def _int_in(low: int, high: int) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and low < value < high
    return check


def _non_negative(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# --- the tables -------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One parameter's checks (Ganeti's PARAMETERS tuple).

    ``required``: an unspecified value (``None`` or ``""``) is refused;
    ``check``/``message``: the master's value test and what it says when it
    fails; ``node``: what the node must find for a value (NODE_*), or None.
    """

    required: bool = False
    check: Callable[[Any], bool] | None = None
    message: str = ""
    node: str | None = None


NO_CHECK = Param()
REQUIRED = Param(required=True)
MIGRATION_MODE = Param(True, lambda v: v in MIGRATION_MODES, "invalid migration mode")
NET_PORT = Param(True, _int_in(0, 65535), "invalid port number")
REQ_NON_NEGATIVE = Param(True, _non_negative, "cannot be negative")
OPT_NON_NEGATIVE = Param(False, _non_negative, "cannot be negative")
REQ_FILE = Param(True, is_norm_abs_path, "must be an absolute normalized path", NODE_FILE)
OPT_FILE = Param(False, is_norm_abs_path, "must be an absolute normalized path", NODE_FILE)
OPT_FILE_OR_URL = Param(False, lambda v: is_norm_abs_path(v) or is_url(v),
                        "must be an absolute normalized path or a URL", NODE_FILE_OR_URL)
OPT_DIR = Param(False, is_norm_abs_path, "must be an absolute normalized path", NODE_DIR)
OPT_CPU_MASK = Param(False, is_cpu_mask, "CPU mask definition is not well-formed")
OPT_MULTI_CPU_MASK = Param(False, is_multi_cpu_mask,
                           "Multiple CPU mask definition is not well-formed")


def in_set(required: bool, values: tuple[Any, ...]) -> Param:
    """Ganeti's ParamInSet: the value must be one of ``values``."""
    allowed = frozenset(values)
    return Param(required, lambda v: v in allowed,
                 "The value must be one of: " + ", ".join(str(v) for v in sorted(values)))


KVM: dict[str, Param] = {
    "kvm_path": REQ_FILE,
    "kernel_path": OPT_FILE,
    "initrd_path": OPT_FILE,
    "vnc_x509_path": OPT_DIR,
    "vnc_password_file": OPT_FILE,
    "spice_ip_version": Param(False, lambda v: v in (0, 4, 6),
                              "The SPICE IP version should be 4 or 6"),
    "spice_password_file": OPT_FILE,
    "spice_image_compression": in_set(False, SPICE_LOSSLESS_COMPR),
    "spice_jpeg_wan_compression": in_set(False, SPICE_LOSSY_COMPR),
    "spice_zlib_glz_wan_compression": in_set(False, SPICE_LOSSY_COMPR),
    "spice_streaming_video": in_set(False, SPICE_VIDEO_DETECTION),
    "floppy_image_path": OPT_FILE,
    "cdrom_image_path": OPT_FILE_OR_URL,
    "cdrom2_image_path": OPT_FILE_OR_URL,
    "boot_order": in_set(True, KVM_BOOT_ORDERS),
    "nic_type": in_set(True, KVM_NIC_TYPES),
    "disk_type": in_set(True, KVM_DISK_TYPES),
    "scsi_controller_type": in_set(True, KVM_SCSI_CONTROLLER_TYPES),
    "disk_discard": in_set(False, DISCARD_TYPES),
    "cdrom_disk_type": in_set(False, KVM_DISK_TYPES),
    "usb_mouse": in_set(False, KVM_MOUSE_TYPES),
    "migration_port": NET_PORT,
    "migration_bandwidth": REQ_NON_NEGATIVE,
    "migration_downtime": REQ_NON_NEGATIVE,
    "migration_mode": MIGRATION_MODE,
    "disk_cache": in_set(True, CACHE_TYPES),
    "disk_aio": in_set(False, KVM_AIO_TYPES),
    "security_model": in_set(True, SECURITY_MODELS),
    "kvm_flag": in_set(False, KVM_FLAG_VALUES),
    "virtio_net_queues": Param(False, _int_in(0, 9), "invalid number of queues"),
    "mem_path": OPT_DIR,
    "reboot_behavior": in_set(True, REBOOT_BEHAVIORS),
    "cpu_mask": OPT_MULTI_CPU_MASK,
    "cpu_cores": OPT_NON_NEGATIVE,
    "cpu_threads": OPT_NON_NEGATIVE,
    "cpu_sockets": OPT_NON_NEGATIVE,
    "kvm_pci_reservations": Param(False, lambda v: isinstance(v, int) and
                                  0 <= v <= QEMU_PCI_SLOTS,
                                  f"The number of PCI slots managed by QEMU (max: "
                                  f"{QEMU_PCI_SLOTS})"),
}

_XEN_COMMON: dict[str, Param] = {
    "kernel_path": REQ_FILE,
    "initrd_path": OPT_FILE,
    "migration_port": NET_PORT,
    "migration_mode": MIGRATION_MODE,
    "reboot_behavior": in_set(True, REBOOT_BEHAVIORS),
    "cpu_mask": OPT_MULTI_CPU_MASK,
    "vif_script": OPT_FILE,
    "xen_cmd": in_set(True, XEN_COMMANDS),
}

XEN_PVM: dict[str, Param] = {
    **_XEN_COMMON,
    "bootloader_path": OPT_FILE,
    "cpu_cap": OPT_NON_NEGATIVE,
    "cpu_weight": Param(False, _int_in(0, 65536), "invalid weight"),
}

XEN_HVM: dict[str, Param] = {
    **_XEN_COMMON,
    "boot_order": Param(True, lambda v: isinstance(v, str) and bool(v) and
                        not v.strip("acdn"),
                        "Invalid boot order specified, must be one or more of [acdn]"),
    "cdrom_image_path": OPT_FILE,
    "disk_type": in_set(True, HVM_DISK_TYPES),
    "nic_type": in_set(True, HVM_NIC_TYPES),
    "vnc_bind_address": Param(False, lambda v: is_ip(v, 4),
                              "VNC bind address is not a valid IP address"),
    "device_model": REQ_FILE,
    "vnc_password_file": REQ_FILE,
    "cpu_weight": Param(False, _int_in(0, 65535), "invalid weight"),
    "vif_type": in_set(False, HVM_VIF_TYPES),
}

LXC: dict[str, Param] = {
    "cpu_mask": OPT_CPU_MASK,
    "num_ttys": REQ_NON_NEGATIVE,
    "startup_timeout": OPT_NON_NEGATIVE,
}

CHROOT: dict[str, Param] = {
    "init_script": Param(True, is_norm_abs_path, "must be an absolute normalized path"),
}

FAKE: dict[str, Param] = {"migration_mode": MIGRATION_MODE}

PARAMETERS: dict[str, dict[str, Param]] = {
    c.HT_KVM: KVM, c.HT_XEN_PVM: XEN_PVM, c.HT_XEN_HVM: XEN_HVM, c.HT_LXC: LXC,
    c.HT_CHROOT: CHROOT, c.HT_FAKE: FAKE,
}

#: SPICE parameters that need ``spice_bind`` (Ganeti's _SPICE_ADDITIONAL_PARAMS).
SPICE_ADDITIONAL = ("spice_ip_version", "spice_password_file", "spice_image_compression",
                    "spice_jpeg_wan_compression", "spice_zlib_glz_wan_compression",
                    "spice_streaming_video", "spice_use_tls")


def unspecified(value: Any) -> bool:
    """Ganeti's _IsParamValueUnspecified: ``None`` or the empty string."""
    return value is None or value == ""


def _fail(name: str, why: str) -> OpPrereqError:
    return OpPrereqError(f"Parameter '{name}' fails syntax check: {why}", ECODE_INVAL)


# --- the entry point ----------------------------------------------------------------

def check_syntax(hypervisor: str, hvparams: Mapping[str, Any]) -> None:
    """Ganeti's ``CheckParameterSyntax`` of ``hypervisor`` on filled parameters.

    Raises ``OpPrereqError(..., ECODE_INVAL)`` naming the first parameter that
    fails; looks at nothing but the values.  A hypervisor without a table
    (none today) has nothing to check.
    """
    table = PARAMETERS.get(hypervisor, {})
    for name, param in table.items():
        if name not in hvparams:
            continue
        value = hvparams[name]
        if unspecified(value):
            if param.required:
                raise OpPrereqError(f"Parameter '{name}' is required but is currently "
                                    "not defined", ECODE_INVAL)
            continue
        if param.check is not None and not param.check(value):
            raise _fail(name, f"{param.message} (current value: '{value}')")
    if hypervisor == c.HT_KVM:
        _check_kvm(hvparams)


def _check_kvm(hv: Mapping[str, Any]) -> None:
    """The checks of Ganeti's hv_kvm/validation.py that look at several parameters."""
    # boot: a cdrom boot needs an image, a kernel needs a root partition
    if hv.get("boot_order") == "cdrom" and "cdrom_image_path" in hv \
            and not hv["cdrom_image_path"]:
        raise _fail("boot_order", "Cannot boot from cdrom without an ISO path")
    if hv.get("kernel_path") and "root_path" in hv and not hv["root_path"]:
        raise _fail("root_path", "Need a root partition for the instance, if a kernel is "
                                 "defined")
    # security model: a domain (a user name) with 'user', none with 'none' or 'pool'
    model = hv.get("security_model")
    if model == SM_USER and not hv.get("security_domain"):
        raise _fail("security_domain", "A security domain (user to run kvm as) must be "
                                       "specified")
    if model in (SM_NONE, SM_POOL) and hv.get("security_domain"):
        raise _fail("security_domain", "Cannot have a security domain when the security "
                                       "model is 'none' or 'pool'")
    # console
    if hv.get("serial_console") and "serial_speed" in hv \
            and hv["serial_speed"] not in SERIAL_SPEEDS:
        raise _fail("serial_speed", "Invalid serial console speed, must be one of: "
                    + ", ".join(str(s) for s in SERIAL_SPEEDS))
    # VNC: x509 verification needs the x509 path; TLS and a password need VNC itself
    if hv.get("vnc_x509_verify") and not hv.get("vnc_x509_path"):
        raise _fail("vnc_x509_verify", "vnc_x509_path must be defined, if vnc_x509_verify is")
    if hv.get("vnc_tls") and not hv.get("vnc_bind_address"):
        raise _fail("vnc_tls", "VNC TLS needs vnc_bind_address to be set")
    bind = hv.get("vnc_bind_address")
    if bind and not (is_ip(bind) or is_norm_abs_path(bind) or _is_interface_name(bind)):
        raise _fail("vnc_bind_address", "VNC: The vnc_bind_address parameter must be either "
                                        "a valid IP address, an interface name, or an "
                                        "absolute path")
    _check_spice(hv)
    # disk: native AIO only without a host cache
    if hv.get("disk_aio") == "native" and hv.get("disk_cache", "none") != "none":
        raise _fail("disk_aio", "When 'disk_aio' is set to 'native', the only supported "
                                "value for 'disk_cache' is 'none'.")
    refused = kvm_libvirt_refusal(hv)
    if refused is not None:
        raise _fail(refused[0], refused[1])


# --- what the kvm hypervisor through libvirt cannot honour ------------------------------

#: disk_type / nic_type values the libvirt domain can express (the node's mapping,
#: ganeti/noded/hypervisors/domainxml.py, runs this same check before its own).
KVM_LIBVIRT_DISK_TYPES = ("paravirtual", "ide", "scsi", "sd")
KVM_LIBVIRT_NIC_TYPES = ("paravirtual", "e1000", "i82551", "i82559er", "pcnet", "rtl8139",
                         "ne2k_pci", "ne2k_isa")
#: Parameters that must stay empty/false: libvirt's domain has no place for them.
KVM_LIBVIRT_UNSET = {
    "mem_path": "huge-page backing through mem_path is not supported through libvirt",
    "kvm_extra": "extra QEMU command-line options cannot be passed through libvirt",
    "vnc_tls": "VNC over TLS is not supported yet",
    "spice_bind": "SPICE is not supported through libvirt yet",
    "floppy_image_path": "floppy images are not supported through libvirt yet",
    "cdrom2_image_path": "a second CD-ROM is not supported through libvirt yet",
}


def kvm_libvirt_refusal(hv: Mapping[str, Any]) -> tuple[str, str] | None:
    """(parameter, why) for the first kvm parameter value the libvirt-driven kvm
    hypervisor cannot honour; None if it can honour them all."""
    for name, why in KVM_LIBVIRT_UNSET.items():
        if hv.get(name):
            return name, f"{why} (current value: '{hv[name]}')"
    for name, allowed in (("disk_type", KVM_LIBVIRT_DISK_TYPES),
                          ("nic_type", KVM_LIBVIRT_NIC_TYPES)):
        value = hv.get(name)
        if value is not None and value not in allowed:
            return name, (f"'{value}' is not available through libvirt; use one of: "
                          + ", ".join(allowed))
    return None


def _check_spice(hv: Mapping[str, Any]) -> None:
    spice_bind = hv.get("spice_bind")
    version = hv.get("spice_ip_version") or 0
    if spice_bind:
        if version and is_ip(spice_bind, 4) and version != 4:
            raise _fail("spice_ip_version", f"SPICE: Got an IPv4 address ({spice_bind}), "
                                            f"but the specified IP version is {version}")
        if version and is_ip(spice_bind, 6) and version != 6:
            raise _fail("spice_ip_version", f"SPICE: Got an IPv6 address ({spice_bind}), "
                                            f"but the specified IP version is {version}")
        return
    for name in SPICE_ADDITIONAL:
        if hv.get(name):
            raise _fail(name, f"SPICE: {name} requires spice_bind to be set")


_IFNAME_RE = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")


def _is_interface_name(value: str) -> bool:
    """Could ``value`` name a network interface (Linux: at most 15 characters, no
    ``/`` or blanks)?  Whether it exists is the node's check."""
    return _IFNAME_RE.fullmatch(value) is not None and value not in (".", "..")


# --- what the parameters name ---------------------------------------------------------

def node_checks(hypervisor: str) -> dict[str, str]:
    """Parameter -> what the node must find (NODE_FILE, NODE_DIR, NODE_FILE_OR_URL)."""
    return {name: p.node for name, p in PARAMETERS.get(hypervisor, {}).items()
            if p.node is not None}


def needs_node_validation(hypervisor: str) -> bool:
    """Whether the nodes have anything to check for ``hypervisor`` (the fake, lxc and
    chroot hypervisors have not: the master need not ask them)."""
    return hypervisor == c.HT_KVM or bool(node_checks(hypervisor))


def vnc_password_files(hypervisor: str, hvparams: Mapping[str, Any]) -> list[str]:
    """The VNC password file these (filled) parameters name, if any."""
    if hypervisor not in VNC_HYPERVISORS:
        return []
    path = hvparams.get(VNC_PASSWORD_FILE)
    return [path] if isinstance(path, str) and is_norm_abs_path(path) else []
