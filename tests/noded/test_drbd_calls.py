"""Two in-process nodes mirror a disk through the real node calls: they connect for
real (TCP, the handshake), degrade when one side's network or daemon goes, reconnect,
resync on the clock, refuse a second primary, keep their state across a restart."""

import pytest
from twisted.trial.unittest import TestCase

from ganeti.core import storagetypes
from tests.noded.drbd_helpers import Pair

#: the nodes' volumes are made by the fake lvm program (a child process)
pytestmark = pytest.mark.subprocess


class ConnectTest(TestCase):

    async def test_create_on_both_connects_in_sync(self):
        pair = Pair(self)
        await pair.create("a")
        status = await pair.find("a")
        self.assertTrue(status["is_degraded"])  # the peer is not there yet
        await pair.create("b")
        for side in "ab":
            status = await pair.find(side)
            self.assertEqual(status["dev_path"], f"/dev/drbd{pair.minor[side]}")
            self.assertEqual(status["major"], 147)
            self.assertFalse(status["is_degraded"])
            self.assertIsNone(status["sync_percent"])
            self.assertEqual(status["ldisk_status"], storagetypes.LDS_OKAY)

    async def test_getmirrorstatus_merges_the_volumes_and_fails_for_a_missing_disk(self):
        pair = Pair(self)
        await pair.create("a")
        await pair.create("b")
        [status] = await pair.ok("a", "blockdev_getmirrorstatus", [[pair.disk("a")]])
        self.assertEqual(status["dev_path"], "/dev/drbd0")
        self.assertFalse(status["is_degraded"])
        other = pair.disk("a", minor=7)
        msg = await pair.fail("a", "blockdev_getmirrorstatus", [[pair.disk("a"), other]])
        self.assertIn("Can't find device", msg)


    async def test_getmirrorstatus_multi_gives_each_node_its_disks(self):
        from ganeti.rpc.client import NodeTarget
        pair = Pair(self)
        await pair.create("a")
        await pair.create("b")
        missing = pair.disk("a", minor=7)
        targets = [NodeTarget(pair.name[s], pair.ip[s], False) for s in "ab"]
        results = await pair.net.call(targets, "blockdev_getmirrorstatus_multi", [
            {"nodea.test": [pair.disk("a"), missing], "nodeb.test": [pair.disk("b")]}])
        [(ok_a, status_a), (ok_missing, msg)] = results["nodea.test"].payload
        self.assertTrue(ok_a)
        self.assertEqual(status_a["dev_path"], "/dev/drbd0")
        self.assertFalse(status_a["is_degraded"])
        self.assertFalse(ok_missing)
        self.assertIn("Can't find device disk/0", msg)
        [(ok_b, status_b)] = results["nodeb.test"].payload
        self.assertTrue(ok_b)
        self.assertEqual(status_b["dev_path"], "/dev/drbd1")


async def connected_pair(case, **kw):
    pair = Pair(case, **kw)
    await pair.create("a")
    await pair.create("b")
    return pair


class RolesTest(TestCase):

    async def test_second_primary_refused_unless_dual_primary(self):
        pair = await connected_pair(self)
        # blockdev_create made a the primary (on_primary)
        msg = await pair.fail("b", "blockdev_open", ["inst1", [pair.disk("b")], False])
        self.assertIn("Can't open devices", msg)
        self.assertIn("the peer is primary", msg)
        # dual-primary: both attach multimaster, then a non-exclusive open works
        for side in "ab":
            await pair.ok(side, "drbd_disconnect_net", [[pair.disk(side)]])
        self.assertTrue((await pair.find("a"))["is_degraded"])
        results = await pair.both("drbd_attach_net", lambda s: [[pair.disk(s)], True])
        self.assertTrue(all(r.success for r in results), results)
        msg = await pair.fail("b", "blockdev_open", ["inst1", [pair.disk("b")], True])
        self.assertIn("can't open exclusively", msg)
        await pair.ok("b", "blockdev_open", ["inst1", [pair.disk("b")], False])
        # back to single primary (b stays primary): a closes, both reconnect
        await pair.ok("a", "blockdev_close", ["inst1", [pair.disk("a")]])
        for side in "ab":
            await pair.ok(side, "drbd_disconnect_net", [[pair.disk(side)]])
        results = await pair.both("drbd_attach_net", lambda s: [[pair.disk(s)], False])
        self.assertTrue(all(r.success for r in results), results)
        msg = await pair.fail("a", "blockdev_open", ["inst1", [pair.disk("a")], False])
        self.assertIn("the peer is primary", msg)

    async def test_close_then_open_on_the_other_side(self):
        pair = await connected_pair(self)
        await pair.ok("a", "blockdev_close", ["inst1", [pair.disk("a")]])
        await pair.ok("b", "blockdev_open", ["inst1", [pair.disk("b")], True])
        msg = await pair.fail("a", "blockdev_open", ["inst1", [pair.disk("a")], True])
        self.assertIn("the peer is primary", msg)


