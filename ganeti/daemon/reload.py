"""SIGHUP (and SIGUSR1): the reload hooks of a daemon, run on the reactor thread.

:class:`ReloadService` installs a handler once the reactor runs; the handler
only schedules :meth:`ReloadService.reload` with ``callFromThread``, so the
hooks run on the reactor thread.  Tests pass a fake installer (or none):
services on fake reactors never touch signals.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from twisted.application import service
from twisted.logger import Logger

log = Logger()

#: ``install(handler) -> uninstall``: how a daemon gets SIGHUP (tests pass a fake).
SignalInstaller = Callable[[Callable[[], None]], Callable[[], None]]

#: Signals that run the reload hooks: SIGHUP as in Ganeti, and SIGUSR1, on
#: which twistd rotated its own ``--logfile`` (left at its default action,
#: it would now end the daemon).
RELOAD_SIGNALS = (signal.SIGHUP, signal.SIGUSR1)


def sighup_installer(reactor: Any,
                     signums: tuple[int, ...] = RELOAD_SIGNALS) -> SignalInstaller:
    """The real installer: ``handler`` runs on the reactor thread when one of
    ``signums`` (SIGHUP, SIGUSR1) arrives.

    The signal handler itself only calls ``reactor.callFromThread``, which is
    safe there.  Interrupted system calls are restarted (SA_RESTART), so a
    SIGHUP does not fail a write in a worker thread.  The returned function
    puts the previous handlers back, except that the default action (which
    ends the process) becomes "ignore": a SIGHUP while stopping must not
    kill the daemon half-way.  Until the handler is installed (the reactor
    runs), signals at their default action are ignored from the moment the
    installer is made (in ``makeService``), so a logrotate run during
    start-up cannot end a daemon either.
    """
    for signum in signums:
        if signal.getsignal(signum) in (signal.SIG_DFL, None):
            signal.signal(signum, signal.SIG_IGN)

    def install(handler: Callable[[], None]) -> Callable[[], None]:
        previous = {}
        for signum in signums:
            previous[signum] = signal.signal(
                signum, lambda _sig, _frame: reactor.callFromThread(handler))
            signal.siginterrupt(signum, False)

        def uninstall() -> None:
            for signum, old in previous.items():
                signal.signal(signum, signal.SIG_IGN if old in (signal.SIG_DFL, None) else old)
        return uninstall
    return install


class ReloadService(service.Service):
    """Runs the daemon's reload hooks on SIGHUP (on the reactor thread).

    ``install`` is how the handler is installed (:func:`sighup_installer`
    for the real reactor; None installs nothing, for fake reactors).  It is
    installed once the reactor runs and removed when the service stops.
    """

    def __init__(self, reactor: Any, install: SignalInstaller | None = None) -> None:
        self.reactor = reactor
        self.install = install
        self.hooks: list[tuple[str, Callable[[], object]]] = []
        self.reloads = 0
        self._uninstall: Callable[[], None] | None = None

    def add_hook(self, name: str, hook: Callable[[], object]) -> None:
        """Run ``hook`` on every SIGHUP (in the order added); ``name`` is for the log."""
        self.hooks.append((name, hook))

    def reload(self) -> None:
        """Run every hook; one that fails is logged and the others still run."""
        self.reloads += 1
        log.info("SIGHUP: {what}", what=", ".join(name for name, _ in self.hooks) or "nothing")
        for name, hook in self.hooks:
            try:
                hook()
            except Exception:
                log.failure("SIGHUP: {name} failed", name=name)

    def startService(self) -> None:
        super().startService()
        if self.install is not None:
            self.reactor.callWhenRunning(self._install)

    def _install(self) -> None:
        if self.running and self.install is not None and self._uninstall is None:
            self._uninstall = self.install(self.reload)

    def stopService(self) -> None:
        super().stopService()
        if self._uninstall is not None:
            uninstall, self._uninstall = self._uninstall, None
            uninstall()
