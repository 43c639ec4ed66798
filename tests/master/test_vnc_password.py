"""The VNC password files named by hypervisor parameters join the ancillary files:
redist-conf and node add push them to every node (Ganeti's GetAncillaryFiles)."""

from __future__ import annotations

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.master.config.replication import Replicator
from tests.fakes.configs import small_config
from tests.fakes.instances import add_instance
from tests.fakes.nodes import sha1_of
from tests.master.test_nodes import NodesTestCase

PASSWORD = "/etc/ganeti/vnc-cluster-password"


class VncFilesListTest(SynchronousTestCase):
    def test_cluster_os_and_instance_files(self):
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE, c.HT_KVM])
        self.assertEqual(Replicator.vnc_password_files(cfg), [])  # kvm's default: none
        cfg.cluster.hvparams[c.HT_KVM] = {"vnc_password_file": PASSWORD}
        cfg.cluster.os_hvp = {"deb": {c.HT_KVM: {"vnc_password_file": "/etc/vnc/deb"}}}
        inst = add_instance(cfg, "i1.test")
        inst.hypervisor = c.HT_KVM
        inst.hvparams = {"vnc_password_file": "/srv/vnc/i1"}
        other = add_instance(cfg, "i2.test")  # the fake hypervisor has no VNC
        other.hvparams = {"vnc_password_file": "/srv/vnc/i2"}
        self.assertEqual(Replicator.vnc_password_files(cfg),
                         ["/etc/ganeti/vnc-cluster-password", "/etc/vnc/deb", "/srv/vnc/i1"])
        # a hypervisor that is not enabled names nothing
        cfg.cluster.enabled_hypervisors = [c.HT_FAKE]
        self.assertEqual(Replicator.vnc_password_files(cfg), ["/srv/vnc/i1"])


class VncRedistTest(NodesTestCase):
    extra_nodes = 2

    def write(self, root, content):
        path = root + PASSWORD
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(content)
        return path

    def test_redist_and_node_add_push_the_password_file(self):
        self.add(2)
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "enabled_hypervisors": ["fake", "kvm"]})
        # the nodes validate the file: it must be there before the parameter names it
        master_file = self.write(self.master.paths.root, "secret-1\n")
        err = self.fails({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                          "hvparams": {"kvm": {"vnc_password_file": PASSWORD}}}, None,
                         "Hypervisor parameter validation failed on node node2.test: "
                         "Parameter 'vnc_password_file' fails validation")
        self.assertEqual(err[0], "OpExecError")  # as Ganeti's cluster modify
        self.write(self.net.paths("node2.test").root, "old\n")
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                 "hvparams": {"kvm": {"vnc_password_file": PASSWORD}}})
        # redist-conf ships the master's copy
        self.write(self.master.paths.root, "secret-2\n")
        self.ok({"OP_ID": "OP_CLUSTER_REDIST_CONF"})
        n2 = self.net.paths("node2.test").root + PASSWORD
        self.assertEqual(sha1_of(n2), sha1_of(master_file))
        # a node that joins gets it too
        self.add(3)
        self.assertEqual(sha1_of(self.net.paths("node3.test").root + PASSWORD),
                         sha1_of(master_file))
