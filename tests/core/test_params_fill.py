"""Filled parameters (ganeti.core.params_fill), Ganeti's Cluster.Fill* semantics."""

from __future__ import annotations

import copy

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants
from ganeti.core import params_fill as pf
from ganeti.core.errors import OpPrereqError
from ganeti.core.objects import NIC, Instance, Node, NodeGroup
from tests.fakes.configs import small_config


def _instance(**kw) -> Instance:
    base = dict(uuid="i1", name="i1.test", primary_node="n1", hypervisor="kvm")
    base.update(kw)
    return Instance(**base)


class HvTest(SynchronousTestCase):
    def setUp(self):
        self.cluster = small_config(enabled_hypervisors=["kvm", "fake"]).cluster
        self.cluster.hvparams = {"kvm": {"kernel_path": "/boot/c", "migration_port": 9000,
                                         "acpi": False}}
        self.cluster.os_hvp = {"debian+x": {"kvm": {"kernel_path": "/boot/os",
                                                    "serial_speed": 9600}},
                               "debian": {"kvm": {"kernel_path": "/boot/base"}}}

    def test_layers_in_order(self):
        inst = _instance(os="debian+x", hvparams={"serial_speed": 115200})
        full = pf.fill_instance_hv(self.cluster, inst)
        self.assertEqual(full["kernel_path"], "/boot/os")     # os_hvp over cluster
        self.assertEqual(full["serial_speed"], 115200)        # instance over os_hvp
        self.assertFalse(full["acpi"])                        # cluster over built-in
        self.assertEqual(full["root_path"], "/dev/vda1")      # built-in default
        self.assertEqual(full["migration_port"], 9000)
        self.assertEqual(set(full), set(constants.HVC_DEFAULTS["kvm"]))

    def test_os_hvp_uses_the_full_name_only(self):
        # as Ganeti's GetHVDefaults: "debian" does not apply to "debian+y"
        full = pf.fill_instance_hv(self.cluster, _instance(os="debian+y"))
        self.assertEqual(full["kernel_path"], "/boot/c")
        self.assertEqual(pf.fill_instance_hv(self.cluster, _instance(os="debian"))
                         ["kernel_path"], "/boot/base")
        self.assertEqual(pf.fill_hv(self.cluster, "kvm", None, {})["kernel_path"], "/boot/c")

    def test_skip_globals(self):
        inst = _instance(os=None, hvparams={"migration_mode": "non-live", "acpi": True})
        full = pf.fill_instance_hv(self.cluster, inst, skip_globals=True)
        for key in pf.HVC_GLOBALS:
            self.assertNotIn(key, full)
        self.assertTrue(full["acpi"])

    def test_pure(self):
        before = copy.deepcopy(self.cluster)
        inst = _instance(os="debian+x", hvparams={"acpi": True})
        full = pf.fill_instance_hv(self.cluster, inst)
        full["kernel_path"] = "changed"
        self.assertEqual(self.cluster, before)
        self.assertEqual(inst.hvparams, {"acpi": True})

    def test_unknown_hypervisor_has_only_what_is_stored(self):
        self.assertEqual(pf.fill_hv(self.cluster, "vmware", None, {"x": 1}), {"x": 1})

    def test_every_hypervisor_ganeti_knows_has_defaults(self):
        # Ganeti's (issue 34): lxc's defaults fill what is stored
        filled = pf.fill_hv(self.cluster, "lxc", None, {"num_ttys": 2})
        self.assertEqual((filled["num_ttys"], filled["startup_timeout"]), (2, 30))


class BeNicTest(SynchronousTestCase):
    def setUp(self):
        self.cluster = small_config().cluster
        self.cluster.beparams = {"default": {"maxmem": 512, "vcpus": 2}}
        self.cluster.nicparams = {"default": {"link": "br7"}}

    def test_fill_be(self):
        full = pf.fill_instance_be(self.cluster, _instance(beparams={"vcpus": 4}))
        self.assertEqual(full, {**constants.BEC_DEFAULTS, "maxmem": 512, "vcpus": 4})

    def test_fill_nic(self):
        nic = NIC(mac="aa:00:00:00:00:01", nicparams={"mode": "routed"})
        self.assertEqual(pf.fill_instance_nic(self.cluster, nic),
                         {"mode": "routed", "link": "br7", "vlan": ""})
        self.assertEqual(pf.fill_nic(self.cluster, {}),
                         {"mode": "bridged", "link": "br7", "vlan": ""})


