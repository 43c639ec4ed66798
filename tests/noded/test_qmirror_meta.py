"""The qemu mirror engine with a metadata volume: qcow2 metadata over the raw data,
dirty bitmaps kept across a clean stop of the daemon, dropped after a crash."""

import pytest
from twisted.trial.unittest import TestCase

from ganeti.noded.bdev.base import BlockDeviceError
from tests.noded.qmirrorhelpers import IPS, MIB, MirrorPair
from tests.noded.test_qmirror import aio, job_gone


@pytest.mark.subprocess
class MetadataVolumeTest(TestCase):
    timeout = 120

    async def degraded_pair(self):
        """A pair in sync, then the secondary killed and 2 MiB written on the primary."""
        pair = MirrorPair(self, size=32 * MIB, meta=True)
        for d in pair.daemons:
            self.assertTrue(await d.start())
        await pair.mirrors[0].connect_peer(IPS[1], pair.port, sync="none")
        self.assertTrue((await pair.mirrors[0].wait_in_sync(60)).in_sync)
        self.assertTrue(await pair.mirrors[0].rotate())
        gone = pair.daemons[0].wait_event(job_gone, 60)
        await pair.kill(1)
        out = await pair.io(0, f"write -P 0x5C {4 * MIB} {2 * MIB}")
        self.assertTrue(out.ok, out)
        await gone
        return pair

    async def restart_primary(self, pair):
        pair.mirrors[0].close()
        pair.daemons[0] = pair.new_daemon(0)
        from ganeti.noded.bdev.qmirror_roles import QemuMirror
        pair.mirrors[0] = QemuMirror(pair.daemons[0])
        self.assertTrue(await pair.daemons[0].start())

    def assertSame(self, pair):
        with open(pair.files[0], "rb") as a, open(pair.files[1], "rb") as b:
            self.assertEqual(a.read(), b.read())

    @aio
    async def test_data_volume_stays_raw(self):
        pair = MirrorPair(self, size=32 * MIB, meta=True)
        for d in pair.daemons:
            await d.start()
        await pair.mirrors[0].connect_peer(IPS[1], pair.port, sync="none")
        out = await pair.io(0, f"write -P 0x3D {MIB} 4096")
        self.assertTrue(out.ok, out)
        self.assertEqual(pair.read(0, MIB, 4096), b"\x3d" * 4096)  # at its own offset
        self.assertEqual(pair.read(1, MIB, 4096), b"\x3d" * 4096)
        with open(pair.daemons[0].meta.path, "rb") as f:
            self.assertEqual(f.read(4), b"QFI\xfb")

    @aio
    async def test_bitmap_survives_a_clean_stop(self):
        pair = await self.degraded_pair()
        await pair.daemons[0].stop()  # e.g. the node's disks shut down cleanly
        await self.restart_primary(pair)
        self.assertEqual(list((await pair.mirrors[0].bitmaps()).values()), [2 * MIB])
        await pair.daemons[1].start()
        self.assertEqual(await pair.mirrors[0].connect_peer(IPS[1], pair.port), 2 * MIB)
        self.assertTrue((await pair.mirrors[0].wait_in_sync(60)).in_sync)
        self.assertSame(pair)

    @aio
    async def test_crash_means_a_full_resync(self):
        pair = await self.degraded_pair()
        await pair.kill(0)
        await self.restart_primary(pair)
        self.assertEqual(await pair.mirrors[0].bitmaps(), {})
        await pair.daemons[1].start()
        self.assertEqual(await pair.mirrors[0].connect_peer(IPS[1], pair.port), 32 * MIB)
        self.assertTrue((await pair.mirrors[0].wait_in_sync(60)).in_sync)
        self.assertSame(pair)

    @aio
    async def test_foreign_metadata_volume_is_not_formatted(self):
        pair = MirrorPair(self, size=32 * MIB, meta=True)
        with open(pair.daemons[0].meta.path, "r+b") as f:
            f.write(b"not a qcow2 header")
        with self.assertRaises(BlockDeviceError) as cm:
            await pair.daemons[0].start()
        self.assertIn("refusing to format", str(cm.exception))
