"""ganeti-rapi's service tree on a memory reactor, its options and start-up checks, the
twistd plugin, and the access log."""

import os

from twisted.application.service import IServiceMaker
from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock
from twisted.plugin import IPlugin, getPlugins
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, crypto
from ganeti.core.errors import ConfigurationError
from ganeti.core.paths import Paths
from ganeti.daemon import LISTEN_BACKLOG
from ganeti.rapi import tap
from ganeti.rapi.accesslog import AccessLog, clf_time, escape, format_line
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.server import RapiApp
from ganeti.rapi.service import LimitedFactory, LimitedTLSFactory, RapiDaemon
from ganeti.rapi.web import make_site

_PEM = {}


def rapi_pem():
    if "pem" not in _PEM:
        _PEM["pem"] = crypto.generate_self_signed("cluster.rapi-test")
    return _PEM["pem"]


def make_node(testcase, hostname="node1.rapi-test", master="node1.rapi-test", pem=True):
    root = os.path.join(os.path.abspath(testcase.mktemp()), hostname)
    paths = Paths.for_node(root, hostname)
    os.makedirs(paths.rapi_users_dir)
    os.makedirs(paths.log_dir)
    with open(paths.ssconf_file("master_node"), "w") as f:
        f.write(master + "\n")
    with open(paths.rapi_users, "w") as f:
        f.write("admin adminpw write\n")
    if pem:
        with open(paths.rapi_pem, "wb") as f:
            f.write(rapi_pem())
    return paths


class FakeLuxi:
    def __init__(self):
        self.closed = False

    def call(self, method, *args):
        return defer.succeed(None)

    def close(self):
        self.closed = True


class DaemonTest(SynchronousTestCase):
    def setUp(self):
        self.reactor = MemoryReactorClock()
        self.reactor.run()  # hasRun: callWhenRunning (the SIGHUP install) runs at once
        self.paths = make_node(self)
        self.users = UsersFile(self.paths.rapi_users, self.reactor)
        self.log_path = os.path.join(self.paths.log_dir, "rapi-access.log")
        self.access = AccessLog(self.log_path, self.reactor)
        self.luxi = FakeLuxi()
        self.app = RapiApp([], self.luxi, self.reactor, self.users)
        self.site = make_site(self.app, self.access, self.reactor)
        self.events = []
        self.handlers = []

    def install(self, handler):
        self.handlers.append(handler)
        return lambda: self.events.append("uninstalled")

    def daemon(self, tls=None, max_clients=2):
        return RapiDaemon(self.reactor, self.site, self.users, self.access, port=5080,
                          bind="127.0.0.9", tls=tls, max_clients=max_clients, luxi=self.luxi,
                          on_start=lambda: self.events.append("feed started"),
                          on_stop=lambda: self.events.append("feed stopped"),
                          install_signal=self.install)

    def test_start_and_stop(self):
        daemon = self.daemon()
        daemon.startService()
        self.assertEqual(sorted(self.users.users), ["admin"])
        self.assertTrue(os.path.exists(self.log_path))
        [(port, factory, backlog, interface)] = self.reactor.tcpServers
        self.assertEqual((port, backlog, interface), (5080, LISTEN_BACKLOG, "127.0.0.9"))
        self.assertIsInstance(factory, LimitedFactory)
        self.assertIs(factory.wrappedFactory, self.site)
        self.assertEqual(self.events, ["feed started"])
        self.assertEqual(len(self.handlers), 1)
        self.successResultOf(daemon.stopService())
        self.assertEqual(self.events, ["feed started", "feed stopped", "uninstalled"])
        self.assertTrue(self.luxi.closed)

    def test_tls_factory_and_client_limit(self):
        options = tap.load_tls(self.paths.rapi_pem)
        daemon = self.daemon(tls=options, max_clients=2)
        daemon.startService()
        self.addCleanup(daemon.stopService)
        factory = self.reactor.tcpServers[0][1]
        self.assertIsInstance(factory, LimitedTLSFactory)
        factory.doStart()
        built = [factory.buildProtocol(None) for _ in range(2)]
        for proto in built:
            factory.registerProtocol(proto)
        self.assertIsNone(factory.buildProtocol(None))  # a third client is refused
        factory.unregisterProtocol(built[0])
        self.assertIsNotNone(factory.buildProtocol(None))
        self.flushLoggedErrors()

    def test_sighup_reloads_users_and_reopens_the_access_log(self):
        daemon = self.daemon()
        daemon.startService()
        self.addCleanup(daemon.stopService)
        with open(self.paths.rapi_users, "w") as f:
            f.write("other otherpw\n")
        os.rename(self.log_path, self.log_path + ".1")
        [handler] = self.handlers
        handler()
        self.assertEqual(sorted(self.users.users), ["other"])
        self.assertTrue(os.path.exists(self.log_path))
        self.assertEqual([name for name, _ in daemon.reloader.hooks],
                         ["re-read the RAPI users file", "reopen the access log"])

    def test_cannot_listen_fails_the_start_and_undoes_the_steps(self):
        from twisted.internet.error import CannotListenError

        from ganeti.daemon import StartupError

        def refuse(*args, **kwargs):
            raise CannotListenError("127.0.0.9", 5080, OSError(98, "Address already in use"))

        self.reactor.listenTCP = refuse
        daemon = self.daemon()
        with self.assertRaises(StartupError) as cm:
            daemon.startService()
        self.assertEqual(str(cm.exception), "ganeti-rapi: cannot listen on 127.0.0.9:5080 "
                                            "(TCP, no TLS): Address already in use")
        self.assertIsNone(daemon.listening)
        self.assertFalse(daemon.running)
        # what started before the listener was undone, last first
        self.assertEqual(self.events, ["feed started", "feed stopped", "uninstalled"])
        self.assertTrue(self.luxi.closed)
        self.assertEqual([s.name for s in daemon if s.running], [])


