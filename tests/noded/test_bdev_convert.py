"""``blockdev_convert`` on the node: the data of one disk copied into another with
``dd`` (real files in a temporary node root; volumes through the fake ``lvm``)."""

import os

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.bdev import convert, lvm
from tests.fakes.fakelvm import FakeLvm
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_bdev_files import NodeCalls, file_disk

DIR = "/srv/ganeti/file-storage"
SHARED = "/srv/ganeti/shared-file-storage"
MIB = 1024 * 1024


@pytest.mark.subprocess
class ConvertTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "w") as f:
            f.write(f"{DIR}\n{SHARED}\n")
        self.node = MemoryNode(self.paths)
        self.root = self.paths.root
        self.src = file_disk(DIR + "/i/a.file.disk0", size=4)
        self.dest = dict(file_disk(SHARED + "/i/b.sharedfile.disk0", "sharedfile", 4),
                         uuid="d-2")
        for d in (DIR + "/i", SHARED + "/i"):
            self.ok("file_storage_dir_create", [d])
        self.ok("blockdev_create", [self.src, 4, "i", True, "", False])
        self.ok("blockdev_create", [self.dest, 4, "i", True, "", False])

    def write(self, path, offset, data):
        with open(self.root + path, "r+b") as f:
            f.seek(offset)
            f.write(data)

    def read(self, path):
        with open(self.root + path, "rb") as f:
            return f.read()

    def test_copies_the_data_and_keeps_the_target_sparse(self):
        self.write(self.src["logical_id"][1], 0, b"head" * 100)
        self.write(self.src["logical_id"][1], 3 * MIB + 5, b"tail")
        self.assertIsNone(self.ok("blockdev_convert", [self.src, self.dest]))
        src, dest = self.read(self.src["logical_id"][1]), self.read(self.dest["logical_id"][1])
        self.assertEqual(len(dest), 4 * MIB)
        self.assertEqual(dest, src)
        st = os.stat(self.root + self.dest["logical_id"][1])
        self.assertLess(st.st_blocks * 512, 4 * MIB)  # zero blocks were skipped

    def test_missing_source_or_target(self):
        os.unlink(self.root + self.src["logical_id"][1])
        self.assertIn("Cannot copy from device 'd-1': device not found",
                      self.fails("blockdev_convert", [self.src, self.dest]))
        self.assertIn("Cannot copy to device 'd-1': device not found",
                      self.fails("blockdev_convert", [self.dest, self.src]))

    def test_adopted_target_and_diskless_are_refused(self):
        block = {"dev_type": "blockdev", "logical_id": ["manual", "/dev/disk/x"], "size": 4,
                 "params": {}, "iv_name": "disk/0"}
        self.assertIn("Importing data is not supported",
                      self.fails("blockdev_convert", [self.src, block]))
        diskless = dict(self.dest, dev_type="diskless")
        self.assertIn("hold no data", self.fails("blockdev_convert", [self.src, diskless]))
        rbd = dict(self.dest, dev_type="rbd")
        self.assertIn("not supported on this node",
                      self.fails("blockdev_convert", [self.src, rbd]))

    def test_a_failing_copy_is_reported(self):
        self.patch(convert, "dd_program", lambda: "/bin/false")
        msg = self.fails("blockdev_convert", [self.src, self.dest])
        self.assertIn("Disk conversion command '/bin/false if=", msg)
        self.assertIn("exited with error: exited with exit code 1", msg)

    def test_volume_target_is_its_assembled_path(self):
        FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        lv = {"dev_type": "plain", "logical_id": ["xenvg", "c.disk0"], "size": 4,
              "params": {"stripes": 1}, "iv_name": "disk/0", "uuid": "d-3"}
        self.ok("blockdev_create", [lv, 4, "i", True, "", False])
        # without device-mapper /dev/xenvg/c.disk0 does not exist: dd says so
        msg = self.fails("blockdev_convert", [self.src, lv])
        self.assertIn("of=/dev/xenvg/c.disk0", msg)
        self.assertIn("conv=notrunc,fsync", msg)
        # where the volume's device exists, the data lands there
        target = os.path.join(self.root, "lvdev")
        with open(target, "wb") as f:
            f.truncate(4 * MIB)
        real = convert.device_path

        async def device_path(ctx, disk):
            return target if disk["dev_type"] == "plain" else await real(ctx, disk)
        self.patch(convert, "device_path", device_path)
        self.write(self.src["logical_id"][1], 7, b"data")
        self.ok("blockdev_convert", [self.src, lv])
        with open(target, "rb") as f:
            self.assertEqual(self.read(self.src["logical_id"][1]), f.read())
