"""gnt-instance failover/migrate and gnt-node migrate/failover against a scripted
master: the opcodes (checked against their declarations), Ganeti 3.0's questions,
checks, output and exit codes (as Debian's tools print them on a real cluster)."""

from __future__ import annotations

import io
from typing import Any

from ganeti.cli import gnt_node
from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_instance import GntInstanceTestCase
from tests.fakes.clirun import Run

PRIVATE = ("reason", "debug_level", "dry_run", "priority")


class MigrationCliCase(GntInstanceTestCase):
    def node(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_node.main(list(argv), stdout=out, stderr=err, environ={},
                             luxi_factory=lambda paths: self.fake)
        return Run(code, out.getvalue(), err.getvalue())

    def ops_of(self, op_id: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in op.items() if k not in PRIVATE}
                for op in self.fake.ops() if op["OP_ID"] == op_id]


class InstanceFailoverTest(MigrationCliCase):
    QUESTION = ("Failover will happen to image web1. This requires a shutdown of the "
                "instance. Continue?")

    def test_asks_then_sends_the_defaults(self):
        self.answer = False
        r = self.inst("failover", "web1")
        self.assertEqual((r.code, r.out, r.err), (1, "", ""))
        self.assertEqual(self.questions, [self.QUESTION])
        self.assertEqual(self.fake.ops(), [])
        self.answer = True
        r = self.inst("failover", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": "web1",
            "ignore_consistency": False, "ignore_ipolicy": False,
            "shutdown_timeout": c.DEFAULT_SHUTDOWN_TIMEOUT})

    def test_every_option(self):
        r = self.inst("failover", "-f", "--shutdown-timeout", "30", "-n", "node2",
                      "--ignore-ipolicy", "--cleanup", "--dry-run", "--priority", "high",
                      "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.questions, [])
        op = self.fake.ops()[-1]
        self.assertEqual((op["dry_run"], op["priority"]), (True, c.OP_PRIO_HIGH))
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": "web1",
            "ignore_consistency": False, "ignore_ipolicy": True, "target_node": "node2",
            "shutdown_timeout": 30})
        r = self.inst("failover", "-f", "-I", "hail", "web1")
        self.assertEqual(self.op()["iallocator"], "hail")

    def test_ignore_consistency_asks_even_when_forced(self):
        r = self.inst("failover", "-f", "--ignore-consistency", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.questions, [
            "To failover instance web1, the source node must be marked offline first. "
            "Is this already the case?"])
        self.assertTrue(self.op()["ignore_consistency"])
        self.answer = False
        r = self.inst("failover", "-f", "--ignore-consistency", "web1")
        self.assertEqual(r.code, 1)
        self.assertEqual(len(self.fake.ops()), 1)

    def test_refusals(self):
        r = self.inst("failover", "-f", "-n", "node2", "-I", "hail", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Specify either an iallocator (-I), or a target node (-n) but not "
                      "both", r.err)
        r = self.inst("failover", "nosuch")
        self.assertEqual(r.code, 1)
        self.assertIn("(error type: unknown_entity)", r.err)
        self.assertEqual((self.fake.ops(), self.questions), ([], []))

    def test_master_refusal_and_submit(self):
        self.refuse("OP_INSTANCE_FAILOVER", errors.OpPrereqError(
            "Instance is not running", errors.ECODE_STATE))
        r = self.inst("failover", "-f", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Instance is not running (error type: wrong_state)", r.err)
        r = self.inst("failover", "-f", "--submit", "--print-jobid", "web1")
        self.assertEqual((r.code, r.out, r.err), (0, "2\n", "JobID: 2\n"))


class InstanceMigrateTest(MigrationCliCase):
    def test_asks_then_sends_the_defaults(self):
        self.answer = False
        r = self.inst("migrate", "web1")
        self.assertEqual(r.code, 1)
        self.answer = True
        r = self.inst("migrate", "--cleanup", "web1")
        self.assertEqual(self.questions, [
            "Instance web1 will be migrated. Note that migration might impact the "
            "instance if anything goes wrong (e.g. due to bugs in the hypervisor). "
            "Continue?",
            "Instance web1 will be recovered from a failed migration. Note that the "
            "migration procedure (including cleanup) might impact the instance if "
            "anything goes wrong (e.g. due to bugs in the hypervisor). Continue?"])
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": "web1", "cleanup": True,
            "allow_failover": False, "allow_runtime_changes": True,
            "ignore_ipolicy": False, "ignore_hvversions": False})

    def test_modes_and_options(self):
        r = self.inst("migrate", "-f", "--non-live", "-n", "node2", "--allow-failover",
                      "--ignore-ipolicy", "--ignore-hvversions", "--no-runtime-changes",
                      "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": "web1",
            "mode": c.HT_MIGRATION_NONLIVE, "target_node": "node2", "cleanup": False,
            "allow_failover": True, "allow_runtime_changes": False,
            "ignore_ipolicy": True, "ignore_hvversions": True})
        self.inst("migrate", "-f", "--migration-mode", "live", "-I", "hail", "web1")
        self.assertEqual((self.op()["mode"], self.op()["iallocator"]), ("live", "hail"))

    def test_refusals(self):
        r = self.inst("migrate", "-f", "--non-live", "--migration-mode", "live", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Only one of the --non-live and --migration-mode options can be "
                      "passed (error type: wrong_input)", r.err)
        r = self.inst("migrate", "-f", "-n", "a", "-I", "b", "web1")
        self.assertIn("(-n) but not both (error type: wrong_input)", r.err)
        r = self.inst("migrate", "--migration-mode", "fast", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("invalid choice: 'fast'", r.err)
        self.assertEqual(self.fake.ops(), [])

    def test_job_log_is_shown(self):
        self.fake.logs[1] = [[1, [0, 0], c.ELOG_MESSAGE,
                              "Migrating instance web1.example.com"]]
        r = self.inst("migrate", "-f", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Migrating instance web1.example.com\n", r.out)


class NodeMigrateTest(MigrationCliCase):
    def setUp(self) -> None:
        super().setUp()

        def node_migrate(op: dict[str, Any]) -> Any:
            ids = [self.fake._submit([{"OP_ID": "OP_INSTANCE_MIGRATE",
                                       "instance_name": name}])
                   for name in ("db1.example.com", "web1.example.com")]
            return {"jobs": [[True, job_id] for job_id in ids]}
        self.fake.results["OP_NODE_MIGRATE"] = node_migrate

    def test_asks_follows_the_jobs_and_reports(self):
        self.answer = False
        r = self.node("migrate", "node1.example.com")
        self.assertEqual(r.code, c.EXIT_CONFIRMATION)
        self.assertEqual(self.questions, [
            "Migrate instance(s) db1.example.com, web1.example.com?"])
        self.answer = True
        r = self.node("migrate", "node1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "Submitted jobs 2, 3\nWaiting for job 2 ...\n"
                                "Waiting for job 3 ...\nAll instances migrated "
                                "successfully.\n")
        self.assertEqual(self.ops_of("OP_NODE_MIGRATE"), [{
            "OP_ID": "OP_NODE_MIGRATE", "node_name": "node1.example.com",
            "allow_runtime_changes": True, "ignore_ipolicy": False}])

    def test_options_and_failures(self):
        self.refuse("OP_INSTANCE_MIGRATE", errors.OpExecError("Could not migrate"))
        r = self.node("migrate", "-f", "--non-live", "-n", "node2.example.com",
                      "--no-runtime-changes", "--ignore-ipolicy", "node1.example.com")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.out.endswith("There were 2 errors during the node "
                                       "migration.\n"), r.out)
        self.assertIn("Job 2 has failed: ", r.err)
        self.assertEqual(self.ops_of("OP_NODE_MIGRATE"), [{
            "OP_ID": "OP_NODE_MIGRATE", "node_name": "node1.example.com",
            "mode": "non-live", "target_node": "node2.example.com", "ignore_ipolicy": True,
            "allow_runtime_changes": False}])

    def test_nothing_to_do_unknown_node_and_submit(self):
        self.fake.items["node"][1]["pinst_list"] = []
        r = self.node("migrate", "node2.example.com")
        self.assertEqual(r, Run(0, "No primary instances on node node2.example.com, "
                                   "exiting.\n", ""))
        r = self.node("migrate", "nosuch")
        self.assertEqual(r.code, 1)
        self.assertIn("Node 'nosuch' does not exist (error type: unknown_entity)", r.err)
        r = self.node("migrate", "-f", "--submit", "node1.example.com")
        self.assertEqual(r.code, 0)
        self.assertEqual(r.err, f"JobID: {self.fake.next_id - 3}\n")
        self.assertNotIn("Waiting", r.out)


class NodeFailoverTest(MigrationCliCase):
    def test_asks_then_one_job_per_instance(self):
        self.answer = False
        r = self.node("failover", "node1.example.com")
        self.assertEqual(r.code, 2)
        self.assertEqual(self.questions, [
            "Fail over instance(s) 'db1.example.com','web1.example.com'?"])
        self.answer = True
        r = self.node("failover", "--ignore-consistency", "-I", "hail",
                      "node1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "Submitted jobs 1, 2\n"
                                "Waiting for job 1 for db1.example.com ...\n"
                                "Waiting for job 2 for web1.example.com ...\n"
                                "All 2 instance(s) failed over successfully.\n")
        self.assertEqual(self.ops_of("OP_INSTANCE_FAILOVER"), [
            {"OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": name,
             "ignore_consistency": True, "iallocator": "hail"}
            for name in ("db1.example.com", "web1.example.com")])
        self.assertEqual([m for m in self.fake.methods() if m.startswith("Submit")],
                         ["SubmitManyJobs"])

    def test_errors_are_counted_and_exit_0(self):
        def refuse_db1(op: dict[str, Any]) -> Any:
            if op["instance_name"].startswith("db1"):
                raise errors.OpExecError("Could not shutdown instance")
        self.fake.results["OP_INSTANCE_FAILOVER"] = refuse_db1
        r = self.node("failover", "-f", "node1.example.com")
        self.assertEqual(r.code, 0)
        self.assertTrue(r.out.endswith("There were errors during the failover:\n"
                                       "1 error(s) out of 2 instance(s).\n"), r.out)
        self.assertIn("Job 1 for db1.example.com has failed", r.err)

    def test_nothing_to_do(self):
        self.fake.items["node"][1]["pinst_list"] = []
        r = self.node("failover", "node2.example.com")
        self.assertEqual(r, Run(0, "", "No primary instances on node node2.example.com, "
                                       "exiting.\n"))
