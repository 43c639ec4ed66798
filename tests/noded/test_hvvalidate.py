"""hypervisor_validate_params on the node (Ganeti's ValidateParameters), over the
node's HTTP interface and directly."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.noded import hvvalidate
from tests.noded.helpers import MemoryNode, node_paths


def kvm(**overrides):
    params = dict(c.HVC_DEFAULTS[c.HT_KVM])
    params.update(overrides)
    return params


class ValidateCallTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.node = MemoryNode(self.paths)
        # a kernel on the node (under its root) and one outside (shared by all nodes)
        boot = os.path.join(self.paths.root, "boot")
        os.makedirs(boot)
        with open(os.path.join(boot, "vmlinuz"), "w") as f:
            f.write("kernel")
        self.shared = os.path.abspath(self.mktemp())
        with open(self.shared, "w") as f:
            f.write("initrd")

    def call(self, hv, params):
        status, reply = self.node.put("hypervisor_validate_params", [hv, params])
        self.assertEqual(status, 200)
        return reply

    def test_good_parameters(self):
        self.assertEqual(self.call("kvm", kvm()), [True, None])
        self.assertEqual(self.call("kvm", kvm(kernel_path="/boot/vmlinuz",
                                              initrd_path=self.shared,
                                              mem_path=os.path.dirname(self.shared),
                                              cdrom_image_path="http://x/y.iso",
                                              vnc_bind_address="127.0.0.1",
                                              security_model="user",
                                              security_domain="root")), [True, None])
        self.assertEqual(self.call("fake", {"migration_mode": "live"}), [True, None])

    def test_missing_files_are_refused_naming_the_parameter(self):
        cases = [
            (kvm(kernel_path="/boot/nosuch"), "Parameter 'kernel_path' fails validation: "
                                              "not found or not a file (current value: "
                                              "'/boot/nosuch')"),
            (kvm(initrd_path="/boot"), "Parameter 'initrd_path' fails validation: not "
                                       "found or not a file"),
            (kvm(vnc_password_file="/etc/ganeti/vnc-cluster-password"),
             "Parameter 'vnc_password_file' fails validation"),
            (kvm(mem_path="/no/such/dir"), "Parameter 'mem_path' fails validation: not found "
                                           "or not a directory"),
            (kvm(cdrom_image_path="/srv/none.iso"), "not found or not a file or URL"),
            (kvm(security_model="user", security_domain="no-such-user-s3a"),
             "Parameter 'security_domain' fails validation: Unknown security domain user "
             "no-such-user-s3a"),
            (kvm(vnc_bind_address="nosuchif0"), "Parameter 'vnc_bind_address' fails "
                                                "validation"),
            (kvm(spice_bind="127.0.0.1", vnc_bind_address="127.0.0.1"),
             "Both SPICE and VNC are configured"),
            (kvm(spice_bind="nosuchif0"), "spice_bind parameter must be either a valid IP"),
        ]
        for params, needle in cases:
            ok, message = self.call("kvm", params)
            self.assertFalse(ok, params)
            self.assertIn(needle, message)

    def test_bad_arguments(self):
        status, reply = self.node.put("hypervisor_validate_params", ["vmware", {}])
        self.assertEqual((status, reply[0]), (400, False))
        self.assertIn("hvname", reply[1])
        status, reply = self.node.put("hypervisor_validate_params", ["kvm", []])
        self.assertEqual((status, reply[0]), (400, False))

    def test_direct_with_injected_lookups(self):
        hvvalidate.validate(self.paths, c.HT_KVM, kvm(vnc_bind_address="br7"),
                            has_interface=lambda name: name == "br7")
        err = self.assertRaises(hvvalidate.ValidationError, hvvalidate.validate, self.paths,
                                c.HT_KVM, kvm(security_model="user", security_domain="kvm"),
                                has_user=lambda name: False)
        self.assertIn("Unknown security domain user kvm", str(err))
        hvvalidate.validate(self.paths, c.HT_KVM,
                            kvm(security_model="user", security_domain="kvm"),
                            has_user=lambda name: name == "kvm")
        self.assertRaises(hvvalidate.ValidationError, hvvalidate.validate, self.paths,
                          "vmware", {})
