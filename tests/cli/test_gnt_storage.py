"""gnt-storage (Ganeti 3.0's ExtStorage tool): OP_EXT_STORAGE_DIAGNOSE and its output,
against a scripted master and against a whole master (which knows no providers)."""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_storage
from tests.cli.test_gnt_node import run, two_nodes
from tests.fakes.clirun import MasterCliTestCase

ROWS = {"name": ["rbd2", "nfs"],
        "node_status": [
            {"node1.example.com": [["/usr/share/ganeti/extstorage/rbd2", True, "",
                                    [["pool", "the pool"]]]],
             "node2.example.com": []},
            {"node1.example.com": [["/x/nfs", False, "missing create script", []]]}],
        "nodegroup_status": [{"default": True}, {"default": False}],
        "parameters": [[["pool", "the pool"]], []]}


def rows(op: dict[str, Any]) -> list[list[Any]]:
    return [[ROWS[f][i] for f in op["output_fields"]] for i in range(2)]


class ScriptedTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = two_nodes()
        self.fake.results["OP_EXT_STORAGE_DIAGNOSE"] = rows

    def test_diagnose(self):
        r = run(gnt_storage, self.fake, "diagnose")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out.splitlines(), [
            "Provider: rbd2", "---",
            "  Node: node1.example.com, status: valid (path: "
            "/usr/share/ganeti/extstorage/rbd2) [parameters: pool]",
            "  Node: node2.example.com, status: ExtStorage provider not found",
            "  --", "  For nodegroup: default --> valid", "",
            "Provider: nfs", "---",
            "  Node: node1.example.com, status: invalid - missing create script (path: "
            "/x/nfs) [no parameters]",
            "  --", "  For nodegroup: default --> invalid", ""])
        (op,) = self.fake.ops()
        self.assertEqual((op["OP_ID"], op["output_fields"], op["names"]),
                         ("OP_EXT_STORAGE_DIAGNOSE",
                          ["name", "node_status", "nodegroup_status"], []))

    def test_info(self):
        r = run(gnt_storage, self.fake, "info", "nfs", "nope")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "nfs:\n  - Invalid for all nodegroups\n\nnope: Not Found\n\n")
        r = run(gnt_storage, self.fake, "info")
        self.assertIn("rbd2:\n  - Valid for nodegroups:\n      default\n"
                      "  - Supported parameters:\n      pool: the pool\n\n", r.out)


class NoProvidersTest(MasterCliTestCase):
    """Our master has no ExtStorage providers: Ganeti's answer to an empty list."""

    def test_diagnose_and_info_fail_without_providers(self):
        r = self.run_tool(gnt_storage, "diagnose")
        self.assertEqual((r.code, r.out, r.err),
                         (1, "", "Can't get the list of ExtStorage providers\n"))
        r = self.run_tool(gnt_storage, "info")
        self.assertEqual((r.code, r.out, r.err),
                         (1, "", "Can't get the ExtStorage providers list\n"))
        self.assertEqual(self.job_field(1, "status"), "success")
        (op,) = self.job_field(1, "ops")
        self.assertEqual(op["OP_ID"], "OP_EXT_STORAGE_DIAGNOSE")

    def test_unknown_field_and_version(self):
        status = self.master.finish(self.submit({"OP_ID": "OP_EXT_STORAGE_DIAGNOSE",
                                                 "output_fields": ["name", "colour"]}))
        self.assertEqual(status[0], "error")
        self.assertIn("Unknown output fields selected: colour", str(status[1]))
        r = self.run_tool(gnt_storage, "--version")
        self.assertEqual(r.code, 0)
        self.assertTrue(r.out.startswith("gnt-storage (ganeti-twisted "), r.out)
