"""Plain (LVM) disks and storage units on the node: unit tests with a fake ``lvm``
program on PATH, and one test on a real volume group on a loop device (root only)."""

import os
import shutil
import subprocess

import pytest
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from ganeti.noded.bdev import lvm
from tests.fakes.fakelvm import FakeLvm
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_bdev_files import NodeCalls


def lv_disk(lv, vg="xenvg", stripes=1):
    return {"dev_type": "plain", "logical_id": [vg, lv], "size": 8, "params": {"stripes": stripes},
            "iv_name": "disk/0"}


@pytest.mark.subprocess
class FakeLvmTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]},
                                               "other": {"size": 50, "pvs": ["/dev/sdc"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.node = MemoryNode(node_paths(self))

    def test_create_without_device_mapper(self):
        lid = self.ok("blockdev_create", [lv_disk("a.disk0"), 8, "inst1", True,
                                          "originstname+inst1 x", False])
        self.assertEqual(lid, ["xenvg", "a.disk0"])
        create = [c for c in self.fake.calls if c[0] == "lvcreate"][0]
        for flag in ("--driverloaded", "-an", "-Zn", "-L8m", "-na.disk0", "-i1", "xenvg"):
            self.assertIn(flag, create)
        self.assertEqual(create[create.index("--driverloaded") + 1], "n")
        self.assertEqual(create[create.index("--addtag") + 1], "originstname+inst1_x")
        self.assertEqual(self.fake.state["lvs"]["xenvg/a.disk0"]["size"], 8)

    def test_create_with_device_mapper_activates(self):
        self.patch(lvm, "dm_available", lambda: True)
        self.ok("blockdev_create", [lv_disk("b"), 8, "i", True, "", False])
        create = [c for c in self.fake.calls if c[0] == "lvcreate"][0]
        self.assertNotIn("--driverloaded", create)
        self.assertNotIn("-an", create)
        self.ok("blockdev_assemble", [lv_disk("b"), {"name": "i"}, True, 0])
        self.assertIn(["lvchange", "-ay", "xenvg/b"], self.fake.calls)

    def test_create_without_space_fails_and_creates_nothing(self):
        msg = self.fails("blockdev_create", [lv_disk("big"), 500, "i", True, "", False])
        self.assertIn("Not enough free space", msg)
        self.assertEqual(self.fake.state["lvs"], {})

    def test_create_in_unknown_vg(self):
        self.assertIn("Can't compute PV info for vg nosuch", self.fails(
            "blockdev_create", [lv_disk("x", vg="nosuch"), 1, "i", True, "", False]))

    def test_lvm_failure_is_reported(self):
        self.fake.fail("lvcreate", "  Volume group xenvg has insufficient free space")
        msg = self.fails("blockdev_create", [lv_disk("c"), 8, "i", True, "", False])
        self.assertIn("insufficient free space", msg)

    def test_invalid_names_never_reach_lvm(self):
        for vg, lv in (("xenvg", "a/b"), ("xenvg", "snapshot"), ("x;rm", "a"),
                       ("xenvg", "a_mlog")):
            msg = self.fails("blockdev_create", [lv_disk(lv, vg=vg), 1, "i", True, "", False])
            self.assertIn("Invalid LVM name", msg)
        self.assertEqual(self.fake.calls, [])

    def test_lifecycle(self):
        disk = lv_disk("d.disk0")
        self.ok("blockdev_create", [disk, 8, "i", True, "", False])
        st = self.ok("blockdev_find", [disk])
        self.assertEqual(st["dev_path"], "/dev/xenvg/d.disk0")
        self.assertIsNone(st["major"])
        self.assertFalse(st["is_degraded"])
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]]), [[8 * 1024 * 1024, 1]])
        self.ok("blockdev_grow", [disk, 4, True, True, False])
        self.assertIn("--test", [c for c in self.fake.calls if c[0] == "lvextend"][0])
        self.assertEqual(self.fake.state["lvs"]["xenvg/d.disk0"]["size"], 8)
        self.ok("blockdev_grow", [disk, 4, False, True, False])
        self.assertEqual(self.fake.state["lvs"]["xenvg/d.disk0"]["size"], 12)
        path, link, _ = self.ok("blockdev_assemble", [disk, {"name": "i"}, True, 0])
        self.assertEqual(path, "/dev/xenvg/d.disk0")
        self.assertTrue(link.endswith("/instance-disks/i:0"))
        self.assertNotIn("lvchange", [c[0] for c in self.fake.calls])  # no dm: no activation
        # without device-mapper a volume counts as online while assembled (linked)
        self.assertEqual(self.ok("lv_list", ["xenvg"]),
                         {"xenvg/d.disk0": ["12.00", True, True]})
        self.ok("blockdev_rename", [[[disk, ["xenvg", "e.disk0"]]]])
        self.assertEqual(list(self.fake.state["lvs"]), ["xenvg/e.disk0"])
        self.assertIn("Can't move a logical volume across volume groups", self.fails(
            "blockdev_rename", [[[lv_disk("e.disk0"), ["other", "e.disk0"]]]]))
        self.ok("blockdev_remove", [lv_disk("e.disk0")])
        self.assertEqual(self.fake.state["lvs"], {})
        self.ok("blockdev_remove", [lv_disk("e.disk0")])  # gone: fine
        self.assertIsNone(self.ok("blockdev_find", [lv_disk("e.disk0")]))
        self.assertIn("Cannot find block device",
                      self.fails("blockdev_grow", [lv_disk("e.disk0"), 1, False, True, False]))

    def test_vg_list_and_node_volumes(self):
        self.ok("blockdev_create", [lv_disk("v1"), 10, "i", True, "", False])
        self.assertEqual(self.ok("vg_list", []), {"xenvg": 100, "other": 50})
        self.assertEqual(self.ok("node_volumes", []),
                         [{"name": "v1", "size": "10.00", "dev": "/dev/sdb", "vg": "xenvg"}])
        self.assertEqual(self.ok("lv_list", [[]]), {"xenvg/v1": ["10.00", True, False]})

    def test_storage_units(self):
        self.ok("blockdev_create", [lv_disk("v1"), 10, "i", True, "", False])
        rows = self.ok("storage_list", ["lvm-vg", [], None,
                                        ["name", "size", "used", "free", "allocatable"]])
        self.assertEqual(sorted(rows), [["other", 50, 0, 50, True],
                                        ["xenvg", 100, 10, 90, True]])
        rows = self.ok("storage_list", ["lvm-pv", [], "/dev/sdb",
                                        ["name", "allocatable", "free"]])
        self.assertEqual(rows, [["/dev/sdb", True, 90]])
        self.ok("storage_modify", ["lvm-pv", [], "/dev/sdb", {"allocatable": False}])
        self.assertIn(["pvchange", "--allocatable", "n", "/dev/sdb"], self.fake.calls)
        self.assertEqual(self.ok("storage_list", ["lvm-pv", [], "/dev/sdb", ["allocatable"]]),
                         [[False]])
        self.assertIn("Unable to modify", self.fails(
            "storage_modify", ["lvm-vg", [], "xenvg", {"allocatable": False}]))
        self.ok("storage_execute", ["lvm-vg", [], "xenvg", "fix-consistency"])
        self.assertIn(["vgreduce", "--removemissing", "xenvg"], self.fake.calls)
        self.assertIn("not supported", self.fails(
            "storage_execute", ["lvm-pv", [], "/dev/sdb", "fix-consistency"]))

    def test_storage_list_bad_field_refused_by_table(self):
        status, _ = self.node.put("storage_list", ["lvm-vg", [], None, ["nope"]])
        self.assertEqual(status, 400)

    def test_missing_lvm_program(self):
        env = dict(os.environ)
        env["PATH"] = "/nonexistent"
        self.patch(os, "environ", env)
        self.assertIn("lvm program is not installed",
                      self.fails("vg_list", []))


