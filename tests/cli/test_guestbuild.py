"""The guest builder's pure parts (ganeti/cli/guestbuild.py) and the lookup of its
output (ganeti/cli/guestfiles.py); no package is downloaded here."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import struct
import subprocess
import unittest

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import guestbuild, guestfiles
from ganeti.cli.guestbuild import BuildError, CpioEntry, KernelPackage

APT_SHOW = """Package: linux-image-amd64
Source: linux-signed-amd64 (6.1.192+2)
Version: 6.1.192-2
Depends: linux-image-6.1.0-56-amd64 (= 6.1.192-2)
Description: Linux for 64-bit PCs (meta-package)
"""
APT_POLICY = """linux-image-6.1.0-56-amd64:
  Installed: (none)
  Candidate: 6.1.192-2
  Version table:
     6.1.192-2 500
"""


def elf(interp: bool = False) -> bytes:
    """A minimal 64-bit ELF header with one program header (PT_INTERP or PT_LOAD)."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x20, 64)      # e_phoff
    struct.pack_into("<HH", header, 0x36, 56, 1)  # e_phentsize, e_phnum
    phdr = bytearray(56)
    struct.pack_into("<I", phdr, 0, 3 if interp else 1)
    return bytes(header + phdr)


def parse_newc(data: bytes) -> list[tuple[str, int, bytes, tuple[int, int]]]:
    """(name, mode, data, rdev) of each member of a newc archive, trailer excluded."""
    members, pos = [], 0
    while True:
        assert data[pos:pos + 6] == b"070701", data[pos:pos + 6]
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rdev, namesize = fields[1], fields[6], (fields[9], fields[10]), fields[11]
        pos += 110
        name = data[pos:pos + namesize - 1].decode()
        pos += namesize
        pos += -pos % 4
        body = data[pos:pos + size]
        pos += size
        pos += -pos % 4
        if name == "TRAILER!!!":
            return members
        members.append((name, mode, body, rdev))


class ParseTest(SynchronousTestCase):
    def test_metapackage_and_candidate(self):
        self.assertEqual(guestbuild.parse_meta_show(APT_SHOW),
                         ("linux-image-6.1.0-56-amd64", "6.1.192-2"))
        self.assertEqual(guestbuild.parse_meta_show(
            "Depends: firmware-x, linux-image-6.1.0-9-amd64\n"),
            ("linux-image-6.1.0-9-amd64", None))
        self.assertEqual(guestbuild.parse_candidate(APT_POLICY), "6.1.192-2")

    def test_refuses_what_is_not_a_kernel_package(self):
        for text in ("Package: linux-image-amd64\n", "Depends: linux-image-$(reboot)\n",
                     "Depends: firmware-linux\n", "Pre-Depends: linux-image-6.1.0-9-amd64\n"):
            self.assertRaises(BuildError, guestbuild.parse_meta_show, text)
        self.assertRaises(BuildError, guestbuild.parse_meta_show,
                          "Depends: linux-image-6.1.0-9-amd64 (= 1;reboot)\n")
        for text in ("  Candidate: (none)\n", "", "  Candidate: 1 2\n"):
            self.assertRaises(BuildError, guestbuild.parse_candidate, text)

    def test_module_names(self):
        self.assertEqual([guestbuild.module_name(n) for n in (
            "a/virtio-blk.ko", "pvpanic-pci.ko.xz", "kernel/fs/ext4/ext4.ko")],
            ["virtio_blk", "pvpanic_pci", "ext4"])


class VmlinuxTest(SynchronousTestCase):
    def test_payload_after_a_false_marker(self):
        kernel = b"\x7fELF" + os.urandom(3000) + b"kernel text" * 100
        payload = lzma.compress(kernel, format=lzma.FORMAT_XZ)
        vmlinuz = (b"MZ setup code " + guestbuild.XZ_MAGIC + b"not xz at all" + b"\x00" * 99
                   + payload + b"trailing size field and padding")
        self.assertEqual(guestbuild.extract_vmlinux(vmlinuz), kernel)

    def test_no_kernel(self):
        self.assertRaises(BuildError, guestbuild.extract_vmlinux, b"MZ nothing here")
        not_elf = lzma.compress(b"plain data", format=lzma.FORMAT_XZ)
        self.assertRaises(BuildError, guestbuild.extract_vmlinux, b"MZ" + not_elf)


