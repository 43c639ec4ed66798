"""Address pools of networks: Ganeti's AddressPool semantics on the config's maps."""

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import AddressPoolError, OpPrereqError
from ganeti.core.network import (
    AddressPool,
    free_addresses,
    initialize_network,
    is_taken,
    lookup_network,
    mark,
    parse_network4,
)
from ganeti.core.objects import Network
from tests.fakes.configs import small_config


def network(cidr="192.168.10.0/29", **kw):
    return Network(uuid="u1", name="net1", network=cidr, **kw)


class PoolTest(SynchronousTestCase):
    def test_initialize_reserves_network_broadcast_and_gateway(self):
        net = network(gateway="192.168.10.1")
        pool = initialize_network(net)
        self.assertEqual(net.reservations, "00000000")
        self.assertEqual(net.ext_reservations, "11000001")
        self.assertEqual(pool.map(), "XX.....X")
        self.assertEqual((pool.free_count(), pool.reserved_count()), (5, 3))
        self.assertEqual(pool.external_reservations(),
                         ["192.168.10.0", "192.168.10.1", "192.168.10.7"])
        self.assertEqual(pool.first_free(), "192.168.10.2")

    def test_reserve_and_release_in_either_map(self):
        net = network()
        pool = initialize_network(net)
        pool.reserve("192.168.10.2")
        pool.reserve("192.168.10.3", external=True)
        self.assertEqual(net.reservations, "00100000")
        self.assertEqual(pool.map(), "X.XX...X")
        self.assertTrue(pool.is_reserved("192.168.10.2"))
        self.assertFalse(pool.is_reserved("192.168.10.2", external=True))
        self.assertEqual(pool.first_free(), "192.168.10.1")
        with self.assertRaises(AddressPoolError) as cm:
            pool.reserve("192.168.10.2")
        self.assertEqual(cm.exception.args[0], "IP 192.168.10.2 is already used by an instance")
        with self.assertRaises(AddressPoolError) as cm:
            pool.reserve("192.168.10.3", external=True)
        self.assertEqual(cm.exception.args[0],
                         "IP 192.168.10.3 is already externally reserved")
        pool.release("192.168.10.2")
        with self.assertRaises(AddressPoolError) as cm:
            pool.release("192.168.10.2")
        self.assertEqual(cm.exception.args[0], "IP 192.168.10.2 is not used by an instance")
        with self.assertRaises(AddressPoolError) as cm:
            pool.release("192.168.10.4", external=True)
        self.assertEqual(cm.exception.args[0], "IP 192.168.10.4 is not externally reserved")
        with self.assertRaises(AddressPoolError) as cm:
            pool.reserve("192.168.11.1")
        self.assertEqual(cm.exception.args[0],
                         "192.168.10.0/29 does not contain 192.168.11.1")

    def test_full_pool(self):
        net = network("10.0.0.0/30")
        pool = initialize_network(net)
        pool.reserve("10.0.0.1")
        pool.reserve("10.0.0.2")
        self.assertTrue(pool.is_full())
        self.assertRaises(AddressPoolError, pool.first_free)
        self.assertEqual(pool.free_count(), 0)

    def test_making_a_pool_changes_nothing(self):
        net = network()
        pool = AddressPool(net)
        self.assertIsNone(net.reservations)
        self.assertEqual((pool.free_count(), pool.map()), (8, "........"))
        self.assertFalse(pool.is_reserved("192.168.10.1"))
        self.assertFalse(pool.contains(None))
        self.assertFalse(pool.contains("not an address"))
        self.assertTrue(pool.contains("192.168.10.5"))

    def test_sizes_and_bad_maps(self):
        self.assertEqual(str(parse_network4("10.0.0.0/16")), "10.0.0.0/16")
        for text in ("10.0.0.0/15", "10.0.0.0/31", "10.0.0.1/24", "x", "::/64"):
            self.assertRaises(AddressPoolError, parse_network4, text)
        self.assertRaises(AddressPoolError, AddressPool, network(reservations="0101"))
        self.assertRaises(AddressPoolError, AddressPool, network(reservations="0000000x"))

    def test_ipv6_gateway(self):
        initialize_network(network(network6="2001:db8::/64", gateway6="2001:db8::1"))
        initialize_network(network(network6="2001:db8::/64", gateway6="fe80::1"))
        self.assertRaises(AddressPoolError, initialize_network,
                          network(network6="2001:db8::/64", gateway6="2001:db9::1"))
        self.assertRaises(AddressPoolError, initialize_network,
                          network(gateway="10.0.0.1"))

    def test_low_level_marks(self):
        net = network()
        mark(net, "192.168.10.4", False, True)
        self.assertEqual(net.reservations, "00001000")
        self.assertTrue(is_taken(net, 4))
        self.assertFalse(is_taken(net, 5))
        mark(net, "192.168.10.4", False, False)
        self.assertFalse(is_taken(net, 4))
        self.assertRaises(AddressPoolError, mark, net, "10.0.0.1", True, True)

    def test_lookup(self):
        cfg = small_config()
        net = network()
        cfg.networks[net.uuid] = net
        self.assertIs(lookup_network(cfg, "net1"), net)
        self.assertIs(lookup_network(cfg, "u1"), net)
        with self.assertRaises(OpPrereqError) as cm:
            lookup_network(cfg, "nope")
        self.assertEqual(cm.exception.args, ("Network 'nope' not found", "unknown_entity"))

    @given(st.lists(st.tuples(st.integers(0, 63), st.booleans(), st.booleans()),
                    max_size=40))
    def test_counts_agree_with_the_maps(self, steps):
        net = network("10.0.0.0/26")
        pool = initialize_network(net)
        model = {0: {True}, 63: {True}}  # index -> the maps (external?) that mark it
        for index, external, reserve in steps:
            address = str(pool.network[index])
            marked = external in model.get(index, set())
            if reserve == marked:
                self.assertRaises(AddressPoolError,
                                  pool.reserve if reserve else pool.release, address,
                                  external)
                continue
            (pool.reserve if reserve else pool.release)(address, external)
            model.setdefault(index, set())
            (model[index].add if reserve else model[index].discard)(external)
        used = {i for i, maps in model.items() if maps}
        self.assertEqual(pool.reserved_count(), len(used))
        self.assertEqual(pool.free_count(), 64 - len(used))
        self.assertEqual(pool.map(), "".join("X" if i in used else "." for i in range(64)))
        self.assertEqual(pool.external_reservations(),
                         [str(pool.network[i]) for i in sorted(model) if True in model[i]])


class FreeAddressesTest(SynchronousTestCase):
    def test_free_addresses_in_order_skipping_both_maps(self):
        net = network()
        pool = initialize_network(net)
        pool.reserve("192.168.10.2")
        pool.reserve("192.168.10.4", external=True)
        self.assertEqual(list(free_addresses(net)), ["192.168.10.1", "192.168.10.3",
                                                     "192.168.10.5", "192.168.10.6"])
        self.assertEqual(list(free_addresses(network())), [f"192.168.10.{i}"
                                                           for i in range(8)])
