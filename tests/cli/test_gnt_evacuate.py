"""gnt-node evacuate, gnt-group evacuate, gnt-instance change-group and move against a
scripted master: the opcodes (checked against their declarations), Ganeti 3.0's
questions, output and exit codes."""

from __future__ import annotations

import io
from typing import Any

from ganeti.cli import gnt_group
from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_migration import MigrationCliCase
from tests.fakes.clirun import Run


class EvacCliCase(MigrationCliCase):
    def setUp(self) -> None:
        super().setUp()

        def submits(names: tuple[str, ...]) -> Any:
            def result(op: dict[str, Any]) -> Any:
                ids = [self.fake._submit([{"OP_ID": "OP_INSTANCE_MIGRATE",
                                           "instance_name": name}]) for name in names]
                return {"jobs": [[True, job_id] for job_id in ids]}
            return result
        self.fake.results["OP_NODE_EVACUATE"] = submits(("db1.example.com",
                                                         "web1.example.com"))
        self.fake.results["OP_GROUP_EVACUATE"] = submits(("db1.example.com",
                                                          "web1.example.com"))
        self.fake.results["OP_INSTANCE_CHANGE_GROUP"] = submits(("web1.example.com",))

    def group(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_group.main(list(argv), stdout=out, stderr=err, environ={},
                              luxi_factory=lambda paths: self.fake)
        return Run(code, out.getvalue(), err.getvalue())


class NodeEvacuateTest(EvacCliCase):
    def test_all_asks_follows_the_jobs_and_reports(self):
        self.answer = False
        r = self.node("evacuate", "node1.example.com")
        self.assertEqual(r.code, c.EXIT_CONFIRMATION)
        self.assertEqual(self.questions, [
            "Relocate instance(s) db1.example.com, web1.example.com, web2.example.com from "
            "node(s) node1.example.com?"])
        self.answer = True
        r = self.node("evacuate", "node1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "Submitted jobs 2, 3\nWaiting for job 2 ...\n"
                                "Waiting for job 3 ...\nAll instances evacuated "
                                "successfully.\n")
        self.assertEqual(self.ops_of("OP_NODE_EVACUATE"), [{
            "OP_ID": "OP_NODE_EVACUATE", "node_name": "node1.example.com", "mode": "all",
            "early_release": False, "ignore_soft_errors": False}])

    def test_primary_and_secondary_only(self):
        r = self.node("evacuate", "-p", "node1.example.com")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.questions[-1], "Relocate instance(s) db1.example.com, "
                                             "web1.example.com from node(s) "
                                             "node1.example.com?")
        self.assertEqual(self.ops_of("OP_NODE_EVACUATE")[-1]["mode"], "primary-only")
        r = self.node("evacuate", "-s", "-I", "hail", "--early-release",
                      "--ignore-soft-errors", "node1.example.com")
        self.assertEqual(self.questions[-1], "Relocate instance(s) web2.example.com from "
                                             "node(s) node1.example.com?")
        self.assertEqual(self.ops_of("OP_NODE_EVACUATE")[-1], {
            "OP_ID": "OP_NODE_EVACUATE", "node_name": "node1.example.com",
            "mode": "secondary-only", "iallocator": "hail", "early_release": True,
            "ignore_soft_errors": True})

    def test_new_secondary_implies_secondary_only(self):
        r = self.node("evacuate", "-f", "-p", "-n", "node2.example.com", "node1.example.com")
        self.assertEqual(r.code, 0)
        self.assertEqual(r.err, "New secondary node given (disabling iallocator), hence "
                                "evacuating secondary instances only.\n")
        self.assertEqual(self.ops_of("OP_NODE_EVACUATE")[-1], {
            "OP_ID": "OP_NODE_EVACUATE", "node_name": "node1.example.com",
            "mode": "secondary-only", "remote_node": "node2.example.com",
            "early_release": False, "ignore_soft_errors": False})

    def test_refusals_nothing_to_do_failures_and_submit(self):
        r = self.node("evacuate", "-p", "-s", "node1.example.com")
        self.assertEqual(r.code, 1)
        self.assertIn("Only one of the --primary-only and --secondary-only options can be "
                      "passed", r.err)
        r = self.node("evacuate", "-s", "node2.example.com")
        self.assertEqual(r, Run(0, "", "No instances to evacuate on node(s) "
                                       "node2.example.com, exiting.\n"))
        r = self.node("evacuate", "nosuch")
        self.assertEqual(r.code, 1)
        self.assertIn("Node 'nosuch' does not exist", r.err)
        self.refuse("OP_INSTANCE_MIGRATE", errors.OpExecError("Could not migrate"))
        r = self.node("evacuate", "-f", "-p", "node1.example.com")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.out.endswith("There were 2 errors during the evacuation.\n"), r.out)
        r = self.node("evacuate", "-f", "--submit", "node1.example.com")
        self.assertEqual(r.code, 0)
        self.assertTrue(r.err.startswith("JobID: "), r.err)
        self.assertNotIn("Waiting", r.out)