class ModulesTest(SynchronousTestCase):
    DEPS = {"virtio_blk": ["virtio", "virtio_ring"], "virtio": ["virtio_ring"],
            "virtio_ring": [], "ext4": ["jbd2", "crc16"], "jbd2": [], "crc16": []}

    def test_dependencies_first_else_in_order(self):
        order = guestbuild.load_order(["crc16", "virtio_blk", "ext4"], self.DEPS.__getitem__)
        self.assertEqual(order, ["crc16", "virtio_ring", "virtio", "virtio_blk", "jbd2", "ext4"])

    def test_read_module_plain_or_xz(self):
        base = os.path.abspath(self.mktemp())
        os.makedirs(base)
        for name, data in (("a.ko", b"\x7fELF a"), ("b.ko.xz", lzma.compress(b"\x7fELF b")),
                           ("c.ko.zst", b"?")):
            with open(os.path.join(base, name), "wb") as f:
                f.write(data)
        self.assertEqual(guestbuild.read_module(os.path.join(base, "a.ko")), b"\x7fELF a")
        self.assertEqual(guestbuild.read_module(os.path.join(base, "b.ko.xz")), b"\x7fELF b")
        self.assertRaises(BuildError, guestbuild.read_module, os.path.join(base, "c.ko.zst"))
        self.assertEqual(guestbuild.apt_lists_stamp(os.path.join(base, "none")), "")
        self.assertTrue(guestbuild.apt_lists_stamp(base).isdigit())

    def test_cycle(self):
        deps = {"a": ["b"], "b": ["a"]}
        self.assertRaises(BuildError, guestbuild.load_order, ["a"], deps.__getitem__)

    def test_wanted_modules_cover_the_guest(self):
        for name in ("virtio_pci", "virtio_blk", "virtio_net", "ext4", "button", "evdev"):
            self.assertIn(name, guestbuild.MODULES)
        self.assertLess(guestbuild.MODULES.index("crc32c_generic"),
                        guestbuild.MODULES.index("jbd2"))


class StaticElfTest(SynchronousTestCase):
    def test_interpreter_means_dynamic(self):
        self.assertTrue(guestbuild.is_static_elf(elf()))
        self.assertFalse(guestbuild.is_static_elf(elf(interp=True)))
        self.assertFalse(guestbuild.is_static_elf(b"#!/bin/sh\n" + bytes(100)))
        self.assertFalse(guestbuild.is_static_elf(elf()[:70]))

    def test_system_shells(self):
        if os.path.exists("/bin/sh"):
            with open(os.path.realpath("/bin/sh"), "rb") as f:
                self.assertFalse(guestbuild.is_static_elf(f.read()))  # dash links libc


