"""The qemu mirror engine with real qemu-storage-daemons on two loopback "nodes"."""

import os
import shutil
import subprocess

import pytest
from twisted.internet import defer, reactor
from twisted.trial.unittest import SkipTest, TestCase

from ganeti.noded.backend import lvloops
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.bdev import qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.qmirror import FileExport
from ganeti.noded.bdev.qmirror_roles import MIRROR_JOB
from tests.noded.helpers import node_paths
from tests.noded.qmirrorhelpers import IPS, MIB, MirrorPair, program


def job_gone(name, data):
    return (name == "JOB_STATUS_CHANGE" and data.get("id") == MIRROR_JOB
            and data.get("status") == "null")


def aio(f):
    def run(self):
        return defer.ensureDeferred(f(self))
    run.__name__ = f.__name__
    return run


@pytest.mark.subprocess
class QemuMirrorTest(TestCase):
    timeout = 120

    async def connected_pair(self, sync="none"):
        pair = MirrorPair(self)
        for d in pair.daemons:
            self.assertTrue(await d.start())
        copied = await pair.mirrors[0].connect_peer(IPS[1], pair.port, sync=sync)
        st = await pair.mirrors[0].wait_in_sync(60)
        self.assertTrue(st.in_sync, st)
        return pair, copied

    async def write(self, pair, i, pattern, offset, length):
        out = await pair.io(i, f"write -P {pattern} {offset} {length}")
        self.assertTrue(out.ok, out)

    @aio
    async def test_writes_reach_the_secondary_before_they_are_acknowledged(self):
        pair, copied = await self.connected_pair()
        self.assertEqual(copied, 0)
        await self.write(pair, 0, 0x5A, 3 * MIB, MIB)
        # qemu-io has its answer: the secondary's file already holds the data
        self.assertEqual(pair.read(1, 3 * MIB, MIB), b"\x5a" * MIB)
        self.assertEqual(pair.read(0, 3 * MIB, MIB), b"\x5a" * MIB)
        st = await pair.mirrors[0].status()
        self.assertEqual((st.role, st.connected, st.in_sync, st.sync_percent),
                         ("primary", True, True, None))
        self.assertEqual((await pair.mirrors[1].status()).role, "secondary")

    @aio
    async def test_full_sync_copies_the_disk(self):
        pair = MirrorPair(self, size=16 * MIB)
        with open(pair.files[0], "r+b") as f:
            f.seek(5 * MIB)
            f.write(b"\x17" * MIB)
        for d in pair.daemons:
            await d.start()
        copied = await pair.mirrors[0].connect_peer(IPS[1], pair.port)  # no bitmap: full
        self.assertEqual(copied, 16 * MIB)
        st = await pair.mirrors[0].wait_in_sync(60)
        self.assertTrue(st.in_sync)
        self.assertEqual(pair.read(1, 5 * MIB, MIB), b"\x17" * MIB)

    @aio
    async def test_dead_secondary_degrades_and_resync_copies_only_the_dirty_extent(self):
        pair, _ = await self.connected_pair()
        primary = pair.mirrors[0]
        await self.write(pair, 0, 0x11, 0, MIB)
        self.assertTrue(await primary.rotate())  # what the peer has is forgotten
        gone = pair.daemons[0].wait_event(job_gone, 60)
        await pair.kill(1)
        # the writes still complete on the primary, degraded
        await self.write(pair, 0, 0x22, 8 * MIB, 2 * MIB)
        await gone
        await self.write(pair, 0, 0x33, 20 * MIB, MIB)
        st = await primary.status()
        self.assertEqual((st.role, st.connected, st.in_sync), ("primary", False, False))
        self.assertEqual(st.dirty_bytes, 3 * MIB)
        self.assertNotEqual(pair.read(1, 20 * MIB, MIB), b"\x33" * MIB)

        self.assertTrue(await pair.daemons[1].start())  # the secondary comes back
        copied = await primary.connect_peer(IPS[1], pair.port)
        self.assertEqual(copied, 3 * MIB)  # not the 64 MiB disk
        st = await primary.wait_in_sync(60)
        self.assertTrue(st.in_sync, st)
        await self.write(pair, 0, 0x44, 30 * MIB, MIB)
        with open(pair.files[0], "rb") as a, open(pair.files[1], "rb") as b:
            self.assertEqual(a.read(), b.read())

    @aio
    async def test_writes_during_a_resync_round_are_copied_in_the_next(self):
        pair, _ = await self.connected_pair()
        primary = pair.mirrors[0]
        self.assertTrue(await primary.rotate())
        gone = pair.daemons[0].wait_event(job_gone, 60)
        await pair.kill(1)
        await self.write(pair, 0, 0x21, 0, 16 * MIB)  # the peer lacks 16 MiB
        await gone
        self.assertFalse((await primary.status()).connected)
        await pair.daemons[1].start()
        primary.rate = 4 * MIB  # the first round takes 4 s on the clock of QEMU
        round_started = pair.daemons[0].wait_event(
            lambda name, data: name == "JOB_STATUS_CHANGE" and data.get("status") == "running"
            and str(data.get("id")).startswith("resync-"), 60)
        resync = defer.ensureDeferred(primary.connect_peer(IPS[1], pair.port))
        await round_started
        st = await primary.status()
        self.assertEqual((st.connected, st.in_sync, st.length), (True, False, 16 * MIB))
        self.assertIsNotNone(st.estimated_time)
        # written while the round copies: inside the frozen extent and outside it
        await self.write(pair, 0, 0x23, 2 * MIB, MIB)
        await self.write(pair, 0, 0x24, 40 * MIB, MIB)
        copied = await resync
        self.assertEqual(copied, 18 * MIB)  # the 16 MiB, then the 2 MiB written meanwhile
        self.assertTrue((await primary.wait_in_sync(60)).in_sync)
        with open(pair.files[0], "rb") as a, open(pair.files[1], "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(pair.read(1, 2 * MIB, MIB), b"\x23" * MIB)

    @aio
    async def test_a_writers_hook_replaces_closing_the_export(self):
        pair, _ = await self.connected_pair()
        primary = pair.mirrors[0]
        seen = []

        class Hook:
            async def pause(self):
                seen.append(("pause", await primary._jobs()))

            async def resume(self):
                seen.append(("resume", await primary._jobs()))

        primary.writers = Hook()
        gone = pair.daemons[0].wait_event(job_gone, 60)
        await pair.kill(1)
        await self.write(pair, 0, 0x31, 0, MIB)
        await gone
        await pair.daemons[1].start()
        exports = await pair.daemons[0].execute("query-block-exports")
        self.assertEqual(await primary.connect_peer(IPS[1], pair.port), MIB)
        self.assertEqual([step for step, _ in seen], ["pause", "resume"])
        self.assertNotIn(MIRROR_JOB, seen[0][1])  # paused before the last round
        self.assertIn(MIRROR_JOB, seen[1][1])  # resumed once the mirror runs
        # the same export, never closed, moved by QEMU above the mirror's filter
        self.assertEqual(sorted((e["id"], e["node-name"]) for e in exports),
                         [("disk", "disk"), ("peer", "disk")])
        after = await pair.daemons[0].execute("query-block-exports")
        self.assertEqual(sorted((e["id"], e["node-name"], e["shutting-down"]) for e in after),
                         [("disk", "mirror-top", False), ("peer", "mirror-top", False)])
        await self.write(pair, 0, 0x32, 5 * MIB, MIB)  # through the same export
        self.assertEqual(pair.read(1, 5 * MIB, MIB), b"\x32" * MIB)

    @aio
    async def test_disconnect_then_reattach_copies_what_changed(self):
        pair, _ = await self.connected_pair()
        primary = pair.mirrors[0]
        await self.write(pair, 0, 0x51, 0, MIB)  # in the bitmap (no rotation since)
        await primary.disconnect()  # StandAlone: the peer's daemon stays up
        # in sync when it stopped: the bitmap was rotated, the 1 MiB above forgotten
        st = await primary.status()
        self.assertEqual((st.role, st.connected), ("primary", False))
        await self.write(pair, 0, 0x52, 6 * MIB, MIB)
        self.assertEqual(pair.read(1, 6 * MIB, MIB), bytes(MIB))
        self.assertEqual(await primary.connect_peer(IPS[1], pair.port), MIB)
        self.assertTrue((await primary.wait_in_sync(60)).in_sync)
        self.assertEqual(pair.read(1, 6 * MIB, MIB), b"\x52" * MIB)

    @aio
    async def test_bitmaps_are_dropped_only_once_the_peer_has_flushed(self):
        pair, _ = await self.connected_pair()
        primary = pair.mirrors[0]
        await self.write(pair, 0, 0x41, 0, MIB)
        before = await primary.bitmaps()
        self.assertEqual(list(before.values()), [MIB])
        pair.daemons[0].prefix = [program("false")]  # the flush cannot run
        self.assertFalse(await primary.rotate())
        self.assertEqual(await primary.bitmaps(), before)
        pair.daemons[0].prefix = []
        self.assertTrue(await primary.rotate())
        self.assertEqual(list((await primary.bitmaps()).values()), [0])

    @aio
    async def test_role_swap_copies_nothing(self):
        pair, _ = await self.connected_pair()
        await self.write(pair, 0, 0x61, MIB, MIB)
        await pair.mirrors[0].make_secondary()
        copied = await pair.mirrors[1].connect_peer(IPS[0], pair.port, sync="none")
        self.assertEqual(copied, 0)
        st = await pair.mirrors[1].wait_in_sync(60)
        self.assertEqual((st.in_sync, st.offset, st.length), (True, 0, 0))
        self.assertEqual((await pair.mirrors[0].status()).role, "secondary")
        await self.write(pair, 1, 0x62, 2 * MIB, MIB)
        self.assertEqual(pair.read(0, 2 * MIB, MIB), b"\x62" * MIB)
        self.assertEqual(pair.read(1, MIB, MIB), b"\x61" * MIB)

    @aio
    async def test_switch_over_with_the_peer_opened_ahead(self):
        pair, _ = await self.connected_pair()
        old, new = pair.mirrors
        await new.prepare_peer(IPS[0], pair.port)
        self.assertEqual((await new.status()).role, "secondary")  # until the switch-over
        await self.write(pair, 0, 0x71, 0, MIB)  # the old primary still mirrors
        self.assertEqual(pair.read(1, 0, MIB), b"\x71" * MIB)
        stopped = defer.ensureDeferred(old.stop_mirror())
        self.assertEqual(await new.connect_peer(IPS[0], pair.port, sync="none"), 0)
        await stopped
        self.assertTrue((await new.wait_in_sync(60)).in_sync)
        await old.make_secondary()
        self.assertEqual((await old.status()).role, "secondary")
        await self.write(pair, 1, 0x72, MIB, MIB)
        self.assertEqual(pair.read(0, MIB, MIB), b"\x72" * MIB)

    @aio
    async def test_the_disk_as_a_file_writes_through_the_mirror(self):
        """What an OS script writes to the primary's file export (FUSE, over the
        guest-facing export) is on both sides once it is flushed; the secondary
        refuses one."""
        pair, _ = await self.connected_pair()
        primary, secondary = pair.mirrors
        path = await primary.export_file()
        self.assertTrue(path.startswith("/proc/"), path)
        with open(path, "r+b") as f:
            self.assertEqual(f.seek(0, 2), 64 * MIB)
            f.seek(6 * MIB)
            f.write(b"\x5c" * MIB)
            f.flush()
            os.fsync(f.fileno())
        self.assertEqual(pair.read(1, 6 * MIB, MIB), b"\x5c" * MIB)
        self.assertEqual(pair.read(0, 6 * MIB, MIB), b"\x5c" * MIB)
        again = await primary.export_file()  # a crashed caller's export is replaced
        self.assertNotEqual(again, path)  # another daemon
        with open(again, "rb") as f:
            f.seek(6 * MIB)
            self.assertEqual(f.read(MIB), b"\x5c" * MIB)
        await primary.end_file_export()
        self.assertFalse(os.path.exists(FileExport(pair.daemons[0]).mountpoint))
        await primary.end_file_export()  # nothing left to end
        with self.assertRaises(BlockDeviceError) as cm:
            await secondary.export_file()
        self.assertEqual(str(cm.exception), "the disk is not primary on this node")
        # the guest-facing export was not disturbed
        await self.write(pair, 0, 0x5d, 7 * MIB, MIB)
        self.assertEqual(pair.read(1, 7 * MIB, MIB), b"\x5d" * MIB)

    @aio
    async def test_an_os_script_writes_through_the_mirror(self):
        """lvloops hands an OS script a loop device over the file export: what it
        writes is on both sides when the call returns, and nothing is left behind."""
        if os.geteuid() != 0 or shutil.which("losetup", path="/usr/sbin:/sbin") is None:
            raise SkipTest("loop devices need root and losetup")
        pair, _ = await self.connected_pair()
        ctx = NodeContext(paths=node_paths(self), clock=reactor, run=inline_runner,
                          children=pair.children)

        async def mirror_of(dev, start=False):
            return pair.mirrors[0]
        self.patch(qmirror_drbd, "mirror_of", mirror_of)
        disk = {"dev_type": "drbd", "logical_id": ["n1", "n2", 11000, 0, 0, "secret"],
                "dynamic_params": {"mirror": "qemu", "local-ip": IPS[0], "remote-ip": IPS[1],
                                   "local-minor": 0, "remote-minor": 0},
                "mode": "rw", "size": 64, "children": [
                    {"dev_type": "plain", "logical_id": ["xenvg", "d_data"], "size": 64},
                    {"dev_type": "plain", "logical_id": ["xenvg", "d_meta"], "size": 128}]}
        inst = {"name": "inst1", "hypervisor": "kvm", "disks_info": [disk]}
        env, loops = await lvloops.attach(ctx, inst, "run the OS create script of")
        device = env["DISK_0_PATH"]
        self.assertEqual(list(loops), [device])
        self.assertTrue(device.startswith("/dev/loop"), device)
        with open(device, "r+b") as f:  # the script writes, without syncing
            f.seek(9 * MIB)
            f.write(b"\x6b" * MIB)
        await lvloops.detach(ctx, loops)
        self.assertEqual(pair.read(1, 9 * MIB, MIB), b"\x6b" * MIB)
        self.assertEqual(pair.read(0, 9 * MIB, MIB), b"\x6b" * MIB)
        listing = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        self.assertNotIn(f"{device}:", listing)
        self.assertIsNone(FileExport(pair.daemons[0]).pid())

    @aio
    async def test_daemon_is_refound_after_a_noded_restart(self):
        pair, _ = await self.connected_pair()
        pid = pair.daemons[0].pid()
        pair.daemons[0].qmp.close()
        again = pair.new_daemon(0)
        pair.daemons[0] = again
        self.assertFalse(await again.start())
        self.assertEqual(again.pid(), pid)
        from ganeti.noded.bdev.qmirror_roles import QemuMirror
        st = await QemuMirror(again).status()
        self.assertEqual((st.role, st.in_sync), ("primary", True))

    @aio
    async def test_volume_as_a_range_of_its_physical_volume(self):
        pair = MirrorPair(self, size=8 * MIB, offset=3 * MIB)
        for d in pair.daemons:
            await d.start()
        await pair.mirrors[0].connect_peer(IPS[1], pair.port, sync="none")
        await self.write(pair, 0, 0x7E, 0, MIB)
        self.assertEqual(pair.read(1, 3 * MIB, MIB), b"\x7e" * MIB)
        self.assertEqual(pair.read(1, 2 * MIB, MIB), bytes(MIB))  # before the range
        out = await pair.io(0, f"write -P 1 {8 * MIB} 4096")  # beyond the volume
        self.assertFalse(out.ok)
        self.assertEqual(pair.read(1, 11 * MIB, 4096), bytes(4096))

    @aio
    async def test_unreachable_peer_is_an_error(self):
        pair = MirrorPair(self)
        await pair.daemons[0].start()
        with self.assertRaises(BlockDeviceError):
            await pair.mirrors[0].connect_peer(IPS[1], pair.port)

    @aio
    async def test_a_daemon_that_cannot_start_says_why(self):
        pair = MirrorPair(self)
        os.unlink(pair.files[0])
        with self.assertRaises(BlockDeviceError) as cm:
            await pair.daemons[0].start()
        self.assertIn("data.img", str(cm.exception))
