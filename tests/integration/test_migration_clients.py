"""Moving instances seen through Debian's Ganeti 3.0 clients, on our two-node virtual
cluster (fake hypervisor, a diskless instance): Debian's ``gnt-instance migrate`` and
``failover``, ``gnt-node migrate`` and ``failover``, and Debian's RAPI client's
``MigrateInstance``, ``FailoverInstance`` and ``MigrateNode``; after each, where the
instance runs (``gnt-instance list -o name,pnode,status``).

The expected outputs are those of a real Ganeti 3.0.2 cluster (Debian's packages,
``real_cluster_up.sh``, fake hypervisor, diskless instances), where for instance
``gnt-instance migrate -f`` logs "Migrating instance NAME", "* migrating instance to
NODE" and "* done", ``gnt-node migrate -f`` prints "Submitted jobs N", "Waiting for job
N ..." and "All instances migrated successfully.", ``gnt-node failover -f`` "All 1
instance(s) failed over successfully.", and RAPI's node migration job returns
``{"jobs": [[true, id]]}`` (``{"jobs": []}`` for a node without primary instances).
Tests run in name order on one cluster.
"""

from __future__ import annotations

import os
import re
import sys

from tests.integration.clustercase import needs_debian_tool, needs_rapi_client
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.test_rapi_compat import RapiClientCase, call

DEBIAN = "/usr/share/ganeti/3.0"
CHECKS = ("--no-name-check", "--no-ip-check")
INST = "move1.vcluster.test"


def without_dates(text):
    return [re.sub(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4} ", "", line)
            for line in text.splitlines()]


