"""The service tree of ganeti-noded: log and SIGHUP, memory lock, I/O threads, HTTPS
listener (backlog :data:`ganeti.daemon.LISTEN_BACKLOG`), built with :mod:`ganeti.daemon`."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool
from twisted.web import server

from ganeti.daemon import (
    LISTEN_BACKLOG,
    DaemonLog,
    DaemonService,
    ListenService,
    ProcessExit,
    SignalInstaller,
    StepService,
    ThreadPoolService,
)
from ganeti.noded.bdev.drbdnet import MirrorNet
from ganeti.noded.hypervisors.virt import VirtConnection
from ganeti.noded.procs import ChildProcesses
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
    """Log, SIGHUP hooks, memory lock, thread pool, then the HTTPS listener; stops in
    reverse.  A listener that cannot listen fails the start (:mod:`ganeti.daemon`)."""

    program = "ganeti-noded"

    def __init__(self, reactor: Any, site: server.Site, pool: ThreadPool,
                 tls: ClusterServerContextFactory, port: int, bind: str, mlock: bool,
                 lock: Callable[[], bool] = lock_memory,
                 daemon_log: DaemonLog | None = None,
                 install_signal: SignalInstaller | None = None,
                 process_exit: ProcessExit | None = None,
                 children: ChildProcesses | None = None,
                 virt: VirtConnection | None = None,
                 mirrors: MirrorNet | None = None) -> None:
        super().__init__(reactor, daemon_log, install_signal, process_exit)
        self.site = site
        self.pool = pool
        self.tls = tls
        self.port = port
        self.bind = bind
        self.mlock = mlock
        # the log first, so that the memory lock is logged in it
        StepService("memory lock", start=lock if mlock else None).setServiceParent(self)
        ThreadPoolService(pool).setServiceParent(self)
        # the drbd listeners of the minors whose net is attached (their records survive
        # the daemon, as kernel DRBD's state does): open again at start, closed at stop
        StepService("mirror listeners",
                    start=mirrors.start if mirrors is not None else None,
                    stop=mirrors.stop if mirrors is not None else None
                    ).setServiceParent(self)
        # the libvirt thread (kvm): connects and finds the running guests before
        # calls are accepted; stopping it leaves the guests running
        StepService("libvirt connection",
                    start=virt.start if virt is not None else None,
                    stop=virt.stop if virt is not None else None).setServiceParent(self)
        # stopped after the listener (no new calls), before the pool: the programs
        # that calls started (hooks, OOB) are ended, none outlives the daemon
        StepService("child processes",
                    stop=children.stop_all if children is not None else None
                    ).setServiceParent(self)
        self.listener = ListenService(
            f"{bind}:{port} (TCP, TLS)",
            lambda: reactor.listenSSL(port, site, tls, backlog=LISTEN_BACKLOG, interface=bind),
            announce=self._listening)
        self.listener.setServiceParent(self)

    @property
    def listening(self) -> IListeningPort | None:
        """The listening port while listening."""
        return self.listener.port

    def _listening(self, port: IListeningPort) -> None:
        log.info("ganeti-noded listening on {bind}:{port} (cluster certificate {fp})",
                 bind=self.bind, port=getattr(port.getHost(), "port", self.port),
                 fp=self.tls.cluster.fingerprint)
