"""The service tree of ganeti-noded: log and SIGHUP, memory lock, I/O threads, HTTPS
listener (backlog :data:`ganeti.daemon.LISTEN_BACKLOG`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.endpoints import SSL4ServerEndpoint
from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool
from twisted.web import server

from ganeti.daemon import LISTEN_BACKLOG, DaemonLog, DaemonService, SignalInstaller
from ganeti.noded.tap import reactor_stopper
from ganeti.noded.tls import ClusterServerContextFactory

MCL_CURRENT = 1
MCL_FUTURE = 2

log = Logger()


def lock_memory(libc: Any = None) -> bool:
    """``mlockall(MCL_CURRENT|MCL_FUTURE)``; logs and returns False if it fails."""
    try:
        if libc is None:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    except (OSError, AttributeError) as err:
        log.warn("Cannot lock the node daemon into memory: {error}", error=err)
        return False
    log.info("Node daemon locked into memory (mlockall)")
    return True


class NodeDaemon(DaemonService):
    """Starts log, SIGHUP hooks, mlock and thread pool, then listens; stops in reverse."""

    def __init__(self, reactor: Any, site: server.Site, pool: ThreadPool,
                 tls: ClusterServerContextFactory, port: int, bind: str, mlock: bool,
                 lock: Callable[[], bool] = lock_memory,
                 daemon_log: DaemonLog | None = None,
                 install_signal: SignalInstaller | None = None) -> None:
        super().__init__(reactor, daemon_log, install_signal)
        self.reactor = reactor
        self.site = site
        self.pool = pool
        self.tls = tls
        self.port = port
        self.bind = bind
        self.mlock = mlock
        self._lock = lock
        self.listening: IListeningPort | None = None

    def startService(self) -> None:
        super().startService()  # the log first, so that the memory lock is logged in it
        if self.mlock:
            self._lock()
        self.pool.start()
        endpoint = SSL4ServerEndpoint(self.reactor, self.port, self.tls,
                                      backlog=LISTEN_BACKLOG, interface=self.bind)
        d = endpoint.listen(self.site)
        d.addCallback(self._listening)
        d.addErrback(self._listen_failed)

    def _listening(self, port: IListeningPort) -> None:
        self.listening = port
        log.info("ganeti-noded listening on {bind}:{port} (cluster certificate {fp})",
                 bind=self.bind, port=getattr(port.getHost(), "port", self.port),
                 fp=self.tls.cluster.fingerprint)

    def _listen_failed(self, failure: Any) -> None:
        log.failure("ganeti-noded cannot listen on {bind}:{port}", failure,
                    bind=self.bind, port=self.port)
        # twistd starts the services before the reactor runs, and stopping a
        # reactor that does not run yet raises: stop it once it runs.
        self.reactor.callWhenRunning(reactor_stopper(self.reactor))

    def stopService(self) -> defer.Deferred[None]:
        return defer.Deferred.fromCoroutine(self._stop())

    async def _stop(self) -> None:
        if self.listening is not None:
            await defer.maybeDeferred(self.listening.stopListening)
            self.listening = None
        if self.pool.started:
            self.pool.stop()
        await defer.maybeDeferred(super().stopService)
