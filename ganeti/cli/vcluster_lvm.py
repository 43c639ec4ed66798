"""A volume group per node of a virtual cluster: ``plain`` (and ``drbd``) disks there.

Created as root with ``lvm`` and ``losetup`` installed, every node of a virtual
cluster gets a volume group named as the cluster's (``xenvg`` by default,
``--vg-name``) on a loop device over a sparse file in the node's directory,
``<node>/lvm/pv.img``.  All the nodes' groups have the same name, as on real
machines, so each node's LVM must see only its own physical volume: each node
has its own LVM configuration directory ``<node>/etc/lvm`` whose ``lvm.conf``
accepts only that node's loop device (``filter`` and ``global_filter``), asks
nothing of udev, keeps no devices file and no hints, and has its own locking,
backup and archive directories.  Every daemon started for the node gets
``LVM_SYSTEM_DIR`` pointing there (:func:`lvm_env`, used by
:func:`ganeti.cli.daemons.start`), and so does every ``lvm`` its node daemon runs.

Each node's group carries an LVM *system ID* of its own (``system_id_source =
"file"``, :func:`system_id`), so the machine's own LVM (its default
``lvm.conf`` sees every loop device, and has no system ID) takes the virtual
cluster's groups for foreign ones and leaves them out of its reports and
commands: a real Ganeti on the same machine (the oracle's reference cluster)
or an administrator's ``lvs`` sees none of them, however many virtual clusters
run.  Nothing of the virtual cluster's configuration reaches the machine's.

Loop devices do not survive a reboot and their numbers are not stable:
:func:`attach` finds a node's loop device by its backing file (attaching one
if there is none) and writes the node's ``lvm.conf`` for it, at ``create`` and
before every ``start``.  ``destroy`` removes the volume groups' metadata and
detaches the loop devices; loop devices left by a crashed run whose directory
was removed since (backing file ``... (deleted)``) are detached by the next
``create`` (:func:`detach_stale`).

There is no device-mapper in this project's kernels: the node daemon's LVM code
creates volumes inactive (``--driverloaded n``) and their data is reached at
the physical volume's offset (docs/instances.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any

from ganeti.cli.framework import UsageError
from ganeti.core import constants, errors

#: The node's physical volume, relative to its directory.
IMAGE = os.path.join("lvm", "pv.img")
#: The node's LVM configuration directory (``LVM_SYSTEM_DIR``), relative to its directory.
CONF_DIR = os.path.join("etc", "lvm")
#: The volume group's name when ``--vg-name`` is not given (Ganeti's default).
DEFAULT_VG = "xenvg"
#: The size of each node's volume group (MiB) when ``--vg-size`` is not given: Ganeti's
#: smallest accepted one (MIN_VG_SIZE), so that ``gnt-cluster verify`` stays clean.
DEFAULT_SIZE_MIB = 20480
#: What the image holds beyond the volume group's extents: LVM's metadata area
#: (1 MiB) rounded up to an extent (4 MiB).
OVERHEAD_MIB = 4
#: The disk templates the volume groups enable (drbd: data and metadata volumes).
TEMPLATES = [constants.DT_PLAIN, constants.DT_DRBD8]
#: Marks the configuration files this module writes.
MARKER = "# written by ganeti-vcluster"
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
TIMEOUT = 60.0


def unavailable_reason() -> str | None:
    """Why nodes cannot have volume groups here (None: they can)."""
    if os.geteuid() != 0:
        return "loop devices need root"
    missing = [t for t in ("lvm", "losetup") if not shutil.which(t, path=SBIN_PATH)]
    if missing:
        return f"missing {', '.join(missing)} (install lvm2 and mount)"
    return None


def conf_dir(root: str) -> str:
    """The node's ``LVM_SYSTEM_DIR``."""
    return os.path.join(root, CONF_DIR)


def image_path(root: str) -> str:
    """The real path of the node's physical volume image (links resolved: losetup's)."""
    return os.path.join(os.path.realpath(root), IMAGE)


