"""The project's own OS definition (share/os/busybox) run by the node daemon's calls:
create onto a file image, rename, export/import round trip, verify.

The image is checked with debugfs (e2fsprogs), which reads ext4 without
mounting; the scripts need busybox-static (installed by the Makefile).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.cli.vcluster_nodes import link_os_definitions
from ganeti.core import paths as pathsmod
from ganeti.noded import osdir
from ganeti.noded.backend import osdefs
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.bdev import files
from ganeti.noded.procs import ChildProcesses
from tests.noded.helpers import node_paths
from tests.noded.test_osdefs import instance

BUSYBOX_OS = pathsmod.shipped_os_dir("busybox")
ENV_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"


def debugfs(image: str, request: str) -> str:
    out = subprocess.run(["debugfs", "-R", request, image], capture_output=True, check=True,
                         text=True)
    return out.stdout


@pytest.mark.subprocess
class BusyboxOsTest(TestCase):
    timeout = 60

    def setUp(self) -> None:
        self.assertTrue(shutil.which("busybox", path=ENV_PATH),
                        "busybox-static is not installed (make install-os)")
        self.paths = node_paths(self)
        top = self.paths.os_search_path[0]
        os.makedirs(top)
        os.symlink(BUSYBOX_OS, os.path.join(top, "busybox"))
        self.clock = Clock()
        self.children = ChildProcesses(reactor, self.clock)
        self.ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner,
                               children=self.children)
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)

    def image(self, name: str = "disk0.img", size: int = 32 << 20) -> str:
        """A file disk: its path as the config names it (the node opens it below its
        root, :meth:`local`)."""
        wire = f"/srv/ganeti/file-storage/bb/{name}"
        path = self.local(wire)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(size)
        return wire

    def local(self, wire: str) -> str:
        return files.local(self.paths, wire)

    def inst(self, disk: str, name: str = "bb1.example.com", **osparams) -> dict:
        inst = instance(name=name, os_name="busybox+default", disk_file=disk)
        inst["disks_info"] = inst["disks_info"][:1]
        inst["osparams"] = osparams
        return inst

    def test_definition_is_valid(self):
        osdef = osdir.find_definition("busybox+default", self.paths.os_search_path)
        self.assertEqual((osdef.api_versions, osdef.variants, [p[0] for p in osdef.parameters],
                          osdef.trusted), ([20], ["default"], ["marker", "root_size"], True))

    async def test_create_rename_export_import(self):
        disk = self.image()
        await osdefs.instance_os_add(self.ctx, self.inst(disk, marker="Hello, bb1!"), False, 0)
        self.assertEqual(debugfs(self.local(disk), "cat /etc/hostname"), "bb1.example.com\n")
        self.assertEqual(debugfs(self.local(disk), "cat /etc/ganeti-marker"), "Hello, bb1!\n")
        self.assertIn("cat /etc/ganeti-marker", debugfs(self.local(disk), "cat /sbin/init"))
        listing = debugfs(self.local(disk), "ls -l /bin")
        self.assertIn("busybox", listing)
        self.assertIn("sh", listing.split())
        info = debugfs(self.local(disk), "cat /etc/ganeti-instance")
        self.assertIn("os=busybox+default\nvariant=default\nhypervisor=fake\ndisks=1\n", info)

        renamed = self.inst(disk, name="bb2.example.com")
        await osdefs.instance_run_rename(self.ctx, renamed, "bb1.example.com", 0)
        self.assertEqual(debugfs(self.local(disk), "cat /etc/hostname"), "bb2.example.com\n")
        self.assertEqual(debugfs(self.local(disk), "cat /etc/ganeti-marker"), "Hello, bb1!\n")

        # export writes a tar stream (and its size to EXP_SIZE_FD); import reads it back
        env = {"PATH": ENV_PATH, "EXPORT_DISK_PATH": self.local(disk), "EXPORT_INDEX": "0",
               "EXP_SIZE_FD": "1"}
        stream = os.path.join(self.dir, "stream.tar")
        with open(stream, "wb") as out:
            exported = subprocess.run([os.path.join(BUSYBOX_OS, "export")], env=env,
                                      stdout=out, stderr=subprocess.PIPE, check=False,
                                      pass_fds=())
        self.assertEqual(exported.returncode, 0, exported.stderr)
        with open(stream, "rb") as f:
            data = f.read()
        size, _, tar = data.partition(b"\n")
        self.assertEqual(int(size), len(tar))
        with open(stream, "wb") as f:
            f.write(tar)
        target = self.image("disk1.img")
        env = {"PATH": ENV_PATH, "IMPORT_DISK_PATH": self.local(target), "IMPORT_INDEX": "0",
               "INSTANCE_NAME": "bb3.example.com"}
        with open(stream, "rb") as f:
            imported = subprocess.run([os.path.join(BUSYBOX_OS, "import")], env=env, stdin=f,
                                      capture_output=True, check=False)
        self.assertEqual(imported.returncode, 0, imported.stderr)
        self.assertEqual(debugfs(self.local(target), "cat /etc/hostname"), "bb3.example.com\n")
        self.assertEqual(debugfs(self.local(target), "cat /etc/ganeti-marker"), "Hello, bb1!\n")
        mode = debugfs(self.local(target), "stat /bin/busybox").split("Mode:")[1].split()[0]
        self.assertEqual(mode, "0755")

    async def test_root_size_and_reinstall(self):
        disk = self.image(size=48 << 20)
        await osdefs.instance_os_add(self.ctx, self.inst(disk, root_size=16), True, 0)
        stats = debugfs(self.local(disk), "stats")
        block_count = int(stats.split("Block count:")[1].split()[0])
        block_size = int(stats.split("Block size:")[1].split()[0])
        self.assertEqual(block_count * block_size, 16 << 20)
        [log] = os.listdir(self.paths.os_log_dir)
        with open(os.path.join(self.paths.os_log_dir, log)) as f:
            self.assertIn(f"reinstalled bb1.example.com on {self.local(disk)}", f.read())

    async def test_verify_and_failures(self):
        ok = await osdefs.os_validate(self.ctx, True, "busybox+default", ["parameters"],
                                      {"marker": "x", "root_size": "64"}, False)
        self.assertIs(ok, True)
        with self.assertRaises(RPCFail) as cm:
            await osdefs.os_validate(self.ctx, True, "busybox+default", ["parameters"],
                                     {"root_size": "lots"}, False)
        self.assertIn("root_size must be a positive number of MiB, not '<redacted>'",
                      str(cm.exception))
        with self.assertRaises(RPCFail) as cm:
            await osdefs.instance_os_add(self.ctx, self.inst("/nonexistent/disk"), False, 0)
        self.assertIn("OS create script failed (exited with exit code 1), last lines in the "
                      "log file:\nbusybox-os: disk " + self.local("/nonexistent/disk")
                      + " does not exist",
                      str(cm.exception))


class VirtualClusterLinkTest(TestCase):
    def test_vcluster_puts_it_on_each_node_search_path(self):
        paths = node_paths(self)
        link_os_definitions(paths)
        link_os_definitions(paths)  # again: nothing changes
        link = os.path.join(paths.os_search_path[0], "busybox")
        self.assertEqual(os.readlink(link), BUSYBOX_OS)
        self.assertEqual(osdir.find_definition("busybox", paths.os_search_path).path, link)
