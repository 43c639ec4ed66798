"""The chunk transfer's reads and writes on a node (ganeti/noded/backend/transfer.py):
data, runs of zeros, holes of sparse files, the end of the device."""

from __future__ import annotations

import base64
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.backend.context import RPCFail
from ganeti.noded.backend.transfer import read_at, write_at

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
