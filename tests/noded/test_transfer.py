"""The chunk transfer's reads and writes on a node (ganeti/noded/backend/transfer.py):
data, runs of zeros, holes of sparse files, the end of the device; a volume without
device-mapper read and written at its extent of its physical volume."""

from __future__ import annotations

import base64
import os

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.backend import transfer
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.backend.transfer import read_at, write_at
from ganeti.noded.bdev import devices, lvm
from tests.noded.helpers import node_paths

MIB = 1024 * 1024


class ReadWriteTest(SynchronousTestCase):
    def setUp(self):
        self.path = self.mktemp()
        with open(self.path, "wb") as f:
            f.truncate(16 * MIB)  # sparse
            f.seek(8 * MIB)
            f.write(b"data")

    def test_holes_are_answered_whole_and_data_in_chunks(self):
        self.assertEqual(read_at(self.path, 0, MIB), [8 * MIB, None])
        covered, data = read_at(self.path, 8 * MIB, MIB)
        self.assertEqual(covered, MIB)
        self.assertEqual(base64.b64decode(data)[:4], b"data")
        rest = read_at(self.path, 9 * MIB, MIB)
        self.assertEqual(rest[1], None)
        self.assertEqual(read_at(self.path, 16 * MIB, MIB), [0, None])

    def test_zeros_written_on_a_volume_and_skipped_on_a_sparse_file(self):
        target = self.mktemp()
        with open(target, "wb") as f:
            f.write(b"\xff" * (2 * MIB))
        write_at(target, 0, None, MIB, sparse=True)
        with open(target, "rb") as f:
            self.assertEqual(f.read(1), b"\xff")
        write_at(target, 0, None, MIB + 5, sparse=False)
        write_at(target, MIB + 5, b"abc", 3, sparse=False)
        with open(target, "rb") as f:
            got = f.read()
        self.assertEqual(got[:MIB + 5], bytes(MIB + 5))
        self.assertEqual(got[MIB + 5:MIB + 9], b"abc\xff")
        self.assertEqual(len(got), 2 * MIB)

    def test_a_missing_device_fails(self):
        with self.assertRaises(RPCFail):
            read_at(os.path.join(self.mktemp(), "none"), 0, 1)
        with self.assertRaises(RPCFail):
            write_at(os.path.join(self.mktemp(), "none"), 0, b"x", 1, sparse=False)


class VolumeExtentTest(SynchronousTestCase):
    """Without device-mapper a plain volume's chunks are its extent of the physical
    volume (a file stands in for it), never past its end."""

    def setUp(self):
        self.pv = self.mktemp()
        with open(self.pv, "wb") as f:
            f.write(b"\x11" * (4 * MIB))  # the volume before, the volume, the one after
        self.patch(lvm, "dm_available", lambda: False)

        async def found(_ctx, _disk):
            return object()

        async def extents(_ctx, vg, lv):
            self.assertEqual((vg, lv), ("xenvg", "u.disk0"))
            return self.pv, MIB, 2 * MIB
        self.patch(devices, "find_device", found)
        self.patch(lvm, "extents", extents)
        self.ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)
        self.disk = {"dev_type": "plain", "logical_id": ["xenvg", "u.disk0"], "size": 2}

    def read(self, offset, length):
        return self.successResultOf(transfer.blockdev_read_chunk(self.ctx, self.disk,
                                                                 offset, length))

    def test_chunks_are_the_extent(self):
        data = base64.b64encode(b"volume").decode("ascii")
        self.successResultOf(transfer.blockdev_write_chunk(self.ctx, self.disk, 0, 6, data))
        self.successResultOf(transfer.blockdev_write_chunk(self.ctx, self.disk, MIB, MIB,
                                                           None))
        with open(self.pv, "rb") as f:
            pv = f.read()
        self.assertEqual(pv[MIB:MIB + 7], b"volume\x11")
        self.assertEqual(pv[2 * MIB:3 * MIB], bytes(MIB))  # zeros written, not skipped
        self.assertEqual(pv[3 * MIB:], b"\x11" * MIB)  # the next volume untouched
        covered, chunk = self.read(0, 4096)
        self.assertEqual((covered, base64.b64decode(chunk)[:6]), (4096, b"volume"))
        self.assertEqual(self.read(MIB, 2 * MIB), [MIB, None])  # cut at the end: zeros
        self.assertEqual(self.read(2 * MIB, MIB), [0, None])
        failure = self.failureResultOf(transfer.blockdev_write_chunk(
            self.ctx, self.disk, 2 * MIB - 2, 6, data), RPCFail)
        self.assertIn("goes past the end of the volume", str(failure.value))
