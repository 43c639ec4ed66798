"""gnt-node volumes, list-storage, modify-storage and repair-storage: opcodes, Ganeti's
table output (GenerateTable), and end to end against a master with in-process nodes
whose ``lvm`` is the fake program."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_node
from ganeti.cli.gnt_node_storage import generate_table
from ganeti.noded.bdev import lvm
from tests.cli.test_gnt_node import NodesCliTestCase, run, two_nodes
from tests.fakes.fakelvm import FakeLvm, enable_lvm


def storage_rows(op: dict[str, Any]) -> list[list[Any]]:
    data = {"node": "node1.example.com", "type": "lvm-vg", "name": "xenvg",
            "size": 409600, "used": 1024, "free": 408576, "allocatable": True}
    return [[data[f] for f in op["output_fields"]]]


def volume_rows(op: dict[str, Any]) -> list[list[str]]:
    data = {"node": "node1.example.com", "phys": "/dev/sdb", "vg": "xenvg",
            "name": "abc.disk0", "size": "10240", "instance": "web1"}
    return [[data[f] for f in op["output_fields"]]]


class ScriptedStorageTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = two_nodes()
        self.fake.results["OP_NODE_QUERY_STORAGE"] = storage_rows
        self.fake.results["OP_NODE_QUERYVOLS"] = volume_rows
        self.fake.results["OP_NODE_MODIFY_STORAGE"] = lambda op: None
        self.fake.results["OP_REPAIR_NODE_STORAGE"] = lambda op: None

    def node(self, *argv: str):
        return run(gnt_node, self.fake, *argv)

    def test_list_storage(self):
        r = self.node("list-storage", "-t", "lvm-vg")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out,
                         "Node              Type   Name    Size Used   Free Allocatable\n"
                         "node1.example.com lvm-vg xenvg 400.0G 1.0G 399.0G Y\n")
        (op,) = self.fake.ops()
        self.assertEqual((op["OP_ID"], op["storage_type"], op["nodes"], op["output_fields"]),
                         ("OP_NODE_QUERY_STORAGE", "lvm-vg", [],
                          ["node", "type", "name", "size", "used", "free", "allocatable"]))
        r = self.node("list-storage", "--separator=|", "--no-headers", "-o", "name,size",
                      "node1")
        self.assertEqual(r.out, "xenvg|409600\n")
        self.assertEqual(self.fake.ops()[-1]["nodes"], ["node1"])
        self.assertIsNone(self.fake.ops()[-1]["storage_type"])

    def test_list_storage_refuses_unknown_type(self):
        r = self.node("list-storage", "-t", "rados")
        self.assertEqual(r.code, 1)
        self.assertEqual(self.fake.ops(), [])

    def test_volumes(self):
        r = self.node("volumes")
        self.assertEqual(r.out, "Node              PhysDev  VG    Name       Size Instance\n"
                                "node1.example.com /dev/sdb xenvg abc.disk0 10.0G web1\n")
        r = self.node("volumes", "--units", "m", "-o", "name,size")
        self.assertEqual(r.out, "Name       Size\nabc.disk0 10240\n")

    def test_modify_storage(self):
        r = self.node("modify-storage", "--allocatable=no", "node1", "lvm-pv", "/dev/sdb")
        self.assertEqual(r.code, 0, r.err)
        (op,) = self.fake.ops()
        self.assertEqual({k: op[k] for k in ("OP_ID", "node_name", "storage_type", "name",
                                              "changes")},
                         {"OP_ID": "OP_NODE_MODIFY_STORAGE", "node_name": "node1",
                          "storage_type": "lvm-pv", "name": "/dev/sdb",
                          "changes": {"allocatable": False}})
        r = self.node("modify-storage", "node1", "lvm-pv", "/dev/sdb")
        self.assertEqual((r.code, r.err), (0, "No changes to perform, exiting.\n"))
        self.assertEqual(len(self.fake.ops()), 1)

    def test_repair_storage(self):
        r = self.node("repair-storage", "--ignore-consistency", "node1", "lvm-vg", "xenvg")
        self.assertEqual(r.code, 0, r.err)
        (op,) = self.fake.ops()
        self.assertEqual((op["OP_ID"], op["storage_type"], op["name"],
                          op["ignore_consistency"]),
                         ("OP_REPAIR_NODE_STORAGE", "lvm-vg", "xenvg", True))

    def test_every_user_storage_type_is_sent_unknown_ones_refused(self):
        # Ganeti's client sends every type a user may name and lets the master refuse
        # those that cannot be changed or repaired; an unknown one is OpPrereqError.
        for kind in ("file", "sharedfile", "gluster", "lvm-vg", "lvm-pv"):
            for argv in (("modify-storage", "--allocatable=no"), ("repair-storage",)):
                r = self.node(*argv, "node1", kind, "x")
                self.assertEqual(r.code, 0, r.err)
                self.assertEqual(self.fake.ops()[-1]["storage_type"], kind)
        count = len(self.fake.ops())
        r = self.node("modify-storage", "node1", "file", "x")
        self.assertEqual((r.code, r.err), (0, "No changes to perform, exiting.\n"))
        for argv in (("modify-storage",), ("modify-storage", "--allocatable=no"),
                     ("repair-storage",)):
            r = self.node(*argv, "node1", "rados", "x")
            self.assertEqual((r.code, r.out), (1, ""))
            self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                    "Unknown storage type: rados (error type: wrong_input)\n")
        self.assertEqual(len(self.fake.ops()), count)


class GenerateTableTest(SynchronousTestCase):
    def test_numbers_right_aligned_last_column_unpadded(self):
        lines = generate_table({"a": "A", "n": "Num", "z": "Last"}, ["a", "n", "z"], None,
                               [["x", 5, "y"], ["long", 12345, "longer"]], numfields=["n"])
        self.assertEqual(lines, ["A      Num Last  ", "x        5 y", "long 12345 longer"])


@pytest.mark.subprocess
class StorageEndToEndTest(NodesCliTestCase):
    def setUp(self) -> None:
        self.lvm = FakeLvm.install(self, vgs={"xenvg": {"size": 2048, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        super().setUp()

        enable_lvm(self.master, ["plain"])

    def test_list_modify_repair(self):
        r = self.node("list-storage")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "Node       Type   Name  Size Used Free Allocatable\n"
                                "node1.test lvm-vg xenvg 2.0G   0M 2.0G Y\n")
        r = self.node("list-storage", "-t", "lvm-pv", "--separator", " ", "-o",
                      "name,allocatable")
        self.assertEqual(r.out, "Name Allocatable\n/dev/sdb Y\n")
        r = self.node("modify-storage", "--allocatable", "no", "node1.test", "lvm-pv",
                      "/dev/sdb")
        self.assertEqual(r.code, 0, r.err)
        r = self.node("list-storage", "-t", "lvm-pv", "--no-headers", "-o", "allocatable")
        self.assertEqual(r.out, "N\n")
        r = self.node("repair-storage", "node1.test", "lvm-vg", "xenvg")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn(["vgreduce", "--removemissing", "xenvg"], self.lvm.calls)
        r = self.node("volumes")
        self.assertEqual((r.code, r.out), (0, "Node PhysDev VG Name Size Instance\n"))

    def test_types_that_cannot_be_changed_fail_in_the_job(self):
        # Ganeti's LUNodeModifyStorage/LURepairNodeStorage: the node first, then the type.
        enable_lvm(self.master, ["plain", "file"])
        for argv, why in (
                (("modify-storage", "--allocatable=no", "node1.test", "file", "x"),
                 "Storage units of type 'file' can not be modified"),
                (("modify-storage", "--allocatable=no", "node1.test", "lvm-vg", "xenvg"),
                 "Storage units of type 'lvm-vg' can not be modified"),
                (("repair-storage", "node1.test", "file", "x"),
                 "Storage units of type 'file' can not be repaired"),
                (("modify-storage", "--allocatable=no", "nope.test", "file", "x"),
                 "Node 'nope.test' not known")):
            r = self.node(*argv)
            self.assertEqual(r.code, 1, argv)
            self.assertIn(why, r.err)