@pytest.mark.subprocess
class InitramfsTest(SynchronousTestCase):
    def entries(self) -> list[CpioEntry]:
        modules = {"virtio_ring": b"\x7fELF ring", "virtio": b"\x7fELF virtio"}
        return guestbuild.initramfs_entries(elf(), modules)

    def test_archive_members(self):
        members = {name: (mode, body, rdev) for name, mode, body, rdev in
                   parse_newc(guestbuild.cpio_newc(self.entries()))}
        self.assertEqual(members["dev/console"], (0o020600, b"", (5, 1)))
        self.assertEqual(members["init"][0], 0o100755)
        self.assertEqual(members["init"][1].decode(), guestbuild.INIT_SCRIPT)
        self.assertEqual(members["bin/sh"], (0o120777, b"busybox", (0, 0)))
        self.assertEqual(members["bin/switch_root"][1], b"busybox")
        self.assertEqual(members["etc/modules"][1], b"virtio_ring\nvirtio\n")
        self.assertEqual(members["lib/modules/virtio.ko"][1], b"\x7fELF virtio")
        self.assertEqual(members["newroot"][0], 0o040755)

    def test_same_input_same_bytes(self):
        self.assertEqual(guestbuild.cpio_newc(self.entries()),
                         guestbuild.cpio_newc(self.entries()))

    def test_cpio_reads_it(self):
        cpio = shutil.which("cpio")
        if not cpio:
            raise unittest.SkipTest("cpio is not installed")
        listing = subprocess.run([cpio, "-t", "--quiet"], input=guestbuild.cpio_newc(
            self.entries()), capture_output=True, check=True).stdout.decode().split()
        self.assertIn("init", listing)
        self.assertIn("lib/modules/virtio_ring.ko", listing)

    def test_init_script(self):
        script = guestbuild.INIT_SCRIPT
        self.assertTrue(script.startswith("#!/bin/sh\n"))
        for needed in ("mount -t devtmpfs devtmpfs /dev", 'insmod "/lib/modules/$mod.ko"',
                       "root=/dev/vda", "root=*)", "mount -t ext4", "mount --move /dev",
                       "exec switch_root /newroot /sbin/init", "/dev/ttyS0"):
            self.assertIn(needed, script)
        sh = shutil.which("sh")
        assert sh
        subprocess.run([sh, "-n"], input=script.encode(), check=True)

    def test_recipe_id_follows_the_script(self):
        before = guestbuild.recipe_id()
        self.assertEqual(len(before), 12)
        self.patch(guestbuild, "INIT_SCRIPT", guestbuild.INIT_SCRIPT + "# changed\n")
        self.assertNotEqual(guestbuild.recipe_id(), before)


