"""One contract over every leaf device type: file (real files below a node root), plain
(the fake ``lvm`` program, no device-mapper) and blockdev (a fake block device layer:
the stat and size of the adopted device).  Each type runs the same assertions, through
the node's RPC handlers and on the device objects themselves."""

import os
import stat
from dataclasses import replace
from types import SimpleNamespace

import pytest
from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import storagetypes
from ganeti.noded.backend.registry import handlers
from ganeti.noded.bdev import blockdev, devices, lvm
from ganeti.noded.bdev import paths as bdevpaths
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice, SyncStatus
from ganeti.noded.server import make_site
from tests.fakes.fakelvm import FakeLvm
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_bdev_files import NodeCalls

MIB = 1024 * 1024
DIR = "/srv/ganeti/file-storage"
INSTANCE = {"name": "inst1.example.com"}


def run(coro):
    """The result of a coroutine that completes at once (inline runner, no reactor)."""
    d = Deferred.fromCoroutine(coro)
    results = []
    d.addBoth(results.append)
    assert results, "the coroutine waited"
    if hasattr(results[0], "raiseException"):
        results[0].raiseException()
    return results[0]


class FakeBlockDevices:
    """Adopted block devices that exist only for the test: ``blockdev``'s stat and size
    answer from a table of {path: size in bytes}."""

    def __init__(self, testcase):
        self.sizes = {}
        testcase.patch(blockdev, "_stat", self._stat)
        testcase.patch(blockdev, "size_bytes", self.sizes.__getitem__)

    def _stat(self, path):
        if path not in self.sizes:
            return None
        return SimpleNamespace(st_mode=stat.S_IFBLK | 0o600, st_rdev=os.makedev(8, 16))