class FileStorageUnitsTest(NodeCalls, SynchronousTestCase):
    def test_file_units(self):
        paths = node_paths(self)
        self.node = MemoryNode(paths)
        os.makedirs(paths.root + "/srv/ganeti/file-storage/i")
        with open(paths.root + "/srv/ganeti/file-storage/i/d", "wb") as f:
            f.write(b"x" * (3 * 1024 * 1024))
        rows = self.ok("storage_list", ["file", ["/srv/ganeti/file-storage"], None,
                                        ["name", "used", "allocatable", "size", "free"]])
        self.assertEqual(len(rows), 1)
        name, used, alloc, size, free = rows[0]
        self.assertEqual((name, used, alloc), ("/srv/ganeti/file-storage", 3, True))
        self.assertGreater(size, 0)
        self.assertGreaterEqual(size, free)
        self.assertIn("Unknown file storage unit", self.fails(
            "storage_list", ["file", ["/srv/ganeti/file-storage"], "/etc", ["name"]]))


@pytest.mark.subprocess
class RealLoopVolumeGroupTest(NodeCalls, SynchronousTestCase):
    """A real VG on a loop device: what CI (root, no device-mapper) runs."""

    def setUp(self):
        if os.geteuid() != 0:
            raise SkipTest("needs root: creates a loop device and a volume group")
        if not shutil.which("lvm") or not shutil.which("losetup"):
            raise SkipTest("needs the lvm2 and mount (losetup) packages")
        image = os.path.abspath(self.mktemp())
        with open(image, "wb") as f:
            f.truncate(64 * 1024 * 1024)
        self.loop = subprocess.run(["losetup", "-f", "--show", image], check=True,
                                   capture_output=True, text=True).stdout.strip()
        self.addCleanup(subprocess.run, ["losetup", "-d", self.loop], check=False)
        self.vg = f"gtest{os.getpid()}"
        env = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1")
        subprocess.run(["lvm", "pvcreate", "-ff", "-y", self.loop], check=True,
                       capture_output=True, env=env)
        self.addCleanup(subprocess.run, ["lvm", "pvremove", "-ff", "-y", self.loop],
                        check=False, capture_output=True, env=env)
        subprocess.run(["lvm", "vgcreate", self.vg, self.loop], check=True,
                       capture_output=True, env=env)
        self.addCleanup(subprocess.run, ["lvm", "vgremove", "-f", self.vg], check=False,
                        capture_output=True, env=env)
        self.node = MemoryNode(node_paths(self))

    def test_volume_lifecycle(self):
        disk = lv_disk("t.disk0", vg=self.vg)
        self.assertEqual(self.ok("blockdev_create", [disk, 8, "i", True, "inst", False]),
                         [self.vg, "t.disk0"])
        self.assertEqual(self.ok("lv_list", [self.vg])[f"{self.vg}/t.disk0"][0], "8.00")
        self.ok("blockdev_grow", [disk, 4, False, True, False])
        dims = self.ok("blockdev_getdimensions", [[disk]])
        self.assertEqual(dims, [[12 * 1024 * 1024, 1]])
        path, _, _ = self.ok("blockdev_assemble", [disk, {"name": "i"}, True, 0])
        self.assertEqual(path, f"/dev/{self.vg}/t.disk0")
        self.ok("blockdev_rename", [[[disk, [self.vg, "u.disk0"]]]])
        renamed = lv_disk("u.disk0", vg=self.vg)
        self.assertIsNotNone(self.ok("blockdev_find", [renamed]))
        rows = self.ok("storage_list", ["lvm-vg", [], self.vg, ["name", "used"]])
        self.assertEqual(rows, [[self.vg, 12]])
        self.ok("blockdev_remove", [renamed])
        self.assertIsNone(self.ok("blockdev_find", [renamed]))
        self.assertEqual(self.ok("lv_list", [self.vg]), {})
