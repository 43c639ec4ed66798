"""Network logical units through the real queue: Ganeti's checks, pools, locks and hooks."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.network import AddressPool
from ganeti.core.objects import NIC, Instance, NodeGroup
from ganeti.master.locking.manager import LEVEL_NETWORK
from ganeti.master.lu import network
from ganeti.master.lu.network import LUNetworkAdd, LUNetworkConnect, LUNetworkDisconnect
from tests.fakes.configs import node_paths, small_config
from tests.master.test_jobqueue import QueueTestCase

INST_UUID = "7b0a2c7e-0000-4000-8000-000000000001"


def net_op(op_id, name="net1", **params):
    return {"OP_ID": op_id, "network_name": name, **params}


def add_op(name="net1", network="10.1.0.0/24", **params):
    return net_op("OP_NETWORK_ADD", name, network=network, **params)


def connect_op(name="net1", group="default", **params):
    return net_op("OP_NETWORK_CONNECT", name, group_name=group,
                  network_mode=params.pop("mode", "bridged"),
                  network_link=params.pop("link", "br0"), **params)


class NetworkLUTestCase(QueueTestCase, SynchronousTestCase):
    """A one-node cluster with one instance whose NIC has 10.1.0.5 and no network."""

    def setUp(self):
        self.paths = node_paths(self.mktemp())
        os.makedirs(self.paths.data_dir)
        cfg = small_config()
        master = cfg.cluster.master_node
        cfg.instances[INST_UUID] = Instance(
            uuid=INST_UUID, name="inst1.test", primary_node=master, hypervisor="fake",
            os="busybox", disk_template="diskless",
            nics=[NIC(uuid="7b0a2c7e-0000-4000-8000-000000000002", mac="aa:00:00:00:00:01",
                      ip="10.1.0.5", nicparams={})])
        cfg.nodegroups["7b0a2c7e-0000-4000-8000-000000000003"] = NodeGroup(
            uuid="7b0a2c7e-0000-4000-8000-000000000003", name="empty")
        with open(self.paths.config_file, "w") as f:
            f.write(configmod.dump(cfg))
        self.start()

    @property
    def config(self):
        return self.daemon.config_writer.config

    def net(self, name="net1"):
        return self.config.network_by_name(name)

    def result(self, jid):
        self.assertEqual(self.status(jid), "success", self.field(jid, "opresult"))
        return self.field(jid, "opresult")[0]

    def error(self, jid):
        """(class, message, code) of a failed job."""
        self.assertEqual(self.status(jid), "error")
        result = self.field(jid, "opresult")[0]
        return result[0], result[1][0], (result[1][1] if len(result[1]) > 1 else None)

    def log(self, jid):
        return [entry[3] for entries in self.field(jid, "oplog") for entry in entries]

    def unchanged(self, op):
        """Run a refused opcode; (class, message, code); the config is untouched."""
        before = self.config.serial_no
        failure = self.error(self.submit(op))
        self.assertEqual(self.config.serial_no, before)
        return failure


class AddTest(NetworkLUTestCase):
    def test_add_reserves_network_broadcast_gateway_and_given_ips(self):
        jid = self.submit(add_op(gateway="10.1.0.1", mac_prefix="AA:BB:CC",
                                 add_reserved_ips=["10.1.0.10"], tags=["b", "a"],
                                 network6="2001:db8::/64", gateway6="2001:db8::1"))
        self.assertIsNone(self.result(jid))
        net = self.net()
        self.assertEqual((net.network, net.gateway, net.mac_prefix, net.tags),
                         ("10.1.0.0/24", "10.1.0.1", "aa:bb:cc", ["a", "b"]))
        self.assertEqual(net.reservations, "0" * 256)
        pool = AddressPool(net)
        self.assertEqual(pool.external_reservations(),
                         ["10.1.0.0", "10.1.0.1", "10.1.0.10", "10.1.0.255"])
        self.assertEqual((pool.free_count(), pool.reserved_count()), (252, 4))
        # the new network's lock exists, keyed by UUID
        self.assertIn(net.uuid, self.daemon.locks.names(LEVEL_NETWORK))

    def test_conflicts_check_reserves_node_and_master_addresses(self):
        jid = self.submit(add_op(network="127.0.1.0/24"))
        self.result(jid)
        pool = AddressPool(self.net())
        self.assertEqual(pool.external_reservations(),
                         ["127.0.1.0", "127.0.1.1", "127.0.1.254", "127.0.1.255"])
        self.assertIn(" - INFO: Reserved IP address of node 'node1.test' (127.0.1.1)",
                      self.log(jid))
        self.assertIn(" - INFO: Reserved cluster master IP address (127.0.1.254)",
                      self.log(jid))
        self.result(self.submit(add_op("net2", network="127.0.1.0/24",
                                       conflicts_check=False)))
        self.assertEqual(AddressPool(self.net("net2")).external_reservations(),
                         ["127.0.1.0", "127.0.1.255"])

    def test_refusals_change_nothing(self):
        self.result(self.submit(add_op()))
        cases = [
            (add_op(), ("OpPrereqError", "Desired network name 'net1' already exists as a "
                                         f"network (UUID: {self.net().uuid})",
                        "already_exists")),
            (add_op("n2", network="10.2.0.1/24"), (
                "OpPrereqError", "Cannot create IP address pool for network 'n2': Invalid "
                "IPv4 network '10.2.0.1/24': 10.2.0.1/24 has host bits set", "wrong_input")),
            (add_op("n2", network="10.0.0.0/8"), (
                "OpPrereqError", "Cannot create IP address pool for network 'n2': A big "
                "network with 16777216 host(s) is currently not supported. please specify "
                "at most a /16 network", "wrong_input")),
            (add_op("n2", network="10.2.0.0/31"), (
                "OpPrereqError", "Cannot create IP address pool for network 'n2': A network "
                "with only 2 host(s) is too small, please specify at least a /30 network",
                "wrong_input")),
            (add_op("n2", gateway="10.3.0.1"), (
                "OpPrereqError", "Cannot create IP address pool for network 'n2': "
                "10.1.0.0/24 does not contain 10.3.0.1", "wrong_input")),
            (add_op("n2", add_reserved_ips=["10.1.0.255"]), (
                "OpPrereqError", "Cannot reserve IP address '10.1.0.255': IP 10.1.0.255 is "
                "already externally reserved", "wrong_input")),
            (add_op("n2", add_reserved_ips=["10.9.0.1"]), (
                "OpPrereqError", "Cannot reserve IP address '10.9.0.1': 10.1.0.0/24 does not "
                "contain 10.9.0.1", "wrong_input")),
            (add_op("n2", mac_prefix="aa:bb"), (
                "OpPrereqError", "Invalid MAC address prefix 'aa:bb'", "wrong_input")),
            (add_op("n2", network6="2001:db8::/64", gateway6="2001:db9::1"), (
                "OpPrereqError", "Cannot create IP address pool for network 'n2': "
                "2001:db8::/64 does not contain 2001:db9::1", "wrong_input")),
        ]
        for op, expected in cases:
            self.assertEqual(self.unchanged(op), expected)
        self.assertEqual(self.unchanged(add_op("n2", tags=["a b"]))[0], "TagError")
        self.assertEqual(sorted(n.name for n in self.config.networks.values()), ["net1"])

    def test_link_local_gateway6_is_accepted(self):
        self.result(self.submit(add_op(network6="2001:db8::/64", gateway6="fe80::1")))

    def test_dry_run_adds_nothing(self):
        self.result(self.submit(add_op(dry_run=True)))
        self.assertIsNone(self.net())


class RemoveTest(NetworkLUTestCase):
    def test_remove(self):
        self.result(self.submit(add_op()))
        uuid = self.net().uuid
        self.result(self.submit(net_op("OP_NETWORK_REMOVE")))
        self.assertEqual(self.config.networks, {})
        self.assertNotIn(uuid, self.daemon.locks.names(LEVEL_NETWORK))

    def test_unknown(self):
        self.assertEqual(self.unchanged(net_op("OP_NETWORK_REMOVE", "nope")),
                         ("OpPrereqError", "Network 'nope' not found", "unknown_entity"))

    def test_connected_network_stays(self):
        self.result(self.submit(add_op()))
        self.result(self.submit(connect_op(conflicts_check=False)))
        jid = self.submit(net_op("OP_NETWORK_REMOVE"))
        self.assertEqual(self.error(jid), ("OpPrereqError", "Network still connected",
                                           "wrong_state"))
        self.assertIn(" - WARNING: Network 'net1' is connected to the following node "
                      "groups: default", self.log(jid))
        self.assertIsNotNone(self.net())


class SetParamsTest(NetworkLUTestCase):
    def setUp(self):
        super().setUp()
        self.result(self.submit(add_op(gateway="10.1.0.1")))

    def modify(self, **params):
        return self.submit(net_op("OP_NETWORK_SET_PARAMS", **params))

    def test_gateway_moves_its_reservation(self):
        serial = self.net().serial_no
        self.result(self.modify(gateway="10.1.0.254"))
        net = self.net()
        self.assertEqual(net.gateway, "10.1.0.254")
        self.assertEqual(AddressPool(net).external_reservations(),
                         ["10.1.0.0", "10.1.0.254", "10.1.0.255"])
        self.assertEqual(net.serial_no, serial + 1)
        self.result(self.modify(gateway="none"))
        self.assertIsNone(self.net().gateway)
        self.assertEqual(AddressPool(self.net()).external_reservations(),
                         ["10.1.0.0", "10.1.0.255"])

    def test_same_gateway_warns(self):
        jid = self.modify(gateway="10.1.0.1")
        self.result(jid)
        self.assertIn(" - WARNING: Gateway is already 10.1.0.1", self.log(jid))

    def test_reserved_ips(self):
        jid = self.modify(add_reserved_ips=["10.1.0.20", "10.1.0.0"])
        self.result(jid)
        self.assertIn(" - WARNING: Cannot reserve IP address 10.1.0.0: IP 10.1.0.0 is "
                      "already externally reserved", self.log(jid))
        self.assertTrue(AddressPool(self.net()).is_reserved("10.1.0.20", external=True))
        jid = self.modify(remove_reserved_ips=["10.1.0.20", "10.1.0.1", "10.1.0.30"])
        self.result(jid)
        self.assertEqual(self.log(jid)[-2:], [
            " - WARNING: Cannot unreserve Gateway's IP",
            " - WARNING: Cannot release IP address 10.1.0.30: IP 10.1.0.30 is not "
            "externally reserved"])
        self.assertEqual(AddressPool(self.net()).external_reservations(),
                         ["10.1.0.0", "10.1.0.1", "10.1.0.255"])

    def test_mac_prefix_and_ipv6(self):
        self.result(self.modify(mac_prefix="AA:00:01", network6="2001:db8::/64",
                                gateway6="2001:db8::1"))
        net = self.net()
        self.assertEqual((net.mac_prefix, net.network6, net.gateway6),
                         ("aa:00:01", "2001:db8::/64", "2001:db8::1"))
        self.result(self.modify(mac_prefix="none", network6="none", gateway6="none"))
        net = self.net()
        self.assertEqual((net.mac_prefix, net.network6, net.gateway6), (None, None, None))

    def test_refusals_change_nothing(self):
        self.result(self.modify(add_reserved_ips=["10.1.0.20"]))
        cases = [
            ({"gateway": "10.1.0.2", "add_reserved_ips": ["10.1.0.3"]},
             ("OpPrereqError", "Cannot modify gateway and reserved ips at once",
              "wrong_input")),
            ({"gateway": "10.1.0.20"},
             ("OpPrereqError", "Gateway IP address '10.1.0.20' is already reserved",
              "wrong_state")),
            ({"gateway": "10.2.0.1"},
             ("OpPrereqError", "10.1.0.0/24 does not contain 10.2.0.1", "wrong_input")),
            ({"mac_prefix": "zz:00:00"},
             ("OpPrereqError", "Invalid MAC address prefix 'zz:00:00'", "wrong_input")),
            ({"network6": "2001:db8::/64", "gateway6": "2001:db9::1"},
             ("OpPrereqError", "Invalid IPv6 gateway: 2001:db8::/64 does not contain "
              "2001:db9::1", "wrong_input")),
        ]
        for params, expected in cases:
            self.assertEqual(self.unchanged(net_op("OP_NETWORK_SET_PARAMS", **params)),
                             expected)


class ConnectTest(NetworkLUTestCase):
    def test_connect_and_disconnect(self):
        self.result(self.submit(add_op("net2", network="10.2.0.0/24")))
        uuid = self.net("net2").uuid
        self.result(self.submit(connect_op("net2", mode="routed", link="rt1",
                                           network_vlan="100")))
        group = self.config.group_by_name("default")
        self.assertEqual(group.networks[uuid],
                         {"mode": "routed", "link": "rt1", "vlan": "100"})
        jid = self.submit(connect_op("net2"))
        self.result(jid)
        self.assertIn(" - WARNING: Network 'net2' is already mapped to group 'default'",
                      self.log(jid))
        self.assertEqual(self.config.group_by_name("default").networks[uuid]["mode"],
                         "routed")
        self.result(self.submit(net_op("OP_NETWORK_DISCONNECT", "net2",
                                       group_name="default")))
        self.assertEqual(self.config.group_by_name("default").networks, {})
        jid = self.submit(net_op("OP_NETWORK_DISCONNECT", "net2", group_name="default"))
        self.result(jid)
        self.assertIn(" - WARNING: Network 'net2' is not mapped to group 'default'",
                      self.log(jid))

    def test_connecting_over_a_nic_address_conflicts(self):
        self.result(self.submit(add_op()))
        jid = self.submit(connect_op())
        self.assertEqual(self.error(jid), (
            "OpPrereqError", "Conflicting IP addresses found;  remove/modify the "
            "corresponding network interfaces", "wrong_state"))
        self.assertIn(" - WARNING: IP addresses from network 'net1', which is about to "
                      "connect to node group 'default', are in use: inst1.test: "
                      "nic0/10.1.0.5", self.log(jid))
        self.assertEqual(self.config.group_by_name("default").networks, {})
        # without the check, and in a group without that instance, it connects
        self.result(self.submit(connect_op(conflicts_check=False)))
        self.result(self.submit(connect_op(group="empty")))

    def test_disconnect_refused_while_a_nic_uses_the_network(self):
        self.result(self.submit(add_op()))
        self.result(self.submit(connect_op(conflicts_check=False)))
        uuid = self.net().uuid

        def use(cfg):
            cfg.instances[INST_UUID].nics[0].network = uuid
            cfg.instances[INST_UUID].serial_no += 1
        self.successResultOf(self.daemon.config_writer.update(use))
        jid = self.submit(net_op("OP_NETWORK_DISCONNECT", group_name="default"))
        self.assertEqual(self.error(jid)[2], "wrong_state")
        self.assertIn(" - WARNING: IP addresses from network 'net1', which is about to "
                      "disconnect from node group 'default', are in use: inst1.test: "
                      "nic0/10.1.0.5", self.log(jid))
        self.assertEqual(self.error(self.submit(net_op("OP_NETWORK_REMOVE")))[0:2], (
            "OpPrereqError", "Network still connected"))

        # a NIC left on a network no group connects any more still keeps it
        def unlink(cfg):
            group = cfg.group_by_name("default")
            del group.networks[uuid]
            group.serial_no += 1
        self.successResultOf(self.daemon.config_writer.update(unlink))
        self.assertEqual(self.unchanged(net_op("OP_NETWORK_REMOVE")), (
            "OpPrereqError", "Network 'net1' is still used by instances: inst1.test",
            "wrong_state"))

    def test_unknown_group_or_network(self):
        self.result(self.submit(add_op()))
        self.assertEqual(self.unchanged(connect_op(group="nope")),
                         ("OpPrereqError", "Node group 'nope' not found", "unknown_entity"))
        self.assertEqual(self.unchanged(connect_op("nope")),
                         ("OpPrereqError", "Network 'nope' not found", "unknown_entity"))


class LocksTest(NetworkLUTestCase):
    """What the units hold while they check their prerequisites."""

    def held_during_check(self, cls, op):
        """Run ``op``; the locks (name -> mode) its unit held in check_prereq."""
        held = {}
        original = cls.check_prereq

        def recording(lu):
            held.update({name: mode for name, mode, owners, _ in
                         self.daemon.locks.lock_info() if owners})
            return original(lu)
        self.patch(cls, "check_prereq", recording)
        self.submit(op)
        return held

    def test_connect_locks_group_instances_and_network(self):
        self.result(self.submit(add_op("net2", network="10.2.0.0/24")))
        uuid = self.net("net2").uuid
        group = self.config.group_by_name("default").uuid
        held = self.held_during_check(LUNetworkConnect, connect_op("net2"))
        self.assertEqual(held, {"cluster/BGL": "shared", "instance/inst1.test": "shared",
                                f"nodegroup/{group}": "exclusive",
                                f"network/{uuid}": "shared"})

    def test_connect_without_check_locks_only_the_group(self):
        self.result(self.submit(add_op("net2", network="10.2.0.0/24")))
        group = self.config.group_by_name("default").uuid
        held = self.held_during_check(LUNetworkConnect,
                                      connect_op("net2", conflicts_check=False))
        self.assertEqual(held, {"cluster/BGL": "shared", f"nodegroup/{group}": "exclusive"})

    def test_disconnect_locks_group_instances(self):
        self.result(self.submit(add_op("net2", network="10.2.0.0/24")))
        group = self.config.group_by_name("default").uuid
        held = self.held_during_check(LUNetworkDisconnect, net_op(
            "OP_NETWORK_DISCONNECT", "net2", group_name="default"))
        self.assertEqual(held, {"cluster/BGL": "shared", "instance/inst1.test": "shared",
                                f"nodegroup/{group}": "exclusive"})

    def test_add_reads_the_nodes_under_shared_locks(self):
        master = self.config.cluster.master_node
        held = self.held_during_check(LUNetworkAdd, add_op())
        self.assertEqual(held, {"cluster/BGL": "shared", f"node/{master}": "shared",
                                "node/[lockset]": "shared"})
        held = self.held_during_check(LUNetworkAdd, add_op("net2", conflicts_check=False))
        self.assertEqual(held, {"cluster/BGL": "shared"})

    def test_no_unit_takes_the_big_lock_exclusively(self):
        self.assertEqual([cls.REQ_BGL for cls in network.LUS], [False] * 5)
