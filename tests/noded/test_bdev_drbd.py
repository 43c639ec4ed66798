"""The drbd device's contract on one node (and a peer made of a second mirror network):
create, attach, assemble, open, close, shutdown, remove, grow, rename, status, each
transition with its SyncStatus, the minor's record, the listener, a restart.

The local volumes are stand-ins (devices with a path and a size); the mirrors listen
and connect for real on loopback addresses of their own; time is a Clock."""

import os
import random

from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core import storagetypes
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.bdev import drbdstate
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.device import MIB, BlockDevice
from ganeti.noded.bdev.drbd import DrbdDevice
from ganeti.noded.bdev.drbdnet import MirrorNet
from tests.noded.drbd_helpers import SECRET, free_port


class Volume(BlockDevice):
    """A local volume stand-in: always there, ``size`` MiB, records its growth."""

    def __init__(self, ctx, path, size):
        super().__init__(ctx, {"dev_type": "plain", "logical_id": ["vg", path]})
        self.dev_path, self.attached, self.vsize = path, True, size
        self.grown = []

    async def attach(self):
        return True

    async def assemble(self):
        pass

    async def remove(self):
        pass

    async def grow(self, amount, dryrun, backingstore):
        self.grown.append((amount, dryrun, backingstore))
        if backingstore and not dryrun:
            self.vsize += amount

    async def dimensions(self):
        return [self.vsize * MIB, 1]


class Node:
    """One node: its paths, context and mirror network."""

    def __init__(self, case, clock, ip, name):
        root = os.path.join(os.path.abspath(case.mktemp()), name)
        self.paths = Paths.for_node(root, name)
        os.makedirs(self.paths.run_dir)
        self.ip = ip
        self.clock = clock
        self.start()
        case.addCleanup(lambda: self.net.stop())

    def start(self):
        self.net = MirrorNet(self.paths.run_dir, self.clock, inline_runner, reactor)
        self.ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner,
                               mirrors=self.net)

    def state(self, minor):
        return drbdstate.load(self.paths.run_dir, minor)


class DrbdCase(TestCase):

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(500)
        base = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"
        self.a = Node(self, self.clock, f"{base}.1", "a")
        self.b = Node(self, self.clock, f"{base}.2", "b")
        self.port = free_port(self.a.ip)
        self.size = 100

    def disk(self, node, peer, minor=0, peer_minor=1, port="default", secret=SECRET,
             mirror=None):
        port = self.port if port == "default" else port
        dyn = {"local-ip": node.ip, "remote-ip": peer.ip, "local-minor": minor,
               "remote-minor": peer_minor}
        if mirror is not None:
            dyn["mirror"] = mirror
        return {"dev_type": "drbd", "size": self.size,
                "logical_id": ["pa", "pb", port, minor, peer_minor, secret],
                "params": {"resync-rate": 1024}, "dynamic_params": dyn}

    def volumes(self, node, name="u1", size=None):
        size = self.size if size is None else size
        return [Volume(node.ctx, f"/dev/vg/{name}_data", size),
                Volume(node.ctx, f"/dev/vg/{name}_meta", 128)]

    async def make(self, node, peer, minor=0, peer_minor=1, assemble=True, **kw):
        disk = self.disk(node, peer, minor, peer_minor, **kw)
        dev = await DrbdDevice.create(node.ctx, disk, self.volumes(node), self.size, "")
        if assemble:
            await dev.assemble()
        return dev

    def device(self, node, peer, minor=0, peer_minor=1, children=None, **kw):
        disk = self.disk(node, peer, minor, peer_minor, **kw)
        return DrbdDevice(node.ctx, disk, self.volumes(node) if children is None
                          else children)

    async def assertFails(self, coro, text):
        try:
            await coro
        except BlockDeviceError as err:
            self.assertIn(text, str(err))
        else:
            self.fail(f"no error (expected {text!r})")


class CreateTest(DrbdCase):

    async def test_create_needs_both_volumes(self):
        disk = self.disk(self.a, self.b)
        await self.assertFails(
            DrbdDevice.create(self.a.ctx, disk, self.volumes(self.a)[:1], self.size, ""),
            "needs its data and metadata volumes")
        self.assertIsNone(self.a.state(0))

    async def test_create_configures_the_minor_in_sync(self):
        dev = await self.make(self.a, self.b, assemble=False)
        self.assertEqual((dev.dev_path, dev.major, dev.minor), ("/dev/drbd0", 147, 0))
        state = self.a.state(0)
        self.assertEqual(state.disk, drbdstate.UP_TO_DATE)
        self.assertEqual(state.children, ["/dev/vg/u1_data", "/dev/vg/u1_meta"])
        self.assertFalse(state.net)
        self.assertTrue(os.path.exists(os.path.join(self.a.paths.run_dir, "drbd",
                                                    "minor-0.json")))
        await self.assertFails(self.make(self.a, self.b), "minor is already in use")

    async def test_bad_disks_are_refused(self):
        await self.assertFails(self.device(self.a, self.b, mirror="kernel").attach(),
                               "Mirror engine 'kernel' is not available")
        disk = self.disk(self.a, self.b)
        disk["dynamic_params"] = {}
        await self.assertFails(DrbdDevice(self.a.ctx, disk).attach(),
                               "without its dynamic parameters")
        disk = self.disk(self.a, self.b)
        disk["logical_id"] = ["pa", "pb", self.port]
        await self.assertFails(DrbdDevice(self.a.ctx, disk).attach(), "Invalid logical id")

    async def test_rename_refused(self):
        dev = await self.make(self.a, self.b)
        await self.assertFails(dev.rename(["x"]), "Rename is not supported for drbd")