def lvm_env(root: str) -> dict[str, str]:
    """``LVM_SYSTEM_DIR`` for anything run for the node at ``root``, if it has its own
    LVM configuration; {} otherwise (a real node, a cluster without volume groups)."""
    if root and os.path.isfile(os.path.join(conf_dir(root), "lvm.conf")):
        return {"LVM_SYSTEM_DIR": conf_dir(root)}
    return {}


def system_id(root: str) -> str:
    """The LVM system ID of the node at ``root`` (from its real path: unique on the
    machine, the same at every ``start``)."""
    digest = hashlib.sha1(os.path.realpath(root).encode()).hexdigest()[:16]
    return f"ganeti-vcluster-{digest}"


def lvm_conf(root: str, device: str) -> str:
    """The node's ``lvm.conf``: only ``device`` is seen; nothing is shared with the
    machine's LVM (locks, backups, archives, hints, udev)."""
    accept = json.dumps([f"a|^{device}$|", "r|.*|"])
    state = os.path.join(os.path.realpath(root), "lvm")
    return f"""{MARKER}: this node's LVM sees only its own physical volume {device}
devices {{
    filter = {accept}
    global_filter = {accept}
    scan = [ "/dev" ]
    use_devicesfile = 0
    obtain_device_list_from_udev = 0
    external_device_info_source = "none"
    hints = "none"
}}
global {{
    system_id_source = "file"
    system_id_file = "{state}/system_id"
    locking_dir = "{state}/lock"
    use_lvmpolld = 0
    event_activation = 0
}}
activation {{
    udev_sync = 0
    udev_rules = 0
    monitoring = 0
}}
backup {{
    backup_dir = "{state}/backup"
    archive_dir = "{state}/archive"
}}
"""


