"""Master-side disk helpers (ganeti/master/lu/instance_storage.py) against in-process
node daemons (tests/fakes/nodes.py): real files under each node's root, plain
volumes through the fake ``lvm`` program."""

import os
from types import SimpleNamespace

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core.errors import OpExecError, OpPrereqError, ReservationError
from ganeti.core.objects import Instance
from ganeti.master.config.reservations import ReservationManager
from ganeti.master.lu import instance_storage as st
from ganeti.noded.backend.context import RPCFail
from ganeti.noded.bdev import lvm
from tests.fakes.configs import small_config
from tests.fakes.fakelvm import FakeLvm
from tests.fakes.nodes import FakeNodeNet

FS = "/srv/ganeti/file-storage"


class FakeLU:
    """What the helpers use of a logical unit."""

    def __init__(self, cfg, net, owner="job-1", instance_name=None):
        self.messages = []
        self.ctx = SimpleNamespace(
            rpc=lambda: net, reservations=ReservationManager(), owner=owner, clock=Clock(),
            feedback=lambda kind, text: self.messages.append(text),
            config=SimpleNamespace(config=cfg))
        self.name = instance_name  # a new instance's name (create's)
        self.writes = 0

    async def update_config(self, change):
        self.writes += 1
        return change(self.ctx.config.config)


class _Base(TestCase):
    def setUp(self):
        self.cfg = small_config()
        self.cfg.cluster.enabled_disk_templates = ["diskless", "file", "sharedfile", "plain",
                                                   "blockdev", "drbd"]
        self.cfg.cluster.volume_group_name = "xenvg"
        self.node = next(iter(self.cfg.nodes.values()))
        self.net = FakeNodeNet(self.mktemp(), Clock())
        self.net.config = lambda: self.cfg
        self.paths = self.net.add(self.node.name, self.node.primary_ip)
        self.lu = FakeLU(self.cfg, self.net, instance_name="inst1.example.com")

    def local(self, path):
        return self.paths.root + path

    def instance(self, disks, template):
        return Instance(uuid="i-1", name="inst1.example.com", primary_node=self.node.uuid,
                        hypervisor="fake", disks=[d.uuid for d in disks],
                        disk_template=template)

    def commit(self, inst, disks):
        for d in disks:
            self.cfg.disks[d.uuid] = d
        self.cfg.instances[inst.uuid] = inst

    def generate(self, template, specs, **kw):
        return st.generate_disks(self.lu, self.cfg, template, "i-1", self.node.uuid, [],
                                 specs, kw.get("file_storage_dir"), kw.get("file_driver"),
                                 kw.get("base_index", 0), instance_name=self.lu.name)


