"""Paths honour GANETI_ROOTDIR and GANETI_HOSTNAME as Ganeti does."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants
from ganeti.core.errors import ConfigurationError
from ganeti.core.paths import Paths


class PathsTest(SynchronousTestCase):
    def test_real_node_paths(self):
        p = Paths.from_env({})
        self.assertEqual(p.data_dir, "/var/lib/ganeti")
        self.assertEqual(p.run_dir, "/var/run/ganeti")
        self.assertEqual(p.log_dir, "/var/log/ganeti")
        self.assertEqual(p.luxi_socket, "/var/run/ganeti/socket/ganeti-query")
        self.assertEqual(p.config_file, "/var/lib/ganeti/config.data")
        self.assertEqual(p.env(), {})

    def test_virtual_node_paths(self):
        p = Paths.from_env({"GANETI_ROOTDIR": "/srv/vc/node1.x.test/",
                            "GANETI_HOSTNAME": "node1.x.test"})
        self.assertEqual(p.hostname, "node1.x.test")
        self.assertEqual(p.data_dir, "/srv/vc/node1.x.test/var/lib/ganeti")
        self.assertEqual(p.run_dir, "/srv/vc/node1.x.test/var/run/ganeti")
        self.assertEqual(p.log_dir, "/srv/vc/node1.x.test/var/log/ganeti")
        self.assertEqual(p.pid_file(constants.MASTERD),
                         "/srv/vc/node1.x.test/var/run/ganeti/ganeti-masterd.pid")
        self.assertEqual(p.log_file(constants.MASTERD),
                         "/srv/vc/node1.x.test/var/log/ganeti/master-daemon.log")
        self.assertEqual(p.ssconf_file("master_node"),
                         "/srv/vc/node1.x.test/var/lib/ganeti/ssconf_master_node")
        self.assertEqual(p.rapi_users, "/srv/vc/node1.x.test/var/lib/ganeti/rapi/users")
        self.assertEqual(p.env(), {"GANETI_ROOTDIR": "/srv/vc/node1.x.test",
                                   "GANETI_HOSTNAME": "node1.x.test"})

    def test_both_variables_required(self):
        with self.assertRaises(ConfigurationError):
            Paths.from_env({"GANETI_ROOTDIR": "/srv/vc/node1"})
        with self.assertRaises(ConfigurationError):
            Paths.from_env({"GANETI_HOSTNAME": "node1"})

    def test_root_must_end_in_hostname(self):
        with self.assertRaises(ConfigurationError) as cm:
            Paths.from_env({"GANETI_ROOTDIR": "/srv/vc/node2", "GANETI_HOSTNAME": "node1"})
        self.assertIn("last component", str(cm.exception))

    def test_root_must_be_absolute(self):
        with self.assertRaises(ConfigurationError):
            Paths.from_env({"GANETI_ROOTDIR": "vc/node1", "GANETI_HOSTNAME": "node1"})