class DeviceContract(NodeCalls):
    """The assertions; a subclass sets up the node in ``setUp`` and says how its disks
    look (``disk``), whether ``blockdev_create`` makes them (``creates``), whether they
    grow and rename, and where a disk's device lives on the node (``exists``)."""

    creates = True
    grows = True
    renames = True
    #: the data size that ``blockdev_getdimensions`` answers for a new 4 MiB disk
    spindles = None

    def disk(self, name):
        raise NotImplementedError

    def exists(self, disk):
        raise NotImplementedError

    def provide(self, disk, size=4):
        """Make the device of ``disk`` (what a type that does not create needs)."""

    def new_disk(self, name="d0"):
        disk = self.disk(name)
        self.provide(disk)
        lid = self.ok("blockdev_create", [disk, 4, "inst1", True, "originstname+inst1", False])
        self.assertEqual(lid, disk["logical_id"])
        return disk

    def test_create_makes_the_device(self):
        disk = self.disk("d0")
        self.assertFalse(self.exists(disk))
        if not self.creates:
            self.assertTrue(self.fails("blockdev_create",
                                       [disk, 4, "inst1", True, "", False]))
            self.assertFalse(self.exists(disk))
        self.new_disk()
        self.assertTrue(self.exists(disk))

    def test_find_answers_the_status(self):
        disk = self.disk("d0")
        self.assertIsNone(self.ok("blockdev_find", [disk]))
        self.new_disk()
        st = self.ok("blockdev_find", [disk])
        self.assertEqual(set(st), {"dev_path", "major", "minor", "sync_percent",
                                   "estimated_time", "is_degraded", "ldisk_status"})
        self.assertEqual(st["dev_path"], self.wire_path(disk))
        self.assertIsNone(st["sync_percent"])
        self.assertIsNone(st["estimated_time"])
        self.assertFalse(st["is_degraded"])
        self.assertEqual(st["ldisk_status"], storagetypes.LDS_OKAY)

    def test_dimensions(self):
        disk = self.disk("d0")
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]]), [None])
        self.new_disk()
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]]),
                         [[4 * MIB, self.spindles]])

    def test_assemble_links_the_device_on_the_primary(self):
        disk = self.disk("d0")
        self.assertIn("Error while assembling disk",
                      self.fails("blockdev_assemble", [disk, INSTANCE, True, 0]))
        self.new_disk()
        path, link, uri = self.ok("blockdev_assemble", [disk, INSTANCE, True, 0])
        self.assertEqual(path, self.wire_path(disk))
        self.assertEqual(link, "/var/run/ganeti/instance-disks/inst1.example.com:0")
        self.assertIsNone(uri)
        self.assertEqual(os.readlink(self.paths.root + link),
                         devices.local_path(self.node.ctx, disk["dev_type"], path))
        self.assertEqual(self.ok("blockdev_assemble", [disk, INSTANCE, False, 0]),
                         [True, True])

    def test_shutdown_keeps_the_device(self):
        disk = self.new_disk()
        self.ok("blockdev_shutdown", [disk])
        self.assertTrue(self.exists(disk))
        self.assertIsNotNone(self.ok("blockdev_find", [disk]))

    def test_grow(self):
        disk = self.new_disk()
        if not self.grows:
            self.assertIn("Grow is not supported",
                          self.fails("blockdev_grow", [disk, 2, False, True, False]))
            return
        self.ok("blockdev_grow", [disk, 2, True, True, False])  # dry run
        self.ok("blockdev_grow", [disk, 2, False, False, False])  # not the backing store
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]])[0][0], 4 * MIB)
        self.ok("blockdev_grow", [disk, 2, False, True, False])
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]])[0][0], 6 * MIB)

    def test_grow_of_a_missing_device_fails(self):
        self.assertIn("Cannot find block device",
                      self.fails("blockdev_grow", [self.disk("nope"), 2, False, True, False]))

    def test_rename(self):
        disk = self.new_disk()
        new = self.disk("d1")
        if not self.renames:
            self.assertIn("Rename is not supported",
                          self.fails("blockdev_rename", [[[disk, new["logical_id"]]]]))
            return
        self.ok("blockdev_rename", [[[disk, new["logical_id"]]]])
        self.assertFalse(self.exists(disk))
        self.assertTrue(self.exists(new))
        self.assertIn("Can't find device",
                      self.fails("blockdev_rename", [[[disk, new["logical_id"]]]]))

    def test_remove(self):
        disk = self.new_disk()
        self.ok("blockdev_remove", [disk])
        self.ok("blockdev_remove", [disk])  # gone (or never ours): no error
        if self.creates:
            self.assertFalse(self.exists(disk))
            self.assertIsNone(self.ok("blockdev_find", [disk]))
        else:  # an adopted device stays the administrator's
            self.assertTrue(self.exists(disk))

    def test_the_device_object(self):
        ctx = self.node.ctx
        disk = self.disk("d0")
        dev = devices.build(ctx, disk)
        self.assertIsInstance(dev, BlockDevice)
        self.assertFalse(run(dev.attach()))
        self.assertIsNone(run(devices.find_device(ctx, disk)))
        self.new_disk()
        dev = run(devices.find_device(ctx, disk))
        self.assertTrue(dev.attached)
        self.assertEqual(dev.dev_path, self.wire_path(disk))
        self.assertEqual(dev.children, [])
        status = run(dev.sync_status())
        self.assertIsInstance(status, SyncStatus)
        self.assertEqual(run(dev.combined_sync_status()), status)
        self.assertEqual(run(dev.dimensions()), [4 * MIB, self.spindles])
        self.assertEqual(dev.unique_id, disk["logical_id"])
        self.assertEqual(bdevpaths.device_path(disk), self.wire_path(disk))
        self.assertEqual(bdevpaths.device_path(disk, self.paths), dev.local_path())
        assembled = run(devices.assemble_device(ctx, disk))
        self.assertEqual(assembled.dev_path, self.wire_path(disk))
        run(dev.open())
        run(dev.close())
        run(dev.shutdown())

    def test_a_leaf_refuses_children(self):
        disk = dict(self.disk("d0"), children=[self.disk("c")])
        self.assertRaises(BlockDeviceError, devices.build, self.node.ctx, disk)


