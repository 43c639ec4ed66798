"""The root service of every daemon: start in order or not at all, stop in reverse.

A daemon is a :class:`DaemonService` whose children are started in the order
they were added and stopped in reverse, one at a time, each after the
previous one finished.  The first two children are a
:class:`~ganeti.daemon.logs.LogService` and a
:class:`~ganeti.daemon.reload.ReloadService`, so the log is the first thing
up and the last thing down.  Steps without a service of their own are
:class:`StepService` children; a blocking-work thread pool is a
:class:`ThreadPoolService`; sockets are
:class:`~ganeti.daemon.listen.ListenService` children.

How a daemon fails.  twistd starts the application before the reactor runs
and, when ``startService`` raises, exits with status 1: its daemonised
parent prints ``An error has occurred: '<message>'`` (the first 100 bytes)
to stderr; under ``--nodaemon`` the exception ends the process.  So
:meth:`DaemonService.startService` logs why the start failed (critical),
stops the children already started (a thread pool left running would keep
the process alive for ever) and raises :class:`StartupError` with
``<program>: <reason>``; with a :class:`ProcessExit` (the real process) that
exception is printed as that one line instead of a traceback.  A failure
after the start (a deferred start-up step, say) calls
:meth:`DaemonService.fail`: logged, the reactor stopped once it runs
(:func:`stop_reactor`; stopping it before it runs raises, which is how
such stops used to be lost), and the process exits with status 1 after
twistd has cleaned up, with the reason on stderr.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any, NoReturn, TextIO

from twisted.application import service
from twisted.internet import defer
from twisted.internet.error import ReactorNotRunning
from twisted.logger import ILogObserver, Logger
from twisted.python.components import Componentized
from twisted.python.threadpool import ThreadPool

from ganeti.daemon.listen import StartupError
from ganeti.daemon.logs import DaemonLog, LogService
from ganeti.daemon.reload import ReloadService, SignalInstaller

log = Logger()


def _stop_now(reactor: Any) -> None:
    try:
        reactor.stop()
    except ReactorNotRunning:
        pass


def stop_reactor(reactor: Any) -> None:
    """Stop ``reactor`` now if it runs, else as soon as it runs; a no-op once it is
    stopping (twistd then stops the services)."""
    reactor.callWhenRunning(_stop_now, reactor)


def reactor_stopper(reactor: Any) -> Callable[[], None]:
    """A callable that does :func:`stop_reactor` (for code that must not see the reactor)."""
    return lambda: stop_reactor(reactor)


def cannot_start(daemon_log: DaemonLog | None, program: str, reason: str,
                 what: str = "cannot start") -> NoReturn:
    """Refuse to start in ``makeService`` (before twistd logs anything): the message
    ``<program>: <what>: <reason>`` goes to the daemon's log and, through
    SystemExit, to stderr; twistd exits with status 1.  A log on the console is
    not written to: stderr shows the message already."""
    message = f"{program}: {what}: {reason}"
    if daemon_log is not None and daemon_log.has_sinks and not daemon_log.on_console:
        Logger(namespace=program, observer=daemon_log.observer).critical(
            "{message}", message=message)
        daemon_log.close()
    raise SystemExit(message)


class ThreadPoolService(service.Service):
    """Owns a pool that runs blocking work (fsync, file reads) off the reactor:
    started with the service, stopped (its threads joined) with it."""

    def __init__(self, pool: ThreadPool) -> None:
        self.pool = pool

    def startService(self) -> None:
        super().startService()
        self.pool.start()

    def stopService(self) -> None:
        super().stopService()
        if self.pool.started:
            self.pool.stop()


class StepService(service.Service):
    """One start-up step (``start``) and its undoing at stop (``stop``), in tree order."""

    def __init__(self, name: str, start: Callable[[], object] | None = None,
                 stop: Callable[[], object] | None = None) -> None:
        self.setName(name)
        self._start = start
        self._stop = stop

    def startService(self) -> None:
        if self._start is not None:
            self._start()
        super().startService()

    def stopService(self) -> Any:
        super().stopService()
        if self._stop is not None:
            return self._stop()
        return None


class ProcessExit:
    """How a daemon under twistd ends with status 1 and its reason on stderr.

    :meth:`at_startup` replaces the traceback of the :class:`StartupError`
    that ends a ``--nodaemon`` process by its message.  :meth:`later`
    arranges the exit status for a failure after the start: twistd always
    ends with status 0 once its reactor ran, so the last thing the process
    does (an ``atexit`` handler, after twistd removed its pid file and
    stopped logging) is printing the reason and ``_exit(1)``.  Tests pass
    their own ``register``/``exit``/``stderr``.
    """

    def __init__(self, stderr: TextIO | None = None,
                 register: Callable[..., object] = atexit.register,
                 exit: Callable[[int], object] = os._exit) -> None:
        self.stderr = stderr
        self.register = register
        self.exit = exit
        self.message: str | None = None

    def _stream(self) -> TextIO:
        return self.stderr if self.stderr is not None else sys.__stderr__ or sys.stderr

    def at_startup(self, message: str) -> None:
        """``startService`` is about to raise StartupError(``message``)."""
        previous = sys.excepthook

        def hook(kind: type[BaseException], value: BaseException,
                 tb: TracebackType | None) -> None:
            if isinstance(value, StartupError):
                print(str(value), file=self._stream(), flush=True)
            else:
                previous(kind, value, tb)
        sys.excepthook = hook

    def later(self, message: str) -> None:
        """The daemon failed after it started: exit 1 with ``message`` at the end."""
        if self.message is None:
            self.register(self._exit)
        self.message = message

    def _exit(self) -> None:
        stream = self._stream()
        try:
            print(self.message, file=stream, flush=True)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        self.exit(1)


class DaemonService(service.MultiService):
    """Root service of a daemon: its log and SIGHUP hooks come first.

    ``daemon_log`` (from :func:`ganeti.daemon.logs.daemon_log`) is reopened on
    SIGHUP; when it stands in for twistd's observer, :meth:`setServiceParent`
    gives it to twistd's application.  Subclasses add their reload hooks with
    ``self.reloader.add_hook`` and their own children after these.
    ``program`` names the daemon in failure messages; ``process_exit`` is
    given for the real process only (see :class:`ProcessExit`).
    """

    program = "ganeti-daemon"

    def __init__(self, reactor: Any, daemon_log: DaemonLog | None = None,
                 install_signal: SignalInstaller | None = None,
                 process_exit: ProcessExit | None = None) -> None:
        super().__init__()
        self.reactor = reactor
        self.daemon_log = daemon_log
        self.process_exit = process_exit
        #: Why the daemon failed after it started (None while it did not).
        self.failure: str | None = None
        if daemon_log is not None:
            LogService(daemon_log).setServiceParent(self)
        self.reloader = ReloadService(reactor, install_signal)
        self.reloader.setServiceParent(self)
        if daemon_log is not None:
            self.reloader.add_hook("reopen the log files", daemon_log.reopen)

    def setServiceParent(self, parent: Any) -> Any:
        """As usual; twistd's application (a Componentized) also gets our log observer.

        twistd makes the service, then the application, then starts logging
        with the application's ``ILogObserver`` component if it has one.
        """
        if (self.daemon_log is not None and self.daemon_log.replaces_twistd
                and isinstance(parent, Componentized)
                and parent.getComponent(ILogObserver, None) is None):
            parent.setComponent(ILogObserver, self.daemon_log.observer)
            self.daemon_log.attached = True
        return super().setServiceParent(parent)

    def startService(self) -> None:
        """Start the children in order; if one fails, stop those started and raise
        :class:`StartupError` (``<program>: <reason>``), logged first."""
        service.Service.startService(self)
        started: list[service.IService] = []
        try:
            for child in self:
                child.startService()
                started.append(child)
        except Exception as err:
            if isinstance(err, StartupError):
                message = f"{self.program}: {err}"
                log.critical("{message}", message=message)
            else:
                message = f"{self.program}: cannot start: {err or type(err).__name__}"
                log.failure("{message}", message=message)
            self.running = 0
            self._roll_back(started)
            if self.process_exit is not None:
                self.process_exit.at_startup(message)
            raise StartupError(message) from err

    def _roll_back(self, started: list[service.IService]) -> None:
        """Stop what a failed start started, last first, without waiting (the reactor
        does not run yet)."""
        for child in reversed(started):
            try:
                result = child.stopService()
            except Exception:
                log.failure("Stopping {service} after a failed start failed", service=child)
                continue
            if isinstance(result, defer.Deferred):
                result.addErrback(lambda f: log.failure("Stopping after a failed start", f))

    def fail(self, reason: str) -> None:
        """A failure after the start (or one twistd cannot see): log it, stop the
        reactor once it runs, and exit with status 1 (with a :class:`ProcessExit`)."""
        message = f"{self.program}: {reason}"
        if self.failure is None:
            self.failure = message
            log.critical("{message}; stopping", message=message)
            if self.process_exit is not None:
                self.process_exit.later(message)
        stop_reactor(self.reactor)

    def stopService(self) -> defer.Deferred[None]:
        """Stop the running children one at a time, last first, each after the
        previous one is done (MultiService would stop them all at once, but a
        queue's last writes need the thread pool, a listener's last answers the
        log, ...)."""
        service.Service.stopService(self)
        return defer.Deferred.fromCoroutine(self._stop_in_order())

    async def _stop_in_order(self) -> None:
        for child in reversed(list(self)):
            if not child.running:
                continue
            try:
                await defer.maybeDeferred(child.stopService)
            except Exception:
                log.failure("Stopping {service} failed", service=child)
