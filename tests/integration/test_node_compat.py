# ruff: noqa: E501 - GANETI_TRANSCRIPT holds Ganeti's output lines as they are
"""Node roles, name look-ups, out-of-band commands and node field metadata on real daemons,
driven by Debian's Ganeti 3.0 gnt-node and by ours.

The expected outputs were taken from a real Ganeti 3.0 cluster
(``/work/shared/tools/real-ganeti``) running the same commands; names differ
only in the domain.
"""

import os
import re
import stat
import subprocess

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, node_env, run

DEBIAN = "/usr/share/ganeti/3.0"

OOB_SCRIPT = """#!/bin/sh
case "$1" in
  health) echo '[["disk", "OK"], ["fan", "WARNING"]]' ;;
  power-status) echo '{"powered": true}' ;;
esac
case "$2" in
  node3*) exit 3 ;;
esac
"""


class NodeCompatTest(ClusterCase):
    """Tests run in name order on one 3-node cluster (all three master candidates)."""

    PREFIX = "ganeti-node-compat-"
    NODES = 3

    @classmethod
    def setUpCluster(cls):
        cls.script = os.path.join(cls.cluster.tmp, "oob.sh")
        with open(cls.script, "w", encoding="ascii") as f:
            f.write(OOB_SCRIPT)
        os.chmod(cls.script, stat.S_IRWXU)

    def gnt(self, tool, *argv, debian=True):
        env = node_env(self.cluster.dir, self.cluster.master)
        path = os.path.join(DEBIAN, tool) if debian else os.path.join(BIN, tool)
        return run([path, *argv], env=env, check=False, timeout=120)

    def both(self, tool, *argv):
        """The same command with Debian's client and ours: (returncode, stdout, stderr)."""
        return [(r.returncode, r.stdout, r.stderr)
                for r in (self.gnt(tool, *argv), self.gnt(tool, *argv, debian=False))]

    def test_1_unknown_names(self):
        for (code, _out, err) in self.both("gnt-node", "list", "nosuch"):
            self.assertEqual(code, 1, err)
            self.assertIn("unknown_entity", err)
            self.assertIn("Node name nosuch not found", err)
        for (code, _out, err) in self.both("gnt-group", "list", "nosuch"):
            self.assertEqual(code, 1, err)
            self.assertIn("NodeGroup name nosuch not found", err)
        debian, ours = self.both("gnt-node", "info", "nosuch")
        self.assertEqual(debian, (0, "\n", ""))
        self.assertEqual(ours, (0, "\n", ""))
        debian, ours = self.both("gnt-node", "info", "node2", "nosuch")
        self.assertEqual(debian[0], 0)
        self.assertEqual(debian, ours)
        self.assertTrue(debian[1].startswith("- Node name: node2.vcluster.test\n"), debian)

    def test_2_role_rules(self):
        r = self.gnt("gnt-node", "modify", "--master-capable", "yes", "--vm-capable", "yes",
                     "node2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("error type: wrong_input, error details:\nCan't set the node into more "
                      "than one state at the same time", r.stderr)
        r = self.gnt("gnt-node", "modify", "-s", "127.0.250.9", "node2")
        self.assertEqual(r.returncode, 1)
        self.assertIn("Changing the secondary ip on a single-homed cluster requires the "
                      "--force option to be passed, and the target node to be the master",
                      r.stderr)
        r = self.gnt("gnt-node", "modify", "-C", "no", self.cluster.master)
        self.assertIn("The master role can be changed only via master-failover", r.stderr)
        r = self.gnt("gnt-node", "modify", "--master-capable", "no", self.cluster.master)
        self.assertIn("error type: wrong_state, error details:\nMaster must remain master "
                      "capable", r.stderr)
        # one of three candidates may leave the pool: only two could remain
        r = self.gnt("gnt-node", "modify", "-C", "no", "node3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("Modified node node3\n"
                                          " - master_candidate -> False\n"), r.stdout)
        r = self.gnt("gnt-node", "modify", "-D", "no", "node3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" - INFO: Ignoring request to unset flag drained, already unset",
                      r.stdout)
        self.assertNotIn("Modified node", r.stdout)
        r = self.gnt("gnt-node", "modify", "-C", "yes", "node3", debian=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Modified node node3\n - master_candidate -> True\n", r.stdout)

    def test_3_out_of_band(self):
        debian, ours = self.both("gnt-node", "health")
        self.assertEqual(debian[:2], (1, "Node".ljust(19) + " Status   \n"
                                         "node1.vcluster.test (unavail)\n"
                                         "node2.vcluster.test (unavail)\n"
                                         "node3.vcluster.test (unavail)\n"))
        self.assertEqual(debian[:2], ours[:2])
        for node in ("node2", "node3"):
            r = self.gnt("gnt-node", "modify", "--node-parameters",
                         f"oob_program={self.script}", node)
            self.assertEqual(r.returncode, 0, r.stderr)
        for r in (self.gnt("gnt-node", "health", "node2", "node3"),
                  self.gnt("gnt-node", "health", "node2", "node3", debian=False)):
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertTrue(r.stdout.endswith("Node".ljust(19) + " Status     \n"
                                              "node2.vcluster.test disk=OK\n"
                                              + " " * 20 + "fan=WARNING\n"
                                              "node3.vcluster.test (nodata)\n"), r.stdout)
            self.assertIn(" - WARNING: Item 'fan' on node 'node2.vcluster.test' has status "
                          "'WARNING'", r.stdout)
            self.assertIn(" - WARNING: Out-of-band RPC failed on node 'node3.vcluster.test': "
                          f"'{self.script} health node3.vcluster.test' failed with reason "
                          "'exited with exit code 3'", r.stdout)
        r = self.gnt("gnt-node", "power", "--no-headers", "--separator=:", "status", "node2")
        self.assertEqual((r.returncode, r.stdout), (0, "node2.vcluster.test:powered\n"),
                         r.stderr)
        r = self.gnt("gnt-node", "power", "-f", "--ignore-status", "off", "node2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("node2.vcluster.test invoked\n"), r.stdout)
        r = self.gnt("gnt-node", "list", "--no-headers", "-o", "name,powered", "node2",
                     "node1")
        self.assertEqual(r.stdout.split(), ["node2.vcluster.test", "N",
                                            "node1.vcluster.test", "-"])
        r = self.gnt("gnt-node", "power", "-f", "--ignore-status", "off",
                     self.cluster.master)
        self.assertIn(f"Operating on the master node {self.cluster.master} is not allowed "
                      "for power-off; it does not support out-of-band operations", r.stderr)

    def test_4_field_metadata(self):
        debian, ours = self.both("gnt-node", "list-fields", "--no-headers", "--separator=|",
                                 "ndp/oob_program", "ndp/cpu_speed", "ndp/ovs_name",
                                 "ndp/spindle_count")
        self.assertEqual(debian, ours)
        self.assertEqual(debian[1].splitlines(), [
            'ndp/oob_program|Custom|OutOfBandProgram|The "oob_program" node parameter',
            'ndp/cpu_speed|Floating-point number|ndp/cpu_speed|The "cpu_speed" node parameter',
            'ndp/ovs_name|Custom|OpenvSwitchName|The "ovs_name" node parameter',
            'ndp/spindle_count|Number|SpindleCount|The "spindle_count" node parameter',
        ])


# Debian's gnt-node against a real Ganeti 3.0 cluster (node1 master, node2 and node3
# candidates, pool 10), one command after the other; timestamps and Ganeti's
# "Configuration data is not consistent" warnings left out.
GANETI_TRANSCRIPT = """\
=== gnt-node modify -C no node2
Modified node node2
 - master_candidate -> False
rc=0
=== gnt-node modify -C no node3
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Not enough master candidates, please pass auto promote option to allow promotion (--auto-promote or RAPI auto_promote=True)
rc=1
=== gnt-node modify -C yes node3
rc=0
=== gnt-node modify -D yes node3
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Not enough master candidates, please pass auto promote option to allow promotion (--auto-promote or RAPI auto_promote=True)
rc=1
=== gnt-node modify -D yes node3
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Not enough master candidates, please pass auto promote option to allow promotion (--auto-promote or RAPI auto_promote=True)
rc=1
=== gnt-node modify -C yes node3
rc=0
=== gnt-node modify -O yes node3
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Not enough master candidates, please pass auto promote option to allow promotion (--auto-promote or RAPI auto_promote=True)
rc=1
=== gnt-node modify -O yes --auto-promote node3
 - INFO: Promoted nodes to master candidate role: node2.example.com
Modified node node3
 - master_candidate -> False
 - offline -> True
rc=0
=== gnt-node modify -C yes node3
 - WARNING: Transitioning node from offline to online state without using re-add. Please make sure the node is healthy!
Modified node node3
 - master_candidate -> True
 - offline -> False
rc=0
=== gnt-node modify -D yes node3
Modified node node3
 - master_candidate -> False
 - drained -> True
rc=0
=== gnt-node modify -f -O no node3
 - INFO: Ignoring request to unset flag offline, already unset
rc=0
=== gnt-node modify -D no node3
 - INFO: Auto-promoting node to master candidate
Modified node node3
 - master_candidate -> True
 - drained -> False
rc=0
=== gnt-node modify -C no -D no node2
 - INFO: Ignoring request to unset flag drained, already unset
Modified node node2
 - master_candidate -> False
rc=0
=== gnt-node modify --master-capable no node2
Modified node node2
 - master_capable -> False
rc=0
=== gnt-node modify --master-capable no node3
 - INFO: Demoting from master candidate
Modified node node3
 - master_capable -> False
 - master_candidate -> False
rc=0
=== gnt-node modify -C yes node3
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Node node3.example.com is not master capable, cannot make it a master candidate
rc=1
=== gnt-node modify --master-capable yes node3
 - INFO: Auto-promoting node to master candidate
Modified node node3
 - master_capable -> True
 - master_candidate -> True
rc=0
=== gnt-node modify --master-capable yes -C no node3
Modified node node3
 - master_capable -> True
 - master_candidate -> False
rc=0
=== gnt-node modify -D yes --master-capable no node2
Modified node node2
 - master_capable -> False
 - drained -> True
rc=0
=== gnt-node modify -O no -D no node2
rc=1
=== gnt-node modify --vm-capable no -C yes node2
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Node node2.example.com is not master capable, cannot make it a master candidate
rc=1
=== gnt-node modify --node-powered yes node2
Please give at least one of the parameters.
rc=1
=== gnt-node modify --node-powered yes -D yes node2
Failure: prerequisites not met for this operation:
error type: wrong_state, error details:
Unable to change powered state for node node2.example.com as it does not support out-of-band handling
rc=1
=== gnt-node list -o name,role,master_capable,vm_capable
Node              Role MasterCapable VMCapable
node1.example.com M    Y             Y
node2.example.com D    N             Y
node3.example.com R    Y             Y
rc=0
"""


class RoleTranscriptTest(ClusterCase):
    """The same commands with Debian's client on our daemons give Ganeti's transcript."""

    CLUSTER = False  # a fresh one for the test

    def setUp(self):
        self.cluster = self.new_cluster(prefix="ganeti-node-roles-", nodes=3,
                                        domain="example.com")

    def test_transcript(self):
        env = node_env(self.cluster.dir, self.cluster.master)
        commands = [line[4:] for line in GANETI_TRANSCRIPT.splitlines()
                    if line.startswith("=== ")]
        lines = []
        for command in commands:
            lines.append(f"=== {command}")
            tool, *argv = command.split()
            # no controlling terminal: a confirmation question is answered "no"
            r = subprocess.run([os.path.join(DEBIAN, tool), *argv], env={**os.environ, **env},
                               capture_output=True, text=True, timeout=120, check=False,
                               start_new_session=True)
            for line in (r.stdout + r.stderr).splitlines():
                line = re.sub(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ [\d:]+ \d{4} ", "", line)
                if "Configuration data is not consistent" not in line:
                    lines.append(line)
            lines.append(f"rc={r.returncode}")
        self.assertEqual("\n".join(lines) + "\n", GANETI_TRANSCRIPT)
