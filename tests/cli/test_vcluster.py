"""ganeti-vcluster create/env/status/destroy (starting daemons is an integration test)."""

import io
import json
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import vcluster
from ganeti.core import config as configmod
from ganeti.core import constants


class VClusterTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())

    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        code = vcluster.main(list(argv), stdout=out, stderr=err, environ={})
        return code, out.getvalue(), err.getvalue()

    def test_create_three_nodes(self):
        code, out, err = self.run_cli("create", self.dir, "--nodes", "3", "--domain", "x.test",
                                      "--ip-base", "127.0.9.", "--name", "vc.x.test")
        self.assertEqual(code, 0, err)
        with open(os.path.join(self.dir, "vcluster.json")) as f:
            state = json.load(f)
        self.assertEqual([n["name"] for n in state["nodes"]],
                         ["node1.x.test", "node2.x.test", "node3.x.test"])
        self.assertEqual([n["ip"] for n in state["nodes"]],
                         ["127.0.9.1", "127.0.9.2", "127.0.9.3"])
        root1 = os.path.join(self.dir, "node1.x.test")
        cfg = configmod.load_file(os.path.join(root1, "var/lib/ganeti/config.data"))
        self.assertEqual(cfg.cluster.cluster_name, "vc.x.test")
        self.assertEqual(cfg.master.name, "node1.x.test")
        self.assertEqual(cfg.master.primary_ip, "127.0.9.1")
        self.assertEqual(cfg.cluster.enabled_hypervisors, [constants.HT_FAKE])
        self.assertTrue(os.path.isdir(os.path.join(self.dir, "node3.x.test")))
        self.assertEqual(os.stat(os.path.join(self.dir, "rapi-credentials")).st_mode & 0o777,
                         0o600)

    def test_env_lines(self):
        self.run_cli("create", self.dir)
        code, out, _ = self.run_cli("env", self.dir)
        self.assertEqual(code, 0)
        root = os.path.join(self.dir, "node1.vcluster.test")
        self.assertIn(f"export GANETI_ROOTDIR={root}\n", out)
        self.assertIn("export GANETI_HOSTNAME=node1.vcluster.test\n", out)
        code, _, err = self.run_cli("env", self.dir, "node7")
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("No node 'node7'", err)

    def test_status_of_stopped_cluster(self):
        self.run_cli("create", self.dir)
        code, out, _ = self.run_cli("status", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("ganeti-masterd", out)
        self.assertIn("stopped", out)

    def test_create_twice_refused(self):
        self.assertEqual(self.run_cli("create", self.dir)[0], 0)
        code, _, err = self.run_cli("create", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("already holds a virtual cluster", err)

    def test_bad_arguments(self):
        for argv, needle in ((["create", self.dir, "--nodes", "0"], "--nodes"),
                             (["create", self.dir, "--ip-base", "300.0.0."], "--ip-base")):
            code, _, err = self.run_cli(*argv)
            self.assertEqual(code, constants.EXIT_FAILURE)
            self.assertIn(needle, err)
            self.assertFalse(os.path.exists(self.dir))

    def test_not_a_vcluster(self):
        os.makedirs(self.dir)
        for cmd in ("start", "stop", "status", "env", "destroy"):
            code, _, err = self.run_cli(cmd, self.dir)
            self.assertEqual(code, constants.EXIT_FAILURE, cmd)
            self.assertIn("is not a virtual cluster", err)
        self.assertTrue(os.path.isdir(self.dir))  # destroy refused to remove it

    def test_destroy(self):
        self.run_cli("create", self.dir)
        code, _, _ = self.run_cli("destroy", self.dir)
        self.assertEqual(code, 0)
        self.assertFalse(os.path.exists(self.dir))
