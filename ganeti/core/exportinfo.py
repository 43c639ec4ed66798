"""The ``config.ini`` of an instance export: written by the master, read back on import.

An export directory (``EXPORT_DIR/<instance name>/`` on the target node) holds
one dump per disk (named by the disk's UUID) and this file, in Ganeti 3.0's
layout (its ``FinalizeExport``): ``[export]`` (version, timestamp, source,
os, compression), ``[instance]`` (name, maxmem, minmem, memory, vcpus,
disk_template, hypervisor, tags, ``nic<N>_*``, ``disk<N>_*``, nic_count,
disk_count), ``[hypervisor]`` (the filled hypervisor parameters without the
cluster-wide ones), ``[backend]``, ``[os]`` and ``[os_private]``.  Secret OS
parameters are never stored anywhere, so they never reach this file.

Pure code: the text is built and parsed here; the node only stores and reads
it (``ganeti/noded/backend/exports.py``).
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_ENVIRON, ECODE_INVAL, OpPrereqError

#: The file in an export directory (Ganeti's EXPORT_CONF_FILE).
EXPORT_CONF_FILE = "config.ini"
#: Section names (Ganeti's INISECT_*).
INISECT_EXP = "export"
INISECT_INS = "instance"
INISECT_HYP = "hypervisor"
INISECT_BEP = "backend"
INISECT_OSP = "os"
INISECT_OSP_PRIVATE = "os_private"
#: The NIC parameters written per NIC (Ganeti's NICS_PARAMETER_TYPES keys).
NIC_PARAMETERS = (c.NIC_MODE, c.NIC_LINK, c.NIC_VLAN)
#: The backend parameters Ganeti reads from ``[instance]`` of old exports.
BES_PARAMETERS = (c.BE_MAXMEM, c.BE_MINMEM, c.BE_VCPUS, c.BE_AUTO_BALANCE,
                  c.BE_ALWAYS_FAILOVER, c.BE_SPINDLE_USE)
#: The most disks and NICs an export may describe (Ganeti's MAX_DISKS, MAX_NICS).
MAX_DISKS = 16
MAX_NICS = 8


@dataclass(frozen=True)
class ExportDisk:
    """One exported disk as ``config.ini`` records it."""

    iv_name: str
    dump: str
    size: int
    name: str | None


@dataclass(frozen=True)
class ExportNic:
    """One NIC as ``config.ini`` records it."""

    mac: str | None
    ip: str | None
    network: str | None
    name: str | None
    nicparams: Mapping[str, Any]


def _text(value: Any) -> str:
    # Ganeti writes "%s" % value: None becomes "None"
    return "None" if value is None else str(value)


def _parser() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    return parser


def build_config(*, name: str, source: str, os_name: str | None, timestamp: int,
                 beparams: Mapping[str, Any], hvparams: Mapping[str, Any],
                 osparams: Mapping[str, Any], osparams_private: Mapping[str, Any],
                 disk_template: str, hypervisor: str, tags: Sequence[str],
                 nics: Sequence[ExportNic], disks: Sequence[ExportDisk],
                 hv_globals: frozenset[str] = frozenset()) -> str:
    """The text of ``config.ini`` for an exported instance (Ganeti's layout and keys).

    ``beparams``, ``hvparams`` and ``osparams`` are the instance's filled
    parameters; ``hv_globals`` the cluster-wide hypervisor keys left out.
    """
    cp = _parser()
    cp.add_section(INISECT_EXP)
    cp.set(INISECT_EXP, "version", str(c.EXPORT_VERSION))
    cp.set(INISECT_EXP, "timestamp", str(int(timestamp)))
    cp.set(INISECT_EXP, "source", source)
    cp.set(INISECT_EXP, "os", _text(os_name))
    cp.set(INISECT_EXP, "compression", "none")
    cp.add_section(INISECT_INS)
    ins = INISECT_INS
    cp.set(ins, "name", name)
    cp.set(ins, "maxmem", str(int(beparams[c.BE_MAXMEM])))
    cp.set(ins, "minmem", str(int(beparams[c.BE_MINMEM])))
    cp.set(ins, "memory", str(int(beparams[c.BE_MAXMEM])))  # for old Ganeti versions
    cp.set(ins, "vcpus", str(int(beparams[c.BE_VCPUS])))
    cp.set(ins, "disk_template", disk_template)
    cp.set(ins, "hypervisor", hypervisor)
    cp.set(ins, "tags", " ".join(tags))
    for idx, nic in enumerate(nics):
        cp.set(ins, f"nic{idx}_mac", _text(nic.mac))
        cp.set(ins, f"nic{idx}_ip", _text(nic.ip))
        cp.set(ins, f"nic{idx}_network", _text(nic.network))
        cp.set(ins, f"nic{idx}_name", _text(nic.name))
        for param in NIC_PARAMETERS:
            cp.set(ins, f"nic{idx}_{param}", _text(nic.nicparams.get(param)))
    cp.set(ins, "nic_count", str(len(nics)))
    for idx, disk in enumerate(disks):
        cp.set(ins, f"disk{idx}_ivname", disk.iv_name)
        cp.set(ins, f"disk{idx}_dump", disk.dump)
        cp.set(ins, f"disk{idx}_size", str(int(disk.size)))
        cp.set(ins, f"disk{idx}_name", _text(disk.name))
    cp.set(ins, "disk_count", str(len(disks)))
    for section, params in ((INISECT_HYP, {k: v for k, v in hvparams.items()
                                           if k not in hv_globals}),
                            (INISECT_BEP, beparams), (INISECT_OSP, osparams),
                            (INISECT_OSP_PRIVATE, osparams_private)):
        cp.add_section(section)
        for key, value in params.items():
            cp.set(section, key, _text(value))
    return dumps(cp)


def dumps(cp: configparser.ConfigParser) -> str:
    """The text of a parsed file (``key = value`` lines, sections in order)."""
    lines: list[str] = []
    for section in cp.sections():
        lines.append(f"[{section}]")
        lines.extend(f"{k} = {v}" for k, v in cp.items(section))
        lines.append("")
    return "\n".join(lines)


def parse_config(text: str) -> dict[str, dict[str, str]]:
    """``config.ini`` as ``{section: {key: value}}``; ValueError if it is not an
    ini file or lacks the ``[export]`` or ``[instance]`` section."""
    cp = _parser()
    try:
        cp.read_string(text)
    except configparser.Error as err:
        raise ValueError(f"not an export configuration: {err}") from None
    if not (cp.has_section(INISECT_EXP) and cp.has_section(INISECT_INS)):
        raise ValueError("Export info file doesn't have the required fields")
    return {s: dict(cp.items(s)) for s in cp.sections()}


class ExportInfo:
    """A parsed ``config.ini`` (from the node's ``export_info``), checked as input."""

    def __init__(self, data: Any) -> None:
        if not (isinstance(data, dict) and all(
                isinstance(s, str) and isinstance(v, dict)
                and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
                for s, v in data.items())):
            raise OpPrereqError("Corrupted export config", ECODE_ENVIRON)
        if INISECT_EXP not in data or INISECT_INS not in data:
            raise OpPrereqError("Corrupted export config", ECODE_ENVIRON)
        self.data: dict[str, dict[str, str]] = data
        version = self.get(INISECT_EXP, "version")
        try:
            ok = version is not None and int(version) == c.EXPORT_VERSION
        except ValueError:
            ok = False
        if not ok:
            raise OpPrereqError(f"Wrong export version {version} (wanted "
                                f"{c.EXPORT_VERSION})", ECODE_ENVIRON)

    def get(self, section: str, key: str) -> str | None:
        """One value, None if absent."""
        return self.data.get(section, {}).get(key)

    def section(self, section: str) -> dict[str, str]:
        """One section (empty if absent)."""
        return dict(self.data.get(section, {}))

    def has_section(self, section: str) -> bool:
        """Whether the file has ``section``."""
        return section in self.data

    @property
    def os(self) -> str | None:
        """The OS the instance had."""
        value = self.get(INISECT_EXP, "os")
        return None if value in (None, "", "None") else value

    @property
    def name(self) -> str | None:
        """The exported instance's name."""
        return self.get(INISECT_INS, "name")

    def disks(self) -> list[dict[str, Any]]:
        """The disk definitions of the export (size, name), in order (Ganeti's
        ``_ReadExportParams``)."""
        out: list[dict[str, Any]] = []
        for idx in range(MAX_DISKS):
            size = self.get(INISECT_INS, f"disk{idx}_size")
            if size is None:
                continue
            try:
                disk: dict[str, Any] = {"size": int(size)}
            except ValueError:
                raise OpPrereqError(f"Invalid size of disk {idx} in the export: "
                                    f"{size!r:.40}", ECODE_INVAL) from None
            name = self.get(INISECT_INS, f"disk{idx}_name")
            if name not in (None, "", "None"):
                disk["name"] = name
            out.append(disk)
        return out

    def dumps(self, count: int) -> list[str | None]:
        """The dump file names of disks 0..count-1 (None where the export has none)."""
        out: list[str | None] = []
        for idx in range(count):
            dump = self.get(INISECT_INS, f"disk{idx}_dump")
            out.append(dump if dump else None)
        return out

    def nics(self) -> list[dict[str, Any]]:
        """The NIC definitions of the export (Ganeti's rules: with a network, link and
        mode come from the network; ``None`` values are unset)."""
        out: list[dict[str, Any]] = []
        for idx in range(MAX_NICS):
            if self.get(INISECT_INS, f"nic{idx}_mac") is None:
                break
            nic: dict[str, Any] = {}
            for key in ("ip", "mac", "name"):
                value = self.get(INISECT_INS, f"nic{idx}_{key}")
                if value not in (None, "None"):
                    nic[key] = value
            network = self.get(INISECT_INS, f"nic{idx}_network")
            if network not in (None, "", "None"):
                nic["network"] = network
            else:
                for key in NIC_PARAMETERS:
                    value = self.get(INISECT_INS, f"nic{idx}_{key}")
                    if value not in (None, "None"):
                        nic[key] = value
            out.append(nic)
        return out

    def tags(self) -> list[str]:
        """The instance's tags."""
        return (self.get(INISECT_INS, "tags") or "").split()

    def beparams(self) -> dict[str, str]:
        """The backend parameters (``[backend]``, else the old ``[instance]`` keys;
        the old ``memory`` sets maxmem and minmem)."""
        if self.has_section(INISECT_BEP):
            out = self.section(INISECT_BEP)
        else:
            out = {k: v for k in BES_PARAMETERS
                   if (v := self.get(INISECT_INS, k)) is not None}
        memory = out.pop("memory", None)
        if memory is not None:
            out.setdefault(c.BE_MAXMEM, memory)
            out.setdefault(c.BE_MINMEM, memory)
        return out


def fill_op_from_export(info: ExportInfo, op: dict[str, Any]) -> None:
    """Complete an OP_INSTANCE_CREATE (import mode) from the export, as Ganeti's
    ``_ReadExportParams`` does: the OS always; disks, NICs, tags and the hypervisor
    when not given; hypervisor, backend, OS and private OS parameters key by key
    where the opcode has none."""
    op["os_type"] = info.os
    if not op.get("disks"):
        op["disks"] = info.disks()
        if not op["disks"] and op.get("disk_template") != c.DT_DISKLESS:
            raise OpPrereqError("No disk info specified and the export is missing the "
                                "disk information", ECODE_INVAL)
    if not op.get("nics"):
        op["nics"] = info.nics()
    if not op.get("tags"):
        op["tags"] = info.tags()
    if op.get("hypervisor") is None and info.get(INISECT_INS, "hypervisor"):
        op["hypervisor"] = info.get(INISECT_INS, "hypervisor")
    for key, section in (("hvparams", INISECT_HYP), ("osparams", INISECT_OSP),
                         ("osparams_private", INISECT_OSP_PRIVATE)):
        params = dict(op.get(key) or {})
        for name, value in info.section(section).items():
            params.setdefault(name, value)
        op[key] = params
    be = dict(op.get("beparams") or {})
    for name, value in info.beparams().items():
        be.setdefault(name, value)
    op["beparams"] = be


__all__ = ["EXPORT_CONF_FILE", "INISECT_BEP", "INISECT_EXP", "INISECT_HYP", "INISECT_INS",
           "INISECT_OSP", "INISECT_OSP_PRIVATE", "ExportDisk", "ExportInfo", "ExportNic",
           "build_config", "dumps", "fill_op_from_export", "parse_config"]