class TapTest(SynchronousTestCase):
    def test_options(self):
        opts = tap.Options()
        opts.parseOptions([])
        self.assertEqual((opts["bind"], opts["port"], opts["max-body"], opts["max-clients"]),
                         ("0.0.0.0", constants.DEFAULT_RAPI_PORT, 1024 * 1024, 1000))
        self.assertFalse(opts["no-ssl"] or opts["require-authentication"])
        opts = tap.Options()
        opts.parseOptions(["-b", "127.0.0.5", "-p", "8443", "--require-authentication",
                           "--no-ssl", "--max-body", "4096", "--max-clients", "7"])
        self.assertEqual((opts["bind"], opts["port"], opts["max-body"], opts["max-clients"]),
                         ("127.0.0.5", 8443, 4096, 7))
        self.assertTrue(opts["no-ssl"] and opts["require-authentication"])
        opts = tap.Options()
        opts.parseOptions(["--max-clients", "50", "--max-clients-per-address", "20",
                           "--request-timeout", "2.5"])
        self.assertEqual((opts["max-clients-per-address"], opts["request-timeout"]), (20, 2.5))
        for bad in (["-p", "70000"], ["--max-body", "10"], ["--max-clients", "0"],
                    ["-p", "x"], ["--max-clients", "5", "--max-clients-per-address", "6"],
                    ["--max-clients-per-address", "0"], ["--request-timeout", "0"],
                    ["--feed-max-pause", "0.5"]):
            with self.assertRaises(usage.UsageError):
                tap.Options().parseOptions(bad)

    def test_feed_max_pause_from_the_option_or_the_environment(self):
        opts = tap.Options()
        opts.parseOptions([])
        self.assertIsNone(opts["feed-max-pause"])  # the relay's default (60 s)
        self.patch(os, "environ", {**os.environ, tap.FEED_MAX_PAUSE_ENV: "300"})
        opts = tap.Options()
        opts.parseOptions([])
        self.assertEqual(opts["feed-max-pause"], 300.0)
        opts = tap.Options()
        opts.parseOptions(["--feed-max-pause", "90"])  # the option wins
        self.assertEqual(opts["feed-max-pause"], 90.0)
        self.patch(os, "environ", {**os.environ, tap.FEED_MAX_PAUSE_ENV: "soon"})
        with self.assertRaises(usage.UsageError):
            tap.Options().parseOptions([])

    def test_feed_max_resyncs_from_the_option_or_the_environment(self):
        self.patch(os, "environ", {**os.environ, tap.FEED_MAX_RESYNCS_ENV: "100"})
        opts = tap.Options()
        opts.parseOptions([])
        self.assertEqual(opts["feed-max-resyncs"], 100)
        opts = tap.Options()
        opts.parseOptions(["--feed-max-resyncs", "5"])
        self.assertEqual(opts["feed-max-resyncs"], 5)
        for bad in ("0", "many"):
            self.patch(os, "environ", {**os.environ, tap.FEED_MAX_RESYNCS_ENV: bad})
            with self.assertRaises(usage.UsageError):
                tap.Options().parseOptions([])

    def test_refuses_off_the_master(self):
        paths = make_node(self, master="node2.rapi-test")
        with self.assertRaises(ConfigurationError) as cm:
            tap.check_master(paths)
        self.assertEqual(str(cm.exception), "this node (node1.rapi-test) is not the master "
                                            "node; ganeti-rapi runs on the master, "
                                            "node2.rapi-test")
        os.unlink(paths.ssconf_file("master_node"))
        with self.assertRaises(ConfigurationError) as cm:
            tap.check_master(paths)
        self.assertIn("is missing: this node is not part of a cluster", str(cm.exception))
        self.patch(os, "environ", dict(paths.env()))
        with self.assertRaises(SystemExit) as exit_cm:
            tap.startup_paths()
        self.assertIn("ganeti-rapi: cannot start: ", str(exit_cm.exception))
        tap.check_master(make_node(self))  # the master passes

    def test_load_tls(self):
        paths = make_node(self)
        options = tap.load_tls(paths.rapi_pem)
        self.assertIsNotNone(options.getContext())
        with self.assertRaises(ConfigurationError) as cm:
            tap.load_tls(paths.rapi_pem + ".missing")
        self.assertIn("cannot read", str(cm.exception))
        other = crypto.generate_self_signed("other")
        mismatched = rapi_pem().split(b"-----BEGIN CERTIFICATE")[0] + b"-----BEGIN CERTIFICATE" \
            + other.split(b"-----BEGIN CERTIFICATE")[1]
        for content in (b"junk", rapi_pem().split(b"-----BEGIN CERTIFICATE")[0], mismatched):
            with open(paths.rapi_pem, "wb") as f:
                f.write(content)
            with self.assertRaises(ConfigurationError) as cm:
                tap.load_tls(paths.rapi_pem)
            self.assertIn("does not hold a usable key and certificate", str(cm.exception))

    def test_make_service(self):
        paths = make_node(self)
        opts = tap.Options()
        opts.parseOptions(["--no-ssl", "-p", "0"])
        daemon = tap.make_service(opts, paths=paths, websocket=lambda: None)
        self.assertIsInstance(daemon, RapiDaemon)
        self.assertIsNone(daemon.tls)
        self.assertEqual(self.flushLoggedErrors(), [])
        opts = tap.Options()
        opts.parseOptions([])
        daemon = tap.make_service(opts, paths=paths)
        self.assertIsNotNone(daemon.tls)
        self.assertEqual(daemon.access_log.path,
                         os.path.join(paths.log_dir, constants.RAPI_ACCESS_LOG))
        os.unlink(paths.rapi_pem)
        with self.assertRaises(SystemExit) as cm:
            tap.make_service(opts, paths=paths)
        self.assertIn("ganeti-rapi: cannot start: cannot read", str(cm.exception))


class PluginTest(SynchronousTestCase):
    def test_plugin_is_found(self):
        from twisted import plugins
        found = [p for p in getPlugins(IPlugin, plugins)
                 if getattr(p, "tapname", None) == "ganeti-rapi"]
        self.assertEqual(len(found), 1)
        self.assertTrue(IServiceMaker.providedBy(found[0]))
        self.assertIs(found[0].options, tap.Options)


class PluginCompositionTest(SynchronousTestCase):
    def make(self, *argv):
        from twisted.plugins.ganeti_rapi import ganeti_rapi
        paths = make_node(self)
        self.patch(os, "environ", dict(paths.env()))
        options = ganeti_rapi.options()
        options.parseOptions(["--no-ssl", *argv])
        return ganeti_rapi.makeService(options)

    def patterns(self, daemon):
        return [r.pattern for r in daemon.site.resource.app.routes]

    def test_with_the_feed(self):
        daemon = self.make("-p", "0")
        self.assertIn("/2/feed", self.patterns(daemon))
        self.assertIsNotNone(daemon.on_start)
        self.assertIsNotNone(daemon.on_stop)


class AccessLogTest(SynchronousTestCase):
    def test_format(self):
        self.assertEqual(clf_time(0), "01/Jan/1970:00:00:00 +0000")
        self.assertEqual(clf_time(1_700_000_000.9), "14/Nov/2023:22:13:20 +0000")
        self.assertEqual(format_line(1_700_000_000, "10.0.0.1", None, "GET /2/info HTTP/1.1",
                                     200, 17),
                         '10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET /2/info HTTP/1.1" '
                         '200 17\n')
        self.assertEqual(format_line(0, "::1", "jane", "PUT /x HTTP/1.0", 204, 0),
                         '::1 - jane [01/Jan/1970:00:00:00 +0000] "PUT /x HTTP/1.0" 204 -\n')
        self.assertEqual(escape('a"b\\c\nd\x7f'), 'a\\"b\\\\c\\x0ad\\x7f')

    def test_buffered_and_flushed_by_the_clock(self):
        clock = MemoryReactorClock()
        path = os.path.join(os.path.abspath(self.mktemp()))
        log = AccessLog(path, clock)
        log.open()
        log.log("10.0.0.1", "u", 'GET /"q" HTTP/1.1', 200, 5)
        with open(path) as f:
            self.assertEqual(f.read(), "")  # buffered
        clock.advance(1)
        with open(path) as f:
            self.assertEqual(f.read(), '10.0.0.1 - u [01/Jan/1970:00:00:00 +0000] '
                                       '"GET /\\"q\\" HTTP/1.1" 200 5\n')
        log.log("10.0.0.1", None, "GET / HTTP/1.1", 404, 3)
        log.close()
        with open(path) as f:
            self.assertEqual(len(f.read().splitlines()), 2)
        self.assertEqual(clock.getDelayedCalls(), [])

    def test_unopenable_log_is_reported_not_fatal(self):
        clock = MemoryReactorClock()
        log = AccessLog("/nonexistent-dir/x/access.log", clock)
        log.open()
        log.log("h", None, "GET / HTTP/1.1", 200, 1)
        log.close()
