"""Master-side encoders: an instance travels with the parameters in force (filled
from the cluster), the call's overrides on top; the table still checks the result."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, rpcdefs
from ganeti.core.objects import NIC, Instance, Network
from ganeti.core.rpcdefs.encoders import InstanceArg, instance_dict
from tests.fakes.configs import small_config

NET = "w0000000-0000-4000-8000-000000000001"


class InstanceDictTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = small_config()
        self.cfg.cluster.beparams = {"default": {"maxmem": 512, "minmem": 512}}
        self.cfg.cluster.nicparams = {"default": {"mode": "bridged", "link": "br9"}}
        self.cfg.cluster.osparams = {"busybox": {"size": "small"}}
        self.cfg.networks[NET] = Network(uuid=NET, name="net1", network="10.1.0.0/24")
        self.inst = Instance(uuid="i-x", name="x.test", primary_node=self.cfg.cluster.master_node,
                             hypervisor="fake", os="busybox", beparams={"maxmem": 256},
                             nics=[NIC(uuid="c1", mac="aa:00:00:00:00:01", network=NET,
                                       nicparams={"link": "br0"})])
        self.ctx = rpcdefs.EncodeContext(self.cfg)

    def test_filled_from_the_cluster(self):
        d = instance_dict(self.inst, self.ctx)
        self.assertEqual(d["name"], "x.test")
        self.assertEqual(d["beparams"]["maxmem"], 256)  # the instance's own
        self.assertEqual(d["beparams"]["minmem"], 512)  # the cluster's
        self.assertEqual(d["beparams"]["vcpus"], constants.BEC_DEFAULTS["vcpus"])  # built-in
        self.assertEqual(d["osparams"], {"size": "small"})
        self.assertEqual(d["nics"][0]["nicparams"], {**constants.NICC_DEFAULTS,
                                                     "mode": "bridged", "link": "br0"})
        self.assertEqual(d["nics"][0]["netinfo"]["name"], "net1")
        self.assertEqual(self.inst.beparams, {"maxmem": 256})  # the config is untouched

    def test_overrides_for_one_call(self):
        d = instance_dict(InstanceArg(self.inst, bep={"maxmem": 1024}, osp={"size": "big"}),
                          self.ctx)
        self.assertEqual((d["beparams"]["maxmem"], d["osparams"]["size"]), (1024, "big"))

    def test_secret_os_parameters_are_named(self):
        d = instance_dict(InstanceArg(self.inst, osp_secret={"token": "t0k3n"}), self.ctx)
        self.assertEqual((d["osparams"], d["osparams_secret"]),
                         ({"size": "small", "token": "t0k3n"}, ["token"]))
        self.assertNotIn("osparams_secret", instance_dict(self.inst, self.ctx))

    def test_needs_an_instance_and_a_config(self):
        self.assertRaises(TypeError, instance_dict, "x.test", self.ctx)
        self.assertRaises(ValueError, instance_dict, self.inst, rpcdefs.EncodeContext())

    def test_declared_call_encodes_then_checks(self):
        call = rpcdefs.get_call("instance_os_add")
        self.assertEqual(call.timeout_for([]), rpcdefs.RPC_TMO_1DAY)
        wire = call.encode_args([self.inst, False, 0], self.ctx)
        self.assertEqual(call.check_args(wire)[0]["beparams"]["minmem"], 512)
        err = self.assertRaises(rpcdefs.RpcArgumentError, call.encode_args,
                                ["x.test", False, 0], self.ctx)
        self.assertIn("instance_os_add: cannot encode argument instance", str(err))
        # a node refuses an instance without filled parameters
        self.assertRaises(rpcdefs.RpcArgumentError, call.check_args,
                          [{"name": "x.test"}, False, 0])


class TableTest(SynchronousTestCase):
    def test_domains_and_timeouts(self):
        names = [c.name for d in rpcdefs.DOMAINS for c in d.CALLS]
        self.assertEqual(sorted(names), sorted(rpcdefs.CALLS))
        self.assertEqual((rpcdefs.RPC_TMO_URGENT, rpcdefs.RPC_TMO_FAST, rpcdefs.RPC_TMO_NORMAL,
                          rpcdefs.RPC_TMO_SLOW, rpcdefs.RPC_TMO_4HRS, rpcdefs.RPC_TMO_1DAY),
                         (60, 300, 900, 3600, 14400, 86400))
        # timeouts that follow the arguments (as Ganeti's test_delay)
        self.assertEqual(rpcdefs.get_call("test_delay").timeout_for([30]), 40)
        self.assertEqual(rpcdefs.get_call("run_oob").timeout_for(["/x", "health", "n", 60]),
                         70)

    def test_duplicate_names_refused(self):
        c = rpcdefs.get_call("version")
        self.assertRaises(ValueError, rpcdefs.build_table, [c], [c])
