"""ganeti.daemon's root service, listeners and failure paths, on fake reactors: start
in order or not at all, stop in reverse one after the other, listen failures that
name the address and the reason, "stop the reactor once it runs", exit status 1."""

import io
import os
import sys

from twisted.application import service
from twisted.internet import defer
from twisted.internet.error import CannotListenError, ReactorNotRunning
from twisted.internet.testing import MemoryReactorClock
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import SynchronousTestCase

from ganeti import daemon


class StrictReactor(MemoryReactorClock):
    """Like the real reactor, ``stop()`` raises unless the reactor runs."""

    def __init__(self):
        super().__init__()
        self.stops = 0

    def stop(self):
        if not self.running:
            raise ReactorNotRunning("Can't stop reactor that isn't running.")
        self.stops += 1
        super().stop()

    def run(self):
        """Run the when-running hooks (and stop only if one of them asks)."""
        self.running = self.hasRun = True
        for f, args, kwargs in self.whenRunningHooks:
            f(*args, **kwargs)


class Recorder(service.Service):
    def __init__(self, name, events, fail=None, stop_result=None):
        self.setName(name)
        self.events = events
        self.fail = fail
        self.stop_result = stop_result

    def startService(self):
        if self.fail is not None:
            raise self.fail
        super().startService()
        self.events.append(f"start {self.name}")

    def stopService(self):
        super().stopService()
        self.events.append(f"stop {self.name}")
        return self.stop_result


class FakePort:
    """A listening port that can pause accepting, as Twisted's TCP/UNIX ports can."""

    def __init__(self):
        self.reading = True
        self.stopped = False

    def stopReading(self):
        self.reading = False

    def startReading(self):
        self.reading = True

    def stopListening(self):
        self.stopped = True


class Exit:
    def __init__(self):
        self.startup, self.later_calls = [], []

    def at_startup(self, message):
        self.startup.append(message)

    def later(self, message):
        self.later_calls.append(message)


def make_daemon(reactor, exit=None, program="ganeti-test"):
    root = daemon.DaemonService(reactor, process_exit=exit)
    root.program = program
    return root


class StartStopTest(SynchronousTestCase):
    def test_children_start_in_order_and_stop_in_reverse_one_after_the_other(self):
        events = []
        slow = defer.Deferred()
        root = make_daemon(StrictReactor())
        Recorder("a", events).setServiceParent(root)
        Recorder("b", events, stop_result=slow).setServiceParent(root)
        Recorder("c", events).setServiceParent(root)
        root.startService()
        self.assertEqual(events, ["start a", "start b", "start c"])
        done = root.stopService()
        self.assertEqual(events[3:], ["stop c", "stop b"])  # a waits for b's stop
        self.assertNoResult(done)
        slow.callback(None)
        self.assertEqual(events[5:], ["stop a"])
        self.successResultOf(done)

    def test_a_listen_failure_stops_what_started_and_names_address_and_reason(self):
        events = []
        reactor = StrictReactor()
        exit = Exit()
        root = make_daemon(reactor, exit, "ganeti-noded")
        pool = ThreadPool(minthreads=1, maxthreads=1)
        daemon.ThreadPoolService(pool).setServiceParent(root)
        Recorder("a", events).setServiceParent(root)

        def refuse():
            raise CannotListenError("127.0.0.5", 1811, OSError(98, "Address already in use"))
        daemon.ListenService("127.0.0.5:1811 (TCP, TLS)", refuse).setServiceParent(root)
        Recorder("never", events).setServiceParent(root)
        with self.assertRaises(daemon.StartupError) as cm:
            root.startService()
        message = ("ganeti-noded: cannot listen on 127.0.0.5:1811 (TCP, TLS): "
                   "Address already in use")
        self.assertEqual(str(cm.exception), message)
        self.assertEqual(events, ["start a", "stop a"])
        self.assertFalse(pool.started)  # its threads would keep the process alive
        self.assertFalse(root.running)
        self.assertEqual(exit.startup, [message])
        self.assertEqual(reactor.stops, 0)

    def test_any_other_start_failure_becomes_a_startup_error(self):
        root = make_daemon(StrictReactor(), program="ganeti-masterd")
        Recorder("queue", [], fail=RuntimeError("the queue is locked")).setServiceParent(root)
        with self.assertRaises(daemon.StartupError) as cm:
            root.startService()
        self.assertEqual(str(cm.exception), "ganeti-masterd: cannot start: the queue is locked")
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_unix_path_too_long_is_explained(self):
        path = "/" + "d" * 120 + "/ganeti-query"

        def refuse():
            raise CannotListenError(None, path, OSError("AF_UNIX path too long"))
        listener = daemon.ListenService(f"the LUXI socket {path}", refuse, unix_path=path)
        with self.assertRaises(daemon.StartupError) as cm:
            listener.startService()
        self.assertIn(path, str(cm.exception))
        self.assertIn("AF_UNIX path too long: the path is 134 bytes long, a UNIX socket "
                      "path at most 107", str(cm.exception))
        self.assertIsNone(daemon.unix_path_problem("/short"))

    def test_step_service(self):
        events = []
        step = daemon.StepService("feed", start=lambda: events.append("up"),
                                  stop=lambda: events.append("down"))
        step.startService()
        step.stopService()
        self.assertEqual((step.name, events), ("feed", ["up", "down"]))


