"""The master IP on a real loopback virtual cluster (real masterd and noded): masterd
activates it when it starts (a no-op with a log line: the 127.x master IP is already
local), gnt-cluster activate-master-ip / deactivate-master-ip --yes succeed the same
way, ours and Debian's Ganeti 3.0 client alike, and with use_external_mip_script the
administrator's script runs and its failure is the job's error."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import DEBIAN_GNT_CLUSTER, ROOT, run

OURS = os.path.join(ROOT, "bin", "gnt-cluster")


class MasterIpVirtualClusterTest(ClusterCase):
    PREFIX = "ganeti-masterip-"

    def log_text(self, name: str) -> str:
        path = os.path.join(self.cluster.root, "var", "log", "ganeti", name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def gnt(self, *argv: str, debian: bool = False) -> subprocess.CompletedProcess:
        cmd = [DEBIAN_GNT_CLUSTER] if debian else [sys.executable, OURS]
        return run([*cmd, *argv], env=self.env, check=False, timeout=120)

    def test_1_masterd_activated_the_master_ip_at_start(self):
        deadline = time.monotonic() + 20
        while "Master IP activated" not in self.log_text("master-daemon.log"):
            self.assertLess(time.monotonic(), deadline, self.log_text("master-daemon.log"))
            time.sleep(0.2)
        self.assertIn("Activating the master IP", self.log_text("master-daemon.log"))
        self.assertIn("already configured on this machine. Doing nothing.",
                      self.log_text("node-daemon.log"))

    def test_2_our_client(self):
        r = self.gnt("activate-master-ip")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.gnt("deactivate-master-ip", "--yes")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_3_debian_client(self):
        if not os.path.exists(DEBIAN_GNT_CLUSTER):
            self.skipTest("Debian's Ganeti 3.0 is not installed")
        r = self.gnt("activate-master-ip", debian=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.gnt("deactivate-master-ip", "--yes", debian=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_4_external_script_failure(self):
        script = os.path.join(self.cluster.root, "etc", "ganeti", "scripts", "master-ip-setup")
        os.makedirs(os.path.dirname(script), exist_ok=True)
        with open(script, "w", encoding="ascii") as f:
            f.write("#!/bin/sh\necho \"no $1 for $MASTER_IP on $MASTER_NETDEV\" >&2\nexit 1\n")
        os.chmod(script, stat.S_IRWXU)
        r = self.gnt("modify", "--use-external-mip-script", "yes")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        try:
            for debian in (False, True):
                if debian and not os.path.exists(DEBIAN_GNT_CLUSTER):
                    continue
                r = self.gnt("activate-master-ip", debian=debian)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("Could not activate the master IP: Failed to start the master "
                              "IP. Script return value: exited with exit code 1, output: "
                              f"'no start for {self.cluster.ip_base}254 on lo'",
                              r.stdout + r.stderr)
        finally:
            r = self.gnt("modify", "--use-external-mip-script", "no")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_5_master_netmask(self):
        debian = os.path.exists(DEBIAN_GNT_CLUSTER)
        r = self.gnt("modify", "--master-netmask", "99", debian=debian)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("Failure: prerequisites not met for this operation:\nerror type: "
                      "wrong_input, error details:\nCIDR netmask (99) not valid", r.stderr)
        for netmask in ("24", "32"):
            r = self.gnt("modify", "--master-netmask", netmask, debian=debian)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"Changing master IP netmask to {netmask}", r.stdout)
            self.assertNotIn("WARNING", r.stdout + r.stderr)
        self.assertIn("nothing to change", self.log_text("node-daemon.log"))
