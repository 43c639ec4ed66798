"""The ``plain`` template: a disk is a logical volume, managed with the real ``lvm``.

Every LVM command is ``lvm <command> ...`` run through the daemon's child
processes (never on the reactor); reports are read as JSON
(``--reportformat json``).  The ``lvm`` program is looked up on the daemon's
``PATH``.

Without device-mapper (this project's CI machines and virtual clusters: the
kernel has none) LVM still manages metadata: commands that would touch the
kernel run with ``--driverloaded n``, new volumes are created inactive and not
zeroed (``-an -Zn``), and *assembling* a volume does not activate it; it
reports the volume's path ``/dev/<vg>/<lv>`` (which then does not exist; the
fake hypervisor needs no device).  With device-mapper, volumes are created
and activated as Ganeti does (``lvchange -ay``).  The data of an inactive
volume is reachable through a loop device on its physical volume at the
offset LVM reports (docs/instances.md), which the hypervisor work may use.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from typing import Any

from ganeti.noded.backend.context import NodeContext
from ganeti.noded.bdev.base import BlockDeviceError, Outcome, run_program
from ganeti.noded.bdev.device import BlockDevice, SyncStatus

MIB = 1024 * 1024

_VALID_NAME = re.compile(r"[a-zA-Z0-9+_.-]+")
_INVALID_NAMES = frozenset({".", "..", "snapshot", "pvmove"})
_INVALID_SUBSTRINGS = ("_mlog", "_mimage")


def check_name(name: Any) -> str:
    """``name`` if it is a valid VG or LV name (Ganeti's rules), else BlockDeviceError."""
    if (not isinstance(name, str) or not _VALID_NAME.fullmatch(name)
            or name in _INVALID_NAMES or any(s in name for s in _INVALID_SUBSTRINGS)):
        raise BlockDeviceError(f"Invalid LVM name '{name}'")
    return name


def dm_available() -> bool:
    """Whether the kernel has device-mapper (``/proc/misc`` lists it)."""
    try:
        with open("/proc/misc", encoding="ascii", errors="replace") as f:
            return any(line.split()[-1:] == ["device-mapper"] for line in f)
    except OSError:
        return False


def lvm_program() -> str:
    """The ``lvm`` program on the daemon's PATH."""
    path = shutil.which("lvm")
    if path is None:
        raise BlockDeviceError("the lvm program is not installed (not found on PATH)")
    return os.path.abspath(path)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["LVM_SUPPRESS_FD_WARNINGS"] = "1"
    env.setdefault("LC_ALL", "C")
    return env


async def lvm(ctx: NodeContext, *args: str) -> Outcome:
    """Run ``lvm <args>``."""
    return await run_program(ctx, [lvm_program(), *args], env=_env())


def _nodm(dm: bool) -> list[str]:
    return [] if dm else ["--driverloaded", "n"]


async def report(ctx: NodeContext, command: str, fields: list[str],
                 *names: str) -> list[dict[str, str]]:
    """The rows of an LVM JSON report (``lvs``/``vgs``/``pvs``) as dicts of strings."""
    out = await lvm(ctx, command, "--reportformat", "json", "--units", "m", "--nosuffix",
                    "-o", ",".join(fields), *names)
    if not out.ok:
        raise BlockDeviceError(f"Failed to run {command!r}, command output: {out.output} "
                               f"({out.reason})")
    try:
        doc = json.loads(out.stdout)
        rows: list[dict[str, str]] = []
        for part in doc["report"]:
            for values in part.values():
                rows.extend(values)
        return rows
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise BlockDeviceError(f"Cannot parse the {command} report: {err}") from None


def mib(value: str) -> float:
    """An LVM size in MiB (``--units m --nosuffix``)."""
    return float(value or 0)


def vg_lv(disk: dict[str, Any]) -> tuple[str, str]:
    """(vg, lv) of a plain disk, checked."""
    lid = disk.get("logical_id")
    if not isinstance(lid, list) or len(lid) != 2:
        raise BlockDeviceError(f"Invalid logical volume id {lid!r}")
    return check_name(lid[0]), check_name(lid[1])


_LV_FIELDS = ["vg_name", "lv_name", "lv_size", "lv_attr", "lv_kernel_major",
              "lv_kernel_minor", "devices", "vg_extent_size"]


async def lv_info(ctx: NodeContext, vg: str, lv: str) -> dict[str, Any] | None:
    """The volume's report row, with its physical volumes (``pvs``), or None."""
    out = await lvm(ctx, "lvs", "--reportformat", "json", "--units", "m", "--nosuffix",
                    "-o", ",".join(_LV_FIELDS), f"{vg}/{lv}")
    if not out.ok:
        if "not found" in out.output or "Failed to find" in out.output:
            return None
        raise BlockDeviceError(f"Can't get the state of {vg}/{lv}: {out.output}")
    try:
        rows = [r for part in json.loads(out.stdout)["report"] for v in part.values()
                for r in v]
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise BlockDeviceError(f"Cannot parse the lvs report: {err}") from None
    if not rows:
        return None
    row: dict[str, Any] = dict(rows[0])
    row["pvs"] = sorted({d.split("(")[0] for r in rows
                         for d in str(r.get("devices", "")).split(",") if d})
    row["segments"] = len(rows)  # (the devices field gives a row per segment)
    return row


def _minor(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def _tag(info: str) -> str:
    """``info`` as an LVM tag (Ganeti's SetInfo: invalid characters replaced, 128 max)."""
    text = re.sub(r"^[^A-Za-z0-9_+.]", "_", info)
    text = re.sub(r"[^-A-Za-z0-9_+.]", "_", text)
    return text[:128]


class LogicalVolume(BlockDevice):
    """A ``plain`` disk: the logical volume ``logical_id`` ``[vg, lv]`` (Ganeti's
    LogicalVolume), at ``/dev/<vg>/<lv>``.  Attaching reads the volume's report row,
    which the status and the dimensions then answer from."""

    assemble_on_secondary = True
    open_on_secondary = True
    exclusive_storage = True

    def __init__(self, ctx: NodeContext, disk: dict[str, Any],
                 children: Sequence[BlockDevice | None] = ()) -> None:
        super().__init__(ctx, disk, children)
        self._row: dict[str, Any] | None = None

    @classmethod
    async def create(cls, ctx: NodeContext, disk: dict[str, Any],
                     children: Sequence[BlockDevice | None], size: int,
                     info: str) -> BlockDevice:
        """Create the volume (``stripes`` from the disk's parameters, ``info`` as its
        tag); inactive and not zeroed without device-mapper."""
        dev = cls(ctx, disk, children)
        vg, lv = vg_lv(disk)
        stripes = dev.params.get("stripes", 1)
        if not isinstance(stripes, int) or stripes < 1:
            stripes = 1
        dm = dm_available()
        pvs = await report(ctx, "pvs", ["pv_name", "vg_name", "pv_free", "pv_attr"])
        usable = [p for p in pvs
                  if p.get("vg_name") == vg and str(p.get("pv_attr", ""))[:1] == "a"]
        if not usable:
            raise BlockDeviceError(f"Can't compute PV info for vg {vg}")
        stripes = min(stripes, len(usable))
        free = sum(mib(p.get("pv_free", "0")) for p in usable)
        if free < size:
            raise BlockDeviceError(f"Not enough free space: required {size}, "
                                   f"available {free:g}")
        args = ["lvcreate", *_nodm(dm), "-Wn", f"-L{size}m", f"-n{lv}", f"-i{stripes}"]
        if not dm:
            args += ["-an", "-Zn"]
        tag = _tag(info)
        if tag:
            args += ["--addtag", tag]
        out = await lvm(ctx, *args, vg)
        if not out.ok:
            raise BlockDeviceError(f"LV create failed ({out.reason}): {out.output}")
        dev.dev_path, dev.attached = f"/dev/{vg}/{lv}", True
        return dev

    @classmethod
    def static_path(cls, dev_type: str, logical_id: Sequence[str]) -> str:
        """``/dev/<vg>/<lv>``."""
        vg, lv = str(logical_id[0]), str(logical_id[1])
        if "/" in vg or "/" in lv or vg in (".", "..") or lv in (".", ".."):
            raise ValueError(f"invalid volume group/logical volume name {vg!r}/{lv!r}")
        return f"/dev/{vg}/{lv}"

    async def attach(self) -> bool:
        """Whether the volume exists (its report row is kept)."""
        vg, lv = vg_lv(self.disk)
        self._row = await lv_info(self.ctx, vg, lv)
        self.attached = self._row is not None
        self.dev_path = f"/dev/{vg}/{lv}" if self.attached else None
        row = self._row or {}
        self.major = _minor(row.get("lv_kernel_major"))
        self.minor = _minor(row.get("lv_kernel_minor"))
        return self.attached

    async def assemble(self) -> None:
        """Activate the volume (``lvchange -ay``) where there is device-mapper."""
        vg, lv = vg_lv(self.disk)
        if not self.attached and not await self.attach():
            raise BlockDeviceError(f"Can't find logical volume {vg}/{lv}")
        if dm_available():
            out = await lvm(self.ctx, "lvchange", "-ay", f"{vg}/{lv}")
            if not out.ok:
                raise BlockDeviceError(f"Can't activate lv /dev/{vg}/{lv}: {out.output}")

    async def remove(self) -> None:
        """Remove the volume; nothing if it does not exist."""
        vg, lv = vg_lv(self.disk)
        if await lv_info(self.ctx, vg, lv) is None:
            return
        out = await lvm(self.ctx, "lvremove", *_nodm(dm_available()), "-f", f"{vg}/{lv}")
        if not out.ok:
            raise BlockDeviceError(f"Can't lvremove: {out.reason} - {out.output}")
        self.attached, self.dev_path, self._row = False, None, None

    async def grow(self, amount: int, dryrun: bool, backingstore: bool) -> None:
        """Extend the volume by ``amount`` MiB (``--test`` for a dry run); only as the
        backing store."""
        vg, lv = vg_lv(self.disk)
        if not self.attached and not await self.attach():
            raise BlockDeviceError(f"Cannot find block device {vg}/{lv}")
        if not backingstore:
            return
        args = ["lvextend", *_nodm(dm_available()), "-L", f"+{amount}m"]
        if dryrun:
            args.append("--test")
        out = await lvm(self.ctx, *args, f"{vg}/{lv}")
        if not out.ok:
            raise BlockDeviceError(f"Can't grow LV {vg}/{lv}: {out.output}")

    async def rename(self, new_id: list[Any]) -> None:
        """Rename the volume within its group."""
        vg, lv = vg_lv(self.disk)
        if len(new_id) != 2:
            raise BlockDeviceError(f"Invalid new logical_id {new_id!r}")
        new_vg, new_lv = check_name(new_id[0]), check_name(new_id[1])
        if new_vg != vg:
            raise BlockDeviceError(f"Can't move a logical volume across volume groups "
                                   f"({vg} to {new_vg})")
        out = await lvm(self.ctx, "lvrename", *_nodm(dm_available()), vg, lv, new_lv)
        if not out.ok:
            raise BlockDeviceError(f"Failed to rename the logical volume: {out.output}")
        self.logical_id = [vg, new_lv]
        self.dev_path = f"/dev/{vg}/{new_lv}"

    async def sync_status(self) -> SyncStatus:
        """Degraded if LVM marks the volume virtual or partial (a missing PV)."""
        attr = str((self._row or {}).get("lv_attr", ""))
        degraded = attr[:1] == "v" or attr[8:9] == "p"
        return SyncStatus.of(self.dev_path, self.major, self.minor, degraded)

    async def extents(self) -> tuple[str, int, int]:
        """:func:`extents` of the attached volume, from its report row where it can."""
        return await extents(self.ctx, *vg_lv(self.disk), self._row)

    async def dimensions(self) -> list[Any] | None:
        """[size in bytes, number of physical volumes]."""
        if self._row is None:
            return None
        return [int(round(mib(str(self._row.get("lv_size", "0"))) * MIB)),
                len(self._row["pvs"])]


# -- what the node has ------------------------------------------------------------------

def _linked_devices(ctx: NodeContext) -> set[str]:
    """The devices the instance disk links (``RUN_DIR/instance-disks``) point at."""
    directory = os.path.join(ctx.paths.run_dir, "instance-disks")
    try:
        names = os.listdir(directory)
    except OSError:
        return set()
    return {os.readlink(os.path.join(directory, n)) for n in names
            if os.path.islink(os.path.join(directory, n))}


async def volume_list(ctx: NodeContext, vg_names: list[str]) -> dict[str, list[Any]]:
    """Ganeti's ``lv_list``: {"vg/lv": [size MiB (text), inactive, online]}; virtual
    volumes are left out."""
    rows = await report(ctx, "lvs", ["vg_name", "lv_name", "lv_size", "lv_attr"],
                        *[check_name(v) for v in vg_names])
    # Without device-mapper no volume can be activated, so none is ever "open"; a
    # volume then counts as online while an instance's disk link points at it (what
    # assembling does here), else verify-disks and the watcher would ask again and
    # again for an activation that cannot happen.
    linked = set() if dm_available() else _linked_devices(ctx)
    out: dict[str, list[Any]] = {}
    for r in rows:
        attr = str(r.get("lv_attr", "")).ljust(6, "-")
        if attr[0] == "v":
            continue
        out[f"{r.get('vg_name')}/{r.get('lv_name')}"] = [
            f"{mib(str(r.get('lv_size', '0'))):.2f}", attr[4] == "-",
            attr[5] == "o" or f"/dev/{r.get('vg_name')}/{r.get('lv_name')}" in linked]
    return out


async def vg_sizes(ctx: NodeContext) -> dict[str, int]:
    """Ganeti's ``vg_list``: {vg: size MiB}."""
    rows = await report(ctx, "vgs", ["vg_name", "vg_size"])
    return {str(r["vg_name"]): int(mib(str(r.get("vg_size", "0")))) for r in rows}


async def node_volumes(ctx: NodeContext) -> list[dict[str, Any]]:
    """Ganeti's ``node_volumes``: one row per volume and physical device."""
    rows = await report(ctx, "lvs", ["lv_name", "lv_size", "devices", "vg_name"])
    out = []
    for r in rows:
        devs = [d.split("(")[0] for d in str(r.get("devices", "")).split(",") if d] or [""]
        for dev in devs:
            out.append({"name": r.get("lv_name"), "size": f"{mib(str(r.get('lv_size'))):.2f}",
                        "dev": dev, "vg": r.get("vg_name")})
    return out


async def lvm_rows(ctx: NodeContext, command: str, fields: str, name: str
                   ) -> list[dict[str, str]] | None:
    """An LVM JSON report in bytes; None if the command fails."""
    out = await lvm(ctx, command, "--reportformat", "json", "--units", "b",
                    "--nosuffix", "-o", fields, name)
    if not out.ok:
        return None
    try:
        return [row for part in json.loads(out.stdout)["report"] for rows in part.values()
                for row in rows]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


#: Each physical volume's ``pe_start`` (where its first extent starts), by its path and
#: device number: fixed when the PV is made, so asked once per node daemon.
_PE_START: dict[tuple[str, int], int] = {}


def _whole_bytes(mib_text: Any) -> int | None:
    """A ``--units m`` figure as bytes when it is a whole number of MiB (then exact);
    else None."""
    try:
        value = float(mib_text)
    except (TypeError, ValueError):
        return None
    return int(value) * MIB if value.is_integer() and value > 0 else None


async def _pe_start(ctx: NodeContext, pv: str) -> int:
    try:
        key = (pv, os.stat(pv).st_rdev)
    except OSError:
        key = (pv, -1)
    if key not in _PE_START:
        pvs = await lvm_rows(ctx, "pvs", "pv_name,pe_start", pv)
        try:
            _PE_START[key] = int((pvs or [{}])[0]["pe_start"])
        except (KeyError, ValueError):
            raise BlockDeviceError(f"cannot read physical volume {pv}") from None
    return _PE_START[key]


async def extents(ctx: NodeContext, vg: str, lv: str,
                  row: dict[str, Any] | None = None) -> tuple[str, int, int]:
    """A volume without device-mapper as (its physical volume, byte offset, size): one
    segment on one PV only (``pe_start + first extent * extent size``).  ``row``: the
    volume's :func:`lv_info` row, used when its MiB figures are exact (whole MiB, as
    extents of 1 MiB or more make them), saving an ``lvs`` run."""
    ext = size = None
    if row is not None and row.get("segments") == 1 and len(row.get("pvs") or []) == 1:
        ext, size = _whole_bytes(row.get("vg_extent_size")), _whole_bytes(row.get("lv_size"))
    rows: list[dict[str, Any]] | None
    if ext is not None and size is not None and row is not None:
        rows = [{"devices": row.get("devices", "")}]
    else:
        rows = await lvm_rows(ctx, "lvs", "lv_size,devices,vg_extent_size", f"{vg}/{lv}")
        if rows is None or len(rows) != 1:
            raise BlockDeviceError(f"volume {vg}/{lv} is missing or has several segments "
                                   "(without device-mapper only a volume of one segment "
                                   "can be used)")
        try:
            ext, size = int(rows[0]["vg_extent_size"]), int(rows[0]["lv_size"])
        except (KeyError, ValueError) as err:
            raise BlockDeviceError(f"cannot read the extents of {vg}/{lv}: {err}") from None
    match = re.fullmatch(r"(/[^(,]+)\((\d+)\)", str(rows[0].get("devices", "")))
    if match is None:
        raise BlockDeviceError(f"volume {vg}/{lv} lies on several physical volumes")
    pv, first_pe = match.group(1), int(match.group(2))
    return pv, await _pe_start(ctx, pv) + first_pe * ext, size