class LifeTest(DrbdCase):

    async def test_standalone_without_a_port(self):
        """Ganeti's "alone" id: a new secondary, Inconsistent until its peer sends it
        everything; no network."""
        dev = await self.make(self.a, self.b, port=None)
        self.assertIsNone(self.a.net.listening(0))
        self.assertEqual(self.a.state(0).disk, drbdstate.INCONSISTENT)
        seen = await dev.mirror_status()
        self.assertEqual(seen.cstate, drbdstate.STANDALONE)
        status = await dev.sync_status()
        self.assertTrue(status.is_degraded)
        self.assertEqual(status.ldisk_status, storagetypes.LDS_FAULTY)
        self.assertIsNone(status.sync_percent)
        up = await self.make(self.b, self.a, minor=1, peer_minor=0)  # with a port
        self.assertEqual(self.b.state(1).disk, drbdstate.UP_TO_DATE)
        self.assertEqual((await up.mirror_status()).cstate, drbdstate.WF_CONNECTION)

    async def test_assemble_listens_and_waits_for_its_peer(self):
        dev = await self.make(self.a, self.b)
        self.assertEqual(self.a.net.listening(0), (self.a.ip, self.port))
        self.assertEqual((await dev.mirror_status()).cstate, drbdstate.WF_CONNECTION)
        await dev.assemble()  # idempotent
        self.assertEqual(self.a.net.listening(0), (self.a.ip, self.port))
        peer = await self.make(self.b, self.a, minor=1, peer_minor=0)
        for d in (dev, peer):
            seen = await d.mirror_status()
            self.assertEqual(seen.cstate, drbdstate.CONNECTED)
            self.assertEqual(seen.peer_disk, drbdstate.UP_TO_DATE)
            status = await d.sync_status()
            self.assertFalse(status.is_degraded)
            self.assertEqual(status.ldisk_status, storagetypes.LDS_OKAY)

    async def test_shutdown_frees_the_minor_and_is_safe_when_absent(self):
        dev = await self.make(self.a, self.b)
        await dev.shutdown()
        self.assertIsNone(self.a.state(0))
        self.assertIsNone(self.a.net.listening(0))
        self.assertFalse(await self.device(self.a, self.b).attach())
        await dev.shutdown()
        await dev.remove()

    async def test_a_minor_in_use_by_another_resource_is_refused(self):
        await self.make(self.a, self.b)
        other = self.device(self.a, self.b, secret="f" * 40, port=self.port + 1)
        self.assertFalse(await other.attach())
        await self.assertFails(other.assemble(), "drbd0: minor is in use by another resource")
        await other.shutdown()  # not its minor: left alone
        self.assertEqual(self.a.state(0).secret, SECRET)

    async def test_assemble_without_a_record_configures_it(self):
        """After a reboot (the run directory is empty) assemble sets the minor up."""
        dev = self.device(self.a, self.b)
        await dev.assemble()
        self.assertEqual(self.a.state(0).disk, drbdstate.UP_TO_DATE)
        self.assertTrue(await self.device(self.a, self.b).attach())

    async def test_diskless_then_new_volumes_resync(self):
        dev = self.device(self.a, self.b, children=[None, None])
        await dev.assemble()
        status = await dev.sync_status()
        self.assertTrue(status.is_degraded)
        self.assertEqual(status.ldisk_status, storagetypes.LDS_FAULTY)
        self.assertIsNone(dev.local_path())
        await dev.add_children(self.volumes(self.a, "u2"))
        self.assertEqual(self.a.state(0).disk, drbdstate.INCONSISTENT)
        status = await dev.sync_status()  # no peer: nothing to sync from
        self.assertEqual(status.ldisk_status, storagetypes.LDS_FAULTY)
        self.assertIsNone(status.sync_percent)
        await self.assertFails(dev.add_children(self.volumes(self.a, "u3")),
                               "already attached to a local disk")
        await self.assertFails(dev.remove_children(["/dev/vg/x", "/dev/vg/y"]),
                               "mismatch in local storage")
        await dev.remove_children(["/dev/vg/u2_data", "/dev/vg/u2_meta"])
        self.assertEqual(self.a.state(0).disk, drbdstate.DISKLESS)
        await dev.remove_children(["/dev/vg/u2_data", "/dev/vg/u2_meta"])  # detached

    async def test_dimensions_are_the_mirror_size(self):
        dev = await self.make(self.a, self.b)
        self.assertEqual(await dev.dimensions(), [self.size * MIB, None])
        await dev.shutdown()
        self.assertIsNone(await dev.dimensions())


