"""RAPI storage-unit resources of a node (/2/nodes/N/storage, /storage/modify,
/storage/repair) against a real master daemon with in-process nodes whose ``lvm``
is the fake program."""

from __future__ import annotations

import pytest

from ganeti.noded.bdev import lvm
from ganeti.rapi import errors as http
from ganeti.rapi.routes import ROUTES
from ganeti.rapi.routing import WRITE
from tests.fakes.fakelvm import FakeLvm, enable_lvm
from tests.fakes.rapi import RapiTestCase


@pytest.mark.subprocess
class StorageResourcesTest(RapiTestCase):
    def setUp(self) -> None:
        self.fake = FakeLvm.install(self, vgs={"xenvg": {"size": 300, "pvs": ["/dev/sdb"]}})
        self.patch(lvm, "dm_available", lambda: False)
        super().setUp()

        enable_lvm(self.master, ["plain"])

    def test_list_is_a_job(self):
        job = self.succeeds(self.get("/2/nodes/node1.test/storage",
                                     "storage_type=lvm-vg&output_fields=name,size,free"))
        self.assertEqual(job["opresult"], [[["xenvg", 300, 300]]])
        (op,) = job["ops"]
        self.assertEqual((op["OP_ID"], op["nodes"], op["storage_type"]),
                         ("OP_NODE_QUERY_STORAGE", ["node1.test"], "lvm-vg"))
        self.assertIn("gnt:library:rlib2:nodes_name_storage", [r[0] for r in op["reason"]])

    def test_list_needs_output_fields(self):
        err = self.refused(http.HttpBadRequest, "GET", "/2/nodes/node1.test/storage",
                           "storage_type=lvm-vg")
        self.assertIn("Missing the required 'output_fields' parameter", err.message)
        self.refused(http.HttpBadRequest, "GET", "/2/nodes/node1.test/storage",
                     "storage_type=bogus&output_fields=name")

    def test_modify(self):
        job = self.succeeds(self.call("PUT", "/2/nodes/node1.test/storage/modify",
                                      "storage_type=lvm-pv&name=/dev/sdb&allocatable=0"))
        (op,) = job["ops"]
        self.assertEqual(op["changes"], {"allocatable": False})
        self.assertIn(["pvchange", "--allocatable", "n", "/dev/sdb"], self.fake.calls)
        err = self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node1.test/storage/modify",
                           "storage_type=lvm-pv")
        self.assertIn("Missing the required 'name' parameter", err.message)
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node1.test/storage/modify",
                     "storage_type=lvm-pv&name=/dev/sdb&allocatable=maybe")

    def test_repair(self):
        job = self.succeeds(self.call("PUT", "/2/nodes/node1.test/storage/repair",
                                      "storage_type=lvm-vg&name=xenvg"))
        self.assertEqual(job["ops"][0]["OP_ID"], "OP_REPAIR_NODE_STORAGE")
        self.assertIn(["vgreduce", "--removemissing", "xenvg"], self.fake.calls)
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node1.test/storage/repair",
                     "storage_type=lvm-vg&name=xenvg", {"name": "other"})

    def test_all_need_write_access(self):
        methods = [m for r in ROUTES if r.pattern.startswith("/2/nodes/{node_name}/storage")
                   for m in r.methods.values()]
        self.assertEqual(len(methods), 3)
        for method in methods:
            self.assertEqual(method.access, frozenset({WRITE}))
