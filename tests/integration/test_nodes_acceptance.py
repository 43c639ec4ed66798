"""Issue 4's acceptance on real daemons: a 3-node virtual cluster driven by gnt-node,
gnt-group and gnt-cluster (ours and Debian's Ganeti 3.0), with a node daemon stopped
and brought back."""

import json
import os

from ganeti.cli import daemons
from ganeti.core import constants
from ganeti.core.paths import Paths
from tests.fakes.nodes import sha1_of, ssconf_of
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, node_env, run
from tests.integration.jobtools import poll_until, wait_for_job

DEBIAN = "/usr/share/ganeti/3.0"
DEBIAN_GNT_NODE = os.path.join(DEBIAN, "gnt-node")


class NodesAcceptanceTest(ClusterCase):
    """Tests run in name order on one cluster: each leaves it as the next expects."""

    PREFIX = "ganeti-nodes-acc-"
    NODES = 3

    def setUp(self):
        self.master, self.node2, self.node3 = self.cluster.nodes

    def ip_of(self, node):
        return self.cluster.ips[self.cluster.nodes.index(node)]

    def poll(self, check, timeout=15):
        with self.cluster.client() as c:
            self.assertTrue(poll_until(c, check, timeout=timeout))

    def paths(self, node):
        return Paths.for_node(self.cluster.node_root(node), node)

    def gnt(self, tool, *argv, check=True, path=None):
        env = node_env(self.cluster.dir, self.master)
        env["PYTHONHASHSEED"] = "0"
        r = run([path or os.path.join(BIN, tool), *argv], env=env, check=False, timeout=120)
        if check:
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def config(self):
        with open(self.paths(self.master).config_file, encoding="utf-8") as f:
            return json.load(f)

    def assert_replicated(self):
        """Config equal on every candidate, ssconf equal on every online node."""
        cfg = self.config()
        want_config = sha1_of(self.paths(self.master).config_file)
        want_ssconf = ssconf_of(self.paths(self.master))
        for node in cfg["nodes"].values():
            if node["offline"]:
                continue
            paths = self.paths(node["name"])
            if node["master_candidate"]:
                self.assertEqual(sha1_of(paths.config_file), want_config, node["name"])
            self.assertEqual(ssconf_of(paths), want_ssconf, node["name"])

    def test_1_list_with_live_fields(self):
        r = self.gnt("gnt-node", "list", "--no-headers", "--separator=|", "--units=m",
                     "-o", "name,role,mtotal,mfree,dtotal,dfree,ctotal")
        rows = [line.split("|") for line in r.stdout.splitlines()]
        self.assertEqual([row[0] for row in rows], self.cluster.nodes)
        self.assertEqual([row[1] for row in rows], ["M", "C", "C"])
        for row in rows:
            for value in row[2:]:
                self.assertGreater(float(value), 0, row)
        self.assert_replicated()

    def test_2_roles_keep_the_pool_and_replicate(self):
        self.gnt("gnt-cluster", "modify", "--candidate-pool-size", "2")
        # node3 offline: allowed (pool 2 still met by master + node2); replicated
        self.gnt("gnt-node", "modify", "-O", "yes", self.node3)
        self.assertEqual(self.role(self.node3), "O")
        self.assert_replicated()
        # node3 back online promotes itself? the pool is full (2): it stays regular
        self.gnt("gnt-node", "modify", "-O", "no", "-f", self.node3)
        self.assertEqual(self.role(self.node3), "R")
        # demoting node2 would leave fewer candidates than possible (node3 could be
        # one): refused without --auto-promote (with node3 offline Ganeti allows it)
        r = self.gnt("gnt-node", "modify", "-C", "no", self.node2, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("auto promote", r.stdout + r.stderr)
        # now demoting node2 with --auto-promote promotes node3
        self.gnt("gnt-node", "modify", "-C", "no", "--auto-promote", self.node2)
        self.assertEqual(self.role(self.node2), "R")
        self.assertEqual(self.role(self.node3), "C")
        self.assert_replicated()
        self.gnt("gnt-cluster", "modify", "--candidate-pool-size", "10")
        self.assertEqual(self.role(self.node2), "C")  # refilled
        self.assert_replicated()

    def role(self, node):
        with self.cluster.client() as c:
            (row,) = c.call("QueryNodes", [node], ["role"], False)
        return row[0]

    def test_3_job_files_on_candidates_and_archived(self):
        r = self.gnt("gnt-debug", "delay", "--submit", "0.01")
        job_id = int((r.stdout + r.stderr).split()[-1])
        with self.cluster.client() as c:
            self.assertEqual(wait_for_job(c, job_id), "success")
        name = f"job-{job_id}"
        for node in (self.node2, self.node3):
            path = os.path.join(self.paths(node).queue_dir, name)
            self.poll(lambda p=path: sha1_of(p) is not None and b'"success"' in open(
                p, "rb").read())
        self.gnt("gnt-job", "archive", str(job_id))
        for node in (self.node2, self.node3):
            archived = os.path.join(self.paths(node).queue_archive_dir, "0", name)
            self.poll(lambda p=archived: os.path.exists(p))
            self.assertFalse(os.path.exists(os.path.join(self.paths(node).queue_dir, name)))

    def test_4_stopped_noded_verify_and_redist(self):
        paths3 = self.paths(self.node3)
        self.assertTrue(daemons.stop(paths3, constants.NODED))
        try:
            # calls to node3 fail fast with a per-node error; other nodes go on
            r = self.gnt("gnt-node", "list", "--no-headers", "-o", "name,mfree")
            lines = dict(line.split(None, 1) for line in r.stdout.splitlines())
            self.assertEqual(lines[self.node3].strip(), "?")
            self.assertNotEqual(lines[self.node2].strip(), "?")
            self.gnt("gnt-cluster", "add-tags", "while-node3-down")
            self.assertNotEqual(sha1_of(paths3.config_file),
                                sha1_of(self.paths(self.master).config_file))
            r = self.gnt("gnt-cluster", "verify", check=False)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(f"ERROR: node {self.node3}", r.stdout + r.stderr)
        finally:
            self.cluster.start()  # starts what is not running
        self.gnt("gnt-cluster", "redist-conf")
        self.assert_replicated()
        # -I ENODESETUP: a container without /proc/sysrq-trigger fails Ganeti's node
        # setup check (real Ganeti reports it too); tests/integration/test_verify.py
        r = self.gnt("gnt-cluster", "verify", "-I", "ENODESETUP")
        self.assertNotIn("ERROR", r.stdout + r.stderr)

    def test_5_bad_input_changes_nothing(self):
        serial = self.config()["serial_no"]
        for argv, text in (
                (["gnt-node", "add", "--primary-ip", self.ip_of(self.node2),
                  "node9.vcluster.test"], "already used"),
                (["gnt-node", "add", "--primary-ip", "127.0.0.99", "node9.vcluster.test"],
                 "Cannot communicate"),
                (["gnt-node", "modify", "-O", "yes", self.master], "master"),
                (["gnt-node", "add", "--primary-ip", "127.0.0.98", "-g", "nosuchgroup",
                  "node8.vcluster.test"], "nosuchgroup")):
            r = self.gnt(*argv, check=False)
            self.assertNotEqual(r.returncode, 0, argv)
            self.assertIn(text, r.stdout + r.stderr, argv)
        self.assertEqual(self.config()["serial_no"], serial)

    def test_6_debian_clients_list_nodes_and_groups(self):
        if not os.path.exists(DEBIAN_GNT_NODE):
            self.skipTest("Debian's ganeti-3.0 is not installed (make test installs it)")
        r = self.gnt(None, "list", "--no-headers", "-o", "name,role,pip,group,mtotal",
                     path=DEBIAN_GNT_NODE)
        rows = [line.split() for line in r.stdout.splitlines()]
        self.assertEqual([row[0] for row in rows], self.cluster.nodes)
        self.assertEqual(rows[0][1], "M")
        self.assertEqual(rows[1][2], self.ip_of(self.node2))
        self.assertTrue(all(row[3] == "default" for row in rows))
        r = self.gnt(None, "list", "--no-headers", path=os.path.join(DEBIAN, "gnt-group"))
        self.assertEqual(r.stdout.split()[:2], ["default", "3"])

    def test_6b_debian_redist_conf_ships_the_vnc_password_file(self):
        debian_cluster = os.path.join(DEBIAN, "gnt-cluster")
        if not os.path.exists(debian_cluster):
            self.skipTest("Debian's ganeti-3.0 is not installed (make test installs it)")
        password = "/etc/ganeti/vnc-cluster-password"

        def write(node, content):
            path = self.cluster.node_root(node) + password
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
            return path

        # the nodes validate the parameter: the file must exist before it is named
        for node in self.cluster.nodes:
            write(node, "first\n")
        self.gnt(None, "modify", "--enabled-hypervisors", "fake,kvm", "-H",
                 f"kvm:vnc_password_file={password}", path=debian_cluster)
        self.assertEqual(self.config()["cluster"]["hvparams"]["kvm"]["vnc_password_file"],
                         password)
        master_copy = write(self.master, "second\n")
        self.gnt(None, "redist-conf", path=debian_cluster)
        for node in (self.node2, self.node3):
            self.assertEqual(sha1_of(self.cluster.node_root(node) + password),
                             sha1_of(master_copy), node)
        self.assert_replicated()

    def test_7_remove_node_cleanly(self):
        paths3 = self.paths(self.node3)
        self.gnt("gnt-node", "remove", self.node3)
        cfg = self.config()
        self.assertNotIn(self.node3, [n["name"] for n in cfg["nodes"].values()])
        # the node forgot the cluster and its daemon stopped by itself
        self.assertIsNone(sha1_of(paths3.config_file))
        self.assertFalse(os.path.exists(paths3.ssconf_file("master_node")))
        self.poll(lambda: daemons.state(paths3, constants.NODED).state != daemons.RUNNING)
        with open(self.paths(self.node2).ssconf_file("node_list"), encoding="utf-8") as f:
            self.assertEqual(f.read().split(), [self.master, self.node2])
