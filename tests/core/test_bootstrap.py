"""Cluster init: what real Ganeti's daemons need in the config it writes."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import bootstrap, constants
from tests.fakes.configs import small_config


class GanetiRequirementsTest(SynchronousTestCase):
    def test_values_as_ganeti_init_writes_them(self):
        cl = small_config().cluster
        self.assertEqual(cl.highest_used_port, constants.FIRST_DRBD_PORT - 1)
        self.assertEqual(cl.rsahostkeypub, "")  # required by Ganeti's daemons, may be empty
        for template in (constants.DT_RBD, constants.DT_EXT, constants.DT_GLUSTER):
            self.assertEqual(cl.diskparams[template]["access"], constants.DISK_KERNELSPACE)

    def test_ssh_host_key(self):
        path = self.mktemp()
        self.assertEqual(bootstrap.ssh_host_key(path), "")  # absent
        with open(path, "w") as f:
            f.write("ssh-rsa AAAAB3NzaC1yc2E root@host\n")
        self.assertEqual(bootstrap.ssh_host_key(path), "AAAAB3NzaC1yc2E")
        with open(path, "w") as f:
            f.write("garbage\n")
        self.assertEqual(bootstrap.ssh_host_key(path), "")
        os.unlink(path)
