"""Builds the guest kernel and initramfs of real VMs from Debian packages (``make guest``).

Nothing is downloaded beyond apt: the kernel package that Debian's
``linux-image-amd64`` metapackage currently depends on is fetched with
``apt-get download`` and unpacked with ``dpkg -x``.  Its ``vmlinuz`` is
decompressed to ``vmlinux`` (QEMU boots an uncompressed kernel through its PVH
entry; decompressing under TCG would cost seconds per boot).  The initramfs is
busybox-static, the modules a virtio/ext4 guest needs (the Debian kernel keeps
them as modules) and an ``/init`` that mounts the root disk and switches to it.

Output, in ``<project>/.cache/guest`` (``ganeti/cli/guestfiles.py`` finds it):
``vmlinux`` and ``initrd.img`` are links through ``current`` to one complete
build under ``builds/``, so a rebuild swaps both at once (one rename).  A build
is redone only when the kernel package's version or this recipe changes.

Run as ``python -m ganeti.cli.guestbuild [--dir DIR] [--force]``.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ganeti.cli import guestfiles

META_PACKAGE = "linux-image-amd64"
XZ_MAGIC = b"\xfd7zXZ\x00"
APT_LISTS = "/var/lib/apt/lists"

#: The modules the guest loads, in this order (each after its dependencies).
#: crc32c_generic first: ext4 and jbd2 only name it as a soft dependency.
#: button (ACPI power button) and evdev (its /dev/input/event*) let busybox acpid
#: power the guest off when libvirt asks; pvpanic reports a guest panic to QEMU.
MODULES: tuple[str, ...] = (
    "crc32c_generic", "virtio_ring", "virtio", "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev", "virtio_pci", "virtio_blk", "failover", "net_failover",
    "virtio_net", "crc16", "mbcache", "jbd2", "ext4", "button", "evdev",
    "pvpanic", "pvpanic_mmio", "pvpanic_pci",
)

#: busybox applets linked in the initramfs's /bin (what /init runs, and a rescue shell).
APPLETS: tuple[str, ...] = (
    "sh", "ash", "cat", "echo", "ls", "mkdir", "mount", "umount", "insmod", "lsmod",
    "modinfo", "switch_root", "setsid", "cttyhack", "findfs", "usleep", "sleep", "dmesg",
    "poweroff", "reboot", "ps", "grep", "ip", "blkid", "mdev", "uname", "vi", "less",
)

#: The initramfs's /init: load modules, mount the root file system (``root=``,
#: default /dev/vda, ext4) and hand over to its /sbin/init; without a root, a
#: shell on the serial console.
INIT_SCRIPT = r"""#!/bin/sh
# /init of the guest initramfs (built by ganeti/cli/guestbuild.py).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r mod; do
  [ -n "$mod" ] || continue
  insmod "/lib/modules/$mod.ko" 2>/dev/null || echo "guest-initrd: cannot load $mod" >&2
done < /etc/modules
root=/dev/vda
mode=rw
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    root=*) root="${arg#root=}" ;;
    ro) mode=ro ;;
    rw) mode=rw ;;
  esac
done
case "$root" in
  LABEL=*|UUID=*) root=$(findfs "$root" 2>/dev/null) ;;
esac
# virtio-blk probes when its module loads; give a slow device a few seconds
tries=0
while [ -n "$root" ] && [ ! -b "$root" ] && [ "$tries" -lt 50 ]; do
  usleep 100000
  tries=$((tries + 1))
done
if [ -n "$root" ] && [ -b "$root" ] && mount -t ext4 -o "$mode" "$root" /newroot; then
  if [ -x /newroot/sbin/init ] || [ -L /newroot/sbin/init ]; then
    mkdir -p /newroot/dev
    mount --move /dev /newroot/dev
    umount /sys /proc
    exec switch_root /newroot /sbin/init
  fi
  echo "guest-initrd: $root has no /sbin/init" >&2
  umount /newroot
fi
echo "guest-initrd: no root file system (root=${root:-none}); shell on ttyS0" >&2
tty=/dev/ttyS0
[ -c "$tty" ] || tty=/dev/console
while :; do
  setsid -c sh -l <"$tty" >"$tty" 2>&1
