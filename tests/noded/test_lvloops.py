"""Volumes without device-mapper for OS scripts (ganeti.noded.backend.lvloops): a loop
device over the volume's range is the script's ``DISK_<n>_PATH`` and is detached after
it, whatever the script does (a fake ``losetup``); and on a real volume group on a
loop device (root) what is written through it lands in the volume's extent."""

from __future__ import annotations

import os
import subprocess

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from ganeti.noded.backend import exports, instdisks, lvloops, osdefs
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.bdev import lvm, qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.hypervisors.domainxml import DiskSpec
from tests.noded.helpers import loop_volume_group, node_paths
from tests.noded.test_osdefs import DUMP_ENV, OsTestCase, instance, make_os, read_env

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
FAKE_LOSETUP = """#!/bin/sh
echo "$@" >> "{log}"
case "$1" in
  --find) [ -e "{fail}" ] && {{ echo "losetup: cannot find an unused loop device" >&2; exit 1; }}
          echo /dev/loop9 ;;
esac
exit 0
"""


@pytest.mark.subprocess
class OsScriptLoopsTest(OsTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.patch(lvm, "dm_available", lambda: False)
        self.ranges = []

        async def volume_range(ctx, name, idx, disk, action="start"):
            self.ranges.append((name, idx, disk["logical_id"], action))
            return DiskSpec("/dev/loop3", block=True, read_only=disk.get("mode") == "ro",
                            offset=5 << 20, size=512 << 20)
        self.patch(instdisks, "volume_range", volume_range)
        self.log = os.path.join(self.out, "losetup.log")
        self.fail_flag = os.path.join(self.out, "fail")
        fake = os.path.join(self.out, "losetup")
        with open(fake, "w") as f:
            f.write(FAKE_LOSETUP.format(log=self.log, fail=self.fail_flag))
        os.chmod(fake, 0o755)
        self.patch(lvloops, "losetup_program", lambda: fake)

    def losetup_calls(self) -> list[str]:
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    async def test_script_gets_a_loop_device_detached_after(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", scripts={"create": DUMP_ENV.format(out=out)})
        await osdefs.instance_os_add(self.ctx, instance(), False, 0)
        env = read_env(out)
        self.assertEqual(env["DISK_1_PATH"], "/dev/loop9")  # the plain disk
        self.assertTrue(env["DISK_0_PATH"].endswith("/srv/disk0"))  # the file disk
        self.assertEqual(self.ranges, [("inst1.example.com", 1, ["xenvg", "lv1"],
                                        "run the OS create script of")])
        self.assertEqual(self.losetup_calls(), [
            f"--find --show --offset {5 << 20} --sizelimit {512 << 20} --read-only "
            "/dev/loop3", "--detach /dev/loop9"])

    async def test_detached_when_the_script_fails(self):
        make_os(self.top, "testos", scripts={"rename": "echo broken >&2; exit 3\n"})
        with self.assertRaises(RPCFail):
            await osdefs.instance_run_rename(self.ctx, instance(), "old.example.com", 0)
        self.assertEqual(self.losetup_calls()[-1], "--detach /dev/loop9")

    async def test_losetup_failure_runs_no_script(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", scripts={"create": DUMP_ENV.format(out=out)})
        open(self.fail_flag, "w").close()
        with self.assertRaises(RPCFail) as caught:
            await osdefs.instance_os_add(self.ctx, instance(), False, 0)
        self.assertIn("Could not run the OS create script of instance inst1.example.com: "
                      "disk 1: cannot attach a loop device to /dev/loop3: losetup: cannot "
                      "find an unused loop device", str(caught.exception))
        self.assertFalse(os.path.exists(out))

    async def test_export_script_gets_a_loop_for_its_disk_only(self):
        make_os(self.top, "testos", scripts={"export": 'echo "$EXPORT_DEVICE"\n'})
        staging = ".x-1"
        inst = instance()
        inst["disks_info"].append(dict(inst["disks_info"][1], uuid="disk-uuid-2",
                                       logical_id=["xenvg", "lv2"]))
        size = await exports.export_dump(self.ctx, inst, 2, staging, 0)
        with open(os.path.join(self.paths.export_dir, staging, "disk-uuid-2")) as f:
            self.assertEqual(f.read(), "/dev/loop9\n")
        self.assertEqual(size, len("/dev/loop9\n"))
        self.assertEqual([r[1:3] for r in self.ranges], [(2, ["xenvg", "lv2"])])
        self.assertEqual(self.losetup_calls()[-1], "--detach /dev/loop9")

    async def test_drbd_disk_is_its_data_volume(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", scripts={"create": DUMP_ENV.format(out=out)})
        data = {"dev_type": "plain", "logical_id": ["xenvg", "u.disk0_data"], "size": 1024}
        meta = {"dev_type": "plain", "logical_id": ["xenvg", "u.disk0_meta"], "size": 128}
        drbd = {"dev_type": "drbd", "logical_id": ["n1", "n2", 11000, 0, 0, "s"],
                "mode": "rw", "uuid": "disk-uuid-0", "size": 1024, "children": [data, meta]}
        await osdefs.instance_os_add(self.ctx, instance(disks_info=[drbd]), False, 0)
        self.assertEqual(read_env(out)["DISK_0_PATH"], "/dev/loop9")
        self.assertEqual([r[2] for r in self.ranges], [["xenvg", "u.disk0_data"]])
        self.assertEqual(lvloops.data_volume({"dev_type": "drbd", "children": []}), None)
        # the qemu engine's disk is written through its mirror only, never beside it:
        # without the mirror's daemon there is no path
        qemu = dict(drbd, dynamic_params={"mirror": "qemu", "local-ip": "127.0.0.1",
                                           "remote-ip": "127.0.0.2", "local-minor": 0,
                                           "remote-minor": 0})
        calls = len(self.losetup_calls())

        async def no_daemon(dev, start=False):
            self.assertEqual((dev.port, dev.local_ip), (11000, "127.0.0.1"))
            return None
        self.patch(qmirror_drbd, "mirror_of", no_daemon)
        with self.assertRaises(RPCFail) as cm:
            await lvloops.attach(self.ctx, instance(disks_info=[qemu]), "reinstall")
        self.assertEqual(str(cm.exception), "Could not reinstall instance inst1.example.com: "
                         "disk 0: its mirror daemon does not run on this node (activate "
                         "the instance's disks first)")
        self.assertEqual(len(self.losetup_calls()), calls)
        self.assertEqual(lvloops.engine(instance(hypervisor="fake"), drbd), "emulated")
        self.assertEqual(lvloops.data_volume({"dev_type": "file"}), None)

    async def test_nothing_attached_with_device_mapper_or_without_volumes(self):
        self.assertEqual(await lvloops.attach(self.ctx, instance(disks_info=[]), "x"), ({}, []))
        self.patch(lvm, "dm_available", lambda: True)
        self.assertEqual(await lvloops.attach(self.ctx, instance(), "x"), ({}, []))
        self.assertEqual(self.losetup_calls(), [])


@pytest.mark.subprocess
class RealVolumeLoopTest(SynchronousTestCase):
    """A real volume group on a loop device: what CI (root, no device-mapper) runs."""

    def setUp(self) -> None:
        if lvm.dm_available():
            raise SkipTest("with device-mapper volumes have their own devices")
        self.pv, self.vg = loop_volume_group(self, "gloop", {"a.disk0": "8M",
                                                            "b.disk0": "8M"})
        self.ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)

    def test_written_through_the_loop_lands_in_the_extent(self) -> None:
        inst = {"name": "i", "disks_info": [
            {"dev_type": "plain", "logical_id": [self.vg, "b.disk0"], "mode": "rw"}]}
        env, loops = self.successResultOf(defer.ensureDeferred(
            lvloops.attach(self.ctx, inst, "run the OS create script of")))
        self.assertEqual(env, {"DISK_0_PATH": loops[0]})
        try:
            with open(loops[0], "r+b") as f:
                self.assertEqual(f.seek(0, 2), 8 << 20)  # the volume's size
                f.seek(4096)
                f.write(b"GANETI-LV")
        finally:
            self.successResultOf(defer.ensureDeferred(lvloops.detach(self.ctx, loops)))
        with open(self.pv, "rb") as f:
            f.seek((1 << 20) + (8 << 20) + 4096)  # header, a.disk0's two extents
            self.assertEqual(f.read(9), b"GANETI-LV")
        listing = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        self.assertNotIn(f"{loops[0]}:", listing)

    def test_extents_from_the_report_row_match_lvs(self) -> None:
        """A volume's extents from its attach row (MiB figures, the PV's pe_start asked
        once) are the byte-exact ones ``lvs --units b`` gives."""
        disk = {"dev_type": "plain", "logical_id": [self.vg, "b.disk0"], "mode": "rw"}
        dev = lvm.LogicalVolume(self.ctx, disk, [])
        self.assertTrue(self.successResultOf(defer.ensureDeferred(dev.attach())))
        exact = self.successResultOf(defer.ensureDeferred(
            lvm.extents(self.ctx, self.vg, "b.disk0")))
        self.assertEqual(exact, (self.pv, (1 << 20) + (8 << 20), 8 << 20))
        calls = []
        real = lvm.lvm

        async def counted(ctx, *args):
            calls.append(args[0])
            return await real(ctx, *args)
        self.patch(lvm, "lvm", counted)
        self.assertEqual(self.successResultOf(defer.ensureDeferred(dev.extents())), exact)
        self.assertEqual(calls, [])  # no lvs, and pe_start was asked before

    def test_a_volume_of_two_segments_is_refused_from_its_row_too(self) -> None:
        """a.disk0 grown after b.disk0 was made: two segments on the one PV.  Its row
        names one PV, yet its extents are not one range."""
        env = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1")
        subprocess.run(["lvm", "lvextend", "--driverloaded", "n", "-L", "+4M",
                        f"{self.vg}/a.disk0"], check=True, capture_output=True, env=env)
        disk = {"dev_type": "plain", "logical_id": [self.vg, "a.disk0"], "mode": "rw"}
        dev = lvm.LogicalVolume(self.ctx, disk, [])
        self.assertTrue(self.successResultOf(defer.ensureDeferred(dev.attach())))
        for d in (defer.ensureDeferred(dev.extents()), defer.ensureDeferred(
                lvm.extents(self.ctx, self.vg, "a.disk0"))):
            self.assertIn("several segments", str(self.failureResultOf(
                d, BlockDeviceError).value))

