"""gnt-cluster verify and verify-disks on a real 3-node virtual cluster, driven by
Debian's Ganeti 3.0 client and ours: Ganeti's steps and findings, exit codes, error
codes, and injected faults (a changed file on a node, a stopped node daemon, an
expiring certificate)."""

import datetime
import os
import re

from ganeti.cli import daemons
from ganeti.core import constants, crypto, fileutil
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, node_env, run

DEBIAN_GNT_CLUSTER = "/usr/share/ganeti/3.0/gnt-cluster"

# What Debian's gnt-cluster verify prints against a real Ganeti 3.0 cluster of three
# healthy nodes (timestamps and job ids removed), recorded from real_cluster_up.sh.
GANETI_STEPS = [
    "Submitted jobs J, J", "Waiting for job J ...",
    "* Verifying cluster config", "* Verifying cluster certificate files",
    "* Verifying hypervisor parameters", "* Verifying all nodes belong to an existing group",
    "Waiting for job J ...",
    "* Verifying group 'default'", "* Gathering data (3 nodes)",
    "* Gathering information about nodes (3 nodes)", "* Gathering disk information (3 nodes)",
    "* Verifying configuration file consistency", "* Verifying node status",
    "SETUP",
    "* Verifying instance status", "* Verifying orphan volumes",
    "* Verifying N+1 Memory redundancy", "* Other Notes", "* Hooks Results",
]
_STAMP = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} ")


def host_setup_problems():
    """Ganeti's node setup findings on this machine (a container may lack sysrq)."""
    problems = []
    if not (os.path.isdir("/sys/block") and os.path.isdir("/sys/class/net")):
        problems.append("sysfs")
    if not (os.path.isdir("/proc/sys") and os.path.isfile("/proc/sysrq-trigger")):
        problems.append("procfs")
    return problems


def normalise(text):
    lines = [_STAMP.sub("", line) for line in text.splitlines()]
    return [re.sub(r"\b\d+\b", "J", line) if line.startswith(("Submitted jobs", "Waiting"))
            else line for line in lines]


class VerifyTest(ClusterCase):
    """Tests run in name order on one cluster; each leaves it healthy."""

    PREFIX = "ganeti-verify-"
    NODES = 3

    def gnt(self, *argv, debian=False):
        env = node_env(self.cluster.dir, self.cluster.master)
        tool = DEBIAN_GNT_CLUSTER if debian else os.path.join(BIN, "gnt-cluster")
        if debian and not os.path.exists(tool):
            self.skipTest("Debian's ganeti-3.0 is not installed (make test installs it)")
        return run([tool, *argv], env=env, check=False, timeout=120)

    def paths(self, node):
        return Paths.for_node(self.cluster.node_root(node), node)

    def expected(self):
        setup = [f"  - ERROR: node {node}: node setup error: " for node in self.cluster.nodes]
        lines = []
        for line in GANETI_STEPS:
            if line == "SETUP":
                lines += setup if host_setup_problems() else []
            else:
                lines.append(line)
        return lines

    def assert_ganeti_output(self, r, rc):
        got = normalise(r.stdout)
        want = self.expected()
        self.assertEqual(len(got), len(want), r.stdout + r.stderr)
        # node order inside the setup findings may differ (Ganeti's is a set's order)
        for g, w in zip(sorted(got), sorted(want), strict=True):
            self.assertTrue(g.startswith(w), (g, w))
        self.assertEqual(r.returncode, rc, r.stdout + r.stderr)

    def test_1_debian_verify_prints_what_ganeti_prints(self):
        r = self.gnt("verify", debian=True)
        self.assert_ganeti_output(r, 1 if host_setup_problems() else 0)
        # what the machine lacks is reported as Ganeti does; -I makes it a warning
        r = self.gnt("verify", "-I", "ENODESETUP", debian=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertNotIn("ERROR", r.stdout)

    def test_2_ours_prints_the_same(self):
        self.assert_ganeti_output(self.gnt("verify"), 1 if host_setup_problems() else 0)

    def test_3_error_codes_and_simulated_errors(self):
        r = self.gnt("verify", "--error-codes", "--debug-simulate-errors", debian=True)
        self.assertEqual(r.returncode, 1)
        findings = [line for line in normalise(r.stdout) if line.startswith("  - ")]
        self.assertTrue(findings)
        for line in findings:
            self.assertRegex(line, r"^  - (ERROR|WARNING):E[A-Z0-9]+:(cluster|node|group"
                                   r"|instance):[^:]*:")

    def test_4_changed_file_on_a_node(self):
        path = self.paths(self.cluster.nodes[1]).hmac_key
        with open(path, "rb") as f:
            saved = f.read()
        fileutil.atomic_write(path, b"tampered\n", mode=0o400, durable=False)
        try:
            r = self.gnt("verify", "--error-codes", "-I", "ENODESETUP", debian=True)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("ERROR:ECLUSTERFILECHECK:cluster:None:File /var/lib/ganeti/hmac.key "
                          "found with 2 different checksums", r.stdout)
        finally:
            fileutil.atomic_write(path, saved, mode=0o400, durable=False)

    def test_5_stopped_node_daemon(self):
        node3 = self.cluster.nodes[2]
        self.assertTrue(daemons.stop(self.paths(node3), constants.NODED))
        try:
            r = self.gnt("verify", "--error-codes", "-I", "ENODESETUP", debian=True)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(f"ERROR:ENODERPC:node:{node3}:while contacting node:", r.stdout)
            self.assertIn(f"ERROR:ENODENET:node:{self.cluster.master}:tcp communication "
                          f"with node '{node3}'", r.stdout)
        finally:
            self.cluster.start()
        r = self.gnt("verify", "-I", "ENODESETUP")
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_6_expiring_rapi_certificate(self):
        path = self.paths(self.cluster.master).rapi_pem
        with open(path, "rb") as f:
            saved = f.read()
        now = datetime.datetime.now(datetime.UTC)
        fileutil.atomic_write(path, crypto.generate_self_signed("x", validity_days=3, now=now),
                              mode=0o440, durable=False)
        try:
            r = self.gnt("verify", "--error-codes", "-I", "ENODESETUP",
                         "-I", "ECLUSTERFILECHECK", debian=True)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertRegex(r.stdout, r"ERROR:ECLUSTERCERT:cluster:None:While verifying "
                                       r"\S*rapi.pem: Certificate expires in about [23] days")
        finally:
            fileutil.atomic_write(path, saved, mode=0o440, durable=False)

    def test_7_verify_disks(self):
        for debian in (True, False):
            r = self.gnt("verify-disks", debian=debian)
            # no instance: Ganeti submits no job and prints nothing
            self.assertEqual((r.returncode, r.stdout.strip()), (0, ""), r.stderr)
