"""Block device calls for file disks, adopted devices and file storage directories,
with real files in a temporary node root."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.paths import Paths
from ganeti.noded.bdev import files
from ganeti.noded.bdev import paths as bdevpaths
from ganeti.noded.bdev.base import BlockDeviceError
from tests.noded.helpers import MemoryNode, node_paths

DIR = "/srv/ganeti/file-storage"


def file_disk(path, dev_type="file", size=4):
    return {"dev_type": dev_type, "logical_id": ["loop", path], "size": size,
            "iv_name": "disk/0", "params": {}, "uuid": "d-1"}


class NodeCalls:
    """Calls on ``self.node`` (a MemoryNode) that must succeed or fail on the node."""

    def ok(self, name, args):
        status, body = self.node.put(name, args)
        self.assertEqual((status, body[0]), (200, True), body)
        return body[1]

    def fails(self, name, args):
        status, body = self.node.put(name, args)
        self.assertEqual((status, body[0]), (200, False), body)
        return body[1]


class FileDisksTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "w") as f:
            f.write("# allowed\n/srv/ganeti/file-storage\n\nrelative/ignored\n")
        self.node = MemoryNode(self.paths)
        self.root = self.paths.root

    def local(self, path):
        return self.root + path

    def test_dir_create_remove_rename(self):
        self.ok("file_storage_dir_create", [DIR + "/inst1"])
        self.assertTrue(os.path.isdir(self.local(DIR + "/inst1")))
        self.ok("file_storage_dir_create", [DIR + "/inst1"])  # exists: fine
        self.ok("file_storage_dir_rename", [DIR + "/inst1", DIR + "/inst2"])
        self.assertFalse(os.path.exists(self.local(DIR + "/inst1")))
        self.assertTrue(os.path.isdir(self.local(DIR + "/inst2")))
        self.ok("file_storage_dir_remove", [DIR + "/inst2"])
        self.assertFalse(os.path.exists(self.local(DIR + "/inst2")))

    def test_dir_outside_the_allowed_paths_is_refused(self):
        msg = self.fails("file_storage_dir_create", ["/var/tmp/x"])
        self.assertIn("is not acceptable for file storage", msg)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "a") as f:
            f.write("/etc\n")
        msg = self.fails("file_storage_dir_create", ["/etc/ganeti/x"])
        self.assertIn("forbidden prefix", msg)
        self.assertFalse(os.path.exists(self.local("/var/tmp/x")))

    def test_no_allowed_paths_file_accepts_nothing(self):
        os.unlink(os.path.join(self.paths.conf_dir, "file-storage-paths"))
        msg = self.fails("file_storage_dir_create", [DIR + "/i"])
        self.assertIn("No paths are valid", msg)

    def test_non_empty_dir_is_not_removed(self):
        self.ok("file_storage_dir_create", [DIR + "/i"])
        self.ok("blockdev_create", [file_disk(DIR + "/i/d.file"), 4, "i", True, "x", False])
        msg = self.fails("file_storage_dir_remove", [DIR + "/i"])
        self.assertIn("Cannot remove file storage directory", msg)

    def test_rename_when_both_exist_fails(self):
        self.ok("file_storage_dir_create", [DIR + "/a"])
        self.ok("file_storage_dir_create", [DIR + "/b"])
        self.assertIn("both locations exist",
                      self.fails("file_storage_dir_rename", [DIR + "/a", DIR + "/b"]))

    def test_file_disk_lifecycle(self):
        self.ok("file_storage_dir_create", [DIR + "/i"])
        disk = file_disk(DIR + "/i/d.file")
        lid = self.ok("blockdev_create", [disk, 4, "i", True, "info", False])
        self.assertEqual(lid, ["loop", DIR + "/i/d.file"])
        self.assertEqual(os.path.getsize(self.local(DIR + "/i/d.file")), 4 * 1024 * 1024)
        # creating it again fails: it exists
        self.assertIn("can't create", self.fails(
            "blockdev_create", [disk, 4, "i", True, "info", False]))
        status = self.ok("blockdev_find", [disk])
        self.assertEqual(status["dev_path"], DIR + "/i/d.file")
        self.assertEqual(status["ldisk_status"], 1)
        self.assertFalse(status["is_degraded"])
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]]), [[4 * 1024 * 1024, None]])
        self.ok("blockdev_grow", [disk, 2, True, True, False])  # dry run: unchanged
        self.assertEqual(os.path.getsize(self.local(DIR + "/i/d.file")), 4 * 1024 * 1024)
        self.ok("blockdev_grow", [disk, 2, False, True, False])
        self.assertEqual(os.path.getsize(self.local(DIR + "/i/d.file")), 6 * 1024 * 1024)
        path, link, uri = self.ok("blockdev_assemble",
                                  [disk, {"name": "i.example.com"}, True, 0])
        self.assertEqual(path, DIR + "/i/d.file")
        self.assertEqual(link, "/var/run/ganeti/instance-disks/i.example.com:0")
        self.assertEqual(os.readlink(self.local(link)), self.local(DIR + "/i/d.file"))
        self.assertEqual(self.ok("blockdev_assemble", [disk, {"name": "i.example.com"},
                                                       False, 0]), [True, True])
        self.ok("blockdev_shutdown", [disk])
        new = ["loop", DIR + "/i/e.file"]
        self.ok("blockdev_rename", [[[disk, new]]])
        self.assertTrue(os.path.isfile(self.local(DIR + "/i/e.file")))
        moved = file_disk(DIR + "/i/e.file")
        self.ok("blockdev_remove", [moved])
        self.assertFalse(os.path.exists(self.local(DIR + "/i/e.file")))
        self.ok("blockdev_remove", [moved])  # gone already: fine
        self.assertIsNone(self.ok("blockdev_find", [moved]))
        self.assertEqual(self.ok("blockdev_getdimensions", [[moved]]), [None])

    def test_file_disk_outside_allowed_paths_is_refused(self):
        disk = file_disk("/tmp/evil.file")
        msg = self.fails("blockdev_create", [disk, 1, "i", True, "", False])
        self.assertIn("is not acceptable for file storage", msg)
        self.assertFalse(os.path.exists(self.local("/tmp/evil.file")))
        dotdot = file_disk(DIR + "/../../../etc/passwd")
        self.assertFalse(self.node.put("blockdev_remove", [dotdot])[1][0])

    def test_sharedfile_same_as_file(self):
        self.ok("file_storage_dir_create", [DIR + "/s"])
        disk = file_disk(DIR + "/s/x", dev_type="sharedfile")
        self.ok("blockdev_create", [disk, 1, "s", True, "", False])
        self.assertTrue(os.path.isfile(self.local(DIR + "/s/x")))

    def test_ext_is_refused_by_name(self):
        ext = {"dev_type": "ext", "logical_id": ["prov", "x"], "size": 1, "params": {}}
        self.assertIn("Disk template 'ext' is not supported",
                      self.fails("blockdev_create", [ext, 1, "i", True, "", False]))

    def test_diskless_does_nothing(self):
        disk = {"dev_type": "diskless", "size": 0, "params": {}}
        self.assertIsNone(self.ok("blockdev_create", [disk, 0, "i", True, "", False]))

    def test_exclusive_storage_refused_for_files(self):
        disk = file_disk(DIR + "/d")
        self.assertIn("exclusive storage",
                      self.fails("blockdev_create", [disk, 1, "i", True, "", True]))

    def test_bad_shapes_are_refused_by_the_table(self):
        status, _ = self.node.put("blockdev_create", [{"logical_id": 3}, 1, "i", True, "",
                                                      False])
        self.assertEqual(status, 400)
        status, _ = self.node.put("file_storage_dir_create", ["relative/path"])
        self.assertEqual(status, 400)

    def test_assemble_refuses_bad_instance_names(self):
        self.ok("file_storage_dir_create", [DIR + "/i"])
        disk = file_disk(DIR + "/i/d")
        self.ok("blockdev_create", [disk, 1, "i", True, "", False])
        self.assertIn("Invalid instance name",
                      self.fails("blockdev_assemble", [disk, {"name": "../x"}, True, 0]))


class AdoptedDevicesTest(SynchronousTestCase):
    def setUp(self):
        self.node = MemoryNode(node_paths(self))

    def test_outside_dev_is_refused(self):
        disk = {"dev_type": "blockdev", "logical_id": ["manual", "/tmp/x"], "params": {}}
        _, body = self.node.put("blockdev_create", [disk, 1, "i", True, "", False])
        self.assertFalse(body[0])
        self.assertIn("lies outside /dev", body[1])

    def test_missing_device(self):
        disk = {"dev_type": "blockdev", "logical_id": ["manual", "/dev/disk/by-id/nope"],
                "params": {}}
        _, body = self.node.put("blockdev_find", [disk])
        self.assertEqual(body, [True, None])
        _, body = self.node.put("blockdev_create", [disk, 1, "i", True, "", False])
        self.assertFalse(body[0])
        self.assertIn("Can't find a block device", body[1])

    def test_bdev_sizes_skips_what_is_not_a_device(self):
        _, body = self.node.put("bdev_sizes", [["/etc/passwd", "/dev/null", "/dev/nope"]])
        self.assertEqual(body, [True, {}])

    def test_remove_leaves_adopted_device(self):
        disk = {"dev_type": "blockdev", "logical_id": ["manual", "/dev/null"], "params": {}}
        _, body = self.node.put("blockdev_remove", [disk])
        self.assertEqual(body, [True, None])
        self.assertTrue(os.path.exists("/dev/null"))


class AcceptableTest(SynchronousTestCase):
    """Ganeti's rules for file storage paths (``CheckFileStoragePathAcceptance``)."""

    def test_real_node(self):
        allowed = ["/srv/ganeti/file-storage"]
        self.assertEqual(files.acceptable("/srv/ganeti/file-storage/i/d", allowed),
                         "/srv/ganeti/file-storage/i/d")
        self.assertEqual(files.acceptable("/srv/ganeti/file-storage", allowed,
                                          exact_match_ok=True), "/srv/ganeti/file-storage")
        for bad, why in (("/srv/ganeti/file-storage", "not acceptable"),
                         ("/srv/ganeti/file-storage2/x", "not acceptable"),
                         ("/srv/ganeti/file-storage/../x", "not acceptable"),
                         ("relative/x", "must be absolute"),
                         ("/etc/x", "forbidden prefix"), ("/usr/lib/x", "forbidden prefix"),
                         ("/home", "forbidden prefix")):
            err = self.assertRaises(BlockDeviceError, files.acceptable, bad, allowed)
            self.assertIn(why, str(err))
        err = self.assertRaises(BlockDeviceError, files.acceptable, "/etc/f/x", ["/etc/f"])
        self.assertIn("forbidden prefix", str(err))

    def test_virtual_node(self):
        root = "/home/u/vc/node2"
        # a directory below another node's root (a virtual cluster's config): allowed
        other = "/home/u/vc/node1/srv/ganeti/file-storage"
        self.assertEqual(files.acceptable(other + "/d", [other], root), other + "/d")
        for bad in (root + "/etc/x", "/home/u/vc/node1/etc/x", "/etc/x"):
            err = self.assertRaises(BlockDeviceError, files.acceptable, bad,
                                    [root + "/etc", "/home/u/vc/node1/etc", "/etc"], root)
            self.assertIn("forbidden prefix", str(err))

    def test_local_paths_of_a_virtual_node(self):
        paths = Paths.for_node("/home/u/vc/node2.test", "node2.test")
        for wire in ("/srv/f/i/d", "/home/u/vc/node2.test/srv/f/i/d",
                     "/home/u/vc/node1.test/srv/f/i/d"):
            self.assertEqual(files.local(paths, wire), "/home/u/vc/node2.test/srv/f/i/d")
        self.assertEqual(files.local(Paths(root="", hostname="n"), "/srv/f"), "/srv/f")


