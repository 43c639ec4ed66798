"""RAPI's migration resources (Ganeti's rlib2): PUT /2/instances/{name}/migrate and
/failover, POST /2/nodes/{name}/migrate (body, or the older ?live= / ?mode=), and the
``node-migrate-reqv1`` feature; each builds Ganeti's opcode and submits one job."""

from __future__ import annotations

from typing import Any

from ganeti.rapi import errors as http
from tests.rapi.test_resources_instances import InstancesCase


class MigrationResourcesTest(InstancesCase):
    def opcode(self, method: str, path: str, query: str = "", body: Any = None
               ) -> dict[str, Any]:
        job_id = self.call(method, path, query, body)
        self.assertIsInstance(job_id, int)
        (op,) = self.master.daemon.queue.jobs[job_id].ops
        return dict(op.input if hasattr(op, "input") else op)

    def test_instance_migrate(self):
        op = self.opcode("PUT", "/2/instances/web1.test/migrate", "", {
            "mode": "non-live", "cleanup": True, "target_node": "node2.test",
            "allow_failover": True, "ignore_hvversions": True})
        self.assertEqual(
            (op["OP_ID"], op["instance_name"], op["mode"], op["cleanup"], op["target_node"],
             op["allow_failover"], op["ignore_hvversions"]),
            ("OP_INSTANCE_MIGRATE", "web1.test", "non-live", True, "node2.test", True, True))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:instances_name_migrate")
        op = self.opcode("PUT", "/2/instances/web1.test/migrate")  # no body: the defaults
        self.assertEqual((op["OP_ID"], op.get("mode"), op.get("cleanup", False)),
                         ("OP_INSTANCE_MIGRATE", None, False))

    def test_instance_failover(self):
        op = self.opcode("PUT", "/2/instances/web1.test/failover", "", {
            "iallocator": "hail", "ignore_consistency": True, "shutdown_timeout": 30})
        self.assertEqual(
            (op["OP_ID"], op["instance_name"], op["iallocator"], op["ignore_consistency"],
             op["shutdown_timeout"]),
            ("OP_INSTANCE_FAILOVER", "web1.test", "hail", True, 30))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:instances_name_failover")

    def test_instance_bad_bodies(self):
        url = "/2/instances/web1.test/migrate"
        err = self.refused(http.HttpBadRequest, "PUT", url, "", {"mode": "fast"})
        self.assertIn("Invalid body parameters", err.message)
        err = self.refused(http.HttpBadRequest, "PUT", url, "",
                           {"instance_name": "db10.test"})
        self.assertEqual(err.message, "Can't overwrite static parameters 'instance_name'")
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/failover", "",
                     {"ignore_consistency": "yes"})
        self.refused(http.HttpBadRequest, "PUT", "/2/instances/web1.test/failover", "",
                     {"colour": "blue"})

    def test_node_migrate_body(self):
        op = self.opcode("POST", "/2/nodes/node1.test/migrate", "", {
            "mode": "live", "target_node": "node2.test", "ignore_ipolicy": True})
        self.assertEqual(
            (op["OP_ID"], op["node_name"], op["mode"], op["target_node"],
             op["ignore_ipolicy"]),
            ("OP_NODE_MIGRATE", "node1.test", "live", "node2.test", True))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:nodes_name_migrate")

    def test_node_migrate_query_form(self):
        """Ganeti's older clients: ?live=0|1 or ?mode=, and the body is not read."""
        url = "/2/nodes/node1.test/migrate"
        self.assertEqual(self.opcode("POST", url, "live=0", {"iallocator": "x"})["mode"],
                         "non-live")
        op = self.opcode("POST", url, "live=1")
        self.assertEqual((op["mode"], op.get("iallocator")), ("live", None))
        self.assertEqual(self.opcode("POST", url, "mode=non-live")["mode"], "non-live")
        err = self.refused(http.HttpBadRequest, "POST", url, "live=1&mode=live")
        self.assertEqual(err.message, "Only one of 'live' and 'mode' should be passed")
        self.refused(http.HttpBadRequest, "POST", url, "live=yes")
        self.refused(http.HttpBadRequest, "POST", url, "mode=fast")
        self.refused(http.HttpBadRequest, "POST", url, "", {"node_name": "node2.test"})

    def test_node_migrate_dry_run_keeps_the_body(self):
        """Ganeti's client sends ?dry-run=1 with its body; Ganeti's rlib2 then reads
        neither (the instances migrate). Ours honours both."""
        op = self.opcode("POST", "/2/nodes/node1.test/migrate", "dry-run=1",
                         {"mode": "non-live"})
        self.assertEqual((op["dry_run"], op["mode"]), (True, "non-live"))
        self.assertFalse(self.opcode("POST", "/2/nodes/node1.test/migrate", "",
                                     {}).get("dry_run", False))

    def test_feature_advertised(self):
        self.assertIn("node-migrate-reqv1", self.get("/2/features"))
        self.assertIn("node-evac-res1", self.get("/2/features"))

    def test_node_evacuate_body(self):
        """node-evac-res1: the body's parameters, as Ganeti's client sends them."""
        op = self.opcode("POST", "/2/nodes/node1.test/evacuate", "dry-run=1", {
            "mode": "secondary-only", "remote_node": "node2.test", "early_release": True})
        self.assertEqual(
            (op["OP_ID"], op["node_name"], op["mode"], op["remote_node"], op["early_release"],
             op["dry_run"]),
            ("OP_NODE_EVACUATE", "node1.test", "secondary-only", "node2.test", True, True))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:nodes_name_evacuate")
        op = self.opcode("POST", "/2/nodes/node1.test/evacuate", "", {
            "mode": "all", "iallocator": "hail"})
        self.assertEqual((op["mode"], op["iallocator"], op.get("dry_run")),
                         ("all", "hail", False))
        url = "/2/nodes/node1.test/evacuate"
        self.refused(http.HttpBadRequest, "POST", url, "", {"mode": "everything"})
        self.refused(http.HttpBadRequest, "POST", url, "", {"iallocator": "hail"})
        self.refused(http.HttpBadRequest, "POST", url, "", {"mode": "all",
                                                            "node_name": "node2.test"})
