"""ganeti.daemon: the level filter, the append-only log file, twistd's log options,
the SIGHUP reload hooks and their installer."""

import io
import os
import signal

from twisted.application import service
from twisted.application.twist._options import TwistOptions
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import ILogObserver, Logger, LogLevel, globalLogPublisher
from twisted.python import usage
from twisted.scripts._twistd_unix import ServerOptions
from twisted.trial.unittest import SynchronousTestCase
from txaio import tx as txaio_twisted

from ganeti import daemon


class Options(usage.Options):
    """A daemon's options: only the shared --debug flag."""

    optFlags = [daemon.DEBUG_FLAG]


def twistd_options(*argv):
    """A daemon's options as twistd parses them: ``twistd [argv] ganeti-masterd``.

    ``argv`` may end with the daemon's own options after the plugin name.
    """
    config = ServerOptions()
    config.parseOptions(list(argv))
    return config.subOptions


def emit(observer, level, text, namespace="ganeti.test"):
    """Send one event to ``observer`` as a Logger would."""
    Logger(namespace=namespace, observer=observer).emit(level, text)


class LevelFilterTest(SynchronousTestCase):
    def setUp(self):
        self.addCleanup(daemon.set_library_log_level, False)

    def lines(self, debug):
        log = daemon.DaemonLog(debug)
        out = io.StringIO()
        log.add_stream(out)
        emit(log.observer, LogLevel.debug, "a debug line")
        emit(log.observer, LogLevel.info, "an info line")
        emit(log.observer, LogLevel.error, "an error line")
        # what autobahn's protocol logs for every frame it receives
        emit(log.observer, LogLevel.debug, "WebSocketProtocol.onPing(payload=<80 bytes>)",
             namespace="ganeti.feeds.websocket.FeedServerProtocol")
        return out.getvalue()

    def test_debug_hidden_by_default(self):
        text = self.lines(debug=False)
        self.assertIn("an info line", text)
        self.assertIn("an error line", text)
        self.assertNotIn("a debug line", text)
        self.assertNotIn("onPing", text)

    def test_debug_shown_with_debug(self):
        text = self.lines(debug=True)
        self.assertIn("a debug line", text)
        self.assertIn("onPing", text)
        self.assertIn("an info line", text)

    def test_options_choose_the_level_and_txaio_follows(self):
        plain = Options()
        plain.parseOptions([])
        self.assertFalse(daemon.daemon_log(plain).debug)
        probe = txaio_twisted.make_logger()
        self.assertEqual(txaio_twisted.get_global_log_level(), "info")
        self.assertIs(probe.debug, txaio_twisted._no_op)  # autobahn's debug costs nothing
        verbose = Options()
        verbose.parseOptions(["--debug"])
        self.assertTrue(daemon.daemon_log(verbose).debug)
        self.assertEqual(txaio_twisted.get_global_log_level(), "debug")
        self.assertIsNot(probe.debug, txaio_twisted._no_op)


class AppendLogFileTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "x-daemon.log")

    def read(self, path=None):
        with open(path or self.path, "rb") as f:
            return f.read()

    def test_reopened_after_rename(self):
        """What logrotate does: rename the file away, then signal the daemon."""
        f = daemon.AppendLogFile(self.path)
        self.addCleanup(f.close)
        f.write("one\n")
        f.flush()
        os.rename(self.path, self.path + ".1")
        f.write("two\n")  # still the old file until reopened
        f.flush()
        f.reopen()
        f.write("three\n")
        f.flush()
        self.assertEqual(self.read(self.path + ".1"), b"one\ntwo\n")
        self.assertEqual(self.read(), b"three\n")
        self.assertEqual(os.stat(self.path).st_mode & 0o777, 0o640 & ~current_umask())

    def test_appends_after_truncation(self):
        """copytruncate: writes go to the new end, not to the old offset (no NUL hole)."""
        with open(self.path, "w") as existing:
            existing.write("kept from before\n")
        f = daemon.AppendLogFile(self.path)
        self.addCleanup(f.close)
        f.write("x" * 1000 + "\n")
        f.flush()
        os.truncate(self.path, 0)
        f.write("after\n")
        f.flush()
        self.assertEqual(self.read(), b"after\n")

    def test_never_rotates_itself(self):
        f = daemon.AppendLogFile(self.path)
        self.addCleanup(f.close)
        for _ in range(1200):  # twistd's LogFile would have rotated at 1 MB
            f.write("y" * 1023 + "\n")
        f.flush()
        self.assertEqual(os.listdir(self.dir), ["x-daemon.log"])
        self.assertEqual(os.path.getsize(self.path), 1200 * 1024)

    def test_failed_reopen_keeps_the_old_file(self):
        f = daemon.AppendLogFile(self.path)
        self.addCleanup(f.close)
        f.path = os.path.join(self.dir, "missing", "x.log")
        self.assertRaises(OSError, f.reopen)
        f.write("still here\n")
        f.flush()
        self.assertEqual(self.read(), b"still here\n")

    def test_write_errors_are_counted_not_raised(self):
        f = daemon.AppendLogFile("/dev/full")
        self.addCleanup(f.close)
        f.write("z" * 100)
        f.flush()
        self.assertGreater(f.write_errors, 0)


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class DaemonLogTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "node-daemon.log")

    def test_same_file_under_two_names_is_written_once(self):
        """A file added twice under two names must not double every line."""
        log = daemon.DaemonLog()
        self.addCleanup(log.close)
        first = log.add_file(self.path)
        os.symlink(self.path, os.path.join(self.dir, "link.log"))
        self.assertIs(log.add_file(os.path.join(self.dir, "link.log")), first)
        emit(log.observer, LogLevel.info, "once")
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read().count("once"), 1)

    def test_reopen_reopens_every_file_and_logs_a_failure(self):
        log = daemon.DaemonLog()
        self.addCleanup(log.close)
        other = os.path.join(self.dir, "other.log")
        log.add_file(self.path)
        log.add_file(other)
        os.rename(self.path, self.path + ".1")
        os.rename(other, other + ".1")
        log.reopen()
        self.assertTrue(os.path.exists(self.path))
        self.assertTrue(os.path.exists(other))
        os.rename(self.dir, self.dir + ".gone")
        self.addCleanup(os.rename, self.dir + ".gone", self.dir)
        events = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        log.reopen()  # the directory is gone: logged, the old files are kept
        self.assertEqual(len([e for e in events if e["log_level"] == LogLevel.error]), 2)


