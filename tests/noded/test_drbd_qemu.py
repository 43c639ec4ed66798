"""The drbd device with the ``qemu`` engine: real qemu-storage-daemons under the device
(two nodes on loopback addresses, files as volumes, the handshake as the emulated
engine's): create, assemble, open mirrors with real data, status, role swap, shutdown."""

import os
import random
import shutil
import socket
import tempfile

import pytest
from twisted.internet import reactor
from twisted.internet.task import Clock, deferLater
from twisted.trial.unittest import TestCase

from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.bdev import qmirror, qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import MIB, BlockDevice
from ganeti.noded.bdev.drbd import DrbdDevice
from ganeti.noded.bdev.drbdnet import MirrorNet
from ganeti.noded.procs import ChildProcesses
from tests.noded.drbd_helpers import SECRET
from tests.noded.qmirrorhelpers import program

SIZE = 32  # MiB


class FileVolume(BlockDevice):
    """A local volume stand-in: a real file of ``size`` MiB."""

    def __init__(self, ctx, path, size):
        super().__init__(ctx, {"dev_type": "file", "logical_id": ["loop", path]})
        with open(path, "ab") as f:
            f.truncate(size * MIB)
        self.dev_path, self.attached = path, True

    async def attach(self):
        return True

    async def assemble(self):
        pass


class Node:
    def __init__(self, case, base, clock, ip, name):
        root = os.path.join(base, name)
        self.paths = Paths.for_node(root, name)
        os.makedirs(self.paths.run_dir)
        self.ip = ip
        self.net = MirrorNet(self.paths.run_dir, clock, inline_runner, reactor)
        self.ctx = NodeContext(paths=self.paths, clock=clock, run=inline_runner,
                               mirrors=self.net, children=ChildProcesses(reactor, reactor))
        self.data = os.path.join(root, "data.img")
        self.meta = os.path.join(root, "meta.img")
        case.addCleanup(self.net.stop)

    def volumes(self):
        return [FileVolume(self.ctx, self.data, SIZE), FileVolume(self.ctx, self.meta, 128)]

    def read(self, offset, length):
        with open(self.data, "rb") as f:
            f.seek(offset)
            return f.read(length)