class ReadyTest(SynchronousTestCase):
    def test_listens_at_once_but_accepts_once_ready(self):
        port = FakePort()
        ready = defer.Deferred()
        announced = []
        listener = daemon.ListenService("sock", lambda: port, announce=announced.append,
                                        ready=lambda: ready)
        listener.startService()
        self.assertIs(listener.port, port)
        self.assertFalse(port.reading)  # clients wait in the backlog
        self.assertFalse(listener.accepting)
        ready.callback(None)
        self.assertTrue(port.reading and listener.accepting)
        self.assertEqual(announced, [port])
        listener.stopService()
        self.assertTrue(port.stopped)

    def test_already_ready_is_never_paused(self):
        port = FakePort()
        port.stopReading = lambda: self.fail("paused")
        listener = daemon.ListenService("sock", lambda: port,
                                        ready=lambda: defer.succeed(None))
        listener.startService()
        self.assertTrue(listener.accepting)

    def test_not_ready_fails_the_daemon_once_the_reactor_runs(self):
        reactor = StrictReactor()
        exit = Exit()
        root = make_daemon(reactor, exit, "ganeti-masterd")
        ready = defer.Deferred()
        listener = daemon.ListenService("sock", FakePort, ready=lambda: ready)
        listener.setServiceParent(root)
        root.startService()
        ready.errback(RuntimeError("cannot restore the queue"))
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)
        message = "ganeti-masterd: cannot start: cannot restore the queue"
        self.assertEqual((root.failure, exit.later_calls), (message, [message]))
        self.assertEqual(reactor.stops, 0)  # not running yet: stopping now would be lost
        reactor.run()  # runs the when-running hooks
        self.assertEqual(reactor.stops, 1)


class StopReactorTest(SynchronousTestCase):
    def test_before_and_while_running(self):
        reactor = StrictReactor()
        stop = daemon.reactor_stopper(reactor)
        stop()
        self.assertEqual(reactor.stops, 0)
        reactor.run()
        self.assertEqual(reactor.stops, 1)
        reactor.running = True
        stop()  # while running: at once
        self.assertEqual(reactor.stops, 2)
        reactor.running, reactor.whenRunningHooks = True, []
        reactor.stop = lambda: (_ for _ in ()).throw(ReactorNotRunning("stopping"))
        stop()  # while stopping: no error

    def test_fail_twice_reports_once(self):
        reactor = StrictReactor()
        reactor.running = True
        exit = Exit()
        root = make_daemon(reactor, exit)
        root.fail("first")
        root.fail("second")
        self.assertEqual(exit.later_calls, ["ganeti-test: first"])
        self.assertEqual(root.failure, "ganeti-test: first")
        self.assertEqual(reactor.stops, 1)


class ProcessExitTest(SynchronousTestCase):
    def test_at_startup_prints_the_message_instead_of_a_traceback(self):
        self.patch(sys, "excepthook", lambda *a: self.fail("previous hook called"))
        err = io.StringIO()
        exit = daemon.ProcessExit(stderr=err)
        exit.at_startup("ganeti-rapi: cannot listen on 1.2.3.4:5080 (TCP, TLS): in use")
        error = daemon.StartupError("ganeti-rapi: cannot listen on 1.2.3.4:5080 (TCP, TLS): "
                                    "in use")
        sys.excepthook(daemon.StartupError, error, None)
        self.assertEqual(err.getvalue(),
                         "ganeti-rapi: cannot listen on 1.2.3.4:5080 (TCP, TLS): in use\n")
        seen = []
        self.patch(sys, "excepthook", lambda *a: seen.append(a[0]))
        exit.at_startup("x")
        sys.excepthook(ValueError, ValueError("other"), None)
        self.assertEqual(seen, [ValueError])

    def test_later_exits_1_at_the_end_with_the_reason(self):
        registered, codes = [], []
        err = io.StringIO()
        exit = daemon.ProcessExit(stderr=err, register=registered.append, exit=codes.append)
        exit.later("ganeti-masterd: cannot start: no queue")
        exit.later("ganeti-masterd: cannot start: still no queue")
        self.assertEqual(len(registered), 1)
        registered[0]()
        self.assertEqual(codes, [1])
        self.assertEqual(err.getvalue(), "ganeti-masterd: cannot start: still no queue\n")


class CannotStartTest(SynchronousTestCase):
    def test_logged_and_raised(self):
        path = os.path.join(os.path.abspath(self.mktemp()))
        os.makedirs(path)
        path = os.path.join(path, "node-daemon.log")
        log = daemon.DaemonLog()
        log.add_file(path)
        with self.assertRaises(SystemExit) as cm:
            daemon.cannot_start(log, "ganeti-noded", "cannot read server.pem")
        self.assertEqual(str(cm.exception), "ganeti-noded: cannot start: cannot read server.pem")
        with open(path, encoding="utf-8") as f:
            self.assertIn("ganeti-noded: cannot start: cannot read server.pem", f.read())
