"""A device built on child devices: a test-only mirror (registered in the device table
as ``drbd``, the template the next issues bring) on two logical volumes (data and
metadata, the fake ``lvm`` program), driven through the node's RPC handlers.  Every
device records what is done to it, so the order of the walks is checked: children
before the parent for create and assemble, the parent before its children for
remove and shutdown (Ganeti's node daemon)."""

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, storagetypes
from ganeti.noded.bdev import devices, lvm
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import BlockDevice, SyncStatus
from ganeti.noded.bdev.lvm import LogicalVolume
from tests.fakes.fakelvm import FakeLvm
from tests.noded.helpers import MemoryNode, node_paths
from tests.noded.test_bdev_contract import run
from tests.noded.test_bdev_files import NodeCalls

INSTANCE = {"name": "inst1.example.com"}


def _name(dev):
    """"mirror", or a volume's name without its prefix ("data", "meta")."""
    if isinstance(dev, Mirror):
        return "mirror"
    return str(dev.logical_id[1]).rsplit(".", 1)[-1]


class Recorded:
    """Records create, assemble, open, shutdown, remove and grow in ``journal``."""

    journal: list = []

    @classmethod
    async def create(cls, ctx, disk, children, size, info):
        dev = await super().create(ctx, disk, children, size, info)
        cls.journal.append(("create", _name(dev)))
        return dev

    async def assemble(self):
        self.journal.append(("assemble", _name(self)))
        await super().assemble()

    async def open(self, force=False):
        self.journal.append(("open", _name(self)))
        await super().open(force)

    async def shutdown(self):
        self.journal.append(("shutdown", _name(self)))
        await super().shutdown()

    async def remove(self):
        self.journal.append(("remove", _name(self)))
        await super().remove()

    async def grow(self, amount, dryrun, backingstore):
        self.journal.append(("grow", _name(self)))
        await super().grow(amount, dryrun, backingstore)


class RecordedVolume(Recorded, LogicalVolume):
    """A logical volume that records what is done to it."""


class Mirror(BlockDevice):
    """A test-only mirrored device on its children [data, metadata] with a peer (named
    in its logical id); its state lives in ``devices`` ({logical id: state})."""

    has_children = True
    assemble_on_secondary = True
    children_needed = 0
    devices: dict = {}
    fail_remove = False

    @property
    def key(self):
        return "/".join(str(x) for x in self.logical_id)

    @classmethod
    async def create(cls, ctx, disk, children, size, info):
        if len(children) != 2 or None in children:
            raise BlockDeviceError("Invalid setup for the mirror")
        dev = cls(ctx, disk, children)
        dev.devices[dev.key] = "created"
        return dev

    async def attach(self):
        self.attached = self.key in self.devices
        self.dev_path = "/dev/mirror0" if self.attached else None
        return self.attached

    async def assemble(self):
        if self.key not in self.devices:
            raise BlockDeviceError("mirror0: not created")
        self.devices[self.key] = "up"
        self.dev_path, self.attached = "/dev/mirror0", True

    async def shutdown(self):
        if self.key in self.devices:
            self.devices[self.key] = "created"

    async def remove(self):
        if self.fail_remove:
            raise BlockDeviceError("mirror0: can't remove")
        self.devices.pop(self.key, None)

    async def grow(self, amount, dryrun, backingstore):
        await self.children[0].grow(amount, dryrun, backingstore)

    async def sync_status(self):
        local = self.children[0] is not None and self.children[1] is not None
        return SyncStatus(self.dev_path, 147, 0, sync_percent=None if local else 0.0,
                          is_degraded=not local,
                          ldisk_status=storagetypes.LDS_OKAY if local
                          else storagetypes.LDS_FAULTY)

    async def dimensions(self):
        return await self.children[0].dimensions()


class RecordedMirror(Recorded, Mirror):
    """The mirror, recorded."""


