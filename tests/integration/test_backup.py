"""gnt-backup on a real 2-node virtual cluster (real daemons, real TLS between them):
an instance with our busybox OS on a file disk is exported from node 2 to node 1,
Debian's Ganeti 3.0 gnt-backup lists the export, the export is imported under a
new name on node 2 (the dump travels back through the node daemons), and a file
written into the first instance's disk is in the second's (read with debugfs,
without mounting).  Then Debian's gnt-backup export, import and remove run
unchanged against our daemons."""

import glob
import os
import subprocess

from tests.integration.clustercase import ClusterCase, needs_files
from tests.integration.helpers import ROOT

DEBIAN = "/usr/share/ganeti/3.0/gnt-backup"
OURS = os.path.join(ROOT, "bin", "gnt-backup")
GNT_INSTANCE = os.path.join(ROOT, "bin", "gnt-instance")
MARKER = "exported by ganeti-twisted\n"


def debugfs(image, request, write=False):
    argv = ["debugfs", *(["-w"] if write else []), "-R", request, image]
    return subprocess.run(argv, capture_output=True, check=True, text=True).stdout


class BackupTest(ClusterCase):
    PREFIX = "ganeti-backup-"
    NODES = 2

    @classmethod
    def setUpCluster(cls):
        cls.node1, cls.node2 = cls.cluster.nodes

    def disk_image(self, node, instance):
        found = glob.glob(os.path.join(self.cluster.node_root(node), "srv", "ganeti",
                                       "file-storage", instance, "*"))
        self.assertEqual(len(found), 1, found)
        return found[0]

    def test_export_list_import(self):
        inst1 = f"exp1.{self.cluster.domain}"
        inst2 = f"imp1.{self.cluster.domain}"
        self.tool(GNT_INSTANCE, "add", "-t", "file", "--disk", "0:size=64M", "-n",
                  self.node2, "-o", "busybox", "--no-name-check", "--no-ip-check",
                  "--no-start", "--ignore-ipolicy", "-B", "maxmem=128M,minmem=128M",
                  "--tags", "backup", inst1)
        image = self.disk_image(self.node2, inst1)
        local = os.path.join(self.cluster.tmp, "marker.txt")
        with open(local, "w", encoding="ascii") as f:
            f.write(MARKER)
        debugfs(image, f"write {local} /marker.txt", write=True)

        out = self.tool(OURS, "export", "-n", self.node1, inst1)
        self.assertIn(f"Finalizing export on {self.node1}", out)
        export_dir = os.path.join(self.cluster.node_root(self.node1), "srv", "ganeti",
                                  "export", inst1)
        with open(os.path.join(export_dir, "config.ini"), encoding="utf-8") as f:
            config = f.read()
        self.assertIn(f"name = {inst1}", config)
        self.assertIn("os = busybox", config)
        self.assertEqual(os.listdir(os.path.dirname(export_dir)), [inst1])  # no staging

        listing = [f"{self.node1} {inst1}"]
        self.assertEqual(self.tool(OURS, "list", "--no-headers").split("\n")[:-1], listing)
        if os.path.exists(DEBIAN):  # Debian's Ganeti 3.0 client, unchanged
            out = self.tool(DEBIAN, "list", "--no-headers", debian=True)
            self.assertEqual([" ".join(line.split()) for line in out.splitlines()], listing)

        self.tool(OURS, "import", "-t", "file", "-n", self.node2, "--src-node", self.node1,
                  "--src-dir", inst1, "--no-name-check", "--no-ip-check", "--ignore-ipolicy",
                  inst2)
        with self.cluster.client() as client:
            rows = client.call("QueryInstances", [inst1, inst2],
                               ["name", "os", "disk.sizes", "tags", "be/maxmem"], False)
        self.assertEqual(rows, [[inst1, "busybox", [64], ["backup"], 128],
                                [inst2, "busybox", [64], ["backup"], 128]])
        image2 = self.disk_image(self.node2, inst2)
        self.assertEqual(debugfs(image2, "cat /marker.txt"), MARKER)
        self.assertEqual(debugfs(image2, "cat /etc/hostname").strip(), inst2)

        self.tool(OURS, "remove", inst1)
        self.assertEqual(self.tool(OURS, "list", "--no-headers"), "")
        self.require(needs_files(DEBIAN))
        # Debian's export (to the instance's own node: no copy between nodes), import
        # and remove, unchanged
        inst3 = f"imp2.{self.cluster.domain}"
        self.tool(DEBIAN, "export", "-n", self.node2, inst2, debian=True)
        self.tool(DEBIAN, "import", "-t", "file", "-n", self.node2, "--src-node",
                  self.node2, "--src-dir", inst2, "--no-name-check", "--no-ip-check",
                  "--ignore-ipolicy", inst3, debian=True)
        self.assertEqual(debugfs(self.disk_image(self.node2, inst3), "cat /marker.txt"),
                         MARKER)
        self.tool(DEBIAN, "remove", inst2, debian=True)
        self.assertEqual(self.tool(OURS, "list", "--no-headers"), "")
