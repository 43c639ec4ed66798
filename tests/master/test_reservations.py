"""Per-job reservations (ganeti.master.config.reservations)."""

from __future__ import annotations

import random

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants
from ganeti.core.errors import ECODE_NOTUNIQUE, OpPrereqError, ProgrammerError, ReservationError
from ganeti.core.objects import Network
from ganeti.master.config import reservations as rmod
from ganeti.master.config.reservations import ReservationManager
from tests.core.test_config_instances import NET, cluster_with_instances

JOB1, JOB2 = 101, 102


class ReservationTestCase(SynchronousTestCase):
    def setUp(self):
        self.cfg = cluster_with_instances()
        self.n1 = self.cfg.cluster.master_node
        self.rm = ReservationManager(random.Random(7))


class MacTest(ReservationTestCase):
    def test_reserve_against_config_and_other_jobs(self):
        with self.assertRaises(ReservationError):
            self.rm.reserve_mac(JOB1, self.cfg, "AA:00:00:00:00:01")  # a NIC has it
        self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:99")
        with self.assertRaises(ReservationError) as ctx:
            self.rm.reserve_mac(JOB2, self.cfg, "aa:00:00:00:00:99")
        self.assertEqual(ctx.exception.args[0],
                         "Duplicate reservation for resource 'mac:aa:00:00:00:00:99'")
        # the same job twice: two NICs of one instance cannot share a MAC either
        with self.assertRaises(ReservationError):
            self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:99")
        self.rm.release(JOB1)
        self.rm.reserve_mac(JOB2, self.cfg, "aa:00:00:00:00:99")
        self.assertEqual(self.rm.reserved(JOB2), {("mac", "aa:00:00:00:00:99")})
        self.assertEqual(self.rm.reserved(JOB1), set())

    def test_generate_uses_the_prefix_and_is_unique(self):
        macs = {self.rm.generate_mac(JOB1, self.cfg) for _ in range(200)}
        self.assertEqual(len(macs), 200)
        self.assertTrue(all(m.startswith(self.cfg.cluster.mac_prefix + ":") for m in macs))
        net_mac = self.rm.generate_mac(JOB2, self.cfg, NET)
        self.assertTrue(net_mac.startswith("aa:00:01:"))
        self.assertEqual(len(self.rm.reserved()), 201)

    def test_generate_gives_up_when_everything_is_taken(self):
        class Fixed(random.Random):
            def randrange(self, *args, **kwargs):
                return 1
        rm = ReservationManager(Fixed())
        self.cfg.cluster.mac_prefix = "aa:00:00"
        self.cfg.instances["i-x"].nics[0].mac = "aa:00:00:01:01:01"
        self.cfg.serial_no += 1
        with self.assertRaises(ReservationError) as ctx:
            rm.generate_mac(JOB1, self.cfg)
        self.assertIn("Not able generate new resource (last tried: aa:00:00:01:01:01)",
                      ctx.exception.args[0])

    def test_as_prereq(self):
        try:
            self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:01")
        except ReservationError as err:
            error = rmod.as_prereq(err, "MAC address aa:00:00:00:00:01 already in use in cluster")
        self.assertIsInstance(error, OpPrereqError)
        self.assertEqual(error.args, ("MAC address aa:00:00:00:00:01 already in use in cluster",
                                      ECODE_NOTUNIQUE))


