"""Hooks of the network units: Ganeti's paths, environment and nodes, and a failing
pre hook that stops an add (the recorder of tests/master/test_hooks.py)."""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from tests.fakes.nodes import master_with_nodes
from tests.master.test_hooks import FAIL, RecordingHooks


class NetworkHooksTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 2)
        self.hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = self.hooks
        self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                     "primary_ip": "127.0.1.2", "readd": False})
        self.hooks.runs.clear()

    def run_ok(self, *ops: dict[str, Any]) -> list[str]:
        status, results, log = self.master.finish(self.master.submit(*ops))
        self.assertEqual(status, "success", (results, log))
        return log

    def own_env(self, node: str, hpath: str, phase: str) -> dict[str, str]:
        env = self.hooks.env(node, hpath, phase)
        self.assertEqual(env["GANETI_OBJECT_TYPE"], "NETWORK")
        return {k: v for k, v in env.items() if k.startswith("GANETI_NETWORK_")
                or k.startswith("GANETI_GROUP_")}

    def test_add_modify_remove_on_the_master(self):
        self.run_ok({"OP_ID": "OP_NETWORK_ADD", "network_name": "net1",
                     "network": "10.1.0.0/24", "gateway": "10.1.0.1", "tags": ["b", "a"]})
        self.assertEqual(self.hooks.where("network-add", "pre"), ["node1.test"])
        self.assertEqual(self.hooks.where("network-add", "post"), ["node1.test"])
        self.assertEqual(self.own_env("node1.test", "network-add", "pre"), {
            "GANETI_NETWORK_NAME": "net1", "GANETI_NETWORK_SUBNET": "10.1.0.0/24",
            "GANETI_NETWORK_GATEWAY": "10.1.0.1", "GANETI_NETWORK_TAGS": "b a"})
        self.run_ok({"OP_ID": "OP_NETWORK_SET_PARAMS", "network_name": "net1",
                     "mac_prefix": "aa:00:00", "gateway": "none"})
        self.assertEqual(self.own_env("node1.test", "network-modify", "pre"), {
            "GANETI_NETWORK_NAME": "net1", "GANETI_NETWORK_SUBNET": "10.1.0.0/24",
            "GANETI_NETWORK_MAC_PREFIX": "aa:00:00", "GANETI_NETWORK_TAGS": "a b"})
        self.run_ok({"OP_ID": "OP_NETWORK_REMOVE", "network_name": "net1"})
        self.assertEqual(self.own_env("node1.test", "network-remove", "pre"),
                         {"GANETI_NETWORK_NAME": "net1"})

    def test_connect_and_disconnect_on_the_group_nodes(self):
        self.run_ok({"OP_ID": "OP_NETWORK_ADD", "network_name": "net1",
                     "network": "10.1.0.0/24"})
        self.run_ok({"OP_ID": "OP_NETWORK_CONNECT", "network_name": "net1",
                     "group_name": "default", "network_mode": "routed",
                     "network_link": "rt0", "network_vlan": "7"})
        for phase in ("pre", "post"):
            self.assertEqual(sorted(self.hooks.where("network-connect", phase)),
                             ["node1.test", "node2.test"])
        expected = {"GANETI_GROUP_NAME": "default", "GANETI_GROUP_NETWORK_MODE": "routed",
                    "GANETI_GROUP_NETWORK_LINK": "rt0", "GANETI_GROUP_NETWORK_VLAN": "7"}
        self.assertEqual(self.own_env("node2.test", "network-connect", "pre"), expected)
        self.run_ok({"OP_ID": "OP_NETWORK_DISCONNECT", "network_name": "net1",
                     "group_name": "default"})
        self.assertEqual(self.own_env("node1.test", "network-disconnect", "pre"), expected)

    def test_failing_pre_hook_adds_nothing(self):
        self.hooks.answers[("node1.test", "network-add", "pre")] = [
            ["network-add-pre.d/50-deny", FAIL, "no"]]
        serial = self.master.config.serial_no
        status, results, _ = self.master.finish(self.master.submit(
            {"OP_ID": "OP_NETWORK_ADD", "network_name": "net1", "network": "10.1.0.0/24"}))
        self.assertEqual((status, results[0][0]), ("error", "HooksAbort"))
        self.assertEqual(self.master.config.networks, {})
        self.assertEqual(self.master.config.serial_no, serial)
