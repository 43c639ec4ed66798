"""``gnt-cluster modify`` and ``gnt-group modify`` with Debian's Ganeti 3.0 clients
against our master daemon (and Ganeti's RAPI client against our ganeti-rapi), on a
one-node virtual cluster: partial merges, type coercion, the uid-pool order, the
options added for issue 14, and what is read back afterwards.

The expected values are what a real Ganeti 3.0 cluster gives for the same
commands (checked side by side while writing these tests).
"""

from __future__ import annotations

import os

from tests.integration.clustercase import needs_debian_tool, needs_rapi_client
from tests.integration.helpers import BIN, node_env, run
from tests.integration.test_rapi_compat import (
    RapiClientCase,
    call,
)

DEBIAN_TOOLS = "/usr/share/ganeti/3.0"
IPOLICY_ORDER = ["minmax", "std", "spindle-ratio", "vcpu-ratio", "disk-templates"]
SPECS_ORDER = ["memory-size", "disk-size", "disk-count", "cpu-count", "nic-count",
               "spindle-use"]


class ModifyCompatTest(RapiClientCase):
    """Debian's gnt-cluster/gnt-group and RAPI client against a one-node cluster."""

    PREFIX = "ganeti-modify-"
    REQUIRES = (needs_debian_tool("gnt-cluster"), needs_rapi_client)

    # helpers

    def debian(self, tool, *args):
        """Run Debian's gnt-<tool> as the master: (exit code, stdout, stderr)."""
        assert self.cluster is not None
        proc = run([os.path.join(DEBIAN_TOOLS, f"gnt-{tool}"), *args],
                   env=node_env(self.cluster.dir), check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def ours(self, tool, *args):
        assert self.cluster is not None
        proc = run([os.path.join(BIN, f"gnt-{tool}"), *args], env=node_env(self.cluster.dir),
                   check=False)
        return proc.returncode, proc.stdout, proc.stderr


    def info(self):
        (info,) = self.rapi(call("GetInfo"))
        return info

    def assert_ok(self, outcome, stdout=""):
        code, out, err = outcome
        self.assertEqual(code, 0, err)
        self.assertEqual(out, stdout)  # Ganeti prints no "Changed ..." lines

    # tests

    def test_std_specs_merge_and_ipolicy_order(self):
        before = self.info()["ipolicy"]["std"]
        self.assert_ok(self.debian("cluster", "modify", "--ipolicy-std-specs",
                                   "memory-size=256"))
        policy = self.info()["ipolicy"]
        self.assertEqual(policy["std"], {**before, "memory-size": 256})
        self.assertEqual(list(policy), IPOLICY_ORDER)
        self.assertEqual(list(policy["std"]), SPECS_ORDER)
        self.assertEqual(list(policy["minmax"][0]), ["min", "max"])
        # our CLI sends the same change
        self.assert_ok(self.ours("cluster", "modify", "--ipolicy-std-specs", "cpu-count=2"))
        self.assertEqual(self.info()["ipolicy"]["std"],
                         {**before, "memory-size": 256, "cpu-count": 2})
        code, _, err = self.debian("cluster", "modify", "--ipolicy-vcpu-ratio", "default")
        self.assertEqual(code, 1)
        self.assertIn("Can't unset ipolicy attribute 'vcpu-ratio' on the cluster'", err)

    def test_group_diskparams_are_numbers(self):
        self.assert_ok(self.debian("group", "modify", "-D", "drbd:resync-rate=100", "default"),
                       "Modified node group default\n"
                       " - diskparams -> {'drbd': {'resync-rate': 100}}\n")
        (group,) = self.rapi(call("GetGroup", "default"))
        self.assertEqual(group["custom_diskparams"]["drbd"], {"resync-rate": 100})
        self.assert_ok(self.debian("group", "modify", "-D", "drbd:resync-rate=default",
                                   "default"),
                       "Modified node group default\n - diskparams -> {'drbd': {}}\n")
        # through RAPI the master coerces, and refuses what cannot be coerced
        job_bad, job_good = self.rapi(
            call("ModifyGroup", "default", diskparams={"drbd": {"resync-rate": "abc"}}),
            call("ModifyGroup", "default", ndparams={"ssh_port": "2222"}))
        status_bad, status_good, (group,) = [*self.rapi(call("wait_job", job_bad),
                                                        call("wait_job", job_good)),
                                             self.rapi(call("GetGroup", "default"))]
        self.assertEqual((status_bad, status_good), ("error", "success"))
        self.assertEqual(group["custom_ndparams"], {"ssh_port": 2222})
        self.assertEqual(group["custom_diskparams"]["drbd"], {})

    def test_uid_pool_with_add_and_remove(self):
        self.assert_ok(self.debian("cluster", "modify", "--uid-pool", "2000-2010",
                                   "--add-uids", "3000"))
        self.assertEqual(self.info()["uid_pool"], [[2000, 2010]])
        code, _, err = self.debian("cluster", "modify", "--uid-pool", "4000",
                                   "--remove-uids", "3000")
        self.assertEqual(code, 1)
        self.assertIn("User-id range to be removed is not found in the current user-id "
                      "pool: [3000, 3000]", err)
        self.assertEqual(self.info()["uid_pool"], [[2000, 2010]])

    def test_options_added_for_issue_14(self):
        self.assert_ok(self.debian(
            "cluster", "modify", "--mac-prefix", "AA:00:11", "--reserved-lvs", "xenvg/a,b",
            "--compression-tools", "gzip,lzop", "--prealloc-wipe-disks", "yes",
            "--maintain-node-health", "yes", "--default-iallocator-params", "a=1",
            "--node-parameters", "ssh_port=2200", "-B", "maxmem=130"))
        info = self.info()
        self.assertEqual((info["mac_prefix"], info["reserved_lvs"], info["compression_tools"]),
                         ("aa:00:11", ["xenvg/a", "b"], ["gzip", "lzop"]))
        self.assertTrue(info["prealloc_wipe_disks"] and info["maintain_node_health"])
        self.assertEqual(info["default_iallocator_params"], {"a": "1"})
        self.assertEqual(info["ndparams"]["ssh_port"], 2200)
        self.assertEqual(info["beparams"]["default"]["maxmem"], 132)  # rounded up to 4 MiB
        self.assert_ok(self.ours("cluster", "modify", "--prealloc-wipe-disks", "no",
                                 "--compression-tools", ""))
        info = self.info()
        self.assertFalse(info["prealloc_wipe_disks"])
        self.assertEqual(info["compression_tools"], ["gzip", "gzip-fast", "gzip-slow"])
        code, _, err = self.debian("cluster", "modify", "--mac-prefix", "zz:00:00")
        self.assertEqual(code, 1)
        self.assertIn("Invalid MAC address prefix 'zz:00:00'", err)
        # as Ganeti's: the master IP goes down and comes up again on the (same) device
        netdev = info["master_netdev"]
        code, out, err = self.debian("cluster", "modify", "--master-netdev", netdev)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.info()["master_netdev"], netdev)

    def test_drbd_change_prints_ganeti_warnings(self):
        code, out, err = self.debian("cluster", "modify", "-D", "drbd:c-plan-ahead=10")
        self.assertEqual(code, 0, err)
        lines = [line.split("  - ", 1)[1] for line in out.splitlines()]
        self.assertEqual(lines[0], "WARNING: Changing DRBD parameters only affects devices "
                                   "created in the future, not existing ones")
        self.assertEqual(len(lines), 3)
        self.assertEqual(self.info()["diskparams"]["drbd"]["c-plan-ahead"], 10)

    def test_unknown_group_names(self):
        code, _, err = self.debian("group", "list", "nosuch")
        self.assertEqual(code, 1)
        self.assertIn("unknown_entity", err)
        self.assertEqual(self.debian("group", "info", "nosuch")[0], 0)
        code, _, err = self.ours("group", "list", "nosuch")
        self.assertEqual(code, 1)
        self.assertIn("unknown_entity", err)
        self.assertEqual(self.ours("group", "info", "nosuch")[:2], (0, "\n"))
