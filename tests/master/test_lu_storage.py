"""Storage units on the master: OP_NODE_QUERY_STORAGE, OP_NODE_MODIFY_STORAGE,
OP_REPAIR_NODE_STORAGE and OP_NODE_QUERYVOLS against in-process node daemons
(tests/fakes/nodes.py) whose ``lvm`` is the fake program (tests/fakes/fakelvm.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.objects import Disk, Instance
from ganeti.noded.bdev import lvm
from tests.fakes.fakelvm import FakeLvm, enable_lvm
from tests.fakes.nodes import master_with_nodes


@pytest.mark.subprocess
class StorageLuTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 100, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        self.master, self.net = master_with_nodes(self, 2)
        self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                     "primary_ip": "127.0.1.2", "readd": False})

        self.enable(["plain", "file"])

    def enable(self, templates):
        enable_lvm(self.master, templates)

    def job(self, *ops: dict[str, Any]) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit(*ops))

    def run_ok(self, *ops: dict[str, Any]) -> list[Any]:
        status, results, log = self.job(*ops)
        self.assertEqual(status, "success", (results, log))
        return results

    def run_fails(self, op: dict[str, Any]) -> tuple[Any, list[str]]:
        status, results, log = self.job(op)
        self.assertEqual(status, "error", (results, log))
        return results[0], log

    def query(self, fields, **kw):
        return self.run_ok({"OP_ID": "OP_NODE_QUERY_STORAGE", "output_fields": fields,
                            **kw})[0]

    def test_query_vgs_of_all_nodes(self):
        rows = self.query(["node", "type", "name", "size", "used", "free", "allocatable"],
                          storage_type="lvm-vg")
        self.assertEqual(rows, [["node1.test", "lvm-vg", "xenvg", 100, 0, 100, True],
                                ["node2.test", "lvm-vg", "xenvg", 100, 0, 100, True]])

    def test_default_type_is_the_first_enabled_template(self):
        rows = self.query(["node", "name"], nodes=["node2.test"])
        self.assertEqual(rows, [["node2.test", "xenvg"]])

    def test_file_storage_units(self):
        for name in ("node1.test", "node2.test"):
            os.makedirs(self.net.paths(name).root + "/srv/ganeti/file-storage", exist_ok=True)
        rows = self.query(["node", "name", "allocatable"], storage_type="file")
        self.assertEqual(rows, [["node1.test", "/srv/ganeti/file-storage", True],
                                ["node2.test", "/srv/ganeti/file-storage", True]])

    def test_disabled_type_and_bad_fields_are_refused(self):
        err, _ = self.run_fails({"OP_ID": "OP_NODE_QUERY_STORAGE", "output_fields": ["name"],
                                 "storage_type": "sharedfile"})
        self.assertIn("No disk template of storage type 'sharedfile' is enabled", err[1][0])
        self.assertEqual(len(err[1]), 1)  # as Ganeti's: no error code
        self.enable(["diskless", "plain"])
        err, _ = self.run_fails({"OP_ID": "OP_NODE_QUERY_STORAGE", "output_fields": ["name"]})
        self.assertIn("Storage reporting for storage type 'diskless' is not supported",
                      err[1][0])
        err, _ = self.run_fails({"OP_ID": "OP_NODE_QUERY_STORAGE",
                                 "output_fields": ["name", "bogus"], "storage_type": "lvm-vg"})
        self.assertIn("Unknown output fields selected: bogus", err[1][0])

    def test_failing_node_is_a_warning(self):
        self.net.down.add("node2.test")
        status, results, log = self.job({"OP_ID": "OP_NODE_QUERY_STORAGE",
                                         "output_fields": ["node", "name"],
                                         "storage_type": "lvm-vg"})
        self.assertEqual(status, "success")
        self.assertEqual(results[0], [["node1.test", "xenvg"]])
        self.assertTrue(any("Can't get storage data from node node2.test" in m for m in log))

    def test_modify_allocatable(self):
        self.run_ok({"OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": "node2.test",
                     "storage_type": "lvm-pv", "name": "/dev/sdb",
                     "changes": {"allocatable": False}})
        self.assertIn(["pvchange", "--allocatable", "n", "/dev/sdb"], self.fake.calls)
        rows = self.query(["name", "allocatable"], storage_type="lvm-pv")
        self.assertEqual(rows, [["/dev/sdb", False], ["/dev/sdb", False]])

    def test_modify_refusals(self):
        before = len(self.fake.calls)
        err, _ = self.run_fails({"OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": "node2.test",
                                 "storage_type": "lvm-vg", "name": "xenvg",
                                 "changes": {"allocatable": False}})
        self.assertIn("Storage units of type 'lvm-vg' can not be modified", err[1][0])
        err, _ = self.run_fails({"OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": "node2.test",
                                 "storage_type": "lvm-pv", "name": "/dev/sdb",
                                 "changes": {"size": 5}})
        self.assertIn("can not be modified for storage units of type 'lvm-pv'", err[1][0])
        err, _ = self.run_fails({"OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": "nosuch",
                                 "storage_type": "lvm-pv", "name": "/dev/sdb",
                                 "changes": {"allocatable": True}})
        self.assertEqual(err[1][1], "unknown_entity")
        self.assertEqual(len(self.fake.calls), before)

    def test_repair(self):
        self.run_ok({"OP_ID": "OP_REPAIR_NODE_STORAGE", "node_name": "node1.test",
                     "storage_type": "lvm-vg", "name": "xenvg"})
        self.assertIn(["vgreduce", "--removemissing", "xenvg"], self.fake.calls)
        err, _ = self.run_fails({"OP_ID": "OP_REPAIR_NODE_STORAGE", "node_name": "node1.test",
                                 "storage_type": "lvm-pv", "name": "/dev/sdb"})
        self.assertIn("Storage units of type 'lvm-pv' can not be repaired", err[1][0])
        self.fake.fail("vgs", "  Couldn't find device with uuid abc")
        err, _ = self.run_fails({"OP_ID": "OP_REPAIR_NODE_STORAGE", "node_name": "node1.test",
                                 "storage_type": "lvm-vg", "name": "xenvg"})
        self.assertIn("Failed to repair storage unit 'xenvg' on node1.test", err[1][0])

    def test_volumes_with_their_instance(self):
        state = self.fake.state
        state["lvs"]["xenvg/abc.disk0"] = {"size": 12.0}
        state["lvs"]["xenvg/orphan"] = {"size": 3.0}
        self.fake.state = state
        node1 = next(u for u, n in self.master.config.nodes.items() if n.name == "node1.test")

        def add(cfg):
            cfg.disks["d1"] = Disk(uuid="d1", dev_type="plain",
                                   logical_id=["xenvg", "abc.disk0"], size=12, nodes=[node1],
                                   iv_name="disk/0", serial_no=1, ctime=1.0, mtime=1.0)
            cfg.instances["i1"] = Instance(uuid="i1", name="web1.test", primary_node=node1,
                                           hypervisor="fake", disks=["d1"],
                                           disk_template="plain")
        failure = self.master.run_until(self.master.daemon.config_writer.update(add))
        self.assertIsNone(failure)
        self.assertIn("i1", self.master.config.instances)
        rows = self.run_ok({"OP_ID": "OP_NODE_QUERYVOLS", "nodes": ["node1.test"],
                            "output_fields": ["node", "phys", "vg", "name", "size",
                                              "instance"]})[0]
        self.assertEqual(sorted(rows), [
            ["node1.test", "/dev/sdb", "xenvg", "abc.disk0", "12", "web1.test"],
            ["node1.test", "/dev/sdb", "xenvg", "orphan", "3", "-"]])
        err, _ = self.run_fails({"OP_ID": "OP_NODE_QUERYVOLS", "output_fields": ["nope"]})
        self.assertIn("Unknown output fields selected: nope", err[1][0])