class IpTest(ReservationTestCase):
    def test_reserve_checks_network_pool_and_jobs(self):
        net = self.cfg.networks[NET]
        rmod.commit_ip(net, "10.1.0.5")
        self.cfg.serial_no += 1
        with self.assertRaises(ReservationError):
            self.rm.reserve_ip(JOB1, self.cfg, NET, "10.1.0.5")       # used in the pool
        with self.assertRaises(ReservationError):
            self.rm.reserve_ip(JOB1, self.cfg, NET, "10.2.0.5")       # not in the network
        with self.assertRaises(ReservationError):
            self.rm.reserve_ip(JOB1, self.cfg, NET, "10.1.0.0")       # network address (ext)
        self.rm.reserve_ip(JOB1, self.cfg, NET, "10.1.0.5", check=False)
        self.rm.reserve_ip(JOB1, self.cfg, NET, "10.1.0.6")
        with self.assertRaises(ReservationError):
            self.rm.reserve_ip(JOB2, self.cfg, NET, "10.1.0.6")
        with self.assertRaises(ReservationError):
            self.rm.reserve_ip(JOB2, self.cfg, "no-such-net", "10.1.0.6")

    def test_generate_first_free(self):
        net = self.cfg.networks[NET]
        rmod.commit_ip(net, "10.1.0.1")
        self.assertEqual(self.rm.generate_ip(JOB1, self.cfg, NET), "10.1.0.2")
        self.assertEqual(self.rm.generate_ip(JOB2, self.cfg, NET), "10.1.0.3")
        self.rm.release(JOB1)
        self.assertEqual(self.rm.generate_ip(JOB2, self.cfg, NET), "10.1.0.2")

    def test_full_network(self):
        self.cfg.networks["small"] = Network(uuid="small", name="small",
                                             network="10.9.0.0/30", reservations="0110",
                                             ext_reservations="1001")
        with self.assertRaises(ReservationError) as ctx:
            self.rm.generate_ip(JOB1, self.cfg, "small")
        self.assertEqual(ctx.exception.args[0], "No free IP address in network small")

    def test_commit_and_release_in_the_bitmap(self):
        net = self.cfg.networks[NET]
        rmod.commit_ip(net, "10.1.0.3")
        self.assertEqual(net.reservations[3], "1")
        rmod.commit_ip(net, "10.1.0.4", external=True)
        self.assertEqual(net.ext_reservations[4], "1")
        rmod.release_ip(net, "10.1.0.3")
        self.assertEqual(net.reservations, "0" * 256)
        with self.assertRaises(ReservationError):
            rmod.commit_ip(net, "10.7.0.1")


class PortTest(ReservationTestCase):
    def test_pool_first_then_above_highest(self):
        # pool [11005]; used: drbd 11000, network port 11001; highest 11010
        self.assertEqual(self.rm.allocate_port(JOB1, self.cfg), 11005)
        self.assertEqual(self.rm.allocate_port(JOB2, self.cfg), 11011)
        self.assertEqual(self.rm.allocate_port(JOB2, self.cfg), 11012)
        rmod.commit_port(self.cfg.cluster, 11005)
        rmod.commit_port(self.cfg.cluster, 11012)
        self.assertEqual(self.cfg.cluster.tcpudp_port_pool, [])
        self.assertEqual(self.cfg.cluster.highest_used_port, 11012)

    def test_reserve_given_port(self):
        with self.assertRaises(ReservationError):
            self.rm.reserve_port(JOB1, self.cfg, 11000)
        self.rm.reserve_port(JOB1, self.cfg, 11003)
        with self.assertRaises(ReservationError):
            self.rm.reserve_port(JOB2, self.cfg, 11003)

    def test_exhausted(self):
        self.cfg.cluster.tcpudp_port_pool = []
        self.cfg.cluster.highest_used_port = constants.LAST_DRBD_PORT - 1
        self.cfg.serial_no += 1
        with self.assertRaises(ReservationError) as ctx:
            self.rm.allocate_port(JOB1, self.cfg)
        self.assertEqual(ctx.exception.args[0],
                         "The highest used port is greater than 14999. Aborting.")


class DrbdTest(ReservationTestCase):
    def test_lowest_free_minor_per_node(self):
        # d-drbd uses minor 0 on n1 and on n2
        self.assertEqual(self.rm.allocate_drbd_minors(JOB1, self.cfg, [self.n1, "n2"]), [1, 1])
        self.assertEqual(self.rm.allocate_drbd_minors(JOB2, self.cfg, ["n2", self.n1]), [2, 2])
        self.rm.release(JOB1)
        self.assertEqual(self.rm.allocate_drbd_minors(JOB1, self.cfg, [self.n1]), [1])
        with self.assertRaises(ProgrammerError):
            self.rm.allocate_drbd_minors(JOB1, self.cfg, ["n2", "n2"])

    def test_reserve_given_minor(self):
        with self.assertRaises(ReservationError):
            self.rm.reserve_drbd_minor(JOB1, self.cfg, self.n1, 0)
        self.rm.reserve_drbd_minor(JOB1, self.cfg, self.n1, 5)
        with self.assertRaises(ReservationError):
            self.rm.reserve_drbd_minor(JOB2, self.cfg, self.n1, 5)
        self.rm.reserve_drbd_minor(JOB2, self.cfg, "n2", 5)

    def test_secret(self):
        secret = self.rm.generate_drbd_secret(JOB1, self.cfg)
        self.assertRegex(secret, r"^[0-9a-f]{40}$")
        self.assertNotEqual(secret, self.rm.generate_drbd_secret(JOB1, self.cfg))


