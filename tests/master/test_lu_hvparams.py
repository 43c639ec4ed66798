"""Hypervisor parameters through the real queue and in-process node daemons: the
master's syntax checks and the nodes' validation on instance create, modify and
start and on cluster (and OS) parameter changes; a refusal changes nothing."""

from __future__ import annotations

import os

from ganeti.core import constants as c
from tests.master.test_lu_instance import InstanceCase, create_op


def kvm_create(name="kvm1.test", **hvparams):
    return create_op(name, hypervisor="kvm", hvparams=hvparams)


def cluster_op(**params):
    return {"OP_ID": "OP_CLUSTER_SET_PARAMS", **params}


class HvParamsCase(InstanceCase):
    def setUp(self):
        super().setUp()
        self.run_ok(cluster_op(enabled_hypervisors=[c.HT_FAKE, c.HT_KVM]))
        self.net.contacted.clear()
        # a kernel the node has (under its root)
        boot = os.path.join(self.master.paths.root, "boot")
        os.makedirs(boot, exist_ok=True)
        with open(os.path.join(boot, "vmlinuz"), "w") as f:
            f.write("kernel")

    def refused(self, op, needle, cls="OpPrereqError", code="wrong_input"):
        serial = self.config.serial_no
        status, results, _log = self.master.finish(self.master.submit(op))
        self.assertEqual(status, "error", results)
        got_cls, args = results[-1]
        self.assertEqual(got_cls, cls, args)
        if code is not None:
            self.assertEqual(args[1], code, args)
        self.assertIn(needle, args[0])
        self.assertEqual(self.config.serial_no, serial)  # nothing changed
        return args[0]

    def validations(self):
        return [n for n, call in self.net.contacted if call == "hypervisor_validate_params"]


