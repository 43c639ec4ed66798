"""The master IP node calls for real, as root, in a network namespace this test makes
(``unshare --net``, a bridge br0, 10.77.0.254): the address appears with its label,
activation is idempotent, the netmask moves, deactivation removes it, IPv6 works,
a missing device and a non-root run fail cleanly.  Skipped without root, unshare or ip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "masterip_netns_child.py")
ROOT = os.path.dirname(os.path.dirname(HERE))


def _why_skip() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a network namespace)"
    for tool in ("unshare", "ip", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "cannot make a network namespace here"
    return None


_SKIP = _why_skip()


@unittest.skipIf(_SKIP is not None, _SKIP or "")
class MasterIpInNamespaceTest(unittest.TestCase):
    def test_node_calls_change_the_namespaces_addresses(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        proc = subprocess.run(["unshare", "--net", sys.executable, CHILD], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        steps = {name: (result, addrs) for name, result, addrs in json.loads(proc.stdout)}
        self.assertEqual(steps["activate"], ("ok", ["10.77.0.254/24 br0:0"]))
        self.assertEqual(steps["activate again"], ("ok", ["10.77.0.254/24 br0:0"]))
        self.assertEqual(steps["netmask"], ("ok", ["10.77.0.254/16 br0:0"]))
        result, addrs = steps["deactivate old mask"]
        self.assertIn("configured on wrong device or netmask (10.77.0.254/16 on br0;", result)
        self.assertEqual(addrs, ["10.77.0.254/16 br0:0"])
        self.assertEqual(steps["deactivate"], ("ok", []))
        self.assertEqual(steps["deactivate again"], ("ok", []))
        self.assertEqual(steps["activate v6"], ("ok", ["fd77::fe/64"]))
        self.assertEqual(steps["deactivate v6"], ("ok", []))
        result, addrs = steps["no such device"]
        self.assertIn("Failed to start the master IP. Script return value: exited with "
                      "exit code 1", result)
        self.assertIn('Cannot find device "br9"', result)
        result, addrs = steps["not root"]
        self.assertTrue(result.startswith("1: Error during the activation"), result)
        self.assertIn("Operation not permitted", result)
        self.assertEqual(addrs, [])
