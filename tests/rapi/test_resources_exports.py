"""RAPI export resources: the opcodes Ganeti's rlib2 builds for
``/2/instances/{name}/export`` and ``/prepare-export`` (their outcome belongs to
the logical units, tested with them)."""

from __future__ import annotations

from ganeti.rapi import errors as http
from ganeti.rapi.resources import exports
from tests.rapi.test_resources_instances import InstancesCase, WriteTest


class ExportResourcesTest(InstancesCase):
    opcode = WriteTest.opcode
    op = WriteTest.op
    only_op = staticmethod(WriteTest.only_op)

    def test_export_takes_ganeti_body(self):
        op = self.opcode("PUT", "/2/instances/web1.test/export", "",
                         {"mode": "local", "destination": "node2.test", "shutdown": True,
                          "remove_instance": False, "long_sleep": True})
        self.assertEqual((op["OP_ID"], op["instance_name"], op["target_node"], op["mode"],
                          op["shutdown"], op["long_sleep"]),
                         ("OP_BACKUP_EXPORT", "web1.test", "node2.test", "local", True, True))
        self.assertIn("gnt:library:rlib2:instances_name_export", [r[0] for r in op["reason"]])
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/export", "",
                     {"instance_name": "web2.test"})
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/export", "",
                     {"destination": "node2.test", "shutdown": "yes"})

    def test_remove_export(self):
        op = self.opcode("DELETE", "/2/instances/web1.test/export", "dry-run=1")
        self.assertEqual((op["OP_ID"], op["instance_name"], op["dry_run"]),
                         ("OP_BACKUP_REMOVE", "web1.test", True))

    def test_prepare_export(self):
        op = self.opcode("PUT", "/2/instances/web1.test/prepare-export", "mode=local")
        self.assertEqual((op["OP_ID"], op["instance_name"], op["mode"]),
                         ("OP_BACKUP_PREPARE", "web1.test", "local"))
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/prepare-export", "")
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/prepare-export",
                     "mode=tape")

    def test_writes_need_write_access(self):
        for route in exports.ROUTES:
            for method in route.methods.values():
                self.assertEqual(method.access, frozenset({"write"}), route.pattern)
