"""RAPI's POST /2/instances/{name}/replace-disks (Ganeti's rlib2): the opcode from the
body, or from the query parameters Ganeti's client sends (``disks`` as "0,2");
refusals with 400."""

from __future__ import annotations

from typing import Any

from ganeti.rapi import errors as http
from tests.rapi import test_resources_migration as migration_tests
from tests.rapi.test_resources_instances import InstancesCase

URL = "/2/instances/web1.test/replace-disks"


class ReplaceDisksResourceTest(InstancesCase):
    opcode = migration_tests.MigrationResourcesTest.opcode

    def _fields(self, op: dict[str, Any]) -> tuple[Any, ...]:
        return (op["OP_ID"], op["instance_name"], op["mode"], op.get("disks", []),
                op.get("remote_node"), op.get("iallocator"), op.get("early_release", False))

    def test_body(self):
        op = self.opcode("POST", URL, "", {"mode": "replace_new_secondary",
                                           "remote_node": "node3.test", "early_release": True})
        self.assertEqual(self._fields(op), ("OP_INSTANCE_REPLACE_DISKS", "web1.test",
                                            "replace_new_secondary", [], "node3.test", None,
                                            True))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:instances_name_replace_disks")
        op = self.opcode("POST", URL, "", {"mode": "replace_on_primary", "disks": [0, 1]})
        self.assertEqual(op["disks"], [0, 1])
        op = self.opcode("POST", URL, "", {"mode": "replace_on_secondary", "disks": "1, 0"})
        self.assertEqual(op["disks"], [1, 0])

    def test_query_of_ganetis_client(self):
        # what ganeti.rapi.client.ReplaceInstanceDisks sends: the mode, the disks joined
        # by commas, the node or allocator, early_release (which Ganeti's RAPI drops)
        op = self.opcode("POST", URL, "mode=replace_on_secondary&disks=0,1&early_release=True")
        self.assertEqual(self._fields(op), ("OP_INSTANCE_REPLACE_DISKS", "web1.test",
                                            "replace_on_secondary", [0, 1], None, None, False))
        op = self.opcode("POST", URL, "mode=replace_new_secondary&iallocator=hail")
        self.assertEqual((op["mode"], op["iallocator"]), ("replace_new_secondary", "hail"))
        op = self.opcode("POST", URL, "mode=replace_new_secondary&remote_node=node3.test")
        self.assertEqual(op["remote_node"], "node3.test")

    def test_refusals(self):
        err = self.refused(http.HttpBadRequest, "POST", URL, "mode=replace_auto&disks=0,x")
        self.assertEqual(err.message, "Invalid disk index passed: invalid literal for int() "
                                      "with base 10: 'x'")
        self.refused(http.HttpBadRequest, "POST", URL, "", {"mode": "replace_everything"})
        self.refused(http.HttpBadRequest, "POST", URL, "", {"disks": [0]})  # no mode
        err = self.refused(http.HttpBadRequest, "POST", URL, "",
                           {"mode": "replace_auto", "instance_name": "db10.test"})
        self.assertEqual(err.message, "Can't overwrite static parameters 'instance_name'")
        self.refused(http.HttpBadRequest, "POST", URL, "colour=blue")