class NetworkTest(TestCase):

    async def test_shutdown_of_one_side_degrades_the_other(self):
        pair = await connected_pair(self)
        await pair.ok("b", "blockdev_shutdown", [pair.disk("b")])
        self.assertIsNone(await pair.find("b"))
        status = await pair.find("a")
        self.assertTrue(status["is_degraded"])
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_OKAY)
        self.assertEqual(await pair.ok("a", "drbd_needs_activation", [[pair.disk("a")]]), [])
        self.assertEqual(await pair.ok("b", "drbd_needs_activation", [[pair.disk("b")]]),
                         ["disk-uuid-0"])
        await pair.direct("b", "blockdev_assemble",
                          [pair.disk("b"), {"name": "inst1"}, False, 0])
        self.assertFalse((await pair.find("a"))["is_degraded"])

    async def test_stopped_node_closes_its_listener_and_listens_again_at_start(self):
        pair = await connected_pair(self)
        await pair.net.stop_node("nodeb.test")
        self.assertTrue((await pair.find("a"))["is_degraded"])
        await pair.net.start_node("nodeb.test")
        self.assertFalse((await pair.find("a"))["is_degraded"])
        self.assertFalse((await pair.find("b"))["is_degraded"])

    async def test_disconnect_is_standalone_and_attach_reconnects(self):
        pair = await connected_pair(self)
        await pair.ok("a", "drbd_disconnect_net", [[pair.disk("a")]])
        self.assertEqual(await pair.ok("a", "drbd_needs_activation", [[pair.disk("a")]]),
                         ["disk-uuid-0"])
        self.assertTrue((await pair.find("b"))["is_degraded"])
        await pair.ok("a", "drbd_attach_net", [[pair.disk("a")], False])
        self.assertFalse((await pair.find("b"))["is_degraded"])
        self.assertEqual(await pair.ok("a", "drbd_wait_sync", [[pair.disk("a")]]),
                         [True, 100])

    async def test_attach_net_times_out_without_a_peer(self):
        pair = await connected_pair(self)
        await pair.ok("b", "drbd_disconnect_net", [[pair.disk("b")]])
        await pair.ok("a", "drbd_disconnect_net", [[pair.disk("a")]])
        start = pair.clock.seconds()
        result = await drive(pair, pair.call("a", "drbd_attach_net",
                                             [[pair.disk("a")], False]), step=5)
        self.assertGreaterEqual(pair.clock.seconds() - start, 120)
        self.assertLessEqual(pair.clock.seconds() - start, 125)
        self.assertFalse(result.success)
        self.assertIn("Timeout in disk reconnecting", result.fail_msg)

    async def test_wait_sync_fails_for_a_device_neither_connected_nor_resyncing(self):
        pair = await connected_pair(self)
        await pair.ok("a", "drbd_disconnect_net", [[pair.disk("a")]])
        start = pair.clock.seconds()
        result = await drive(pair, pair.call("b", "drbd_wait_sync", [[pair.disk("b")]]))
        self.assertGreaterEqual(pair.clock.seconds() - start, 15)
        self.assertLessEqual(pair.clock.seconds() - start, 16)
        self.assertFalse(result.success)
        self.assertIn("DRBD device <DrbdDevice drbd1 port", result.fail_msg)
        self.assertIn("is not in sync: stats=", result.fail_msg)
        self.assertIn("WFConnection", result.fail_msg)

    async def test_calls_on_missing_or_other_disks_fail_with_ganetis_messages(self):
        pair = await connected_pair(self)
        other = pair.disk("a", minor=9)
        for call, args in (("drbd_disconnect_net", [[other]]),
                           ("drbd_attach_net", [[other], False]),
                           ("drbd_wait_sync", [[other]]),
                           ("blockdev_close", ["inst1", [other]]),
                           ("blockdev_open", ["inst1", [other], False])):
            self.assertIn("Can't find device disk/0", await pair.fail("a", call, args))
        msg = await pair.fail("a", "blockdev_addchildren", [other, pair.children("a")])
        self.assertIn("Can't find parent device 'disk/0' in add children", msg)
        msg = await pair.fail("a", "blockdev_removechildren", [other, pair.children("a")])
        self.assertIn("Can't find parent device 'disk/0' in remove children", msg)
        msg = await pair.fail("a", "blockdev_addchildren",
                              [pair.disk("a"), pair.children("a", lv="nothere")])
        self.assertIn("Can't find new device(s) to add", msg)
        plain = pair.children("a")[0]
        msg = await pair.fail("a", "drbd_disconnect_net", [[plain]])
        self.assertIn("is not a drbd device", msg)
        self.assertEqual(await pair.ok("a", "drbd_needs_activation", [[other]]),
                         ["disk-uuid-0"])

    async def test_open_links_the_disk_and_close_removes_the_link(self):
        import os
        pair = await connected_pair(self)
        await pair.ok("a", "blockdev_close", ["inst1", [pair.disk("a")]])
        link = os.path.join(pair.net.paths("nodeb.test").run_dir, "instance-disks",
                            "inst1:0")
        await pair.ok("b", "blockdev_open", ["inst1", [pair.disk("b")], True])
        self.assertEqual(os.readlink(link), "/dev/vgb/u1.disk0_data")
        await pair.ok("b", "blockdev_close", ["inst1", [pair.disk("b")]])
        self.assertFalse(os.path.lexists(link))


