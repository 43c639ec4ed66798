"""The masterd service tree: dependency order, socket mode and backlog, SIGHUP hooks,
refusal off the master."""

import os

from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.errors import ConfigurationError
from ganeti.core.paths import Paths
from ganeti.daemon import LISTEN_BACKLOG, DaemonLog
from ganeti.master.service import MasterDaemon, ThreadPoolService, load_master_config
from tests.fakes.configs import node_paths, small_config


class MasterDaemonTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self.mktemp())
        self.reactor = MemoryReactorClock()
        self.daemon = MasterDaemon(self.reactor, self.paths, small_config())

    def test_children_in_dependency_order(self):
        kinds = [type(s).__name__ for s in self.daemon]
        self.assertEqual(kinds, ["ReloadService", "ThreadPoolService", "ConfigWriterService",
                                 "JobQueueService", "LuxiService", "LuxiService",
                                 "WatcherService", "InstanceEventWatch"])
        # the second: Ganeti's WConfD socket (ganeti/master/wconfd.py)
        self.assertEqual(self.daemon.wconfd.path, self.paths.wconfd_socket)

    def test_start_listens_with_mode_0660_and_stop_reverses(self):
        self.daemon.startService()
        pool = next(s for s in self.daemon if isinstance(s, ThreadPoolService)).pool
        self.assertTrue(pool.started)
        luxi, wconfd = self.reactor.unixServers
        for port, socket_path in ((luxi, self.paths.luxi_socket),
                                  (wconfd, self.paths.wconfd_socket)):
            path, factory, backlog, mode, want_pid = port
            self.assertEqual((path, mode, want_pid), (socket_path, 0o660, False))
            self.assertEqual(backlog, LISTEN_BACKLOG)
        self.assertTrue(os.path.isdir(self.paths.socket_dir))
        self.daemon.stopService()
        self.assertFalse(pool.started)
        self.assertFalse(self.daemon.luxi.running)


class MasterSighupTest(SynchronousTestCase):
    def test_sighup_reopens_the_log_on_the_reactor(self):
        paths = node_paths(self.mktemp())
        reactor = MemoryReactorClock()
        handlers = []
        daemon_log = DaemonLog()
        path = os.path.join(os.path.abspath(self.mktemp()), "master-daemon.log")
        os.makedirs(os.path.dirname(path))
        daemon_log.add_file(path)
        daemon = MasterDaemon(reactor, paths, small_config(), daemon_log=daemon_log,
                              install_signal=lambda h: handlers.append(h) or (lambda: None))
        kinds = [type(s).__name__ for s in daemon]
        self.assertEqual(kinds[:2], ["LogService", "ReloadService"])
        daemon.startService()
        self.addCleanup(daemon.stopService)
        self.assertEqual(handlers, [])  # installed once the reactor runs
        reactor.run()
        self.assertEqual(len(handlers), 1)
        os.rename(path, path + ".1")
        handlers[0]()
        self.assertTrue(os.path.exists(path))
        with open(path, encoding="utf-8") as f:
            self.assertIn("Reopened the log file", f.read())


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
