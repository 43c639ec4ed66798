"""What the drbd template shows (tests/master/drbd_cluster.py): OP_INSTANCE_QUERY_DATA and
``gnt-instance info`` with the mirror's ends, port and each node's status of the disk
and its volumes; the query fields; confd's ``node-drbd``; a secondary whose network is
disconnected: degraded in ``gnt-cluster verify`` (EINSTANCEFAULTYDISK) and listed by
OP_GROUP_VERIFY_DISKS, and repaired by activating the disks (the watcher's and
``gnt-cluster verify-disks``' flow)."""

from __future__ import annotations

import io

import pytest

from ganeti.cli import gnt_cluster, gnt_instance
from ganeti.confd.server import ConfdAnswerer
from ganeti.core.rpcdefs.disks import DiskArg
from tests.master.drbd_cluster import DrbdCase, drbd_op

#: the nodes' volumes are made by the fake lvm program (a child process)
pytestmark = pytest.mark.subprocess


class StatusCase(DrbdCase):
    def setUp(self) -> None:
        super().setUp()
        self.run_ok(drbd_op(disks=[{"size": 256, "name": "root"}]))
        self.run_ok({"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": "inst1.test"})

    def cli(self, tool, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = tool.main(list(argv), stdout=out, stderr=err,
                         environ=self.master.paths.env(),
                         luxi_factory=lambda paths: self.master.client())
        return code, out.getvalue(), err.getvalue()

    def disconnect(self, node: str) -> None:
        """The mirror's network of the instance's disks goes down on ``node``."""
        inst = self.instance()
        result = self.node_call(node, "drbd_disconnect_net",
                                [[DiskArg(d, inst) for d in self.disks()]])
        self.assertTrue(result.success, result.fail_msg)

    def verify_findings(self) -> list[str]:
        """cluster verify's findings about the instance (this test cluster has no
        certificates and such: the rest is not looked at)."""
        result = self.run_ok({"OP_ID": "OP_CLUSTER_VERIFY"})
        lines = []
        for _ok, job_id in result["jobs"]:
            _status, _results, log = self.master.finish(job_id)
            lines += [line for line in log if line.startswith("  - ") and "inst1" in line]
        return lines


class InfoTest(StatusCase):
    def test_query_data_shows_both_ends(self) -> None:
        data = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": ["inst1.test"],
                            "static": False})["inst1.test"]
        self.assertEqual((data["disk_template"], data["snodes"]), ("drbd", ["node2.test"]))
        disk = data["disks"][0]
        cfg_disk = self.disks()[0]
        self.assertEqual(disk["drbd_info"], {
            "primary_node": "node1.test", "primary_minor": 0,
            "secondary_node": "node2.test", "secondary_minor": 0,
            "port": cfg_disk.logical_id[2]})
        self.assertEqual(disk["logical_id"], cfg_disk.logical_id[:5] + [None])  # no secret
        self.assertEqual(disk["pstatus"], ["/dev/drbd0", 147, 0, None, None, False, 1])
        self.assertEqual(disk["sstatus"], ["/dev/drbd0", 147, 0, None, None, False, 1])
        data_lv, meta_lv = disk["children"]
        self.assertEqual((data_lv["dev_type"], data_lv["size"], meta_lv["size"]),
                         ("plain", 256, 128))
        self.assertEqual(data_lv["pstatus"][0], f"/dev/xenvg/{cfg_disk.children[0].logical_id[1]}")
        self.assertIsNotNone(data_lv["sstatus"])
        static = self.run_ok({"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": ["inst1.test"],
                              "static": True})["inst1.test"]["disks"][0]
        self.assertEqual((static["pstatus"], static["sstatus"]), (None, None))
        self.assertEqual(static["drbd_info"], disk["drbd_info"])

    def test_gnt_instance_info_as_ganeti_prints_it(self) -> None:
        self.disconnect("node2.test")
        code, out, err = self.cli(gnt_instance, "info", "inst1.test")
        self.assertEqual(code, 0, err)
        port = self.disks()[0].logical_id[2]
        for line in ("    - disk/0: drbd, size 256M",
                     "      nodeA: node1.test, minor=0",
                     "      nodeB: node2.test, minor=0",
                     f"      port: {port}",
                     "      on primary: /dev/drbd0 (147:0) in sync, status *DEGRADED*",
                     "      on secondary: /dev/drbd0 (147:0) in sync, status *DEGRADED*",
                     "      name: root",
                     "        - child 0: plain, size 256M",
                     "        - child 1: plain, size 128M"):
            self.assertIn(line, out.splitlines())
        self.assertIn("secondaries: node2.test (group default", out)

    def test_query_fields_and_confd(self) -> None:
        rows = self.run_ok({"OP_ID": "OP_QUERY", "what": "instance",
                            "fields": ["name", "disk_template", "snodes", "pnode"],
                            "qfilter": None})
        self.assertEqual([v for _status, v in rows["data"][0]],
                         ["inst1.test", "drbd", ["node2.test"], "node1.test"])
        confd = ConfdAnswerer(self.config)  # what ganeti-confd answers from this config
        for node, role, peer in (("node1.test", "primary", "node2.test"),
                                 ("node2.test", "secondary", "node1.test")):
            status, answer, _serial = confd.node_drbd(node)
            self.assertEqual((status, answer),
                             (0, [[node, 0, "inst1.test", "disk/0", role, peer]]))


