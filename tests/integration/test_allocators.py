"""Instance allocators on real daemons, driven by Debian's Ganeti 3.0 clients: ``gnt-instance
add -I hail`` (Debian's hail, unchanged) and ``-I ganeti-place`` (the built-in) create
instances on our two-node virtual cluster; ours without node or allocator uses the
built-in; Debian's ``gnt-debug allocator`` gets the version-2 input (direction in) and an
allocator's answer (out); a missing allocator is named in the error.

Instances are diskless and not installed (the virtual cluster has no file storage paths),
on the fake hypervisor.
"""

from __future__ import annotations

import json
import os
import sys

from tests.integration.clustercase import ClusterCase, needs_debian_tool, needs_files
from tests.integration.helpers import ROOT, node_env, run

DEBIAN = "/usr/share/ganeti/3.0"
HAIL = "/usr/lib/ganeti/iallocators/hail"


class AllocatorTest(ClusterCase):
    """Tests run in name order on one 2-node cluster."""

    PREFIX = "ganeti-alloc-"
    NODES = 2
    REQUIRES = (needs_debian_tool("gnt-instance", "gnt-debug"),
                needs_files(HAIL, package="ganeti-htools-3.0"))

    def gnt(self, tool, *argv, debian=True):
        assert self.cluster is not None
        env = node_env(self.cluster.dir, self.cluster.master)
        cmd = [os.path.join(DEBIAN, tool)] if debian else [
            sys.executable, os.path.join(ROOT, "bin", tool)]
        return run([*cmd, *argv], env=env, check=False, timeout=120)

    def add(self, name, *argv, debian=True):
        return self.gnt("gnt-instance", "add", "-t", "diskless", "-o", "busybox",
                        "--no-install", "--no-name-check", "--no-ip-check", "-B",
                        "maxmem=128M,minmem=128M", *argv, name, debian=debian)

    def primary(self, name):
        r = self.gnt("gnt-instance", "list", "--no-headers", "-o", "pnode", name,
                     debian=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_1_hail(self):
        r = self.add("hail1.vcluster.test", "-I", "hail")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        node = self.primary("hail1.vcluster.test")
        self.assertIn(node, self.cluster.nodes)
        self.assertIn(f"Selected nodes for instance hail1.vcluster.test via iallocator "
                      f"hail: {node}", r.stdout)

    def test_2_built_in_by_name_and_by_default(self):
        r = self.add("place1.vcluster.test", "-I", "ganeti-place")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("via iallocator ganeti-place: ", r.stdout)
        self.assertIn(self.primary("place1.vcluster.test"), self.cluster.nodes)
        r = self.add("place2.vcluster.test", debian=False)  # no node, no allocator
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("via iallocator ganeti-place: ", r.stdout)

    def test_3_dry_run_creates_nothing(self):
        r = self.add("dry.vcluster.test", "-I", "ganeti-place", "--dry-run", debian=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Dry run: instance dry.vcluster.test would be created on ", r.stdout)
        r = self.gnt("gnt-instance", "list", "--no-headers", "dry.vcluster.test",
                     debian=False)
        self.assertNotEqual(r.returncode, 0)

    def test_4_debug_allocator_in_and_out(self):
        r = self.gnt("gnt-debug", "allocator", "--dir", "in", "-m", "allocate", "-o",
                     "busybox", "-t", "file", "new.vcluster.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        data = json.loads(r.stdout)
        self.assertEqual(data["version"], 2)
        self.assertEqual(sorted(data["nodes"]), sorted(self.cluster.nodes))
        self.assertEqual(data["request"]["type"], "allocate")
        self.assertEqual(data["request"]["disk_space_total"], 8192)
        self.assertIn("hail1.vcluster.test", data["instances"])
        r = self.gnt("gnt-debug", "allocator", "--dir", "out", "-I", "hail", "-m",
                     "allocate", "-o", "busybox", "-t", "diskless", "--disks", "0",
                     "new.vcluster.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)
        self.assertEqual(set(answer), {"success", "info", "result"})

    def test_5_missing_allocator_is_named(self):
        r = self.add("none.vcluster.test", "-I", "nosuchallocator")
        # real Ganeti 3.0's words and exit status (real_cluster_up.sh, gnt-debug allocator)
        self.assertEqual((r.returncode, r.stderr), (1, (
            "Failure: command execution error:\nFailure while running the iallocator "
            "script: iallocator module 'nosuchallocator' not found in the search path\n")))

    def test_6_batch_create_with_debians_client(self):
        spec = [{"instance_name": f"b{i}.vcluster.test", "disk_template": "diskless",
                 "disks": [], "nics": [{}], "os_type": "busybox", "mode": "create",
                 "hypervisor": "fake", "name_check": False, "ip_check": False,
                 "no_install": True, "beparams": {"maxmem": 128, "minmem": 128}}
                for i in range(2)]
        path = os.path.join(self.cluster.dir, "batch.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        r = self.gnt("gnt-instance", "batch-create", "-I", "hail", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("All instances created successfully.", r.stdout)
        for i in range(2):
            self.assertIn(self.primary(f"b{i}.vcluster.test"), self.cluster.nodes)

    def test_7_debug_allocator_refusals_as_real_ganeti(self):
        """Debian's gnt-debug on our cluster prints what it prints on a real Ganeti 3.0
        cluster (real_cluster_up.sh) for the same arguments."""
        prereq = ("Failure: prerequisites not met for this operation:\nerror type: {}, "
                  "error details:\n{}\n")
        r = self.gnt("gnt-debug", "iallocator", "--mode", "relocate", "nosuch.vcluster.test")
        self.assertEqual((r.returncode, r.stderr), (1, prereq.format(
            "unknown_entity", "Instance 'nosuch.vcluster.test' not known")))
        r = self.gnt("gnt-debug", "iallocator", "--dir", "out", "--mode", "allocate", "-o",
                     "busybox", "-t", "file", "new.vcluster.test")
        self.assertEqual((r.returncode, r.stderr), (1, prereq.format(
            "wrong_input", "Missing allocator name")))
