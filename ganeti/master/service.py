"""The service tree of ganeti-masterd.

Children start in this order and stop in reverse: the I/O thread pool,
the config (writer), then the LUXI listener, so that nothing is accepted
before the state it serves exists, and no request is in flight when the
state goes away.  Later issues insert the lock manager, the job queue and
the scheduler between the config and the listener.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from twisted.application import service
from twisted.internet import threads
from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool

from ganeti.core import config as configmod
from ganeti.core import constants, fileutil
from ganeti.core.errors import ConfigurationError
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths
from ganeti.luxi.server import LuxiDispatcher, LuxiServerFactory
from ganeti.master.configwriter import ConfigWriter
from ganeti.master.events import EventBus, subscribe_events_method
from ganeti.master.queries import ClusterQueries


class ThreadPoolService(service.Service):
    """Owns the pool that runs blocking work (fsync, file reads) off the reactor."""

    def __init__(self, pool: ThreadPool) -> None:
        self.pool = pool

    def startService(self) -> None:
        super().startService()
        self.pool.start()

    def stopService(self) -> None:
        super().stopService()
        self.pool.stop()


class LuxiService(service.Service):
    """Listens on the LUXI socket (mode 0660) while running."""

    log = Logger()

    def __init__(self, reactor: Any, path: str, factory: LuxiServerFactory) -> None:
        self.reactor = reactor
        self.path = path
        self.factory = factory
        self.port: IListeningPort | None = None

    def startService(self) -> None:
        super().startService()
        fileutil.ensure_dirs([(os.path.dirname(self.path), 0o750)])
        self.port = self.reactor.listenUNIX(self.path, self.factory, mode=0o660, wantPID=True)
        self.log.info("LUXI listening on {path}", path=self.path)

    def stopService(self) -> Any:
        super().stopService()
        if self.port is not None:
            port, self.port = self.port, None
            return port.stopListening()
        return None


def check_master(paths: Paths, cfg: ConfigData) -> None:
    """Refuse to run on a node that is not the master in its config."""
    if cfg.master.name != paths.hostname:
        raise ConfigurationError(
            f"this node ({paths.hostname}) is not the master of cluster "
            f"{cfg.cluster.cluster_name}; the master is {cfg.master.name}")


def load_master_config(paths: Paths) -> ConfigData:
    """Read the config at startup (before the reactor runs) and check our role."""
    if not os.path.exists(paths.config_file):
        raise ConfigurationError(
            f"{paths.config_file} does not exist: this node is not part of a cluster; "
            "run 'gnt-cluster init' first")
    cfg = configmod.load_file(paths.config_file)
    check_master(paths, cfg)
    unknown = configmod.unknown_keys(cfg)
    if unknown:
        Logger().warn("{path} has keys this version does not know (kept as they are): "
                      "{keys}", path=paths.config_file, keys=", ".join(unknown))
    return cfg


class MasterDaemon(service.MultiService):
    """ganeti-masterd: thread pool -> config -> LUXI."""

    def __init__(self, reactor: Any, paths: Paths, cfg: ConfigData,
                 max_frame: int = constants.LUXI_MAX_FRAME, io_threads: int = 4) -> None:
        super().__init__()
        self.paths = paths
        pool = ThreadPool(minthreads=1, maxthreads=io_threads, name="masterd-io")
        ThreadPoolService(pool).setServiceParent(self)
        run_blocking = functools.partial(threads.deferToThreadPool, reactor, pool)
        self.config_writer = ConfigWriter(paths.config_file, cfg, run_blocking, reactor)
        self.events = EventBus(reactor)
        queries = ClusterQueries(lambda: self.config_writer.config, paths, reactor)
        implementations = queries.implementations()
        implementations["SubscribeEvents"] = subscribe_events_method(self.events)
        dispatcher = LuxiDispatcher(implementations)
        self.luxi = LuxiService(reactor, paths.luxi_socket,
                                LuxiServerFactory(dispatcher, max_frame))
        self.luxi.setServiceParent(self)
