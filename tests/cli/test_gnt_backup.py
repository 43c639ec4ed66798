"""gnt-backup: the opcodes each command submits (checked against the opcode
declarations), the list output and the errors, against a scripted master."""

from __future__ import annotations

import io
from typing import Any

from ganeti.cli import gnt_backup
from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_instance import GntInstanceTestCase
from tests.fakes.clirun import Run

EXPORT_FIELDS = {
    "node": {"name": "node", "title": "Node", "kind": "text", "doc": "Node name"},
    "export": {"name": "export", "title": "Export", "kind": "text", "doc": "Export name"},
}


class GntBackupTest(GntInstanceTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake.fielddefs[c.QR_EXPORT] = EXPORT_FIELDS
        self.fake.items[c.QR_EXPORT] = [
            {"node": "node1.example.com", "export": "web1.example.com"},
            {"node": "node2.example.com", "export": "web2.example.com"},
        ]

    def backup(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_backup.main(list(argv), stdout=out, stderr=err, environ={},
                               luxi_factory=lambda paths: self.fake)
        return Run(code, out.getvalue(), err.getvalue())

    def test_export(self):
        r = self.backup("export", "-n", "node2.example.com", "--long-sleep",
                        "--shutdown-timeout", "30", "web1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(self.op(), {
            "OP_ID": "OP_BACKUP_EXPORT", "instance_name": "web1.example.com",
            "target_node": "node2.example.com", "compress": "none", "shutdown": True,
            "shutdown_timeout": 30, "remove_instance": False,
            "ignore_remove_failures": False, "long_sleep": True})
        r = self.backup("export", "-n", "node2", "--noshutdown", "--remove-instance",
                        "--ignore-remove-failures", "web1.example.com")
        op = self.op()
        self.assertEqual((op["shutdown"], op["remove_instance"], op["ignore_remove_failures"]),
                         (False, True, True))
        self.assertEqual(self.fake.ops()[-1]["reason"][-1][:2],
                         ["gnt:client:gnt-backup", "export"])

    def test_export_needs_a_target_node(self):
        count = len(self.fake.ops())
        r = self.backup("export", "web1.example.com")
        self.assertEqual(r.code, 1)
        self.assertIn("Target node must be specified", r.err)
        self.assertEqual(len(self.fake.ops()), count)

    def test_import_takes_add_options(self):
        r = self.backup("import", "-t", "file", "-n", "node1.example.com", "--src-node",
                        "node2.example.com", "--src-dir", "web1.example.com",
                        "--no-name-check", "--no-ip-check", "web3.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        op = self.op()
        self.assertEqual((op["OP_ID"], op["mode"], op["instance_name"], op["pnode"],
                          op["disk_template"], op["src_node"], op["src_path"], op["disks"],
                          op["nics"], op["start"], op["name_check"]),
                         ("OP_INSTANCE_CREATE", "import", "web3.example.com",
                          "node1.example.com", "file", "node2.example.com",
                          "web1.example.com", [], [], False, False))
        self.assertNotIn("os_type", op)
        r = self.backup("import", "-n", "node1", "--disk", "0:size=1G", "--net", "0:ip=auto",
                        "--identify-defaults", "web3.example.com")
        op = self.op()
        self.assertEqual((op["disks"], op["nics"], op["identify_defaults"]),
                         ([{"size": 1024}], [{"ip": "auto"}], True))
        self.assertNotIn("src_node", op)

    def test_list(self):
        r = self.backup("list")
        self.assertEqual(r.code, 0)
        self.assertEqual(r.out.splitlines(), [
            "Node              Export",
            "node1.example.com web1.example.com",
            "node2.example.com web2.example.com"])
        self.backup("list", "-n", "node1.example.com", "--no-headers")
        self.assertEqual(self.fake.calls[-1][1][2], ["|", ["==", "node",
                                                           "node1.example.com"]])

    def test_remove(self):
        r = self.backup("remove", "web1.example.com")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.op(), {"OP_ID": "OP_BACKUP_REMOVE",
                                     "instance_name": "web1.example.com"})

    def test_master_error_is_shown(self):
        def fail(op: dict[str, Any]) -> Any:
            raise errors.OpPrereqError("No export found for relative path x",
                                       errors.ECODE_INVAL)
        self.fake.results["OP_INSTANCE_CREATE"] = fail
        r = self.backup("import", "-t", "file", "-n", "node1", "--src-dir", "x",
                        "web3.example.com")
        self.assertEqual(r.code, 1)
        self.assertIn("No export found for relative path x", r.err)
