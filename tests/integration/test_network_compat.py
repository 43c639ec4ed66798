"""Networks with Ganeti's own clients: Debian Ganeti 3.0's ``gnt-network`` (add, list,
info, connect, disconnect, modify, remove) against our master daemon, and Debian's
``GanetiRapiClient`` (``CreateNetwork``, ``GetNetworks``, ``GetNetwork``,
``ConnectNetwork``, ``DisconnectNetwork``, ``ModifyNetwork``, ``DeleteNetwork``) against
our ganeti-rapi, on a real one-node virtual cluster; confd keeps answering from a
config with networks.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tests.integration.clustercase import needs_debian_tool, needs_rapi_client
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.test_rapi_compat import (
    RapiClientCase,
    call,
)

DEBIAN_TOOLS = "/usr/share/ganeti/3.0"


class NetworkCompatTest(RapiClientCase):
    """Debian's gnt-network and RAPI client against a one-node cluster."""

    PREFIX = "ganeti-network-"
    REQUIRES = (needs_debian_tool("gnt-network"), needs_rapi_client)

    def tool(self, argv, *args):
        assert self.cluster is not None
        proc = run([*argv, *args], env=node_env(self.cluster.dir), check=False, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    def debian(self, *args):
        return self.tool([os.path.join(DEBIAN_TOOLS, "gnt-network")], *args)

    def ours(self, *args):
        # the repository's wrapper, run by this interpreter (works before a reinstall)
        return self.tool([sys.executable, os.path.join(ROOT, "bin", "gnt-network")], *args)

    def ok(self, outcome):
        code, out, err = outcome
        self.assertEqual(code, 0, out + err)
        return out


    def confd(self, *args):
        assert self.cluster is not None
        env = dict(os.environ)
        env.update(self.cluster.env)
        proc = run([sys.executable, os.path.join(ROOT, "bin", "ganeti-confd-query"),
                    "--json", *args], env=env, check=False, timeout=60)
        self.assertIn(proc.returncode, (0, 1), proc.stdout + proc.stderr)  # 1: an error reply
        return json.loads(proc.stdout)

    def test_debian_gnt_network(self):
        self.ok(self.debian("add", "--network", "10.20.0.0/28", "--gateway", "10.20.0.1",
                            "--add-reserved-ips", "10.20.0.5", "--tags", "a,b", "dnet"))
        self.addCleanup(self.ours, "remove", "dnet")
        listing = self.ok(self.debian("list")).splitlines()
        self.assertEqual(listing[0].split(), ["Network", "Subnet", "Gateway", "MacPrefix",
                                              "GroupList", "Tags"])
        self.assertIn(["dnet", "10.20.0.0/28", "10.20.0.1", "-", "a,b"],
                      [line.split() for line in listing[1:]])
        info = self.ok(self.debian("info", "dnet"))
        self.assertIn("  Free: 12 (75.00%)\n", info)
        self.assertIn("        0 XX...X.........X", info)
        self.assertIn("    10.20.0.0, 10.20.0.1, 10.20.0.5, 10.20.0.15\n", info)
        self.assertEqual(info, self.ok(self.ours("info", "dnet")))  # our tool prints the same

        self.ok(self.debian("connect", "-N", "mode=routed,link=rt0", "dnet"))
        self.assertEqual(self.ok(self.debian("list", "--no-headers", "-o",
                                             "name,group_list", "dnet")).split(),
                         ["dnet", "default", "(routed,", "rt0,", ")"])
        code, out, err = self.debian("remove", "dnet")
        self.assertEqual(code, 1)
        self.assertIn("Network still connected", err)
        self.ok(self.debian("modify", "--gateway", "10.20.0.14", "--mac-prefix", "aa:00:11",
                            "dnet"))
        self.assertEqual(self.ok(self.debian("list", "--no-headers", "--separator=|", "-o",
                                             "gateway,mac_prefix,reserved_count", "dnet")),
                         "10.20.0.14|aa:00:11|4\n")
        self.ok(self.debian("disconnect", "dnet"))
        self.ok(self.debian("remove", "dnet"))
        self.assertEqual(self.ok(self.debian("list", "--no-headers")), "")

    def test_debian_refusals(self):
        code, _, err = self.debian("add", "--network", "10.0.0.0/8", "big")
        self.assertEqual(code, 1)
        self.assertIn("A big network with 16777216 host(s) is currently not supported", err)
        code, _, err = self.debian("add", "--network", "10.0.0.0/33", "bad")
        self.assertEqual(code, 1)
        self.assertIn("network", err)
        code, _, err = self.debian("connect", "nope")
        self.assertEqual(code, 1)
        self.assertIn("Network 'nope' not found", err)
        self.assertEqual(self.ok(self.debian("list", "--no-headers")), "")

    def test_rapi_client(self):
        create, = self.rapi(call("CreateNetwork", "rnet", "10.30.0.0/29",
                                 gateway="10.30.0.1", tags="x,y"))
        self.assertIsInstance(create, int)
        self.assertEqual(self.rapi(call("wait_job", create)), ["success"])
        names, bulk, one = self.rapi(call("GetNetworks"), call("GetNetworks", bulk=True),
                                     call("GetNetwork", "rnet"))
        self.assertEqual(names, ["rnet"])
        self.assertEqual(bulk, [one])
        self.assertEqual((one["network"], one["gateway"], one["free_count"],
                          one["reserved_count"], one["map"], one["tags"]),
                         ("10.30.0.0/29", "10.30.0.1", 5, 3, "XX.....X", ["x", "y"]))
        # confd answers from the config with the network in it
        self.assertEqual(self.confd("ping")["status"], 0)
        # (confd reads a changed config.data again after its reload hold-off: ask until
        # the copy has the network, within a deadline)
        deadline = time.monotonic() + 30
        while True:
            reply = self.confd("config-query", f"/networks/{one['uuid']}/name")
            if reply["status"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(reply["answer"], "rnet", reply)

        connect, = self.rapi(call("ConnectNetwork", "rnet", "default", "bridged", "br9"))
        self.assertEqual(self.rapi(call("wait_job", connect)), ["success"])
        (one,) = self.rapi(call("GetNetwork", "rnet"))
        self.assertEqual(one["group_list"], [["default", "bridged", "br9", ""]])
        modify, = self.rapi(call("ModifyNetwork", "rnet", mac_prefix="aa:00:22"))
        disconnect, = self.rapi(call("DisconnectNetwork", "rnet", "default"))
        self.assertEqual(self.rapi(call("wait_job", modify), call("wait_job", disconnect)),
                         ["success", "success"])
        delete, = self.rapi(call("DeleteNetwork", "rnet"))
        self.assertEqual(self.rapi(call("wait_job", delete)), ["success"])
        (gone,) = self.rapi(call("GetNetwork", "rnet"))
        self.assertEqual(gone["error"]["code"], 404)
