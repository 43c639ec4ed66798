"""The masterd service tree: dependency order, socket mode, refusal off the master."""

import os

from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.errors import ConfigurationError
from ganeti.core.paths import Paths
from ganeti.master.service import MasterDaemon, ThreadPoolService, load_master_config
from tests.fakes.configs import node_paths, small_config


class MasterDaemonTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self.mktemp())
        self.reactor = MemoryReactorClock()
        self.daemon = MasterDaemon(self.reactor, self.paths, small_config())

    def test_children_in_dependency_order(self):
        kinds = [type(s).__name__ for s in self.daemon]
        self.assertEqual(kinds, ["ThreadPoolService", "JobQueueService", "LuxiService"])

    def test_start_listens_with_mode_0660_and_stop_reverses(self):
        self.daemon.startService()
        pool = next(s for s in self.daemon if isinstance(s, ThreadPoolService)).pool
        self.assertTrue(pool.started)
        (port,) = self.reactor.unixServers
        path, factory, backlog, mode, want_pid = port
        self.assertEqual((path, mode, want_pid), (self.paths.luxi_socket, 0o660, False))
        self.assertTrue(os.path.isdir(self.paths.socket_dir))
        self.daemon.stopService()
        self.assertFalse(pool.started)
        self.assertFalse(self.daemon.luxi.running)


class StartupChecksTest(SynchronousTestCase):
    def write_config(self, paths, cfg):
        os.makedirs(paths.data_dir)
        with open(paths.config_file, "w") as f:
            f.write(configmod.dump(cfg))

    def test_master_loads(self):
        paths = node_paths(self.mktemp())
        self.write_config(paths, small_config())
        self.assertEqual(load_master_config(paths).master.name, "node1.test")

    def test_not_the_master(self):
        tmp = os.path.abspath(self.mktemp())
        paths = Paths.for_node(os.path.join(tmp, "node2.test"), "node2.test")
        self.write_config(paths, small_config())
        with self.assertRaises(ConfigurationError) as cm:
            load_master_config(paths)
        self.assertIn("not the master", str(cm.exception))
        self.assertIn("node1.test", str(cm.exception))

    def test_not_initialised(self):
        with self.assertRaises(ConfigurationError) as cm:
            load_master_config(node_paths(self.mktemp()))
        self.assertIn("gnt-cluster init", str(cm.exception))
