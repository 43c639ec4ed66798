"""ganeti-noded options, bind address, memory lock and log-file fallback."""

import os

from twisted.internet.error import CannotListenError, ReactorNotRunning
from twisted.internet.testing import MemoryReactor
from twisted.python import usage
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import SynchronousTestCase

from ganeti import daemon
from ganeti.core import ssconf
from ganeti.noded import service, tap
from ganeti.noded.backend import NodeContext, handlers, inline_runner
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
    """noded's own --log-file: optional, written once, reopened on SIGHUP."""

    def options(self, *argv):
        opts = tap.Options()
        opts.parseOptions(list(argv))
        return opts

    def test_unwritable_log_file_is_skipped(self):
        path = os.path.join(os.path.abspath(self.mktemp()), "missing", "node-daemon.log")
        daemon_log = daemon.setup_log(self.options("--log-file", path), "ganeti-noded",
                                      path)
        self.assertEqual(daemon_log.files, [])

    def test_log_file_and_debug(self):
        path = os.path.join(os.path.abspath(self.mktemp()))
        os.makedirs(path)
        path = os.path.join(path, "node-daemon.log")
        opts = self.options("--log-file", path, "--debug")
        self.addCleanup(daemon.set_library_log_level, False)
        daemon_log = daemon.setup_log(opts, "ganeti-noded", opts["log-file"])
        self.addCleanup(daemon_log.close)
        self.assertTrue(daemon_log.debug)
        self.assertEqual([f.path for f in daemon_log.files], [path])


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
    def test_stops_once_the_reactor_runs(self):
        reactor = StrictMemoryReactor(CannotListenError("127.0.0.1", 1811, "in use"))
        paths = node_paths(self)
        ctx = NodeContext(paths=paths, clock=reactor, run=inline_runner)
        daemon = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), ThreadPool(minthreads=0, maxthreads=1),
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False)
        daemon.startService()  # as twistd does: before the reactor runs
        self.addCleanup(daemon.stopService)
        self.assertEqual(len(self.flushLoggedErrors(CannotListenError)), 1)
        self.assertIsNone(daemon.listening)
        self.assertEqual(reactor.stops, 0)
        reactor.running = True  # what reactor.run() does first: run the when-running hooks
        for f, args, kwargs in reactor.whenRunningHooks:
            f(*args, **kwargs)
        self.assertEqual(reactor.stops, 1)


class ListenAndSighupTest(SynchronousTestCase):
    def test_backlog_and_sighup_hooks(self):
        reactor = MemoryReactor()
        paths = node_paths(self)
        ctx = NodeContext(paths=paths, clock=reactor, run=inline_runner)
        logdir = os.path.abspath(self.mktemp())
        os.makedirs(logdir)
        daemon_log = daemon.DaemonLog()
        daemon_log.add_file(os.path.join(logdir, "node-daemon.log"))
        installed = []
        node = service.NodeDaemon(
            reactor, make_site(ctx, handlers()), ThreadPool(minthreads=0, maxthreads=1),
            ClusterServerContextFactory(cert("cluster.example.com")), port=1811,
            bind="127.0.0.1", mlock=False, daemon_log=daemon_log,
            install_signal=lambda h: installed.append(h) or (lambda: None))
        node.startService()
        self.addCleanup(node.stopService)
        [(port, _factory, _ctx, backlog, interface)] = reactor.sslServers
        self.assertEqual((port, backlog, interface), (1811, daemon.LISTEN_BACKLOG, "127.0.0.1"))
        reactor.run()
        [handler] = installed
        self.assertEqual([name for name, _ in node.reloader.hooks], ["reopen the log files"])
        os.rename(os.path.join(logdir, "node-daemon.log"), os.path.join(logdir, "old"))
        handler()
        self.assertTrue(os.path.exists(os.path.join(logdir, "node-daemon.log")))