class DevicePathTest(SynchronousTestCase):
    def test_paths(self):
        self.assertEqual(bdevpaths.device_path(
            {"dev_type": "file", "logical_id": ["loop", "/srv/f/x"]}), "/srv/f/x")
        self.assertEqual(bdevpaths.device_path(
            {"dev_type": "sharedfile", "logical_id": ["loop", "/srv/s/x"]}), "/srv/s/x")
        self.assertEqual(bdevpaths.device_path(
            {"dev_type": "plain", "logical_id": ["xenvg", "abc.disk0"]}), "/dev/xenvg/abc.disk0")
        self.assertEqual(bdevpaths.device_path(
            {"dev_type": "blockdev", "logical_id": ["manual", "/dev/sdb"]}), "/dev/sdb")

    def test_refused(self):
        for disk in ({"dev_type": "drbd", "logical_id": ["a", "b"]},
                     {"dev_type": "diskless"},
                     {"dev_type": "plain", "logical_id": ["../x", "y"]},
                     {"dev_type": "file", "logical_id": ["loop", "rel"]},
                     {"dev_type": "file", "logical_id": ["loop"]}):
            self.assertRaises(ValueError, bdevpaths.device_path, disk)


class LocalDevicePathTest(SynchronousTestCase):
    def test_file_paths_on_a_virtual_node(self):
        paths = Paths.for_node("/v/vc/node2.test", "node2.test")
        disk = {"dev_type": "file", "logical_id": ["loop", "/v/vc/node1.test/srv/f/i/d"]}
        self.assertEqual(bdevpaths.device_path(disk, paths), "/v/vc/node2.test/srv/f/i/d")
        self.assertEqual(bdevpaths.device_path(disk), "/v/vc/node1.test/srv/f/i/d")
        lv = {"dev_type": "plain", "logical_id": ["xenvg", "a"]}
        self.assertEqual(bdevpaths.device_path(lv, paths), "/dev/xenvg/a")