class NdTest(SynchronousTestCase):
    def test_cluster_group_node(self):
        cfg = small_config()
        cfg.cluster.ndparams = {"spindle_count": 3, "ssh_port": 2222}
        group = NodeGroup(uuid="g", name="g", ndparams={"spindle_count": 5, "ovs": True})
        node = Node(uuid="n", name="n", primary_ip="127.0.0.1", group="g",
                    ndparams={"ovs": False})
        self.assertEqual(pf.fill_nd(cfg.cluster, group, node),
                         {**constants.NDC_DEFAULTS, "spindle_count": 5, "ssh_port": 2222,
                          "ovs": False})
        self.assertEqual(pf.fill_nd(cfg.cluster, group)["ovs"], True)
        self.assertEqual(pf.fill_nd(cfg.cluster, None, node)["spindle_count"], 3)


class DiskParamsTest(SynchronousTestCase):
    def test_cluster_then_group_per_template(self):
        cluster = small_config().cluster
        cluster.diskparams = {"drbd": {"resync-rate": 1000, "metavg": "meta"},
                              "plain": {"stripes": 2}}
        group = NodeGroup(uuid="g", name="g", diskparams={"drbd": {"resync-rate": 2000}})
        full = pf.fill_disk_params(cluster, group)
        self.assertEqual(set(full), constants.DISK_TEMPLATES)
        self.assertEqual(full["drbd"]["resync-rate"], 2000)
        self.assertEqual(full["drbd"]["metavg"], "meta")
        self.assertEqual(full["drbd"]["protocol"], "C")
        self.assertEqual(full["plain"], {"stripes": 2})
        self.assertEqual(full["rbd"], {"pool": "rbd", "access": "kernelspace"})
        self.assertEqual(pf.fill_template_disk_params(cluster, None, "drbd")["resync-rate"],
                         1000)


class OsTest(SynchronousTestCase):
    def setUp(self):
        self.cluster = small_config().cluster
        self.cluster.osparams = {"debian": {"mirror": "base", "arch": "amd64"},
                                 "debian+x": {"mirror": "variant"}}
        self.cluster.osparams_private_cluster = {"debian": {"password": "p"}}

    def test_base_then_variant_then_instance(self):
        full = pf.fill_os(self.cluster, "debian+x", {"arch": "arm64"})
        self.assertEqual(full, {"mirror": "variant", "arch": "arm64"})
        inst = _instance(os="debian+y", osparams={}, osparams_private={"key": "k"})
        self.assertEqual(pf.fill_instance_os(self.cluster, inst),
                         {"mirror": "base", "arch": "amd64"})
        self.assertEqual(pf.fill_instance_os(self.cluster, inst, with_private=True),
                         {"mirror": "base", "arch": "amd64", "password": "p", "key": "k"})
        self.assertEqual(pf.fill_os(self.cluster, None, {"a": 1}), {"a": 1})

    def test_conflicting_visibility_is_refused(self):
        with self.assertRaises(OpPrereqError) as ctx:
            pf.fill_os(self.cluster, "debian", {"password": "x"}, {}, {"arch": "y"})
        text = ctx.exception.args[0]
        self.assertIn("Cannot assign multiple values to OS parameters.", text)
        self.assertIn("- at public visibility:  'arch', 'password'", text)
        self.assertIn("- at private visibility: 'password'", text)
        self.assertIn("- at secret visibility:  'arch'", text)
        self.assertEqual(ctx.exception.args[1], "wrong_input")


class IPolicyTest(SynchronousTestCase):
    def test_group_over_cluster_over_builtin(self):
        cluster = small_config().cluster
        cluster.ipolicy = {"vcpu-ratio": 2.0, "std": {"memory-size": 256}}
        group = NodeGroup(uuid="g", name="g", ipolicy={"std": {"cpu-count": 2},
                                                       "disk-templates": ["plain"]})
        full = pf.fill_ipolicy(cluster, group)
        self.assertEqual(full["vcpu-ratio"], 2.0)
        self.assertEqual(full["spindle-ratio"], constants.IPOLICY_DEFAULT_SPINDLE_RATIO)
        self.assertEqual(full["std"], {**constants.ISPECS_STD_DEFAULTS, "memory-size": 256,
                                       "cpu-count": 2})
        self.assertEqual(full["disk-templates"], ["plain"])
        self.assertEqual(full["minmax"], [constants.ISPECS_MINMAX_DEFAULTS])
        self.assertEqual(pf.fill_ipolicy(cluster)["disk-templates"],
                         sorted(constants.DISK_TEMPLATES))
