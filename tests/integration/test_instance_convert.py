"""Disk template conversion on a real 1-node virtual cluster (real daemons): an
instance with our busybox OS on a file disk gets a file written into its
filesystem (debugfs, no mounting), is converted to sharedfile with our
gnt-instance modify -t, and back to file with Debian's Ganeti 3.0 gnt-instance
(unchanged); the file is read from each converted image."""

import glob
import os

from tests.integration.clustercase import ClusterCase, needs_files
from tests.integration.helpers import ROOT
from tests.integration.test_backup import debugfs

DEBIAN = "/usr/share/ganeti/3.0/gnt-instance"
GNT_INSTANCE = os.path.join(ROOT, "bin", "gnt-instance")
GNT_CLUSTER = os.path.join(ROOT, "bin", "gnt-cluster")
MARKER = "converted by ganeti-twisted\n"


class ConvertTest(ClusterCase):
    PREFIX = "ganeti-convert-"
    NODES = 1

    @classmethod
    def setUpCluster(cls):
        cls.node = cls.cluster.nodes[0]

    def images(self, kind, instance):
        return glob.glob(os.path.join(self.cluster.node_root(self.node), "srv", "ganeti",
                                      kind, instance, "*"))

    def test_file_to_sharedfile_and_back(self):
        inst = f"conv1.{self.cluster.domain}"
        self.tool(GNT_CLUSTER, "modify", "--enabled-disk-templates",
                  "file,sharedfile,diskless", "--ipolicy-disk-templates",
                  "file,sharedfile,diskless")
        self.tool(GNT_INSTANCE, "add", "-t", "file", "--disk", "0:size=32M", "-n",
                  self.node, "-o", "busybox", "--no-name-check", "--no-ip-check",
                  "--no-start", "--ignore-ipolicy", "-B", "maxmem=128M,minmem=128M", inst)
        [image] = self.images("file-storage", inst)
        local = os.path.join(self.cluster.tmp, "marker.txt")
        with open(local, "w", encoding="ascii") as f:
            f.write(MARKER)
        debugfs(image, f"write {local} /marker.txt", write=True)

        out = self.tool(GNT_INSTANCE, "modify", "--ignore-ipolicy", "-t", "sharedfile", inst)
        self.assertIn("disk_template -> sharedfile", out)
        self.assertEqual(self.images("file-storage", inst), [])
        [shared] = self.images("shared-file-storage", inst)
        self.assertEqual(debugfs(shared, "cat /marker.txt"), MARKER)
        self.assertEqual(debugfs(shared, "cat /etc/hostname").strip(), inst)
        with self.cluster.client() as client:
            rows = client.call("QueryInstances", [inst], ["disk_template", "disk.sizes"],
                               False)
        self.assertEqual(rows, [["sharedfile", [32]]])

        self.require(needs_files(DEBIAN))
        self.tool(DEBIAN, "modify", "--ignore-ipolicy", "-t", "file", inst, debian=True)
        self.assertEqual(self.images("shared-file-storage", inst), [])
        [image] = self.images("file-storage", inst)
        self.assertEqual(debugfs(image, "cat /marker.txt"), MARKER)
        out = self.tool(GNT_INSTANCE, "list", "--no-headers", "-o", "name,disk_template")
        self.assertEqual(out.split(), [inst, "file"])