class FileContractTest(DeviceContract, SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "w") as f:
            f.write(DIR + "\n")
        self.node = MemoryNode(self.paths)
        self.ok("file_storage_dir_create", [DIR + "/inst1"])

    def disk(self, name):
        return {"dev_type": "file", "logical_id": ["loop", f"{DIR}/inst1/{name}"],
                "size": 4, "params": {}, "iv_name": "disk/0"}

    def wire_path(self, disk):
        return disk["logical_id"][1]

    def exists(self, disk):
        return os.path.isfile(self.paths.root + disk["logical_id"][1])


@pytest.mark.subprocess
class PlainContractTest(DeviceContract, SynchronousTestCase):
    spindles = 1

    def setUp(self):
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def disk(self, name):
        return {"dev_type": "plain", "logical_id": ["xenvg", name], "size": 4,
                "params": {"stripes": 1}, "iv_name": "disk/0"}

    def wire_path(self, disk):
        return "/dev/{}/{}".format(*disk["logical_id"])

    def exists(self, disk):
        return "/".join(disk["logical_id"]) in self.fake.state["lvs"]


class AdoptedContractTest(DeviceContract, SynchronousTestCase):
    creates = False
    grows = False
    renames = False

    def setUp(self):
        self.blocks = FakeBlockDevices(self)
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)

    def disk(self, name):
        return {"dev_type": "blockdev", "logical_id": ["manual", f"/dev/disk/by-id/{name}"],
                "size": 4, "params": {}, "iv_name": "disk/0"}

    def provide(self, disk, size=4):
        self.blocks.sizes[disk["logical_id"][1]] = size * MIB

    def wire_path(self, disk):
        return disk["logical_id"][1]

    def exists(self, disk):
        return disk["logical_id"][1] in self.blocks.sizes

    def test_the_device_numbers(self):
        disk = self.new_disk()
        st = self.ok("blockdev_find", [disk])
        self.assertEqual((st["major"], st["minor"]), (8, 16))


class FakeKvm:
    """Records what ``blockdev_grow`` tells the running guests (``disk_grown``)."""

    def __init__(self):
        self.grown = []

    async def disk_grown(self, path, size):
        self.grown.append((path, size))
        return []


class GrowTellsRunningGuestsTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        with open(os.path.join(self.paths.conf_dir, "file-storage-paths"), "w") as f:
            f.write(DIR + "\n")
        self.kvm = FakeKvm()
        self.node = MemoryNode(self.paths)
        self.node.ctx = replace(self.node.ctx, kvm=self.kvm)
        self.node.site = make_site(self.node.ctx, handlers())

    def test_the_grown_file_is_named_by_its_path_on_the_node(self):
        self.ok("file_storage_dir_create", [DIR + "/inst1"])
        disk = FileContractTest.disk(self, "d0")
        self.ok("blockdev_create", [disk, 4, "inst1", True, "", False])
        self.ok("blockdev_grow", [disk, 2, True, True, False])
        self.assertEqual(self.kvm.grown, [])  # a dry run tells nobody
        self.ok("blockdev_grow", [disk, 2, False, True, False])
        self.assertEqual(self.kvm.grown, [(self.paths.root + DIR + "/inst1/d0", 6 * MIB)])


class NoClassChecksTest(SynchronousTestCase):
    """The table decides what a device does: no ``isinstance`` on a device class
    outside ganeti/noded/bdev/ (the hypervisor table's check, over device classes)."""

    def test_no_class_checks_on_devices_outside_their_package(self) -> None:
        from tests.noded.test_hypervisor_table import ROOT, class_checks, class_checks_outside
        classes = {BlockDevice.__name__}
        for cls in devices.DEVICE_CLASSES.values():
            classes.update(k.__name__ for k in cls.__mro__ if issubclass(k, BlockDevice))
        self.assertIn("LogicalVolume", classes)
        self.assertEqual(class_checks("ok = isinstance(d, lvm.LogicalVolume)\n", classes), [1])
        found = class_checks_outside(os.path.join(ROOT, "ganeti", "noded", "bdev"), classes)
        self.assertEqual(found, [])