class GenerateTest(_Base):
    def test_file_layout(self):
        disks = self.generate("file", [{"size": 4, "mode": "rw", "name": "root"},
                                       {"size": 2, "mode": "ro"}])
        self.assertEqual([d.iv_name for d in disks], ["disk/0", "disk/1"])
        self.assertEqual([d.size for d in disks], [4, 2])
        self.assertEqual(disks[0].name, "root")
        self.assertEqual(disks[1].mode, "ro")
        for i, d in enumerate(disks):
            self.assertEqual(d.logical_id[0], "loop")
            self.assertTrue(d.logical_id[1].startswith(f"{FS}/inst1.example.com/"))
            self.assertTrue(d.logical_id[1].endswith(f".file.disk{i}"))
            self.assertEqual(d.nodes, [self.node.uuid])
            self.assertEqual(d.dev_type, "file")
        self.assertNotEqual(disks[0].uuid, disks[1].uuid)
        self.assertEqual((disks[0].serial_no, disks[0].ctime), (1, 0.0))  # config needs them

    def test_file_subdir_and_driver(self):
        disks = self.generate("file", [{"size": 1}], file_storage_dir="sub/dir",
                              file_driver="blktap")
        self.assertEqual(disks[0].logical_id[0], "blktap")
        self.assertTrue(disks[0].logical_id[1].startswith(f"{FS}/sub/dir/inst1.example.com/"))
        self.assertRaises(OpPrereqError, self.generate, "file", [{"size": 1}],
                          file_storage_dir="../etc")
        self.assertRaises(OpPrereqError, self.generate, "file", [{"size": 1}],
                          file_driver="nbd")

    def test_plain_names_are_reserved_for_the_job(self):
        disks = self.generate("plain", [{"size": 4}, {"size": 8, "vg": "othervg"}],
                              base_index=2)
        self.assertEqual(disks[0].logical_id[0], "xenvg")
        self.assertTrue(disks[0].logical_id[1].endswith(".disk2"))
        self.assertEqual(disks[1].logical_id[0], "othervg")
        self.assertTrue(disks[1].logical_id[1].endswith(".disk3"))
        self.assertEqual(disks[0].iv_name, "disk/2")
        other = FakeLU(self.cfg, self.net, owner="job-2")
        other.ctx.reservations = self.lu.ctx.reservations
        name = f"xenvg/{disks[0].logical_id[1]}"
        self.assertRaises(ReservationError, other.ctx.reservations.reserve_lv, "job-2",
                          self.cfg, name)

    def test_plain_needs_a_volume_group(self):
        self.cfg.cluster.volume_group_name = None
        self.assertRaises(OpPrereqError, self.generate, "plain", [{"size": 1}])

    def test_blockdev_adoption_paths(self):
        disks = self.generate("blockdev", [{"adopt": "/dev/disk/by-id/x", "size": 0}])
        self.assertEqual(disks[0].logical_id, ["manual", "/dev/disk/by-id/x"])
        self.assertRaises(OpPrereqError, self.generate, "blockdev", [{"adopt": "/tmp/x"}])
        self.assertRaises(OpPrereqError, self.generate, "blockdev", [{"size": 1}])

    def test_unsupported_and_disabled_templates(self):
        err = self.assertRaises(OpPrereqError, self.generate, "drbd", [{"size": 1}])
        self.assertEqual(err.args, ("Disk template drbd needs exactly one secondary node",
                                    "wrong_input"))
        err = self.assertRaises(OpPrereqError, self.generate, "rbd", [{"size": 1}])
        self.assertIn("'rbd' is not supported yet", str(err))
        self.assertEqual(err.args[1], "wrong_input")
        err = self.assertRaises(OpPrereqError, self.generate, "ext", [{"size": 1}])
        self.assertIn("'ext' is not supported yet", str(err))
        self.cfg.cluster.enabled_disk_templates = ["diskless"]
        err = self.assertRaises(OpPrereqError, self.generate, "file", [{"size": 1}])
        self.assertIn("not enabled", str(err))

    def test_diskless(self):
        self.assertEqual(self.generate("diskless", []), [])