def _run(argv: list[str], env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1", LC_ALL="C", **(env or {}))
    program = shutil.which(argv[0], path=SBIN_PATH) or argv[0]
    try:
        proc = subprocess.run([program, *argv[1:]], env=full, capture_output=True,
                              text=True, check=False, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise errors.CommandError(f"Cannot run {' '.join(argv)}: {err}") from None
    if check and proc.returncode != 0:
        detail = " ".join(line.strip() for line in proc.stderr.splitlines()
                          if "WARNING" not in line and "device-mapper" not in line
                          and "mapper/control" not in line and line.strip())
        raise errors.CommandError(f"{' '.join(argv)} failed: {detail or proc.returncode}")
    return proc


def loop_devices() -> list[tuple[str, str]]:
    """``(device, backing file)`` of every loop device of the machine."""
    proc = _run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE"], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        return []
    try:
        return [(d["name"], d.get("back-file") or "")
                for d in json.loads(proc.stdout).get("loopdevices", [])]
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


def loops_of(image: str, loops: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """The loop devices whose backing file is ``image`` (also once it was deleted)."""
    if loops is None:
        loops = loop_devices()
    return sorted(dev for dev, back in loops if back in (image, f"{image} (deleted)"))


def detach_stale(loops: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """Detach the loop devices of virtual nodes whose image was deleted (a crashed run
    whose directory was removed); the devices detached."""
    if loops is None:
        loops = loop_devices()
    stale = sorted(dev for dev, back in loops
                   if back.endswith(f"/{IMAGE} (deleted)"))
    return [dev for dev in stale if _run(["losetup", "-d", dev], check=False).returncode == 0]


def attach(root: str, loops: Iterable[tuple[str, str]] | None = None) -> str:
    """The node's loop device (attached now if none is), with its ``lvm.conf`` written
    for it."""
    image = image_path(root)
    found = loops_of(image, loops)
    if found:
        device = found[0]
    else:
        device = _run(["losetup", "-f", "--show", image]).stdout.strip()
    for d in ("lock", "backup", "archive"):
        os.makedirs(os.path.join(os.path.realpath(root), "lvm", d), mode=0o700, exist_ok=True)
    with open(os.path.join(os.path.realpath(root), "lvm", "system_id"), "w",
              encoding="ascii") as f:
        f.write(system_id(root) + "\n")
    os.makedirs(conf_dir(root), mode=0o755, exist_ok=True)
    path = os.path.join(conf_dir(root), "lvm.conf")
    text = lvm_conf(root, device)
    try:
        with open(path, encoding="utf-8") as f:
            unchanged = f.read() == text
    except OSError:
        unchanged = False
    if not unchanged:
        with open(path + ".new", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".new", path)
    return device


def create(root: str, vg: str, size_mib: int) -> str:
    """The node's sparse image, loop device, configuration, physical volume and volume
    group ``vg`` of ``size_mib`` MiB; its loop device."""
    image = image_path(root)
    os.makedirs(os.path.dirname(image), mode=0o700, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate((size_mib + OVERHEAD_MIB) * 1024 * 1024)
    device = attach(root)
    env = lvm_env(root)
    _run(["lvm", "pvcreate", "-ff", "-y", device], env)
    _run(["lvm", "vgcreate", vg, device], env)
    return device


def remove(root: str, vg: str, loops: Iterable[tuple[str, str]] | None = None) -> list[str]:
    """Remove the node's volume group and physical volume and detach its loop devices
    (whatever their number now), and first any loop device over one of them (a
    volume's, left by a node daemon that died during an OS script); the devices
    detached.  Safe when nothing is left."""
    listing = list(loop_devices() if loops is None else loops)
    devices = loops_of(image_path(root), listing)
    env = lvm_env(root)
    if devices and env:
        _run(["lvm", "vgremove", "-ff", "-y", vg], env, check=False)
    stacked = sorted(dev for dev, back in listing if back in devices)
    for device in stacked:
        _run(["losetup", "-d", device], check=False)
    for device in devices:
        if env:
            _run(["lvm", "pvremove", "-ff", "-y", device], env, check=False)
        _run(["losetup", "-d", device], check=False)
    return stacked + devices


def attach_all(roots: Iterable[str]) -> None:
    """Before a start: every node's loop device attached and its configuration current."""
    loops = loop_devices()
    for root in roots:
        if os.path.exists(image_path(root)):
            attach(root, loops)


def remove_all(roots: Iterable[str], lvm: dict[str, Any] | None) -> list[str]:
    """``destroy``: every node's volume group (``lvm``: the cluster's record, None for
    none) removed and loop device detached."""
    if not lvm:
        return []
    loops = loop_devices()
    return [d for root in roots for d in remove(root, lvm["vg"], loops)]


# -- create's options ------------------------------------------------------------------

def setup_options(p: argparse.ArgumentParser) -> None:
    """``--lvm``/``--no-lvm``, ``--vg-name``, ``--vg-size``."""
    lvm = p.add_mutually_exclusive_group()
    lvm.add_argument("--lvm", dest="lvm", action="store_const", const=True,
                     help="give every node a volume group on a loop device, enabling the "
                          "plain and drbd templates (root, lvm2; the default where "
                          "possible)")
    lvm.add_argument("--no-lvm", dest="lvm", action="store_const", const=False,
                     help="no volume groups (only file and diskless disks)")
    p.add_argument("--vg-name", default=DEFAULT_VG, metavar="VG",
                   help="the nodes' volume group (default: %(default)s)")
    p.add_argument("--vg-size", type=int, default=DEFAULT_SIZE_MIB // 1024,
                   metavar="GIB", help="size of each node's volume group in GiB, a sparse "
                                       "file in the node's directory (default: %(default)s)")


def choice(opts: argparse.Namespace, reason: str | None) -> dict[str, Any] | None:
    """The nodes' volume group ``create`` makes (``--lvm``, ``--vg-name``, ``--vg-size``),
    as recorded in vcluster.json: by default one wherever it can (``reason``: why it
    cannot here, None if it can), else None."""
    wanted = getattr(opts, "lvm", None)
    if wanted is False or (wanted is None and reason):
        return None
    if reason:
        raise errors.OpPrereqError(f"Cannot use --lvm: {reason}", errors.ECODE_ENVIRON)
    size = getattr(opts, "vg_size", None) or DEFAULT_SIZE_MIB // 1024
    if size < 1:
        raise UsageError("--vg-size must be at least 1 (GiB)")
    return {"vg": getattr(opts, "vg_name", None) or DEFAULT_VG, "size_mib": size * 1024}