def port_pair(ip):
    """A DRBD port below 55536 whose NBD port (+10000) is free too."""
    for _ in range(100):
        port = random.randint(20000, 55000)
        try:
            for p in (port, port + qmirror.NBD_PORT_OFFSET):
                with socket.socket() as s:
                    s.bind((ip, p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


@pytest.mark.subprocess
class QemuEngineTest(TestCase):
    timeout = 120

    def setUp(self):
        base = tempfile.mkdtemp(prefix="qd", dir="/tmp")  # short UNIX socket paths
        self.addCleanup(shutil.rmtree, base, True)
        self.clock = Clock()
        self.clock.advance(500)
        net = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"
        self.a = Node(self, base, self.clock, f"{net}.1", "a")
        self.b = Node(self, base, self.clock, f"{net}.2", "b")
        self.port = port_pair(self.a.ip)
        self.addCleanup(self.stop_daemons)

    def disk(self, node, peer, minor, peer_minor):
        return {"dev_type": "drbd", "size": SIZE,
                "logical_id": ["pa", "pb", self.port, 0, 1, SECRET],
                "params": {"resync-rate": 61440},
                "dynamic_params": {"local-ip": node.ip, "remote-ip": peer.ip,
                                   "local-minor": minor, "remote-minor": peer_minor,
                                   "mirror": "qemu"}}

    def device(self, node):
        peer, minor, peer_minor = (self.b, 0, 1) if node is self.a else (self.a, 1, 0)
        return DrbdDevice(node.ctx, self.disk(node, peer, minor, peer_minor), node.volumes())

    async def stop_daemons(self):
        for node in (self.a, self.b):
            dev = self.device(node)
            try:
                await qmirror_drbd.shut_down(dev)
            except Exception:
                pass

    async def created(self, node):
        peer, minor, peer_minor = (self.b, 0, 1) if node is self.a else (self.a, 1, 0)
        dev = await DrbdDevice.create(node.ctx, self.disk(node, peer, minor, peer_minor),
                                      node.volumes(), SIZE, "")
        await dev.assemble()
        return dev

    async def write(self, node, pattern, offset, length):
        _, host, port = qmirror_drbd.guest_disk(self.device(node))
        out = await node.ctx.children.run(
            [program("qemu-io"), "-f", "raw", "-c", f"write -P {pattern} {offset} {length}",
             f"nbd://{host}:{port}/disk"], timeout=60)
        self.assertTrue(out.ok, out)

    async def test_mirrored_device_carries_real_data_and_swaps_roles(self):
        a = await self.created(self.a)
        b = await self.created(self.b)
        for node in (self.a, self.b):  # a daemon per side, re-found by its pid file
            self.assertIsNotNone(await qmirror_drbd.mirror_of(self.device(node)))
        await a.open()
        status = await a.sync_status()
        self.assertFalse(status.is_degraded)  # new: in sync, nothing copied
        self.assertIsNone(status.sync_percent)
        await self.write(self.a, 0x5B, MIB, MIB)
        self.assertEqual(self.b.read(MIB, MIB), b"\x5b" * MIB)

        # the peer's daemon goes: the primary is degraded, writes go on
        await qmirror_drbd.shut_down(b)
        await self.write(self.a, 0x5C, 4 * MIB, MIB)
        self.assertTrue((await a.sync_status()).is_degraded)
        # the write failed on the peer and waits in the job, which ends when its copy
        # fails in turn (were the peer back first, its NBD client would reconnect and
        # the job copy it itself: no resync to see)
        mirror = await qmirror_drbd.mirror_of(a)
        for _ in range(400):
            if "mirror" not in await mirror._jobs():
                break
            await deferLater(reactor, 0.05, lambda: None)
        else:
            self.fail("the mirror job did not end with its peer gone")
        await b.assemble()  # back: the primary's net re-attaches and resyncs the bitmap
        await a.attach_net(False)
        mirror = await qmirror_drbd.mirror_of(a)
        self.assertIn(mirror.copied, (MIB, 2 * MIB))  # the dirty extent, not the disk
        st = await mirror.wait_in_sync(60)
        self.assertTrue(st.in_sync)
        self.assertFalse((await a.sync_status()).is_degraded)
        self.assertEqual(self.b.read(4 * MIB, MIB), b"\x5c" * MIB)

        # dual-primary (a migration): b opens too, a's mirror runs on, b's does not
        await a.disconnect_net()
        self.assertTrue((await a.sync_status()).is_degraded)
        for dev in (a, b):
            await dev.attach_net(True)
        await b.open(exclusive=False)
        self.assertNotIn("mirror", await (await qmirror_drbd.mirror_of(b))._jobs())
        self.assertTrue((await (await qmirror_drbd.mirror_of(a)).wait_in_sync(60)).in_sync)
        await self.write(self.a, 0x5E, 12 * MIB, MIB)  # still mirrored a -> b
        self.assertEqual(self.b.read(12 * MIB, MIB), b"\x5e" * MIB)

        # the old primary closes; back to single-primary, b mirrors to a
        await a.close()
        for dev in (a, b):
            await dev.disconnect_net()
        for dev in (a, b):
            await dev.attach_net(False)
        mirror_b = await qmirror_drbd.mirror_of(b)
        # b recorded what reached it while both were primary (a's mirrored write; a
        # migrated guest's own first writes would be there too): that is copied back
        self.assertEqual(mirror_b.copied, MIB)
        self.assertTrue((await mirror_b.wait_in_sync(60)).in_sync)
        self.assertFalse((await b.sync_status()).is_degraded)
        await self.write(self.b, 0x5D, 8 * MIB, MIB)
        self.assertEqual(self.a.read(8 * MIB, MIB), b"\x5d" * MIB)
        with open(self.a.data, "rb") as fa, open(self.b.data, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())

        # a plain swap: b closes in sync (a hand-over), a opens and copies nothing
        await b.close()
        await a.open()
        mirror_a = await qmirror_drbd.mirror_of(a)
        self.assertEqual(mirror_a.copied, 0)
        self.assertTrue((await mirror_a.wait_in_sync(60)).in_sync)
        await self.write(self.a, 0x5F, 16 * MIB, MIB)
        self.assertEqual(self.b.read(16 * MIB, MIB), b"\x5f" * MIB)
        # the hand-over is used once: after a's session, b's next open cannot take it
        await a.close()  # a hands over in turn (in sync)
        await qmirror_drbd.shut_down(b)  # b's daemon restarts: still no bitmap on b
        await b.assemble()
        await b.open()
        self.assertEqual((await qmirror_drbd.mirror_of(b)).copied, 0)  # a's token, new
        await b.close()
        await b.open()  # b's own token is not the peer's: a's old one is used up
        self.assertEqual((await qmirror_drbd.mirror_of(b)).copied, SIZE * MIB)

        for dev in (a, b):
            await dev.shutdown()
        for node in (self.a, self.b):
            self.assertIsNone(await qmirror_drbd.mirror_of(self.device(node)))

    async def test_a_failover_of_an_in_sync_primary_copies_nothing(self):
        """Ganeti's failover: the disks shut down on both nodes, assembled again, the
        secondary opened as the new primary.  The old primary was in sync when it shut
        down, so the new one's mirror copies nothing (DRBD: both UpToDate, no resync)."""
        a = await self.created(self.a)
        b = await self.created(self.b)
        await a.open()
        self.assertTrue((await (await qmirror_drbd.mirror_of(a)).wait_in_sync(60)).in_sync)
        await self.write(self.a, 0x61, 2 * MIB, MIB)
        for dev in (a, b):
            await dev.shutdown()
        for dev in (a, b):
            await dev.assemble()
        await b.open()
        mirror_b = await qmirror_drbd.mirror_of(b)
        self.assertEqual(mirror_b.copied, 0)
        self.assertTrue((await mirror_b.wait_in_sync(60)).in_sync)
        self.assertEqual(self.b.read(2 * MIB, MIB), b"\x61" * MIB)
        await self.write(self.b, 0x62, 3 * MIB, MIB)
        self.assertEqual(self.a.read(3 * MIB, MIB), b"\x62" * MIB)
        # a primary that is not in sync (its peer gone) hands nothing over
        await qmirror_drbd.shut_down(a)
        await self.write(self.b, 0x63, 5 * MIB, MIB)  # b degraded: a lacks this
        await b.shutdown()
        await b.assemble()
        self.assertIsNone((await b.net.load(b._minor())).handoff)

    async def test_growing_is_refused_by_the_dry_run(self):
        a = await self.created(self.a)
        size = os.path.getsize(self.a.data)
        for dryrun in (True, False):
            with self.assertRaises(BlockDeviceError) as cm:
                await a.grow(64, dryrun, True)
            self.assertEqual(str(cm.exception), "drbd0: growing a disk of the qemu mirror "
                             "engine is not supported yet (its storage daemons serve a "
                             "fixed size)")
        self.assertEqual(os.path.getsize(self.a.data), size)