class BuildTest(SynchronousTestCase):
    """build() with the download and unpacking replaced: up to date, rebuilt, swapped."""

    def setUp(self) -> None:
        self.out = os.path.abspath(self.mktemp())
        self.pkg = KernelPackage("linux-image-6.1.0-56-amd64", "6.1.192-2")
        self.built: list[KernelPackage] = []
        self.asked = 0
        self.lists = "1000"
        self.patch(guestbuild, "kernel_package", self.ask_apt)
        self.patch(guestbuild, "apt_lists_stamp", lambda: self.lists)
        self.patch(guestbuild, "build_into", self.fake_build)
        self.log: list[str] = []

    def ask_apt(self) -> KernelPackage:
        self.asked += 1
        return self.pkg

    def fake_build(self, pkg: KernelPackage, outdir: str, scratch: str) -> None:
        self.built.append(pkg)
        if pkg.version == "broken":
            raise BuildError("dpkg -x failed")
        for name in (guestfiles.KERNEL_NAME, guestfiles.INITRD_NAME):
            with open(os.path.join(outdir, name), "w") as f:
                f.write(f"{name} {pkg.version}")
        with open(os.path.join(outdir, "build.json"), "w") as f:
            json.dump({"package": pkg.name, "version": pkg.version,
                       "recipe": guestbuild.recipe_id()}, f)

    def kernel_text(self) -> str:
        found = guestfiles.find_guest({guestfiles.GUEST_DIR_ENV: self.out})
        assert found is not None
        with open(found.kernel) as f:
            return f.read()

    def test_build_once_then_up_to_date(self):
        self.assertTrue(guestbuild.build(self.out, log=self.log.append))
        self.assertFalse(guestbuild.build(self.out, log=self.log.append))
        self.assertEqual(len(self.built), 1)
        self.assertEqual(self.kernel_text(), "vmlinux 6.1.192-2")
        self.assertIn("up to date", self.log[-1])
        self.assertTrue(guestbuild.build(self.out, force=True, log=self.log.append))

    def test_apt_asked_again_only_when_its_lists_change(self):
        guestbuild.build(self.out, log=self.log.append)
        self.pkg = KernelPackage(self.pkg.name, "6.1.200-1")
        self.assertFalse(guestbuild.build(self.out, log=self.log.append))
        self.assertEqual(self.asked, 1)
        self.lists = "2000"  # apt-get update
        self.assertTrue(guestbuild.build(self.out, log=self.log.append))
        self.assertEqual((self.asked, self.kernel_text()), (2, "vmlinux 6.1.200-1"))
        self.lists = "3000"  # an update that changes nothing: asked once, then not
        self.assertFalse(guestbuild.build(self.out, log=self.log.append))
        self.assertFalse(guestbuild.build(self.out, log=self.log.append))
        self.assertEqual(self.asked, 3)

    def test_new_version_swaps_and_removes_the_old(self):
        guestbuild.build(self.out, log=self.log.append)
        self.pkg = KernelPackage(self.pkg.name, "6.1.200-1")
        self.lists = "2000"
        self.assertTrue(guestbuild.build(self.out, log=self.log.append))
        self.assertEqual(self.kernel_text(), "vmlinux 6.1.200-1")
        self.assertEqual(len(os.listdir(os.path.join(self.out, "builds"))), 1)
        self.assertEqual(os.readlink(os.path.join(self.out, "vmlinux")), "current/vmlinux")

    def test_failed_build_keeps_the_previous(self):
        guestbuild.build(self.out, log=self.log.append)
        self.pkg = KernelPackage(self.pkg.name, "broken")
        self.lists = "2000"
        self.assertRaises(BuildError, guestbuild.build, self.out, log=self.log.append)
        self.assertEqual(self.kernel_text(), "vmlinux 6.1.192-2")
        self.assertEqual([n for n in os.listdir(self.out) if n.startswith(".scratch")], [])
        self.assertEqual(len(os.listdir(os.path.join(self.out, "builds"))), 1)

    def test_no_apt_keeps_what_is_there(self):
        guestbuild.build(self.out, log=self.log.append)

        def no_apt() -> KernelPackage:
            raise BuildError("cannot run apt-cache")
        self.patch(guestbuild, "kernel_package", no_apt)
        self.lists = "2000"
        self.assertFalse(guestbuild.build(self.out, log=self.log.append))
        self.assertIn("kept", self.log[-1])
        empty = os.path.abspath(self.mktemp())
        self.assertRaises(BuildError, guestbuild.build, empty, log=self.log.append)


class GuestFilesTest(SynchronousTestCase):
    def test_env_dir_first(self):
        base = os.path.abspath(self.mktemp())
        os.makedirs(base)
        env = {guestfiles.GUEST_DIR_ENV: base}
        self.assertIsNone(guestfiles.find_guest(env))
        for name in ("vmlinux", "initrd.img"):
            with open(os.path.join(base, name), "wb") as f:
                f.write(gzip.compress(b""))
        found = guestfiles.find_guest(env)
        self.assertEqual(found, guestfiles.GuestFiles(
            os.path.join(base, "vmlinux"), os.path.join(base, "initrd.img"),
            "console=ttyS0,115200", "/dev/vda"))
        assert found is not None
        self.assertEqual(found.hvparams(), {
            "kernel_path": found.kernel, "initrd_path": found.initrd,
            "kernel_args": "console=ttyS0,115200", "root_path": "/dev/vda",
            "serial_console": True, "disk_type": "paravirtual", "nic_type": "paravirtual"})

    def test_default_is_the_project_cache(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.assertEqual(guestfiles.guest_dir({}), os.path.join(root, ".cache", "guest"))
        self.assertEqual(guestfiles.guest_dir({guestfiles.GUEST_DIR_ENV: ""}),
                         guestfiles.project_guest_dir())

    def test_one_file_missing(self):
        base = os.path.abspath(self.mktemp())
        os.makedirs(base)
        with open(os.path.join(base, "vmlinux"), "wb"):
            pass
        self.assertIsNone(guestfiles.find_guest({guestfiles.GUEST_DIR_ENV: base}))