class LvTest(ReservationTestCase):
    def test_names_from_plain_disks_and_drbd_children(self):
        for used in ("xenvg/y.disk0", "xenvg/x.disk0_meta"):
            with self.assertRaises(ReservationError):
                self.rm.reserve_lv(JOB1, self.cfg, used)
        self.rm.reserve_lv(JOB1, self.cfg, "xenvg/new")
        with self.assertRaises(ReservationError):
            self.rm.reserve_lv(JOB2, self.cfg, "xenvg/new")
        self.rm.reserve_lv(JOB2, self.cfg, "othervg/new")

    def test_generate(self):
        names = self.rm.generate_lv_names(JOB1, self.cfg, "xenvg", [".disk0_data", ".disk0_meta"])
        self.assertEqual(len(names), 2)
        self.assertRegex(names[0], r"^[0-9a-f-]{36}\.disk0_data$")
        self.assertIn(("lv", f"xenvg/{names[1]}"), self.rm.reserved(JOB1))


class IndexTest(ReservationTestCase):
    def test_index_follows_the_committed_config(self):
        self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:77")
        self.rm.release(JOB1)
        # a new committed config (serial bumped) is indexed again
        self.cfg.instances["i-y"].nics[0].mac = "aa:00:00:00:00:77"
        self.cfg.serial_no += 1
        with self.assertRaises(ReservationError):
            self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:77")
        other = cluster_with_instances()
        self.rm.reserve_mac(JOB1, other, "aa:00:00:00:00:77")  # another config object

    def test_release_one(self):
        self.rm.reserve_mac(JOB1, self.cfg, "aa:00:00:00:00:78")
        self.rm.release_one(JOB2, ("mac", "aa:00:00:00:00:78"))  # not its reservation
        self.assertTrue(self.rm.is_reserved(("mac", "aa:00:00:00:00:78")))
        self.rm.release_one(JOB1, ("mac", "aa:00:00:00:00:78"))
        self.assertFalse(self.rm.is_reserved(("mac", "aa:00:00:00:00:78")))


class UsedIndexTest(SynchronousTestCase):
    """The used-values index follows config versions incrementally and always agrees
    with a fresh build from the same config."""

    @staticmethod
    def snapshot(used):
        return ({t: sorted(map(str, getattr(used, t))) for t in ("macs", "ports", "lvs",
                                                                 "secrets")},
                {n: sorted(m) for n, m in used.minors.items() if m})

    def test_incremental_matches_full_build(self):
        import copy
        rng = random.Random(3)
        cfg = cluster_with_instances()
        used = rmod._Used.of(cfg)
        for step in range(40):
            new = copy.copy(cfg)
            new.instances = dict(cfg.instances)
            new.disks = dict(cfg.disks)
            uuid = rng.choice(sorted(new.instances))
            if step % 3 == 0 and len(new.instances) > 1:
                gone = new.instances.pop(uuid)  # removed with its disks
                for d in gone.disks:
                    new.disks.pop(d, None)
            else:
                inst = new.instances[uuid].clone()
                for nic in inst.nics:
                    nic.mac = f"aa:00:00:{step:02x}:{rng.randrange(256):02x}:00"
                inst.network_port = 12000 + step
                new.instances[uuid] = inst
            used.update(new)
            self.assertEqual(self.snapshot(used), self.snapshot(rmod._Used.of(new)))
            cfg = new

    def test_a_value_two_holders_use_stays_used_until_both_drop_it(self):
        used = rmod._Used()
        used._apply([("macs", "aa:00:00:00:00:01")], add=True)
        used._apply([("macs", "aa:00:00:00:00:01")], add=True)
        used._apply([("macs", "aa:00:00:00:00:01")], add=False)
        self.assertIn("aa:00:00:00:00:01", used.macs)
        used._apply([("macs", "aa:00:00:00:00:01")], add=False)
        self.assertNotIn("aa:00:00:00:00:01", used.macs)