class MigrationClientsTest(RapiClientCase):
    PREFIX = "ganeti-migr-clients-"
    NODES = 2
    REQUIRES = (needs_rapi_client, needs_debian_tool("gnt-instance", "gnt-node"))

    # --- helpers --------------------------------------------------------------------

    def debian(self, tool, *argv):
        env = node_env(self.cluster.dir, self.cluster.master)
        return run([os.path.join(DEBIAN, tool), *argv], env=env, check=False, timeout=180)

    def ours(self, tool, *argv):
        env = node_env(self.cluster.dir, self.cluster.master)
        return run([sys.executable, os.path.join(ROOT, "bin", tool), *argv], env=env,
                   check=False, timeout=180)

    def ok(self, tool, *argv):
        r = self.debian(tool, *argv)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def where(self, name=INST):
        """``[name, primary node, status]`` as Debian's gnt-instance lists it."""
        return self.ok("gnt-instance", "list", "--no-headers", "-o", "name,pnode,status",
                       name).split()

    def finished(self, job_id):
        status, job = self.rapi(call("wait_job", job_id, 120.0), call("GetJobStatus", job_id))
        return status, job["opresult"][0]

    @property
    def node0(self):
        return self.cluster.nodes[0]

    @property
    def node1(self):
        return self.cluster.nodes[1]

    # --- Debian's gnt-instance ------------------------------------------------------

    def test_1_cli_migrate(self):
        self.ok("gnt-instance", "add", "-t", "diskless", "-o", "busybox", "-n", self.node0,
                "--no-install", *CHECKS, INST)
        self.ok("gnt-instance", "startup", INST)  # (not started without an install)
        self.assertEqual(self.where(), [INST, self.node0, "running"])
        lines = without_dates(self.ok("gnt-instance", "migrate", "-f", "-n", self.node1,
                                      INST))
        self.assertIn(f"Migrating instance {INST}", lines)
        self.assertIn(f"* migrating instance to {self.node1}", lines)
        self.assertEqual(lines[-1], "* done")
        self.assertEqual(self.where(), [INST, self.node1, "running"])

    def test_2_cli_migrate_refusals(self):
        # ours refuses alike: the same exit status and words (on one line, with the
        # error type after them, as all our tools print an OpPrereqError)
        for argv, words in (
                (["-n", self.node0, "-I", "hail"],
                 "Specify either an iallocator (-I), or a target node (-n) but not both"),
                (["--non-live", "--migration-mode", "live"],
                 "Only one of the --non-live and --migration-mode options can be passed")):
            theirs = self.debian("gnt-instance", "migrate", "-f", *argv, INST)
            mine = self.ours("gnt-instance", "migrate", "-f", *argv, INST)
            self.assertEqual((mine.returncode, theirs.returncode), (1, 1))
            self.assertIn("error type: wrong_input", theirs.stdout + theirs.stderr)
            self.assertIn(words, theirs.stdout + theirs.stderr)
            self.assertEqual(mine.stderr, "Failure: prerequisites not met for this "
                                          f"operation: {words} (error type: wrong_input)\n")
        self.assertEqual(self.where(), [INST, self.node1, "running"])

    def test_3_cli_failover(self):
        lines = without_dates(self.ok("gnt-instance", "failover", "-f", "-n", self.node0,
                                      INST))
        self.assertIn(f"Failover instance {INST}", lines)
        self.assertIn(f"* starting the instance on the target node {self.node0}", lines)
        self.assertEqual(self.where(), [INST, self.node0, "running"])

    # --- Debian's gnt-node ----------------------------------------------------------

    def test_4_node_migrate(self):
        out = self.ok("gnt-node", "migrate", "-f", "-n", self.node1, self.node0)
        lines = without_dates(out)
        self.assertRegex(lines[0], r"^Submitted jobs \d+$")
        self.assertRegex(lines[1], r"^Waiting for job \d+ \.\.\.$")
        self.assertIn(f"Migrating instance {INST}", lines)
        self.assertEqual(lines[-1], "All instances migrated successfully.")
        self.assertEqual(self.where(), [INST, self.node1, "running"])
        # nothing left on node0: Ganeti's message, exit 0
        for r in (self.debian("gnt-node", "migrate", "-f", self.node0),
                  self.ours("gnt-node", "migrate", "-f", self.node0)):
            self.assertEqual((r.returncode, r.stdout, r.stderr),
                             (0, f"No primary instances on node {self.node0}, exiting.\n",
                              ""))

    def test_5_node_failover(self):
        # on two nodes the allocator has one choice: node0
        out = self.ok("gnt-node", "failover", "-f", self.node1)
        lines = without_dates(out)
        self.assertRegex(lines[0], r"^Submitted jobs \d+$")
        self.assertRegex(lines[1], rf"^Waiting for job \d+ for {re.escape(INST)} \.\.\.$")
        self.assertEqual(lines[-1], "All 1 instance(s) failed over successfully.")
        self.assertEqual(self.where(), [INST, self.node0, "running"])

    # --- Debian's RAPI client -------------------------------------------------------

    def test_6_rapi(self):
        features, job = self.rapi(call("GetFeatures"),
                                  call("MigrateInstance", INST, target_node=self.node1))
        self.assertIn("node-migrate-reqv1", features)
        self.assertEqual(self.finished(job)[0], "success")
        self.assertEqual(self.where(), [INST, self.node1, "running"])
        (job,) = self.rapi(call("FailoverInstance", INST, target_node=self.node0))
        self.assertEqual(self.finished(job), ("success", None))  # as Ganeti's: None
        self.assertEqual(self.where(), [INST, self.node0, "running"])
        # the node: a job whose result lists the migration jobs it submitted
        (job,) = self.rapi(call("MigrateNode", self.node0, target_node=self.node1))
        status, result = self.finished(job)
        self.assertEqual(status, "success", result)
        ((submitted, child),) = result["jobs"]
        self.assertTrue(submitted)
        self.assertEqual(self.finished(child)[0], "success")
        self.assertEqual(self.where(), [INST, self.node1, "running"])
        (job,) = self.rapi(call("MigrateNode", self.node0))  # nothing left there
        self.assertEqual(self.finished(job), ("success", {"jobs": []}))
        # an unknown instance: Ganeti's error in the job
        (job,) = self.rapi(call("MigrateInstance", "nosuch.vcluster.test"))
        status, result = self.finished(job)
        self.assertEqual((status, result[0], result[1][1]),
                         ("error", "OpPrereqError", "unknown_entity"))

    # --- a reservation (forthcoming instance) ----------------------------------------

    def test_7_reservation(self):
        """Ganeti 3.0.2 fails a reservation over in the config only and refuses to
        migrate one (no error code)."""
        self.ok("gnt-instance", "add", "--forthcoming", "-t", "diskless", "-o", "busybox",
                "-n", self.node0, *CHECKS, "res7.vcluster.test")
        lines = without_dates(self.ok("gnt-instance", "failover", "-f", "-n", self.node1,
                                      "res7.vcluster.test"))
        self.assertEqual(lines, [
            " - INFO: Not checking memory on the secondary node as instance will not be "
            "started", "Failover instance res7.vcluster.test",
            "Instance is forthcoming, just updating the  configuration"])  # (Ganeti's)
        self.assertEqual(self.where("res7.vcluster.test"),
                         ["res7.vcluster.test", self.node1, "ADMIN_down"])
        r = self.debian("gnt-instance", "migrate", "-f", "-n", self.node0,
                        "res7.vcluster.test")
        self.assertEqual(r.returncode, 1)
        self.assertIn("forthcoming instances not supported for this operation",
                      r.stdout + r.stderr)
        self.assertEqual(self.where("res7.vcluster.test"),
                         ["res7.vcluster.test", self.node1, "ADMIN_down"])

    # --- our tools, the same moves ----------------------------------------------------

    def test_8_our_tools(self):
        def mine(tool, *argv):
            r = self.ours(tool, *argv)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            return without_dates(r.stdout)

        self.ok("gnt-instance", "remove", "-f", "res7.vcluster.test")  # (see test_7)
        start = self.where()[1]
        other = self.node0 if start == self.node1 else self.node1
        lines = mine("gnt-instance", "migrate", "-f", "-n", other, INST)
        self.assertIn(f"* migrating instance to {other}", lines)
        self.assertEqual(lines[-1], "* done")
        self.assertEqual(self.where(), [INST, other, "running"])
        lines = mine("gnt-instance", "failover", "-f", "-n", start, INST)
        self.assertIn(f"* starting the instance on the target node {start}", lines)
        self.assertEqual(self.where(), [INST, start, "running"])
        lines = mine("gnt-node", "migrate", "-f", "-n", other, start)
        self.assertRegex(lines[0], r"^Submitted jobs \d+$")
        self.assertEqual(lines[-1], "All instances migrated successfully.")
        self.assertEqual(self.where(), [INST, other, "running"])
        pinst = sorted(self.ok("gnt-node", "list", "--no-headers", "-o", "pinst_list",
                               other).strip().split(","))
        lines = mine("gnt-node", "failover", "-f", other)
        self.assertEqual(lines[0], "Submitted jobs " + ", ".join(
            re.findall(r"^Waiting for job (\d+)", "\n".join(lines), re.M)))
        self.assertEqual(lines[-1], f"All {len(pinst)} instance(s) failed over "
                                    "successfully.")
        self.assertEqual(self.where(), [INST, start, "running"])