done
"""

#: The initramfs's /etc/profile (its rescue shell's prompt).
PROFILE = "PS1='# '\nexport PS1\n"


class BuildError(Exception):
    """The guest files cannot be built (the message says why)."""


@dataclass(frozen=True)
class KernelPackage:
    """The Debian kernel package the metapackage points at."""

    name: str
    version: str


# -- pure parts ------------------------------------------------------------------------------

_PACKAGE_NAME = re.compile(r"linux-image-[a-z0-9][a-z0-9.+-]*\Z")
_VERSION = re.compile(r"[0-9A-Za-z.+~:-]+\Z")


def parse_meta_show(apt_cache_show: str) -> tuple[str, str | None]:
    """The ``linux-image-*`` package (and its version if pinned with ``=``) that
    ``apt-cache show --no-all-versions linux-image-amd64`` says it depends on."""
    for line in apt_cache_show.splitlines():
        key, _, value = line.partition(":")
        if key != "Depends":
            continue
        for dep in value.split(","):
            name, _, constraint = dep.strip().partition(" ")
            if not _PACKAGE_NAME.match(name):
                continue
            version = None
            constraint = constraint.strip()
            if constraint.startswith("(=") and constraint.endswith(")"):
                version = constraint[2:-1].strip()
                if not _VERSION.match(version):
                    raise BuildError(f"odd version in {META_PACKAGE}'s Depends: {version!r}")
            return name, version
    raise BuildError(f"{META_PACKAGE} depends on no linux-image package")


def parse_candidate(apt_cache_policy: str) -> str:
    """The candidate version in ``apt-cache policy PACKAGE``."""
    for line in apt_cache_policy.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate":
            value = value.strip()
            if _VERSION.match(value):
                return value
    raise BuildError("no candidate version in apt's package lists")


def extract_vmlinux(vmlinuz: bytes) -> bytes:
    """The uncompressed kernel (ELF) inside a bzImage whose payload is xz: the first
    xz stream (after its magic) that decompresses to an ELF file."""
    start = vmlinuz.find(XZ_MAGIC)
    while start >= 0:
        try:
            out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(vmlinuz[start:])
        except lzma.LZMAError:
            out = b""
        if out.startswith(b"\x7fELF"):
            return out
        start = vmlinuz.find(XZ_MAGIC, start + 1)
    raise BuildError("no xz-compressed ELF kernel in vmlinuz")


def load_order(wanted: Iterable[str], depends: Callable[[str], list[str]]) -> list[str]:
    """Every module in ``wanted`` and its dependencies, each after what it depends on,
    otherwise in the order asked (a dependency cycle is an error)."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise BuildError(f"module dependency cycle through {name}")
        visiting.add(name)
        for dep in depends(name):
            visit(dep)
        visiting.discard(name)
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def module_name(filename: str) -> str:
    """``virtio-blk.ko.xz`` -> ``virtio_blk`` (the kernel treats - and _ alike)."""
    base = os.path.basename(filename)
    for suffix in (".ko.xz", ".ko.zst", ".ko.gz", ".ko"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return base.replace("-", "_")


def is_static_elf(data: bytes) -> bool:
    """Whether ``data`` is a 64-bit little-endian ELF executable with no interpreter
    (a static binary runs in an initramfs with no libc)."""
    if len(data) < 64 or not data.startswith(b"\x7fELF\x02\x01"):
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    if phentsize < 4 or phoff + phnum * phentsize > len(data):
        return False  # truncated
    for i in range(phnum):
        offset = phoff + i * phentsize
        if struct.unpack_from("<I", data, offset)[0] == 3:  # PT_INTERP
            return False
    return True


@dataclass(frozen=True)
class CpioEntry:
    """One member of a newc archive: a directory, file, symlink or device node."""

    path: str
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def cpio_newc(entries: Iterable[CpioEntry]) -> bytes:
    """A ``newc`` (SVR4, no CRC) cpio archive, as the kernel unpacks an initramfs;
    owners root, times 0, so the same input gives the same bytes."""
    out = bytearray()

    def member(ino: int, path: str, mode: int, data: bytes, rdev: tuple[int, int]) -> None:
        name = path.encode() + b"\x00"
        nlink = 2 if mode & 0o170000 == 0o040000 else 1
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(name), 0)
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields) + name)
        out.extend(b"\x00" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\x00" * (-len(out) % 4))

    for ino, entry in enumerate(entries, start=1):
        member(ino, entry.path.lstrip("/"), entry.mode, entry.data, entry.rdev)
    member(0, "TRAILER!!!", 0, b"", (0, 0))
    return bytes(out)


def initramfs_entries(busybox: bytes, modules: Mapping[str, bytes]) -> list[CpioEntry]:
    """The initramfs: /init, busybox and its links, the modules (loaded in the
    mapping's order, listed in /etc/modules) and the device nodes needed before
    devtmpfs is mounted."""
    entries = [CpioEntry(d, 0o040755) for d in
               ("bin", "dev", "etc", "lib", "lib/modules", "newroot", "proc", "sys", "tmp")]
    entries += [CpioEntry("dev/console", 0o020600, rdev=(5, 1)),
                CpioEntry("dev/null", 0o020666, rdev=(1, 3)),
                CpioEntry("init", 0o100755, INIT_SCRIPT.encode()),
                CpioEntry("bin/busybox", 0o100755, busybox),
                CpioEntry("etc/profile", 0o100644, PROFILE.encode()),
                CpioEntry("etc/modules", 0o100644,
                          "".join(f"{name}\n" for name in modules).encode())]
    entries += [CpioEntry(f"bin/{applet}", 0o120777, b"busybox") for applet in APPLETS]
    entries += [CpioEntry(f"lib/modules/{name}.ko", 0o100644, data)
                for name, data in modules.items()]
    return entries


def recipe_id() -> str:
    """A digest of everything here that shapes the output besides the kernel package."""
    recipe = json.dumps([INIT_SCRIPT, PROFILE, MODULES, APPLETS, 1]).encode()
    return hashlib.sha256(recipe).hexdigest()[:12]


# -- the build -------------------------------------------------------------------------------

def _run(argv: list[str], cwd: str | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BuildError(f"cannot run {argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise BuildError(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def kernel_package() -> KernelPackage:
    """The kernel package (and version) ``linux-image-amd64`` depends on now."""
    name, version = parse_meta_show(
        _run(["apt-cache", "show", "--no-all-versions", META_PACKAGE]))
    if version is None:
        version = parse_candidate(_run(["apt-cache", "policy", name]))
    return KernelPackage(name, version)


def download(pkg: KernelPackage, workdir: str) -> str:
    """``apt-get download`` of the package into ``workdir``; its .deb path."""
    user = _run(["id", "-un"]).strip() or "root"
    argv = ["apt-get", "download", "-q", "-o", f"APT::Sandbox::User={user}",
            f"{pkg.name}={pkg.version}"]
    try:
        _run(argv, cwd=workdir)
    except BuildError:
        if os.geteuid() != 0:
            raise
        _run(["apt-get", "update", "-qq"])  # stale lists: the version moved on
        _run(argv, cwd=workdir)
    debs = [n for n in os.listdir(workdir) if n.startswith(pkg.name + "_") and n.endswith(".deb")]
    if len(debs) != 1:
        raise BuildError(f"apt-get download left {debs or 'no .deb'} in {workdir}")
    return os.path.join(workdir, debs[0])


def read_module(path: str) -> bytes:
    """A module file's ELF contents (xz-compressed modules are decompressed)."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".ko.xz"):
        data = lzma.decompress(data)
    elif not path.endswith(".ko"):
        raise BuildError(f"cannot read module {path} (unknown compression)")
    return data


def collect_modules(moddir: str) -> dict[str, bytes]:
    """The wanted modules of the unpacked kernel at ``moddir`` (``lib/modules/<abi>``),
    in load order; built-in ones are left out."""
    index: dict[str, str] = {}
    for base, _, names in os.walk(os.path.join(moddir, "kernel")):
        for name in names:
            index.setdefault(module_name(name), os.path.join(base, name))
    builtin: set[str] = set()
    builtin_list = os.path.join(moddir, "modules.builtin")
    if os.path.exists(builtin_list):
        with open(builtin_list, encoding="utf-8") as f:
            builtin = {module_name(line.strip()) for line in f if line.strip()}

    def depends(name: str) -> list[str]:
        if name in builtin:
            return []
        if name not in index:
            raise BuildError(f"module {name} is not in the kernel package")
        field = _run(["modinfo", "-F", "depends", index[name]]).strip()
        return [module_name(d) for d in field.split(",") if d.strip()]

    order = load_order(MODULES, depends)
    return {name: read_module(index[name]) for name in order if name not in builtin}


def find_busybox() -> bytes:
    """The static busybox (Debian's busybox-static)."""
    for candidate in ("/bin/busybox", "/usr/bin/busybox", shutil.which("busybox") or ""):
        if candidate and os.path.isfile(candidate):
            with open(candidate, "rb") as f:
                data = f.read()
            if is_static_elf(data):
                return data
    raise BuildError("no static busybox (Debian: apt-get install busybox-static)")


def build_into(pkg: KernelPackage, outdir: str, scratch: str) -> None:
    """Download and unpack ``pkg`` under ``scratch``; write vmlinux, initrd.img and
    build.json into ``outdir``."""
    busybox = find_busybox()
    deb = download(pkg, scratch)
    root = os.path.join(scratch, "root")
    _run(["dpkg", "-x", deb, root])
    os.unlink(deb)
    abis = os.listdir(os.path.join(root, "lib", "modules"))
    if len(abis) != 1:
        raise BuildError(f"{pkg.name} ships modules for {abis}, not one kernel")
    abi = abis[0]
    with open(os.path.join(root, "boot", f"vmlinuz-{abi}"), "rb") as f:
        vmlinux = extract_vmlinux(f.read())
    modules = collect_modules(os.path.join(root, "lib", "modules", abi))
    initrd = gzip.compress(cpio_newc(initramfs_entries(busybox, modules)), 9, mtime=0)
    for name, data in ((guestfiles.KERNEL_NAME, vmlinux), (guestfiles.INITRD_NAME, initrd)):
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    info = {"package": pkg.name, "version": pkg.version, "abi": abi, "recipe": recipe_id(),
            "modules": list(modules)}
    with open(os.path.join(outdir, "build.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
        f.write("\n")


def _replace_link(path: str, target: str) -> None:
    """Point the symlink ``path`` at ``target`` with one rename."""
    if os.path.islink(path) and os.readlink(path) == target:
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)


def apt_lists_stamp(lists: str = APT_LISTS) -> str:
    """When apt's package lists last changed (``apt-get update`` renames files into
    the directory), or "" if there are none."""
    try:
        return str(os.stat(lists).st_mtime_ns)
    except OSError:
        return ""


def _apt_seen(outdir: str) -> str:
    """What ``apt-checked`` holds once apt said the current build is the newest."""
    return f"{apt_lists_stamp()} {os.path.realpath(os.path.join(outdir, 'current'))}\n"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def current_build(outdir: str) -> dict[str, object] | None:
    """build.json of the build ``current`` points at, if it is complete."""
    try:
        with open(os.path.join(outdir, "current", "build.json"), encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or guestfiles.find_guest(
            {guestfiles.GUEST_DIR_ENV: outdir}) is None:
        return None
    return info


def build(outdir: str, force: bool = False, log: Callable[[str], None] = print) -> bool:
    """Bring ``outdir`` up to date; True if something was built."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        info = current_build(outdir)
        checked = os.path.join(outdir, "apt-checked")
        seen = _apt_seen(outdir)
        if not force and info is not None and info.get("recipe") == recipe_id() \
                and _read(checked) == seen:
            # apt's lists did not change since this build was found current: no apt-cache
            log(f"guest: up to date ({info.get('package')} {info.get('version')}) in {outdir}")
            return False
        try:
            pkg = kernel_package()
        except BuildError as exc:
            if info is not None:
                log(f"guest: kept {info.get('package')} {info.get('version')} ({exc})")
                return False
            raise
        if not force and info is not None and (info.get("package"), info.get("version"),
                                               info.get("recipe")) == (
                pkg.name, pkg.version, recipe_id()):
            _write(checked, seen)
            log(f"guest: up to date ({pkg.name} {pkg.version}) in {outdir}")
            return False
        builds = os.path.join(outdir, "builds")
        os.makedirs(builds, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=outdir, prefix=".scratch-") as scratch:
            staged = tempfile.mkdtemp(dir=builds, prefix=".new-")
            # a new name each time: the build in use is never touched until unused
            name = f"{pkg.name}_{pkg.version}_{recipe_id()}_{os.path.basename(staged)[5:]}"
            name = name.replace(":", "%3a").replace("/", "_")
            try:
                build_into(pkg, staged, scratch)
                os.chmod(staged, 0o755)
                os.rename(staged, os.path.join(builds, name))
            except BaseException:
                shutil.rmtree(staged, ignore_errors=True)
                raise
        _replace_link(os.path.join(outdir, "current"), os.path.join("builds", name))
        for member in (guestfiles.KERNEL_NAME, guestfiles.INITRD_NAME):
            _replace_link(os.path.join(outdir, member), os.path.join("current", member))
        for old in os.listdir(builds):
            if old != name:
                shutil.rmtree(os.path.join(builds, old), ignore_errors=True)
        _write(checked, _apt_seen(outdir))
        log(f"guest: built {pkg.name} {pkg.version} into {outdir}")
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="guestbuild", description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=guestfiles.guest_dir(),
                        help="output directory (default: $GANETI_GUEST_DIR or .cache/guest)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args(argv)
    try:
        build(os.path.abspath(args.dir), force=args.force)
    except BuildError as exc:
        print(f"guest: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
