"""The mirror daemon's command line, and where a guest finds its mirrored disk (no
process started)."""

import json
import os
import stat
import tempfile

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.bdev import qmirror_drbd
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.bdev.qmirror import MirrorDaemon, Volume
from ganeti.noded.procs import ChildProcesses


def daemon(**kw):
    clock = Clock()
    return MirrorDaemon(None, clock, ChildProcesses(None, clock), "/run/ganeti", "drbd7",
                        Volume("/dev/loop0", 4 << 20, 64 << 20), "10.0.0.1", 11007, **kw)


def mode(path):
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def options(argv, flag):
    return [json.loads(argv[i + 1]) for i, a in enumerate(argv) if a == flag]


class MirrorDaemonArgvTest(SynchronousTestCase):
    def test_protocol_driver_follows_the_kind_of_file(self):
        with tempfile.NamedTemporaryFile() as f:
            whole = Volume(f.name).nodes("disk")[0]
            self.assertEqual(whole["driver"], "file")
            self.assertNotIn("locking", whole)  # a whole file keeps QEMU's locks
        blocks = [os.path.join("/dev", n) for n in sorted(os.listdir("/dev"))
                  if stat.S_ISBLK(mode(os.path.join("/dev", n)))]
        if blocks:  # (a container may have none)
            self.assertEqual(Volume(blocks[0]).nodes("disk")[0]["driver"], "host_device")

    def test_raw_volume_two_exports_peer_write_through(self):
        d = daemon()
        argv = d.argv()
        self.assertIn("--daemonize", argv)
        self.assertEqual(argv[argv.index("--pidfile") + 1], "/run/ganeti/qmirror/drbd7.pid")
        file_node, raw = options(argv, "--blockdev")
        self.assertEqual(file_node["filename"], "/dev/loop0")
        # a physical volume is a block device: QEMU's file driver refuses those
        self.assertEqual(file_node["driver"],
                         "host_device" if stat.S_ISBLK(mode("/dev/loop0")) else "file")
        self.assertEqual(file_node["locking"], "off")  # a range: other volumes share the PV
        self.assertEqual((raw["node-name"], raw["offset"], raw["size"]),
                         ("disk", 4 << 20, 64 << 20))
        server = options(argv, "--nbd-server")[0]["addr"]
        self.assertEqual((server["host"], server["port"]), ("10.0.0.1", "11007"))
        exports = {e["id"]: e for e in options(argv, "--export")}
        self.assertEqual(exports["disk"]["writethrough"], False)  # the guest's
        self.assertEqual(exports["peer"]["writethrough"], False)  # flushed at rotations
        self.assertTrue(options(daemon(peer_writethrough=True).argv(),
                                "--export")[1]["writethrough"])
        self.assertEqual(daemon(prefix=["/sbin/ip", "netns", "exec", "n1"]).argv()[:5],
                         ["/sbin/ip", "netns", "exec", "n1", argv[0]])

    def test_metadata_volume_exports_after_the_qcow2_node(self):
        argv = daemon(meta=Volume("/dev/loop0", 128 << 20, 128 << 20)).argv()
        names = [n["node-name"] for n in options(argv, "--blockdev")]
        self.assertEqual(names, ["data-file", "data", "meta-file", "meta"])
        self.assertEqual(options(argv, "--export"), [])


class GuestDiskTest(SynchronousTestCase):
    def disk(self, **dyn):
        return {"dev_type": "drbd", "logical_id": ["a", "b", 11005, 0, 1, "s3cret"],
                "size": 64, "dynamic_params": {"local-ip": "10.0.0.1", "remote-ip":
                                               "10.0.0.2", "local-minor": 0,
                                               "remote-minor": 1, **dyn}}

    def test_the_guest_opens_its_nodes_export(self):
        self.assertEqual(qmirror_drbd.guest_nbd(self.disk(mirror="qemu")),
                         ("disk", "10.0.0.1", 21005))
        with self.assertRaises(BlockDeviceError):
            qmirror_drbd.guest_nbd({**self.disk(), "logical_id": ["a", "b"]})
        with self.assertRaises(BlockDeviceError):
            qmirror_drbd.nbd_port(60000)

    def test_instance_disks_of_the_qemu_engine_are_nbd(self):
        from ganeti.noded.backend import instdisks
        from tests.noded.helpers import node_paths

        async def assembled(ctx, disk):
            return "/dev/drbd0"
        self.patch(instdisks.devices, "assemble", assembled)
        ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)
        instance = {"disks_info": [self.disk(mirror="qemu")]}
        [spec] = self.successResultOf(defer.ensureDeferred(
            instdisks.gather(ctx, "inst1", instance)))
        self.assertEqual((spec.path, spec.nbd, spec.block), ("disk", ("10.0.0.1", 21005),
                                                             False))