async def drive(pair, coro, step=1.0, rounds=400):
    """Run a call that waits on the clock: advance it ``step`` s at a time (letting
    the real reactor run in between) until the call is done."""
    from twisted.internet import reactor
    from twisted.internet.defer import Deferred
    from twisted.internet.task import deferLater
    d = Deferred.fromCoroutine(coro)
    for _ in range(rounds):
        if d.called:
            break
        await deferLater(reactor, 0.001)
        pair.clock.advance(step)
    return await d


class ResyncTest(TestCase):

    async def test_new_children_resync_on_the_clock(self):
        pair = await connected_pair(self, size=64, rate=1024)  # 64 MiB at 1 MiB/s
        old = pair.children("b")
        await pair.ok("b", "blockdev_removechildren", [pair.disk("b"), old])
        status = await pair.find("b")
        self.assertTrue(status["is_degraded"])
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_FAULTY)
        self.assertEqual(await pair.ok("b", "drbd_needs_activation", [[pair.disk("b")]]),
                         ["disk-uuid-0"])
        # Ganeti's GetSyncStatus: the side that kept its disk is not degraded itself
        self.assertFalse((await pair.find("a"))["is_degraded"])
        await pair.create_volumes("b", lv="u2.disk0")
        await pair.ok("b", "blockdev_addchildren",
                      [pair.disk("b"), pair.children("b", lv="u2.disk0")])
        status = await pair.find("b")
        self.assertEqual(status["sync_percent"], 0.0)
        self.assertEqual(status["estimated_time"], 64)
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_SYNC)
        pair.clock.advance(16)
        status = await pair.find("b")
        self.assertEqual(status["sync_percent"], 25.0)
        self.assertEqual(status["estimated_time"], 48)
        src = await pair.find("a")  # the source sees the same progress
        self.assertEqual(src["sync_percent"], 25.0)
        self.assertTrue(src["is_degraded"])
        self.assertEqual(src["ldisk_status"], storagetypes.LDS_OKAY)
        self.assertEqual(await pair.ok("a", "drbd_wait_sync", [[pair.disk("a")]]),
                         [False, 25.0])
        pair.clock.advance(48)
        self.assertEqual(await pair.ok("b", "drbd_wait_sync", [[pair.disk("b")]]),
                         [True, 100])
        status = await pair.find("b")
        self.assertFalse(status["is_degraded"])
        self.assertIsNone(status["sync_percent"])

    async def test_no_resync_while_disconnected(self):
        pair = await connected_pair(self, size=64, rate=1024)
        old = pair.children("b")
        await pair.ok("b", "blockdev_removechildren", [pair.disk("b"), old])
        await pair.create_volumes("b", lv="u2.disk0")
        await pair.ok("b", "blockdev_addchildren",
                      [pair.disk("b"), pair.children("b", lv="u2.disk0")])
        pair.clock.advance(16)
        await pair.find("b")
        await pair.net.stop_node("nodea.test")
        status = await pair.find("b")
        self.assertIsNone(status["sync_percent"])
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_FAULTY)
        pair.clock.advance(100)
        await pair.find("b")
        await pair.net.start_node("nodea.test")
        status = await pair.find("b")
        self.assertEqual(status["sync_percent"], 25.0)

    async def test_new_secondary_of_replace_disks_n_resyncs_everything(self):
        """Ganeti's order: the new secondary is created with the "alone" id (no port),
        the primary disconnects, then both attach with the new ids."""
        pair = await connected_pair(self, size=64, rate=1024)
        await pair.ok("b", "blockdev_remove", [pair.disk("b")])  # the old secondary
        pair.minor["b"] = 5  # a new minor on the new secondary
        await pair.create_volumes("b")
        alone = pair.disk("b", port=None)
        await pair.ok("b", "blockdev_create", [alone, pair.size, "inst1", False, "i", False])
        status = await pair.ok("b", "blockdev_find", [alone])
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_FAULTY)  # StandAlone
        await pair.ok("a", "drbd_disconnect_net", [[pair.disk("a")]])
        results = await pair.both("drbd_attach_net", lambda s: [[pair.disk(s)], False])
        self.assertTrue(all(r.success for r in results), results)
        status = await pair.find("b")
        self.assertEqual(status["sync_percent"], 0.0)
        self.assertEqual(status["ldisk_status"], storagetypes.LDS_SYNC)
        pair.clock.advance(64)
        self.assertEqual(await pair.ok("a", "drbd_wait_sync", [[pair.disk("a")]]),
                         [True, 100])
        self.assertFalse((await pair.find("b"))["is_degraded"])
