"""gnt-network end to end against a whole master daemon on a fake clock."""

from __future__ import annotations

from ganeti.cli import gnt_network
from ganeti.core.network import AddressPool
from tests.fakes.clirun import MasterCliTestCase


class NetworkCliTest(MasterCliTestCase):
    def run_ok(self, *argv: str) -> str:
        result = self.run_tool(gnt_network, *argv)
        self.assertEqual(result.code, 0, result.err)
        return result.out

    def net(self, name: str = "net1"):
        return self.master.config.network_by_name(name)

    def test_add_list_and_info(self):
        self.run_ok("add", "--network", "10.1.0.0/26", "--gateway", "10.1.0.1",
                    "--add-reserved-ips", "10.1.0.10,10.1.0.11", "--mac-prefix", "aa:00:01",
                    "--tags", "a,b", "net1")
        self.run_ok("add", "--network=127.0.1.0/30", "--network6", "2001:db8::/64", "net2")
        net = self.net()
        self.assertEqual((net.gateway, net.mac_prefix, net.tags),
                         ("10.1.0.1", "aa:00:01", ["a", "b"]))
        self.assertEqual(self.run_ok("list").splitlines(), [
            "Network Subnet       Gateway  MacPrefix GroupList Tags",
            "net1    10.1.0.0/26  10.1.0.1 aa:00:01            a,b",
            "net2    127.0.1.0/30 -        -                   "])
        self.assertEqual(self.run_ok("list", "--no-headers", "--separator=|", "-o",
                                     "name,free_count,reserved_count", "net2"),
                         "net2|1|3\n")
        out = self.run_ok("info", "net1")
        self.assertEqual(out.splitlines()[:13], [
            "Network name: net1",
            f"UUID: {net.uuid}",
            "Serial number: 1",
            "  Subnet: 10.1.0.0/26",
            "  Gateway: 10.1.0.1",
            "  IPv6 Subnet: None",
            "  IPv6 Gateway: None",
            "  Mac Prefix: aa:00:01",
            "  Size: 64",
            "  Free: 59 (92.19%)",
            "  Usage map:",
            "        0 XX........XX...................................................X 63",
            "         (X) used    (.) free",
        ])
        self.assertEqual(out.splitlines()[13:], [
            "  externally reserved IPs:",
            "    10.1.0.0, 10.1.0.1, 10.1.0.10, 10.1.0.11, 10.1.0.63",
            "  not connected to any node group",
            "  not used by any instances"])
        self.assertEqual(self.run_ok("info", "nope"), "")

    def test_add_needs_network(self):
        result = self.run_tool(gnt_network, "add", "net1")
        self.assertEqual(result.code, 1)
        self.assertIn("The --network option must be given", result.err)
        result = self.run_tool(gnt_network, "add", "--network", "10.0.0.0/8", "net1")
        self.assertEqual(result.code, 1)
        self.assertIn("Cannot create IP address pool for network 'net1': A big network",
                      result.err)
        self.assertEqual(self.master.config.networks, {})

    def test_modify(self):
        self.run_ok("add", "--network", "10.1.0.0/28", "--gateway", "10.1.0.1", "net1")
        result = self.run_tool(gnt_network, "modify", "net1")
        self.assertEqual((result.code, result.err),
                         (1, "Please give at least one of the parameters.\n"))
        self.run_ok("modify", "--gateway", "10.1.0.14", "--mac-prefix", "aa:bb:cc", "net1")
        self.run_ok("modify", "--add-reserved-ips", "10.1.0.5", "net1")
        net = self.net()
        self.assertEqual((net.gateway, net.mac_prefix), ("10.1.0.14", "aa:bb:cc"))
        self.assertEqual(AddressPool(net).external_reservations(),
                         ["10.1.0.0", "10.1.0.5", "10.1.0.14", "10.1.0.15"])
        self.run_ok("modify", "--remove-reserved-ips", "10.1.0.5", "--gateway6", "none",
                    "net1")
        self.assertFalse(AddressPool(self.net()).is_reserved("10.1.0.5", external=True))

    def test_connect_disconnect_remove(self):
        self.run_ok("add", "--network", "10.1.0.0/28", "net1")
        self.run_ok("connect", "-N", "mode=routed,link=rt0,vlan=.5", "net1")  # all groups
        self.assertEqual(self.run_ok("list", "--no-headers", "-o", "group_list,group_cnt"),
                         "default (routed, rt0, .5) 1\n")
        result = self.run_tool(gnt_network, "remove", "net1")
        self.assertEqual(result.code, 1)
        self.assertIn("Network still connected", result.err)
        self.assertIn("WARNING: Network 'net1' is connected to the following node groups: "
                      "default", result.out)
        self.run_ok("disconnect", "net1", "default")
        self.assertEqual(self.master.config.group_by_name("default").networks, {})
        self.run_ok("connect", "net1", "default")
        self.assertEqual(self.master.config.group_by_name("default").networks[
            self.net().uuid], {"mode": "bridged", "link": "xen-br0", "vlan": ""})
        self.run_ok("disconnect", "net1")
        self.run_ok("remove", "net1")
        self.assertEqual(self.master.config.networks, {})
        result = self.run_tool(gnt_network, "connect", "-N", "colour=red", "net1")
        self.assertEqual(result.code, 1)
        self.assertIn("unknown parameter 'colour'", result.err)

    def test_tags_and_fields(self):
        self.run_ok("add", "--network", "10.1.0.0/28", "net1")
        self.run_ok("add-tags", "net1", "x", "y")
        self.assertEqual(self.run_ok("list-tags", "net1"), "x\ny\n")
        self.run_ok("remove-tags", "net1", "x")
        self.assertEqual(self.run_ok("list-tags", "net1"), "y\n")
        fields = self.run_ok("list-fields", "--no-headers", "--separator=|", "map",
                             "group_list")
        self.assertEqual(fields, "map|Text|Map|Actual mapping\n"
                                 "group_list|Custom|GroupList|List of nodegroups (group "
                                 "name, NIC mode, NIC link)\n")

    def test_submit(self):
        result = self.run_tool(gnt_network, "add", "--network", "10.1.0.0/28", "--submit",
                               "net1")
        self.assertEqual(result.code, 0)
        self.assertRegex(result.err, r"^JobID: \d+\n$")

    def test_reserved_ips_split(self):
        self.assertEqual(gnt_network.reserved_ips("a,b\\,c"), ["a", "b,c"])
        self.assertEqual(gnt_network.reserved_ips(""), [])
        self.assertIsNone(gnt_network.reserved_ips(None))

    def test_info_lines_with_groups_and_instances(self):
        row = ["net1", "10.1.0.0/30", None, None, None, None, 1, 3, "XX.X",
               [["default", "routed", "rt0", ""]], ["inst1", "inst2"], "10.1.0.0, 10.1.0.3",
               2, "uuid-1"]
        lines = gnt_network.network_info_lines(row, {"inst1": ["0:10.1.0.1", "2:10.1.0.1"]})
        self.assertEqual(lines[9:], [
            "  Free: 1 (25.00%)", "  Usage map:",
            "        0 XX.X                                                             63",
            "         (X) used    (.) free",
            "  externally reserved IPs:", "    10.1.0.0, 10.1.0.3",
            "  connected to node groups:", "    default (mode:routed link:rt0 vlan:)",
            "  used by 2 instances:", "    inst1: 0:10.1.0.1, 2:10.1.0.1", "    inst2: "])

    def test_list_unknown_name(self):
        self.run_ok("add", "--network", "10.1.0.0/28", "net1")
        result = self.run_tool(gnt_network, "list", "net1", "nope")
        self.assertEqual(result.code, 1)
        self.assertIn("Network name nope not found", result.err)