class GroupEvacuateTest(EvacCliCase):
    def test_options_and_output(self):
        r = self.group("evacuate", "--to", "rack2", "--to", "rack3", "-I", "hail",
                       "--early-release", "--sequential", "--force-failover", "default")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertTrue(r.out.endswith("All instances evacuated successfully.\n"), r.out)
        self.assertEqual(self.ops_of("OP_GROUP_EVACUATE"), [{
            "OP_ID": "OP_GROUP_EVACUATE", "group_name": "default",
            "target_groups": ["rack2", "rack3"], "iallocator": "hail", "early_release": True,
            "sequential": True, "force_failover": True}])
        self.refuse("OP_INSTANCE_MIGRATE", errors.OpExecError("Could not migrate"))
        r = self.group("evacuate", "default")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.out.endswith("There were 2 errors during the evacuation.\n"))
        self.assertEqual(self.ops_of("OP_GROUP_EVACUATE")[-1], {
            "OP_ID": "OP_GROUP_EVACUATE", "group_name": "default", "early_release": False,
            "sequential": False, "force_failover": False})


class ChangeGroupTest(EvacCliCase):
    def test_options_and_output(self):
        r = self.inst("change-group", "--to", "rack2", "web1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertTrue(r.out.endswith("Instance 'web1.example.com' changed group "
                                       "successfully.\n"), r.out)
        self.assertEqual(self.op(0), {
            "OP_ID": "OP_INSTANCE_CHANGE_GROUP", "instance_name": "web1.example.com",
            "target_groups": ["rack2"], "early_release": False})
        self.refuse("OP_INSTANCE_MIGRATE", errors.OpExecError("Could not migrate"))
        r = self.inst("change-group", "web1.example.com")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.out.endswith("There were 1 errors while changing group of "
                                       "instance 'web1.example.com'.\n"), r.out)


class MoveTest(EvacCliCase):
    QUESTION = ("Instance web1.example.com will be moved. This requires a shutdown of the "
                "instance. Continue?")

    def test_asks_then_sends(self):
        self.answer = False
        r = self.inst("move", "-n", "node2.example.com", "web1.example.com")
        self.assertEqual((r.code, r.out), (1, ""))
        self.assertEqual(self.questions, [self.QUESTION])
        self.assertEqual(self.fake.ops(), [])
        self.answer = True
        r = self.inst("move", "-n", "node2.example.com", "web1.example.com")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_MOVE", "instance_name": "web1.example.com",
            "target_node": "node2.example.com", "compress": "none",
            "shutdown_timeout": c.DEFAULT_SHUTDOWN_TIMEOUT, "ignore_consistency": False,
            "ignore_ipolicy": False})

    def test_every_option(self):
        r = self.inst("move", "-f", "-n", "node2.example.com", "--compress", "gzip",
                      "--shutdown-timeout", "7", "--ignore-consistency", "--ignore-ipolicy",
                      "--dry-run", "web1.example.com")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.questions, [])
        self.assertTrue(self.fake.ops()[-1]["dry_run"])
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_MOVE", "instance_name": "web1.example.com",
            "target_node": "node2.example.com", "compress": "gzip", "shutdown_timeout": 7,
            "ignore_consistency": True, "ignore_ipolicy": True})
        self.refuse("OP_INSTANCE_MOVE", errors.OpPrereqError(
            "Instance disk 0 has disk type sharedfile and is not suitable for copying",
            errors.ECODE_STATE))
        r = self.inst("move", "-f", "-n", "node2.example.com", "web1.example.com")
        self.assertEqual(r.code, 1)
        self.assertIn("not suitable for copying", r.err)
