"""gnt-cluster verify and redist-conf: against a scripted master (several verify jobs,
failures) and end to end against a whole master daemon on a fake clock."""

from __future__ import annotations

import io
import os
import time
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_cluster
from ganeti.cli.framework import build_parser
from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_node import NodesCliTestCase, ScriptedMaster, run
from tests.fakes.clirun import Run

T1, T2 = 1800000000, 1800000005


def parse_verify(*argv: str) -> Any:
    parser = build_parser("gnt-cluster", "", gnt_cluster.COMMANDS, io.StringIO())
    return parser.parse_args(["verify", *argv])


def log(serial: int, seconds: int, message: str) -> list[Any]:
    return [serial, [seconds, 0], c.ELOG_MESSAGE, message]


class VerifyOpcodeTest(SynchronousTestCase):
    def test_defaults(self):
        self.assertEqual(gnt_cluster.verify_opcode(parse_verify()), {
            "OP_ID": "OP_CLUSTER_VERIFY", "verbose": False, "error_codes": False,
            "debug_simulate_errors": False, "skip_checks": [], "ignore_errors": [],
            "group_name": None, "verify_clutter": False})

    def test_every_option(self):
        opts = parse_verify("-v", "--error-codes", "--debug-simulate-errors",
                            "--no-nplus1-mem", "-I", "ENODEVERSION", "--ignore-errors",
                            "ECLUSTERCFG", "-g", "rack2", "--verify-ssh-clutter")
        self.assertEqual(gnt_cluster.verify_opcode(opts), {
            "OP_ID": "OP_CLUSTER_VERIFY", "verbose": True, "error_codes": True,
            "debug_simulate_errors": True, "skip_checks": [c.VERIFY_NPLUSONE_MEM],
            "ignore_errors": ["ENODEVERSION", "ECLUSTERCFG"], "group_name": "rack2",
            "verify_clutter": True})

    def test_no_submit_option(self):
        # as in Ganeti: verify always waits for its jobs
        r = run(gnt_cluster, ScriptedMaster(), "verify", "--submit")
        self.assertEqual(r.code, 1)
        self.assertIn("unrecognized arguments: --submit", r.err)


class VerifyTest(SynchronousTestCase):
    """OP_CLUSTER_VERIFY answers with two jobs (config, one group), as in Ganeti."""

    def setUp(self) -> None:
        self.fake = ScriptedMaster()
        self.outcome: dict[str, Any] = {"OP_CLUSTER_VERIFY_CONFIG": True,
                                         "OP_CLUSTER_VERIFY_GROUP": True}
        for op_id in self.outcome:
            self.fake.results[op_id] = self._result(op_id)
        self.fake.results["OP_CLUSTER_VERIFY"] = self._verify
        self.submitted: list[list[Any]] = []

    def _result(self, op_id: str) -> Any:
        def result(op: dict[str, Any]) -> Any:
            outcome = self.outcome[op_id]
            if isinstance(outcome, Exception):
                raise outcome
            return outcome
        return result

    def _verify(self, op: dict[str, Any]) -> Any:
        config = self.fake._submit([{"OP_ID": "OP_CLUSTER_VERIFY_CONFIG"}])
        group = self.fake._submit([{"OP_ID": "OP_CLUSTER_VERIFY_GROUP",
                                    "group_name": "default"}])
        self.fake.logs[config] = [log(1, T1, "* Verifying cluster config"),
                                  log(2, T1, "* Verifying all nodes belong to an existing "
                                             "group")]
        self.fake.logs[group] = [log(1, T2, "* Verifying group 'default'"),
                                 log(2, T2, "* Verifying node status")]
        return {"jobs": [[True, config], [True, group], *self.submitted]}

    def verify(self, *argv: str) -> Run:
        return run(gnt_cluster, self.fake, "verify", *argv)

    def test_all_well(self):
        r = self.verify()
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "Submitted jobs 2, 3\n"
                                "Waiting for job 2 ...\n"
                                f"{time.ctime(T1)} * Verifying cluster config\n"
                                f"{time.ctime(T1)} * Verifying all nodes belong to an "
                                "existing group\n"
                                "Waiting for job 3 ...\n"
                                f"{time.ctime(T2)} * Verifying group 'default'\n"
                                f"{time.ctime(T2)} * Verifying node status\n")
        self.assertEqual(self.fake.ops()[0]["OP_ID"], "OP_CLUSTER_VERIFY")
        self.assertEqual(self.fake.ops()[0]["reason"][0][:2],
                         ["gnt:client:gnt-cluster", "verify"])
        # each job is followed to its end, then its result read
        self.assertEqual(self.fake.methods().count("QueryJobs"), 3)

    def test_errors_found(self):
        self.outcome["OP_CLUSTER_VERIFY_GROUP"] = False
        r = self.verify()
        self.assertEqual((r.code, r.err), (1, ""))
        self.assertIn("Waiting for job 3 ...\n", r.out)
        self.assertNotIn("failed", r.out)

    def test_a_job_fails(self):
        self.outcome["OP_CLUSTER_VERIFY_CONFIG"] = errors.OpExecError("config unreadable")
        r = self.verify()
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Job 2 has failed: Failure: command execution error: "
                                "config unreadable\n")
        self.assertTrue(r.out.endswith("Waiting for job 3 ...\n"
                                       f"{time.ctime(T2)} * Verifying group 'default'\n"
                                       f"{time.ctime(T2)} * Verifying node status\n"
                                       "1 job(s) failed while verifying the cluster.\n"),
                        r.out)

    def test_a_job_not_submitted(self):
        self.submitted = [[False, "queue full"]]
        r = self.verify()
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failed to submit job: queue full\n")
        self.assertIn("1 job(s) failed while verifying the cluster.\n", r.out)

    def test_the_verify_opcode_fails(self):
        def refuse(op: dict[str, Any]) -> Any:
            raise errors.OpPrereqError("Group 'rack9' not found", errors.ECODE_NOENT)
        self.fake.results["OP_CLUSTER_VERIFY"] = refuse
        r = self.verify("-g", "rack9")
        self.assertEqual((r.code, r.out), (1, ""))
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: Group "
                                "'rack9' not found (error type: unknown_entity)\n")


class RedistConfTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = ScriptedMaster()

    def redist(self, *argv: str) -> Run:
        return run(gnt_cluster, self.fake, "redist-conf", *argv)

    def test_waits_for_the_job(self):
        r = self.redist("--dry-run")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        self.assertEqual(self.fake.methods(), ["SubmitJob", "WaitForJobChange", "QueryJobs"])
        (op,) = self.fake.ops()
        self.assertEqual((op["OP_ID"], op["dry_run"]), ("OP_CLUSTER_REDIST_CONF", True))

    def test_submit(self):
        r = self.redist("--submit")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 1\n"))
        self.assertEqual(self.fake.methods(), ["SubmitJob"])

    def test_yes_do_it_uses_the_drained_queue(self):
        r = self.redist("--yes-do-it", "--priority", "high")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(self.fake.methods()[0], "SubmitJobToDrainedQueue")
        self.assertEqual(self.fake.ops()[0]["priority"], c.OP_PRIO_HIGH)

    def test_failure(self):
        def fail(op: dict[str, Any]) -> Any:
            raise errors.OpExecError("node2: upload failed")
        self.fake.results["OP_CLUSTER_REDIST_CONF"] = fail
        r = self.redist()
        self.assertEqual((r.code, r.err),
                         (1, "Failure: command execution error: node2: upload failed\n"))


class HelpTest(SynchronousTestCase):
    def test_new_commands_have_help(self):
        for name, option in (("verify", "--no-nplus1-mem"), ("redist-conf", "--yes-do-it")):
            r = run(gnt_cluster, ScriptedMaster(), name, "--help")
            self.assertEqual(r.code, 0)
            self.assertIn(option, r.out)


# --- end to end: a whole master daemon, node daemons in process -------------------

class ClusterNodesEndToEndTest(NodesCliTestCase):
    def cluster(self, *argv: str) -> Run:
        return self.run_tool(gnt_cluster, *argv)

    def test_verify_clean(self):
        self.add_node(2)
        self.assertEqual(self.cluster("redist-conf").code, 0)
        # this fake master has no certificates nor file storage directory (see
        # tests/master/test_lu_verify.py for a cluster set up as init leaves it)
        r = self.cluster("verify", "-I", "ECLUSTERCERT", "-I", "ECLUSTERCLIENTCERT",
                         "-I", "ECLUSTERFILECHECK", "-I", "ENODEFILESTORAGEPATHUNUSABLE")
        self.assertEqual((r.code, r.err), (0, ""), r.out)
        lines = r.out.splitlines()
        self.assertRegex(lines[0], r"^Submitted jobs \d+, \d+$")
        config_job, group_job = (int(j) for j in lines[0][len("Submitted jobs "):].split(","))
        self.assertEqual(lines[1], f"Waiting for job {config_job} ...")
        self.assertIn(f"Waiting for job {group_job} ...", lines)
        self.assertTrue(any(line.endswith("* Verifying cluster config") for line in lines))

    def test_verify_reports_a_node_that_is_down(self):
        self.add_node(2)
        self.net.down.add("node2.test")
        r = self.cluster("verify")
        self.assertEqual(r.code, 1, r.out + r.err)
        self.assertIn("node2.test", r.out)
        self.assertIn("ERROR", r.out)
        self.assertEqual(r.err, "")  # the jobs ran; they found errors

    def test_verify_simulated_errors_and_unknown_group(self):
        r = self.cluster("verify", "--debug-simulate-errors")
        self.assertEqual(r.code, 1, r.out + r.err)
        r = self.cluster("verify", "-g", "nowhere")
        self.assertEqual(r.code, 1)
        self.assertIn("nowhere", r.err)

    def test_redist_conf(self):
        self.add_node(2)
        os.remove(self.net.paths("node2.test").config_file)
        r = self.cluster("redist-conf")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(os.path.exists(self.net.paths("node2.test").config_file))
        r = self.cluster("redist-conf", "--submit", "--print-jobid")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.err, f"JobID: {r.out.strip()}\n")
