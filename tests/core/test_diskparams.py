"""Disks as the node gets them: logical-disk parameters (Ganeti's ComputeLDParams
and AnnotateDiskParams), dynamic parameters, and ``disks_info`` in instance dicts."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import diskparams, rpcdefs
from ganeti.core.objects import Disk, Instance
from ganeti.core.rpcdefs.disks import DiskArg, disk_dict, rename_list
from ganeti.core.rpcdefs.encoders import instance_dict
from tests.fakes.configs import small_config


class LdParamsTest(SynchronousTestCase):
    def test_plain_stripes_from_the_template(self):
        self.assertEqual(diskparams.compute_ld_params("plain", {"plain": {"stripes": 3}}),
                         [{"stripes": 3}])
        self.assertEqual(diskparams.compute_ld_params("plain", {}), [{"stripes": 1}])

    def test_drbd_tree(self):
        drbd, data, meta = diskparams.compute_ld_params(
            "drbd", {"drbd": {"metavg": "metas", "data-stripes": 2, "meta-barriers": True,
                              "disk-barriers": "bf"}})
        self.assertEqual(drbd["default-metavg"], "metas")
        self.assertEqual(drbd["disable-meta-flush"], True)
        self.assertEqual(drbd["disabled-barriers"], "bf")
        self.assertEqual(data, {"stripes": 2})
        self.assertEqual(meta, {"stripes": 1})

    def test_unknown_template(self):
        self.assertRaises(ValueError, diskparams.compute_ld_params, "nope", {})


class DisksInfoTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = small_config()
        self.cfg.cluster.diskparams = {"plain": {"stripes": 2}}
        group = next(iter(self.cfg.nodegroups.values()))
        group.diskparams = {"plain": {"stripes": 4}}
        master = self.cfg.cluster.master_node
        self.d0 = Disk(uuid="d0", dev_type="plain", logical_id=["xenvg", "a.disk0"], size=10,
                       iv_name="disk/0", nodes=[master])
        self.d1 = Disk(uuid="d1", dev_type="file", logical_id=["loop", "/srv/f/i/b"], size=5,
                       iv_name="disk/1", nodes=[master], params={"x": 1})
        self.cfg.disks = {"d0": self.d0, "d1": self.d1}
        self.inst = Instance(uuid="i", name="i.test", primary_node=master, hypervisor="fake",
                             disks=["d1", "d0"])
        self.ctx = rpcdefs.EncodeContext(self.cfg)

    def test_instance_dict_has_the_disks_in_order_with_params(self):
        info = instance_dict(self.inst, self.ctx)["disks_info"]
        self.assertEqual([d["uuid"] for d in info], ["d1", "d0"])
        self.assertEqual(info[1]["params"], {"stripes": 4})  # the group's value wins
        self.assertEqual(info[0]["params"], {"x": 1})
        self.assertEqual(info[1]["dynamic_params"], {})
        self.assertEqual(info[1]["logical_id"], ["xenvg", "a.disk0"])

    def test_disk_params_of_its_own_win(self):
        self.d0.params = {"stripes": 7}
        self.assertEqual(disk_dict(DiskArg(self.d0, self.inst), self.ctx)["params"],
                         {"stripes": 7})

    def test_bare_disk_uses_the_cluster(self):
        self.assertEqual(disk_dict(self.d0, self.ctx)["params"], {"stripes": 2})

    def test_unknown_disk_refused(self):
        self.inst.disks = ["d0", "nope"]
        self.assertRaises(ValueError, instance_dict, self.inst, self.ctx)

    def test_rename_list(self):
        self.assertEqual(rename_list([(self.d0, ("xenvg", "new"))], self.ctx),
                         [[self.d0.to_dict(), ["xenvg", "new"]]])

    def test_drbd_dynamic_params_for_each_end(self):
        master = self.cfg.cluster.master_node
        node = self.cfg.nodes[master]
        other = node.clone()
        other.uuid, other.name, other.primary_ip = "n2", "node2.test", "127.0.1.2"
        other.secondary_ip = "10.0.0.2"
        node.secondary_ip = "10.0.0.1"
        self.cfg.nodes["n2"] = other
        drbd = Disk(uuid="dd", dev_type="drbd", logical_id=[master, "n2", 11000, 0, 3, "s"],
                    children=[Disk(dev_type="plain", logical_id=["xenvg", "d"]),
                              Disk(dev_type="plain", logical_id=["xenvg", "m"])])
        mine = diskparams.disk_wire_dicts(self.cfg, self.inst, [drbd], "node2.test")[0]
        self.assertEqual(mine["dynamic_params"], {"local-ip": "10.0.0.2", "remote-ip":
                                                  "10.0.0.1", "local-minor": 3,
                                                  "remote-minor": 0, "mirror": "emulated"})
        self.patch(diskparams, "MIRROR_ENGINES", {self.inst.hypervisor: "qemu"})
        mine = diskparams.disk_wire_dicts(self.cfg, self.inst, [drbd], "node2.test")[0]
        self.assertEqual(mine["dynamic_params"]["mirror"], "qemu")  # chosen per instance
        self.assertEqual(mine["children"][0]["params"], {"stripes": 1})
        self.assertIn("resync-rate", mine["params"])
        nobody = diskparams.disk_wire_dicts(self.cfg, self.inst, [drbd], None)[0]
        self.assertEqual(nobody["dynamic_params"], {})

    def test_instance_calls_send_each_node_its_own_dynamic_params(self):
        """instance_start (and every call with an instance) is encoded per node: a drbd
        disk in ``disks_info`` names the node's own minor (a kvm drbd guest failed to
        start with the body made for no node)."""
        master = self.cfg.cluster.master_node
        other = self.cfg.nodes[master].clone()
        other.uuid, other.name, other.primary_ip = "n2", "node2.test", "127.0.1.2"
        self.cfg.nodes["n2"] = other
        self.cfg.disks["dd"] = Disk(
            uuid="dd", dev_type="drbd", logical_id=[master, "n2", 11000, 0, 3, "s"],
            children=[Disk(dev_type="plain", logical_id=["xenvg", "d"]),
                      Disk(dev_type="plain", logical_id=["xenvg", "m"])])
        self.inst.disks = ["dd"]
        for name in ("instance_start", "blockdev_assemble", "instance_migrate",
                     "accept_instance"):
            self.assertTrue(rpcdefs.CALLS[name].per_node, name)
        ctx = rpcdefs.EncodeContext(self.cfg, node="node2.test")
        (info,) = instance_dict(self.inst, ctx)["disks_info"]
        self.assertEqual(info["dynamic_params"]["local-minor"], 3)
