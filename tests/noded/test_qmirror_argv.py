"""The mirror daemon's command line (no process started)."""

import json

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.bdev.qmirror import MirrorDaemon, Volume
from ganeti.noded.procs import ChildProcesses


def daemon(**kw):
    clock = Clock()
    return MirrorDaemon(None, clock, ChildProcesses(None, clock), "/run/ganeti", "drbd7",
                        Volume("/dev/loop0", 4 << 20, 64 << 20), "10.0.0.1", 11007, **kw)


def options(argv, flag):
    return [json.loads(argv[i + 1]) for i, a in enumerate(argv) if a == flag]


class MirrorDaemonArgvTest(SynchronousTestCase):
    def test_raw_volume_two_exports_peer_write_through(self):
        d = daemon()
        argv = d.argv()
        self.assertIn("--daemonize", argv)
        self.assertEqual(argv[argv.index("--pidfile") + 1], "/run/ganeti/qmirror/drbd7.pid")
        file_node, raw = options(argv, "--blockdev")
        self.assertEqual(file_node["filename"], "/dev/loop0")
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
