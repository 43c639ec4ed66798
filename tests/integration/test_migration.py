"""Migration and failover on real daemons (a two-node virtual cluster, the fake hypervisor),
driven by Debian's Ganeti 3.0 gnt-instance and gnt-node (our CLI has no migrate yet): a
diskless instance is live-migrated, failed over back, and migrated by gnt-node migrate;
the fake hypervisor's state shows it running on exactly the node the config names."""

import os

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import node_env, run

DEBIAN = "/usr/share/ganeti/3.0"


class MigrationTest(ClusterCase):
    PREFIX = "ganeti-migration-"
    NODES = 2

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(DEBIAN, "gnt-instance")):
            raise AssertionError(f"{DEBIAN}/gnt-instance is missing: run 'make install-compat'")
        super().setUpClass()

    def gnt(self, tool, *argv):
        env = node_env(self.cluster.dir, self.cluster.master)
        r = run([os.path.join(DEBIAN, tool), *argv], env=env, check=False, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def where(self):
        """(the primary node in the config, the nodes whose fake hypervisor runs it)."""
        out = self.gnt("gnt-instance", "list", "--no-headers", "-o", "pnode,status", "m1")
        pnode, status = out.split()
        self.assertEqual(status, "running")
        running = []
        for node in self.cluster.nodes:
            for base, _dirs, files in os.walk(self.cluster.node_root(node)):
                if base.endswith("fake-hypervisor") and "m1.vcluster.test" in files:
                    running.append(node)
        return pnode, running

    def test_migrate_failover_and_node_migrate(self):
        node1, node2 = self.cluster.nodes[:2]
        self.gnt("gnt-instance", "add", "-t", "diskless", "-n", node1, "-o", "busybox",
                 "--no-install", "--no-name-check", "--no-ip-check", "-B",
                 "maxmem=128M,minmem=128M", "m1.vcluster.test")
        self.gnt("gnt-instance", "startup", "m1")
        out = self.gnt("gnt-instance", "migrate", "-f", "-n", node2, "m1")
        for line in ("Migrating instance m1.vcluster.test", "* memory transfer complete",
                     "* done"):
            self.assertIn(line, out)
        self.assertEqual(self.where(), (node2, [node2]))
        out = self.gnt("gnt-instance", "failover", "-f", "-n", node1, "m1")
        self.assertIn(f"* starting the instance on the target node {node1}", out)
        self.assertEqual(self.where(), (node1, [node1]))
        self.gnt("gnt-node", "migrate", "-f", "-n", node2, node1)
        self.assertEqual(self.where(), (node2, [node2]))
