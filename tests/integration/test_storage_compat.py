"""Storage units and node volumes on real daemons, driven by Debian's Ganeti 3.0
gnt-node (list-storage, volumes, modify-storage, repair-storage) and by ours.

The node daemons run with the fake ``lvm`` program (tests/fakes/fakelvm.py) first
on their PATH, so the test needs no volume group on the machine: both nodes see
the VG ``xenvg`` on ``/dev/sdb``.  The cluster's volume group and enabled disk
templates are set in the config while the daemons are stopped; the last test
changes the volume group with Debian's ``gnt-cluster modify --vg-name``.
"""

import json
import os

from tests.fakes.fakelvm import FakeLvm
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, node_env, run

DEBIAN = "/usr/share/ganeti/3.0"


class StorageCompatTest(ClusterCase):
    """Tests run in name order on one 2-node cluster."""

    PREFIX = "ganeti-storage-compat-"
    NODES = 2

    @classmethod
    def prepareCluster(cls, cluster):
        cls.lvm = FakeLvm.create(cluster.tmp, {"xenvg": {"size": 20480, "pvs": ["/dev/sdb"]}})
        state = cls.lvm.state
        state["lvs"]["xenvg/aaa.disk0"] = {"size": 1024.0}
        cls.lvm.state = state
        config = os.path.join(cluster.root, "var/lib/ganeti/config.data")
        with open(config, encoding="utf-8") as f:
            data = json.load(f)
        data["cluster"]["volume_group_name"] = "xenvg"
        data["cluster"]["enabled_disk_templates"] = ["plain", "file"]
        data["cluster"]["ipolicy"]["disk-templates"] = ["plain", "file"]
        with open(config, "w", encoding="utf-8") as f:
            json.dump(data, f)

    @classmethod
    def startCluster(cls, cluster):
        cluster.start(env=cls.lvm.env())

    def gnt(self, *argv, debian=True):
        env = node_env(self.cluster.dir, self.cluster.master)
        path = os.path.join(DEBIAN if debian else BIN, "gnt-node")
        return run([path, *argv], env=env, check=False, timeout=120)

    def both(self, *argv):
        """The same command with Debian's client and ours: (returncode, stdout, stderr)."""
        return [(r.returncode, r.stdout, r.stderr)
                for r in (self.gnt(*argv), self.gnt(*argv, debian=False))]

    def test_1_list_storage(self):
        debian, ours = self.both("list-storage")
        self.assertEqual(debian[0], 0, debian[2])
        self.assertEqual(debian[1],
                         "Node                Type   Name   Size Used  Free Allocatable\n"
                         "node1.vcluster.test lvm-vg xenvg 20.0G 1.0G 19.0G Y\n"
                         "node2.vcluster.test lvm-vg xenvg 20.0G 1.0G 19.0G Y\n")
        self.assertEqual(debian[:2], ours[:2])
        debian, ours = self.both("list-storage", "-t", "lvm-pv", "--separator=|",
                                 "-o", "node,name,size,allocatable", "node2")
        self.assertEqual(debian[:2], (0, "Node|Name|Size|Allocatable\n"
                                         "node2.vcluster.test|/dev/sdb|20480|Y\n"))
        self.assertEqual(debian[:2], ours[:2])

    def test_2_file_storage(self):
        debian, ours = self.both("list-storage", "-t", "file", "--separator=|", "-o",
                                 "node,type,allocatable")
        self.assertEqual(debian[:2], (0, "Node|Type|Allocatable\n"
                                         "node1.vcluster.test|file|Y\n"
                                         "node2.vcluster.test|file|Y\n"), debian[2])
        self.assertEqual(debian[:2], ours[:2])
        fsdir = os.path.join(self.cluster.root, "srv/ganeti/file-storage")
        debian, ours = self.both("list-storage", "-t", "file", "--separator=|", "-o",
                                 "name", "node2")
        self.assertEqual(debian[:2], (0, f"Name\n{fsdir}\n"))
        self.assertEqual(debian[:2], ours[:2])

    def test_2_volumes(self):
        debian, ours = self.both("volumes", "node1")
        self.assertEqual(debian[:2], (0, "Node                PhysDev  VG    Name      Size "
                                         "Instance\n"
                                         "node1.vcluster.test /dev/sdb xenvg aaa.disk0 1.0G -\n"))
        self.assertEqual(debian[:2], ours[:2])

    def test_3_refusals(self):
        debian, ours = self.both("list-storage", "-t", "sharedfile")
        self.assertEqual(debian[0], 1)
        self.assertEqual(ours[0], 1)
        for _, _, err in (debian, ours):
            self.assertIn("No disk template of storage type 'sharedfile' is enabled", err)

    def test_4_modify_and_repair_with_debians_tool(self):
        r = self.gnt("modify-storage", "--allocatable=no", "node2", "lvm-pv", "/dev/sdb")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(["pvchange", "--allocatable", "n", "/dev/sdb"], self.lvm.calls)
        debian, ours = self.both("list-storage", "-t", "lvm-pv", "--no-headers", "-o",
                                 "allocatable", "node2")
        self.assertEqual(debian[:2], (0, "N\n"))
        self.assertEqual(debian[:2], ours[:2])
        r = self.gnt("repair-storage", "node1", "lvm-vg", "xenvg")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(["vgreduce", "--removemissing", "xenvg"], self.lvm.calls)

    def test_5_cluster_vg_name_with_debians_tool(self):
        env = node_env(self.cluster.dir, self.cluster.master)

        def modify(vg):
            r = run([os.path.join(DEBIAN, "gnt-cluster"), "modify", "--vg-name", vg],
                    env=env, check=False, timeout=120)
            return r.returncode, r.stdout, r.stderr

        state = self.lvm.state
        state["vgs"]["small"] = {"size": 1024, "pvs": ["/dev/sdc"]}
        state["pvs"]["/dev/sdc"] = {"vg": "small", "size": 1024}
        self.lvm.state = state
        code, _, err = modify("nosuch")  # plain is enabled: both nodes are asked
        self.assertEqual(code, 1)
        self.assertEqual(err, "Failure: prerequisites not met for this operation:\n"
                              "error type: environment_error, error details:\n"
                              "Error on node 'node1.vcluster.test': volume group 'nosuch' "
                              "missing\n")
        code, _, err = modify("small")
        self.assertEqual(code, 1)
        self.assertIn("Error on node 'node1.vcluster.test': volume group 'small' too small "
                      "(20480 MiB required, 1024 MiB found)", err)
        code, _, err = modify("")
        self.assertEqual(code, 1)
        self.assertIn("Cannot unset volume group if lvm-based disk templates are or get "
                      "enabled.", err)
        code, out, err = modify("xenvg")
        self.assertEqual(code, 0, err)
        self.assertIn("Cluster LVM configuration already in desired state, not changing", out)
        info = run([os.path.join(DEBIAN, "gnt-cluster"), "info"], env=env, timeout=120).stdout
        self.assertIn("  lvm volume group: xenvg\n", info)
