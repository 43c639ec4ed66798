"""Debian's real ``ganeti-luxid`` answers ``Query`` on a config with instances that we wrote.

Our ``gnt-cluster init`` makes a node root; our config code then adds a second
node, a network and four instances (plain, drbd with its two children, file
with two disks, diskless; NICs in and out of the network) as our objects and
writes ``config.data`` with our ``dump``.  The real Haskell luxid 3.0 (see
``realganeti.py``) serves that root, and Debian's own Python LUXI client
(``/usr/share/ganeti/3.0/ganeti/luxi.py``) asks it ``Query`` for instances,
networks and nodes.  The answers must show what we wrote.

The nodes do not run a node daemon: luxid's live fields (``oper_state``)
come back as "node down" data, which is checked as such.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

from ganeti.core import config as configmod
from ganeti.core import fileutil
from ganeti.core.objects import NIC, Disk, Instance, Network, Node
from tests.integration import realganeti
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, run

DEBIAN_PYTHON = "/usr/bin/python3"
DEBIAN_GANETI = "/usr/share/ganeti/3.0"
NODE = "luxid1.reads.test"
NET = "5e7b1a3c-0000-4000-8000-000000000001"

# Ask with Debian's client, print the JSON answer.
_CLIENT = """
import json, sys
sys.path.insert(0, %(lib)r)
from ganeti import luxi
client = luxi.Client(address=%(socket)r)
what, fields = sys.argv[1], json.loads(sys.argv[2])
print(json.dumps(client.Query(what, fields, None).ToDict()))
"""

INSTANCE_FIELDS = ["name", "pnode", "snodes", "os", "hypervisor", "admin_state",
                   "admin_up", "disk_template", "disk.count", "disk.sizes", "disk_usage",
                   "nic.count", "nic.macs", "nic.ips", "nic.networks", "nic.modes",
                   "nic.links", "be/maxmem", "be/vcpus", "network_port", "tags",
                   "oper_state"]


def _uuid(n: int) -> str:
    return f"7a000000-0000-4000-8000-{n:012d}"


def add_instances(path: str) -> dict[str, dict]:
    """Add a node, a network and four instances to the config at ``path`` (our code)."""
    cfg = configmod.load_file(path)
    master = cfg.master
    group = cfg.nodegroups[master.group]
    node2 = Node(uuid=_uuid(900), name="luxid2.reads.test", primary_ip="127.0.126.2",
                 secondary_ip="127.0.126.2", group=group.uuid, ctime=1.0, mtime=1.0)
    cfg.nodes[node2.uuid] = node2
    group.members.append(node2.uuid)
    cfg.networks[NET] = Network(uuid=NET, name="backend", network="10.77.0.0/24",
                                gateway="10.77.0.1", mac_prefix="aa:00:77",
                                reservations="0" * 10 + "1" + "0" * 245,
                                ext_reservations="1" + "0" * 254 + "1", ctime=1.0, mtime=1.0)
    group.networks[NET] = {"mode": "bridged", "link": "br-backend", "vlan": ""}
    cfg.cluster.highest_used_port = 11010

    def disk(n: int, dev_type: str, lid: list, size: int, idx: int, nodes: list[str],
             children: list[Disk] | None = None) -> str:
        d = Disk(uuid=_uuid(n), dev_type=dev_type, logical_id=lid, size=size,
                 iv_name=f"disk/{idx}", nodes=nodes, children=children or [],
                 serial_no=1, ctime=1.0, mtime=1.0)
        cfg.disks[d.uuid] = d
        return d.uuid

    m, s = master.uuid, node2.uuid
    specs = {
        "plain1.reads.test": dict(
            disks=[disk(1, "plain", ["xenvg", "p1.disk0"], 1024, 0, [m])],
            nics=[NIC(uuid=_uuid(101), mac="aa:00:77:00:00:01", ip="10.77.0.10",
                      network=NET, nicparams={"mode": "bridged", "link": "br-backend"})],
            beparams={"maxmem": 512, "vcpus": 2}, admin_state="down"),
        "drbd1.reads.test": dict(
            disks=[disk(2, "drbd", [m, s, 11000, 0, 0, "ab" * 20], 2048, 0, [m, s], [
                Disk(dev_type="plain", logical_id=["xenvg", "d1.disk0_data"], size=2048,
                     nodes=[m, s], serial_no=1, ctime=1.0,
                     mtime=1.0),
                Disk(dev_type="plain", logical_id=["xenvg", "d1.disk0_meta"], size=128,
                     nodes=[m, s], serial_no=1, ctime=1.0,
                     mtime=1.0)])],
            nics=[NIC(uuid=_uuid(102), mac="aa:00:00:00:00:02", nicparams={}),
                  NIC(uuid=_uuid(103), mac="aa:00:00:00:00:03",
                      nicparams={"mode": "routed", "link": "rt1"})],
            admin_state="up", network_port=11001, tags=["web"]),
        "file1.reads.test": dict(
            disks=[disk(3, "file", ["loop", "/srv/ganeti/file-storage/f1/disk0"], 256, 0, [m]),
                   disk(4, "file", ["loop", "/srv/ganeti/file-storage/f1/disk1"], 512, 1, [m])],
            nics=[], admin_state="offline"),
        "diskless1.reads.test": dict(disks=[], nics=[NIC(uuid=_uuid(104),
                                                         mac="aa:00:00:00:00:04")],
                                     admin_state="down"),
    }
    for i, (name, spec) in enumerate(sorted(specs.items())):
        inst = Instance(uuid=_uuid(200 + i), name=name, primary_node=m, hypervisor="fake",
                        os="debootstrap+default", admin_state_source="admin",
                        disks_active=False, serial_no=1, ctime=1.0, mtime=1.0, **spec)
        cfg.instances[inst.uuid] = inst
    problems = configmod.verify(cfg)
    assert problems == [], problems
    cfg.serial_no += 1
    fileutil.atomic_write(path, configmod.dump(cfg), mode=0o640)
    return {name: spec for name, spec in specs.items()}


def _no_luxi_client():
    if not os.path.exists(os.path.join(DEBIAN_GANETI, "ganeti", "luxi.py")):
        return (f"Debian's Python LUXI client ({DEBIAN_GANETI}/ganeti/luxi.py, "
                "package ganeti-3.0) is missing; 'make install-oracle' installs it")
    return None


class LuxidReadsOursTest(ClusterCase):
    CLUSTER = False  # a node root made by our gnt-cluster init, no daemon of ours
    REQUIRES = (realganeti.unavailable, _no_luxi_client)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="ganeti-luxid-reads-")
        cls.real = None
        try:
            root = os.path.join(cls.tmp, "ours", NODE)
            os.makedirs(root)
            env = {"GANETI_ROOTDIR": root, "GANETI_HOSTNAME": NODE}
            run([os.path.join(BIN, "gnt-cluster"), "init", "--primary-ip", "127.0.126.1",
                 "--master-ip", "127.0.126.254", "--master-netdev", "lo",
                 "--enabled-hypervisors", "fake", "--enabled-disk-templates",
                 "plain,drbd,file,diskless", "-g", "xenvg", "--drbd-usermode-helper",
                 "/bin/true", "--file-storage-dir", os.path.join(cls.tmp, "file"),
                 "reads.test"], env=env)
            cls.specs = add_instances(os.path.join(root, "var/lib/ganeti/config.data"))
            real_root = realganeti.copy_node_root(root, os.path.join(cls.tmp, "real"))
            cls.real = realganeti.real_luxid(real_root)
            cls.real.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.real is not None:
                cls.real.stop()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def query(self, what: str, fields: list[str]) -> dict[str, list]:
        """Debian's client asks the real luxid; rows by name, values without status."""
        script = _CLIENT % {"lib": DEBIAN_GANETI, "socket": self.real.socket}
        result = subprocess.run([DEBIAN_PYTHON, "-c", script, what, json.dumps(fields)],
                                capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual([f["name"] for f in answer["fields"]], fields)
        rows: dict[str, list] = {}
        for row in answer["data"]:
            rows[row[0][1]] = row
        return rows

    def values(self, row: list, unavailable: int | None = None) -> list:
        """The values of a row; every status is RS_NORMAL (config data), except the
        last (live data) and the one at index ``unavailable`` (RS_UNAVAIL if unset)."""
        for i, (status, value) in enumerate(row[:-1]):
            if i == unavailable and value is None:
                self.assertEqual(status, 3, row)
            else:
                self.assertEqual(status, 0, row)
        return [value for _status, value in row]

    def test_instances(self):
        rows = self.query("instance", INSTANCE_FIELDS)
        self.assertEqual(sorted(rows), sorted(self.specs))
        port = INSTANCE_FIELDS.index("network_port")
        got = {name: dict(zip(INSTANCE_FIELDS, self.values(row, port), strict=True))
               for name, row in rows.items()}
        plain, drbd = got["plain1.reads.test"], got["drbd1.reads.test"]
        files, diskless = got["file1.reads.test"], got["diskless1.reads.test"]
        self.assertEqual(plain["pnode"], NODE)
        self.assertEqual(plain["disk_template"], "plain")
        self.assertEqual(plain["disk.sizes"], [1024])
        self.assertEqual(plain["nic.macs"], ["aa:00:77:00:00:01"])
        self.assertEqual(plain["nic.ips"], ["10.77.0.10"])
        self.assertEqual(plain["nic.networks"], [NET])
        self.assertEqual((plain["be/maxmem"], plain["be/vcpus"]), (512, 2))
        self.assertEqual((plain["admin_state"], plain["admin_up"]), ("down", False))
        self.assertEqual(drbd["disk_template"], "drbd")
        self.assertEqual(drbd["snodes"], ["luxid2.reads.test"])
        self.assertEqual(drbd["disk.sizes"], [2048])
        self.assertEqual(drbd["nic.macs"], ["aa:00:00:00:00:02", "aa:00:00:00:00:03"])
        self.assertEqual(drbd["nic.modes"], ["bridged", "routed"])  # filled from the cluster
        self.assertEqual(drbd["nic.links"][1], "rt1")
        self.assertEqual((drbd["admin_state"], drbd["admin_up"]), ("up", True))
        self.assertEqual(drbd["network_port"], 11001)
        self.assertIsNone(plain["network_port"])
        self.assertEqual(drbd["tags"], ["web"])
        self.assertEqual(drbd["be/maxmem"], 128)  # the cluster's default, filled
        self.assertEqual(files["disk_template"], "file")
        self.assertEqual(files["disk.count"], 2)
        self.assertEqual(files["disk.sizes"], [256, 512])
        self.assertEqual(files["admin_state"], "offline")
        self.assertEqual(diskless["disk_template"], "diskless")
        self.assertEqual((diskless["disk.count"], diskless["disk.sizes"]), (0, []))
        self.assertEqual(diskless["nic.count"], 1)
        for name, row in rows.items():
            # no node daemon answers: the live field is "node down" data, not an error
            self.assertIn(row[-1][0], (0, 2, 3, 4), name)

    def test_networks_and_nodes(self):
        rows = self.query("network", ["name", "network", "gateway", "mac_prefix",
                                      "free_count", "reserved_count", "inst_list"])
        self.assertEqual(self.values(rows["backend"] + [[0, None]])[:-1],
                         ["backend", "10.77.0.0/24", "10.77.0.1", "aa:00:77", 253, 3,
                          ["plain1.reads.test"]])
        nodes = self.query("node", ["name", "pinst_cnt", "sinst_cnt", "pinst_list",
                                    "sinst_list"])
        self.assertEqual(self.values(nodes[NODE] + [[0, None]])[:-1],
                         [NODE, 4, 0, sorted(self.specs), []])
        self.assertEqual(self.values(nodes["luxid2.reads.test"] + [[0, None]])[1:-1],
                         [0, 1, [], ["drbd1.reads.test"]])