class TwistdOptionsTest(SynchronousTestCase):
    """daemon_log() sends the log where twistd would, without twistd's rotation."""

    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "master-daemon.log")

    def make(self, *argv, stdout=None):
        log = daemon.daemon_log(twistd_options(*argv), stdout=stdout)
        self.addCleanup(log.close)
        self.addCleanup(daemon.set_library_log_level, False)
        return log

    def test_logfile(self):
        log = self.make("--logfile", self.path, "ganeti-masterd")
        self.assertTrue(log.replaces_twistd)
        self.assertEqual([f.path for f in log.files], [self.path])
        self.assertFalse(log.debug)

    def test_logfile_with_debug(self):
        log = self.make("--logfile", self.path, "ganeti-masterd", "--debug")
        self.assertTrue(log.debug)

    def test_nodaemon_logs_to_stdout(self):
        for argv in (["-n"], ["-n", "--logfile", "-"]):
            out = io.StringIO()
            log = self.make(*argv, "ganeti-masterd", stdout=out)
            self.assertTrue(log.replaces_twistd)
            self.assertEqual(log.files, [])
            emit(log.observer, LogLevel.info, "to stdout")
            emit(log.observer, LogLevel.debug, "not shown")
            self.assertIn("to stdout", out.getvalue())
            self.assertNotIn("not shown", out.getvalue())

    def test_custom_logger_is_left_alone(self):
        log = self.make("--logger", "twisted.logger.textFileLogObserver", "ganeti-masterd")
        self.assertFalse(log.replaces_twistd)
        self.assertFalse(log.has_sinks)

    def test_twist_and_direct_use_keep_their_own_observer(self):
        config = TwistOptions()
        config.parseOptions(["ganeti-masterd"])
        log = daemon.daemon_log(config.subOptions)
        self.assertFalse(log.replaces_twistd)
        plain = Options()
        plain.parseOptions([])
        self.assertFalse(daemon.daemon_log(plain).replaces_twistd)

    def test_the_application_gets_the_observer(self):
        """twistd's AppLogger uses the application's ILogObserver component."""
        log = self.make("--logfile", self.path, "ganeti-masterd")
        root = daemon.DaemonService(MemoryReactorClock(), log)
        application = service.Application("ganeti-masterd")
        root.setServiceParent(application)
        self.assertIs(application.getComponent(ILogObserver), log.observer)
        self.assertTrue(log.attached)
        self.assertIn(root, list(service.IServiceCollection(application)))
        # attached: the log service does not publish it a second time
        root.startService()
        self.addCleanup(root.stopService)
        emit(globalLogPublisher, LogLevel.info, "published once?")
        with open(self.path, encoding="utf-8") as f:
            self.assertNotIn("published once?", f.read())

    def test_unattached_log_is_published_while_running(self):
        log = daemon.DaemonLog()
        log.add_file(self.path)
        root = daemon.DaemonService(MemoryReactorClock(), log)
        root.startService()
        Logger(namespace="ganeti.test").info("while running")
        root.stopService()
        Logger(namespace="ganeti.test").info("after stopping")
        with open(self.path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("while running", text)
        self.assertNotIn("after stopping", text)

    def test_setup_log_exits_if_the_file_cannot_be_opened(self):
        missing = os.path.join(self.dir, "no", "such", "dir.log")
        with self.assertRaises(SystemExit) as cm:
            daemon.setup_log(twistd_options("--logfile", missing, "ganeti-masterd"),
                             "ganeti-masterd")
        self.assertIn("ganeti-masterd: cannot open the log file", str(cm.exception))


class FakeReactor(MemoryReactorClock):
    """Records callFromThread instead of running it: the test plays the reactor thread."""

    def __init__(self):
        super().__init__()
        self.from_thread = []

    def callFromThread(self, f, *args, **kwargs):
        self.from_thread.append((f, args, kwargs))


class ReloadServiceTest(SynchronousTestCase):
    def setUp(self):
        for signum in daemon.RELOAD_SIGNALS:  # the tests install real handlers
            self.addCleanup(signal.signal, signum, signal.getsignal(signum))
        self.reactor = FakeReactor()
        self.installed = []
        self.uninstalled = []

    def install(self, handler):
        self.installed.append(handler)
        return lambda: self.uninstalled.append(handler)

    def test_installed_once_the_reactor_runs_and_removed_at_stop(self):
        reloader = daemon.ReloadService(self.reactor, self.install)
        reloader.startService()
        self.assertEqual(self.installed, [])
        self.reactor.run()
        self.assertEqual(self.installed, [reloader.reload])
        reloader.stopService()
        self.assertEqual(self.uninstalled, [reloader.reload])

    def test_no_installer_installs_nothing(self):
        reloader = daemon.ReloadService(self.reactor)
        reloader.startService()
        self.reactor.run()
        reloader.stopService()
        self.assertEqual(self.reactor.whenRunningHooks, [])

    def test_hooks_run_in_order_and_a_failure_does_not_stop_the_others(self):
        reloader = daemon.ReloadService(self.reactor)
        calls = []
        reloader.add_hook("first", lambda: calls.append(1))
        reloader.add_hook("broken", lambda: 1 / 0)
        reloader.add_hook("third", lambda: calls.append(3))
        reloader.reload()
        self.assertEqual(calls, [1, 3])
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
        self.assertEqual(reloader.reloads, 1)

    def test_real_sighup_runs_the_hooks_on_the_reactor_thread(self):
        """The handler only hands the work to the reactor (callFromThread)."""
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        root = daemon.DaemonService(self.reactor,
                                    install_signal=daemon.sighup_installer(self.reactor))
        calls = []
        root.reloader.add_hook("a", lambda: calls.append("a"))
        root.reloader.add_hook("b", lambda: calls.append("b"))
        root.startService()
        self.reactor.run()
        os.kill(os.getpid(), signal.SIGHUP)  # would end the process with the default action
        self.assertEqual(calls, [])  # nothing ran inside the signal handler
        [(f, args, kwargs)] = self.reactor.from_thread
        f(*args, **kwargs)  # the reactor thread's turn
        self.assertEqual(calls, ["a", "b"])
        root.stopService()
        # a SIGHUP while stopping must not kill the daemon: ignored, not default
        self.assertEqual(signal.getsignal(signal.SIGHUP), signal.SIG_IGN)

    def test_sigusr1_reloads_too(self):
        """twistd rotated its --logfile on SIGUSR1: it must not end the daemon now."""
        calls = []
        uninstall = daemon.sighup_installer(self.reactor)(lambda: calls.append("reload"))
        os.kill(os.getpid(), signal.SIGUSR1)
        [(f, args, kwargs)] = self.reactor.from_thread
        f(*args, **kwargs)
        self.assertEqual(calls, ["reload"])
        uninstall()

    def test_ignored_from_the_start_until_installed(self):
        """A SIGHUP between makeService and the reactor running must not end the daemon."""
        previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)
        self.addCleanup(signal.signal, signal.SIGHUP, previous)
        daemon.sighup_installer(self.reactor)  # what makeService does
        self.assertEqual(signal.getsignal(signal.SIGHUP), signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGHUP)  # ignored: the test process lives on

    def test_uninstall_restores_a_previous_handler(self):
        def mine(signum, frame):
            pass

        signal.signal(signal.SIGHUP, mine)
        uninstall = daemon.sighup_installer(self.reactor)(lambda: None)
        self.assertIsNot(signal.getsignal(signal.SIGHUP), mine)
        uninstall()
        self.assertIs(signal.getsignal(signal.SIGHUP), mine)


class EveryDaemonTest(SynchronousTestCase):
    """Each daemon's tap builds its service with --debug, a log and the real installer."""

    def test_every_tap_has_the_debug_flag(self):
        from ganeti.confd import tap as confd_tap
        from ganeti.master import tap as master_tap
        from ganeti.noded import tap as noded_tap
        from ganeti.rapi import tap as rapi_tap
        for tap in (master_tap, noded_tap, confd_tap, rapi_tap):
            opts = tap.Options()
            opts.parseOptions(["--debug"])
            self.assertTrue(opts["debug"], tap.__name__)
