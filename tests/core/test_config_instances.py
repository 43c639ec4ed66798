"""Checks of instances, disks, NICs and networks (ganeti.core.config_instances)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import config_instances
from ganeti.core.objects import NIC, ConfigData, Disk, Instance, Network
from tests.fakes.configs import small_config

NET = "w0000000-0000-4000-8000-000000000001"
STAMPS = {"serial_no": 1, "ctime": 1700000000.0, "mtime": 1700000000.0}


def _node2(cfg: ConfigData) -> str:
    node = cfg.master
    new = type(node).from_dict({**node.to_dict(), "uuid": "n2", "name": "node2.test",
                                "primary_ip": "127.0.0.2", "secondary_ip": "127.0.0.2",
                                "master_candidate": False})
    cfg.nodes["n2"] = new
    cfg.nodegroups[node.group].members.append("n2")
    return "n2"


def cluster_with_instances() -> ConfigData:
    """A valid config: a drbd instance (with children), a plain one, a file one,
    a diskless one; NICs in and out of a network."""
    cfg = small_config()
    cfg.cluster.highest_used_port = 11010
    cfg.cluster.tcpudp_port_pool = [11005]
    n1 = cfg.cluster.master_node
    n2 = _node2(cfg)
    cfg.networks[NET] = Network(uuid=NET, name="net1", network="10.1.0.0/24",
                                gateway="10.1.0.1", mac_prefix="aa:00:01",
                                reservations="0" * 256, ext_reservations="1" + "0" * 254 + "1")
    cfg.disks["d-drbd"] = Disk(
        uuid="d-drbd", dev_type="drbd", logical_id=[n1, n2, 11000, 0, 0, "s" * 40],
        nodes=[n1, n2], iv_name="disk/0", size=1024,
        children=[Disk(dev_type="plain", logical_id=["xenvg", "x.disk0_data"], size=1024,
                       **STAMPS),
                  Disk(dev_type="plain", logical_id=["xenvg", "x.disk0_meta"], size=128,
                       **STAMPS)], **STAMPS)
    cfg.disks["d-plain"] = Disk(uuid="d-plain", dev_type="plain",
                                logical_id=["xenvg", "y.disk0"], nodes=[n1],
                                iv_name="disk/0", size=512, **STAMPS)
    cfg.disks["d-file"] = Disk(uuid="d-file", dev_type="file",
                               logical_id=["loop", "/srv/ganeti/file-storage/z/disk0"],
                               nodes=[n1], iv_name="disk/0", size=256, **STAMPS)
    cfg.disks["d-file2"] = Disk(uuid="d-file2", dev_type="file",
                                logical_id=["loop", "/srv/ganeti/file-storage/z/disk1"],
                                nodes=[n1], iv_name="disk/1", size=256, **STAMPS)
    cfg.instances["i-x"] = Instance(
        uuid="i-x", name="x.test", primary_node=n1, hypervisor="fake", os="busybox",
        disks=["d-drbd"], network_port=11001,
        nics=[NIC(uuid="c1", mac="aa:00:00:00:00:01", ip="10.1.0.5", network=NET,
                  nicparams={"mode": "bridged", "link": "br0"})])
    cfg.instances["i-y"] = Instance(
        uuid="i-y", name="y.test", primary_node=n1, hypervisor="fake",
        disks=["d-plain"], beparams={"maxmem": 256},
        nics=[NIC(uuid="c2", mac="aa:00:00:00:00:02", nicparams={"mode": "routed",
                                                                  "link": "rt"})])
    cfg.instances["i-z"] = Instance(uuid="i-z", name="z.test", primary_node=n1,
                                    hypervisor="fake", disks=["d-file", "d-file2"])
    cfg.instances["i-w"] = Instance(uuid="i-w", name="w.test", primary_node=n2,
                                    hypervisor="fake", admin_state="up",
                                    admin_state_source="user")
    return cfg


def problems(cfg: ConfigData, **ids) -> list[str]:
    found: list[str] = []
    config_instances.check(cfg, found, **ids)
    return found


class ValidConfigTest(SynchronousTestCase):
    def test_valid_config_has_no_problems_and_round_trips(self):
        cfg = cluster_with_instances()
        self.assertEqual(configmod.verify(cfg), [])
        text = configmod.dump(cfg)
        again = configmod.load(text)
        self.assertEqual(configmod.dump(again), text)
        self.assertEqual(again.disks["d-drbd"].children[1].logical_id, ["xenvg", "x.disk0_meta"])


class InstanceChecksTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = cluster_with_instances()

    def test_unknown_nodes_states_and_hypervisor(self):
        inst = self.cfg.instances["i-w"]
        inst.primary_node = "nope"
        inst.secondary_nodes = ["ghost"]
        inst.admin_state = "sideways"
        inst.admin_state_source = "robot"
        inst.hypervisor = "vmware"
        inst.disk_template = "floppy"
        found = problems(self.cfg)
        where = "instances/i-w (w.test): "
        for text in ("primary_node 'nope' is not a known node",
                     "secondary node 'ghost' is not a known node",
                     "invalid admin_state 'sideways'", "invalid admin_state_source 'robot'",
                     "unknown hypervisor 'vmware'", "unknown disk_template 'floppy'"):
            self.assertIn(where + text, found)

    def test_disk_references(self):
        inst = self.cfg.instances["i-z"]
        inst.disks = ["d-file2", "missing", "d-file2"]
        found = problems(self.cfg)
        self.assertIn("instances/i-z (z.test): disks[0] (d-file2) should be named 'disk/0', "
                      "but is 'disk/1'", found)
        self.assertIn("instances/i-z (z.test): disk 'missing' is not in the disks container",
                      found)
        self.assertIn("instances/i-z (z.test): disk 'd-file2' is listed twice", found)

    def test_disk_shared_by_two_instances(self):
        self.cfg.instances["i-w"].disks = ["d-plain"]
        self.assertIn("disks/d-plain: used by more than one instance: y.test, w.test",
                      problems(self.cfg))

    def test_bad_beparams(self):
        self.cfg.instances["i-y"].beparams = {"maxmem": "lots", "colour": 1}
        found = [p for p in problems(self.cfg) if "beparams" in p]
        self.assertEqual(len(found), 1)
        self.assertTrue(found[0].startswith("instances/i-y (y.test): invalid beparams: "))

    def test_network_port_above_highest_used(self):
        self.cfg.instances["i-x"].network_port = 12000
        self.assertIn("instances/i-x (x.test): network_port 12000 is above the cluster's "
                      "highest_used_port 11010", problems(self.cfg))
        self.cfg.instances["i-x"].network_port = 70000
        self.assertIn("instances/i-x (x.test): network_port 70000 is not a port number",
                      problems(self.cfg))


class NicChecksTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = cluster_with_instances()
        self.nic = self.cfg.instances["i-x"].nics[0]
        self.where = "instances/i-x (x.test): nics[0]: "

    def test_mac_syntax(self):
        for bad in ("AA:00:00:00:00:01", "aa:00:00:00:01", "aa-00-00-00-00-01",
                    "zz:00:00:00:00:01"):
            self.nic.mac = bad
            self.assertIn(f"{self.where}mac {bad!r} is not a valid lower-case MAC address",
                          problems(self.cfg))
        self.nic.mac = None
        self.assertIn(f"{self.where}has no mac", problems(self.cfg))

    def test_duplicate_mac(self):
        self.cfg.instances["i-y"].nics[0].mac = self.nic.mac
        self.assertIn("mac aa:00:00:00:00:01: used by more than one NIC: x.test/nic 0, "
                      "y.test/nic 0", problems(self.cfg))

    def test_ip_and_network(self):
        self.nic.ip = "10.2.0.5"
        self.assertIn(f"{self.where}ip 10.2.0.5 is not in network net1 (10.1.0.0/24)",
                      problems(self.cfg))
        self.nic.ip = "10.1.0.300"
        self.assertIn(f"{self.where}ip '10.1.0.300' is not an IP address", problems(self.cfg))
        self.nic.network = "no-such-net"
        self.assertIn(f"{self.where}network 'no-such-net' is not a known network",
                      problems(self.cfg))

    def test_duplicate_ip_on_same_link(self):
        other = self.cfg.instances["i-y"].nics[0]
        other.ip, other.network, other.nicparams = "10.1.0.5", NET, dict(self.nic.nicparams)
        self.assertIn("IP address bridged:br0/10.1.0.5/" + NET + ": used by more than one "
                      "NIC: x.test/nic 0, y.test/nic 0", problems(self.cfg))

    def test_nicparams(self):
        self.nic.nicparams = {"mode": "tunnel"}
        self.assertIn(f"{self.where}invalid nicparams: Invalid NIC mode 'tunnel'",
                      problems(self.cfg))
        self.nic.nicparams = {"mode": "bridged", "link": ""}
        self.assertIn(f"{self.where}invalid nicparams: Missing bridged NIC link",
                      problems(self.cfg))
        self.nic.nicparams = {"speed": "fast"}
        self.assertIn(f"{self.where}invalid nicparams: Unknown parameter 'speed'",
                      problems(self.cfg))
        # the mode is filled from the cluster: its default is bridged with a link
        self.nic.nicparams = {}
        self.assertEqual(problems(self.cfg), [])


class DiskChecksTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = cluster_with_instances()

    def test_logical_id_shapes(self):
        cases = {
            "d-plain": (["xenvg"], "plain shape [str, str]"),
            "d-drbd": (["a", "b", "11000", 0, 0, "s"], "drbd shape [str, str, int, int, int, str]"),
            "d-file": (["loop", 5], "file shape [str, str]"),
        }
        for uuid, (lid, text) in cases.items():
            cfg = cluster_with_instances()
            cfg.disks[uuid].logical_id = lid
            self.assertIn(f"disks/{uuid}: logical_id {lid!r} does not have the {text}",
                          problems(cfg))
        cfg = cluster_with_instances()
        cfg.disks["d-plain"].logical_id = None
        self.assertIn("disks/d-plain: has no logical_id", problems(cfg))
        cfg.disks["d-plain"].logical_id = ["", "lv"]
        self.assertIn("disks/d-plain: logical_id ['', 'lv'] needs a volume group and a name",
                      problems(cfg))
        cfg.disks["d-file"].logical_id = ["tape", "/x"]
        self.assertIn("disks/d-file: unknown file driver 'tape'", problems(cfg))

    def test_drbd_details(self):
        disk = self.cfg.disks["d-drbd"]
        n1 = self.cfg.cluster.master_node
        disk.logical_id = [n1, "ghost", 11000, -1, 0, "s"]
        disk.children.append(Disk(dev_type="file", logical_id=["loop", "/x"]))
        disk.children[0].mode = "rx"
        found = problems(self.cfg)
        for text in ("disks/d-drbd: drbd node 'ghost' is not a known node",
                     "disks/d-drbd: negative drbd minor -1",
                     "disks/d-drbd: a drbd disk has at most 2 children (data, meta), not 3",
                     "disks/d-drbd/children[2]: a drbd child must be plain, not 'file'",
                     "disks/d-drbd/children[0]: Disk access mode 'rx' is invalid",
                     f"disks/d-drbd: nodes {[n1, 'n2']} differ from the drbd nodes "
                     f"{[n1, 'ghost']}"):
            self.assertIn(text, found)

    def test_unknown_type_nodes_children(self):
        disk = self.cfg.disks["d-plain"]
        disk.dev_type = "tape"
        disk.nodes = ["nowhere"]
        found = problems(self.cfg)
        self.assertIn("disks/d-plain: unknown dev_type 'tape'", found)
        self.assertIn("disks/d-plain: node 'nowhere' is not a known node", found)
        cfg = cluster_with_instances()
        cfg.disks["d-file"].children = [Disk(dev_type="plain", logical_id=["v", "l"])]
        found = problems(cfg)
        self.assertIn("disks/d-file: only drbd disks have children (file has 1)", found)
        self.assertIn("disks/d-file/children[0]: has no serial_no, ctime, mtime (Ganeti's "
                      "daemons need them)", found)

    def test_drbd_minor_and_port_clashes(self):
        n1 = self.cfg.cluster.master_node
        self.cfg.disks["d-drbd2"] = Disk(
            uuid="d-drbd2", dev_type="drbd", logical_id=[n1, "n2", 11001, 0, 1, "t"],
            nodes=[n1, "n2"], iv_name="disk/0", size=1)
        self.cfg.instances["i-w"].disks = ["d-drbd2"]
        found = problems(self.cfg)
        self.assertIn(f"drbd minor 0 of node {n1}: used by more than one disk: d-drbd, d-drbd2",
                      found)
        self.assertIn("tcp/udp port 11001: has duplicates: x.test/network port, "
                      "w.test/drbd disk 0", found)

    def test_port_pool(self):
        self.cfg.cluster.tcpudp_port_pool = [11000, 11020]
        found = problems(self.cfg)
        self.assertIn("tcp/udp port 11000: has duplicates: x.test/drbd disk 0, "
                      "cluster/port marked as free", found)
        self.assertIn("cluster: tcpudp_port_pool entry 11020 is above highest_used_port 11010",
                      found)


class NetworkChecksTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = cluster_with_instances()
        self.net = self.cfg.networks[NET]
        self.where = f"networks/{NET} (net1): "

    def test_network_fields(self):
        self.net.network = "10.1.0.1/24"
        self.net.gateway = "10.9.0.1"
        self.net.network6 = "2001:db8::/64"
        self.net.gateway6 = "2001:db9::1"
        self.net.mac_prefix = "aa:00"
        found = problems(self.cfg, networks=[NET])
        self.assertIn(self.where + "network '10.1.0.1/24' is not an IPv4 network "
                      "(address/prefix, host bits zero)", found)
        self.assertIn(self.where + "gateway6 2001:db9::1 is not in 2001:db8::/64", found)
        self.assertIn(self.where + "mac_prefix 'aa:00' is not of the form aa:00:00", found)
        self.net.network = "10.1.0.0/24"
        self.assertIn(self.where + "gateway 10.9.0.1 is not in 10.1.0.0/24",
                      problems(self.cfg, networks=[NET]))

    def test_reservation_bitmaps(self):
        self.net.reservations = "01" * 4
        self.net.ext_reservations = "2" * 256
        found = problems(self.cfg)
        self.assertIn(self.where + "reservations has 8 entries, the network has 256 addresses",
                      found)
        self.assertIn(self.where + "ext_reservations may hold only '0' and '1'", found)

    def test_group_connected_to_missing_network(self):
        group = next(iter(self.cfg.nodegroups.values()))
        group.networks["gone"] = {"mode": "bridged", "link": "br9"}
        self.assertIn(f"nodegroups/{group.uuid} ({group.name}): networks/gone: is not a "
                      "known network", problems(self.cfg))
        # the limited check looks only at the networks it is given
        self.assertEqual(problems(self.cfg, networks=[NET]), [])


class LimitedCheckTest(SynchronousTestCase):
    """With ids, only those objects are checked, and clashes among them only."""

    def test_only_given_objects(self):
        cfg = cluster_with_instances()
        cfg.instances["i-y"].primary_node = "nope"
        cfg.disks["d-file"].mode = "bad"
        self.assertEqual(problems(cfg, instances=["i-x"], disks=[], networks=[]), [])
        self.assertEqual(problems(cfg, instances=["i-y"], disks=[], networks=[]),
                         ["instances/i-y (y.test): primary_node 'nope' is not a known node"])
        self.assertEqual(problems(cfg, instances=[], disks=["d-file"], networks=[]),
                         ["disks/d-file: Disk access mode 'bad' is invalid"])
        # ids that are gone (removed objects) are skipped
        self.assertEqual(problems(cfg, instances=["gone"], disks=["gone"], networks=["gone"]),
                         [])

    def test_clash_between_given_objects(self):
        cfg = cluster_with_instances()
        cfg.instances["i-y"].nics[0].mac = "aa:00:00:00:00:01"
        self.assertEqual(problems(cfg, instances=["i-y"], disks=[], networks=[]), [])
        self.assertEqual(len(problems(cfg, instances=["i-x", "i-y"], disks=[], networks=[])), 1)
