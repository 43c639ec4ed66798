"""OS definitions with Ganeti's own clients: Debian Ganeti 3.0's ``gnt-os list``,
``info``, ``diagnose`` and ``modify`` against our master daemon, and its RAPI client's
``GetOperatingSystems`` against our ganeti-rapi, on a real two-node virtual cluster
whose nodes carry our busybox OS definition (linked by ``ganeti-vcluster create``).
"""

from __future__ import annotations

import os
import shutil
import sys

from ganeti.core.paths import shipped_os_dir
from tests.integration.clustercase import needs_files
from tests.integration.helpers import node_env, run
from tests.integration.test_rapi_compat import (
    RAPI_CLIENT,
    SYSTEM_PYTHON,
    RapiClientCase,
    call,
)

DEBIAN_GNT_OS = "/usr/share/ganeti/3.0/gnt-os"


class OsCompatTest(RapiClientCase):
    """Ganeti 3.0's gnt-os and RAPI client against a two-node virtual cluster."""

    PREFIX = "ganeti-os-"
    NODES = 2
    REQUIRES = (needs_files(DEBIAN_GNT_OS, RAPI_CLIENT, SYSTEM_PYTHON),)

    def gnt_os(self, *argv, check=True):
        assert self.cluster is not None
        env = node_env(self.cluster.dir)
        env["PYTHONHASHSEED"] = "0"
        return run([DEBIAN_GNT_OS, *argv], env=env, check=check, timeout=120)

    def our_gnt_os(self, *argv):
        assert self.cluster is not None
        return run([sys.executable, "-m", "ganeti.cli.gnt_os", *argv],
                   env=node_env(self.cluster.dir), timeout=120)


    def node_os_dir(self, node):
        assert self.cluster is not None
        return os.path.join(self.cluster.dir, node, "srv", "ganeti", "os")

    def test_list_info_and_rapi(self):
        # (Ganeti pads the header to the widest name)
        self.assertEqual(self.gnt_os("list").stdout, "Name           \nbusybox+default\n")
        self.assertEqual(self.gnt_os("list", "--no-headers").stdout, "busybox+default\n")
        self.assertEqual(self.rapi(call("GetOperatingSystems")), [["busybox+default"]])
        info = self.gnt_os("info", "busybox").stdout
        self.assertEqual(info.splitlines(), [
            "busybox:", "  - valid: True", "  - hidden: False", "  - blacklisted: False",
            "  - API versions:", "    - 20", "  - variants:", "    - default",
            "  - parameters:",
            "    - marker: Text the instance prints on its console when it has booted",
            "    - root_size: Size of the root file system in MiB (default: the whole "
            "first disk)",
            "  - trusted: True", ""])
        # ours prints the same
        for argv in (["list"], ["list", "--no-headers"], ["info"], ["info", "busybox"]):
            self.assertEqual(self.our_gnt_os(*argv).stdout, self.gnt_os(*argv).stdout, argv)

    def test_diagnose_sees_every_node(self):
        out = self.gnt_os("diagnose").stdout
        lines = out.splitlines()
        self.assertEqual(lines[0], "OS: busybox [global status: valid]")
        self.assertEqual(lines[1], "  Variants: [default]")
        nodes = [line for line in lines if line.startswith("  Node: ")]
        self.assertEqual(len(nodes), 2)
        for line in nodes:
            self.assertIn(", status: valid (path: ", line)
            self.assertIn("/srv/ganeti/os/busybox) [API versions: 20] [variants: default] "
                          "[parameters: marker, root_size] [trusted]", line)

    def test_modify_hides_and_sets_parameters(self):
        self.gnt_os("modify", "-O", "marker=hello,root_size=64", "busybox+default")
        info = self.gnt_os("info", "busybox+default").stdout
        self.assertIn("  OS parameters: \n    marker: hello\n    root_size: 64", info)
        # the verify script refuses a bad value: nothing changes
        bad = self.gnt_os("modify", "-O", "root_size=lots", "busybox+default", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("root_size must be a positive number of MiB", bad.stdout + bad.stderr)
        self.gnt_os("modify", "--hidden", "yes", "busybox")
        try:
            self.assertEqual(self.gnt_os("list", "--no-headers").stdout, "")
            self.assertEqual(self.rapi(call("GetOperatingSystems")), [[]])
        finally:
            self.gnt_os("modify", "--hidden", "no", "busybox")
        self.assertEqual(self.gnt_os("list", "--no-headers").stdout, "busybox+default\n")

    def test_an_os_missing_on_one_node_is_partial(self):
        assert self.cluster is not None
        extra = os.path.join(self.node_os_dir(self.cluster.nodes[0]), "onlyhere")
        shutil.copytree(shipped_os_dir("busybox"), extra)
        try:
            out = self.gnt_os("diagnose", check=False)
            self.assertEqual(out.returncode, 1)
            self.assertIn("OS: onlyhere [global status: partial valid]", out.stdout)
            self.assertIn("status: OS not found", out.stdout)
            self.assertEqual(self.gnt_os("list", "--no-headers").stdout, "busybox+default\n")
        finally:
            shutil.rmtree(extra)