class InstanceHvParamsTest(HvParamsCase):
    def test_create_with_good_parameters_is_validated_on_the_node(self):
        self.run_ok(kvm_create(kernel_path="/boot/vmlinuz", boot_order="network",
                               cpu_mask="0-1:all"))
        inst = self.config.instance_by_name("kvm1.test")
        self.assertEqual(inst.hvparams["kernel_path"], "/boot/vmlinuz")
        self.assertEqual(self.validations(), ["node1.test"])

    def test_create_refuses_bad_syntax(self):
        cases = [
            ({"boot_order": "usb"}, "Parameter 'boot_order' fails syntax check"),
            ({"nic_type": "virtio"}, "Parameter 'nic_type' fails syntax check"),
            ({"disk_cache": "unsafe"}, "Parameter 'disk_cache' fails syntax check"),
            ({"kernel_path": "vmlinuz"}, "Parameter 'kernel_path' fails syntax check: must be "
                                         "an absolute normalized path"),
            ({"security_model": "user"}, "Parameter 'security_domain' fails syntax check"),
            ({"cpu_cores": -1}, "Parameter 'cpu_cores' fails syntax check"),
            ({"vnc_tls": True}, "Parameter 'vnc_tls' fails syntax check"),
            ({"serial_speed": 1234}, "Parameter 'serial_speed' fails syntax check"),
        ]
        for hvparams, needle in cases:
            self.refused(kvm_create(**hvparams), needle)
        self.assertIsNone(self.config.instance_by_name("kvm1.test"))
        self.assertEqual(self.validations(), [])  # refused before asking the nodes

    def test_create_refused_by_the_node(self):
        message = self.refused(kvm_create(kernel_path="/boot/nosuch"),
                               "Hypervisor parameter validation failed on node node1.test")
        self.assertIn("Parameter 'kernel_path' fails validation: not found or not a file",
                      message)
        self.assertIsNone(self.config.instance_by_name("kvm1.test"))

    def test_pool_security_model_needs_a_uid_pool(self):
        self.refused(kvm_create(security_model="pool"),
                     "the cluster's user-id pool is empty")
        self.run_ok(cluster_op(uid_pool=[[4000, 4009]]))
        self.run_ok(kvm_create(security_model="pool"))

    def test_modify(self):
        self.run_ok(kvm_create())
        modify = {"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "kvm1.test"}
        self.refused({**modify, "hvparams": {"disk_type": "nvme"}},
                     "Parameter 'disk_type' fails syntax check")
        message = self.refused({**modify, "hvparams": {"initrd_path": "/boot/initrd"}},
                               "Hypervisor parameter validation failed on node node1.test")
        self.assertIn("Parameter 'initrd_path'", message)
        self.run_ok({**modify, "hvparams": {"kernel_path": "/boot/vmlinuz"}})
        self.assertEqual(self.config.instance_by_name("kvm1.test").hvparams["kernel_path"],
                         "/boot/vmlinuz")

    def test_fake_hypervisor_unchanged(self):
        self.run_ok(create_op("fake1.test"))
        self.refused(create_op("fake2.test", hvparams={"kernel_path": "/boot/vmlinuz"}),
                     "Unknown hypervisor parameter(s) for fake: kernel_path")
        self.assertEqual(self.validations(), [])  # nothing for the node to check

    def test_start_with_temporary_parameters(self):
        self.run_ok(kvm_create())
        start = {"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "kvm1.test"}
        self.refused({**start, "hvparams": {"boot_order": "usb"}},
                     "Parameter 'boot_order' fails syntax check")
        self.refused({**start, "hvparams": {"kernel_path": "/boot/nosuch"}},
                     "Hypervisor parameter validation failed on node node1.test: Parameter "
                     "'kernel_path' fails validation")
        self.assertEqual(self.config.instance_by_name("kvm1.test").admin_state,
                         c.ADMINST_DOWN)


class ClusterHvParamsTest(HvParamsCase):
    def test_good_cluster_parameters_are_validated_on_the_nodes(self):
        self.run_ok(cluster_op(hvparams={"kvm": {"kernel_path": "/boot/vmlinuz"}}))
        self.assertEqual(self.config.cluster.hvparams["kvm"]["kernel_path"], "/boot/vmlinuz")
        self.assertEqual(self.validations(), ["node1.test"])

    def test_bad_cluster_parameters_change_nothing(self):
        for hvparams, needle in [
                ({"kvm": {"boot_order": "usb"}}, "Parameter 'boot_order' fails syntax check"),
                ({"kvm": {"migration_port": 70000}}, "Parameter 'migration_port' fails "
                                                     "syntax check: invalid port number"),
                ({"kvm": {"security_model": "user"}}, "Parameter 'security_domain'"),
                ({"fake": {"migration_mode": "x"}}, "Parameter 'migration_mode'")]:
            self.refused(cluster_op(hvparams=hvparams), needle, cls="HypervisorError",
                         code=None)
        # as Ganeti's cluster modify (checked on a real cluster): OpExecError
        message = self.refused(cluster_op(hvparams={"kvm": {"kernel_path": "/no/such"}}),
                               "Hypervisor parameter validation failed on node node1.test",
                               cls="OpExecError", code=None)
        self.assertIn("Parameter 'kernel_path' fails validation", message)
        self.assertEqual(self.config.cluster.hvparams["kvm"]["kernel_path"], "")

    def test_os_hvp(self):
        # gnt-os modify -H: the same checks on the OS's parameters over the cluster's
        self.refused(cluster_op(os_hvp={"busybox": {"kvm": {"nic_type": "virtio"}}}),
                     "Parameter 'nic_type' fails syntax check", cls="HypervisorError",
                     code=None)
        self.refused(cluster_op(os_hvp={"busybox": {"kvm": {"kernel_path": "/boot/x"}}}),
                     "Parameter 'kernel_path' fails validation", cls="OpExecError", code=None)
        self.assertEqual(self.config.cluster.os_hvp, {})
        self.run_ok(cluster_op(os_hvp={"busybox": {"kvm": {"kernel_path": "/boot/vmlinuz"}}}))
        self.assertEqual(self.config.cluster.os_hvp,
                         {"busybox": {"kvm": {"kernel_path": "/boot/vmlinuz"}}})

    def test_pool_security_model_and_the_uid_pool(self):
        self.refused(cluster_op(hvparams={"kvm": {"security_model": "pool"}}),
                     "the cluster's user-id pool is empty")
        self.run_ok(cluster_op(hvparams={"kvm": {"security_model": "pool"}},
                               uid_pool=[[4000, 4001]]))
        # the pool cannot be emptied while the model needs it
        self.refused(cluster_op(remove_uids=[[4000, 4001]]),
                     "the cluster's user-id pool is empty")
        self.refused(cluster_op(uid_pool=[]), "the cluster's user-id pool is empty")
        self.assertEqual(self.config.cluster.uid_pool, [[4000, 4001]])