class RoleTest(DrbdCase):

    async def test_open_close(self):
        dev = await self.make(self.a, self.b)
        await dev.open()
        self.assertEqual(self.a.state(0).role, drbdstate.PRIMARY)
        await dev.close()
        self.assertEqual(self.a.state(0).role, drbdstate.SECONDARY)

    async def test_no_primary_without_up_to_date_data_unless_forced(self):
        dev = self.device(self.a, self.b, children=[None, None])
        await dev.assemble()
        await self.assertFails(dev.open(), "no up-to-date data")
        await dev.open(force=True)
        self.assertEqual(self.a.state(0).role, drbdstate.PRIMARY)

    async def test_a_diskless_side_uses_its_connected_peers_data(self):
        await self.make(self.b, self.a, minor=1, peer_minor=0)
        dev = self.device(self.a, self.b, children=[None, None])
        await dev.assemble()
        await dev.open()
        self.assertEqual(self.a.state(0).role, drbdstate.PRIMARY)


class GrowTest(DrbdCase):

    async def test_grow_backing_store_then_the_mirror(self):
        dev = await self.make(self.a, self.b)
        data = dev.children[0]
        await dev.grow(50, True, True)
        await dev.grow(50, False, True)
        self.assertEqual(data.grown, [(50, True, True), (50, False, True)])
        self.assertEqual(self.a.state(0).size, self.size)
        await dev.grow(50, False, False)
        self.assertEqual(self.a.state(0).size, self.size + 50)
        self.assertEqual(await dev.dimensions(), [(self.size + 50) * MIB, None])
        await self.assertFails(dev.grow(10, False, False),
                               f"can't grow to {self.size + 60} MiB: the data volume has "
                               f"{self.size + 50} MiB")

    async def test_diskless_cannot_grow(self):
        dev = self.device(self.a, self.b, children=[None, None])
        await dev.assemble()
        await self.assertFails(dev.grow(10, False, True), "cannot grow diskless device")


class NetworkTest(DrbdCase):

    async def test_wrong_secret_does_not_connect(self):
        dev = await self.make(self.a, self.b)
        peer = await self.make(self.b, self.a, minor=1, peer_minor=0, secret="e" * 40)
        self.assertEqual((await dev.mirror_status()).cstate, drbdstate.WF_CONNECTION)
        self.assertEqual((await peer.mirror_status()).cstate, drbdstate.WF_CONNECTION)

    async def test_wrong_minor_does_not_connect(self):
        dev = await self.make(self.a, self.b)
        await self.make(self.b, self.a, minor=2, peer_minor=0)
        self.assertEqual((await dev.mirror_status()).cstate, drbdstate.WF_CONNECTION)

    async def test_disconnect_and_attach(self):
        dev = await self.make(self.a, self.b)
        peer = await self.make(self.b, self.a, minor=1, peer_minor=0)
        await dev.disconnect_net()
        self.assertIsNone(self.a.net.listening(0))
        self.assertEqual((await dev.mirror_status()).cstate, drbdstate.STANDALONE)
        self.assertEqual((await peer.mirror_status()).cstate, drbdstate.WF_CONNECTION)
        await dev.attach_net(True)
        self.assertTrue(self.a.state(0).multimaster)
        self.assertEqual((await peer.mirror_status()).cstate, drbdstate.CONNECTED)

    async def test_restart_listens_again_for_attached_minors_only(self):
        await self.make(self.a, self.b)
        standalone = await self.make(self.a, self.b, minor=3, peer_minor=4,
                                     secret="d" * 40, port=free_port(self.a.ip))
        await standalone.disconnect_net()
        await self.a.net.stop()
        self.assertIsNone(self.a.net.listening(0))
        self.clock.advance(30)
        self.a.start()
        await self.a.net.start()
        self.assertEqual(self.a.net.listening(0), (self.a.ip, self.port))
        self.assertIsNone(self.a.net.listening(3))
        self.assertEqual(self.a.state(0).net_since, self.clock.seconds())
        peer = await self.make(self.b, self.a, minor=1, peer_minor=0)
        self.assertEqual((await peer.mirror_status()).cstate, drbdstate.CONNECTED)

    async def test_listen_failure_is_a_clear_error(self):
        await self.make(self.a, self.b)
        other = self.device(self.a, self.b, minor=5, secret="c" * 40)  # same address
        await self.assertFails(other.assemble(), f"drbd5: can't listen on {self.a.ip}:"
                               f"{self.port}")