def lv(name, size=4):
    return {"dev_type": "plain", "logical_id": ["xenvg", f"m.{name}"], "size": size,
            "params": {"stripes": 1}, "iv_name": "disk/0"}


def mirror():
    return {"dev_type": constants.DT_DRBD8,
            "logical_id": ["node1", "node2", 11000, 0, 0, "secret"], "size": 4,
            "params": {}, "iv_name": "disk/0", "children": [lv("data"), lv("meta", 1)]}


@pytest.mark.subprocess
class ChildrenTest(NodeCalls, SynchronousTestCase):
    def setUp(self):
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.patch(devices, "DEVICE_CLASSES", {**devices.DEVICE_CLASSES,
                                               constants.DT_PLAIN: RecordedVolume,
                                               constants.DT_DRBD8: RecordedMirror})
        self.patch(Recorded, "journal", [])
        self.patch(Mirror, "devices", {})
        self.node = MemoryNode(node_paths(self))

    @property
    def journal(self):
        return Recorded.journal

    def create_all(self, on_primary=True):
        """What the master does: the children first (one call each), then the mirror."""
        disk = mirror()
        for child in disk["children"]:
            self.ok("blockdev_create", [child, child["size"], "inst1", on_primary, "", False])
        del self.journal[:]
        self.ok("blockdev_create", [disk, 4, "inst1", on_primary, "", False])
        return disk

    def volumes(self):
        return sorted(self.fake.state["lvs"])

    def test_create_builds_on_its_assembled_children(self):
        self.create_all()
        self.assertEqual(self.journal, [
            ("assemble", "data"), ("open", "data"), ("assemble", "meta"), ("open", "meta"),
            ("create", "mirror"), ("assemble", "mirror"), ("open", "mirror")])

    def test_create_on_the_secondary_assembles_but_does_not_open_the_mirror(self):
        self.create_all(on_primary=False)
        self.assertEqual(self.journal[-3:], [
            ("open", "meta"), ("create", "mirror"), ("assemble", "mirror")])

    def test_create_fails_when_a_child_is_missing(self):
        disk = mirror()
        child = disk["children"][0]
        self.ok("blockdev_create", [child, 4, "inst1", True, "", False])
        msg = self.fails("blockdev_create", [disk, 4, "inst1", True, "", False])
        self.assertIn("Can't assemble device", msg)
        self.assertIn("Can't find logical volume xenvg/m.meta", msg)
        self.assertEqual(Mirror.devices, {})

    def test_assemble_assembles_the_children_first(self):
        disk = self.create_all()
        del self.journal[:]
        path, link, _ = self.ok("blockdev_assemble", [disk, INSTANCE, True, 0])
        self.assertEqual(path, "/dev/mirror0")
        self.assertEqual(self.journal, [
            ("assemble", "data"), ("open", "data"), ("assemble", "meta"), ("open", "meta"),
            ("assemble", "mirror"), ("open", "mirror")])
        del self.journal[:]
        self.assertEqual(self.ok("blockdev_assemble", [disk, INSTANCE, False, 0]),
                         [True, True])
        self.assertEqual(self.journal, [
            ("assemble", "data"), ("open", "data"), ("assemble", "meta"), ("open", "meta"),
            ("assemble", "mirror")])

    def test_a_mirror_assembles_without_a_local_disk(self):
        disk = self.create_all()
        self.ok("blockdev_remove", [disk["children"][1]])
        self.ok("blockdev_assemble", [disk, INSTANCE, True, 0])
        status = self.ok("blockdev_find", [disk])
        self.assertTrue(status["is_degraded"])
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_FAULTY)

    def test_a_device_that_needs_all_children_fails_without_one(self):
        self.patch(Mirror, "children_needed", -1)
        disk = self.create_all()
        self.ok("blockdev_remove", [disk["children"][1]])
        del self.journal[:]
        msg = self.fails("blockdev_assemble", [disk, INSTANCE, True, 0])
        self.assertIn("Can't find logical volume xenvg/m.meta", msg)
        self.assertEqual(self.journal, [("assemble", "data"), ("open", "data"),
                                        ("assemble", "meta")])

    def test_remove_removes_the_parent_then_its_children(self):
        disk = self.create_all()
        self.assertEqual(self.volumes(), ["xenvg/m.data", "xenvg/m.meta"])
        del self.journal[:]
        self.ok("blockdev_remove", [disk])
        self.assertEqual(self.journal, [("remove", "mirror"), ("remove", "data"),
                                        ("remove", "meta")])
        self.assertEqual(self.volumes(), [])
        self.assertEqual(Mirror.devices, {})

    def test_remove_tries_every_device_and_reports_the_failures(self):
        disk = self.create_all()
        self.patch(Mirror, "fail_remove", True)
        self.fake.fail("lvremove", "  Logical volume in use")
        msg = self.fails("blockdev_remove", [disk])
        self.assertEqual(msg.count("; "), 2)
        self.assertIn("mirror0: can't remove", msg)
        self.assertIn("Logical volume in use", msg)
        self.assertEqual(self.journal[-3:], [("remove", "mirror"), ("remove", "data"),
                                             ("remove", "meta")])

    def test_shutdown_shuts_the_parent_down_then_its_children(self):
        disk = self.create_all()
        self.ok("blockdev_assemble", [disk, INSTANCE, True, 0])
        del self.journal[:]
        self.ok("blockdev_shutdown", [disk])
        self.assertEqual(self.journal, [("shutdown", "mirror"), ("shutdown", "data"),
                                        ("shutdown", "meta")])
        self.assertEqual(list(Mirror.devices.values()), ["created"])
        self.assertEqual(self.volumes(), ["xenvg/m.data", "xenvg/m.meta"])

    def test_grow_and_dimensions_go_through_the_data_child(self):
        disk = self.create_all()
        del self.journal[:]
        self.ok("blockdev_grow", [disk, 2, False, True, False])
        self.assertEqual(self.journal, [("grow", "mirror"), ("grow", "data")])
        self.assertEqual(self.ok("blockdev_getdimensions", [[disk]]),
                         [[6 * 1024 * 1024, 1]])

    def test_find_attaches_the_children_and_merges_their_status(self):
        disk = self.create_all()
        self.ok("blockdev_remove", [disk["children"][1]])
        dev = run(devices.find_device(self.node.ctx, disk))
        self.assertEqual([_name(c) if c else None for c in dev.children], ["data", None])
        own = run(dev.sync_status())
        combined = run(dev.combined_sync_status())
        self.assertEqual((combined.dev_path, combined.major), ("/dev/mirror0", 147))
        self.assertEqual(combined.sync_percent, own.sync_percent)
        self.assertTrue(combined.is_degraded)
        self.assertEqual(combined.ldisk_status, storagetypes.LDS_FAULTY)


class SyncStatusTest(SynchronousTestCase):
    def test_combined_takes_the_worst_of_each(self):
        own = SyncStatus("/dev/m", 147, 0, sync_percent=80.0, estimated_time=10)
        children = [SyncStatus("/dev/a", sync_percent=40.0, estimated_time=5),
                    SyncStatus("/dev/b", estimated_time=30, is_degraded=True,
                               ldisk_status=storagetypes.LDS_UNKNOWN),
                    SyncStatus.of("/dev/c")]
        self.assertEqual(own.combined(children),
                         SyncStatus("/dev/m", 147, 0, 40.0, 30, True,
                                    storagetypes.LDS_UNKNOWN))
        self.assertEqual(SyncStatus("/dev/m").combined([]), SyncStatus("/dev/m"))
        self.assertEqual(SyncStatus.of("/dev/x", degraded=True).ldisk_status,
                         storagetypes.LDS_FAULTY)