class FileLifecycleTest(_Base):
    @defer.inlineCallbacks
    def test_create_assemble_grow_rename_check_remove(self):
        disks = self.generate("file", [{"size": 4}, {"size": 2}])
        inst = self.instance(disks, "file")
        yield defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks))
        for d in disks:
            self.assertEqual(os.path.getsize(self.local(d.logical_id[1])), d.size * 1024 * 1024)
        self.commit(inst, disks)
        self.assertEqual((yield defer.ensureDeferred(
            st.check_disks_exist(self.lu, self.cfg, inst))), [])
        devs = yield defer.ensureDeferred(st.assemble_disks(self.lu, self.cfg, inst))
        self.assertEqual(devs, [(self.node.name, "disk/0", disks[0].logical_id[1]),
                                (self.node.name, "disk/1", disks[1].logical_id[1])])
        self.assertTrue(self.cfg.instances["i-1"].disks_active)
        ok = yield defer.ensureDeferred(st.shutdown_disks(self.lu, self.cfg, inst))
        self.assertTrue(ok)
        self.assertFalse(self.cfg.instances["i-1"].disks_active)
        yield defer.ensureDeferred(st.grow_disk(self.lu, self.cfg, inst, disks[0], 2,
                                                dry_run=True))
        self.assertEqual(os.path.getsize(self.local(disks[0].logical_id[1])), 4 * 1024 * 1024)
        yield defer.ensureDeferred(st.grow_disk(self.lu, self.cfg, inst, disks[0], 2))
        self.assertEqual(os.path.getsize(self.local(disks[0].logical_id[1])), 6 * 1024 * 1024)
        old_dir = os.path.dirname(disks[0].logical_id[1])
        yield defer.ensureDeferred(st.rename_instance_disks(
            self.lu, self.cfg, inst, "inst1.example.com", "inst2.example.com"))
        new_dir = f"{FS}/inst2.example.com"
        self.assertFalse(os.path.exists(self.local(old_dir)))
        for d in disks:
            self.assertEqual(os.path.dirname(self.cfg.disks[d.uuid].logical_id[1]), new_dir)
            self.assertTrue(os.path.isfile(self.local(self.cfg.disks[d.uuid].logical_id[1])))
        os.unlink(self.local(self.cfg.disks[disks[1].uuid].logical_id[1]))
        problems = yield defer.ensureDeferred(st.check_disks_exist(self.lu, self.cfg, inst))
        self.assertEqual(problems, [f"disk disk/1 of instance inst1.example.com is missing "
                                    f"on node {self.node.name}"])
        ok = yield defer.ensureDeferred(st.remove_disks(self.lu, self.cfg, inst))
        self.assertTrue(ok)
        self.assertFalse(os.path.exists(self.local(new_dir)))

    @defer.inlineCallbacks
    def test_failed_create_leaves_nothing(self):
        disks = self.generate("file", [{"size": 1}, {"size": 1}, {"size": 1}])
        inst = self.instance(disks, "file")
        # the third file exists already: its creation fails
        directory = self.local(os.path.dirname(disks[2].logical_id[1]))
        os.makedirs(directory)
        open(self.local(disks[2].logical_id[1]), "w").close()
        err = yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertIn("Can't create block device disk/2 on node node1.test", str(err))
        self.assertFalse(os.path.exists(self.local(disks[0].logical_id[1])))
        self.assertFalse(os.path.exists(self.local(disks[1].logical_id[1])))
        # the directory stays: it is not empty (the file that was there before)
        self.assertTrue(os.path.exists(self.local(disks[2].logical_id[1])))

    @defer.inlineCallbacks
    def test_failed_create_removes_the_directory(self):
        disks = self.generate("file", [{"size": 1}])
        inst = self.instance(disks, "file")
        self.net.down.add(self.node.name)
        err = yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertIn("Failed to create directory", str(err))
        self.net.down.clear()
        # a node failing in the middle: the directory made for the instance goes again
        handlers = dict(self.net.handlers)

        def broken(*a):
            raise RPCFail("disk full")
        handlers["blockdev_create"] = broken
        self.net.handlers = handlers
        yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertFalse(os.path.exists(self.local(os.path.dirname(disks[0].logical_id[1]))))

    @defer.inlineCallbacks
    def test_remove_failure_raises_unless_ignored(self):
        disks = self.generate("file", [{"size": 1}])
        inst = self.instance(disks, "file")
        yield defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks))
        self.commit(inst, disks)
        self.net.down.add(self.node.name)
        yield self.assertFailure(
            defer.ensureDeferred(st.remove_disks(self.lu, self.cfg, inst)), OpExecError)
        ok = yield defer.ensureDeferred(st.remove_disks(self.lu, self.cfg, inst,
                                                        ignore_failures=True))
        self.assertFalse(ok)
        self.assertTrue(any("Could not remove disk disk/0" in m for m in self.lu.messages))

    @defer.inlineCallbacks
    def test_assemble_failure_names_disk_and_node(self):
        disks = self.generate("file", [{"size": 1}])
        inst = self.instance(disks, "file")
        self.commit(inst, disks)  # never created: the file is missing
        err = yield self.assertFailure(
            defer.ensureDeferred(st.assemble_disks(self.lu, self.cfg, inst)), OpExecError)
        self.assertIn("disk/0", str(err))
        self.assertIn(self.node.name, str(err))
        self.assertFalse(self.cfg.instances["i-1"].disks_active)

    @defer.inlineCallbacks
    def test_remove_some_disks_keeps_the_directory(self):
        disks = self.generate("file", [{"size": 1}, {"size": 1}])
        inst = self.instance(disks, "file")
        yield defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks))
        self.commit(inst, disks)
        yield defer.ensureDeferred(st.remove_disks(self.lu, self.cfg, inst, [disks[1]]))
        self.assertTrue(os.path.isfile(self.local(disks[0].logical_id[1])))
        self.assertFalse(os.path.exists(self.local(disks[1].logical_id[1])))


