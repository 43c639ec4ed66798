"""A test case class owning a virtual cluster started once for the class, with a
helper that runs a command-line tool (ours or Debian's) on its master node."""

from __future__ import annotations

import sys

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.helpers import node_env, run
from tests.integration.jobtools import VirtualCluster


class VirtualClusterCase(SynchronousTestCase):
    """``PREFIX`` names the cluster's temporary directory; ``NODES`` its size."""

    PREFIX = "ganeti-test-"
    NODES = 1

    @classmethod
    def setUpClass(cls):
        cls.cluster = VirtualCluster(prefix=cls.PREFIX, nodes=cls.NODES)
        try:
            cls.cluster.create()
        except BaseException:
            cls.cluster.destroy()
            raise
        cls.env = node_env(cls.cluster.dir, cls.cluster.master)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.destroy()

    def tool(self, path, *argv, debian=False):
        """Run a tool on the master (Debian's by path, ours with this interpreter); its
        standard output, the test failing with its output if it exits non-zero."""
        cmd = [path] if debian else [sys.executable, path]
        r = run([*cmd, *argv], env=self.env, check=False, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout
