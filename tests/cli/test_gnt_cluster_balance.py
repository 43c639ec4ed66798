"""gnt-cluster balance against a scripted master: the allocator's balance answer
printed as hbal prints its solution, one job per move with hail's opcodes, each
depending on the previous one's success; questions, refusals and exit codes."""

from __future__ import annotations

import io
import json
from typing import Any

from ganeti.cli import gnt_cluster
from ganeti.cli.gnt_cluster_balance import move_jobs
from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_migration import MigrationCliCase
from tests.fakes.clirun import Run

ANSWER = {"success": True, "info": "", "result": {
    "initial_score": 5.5, "final_score": 1.25, "moves": [
        ["web1.example.com", ["node2.example.com"], "failover-to-any", 3.0],
        ["db1.example.com", ["node1.example.com", "node3.example.com"],
         "replace-secondary", 1.25]]}}


class BalanceTest(MigrationCliCase):
    def setUp(self) -> None:
        super().setUp()
        self.answer_text = json.dumps(ANSWER)
        self.fake.results["OP_TEST_ALLOCATOR"] = lambda op: self.answer_text

    def cluster(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_cluster.main(list(argv), stdout=out, stderr=err, environ={},
                                luxi_factory=lambda paths: self.fake)
        return Run(code, out.getvalue(), err.getvalue())

    def test_prints_asks_and_executes_the_moves(self):
        self.answer = False
        r = self.cluster("balance")
        self.assertEqual(r.code, c.EXIT_CONFIRMATION)
        self.assertEqual(self.questions, ["Execute 2 move(s)?"])
        self.assertEqual(r.out.splitlines(), [
            "Initial score: 5.50000000",
            "   1. web1.example.com => node2.example.com  3.00000000 a=failover-to-any",
            "   2. db1.example.com => node1.example.com:node3.example.com  1.25000000 "
            "a=replace-secondary",
            "Cluster score improved from 5.50000000 to 1.25000000"])
        (query,) = self.ops_of("OP_TEST_ALLOCATOR")
        self.assertEqual({k: query[k] for k in ("mode", "direction", "iallocator", "count",
                                                "min_gain")},
                         {"mode": "balance", "direction": "out", "iallocator": "ganeti-place",
                          "count": 0, "min_gain": 0.01})
        self.answer = True
        r = self.cluster("balance", "-I", "hail", "--max-moves", "2", "-G", "default")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(r.out.endswith("All moves executed successfully.\n"), r.out)
        migrate, replace = self.ops_of("OP_INSTANCE_MIGRATE")[-1], \
            self.ops_of("OP_INSTANCE_REPLACE_DISKS")[-1]
        self.assertEqual((migrate["instance_name"], migrate["target_node"],
                          migrate.get("depends")), ("web1.example.com", "node2.example.com",
                                                    None))
        self.assertEqual((replace["instance_name"], replace["remote_node"], replace["mode"],
                          replace["depends"]),
                         ("db1.example.com", "node3.example.com", "replace_new_secondary",
                          [[-1, ["success"]]]))
        query = self.ops_of("OP_TEST_ALLOCATOR")[-1]
        self.assertEqual((query["iallocator"], query["count"], query["group_name"]),
                         ("hail", 2, "default"))

    def test_print_only_nothing_to_do_and_failures(self):
        r = self.cluster("balance", "--print-only")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.ops_of("OP_INSTANCE_MIGRATE"), [])
        self.assertEqual(self.questions, [])
        self.answer_text = json.dumps({"success": True, "info": "", "result": {
            "initial_score": 0.5, "final_score": 0.5, "moves": []}})
        self.assertEqual(self.cluster("balance"),
                         Run(0, "Cluster is already well balanced (score 0.50000000).\n", ""))
        self.answer_text = json.dumps({"success": False, "info": "no nodes", "result": None})
        self.assertEqual(self.cluster("balance"),
                         Run(1, "", "Can't compute the moves with 'ganeti-place': no "
                                    "nodes\n"))
        self.answer_text = json.dumps(ANSWER)
        self.refuse("OP_INSTANCE_MIGRATE", errors.OpExecError("Could not migrate"))
        r = self.cluster("balance", "-f")
        self.assertEqual(r.code, 1)
        self.assertTrue(r.out.endswith("There were 1 errors during the balancing.\n"), r.out)


class MoveJobsTest(MigrationCliCase):
    def test_every_kind_has_its_target(self):
        moves: list[Any] = [
            ["a", ["n2", "n1"], "failover", 1.0],
            ["b", ["n3", "n2"], "replace-primary", 1.0],
            ["c", ["n3", "n1"], "replace-and-failover", 1.0],
            ["d", ["n2", "n3"], "failover-and-replace", 1.0]]
        jobs = move_jobs(moves)
        self.assertEqual([[op["OP_ID"] for op in job] for job in jobs], [
            ["OP_INSTANCE_MIGRATE"],
            ["OP_INSTANCE_MIGRATE", "OP_INSTANCE_REPLACE_DISKS", "OP_INSTANCE_MIGRATE"],
            ["OP_INSTANCE_REPLACE_DISKS", "OP_INSTANCE_MIGRATE"],
            ["OP_INSTANCE_MIGRATE", "OP_INSTANCE_REPLACE_DISKS"]])
        self.assertNotIn("target_node", jobs[0][0])
        self.assertEqual(jobs[1][1]["remote_node"], "n3")
        self.assertEqual(jobs[2][0]["remote_node"], "n3")
        self.assertEqual(jobs[3][1]["remote_node"], "n3")
        self.assertEqual([job[0].get("depends") for job in jobs],
                         [None] + [[[-1, ["success"]]]] * 3)
