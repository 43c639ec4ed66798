"""A three-node virtual cluster for real: ganeti-vcluster create adds nodes 2 and 3 through
OP_NODE_ADD, start runs every node's ganeti-noded and the master's ganeti-masterd, and the
master lists all three nodes over LUXI."""

import os
import shutil
import tempfile

from ganeti.cli import daemons
from ganeti.core import constants
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, VCLUSTER, run

NODED, MASTERD = constants.NODED, constants.MASTERD


def status_rows(out):
    """``ganeti-vcluster status`` output as (node, ip, daemon, state) tuples."""
    rows = []
    for line in out.splitlines()[1:]:
        node, ip, daemon, _pid, *state = line.split()
        rows.append((node, ip, daemon, " ".join(state)))
    return rows


class VClusterNodesTest(ClusterCase):
    """One 3-node cluster for the class; stopped and destroyed whatever happens."""

    CREATE_RUNNING = False  # it checks what a plain create prints
    PREFIX = "ganeti-nodes-"
    NODES = 3

    @classmethod
    def setUpCluster(cls):
        cls.created = cls.cluster.created

    def paths(self, node):
        return Paths.for_node(self.cluster.node_root(node), node)

    def node_rows(self):
        with self.cluster.client() as c:
            answer = c.call("Query", "node", ["name", "pip", "role"], None)
        self.assertEqual([f["name"] for f in answer["fields"]], ["name", "pip", "role"])
        return sorted([value for _status, value in row] for row in answer["data"])

    def test_create_added_the_nodes_and_stopped_again(self):
        out = self.created.stdout
        for node in self.cluster.nodes[1:]:
            self.assertIn(f"{node} joined the cluster", out)
        self.assertIn("All 3 nodes are in the cluster.", out)
        self.assertIn("daemons are stopped again", out)

    def test_every_daemon_runs(self):
        r = run([VCLUSTER, "status", self.cluster.dir], check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        master, *others = zip(self.cluster.nodes, self.cluster.ips, strict=True)
        # every node is a master candidate (pool size 10): confd runs everywhere
        expected = [(*master, NODED, "running"), (*master, constants.CONFD, "running"),
                    (*master, MASTERD, "running"), (*master, constants.RAPI, "running")]
        for node, ip in others:
            expected += [(node, ip, NODED, "running"), (node, ip, constants.CONFD, "running")]
        self.assertEqual(status_rows(r.stdout), expected)
        for node, ip in zip(self.cluster.nodes, self.cluster.ips, strict=True):
            pid = daemons.read_pid(self.paths(node).pid_file(constants.CONFD))
            self.assertTrue(daemons.pid_listens_on(pid, ip, constants.DEFAULT_CONFD_PORT,
                                                   udp=True))
        # each node daemon holds its own node's address
        for node, ip in zip(self.cluster.nodes, self.cluster.ips, strict=True):
            pid = daemons.read_pid(self.paths(node).pid_file(NODED))
            self.assertTrue(daemons.pid_listens_on(pid, ip, constants.DEFAULT_NODED_PORT),
                            f"{NODED} of {node} does not listen on {ip}:1811")
        # and the master's RAPI daemon the master's
        pid = daemons.read_pid(self.paths(self.cluster.master).pid_file(constants.RAPI))
        self.assertTrue(daemons.pid_listens_on(pid, self.cluster.ips[0],
                                               constants.DEFAULT_RAPI_PORT))

    def test_master_lists_three_nodes(self):
        rows = self.node_rows()
        self.assertEqual([r[:2] for r in rows],
                         [[n, ip] for n, ip in zip(self.cluster.nodes, self.cluster.ips,
                                                   strict=True)])
        self.assertEqual(rows[0][2], "M")
        for row in rows[1:]:
            self.assertIn(row[2], ("C", "R"), row)

    def test_added_nodes_got_the_cluster_files(self):
        for node in self.cluster.nodes[1:]:
            with open(self.paths(node).ssconf_file("master_node"), encoding="utf-8") as f:
                self.assertEqual(f.read().strip(), self.cluster.master, node)
            self.assertEqual(os.stat(self.paths(node).server_pem).st_mode & 0o777, 0o600)

    def test_gnt_node_list(self):
        tool = os.path.join(BIN, "gnt-node")
        if not os.path.exists(tool):
            self.skipTest("gnt-node is not installed")
        r = run([tool, "list", "--no-headers", "-o", "name,pip"], env=self.cluster.env,
                check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(line.split() for line in r.stdout.splitlines()),
                         [[n, ip] for n, ip in zip(self.cluster.nodes, self.cluster.ips,
                                                   strict=True)])

    def test_same_ip_base_twice_is_refused_clearly(self):
        tmp = tempfile.mkdtemp(prefix="ganeti-clash-")
        self.addCleanup(shutil.rmtree, tmp, True)
        other = os.path.join(tmp, "vc")
        # create --nodes 2 starts daemons, so it checks the addresses before anything
        r = run([VCLUSTER, "create", other, "--nodes", "2", "--ip-base",
                 self.cluster.ip_base], check=False)
        self.assertEqual(r.returncode, constants.EXIT_FAILURE)
        self.assertIn(f"{self.cluster.ips[0]}:1811 is already in use", r.stderr)
        self.assertIn("another --ip-base", r.stderr)
        self.assertFalse(os.path.exists(other))
        # a one-node cluster is created, but cannot start while ours runs
        run([VCLUSTER, "create", other, "--ip-base", self.cluster.ip_base])
        self.addCleanup(run, [VCLUSTER, "destroy", other], check=False)
        r = run([VCLUSTER, "start", other], check=False, timeout=60)
        self.assertEqual(r.returncode, constants.EXIT_FAILURE, r.stdout)
        self.assertIn(f"{self.cluster.ips[0]}:1811 is already in use", r.stderr)
        self.assertIn(f"another virtual cluster with --ip-base {self.cluster.ip_base} is "
                      "running", r.stderr)
        r = run([VCLUSTER, "status", other], check=False)
        self.assertEqual({row[3] for row in status_rows(r.stdout)}, {"stopped"})
        # ours is untouched
        self.assertEqual(run([VCLUSTER, "status", self.cluster.dir], check=False).returncode, 0)

    def test_stop_and_start_again(self):
        out = self.cluster.stop().stdout
        self.assertEqual(out.strip(), "Stopped " + ", ".join(
            [f"{constants.RAPI}@{self.cluster.master}", f"{MASTERD}@{self.cluster.master}"]
            + [f"{NODED}@{n}" for n in reversed(self.cluster.nodes)]
            + [f"{constants.CONFD}@{n}" for n in reversed(self.cluster.nodes)]) + ".")
        r = run([VCLUSTER, "status", self.cluster.dir], check=False)
        self.assertEqual(r.returncode, constants.EXIT_FAILURE)
        self.assertEqual({row[3] for row in status_rows(r.stdout)}, {"stopped"})
        out = self.cluster.start().stdout
        self.assertEqual(out.splitlines(),
                         [f"Started {NODED}@{n}" for n in self.cluster.nodes]
                         + [f"Started {constants.CONFD}@{n}" for n in self.cluster.nodes]
                         + [f"Started {MASTERD}@{self.cluster.master}",
                            f"Started {constants.RAPI}@{self.cluster.master}"])
        self.assertEqual(len(self.node_rows()), 3)