@pytest.mark.subprocess
class PlainTest(_Base):
    def setUp(self):
        super().setUp()
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)

    @defer.inlineCallbacks
    def test_create_and_remove(self):
        disks = self.generate("plain", [{"size": 8}, {"size": 4}])
        inst = self.instance(disks, "plain")
        yield defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks))
        self.assertEqual(sorted(self.fake.state["lvs"]),
                         sorted(f"xenvg/{d.logical_id[1]}" for d in disks))
        create = [c for c in self.fake.calls if c[0] == "lvcreate"][0]
        self.assertIn("originstname+inst1.example.com", create)
        self.commit(inst, disks)
        devs = yield defer.ensureDeferred(st.assemble_disks(self.lu, self.cfg, inst))
        self.assertEqual(devs[0][2], f"/dev/xenvg/{disks[0].logical_id[1]}")
        yield defer.ensureDeferred(st.remove_disks(self.lu, self.cfg, inst))
        self.assertEqual(self.fake.state["lvs"], {})

    @defer.inlineCallbacks
    def test_failed_create_removes_created_volumes(self):
        disks = self.generate("plain", [{"size": 60}, {"size": 60}])  # the VG holds 100
        inst = self.instance(disks, "plain")
        err = yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertIn("disk/1", str(err))
        self.assertIn("Not enough free space", str(err))
        self.assertEqual(self.fake.state["lvs"], {})

    @defer.inlineCallbacks
    def test_adopt_renames_and_takes_the_size(self):
        state = self.fake.state
        state["lvs"]["xenvg/existing"] = {"size": 12.0}
        self.fake.state = state
        disks = self.generate("plain", [{"adopt": "existing", "size": 0}])
        inst = self.instance(disks, "plain")
        yield defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks))
        self.assertEqual(disks[0].size, 12)
        self.assertEqual(list(self.fake.state["lvs"]), [f"xenvg/{disks[0].logical_id[1]}"])
        self.assertNotIn("lvcreate", [c[0] for c in self.fake.calls])

    @defer.inlineCallbacks
    def test_adopt_missing_volume(self):
        disks = self.generate("plain", [{"adopt": "nosuch", "size": 0}])
        inst = self.instance(disks, "plain")
        err = yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertIn("Missing logical volume(s): xenvg/nosuch", str(err))


class BlockdevAdoptTest(_Base):
    @defer.inlineCallbacks
    def test_missing_device(self):
        disks = self.generate("blockdev", [{"adopt": "/dev/disk/by-id/none-such"}])
        inst = self.instance(disks, "blockdev")
        err = yield self.assertFailure(
            defer.ensureDeferred(st.create_disks(self.lu, self.cfg, inst, disks)), OpExecError)
        self.assertIn("Missing block device(s): /dev/disk/by-id/none-such", str(err))


class FileStorageDirTest(_Base):
    def test_calculate(self):
        self.assertEqual(st.calculate_file_storage_dir(self.cfg, "file", "a.test"),
                         f"{FS}/a.test")
        self.assertEqual(st.calculate_file_storage_dir(self.cfg, "sharedfile", "a.test", "x"),
                         "/srv/ganeti/shared-file-storage/x/a.test")
        self.assertIsNone(st.calculate_file_storage_dir(self.cfg, "plain", "a.test"))
