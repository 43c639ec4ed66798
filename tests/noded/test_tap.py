"""ganeti-noded options, bind address, memory lock, no --log-file, listen failure."""

from twisted.internet import defer
from twisted.internet.error import CannotListenError, ReactorNotRunning
from twisted.internet.testing import MemoryReactor, MemoryReactorClock
from twisted.python import usage
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import SynchronousTestCase

from ganeti import daemon
from ganeti.core import ssconf
from ganeti.noded import service, tap
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.backend.registry import handlers
from ganeti.noded.server import make_site
from ganeti.noded.tls import ClusterServerContextFactory
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import cert


class OptionsTest(SynchronousTestCase):
    def test_defaults(self):
        opts = tap.Options()
        opts.parseOptions([])
        self.assertEqual((opts["port"], opts["bind"], opts["no-mlock"]), (1811, None, 0))
        opts.parseOptions(["-b", "10.0.0.1", "-p", "0", "--no-mlock"])
        self.assertEqual((opts["port"], opts["bind"], opts["no-mlock"]), (0, "10.0.0.1", 1))
        self.assertRaises(usage.UsageError, tap.Options().parseOptions, ["-p", "70000"])

    def test_libvirt_uri(self):
        opts = tap.Options()
        opts.parseOptions([])
        self.assertIsNone(opts["libvirt-uri"])  # the env var, else qemu:///system
        opts.parseOptions(["--libvirt-uri", "qemu+unix:///system?socket=/n1/libvirt-sock"])
        self.assertEqual(opts["libvirt-uri"], "qemu+unix:///system?socket=/n1/libvirt-sock")
        for bad in ("", "no-scheme", "qemu:///system x"):
            self.assertRaises(usage.UsageError, tap.Options().parseOptions,
                              ["--libvirt-uri", bad])

    def test_primary_ip_from_ssconf(self):
        paths = node_paths(self)
        self.assertIsNone(ssconf.node_primary_ip(paths))
        with open(paths.ssconf_file("node_primary_ips"), "w") as f:
            f.write("other 127.0.0.9\nnode1.example.com 127.0.0.2\n")
        self.assertEqual(ssconf.node_primary_ip(paths), "127.0.0.2")


class FakeLibc:
    def __init__(self, rc):
        self.rc, self.calls = rc, []

    def mlockall(self, flags):
        self.calls.append(flags)
        return self.rc


class MlockTest(SynchronousTestCase):
    def test_flags(self):
        libc = FakeLibc(0)
        self.assertTrue(service.lock_memory(libc))
        self.assertEqual(libc.calls, [service.MCL_CURRENT | service.MCL_FUTURE])

    def test_failure_is_logged_not_fatal(self):
        self.assertFalse(service.lock_memory(FakeLibc(-1)))


class LogFileTest(SynchronousTestCase):
    """noded logs through twistd's --logfile only: its own --log-file is gone."""

    def test_no_log_file_option(self):
        with self.assertRaises(usage.UsageError):
            tap.Options().parseOptions(["--log-file", "/tmp/node-daemon.log"])


class StrictMemoryReactor(MemoryReactor):
    """listenSSL fails; like the real reactor, stop() refuses unless the reactor runs."""

    def __init__(self, listen_error):
        super().__init__()
        self.listen_error = listen_error
        self.stops = 0

    def listenSSL(self, *args, **kwargs):
        raise self.listen_error

    def stop(self):
        if not self.running:
            raise ReactorNotRunning("Can't stop reactor that isn't running.")
        self.stops += 1
        super().stop()


class ListenFailureTest(SynchronousTestCase):
    def test_fails_the_start_and_stops_the_pool(self):
        reactor = StrictMemoryReactor(CannotListenError("127.0.0.1", 1811,
                                                        OSError(98, "Address already in use")))
        paths = node_paths(self)
        ctx = NodeContext(paths=paths, clock=reactor, run=inline_runner)
        pool = ThreadPool(minthreads=0, maxthreads=1)
        node = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), pool,
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False)
        with self.assertRaises(daemon.StartupError) as cm:
            node.startService()  # as twistd does: before the reactor runs
        self.assertEqual(str(cm.exception), "ganeti-noded: cannot listen on 127.0.0.1:1811 "
                                            "(TCP, TLS): Address already in use")
        self.assertIsNone(node.listening)
        self.assertFalse(pool.started)  # its threads would keep the process alive
        self.assertFalse(node.running)
        self.assertEqual(reactor.stops, 0)  # twistd exits 1 without running the reactor


class StopTest(SynchronousTestCase):
    def test_stopping_ends_the_child_processes_after_the_listener(self):
        reactor = MemoryReactorClock()
        ctx = NodeContext(paths=node_paths(self), clock=reactor, run=inline_runner)
        order = []

        class Children:
            def stop_all(self):
                order.append(("children stopped; listening:", node.listener.running))
                return defer.succeed(None)

        node = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), ThreadPool(minthreads=0, maxthreads=1),
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False, children=Children())
        node.startService()
        self.assertIsNotNone(node.listening)
        self.successResultOf(node.stopService())
        self.assertEqual(order, [("children stopped; listening:", 0)])

    def test_the_libvirt_connection_starts_before_listening_and_stops_after(self):
        reactor = MemoryReactorClock()
        ctx = NodeContext(paths=node_paths(self), clock=reactor, run=inline_runner)
        order = []

        class Virt:
            def start(self):
                order.append(("libvirt started; listening:", node.listening is not None))

            def stop(self):
                order.append(("libvirt stopped; listening:", node.listener.running))
                return defer.succeed(None)

        node = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), ThreadPool(minthreads=0, maxthreads=1),
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False, virt=Virt())
        node.startService()
        self.successResultOf(node.stopService())
        self.assertEqual(order, [("libvirt started; listening:", False),
                                 ("libvirt stopped; listening:", 0)])

    def test_the_daemon_context_has_children_that_a_stop_ends(self):
        ctx = NodeContext(paths=node_paths(self), clock=MemoryReactorClock(),
                          run=inline_runner, processes=MemoryReactorClock())
        self.assertIsNotNone(ctx.children)
        self.assertIsNone(NodeContext(paths=node_paths(self), clock=MemoryReactorClock(),
                                      run=inline_runner).children)


class MirrorListenersTest(SynchronousTestCase):
    def test_net_attached_minors_listen_again_at_start_and_close_at_stop(self):
        from ganeti.noded.bdev import drbdstate
        from ganeti.noded.bdev.drbdnet import MirrorNet

        reactor = MemoryReactorClock()
        paths = node_paths(self)
        for minor, net in ((0, True), (1, False)):
            drbdstate.save(paths.run_dir, drbdstate.MinorState(
                minor=minor, secret=f"s{minor}", logical_id=[], size=4, net=net,
                local_ip="192.0.2.1", remote_ip="192.0.2.2", port=11000 + minor,
                remote_minor=minor))
        mirrors = MirrorNet(paths.run_dir, reactor, inline_runner, reactor)
        ctx = NodeContext(paths=paths, clock=reactor, run=inline_runner, mirrors=mirrors)
        node = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), ThreadPool(minthreads=0, maxthreads=1),
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False, mirrors=mirrors)
        node.startService()
        self.assertEqual([(port, iface) for port, _, _, iface in reactor.tcpServers],
                         [(11000, "192.0.2.1")])
        self.assertEqual(mirrors.listening(0), ("192.0.2.1", 11000))
        self.successResultOf(node.stopService())
        self.assertIsNone(mirrors.listening(0))
        self.assertTrue(drbdstate.load(paths.run_dir, 0).net)  # the record stays
