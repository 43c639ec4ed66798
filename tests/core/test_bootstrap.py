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

    def test_every_hypervisors_parameters_are_stored(self):
        # as Ganeti's init (GetInfo lists them all; issue 34): the defaults of every
        # hypervisor Ganeti knows, paths under the node's root
        cl = small_config().cluster
        self.assertEqual(sorted(cl.hvparams), sorted(constants.HYPER_TYPES))
        self.assertEqual(cl.hvparams["xen-pvm"]["kernel_path"], "/boot/vmlinuz-3-xenU")
        self.assertEqual(cl.hvparams["lxc"]["num_ttys"], 6)
        self.assertEqual(cl.hvparams["xen-hvm"]["vnc_password_file"],
                         "/nonexistent/node1.test/etc/ganeti/vnc-cluster-password")
        self.assertEqual(cl.hvparams["chroot"], {"init_script": "/ganeti-chroot"})

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