class DegradedTest(StatusCase):
    def test_a_disconnected_secondary_is_degraded_until_activated(self) -> None:
        self.assertEqual(self.verify_findings(), [])
        self.disconnect("node2.test")
        findings = self.verify_findings()
        self.assertIn("  - WARNING: instance inst1.test: disk/0 on node2.test is degraded; "
                      "local disk state is 'ok'", findings)
        self.assertEqual(len(findings), 2, findings)  # and on node1: its peer is gone
        result = self.run_ok({"OP_ID": "OP_GROUP_VERIFY_DISKS",
                              "group_name": "default"})
        self.assertEqual(result, [{}, ["inst1.test"], {}])
        # gnt-cluster verify-disks activates what needs it, as the watcher does
        code, out, err = self.cli(gnt_cluster, "verify-disks")
        self.assertEqual(code, 0, err)
        self.assertIn("Activating disks for instance 'inst1.test'", out)
        self.assertFalse(self.find("node2.test")["is_degraded"])
        self.assertFalse(self.find("node1.test")["is_degraded"])
        self.assertEqual(self.run_ok({"OP_ID": "OP_GROUP_VERIFY_DISKS",
                                      "group_name": "default"}), [{}, [], {}])
        self.assertEqual(self.verify_findings(), [])

    def test_inactive_disks_are_not_checked(self) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": "inst1.test"})
        self.assertEqual(self.run_ok({"OP_ID": "OP_GROUP_VERIFY_DISKS",
                                      "group_name": "default"}), [{}, [], {}])
        self.assertEqual(self.verify_findings(), [])


class CliTest(StatusCase):
    def test_add_and_activate_disks_print_what_ganeti_prints(self) -> None:
        code, out, err = self.cli(
            gnt_instance, "add", "-t", "drbd", "-n", "node2.test:node3.test", "--disk",
            "0:size=256", "-o", "busybox", "--no-install", "--no-start", "--no-name-check",
            "--no-ip-check", "--ignore-ipolicy", "-B", "maxmem=128,minmem=128",
            "inst2.test")
        self.assertEqual(code, 0, err + out)
        self.assertIn(" - INFO: Waiting for instance inst2.test to sync disks", out)
        self.assertIn(" - INFO: Instance inst2.test's disks are in sync", out)
        code, out, err = self.cli(gnt_instance, "activate-disks", "inst2.test")
        self.assertEqual(code, 0, err)
        # node2's first minor, node3's first minor: /dev/drbd1 on node2 (inst1 has 0)
        self.assertEqual(out, "node2.test:disk/0:/dev/drbd1\n")
        code, out, err = self.cli(gnt_instance, "list", "--no-headers", "-o",
                                  "name,disk_template,pnode,snodes", "inst2.test")
        self.assertEqual(code, 0, err)
        self.assertEqual(out.split(), ["inst2.test", "drbd", "node2.test", "node3.test"])
