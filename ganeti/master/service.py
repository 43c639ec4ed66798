"""The service tree of ganeti-masterd.

Children start in this order and stop in reverse, one after the other
(:class:`ganeti.daemon.DaemonService`): the daemon's log and its SIGHUP hooks,
the I/O thread pool, the job queue (the store is recovered and the jobs
restored), then the LUXI listener (backlog :data:`ganeti.daemon.LISTEN_BACKLOG`).
The listener makes its socket at once, so that a socket that cannot be made
(a path too long for a UNIX socket, say) fails the start with exit status 1,
but accepts connections only once the queue is ready, so that nothing is
served before the state it serves exists, and no request is in flight when the
state goes away; if the queue cannot be restored, the daemon fails.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from twisted.application import service
from twisted.internet import defer, threads
from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from ganeti.core import config as configmod
from ganeti.core import constants, fileutil
from ganeti.core.errors import ECODE_ENVIRON, ConfigurationError, GenericError, OpExecError
from ganeti.core.jobs import QueuedJob
from ganeti.core.objects import ConfigData, Node
from ganeti.core.paths import Paths
from ganeti.daemon import (
    LISTEN_BACKLOG,
    DaemonLog,
    DaemonService,
    ListenService,
    ProcessExit,
    SignalInstaller,
    ThreadPoolService,
)
from ganeti.luxi.server import LuxiDispatcher, LuxiServerFactory
from ganeti.master.config.configwriter import BlockingRunner, ConfigWriter, ConfigWriterService
from ganeti.master.config.nodes import target
from ganeti.master.config.replication import Replicator
from ganeti.master.config.reservations import ReservationManager
from ganeti.master.iallocator.jobs import TextRunner
from ganeti.master.iallocator.runner import AllocatorRunner
from ganeti.master.instwatch import InstanceEventWatch
from ganeti.master.jobs.events import EventBus, subscribe_events_method
from ganeti.master.jobs.filters import FilterMethods
from ganeti.master.jobs.jobqueue import JobQueue
from ganeti.master.jobs.jobstore import JobStore
from ganeti.master.jobs.luxi_jobs import JobMethods
from ganeti.master.jobs.processor import JobHandle, Processor
from ganeti.master.locking.manager import LockManager
from ganeti.master.lu.base import LUContext
from ganeti.master.lu.hooks import HooksRunner
from ganeti.master.lu.hostnames import Resolver, SystemResolver
from ganeti.master.masteripsvc import MasterIpActivation
from ganeti.master.query.exportqueries import ExportQueries, rpc_list_exports
from ganeti.master.query.instancequeries import InstanceQueries, rpc_live_collector
from ganeti.master.query.networkqueries import NetworkQueries
from ganeti.master.query.nodequeries import NodeQueries
from ganeti.master.query.osqueries import OsQueries, rpc_diagnose
from ganeti.master.query.queries import ClusterQueries
from ganeti.master.watcherpause import WatcherPauseMethod
from ganeti.master.watchersvc import WatcherService, queue_job_access
from ganeti.master.wconfd import METHODS as WCONFD_METHODS
from ganeti.master.wconfd import WconfdDispatcher, WconfdMethods
from ganeti.rpc.client import RpcClient
from ganeti.rpc.noderpc import NodeRpc
from ganeti.rpc.tls import ClusterCertificate


class LuxiService(ListenService):
    """Listens on the LUXI socket (mode 0660, backlog :data:`LISTEN_BACKLOG`) from the
    start, so that a socket that cannot be made fails it; accepts connections once
    ``ready`` fires (:class:`ganeti.daemon.ListenService`)."""

    log = Logger()

    def __init__(self, reactor: Any, path: str, factory: LuxiServerFactory,
                 ready: Callable[[], defer.Deferred[None]] | None = None,
                 label: str = "LUXI") -> None:
        self.reactor = reactor
        self.path = path
        self.factory = factory
        self.label = label
        super().__init__(f"the {label} socket {path}", self._listen, announce=self._announce,
                         ready=ready, unix_path=path)

    def _listen(self) -> IListeningPort:
        fileutil.ensure_dirs([(os.path.dirname(self.path), 0o750)])
        # The job queue's flock (taken at recovery, which starts before this
        # service) already guarantees a single daemon; Twisted's PID lock would
        # count a killed predecessor that is still a zombie as alive, so a
        # stale socket is simply replaced.
        fileutil.remove_file(self.path)
        port: IListeningPort = self.reactor.listenUNIX(self.path, self.factory,
                                                       backlog=LISTEN_BACKLOG, mode=0o660)
        return port

    def _announce(self, port: IListeningPort) -> None:
        self.log.info("{label} listening on {path}", label=self.label, path=self.path)


class JobQueueService(service.Service):
    """Recovers the job store at start-up and restores the queue; closes it at the end."""

    def __init__(self, store: JobStore, queue: JobQueue) -> None:
        self.store = store
        self.queue = queue
        self._ready: defer.Deferred[None] = defer.Deferred()

    def startService(self) -> None:
        super().startService()
        recovered = self.store.recover(  # blocking, before anything is served
            lambda job_id, data: QueuedJob.from_dict(data, f"job-{job_id}"))
        d = defer.Deferred.fromCoroutine(self.queue.restore(recovered))
        d.chainDeferred(self._ready)

    def ready(self) -> defer.Deferred[None]:
        """Fires once the queue is restored (LUXI listens from then on)."""
        d: defer.Deferred[None] = defer.Deferred()

        def relay(result: Any) -> Any:
            if isinstance(result, Failure):
                d.errback(result)
            else:
                d.callback(None)
            return None  # handled: the waiter reports it

        self._ready.addBoth(relay)
        return d

    def stopService(self) -> Any:
        super().stopService()
        d = self.store.wait_idle()
        d.addBoth(lambda _: self.store.close())
        return d


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
    with configmod.gc_paused():
        loaded = configmod.load_with_text(paths.config_file)
        cfg = loaded.config
        cfg.__dict__["_cache_loaded"] = loaded  # the writer takes the text (configwriter)
        check_master(paths, cfg)
        unknown = configmod.unknown_keys(cfg)
    if unknown:
        Logger().warn("{path} has keys this version does not know (kept as they are): "
                      "{keys}", path=paths.config_file, keys=", ".join(unknown))
    return cfg


class MasterDaemon(DaemonService):
    """ganeti-masterd: log and SIGHUP -> thread pool -> config -> LUXI."""

    program = "ganeti-masterd"

    def __init__(self, reactor: Any, paths: Paths, cfg: ConfigData,
                 max_frame: int = constants.LUXI_MAX_FRAME, io_threads: int = 4,
                 run_blocking: BlockingRunner | None = None, durable: bool = True,
                 rpc: NodeRpc | None = None,
                 noded_port: int = constants.DEFAULT_NODED_PORT,
                 daemon_log: DaemonLog | None = None,
                 install_signal: SignalInstaller | None = None,
                 watcher_interval: float = 0.0,
                 process_exit: ProcessExit | None = None,
                 activate_master_ip: bool = False,
                 instance_events: bool = True,
                 resolver: Resolver | None = None,
                 allocators: TextRunner | None = None) -> None:
        """``run_blocking`` replaces the I/O thread pool (tests pass a synchronous one);
        ``rpc`` replaces the node RPC client (made from server.pem when first needed);
        ``install_signal`` installs the SIGHUP handler (none on fake reactors);
        ``process_exit`` is the real process's (:class:`ganeti.daemon.ProcessExit`);
        ``activate_master_ip``: bring the master IP up once started (the real daemon);
        ``instance_events`` False turns the instance event watch off (it runs only
        with the watcher service anyway); ``resolver`` replaces the system's host
        name resolution (tests resolve from a table of their own); ``allocators``
        replaces the runner of instance allocator programs (child processes of this
        reactor, the search path of Ganeti 3.0 as Debian builds it)."""
        super().__init__(reactor, daemon_log, install_signal, process_exit)
        self.paths = paths
        self.reactor = reactor
        self.noded_port = noded_port
        self.resolver: Resolver = resolver if resolver is not None else SystemResolver()
        self._rpc = rpc
        if run_blocking is None:
            pool = ThreadPool(minthreads=1, maxthreads=io_threads, name="masterd-io")
            ThreadPoolService(pool).setServiceParent(self)
            run_blocking = functools.partial(threads.deferToThreadPool, reactor, pool)
        self.run_blocking = run_blocking
        self.allocators: TextRunner | None = allocators if allocators is not None else \
            AllocatorRunner(reactor=reactor, clock=reactor, run_blocking=run_blocking,
                            tmp_dir=paths.data_dir)
        loaded = cfg.__dict__.pop("_cache_loaded", None)
        self.config_writer = ConfigWriter(paths.config_file, cfg, run_blocking, reactor,
                                          text=loaded.text if loaded else None,
                                          recovered=bool(loaded and (loaded.replayed
                                                                     or loaded.torn)),
                                          durable=durable)
        ConfigWriterService(self.config_writer).setServiceParent(self)
        self.hooks = HooksRunner(self.rpc, paths.data_dir)
        self.replicator = Replicator(self.rpc, lambda: self.config_writer.config, paths,
                                     reactor, run_blocking)
        self.config_writer.set_distributor(self.replicator.distribute_config)
        self.events = EventBus(reactor)
        # Keys as Ganeti's: node, group and network locks by UUID, instances by name
        # (the lock monitor shows the keys, as Ganeti's does).
        self.locks = LockManager(reactor, nodes=list(cfg.nodes),
                                 nodegroups=list(cfg.nodegroups),
                                 instances=[i.name for i in cfg.instances.values()],
                                 networks=list(cfg.networks))
        self.store = JobStore(paths, run_blocking, reactor, durable=durable)
        self.store.on_written = self.replicator.jobs_written

        def limits() -> tuple[int, int]:
            cl = self.config_writer.config.cluster
            return cl.max_running_jobs, cl.max_tracked_jobs

        self.reservations = ReservationManager()
        processor = Processor(self.locks, reactor, reservations=self.reservations)
        self.queue = JobQueue(self.store, self.events, reactor, processor,
                              self._lu_context, limits)
        self.filters = FilterMethods(self.config_writer, self.queue, reactor)
        self.node_queries = NodeQueries(lambda: self.config_writer.config, self._live_node_info)
        self.job_methods = JobMethods(self.queue, self.locks, self.events, reactor,
                                      self.node_queries, self.filters)
        self.instance_queries = InstanceQueries(lambda: self.config_writer.config,
                                                rpc_live_collector(self.rpc, target))
        for source in self.instance_queries.sources():
            self.job_methods.registry.register(source)
        self.job_methods.registry.register(
            NetworkQueries(lambda: self.config_writer.config).source())
        self.job_methods.registry.register(
            OsQueries(lambda: self.config_writer.config, rpc_diagnose(self.rpc)).source())
        self.job_methods.registry.register(
            ExportQueries(lambda: self.config_writer.config,
                          rpc_list_exports(self.rpc)).source())
        queue_service = JobQueueService(self.store, self.queue)
        queue_service.setServiceParent(self)
        queries = ClusterQueries(lambda: self.config_writer.config, paths, reactor)
        implementations = queries.implementations()
        implementations.update(self.job_methods.implementations())
        implementations.update(self.node_queries.implementations())
        implementations.update(self.filters.implementations())
        implementations.update(WatcherPauseMethod(
            lambda: self.config_writer.config, paths, self.rpc, run_blocking,
            durable=durable).implementations())
        implementations["SubscribeEvents"] = subscribe_events_method(self.events)
        dispatcher = LuxiDispatcher(implementations)
        self.luxi = LuxiService(reactor, paths.luxi_socket,
                                LuxiServerFactory(dispatcher, max_frame, clock=reactor),
                                queue_service.ready)
        self.luxi.setServiceParent(self)
        # Ganeti's WConfD socket: masterd holds that daemon's role (ganeti/master/wconfd.py)
        wconfd = WconfdMethods(self.locks, self.config_writer.redistribute, paths.queue_dir)
        self.wconfd = LuxiService(
            reactor, paths.wconfd_socket,
            LuxiServerFactory(WconfdDispatcher(wconfd.implementations(), WCONFD_METHODS),
                              max_frame, clock=reactor),
            queue_service.ready, label="WConfD")
        self.wconfd.setServiceParent(self)
        # last: it submits jobs like a client, so it starts after the listener and stops first
        self.watcher = WatcherService(
            reactor, paths, lambda: self.config_writer.config, self.job_methods.query,
            queue_job_access(self.queue, self.events, reactor), run_blocking,
            interval=watcher_interval)
        self.watcher.setServiceParent(self)
        self.instance_events = InstanceEventWatch(self.watcher, self.rpc,
                                                  enabled=instance_events,
                                                  ready=queue_service.ready)
        self.instance_events.setServiceParent(self)
        self.config_writer.add_listener(self.instance_events.config_changed)
        if activate_master_ip:  # as Ganeti's luxid: once started, failures only logged
            MasterIpActivation(reactor, lambda: self.config_writer.config,
                               self.rpc).setServiceParent(self)

    def rpc(self) -> NodeRpc:
        """The node RPC client, made on first use from DATA_DIR/server.pem."""
        if self._rpc is None:
            try:
                cluster = ClusterCertificate.from_file(self.paths.server_pem)
            except (OSError, ValueError, GenericError) as err:
                raise OpExecError(f"Cannot load the cluster certificate "
                                  f"{self.paths.server_pem}: {err}", ECODE_ENVIRON) from None
            # the calls' master-side encoders fill parameters from the config in force
            self._rpc = RpcClient(self.reactor, cluster, self.noded_port,
                                  config=lambda: self.config_writer.config)
        return self._rpc

    async def _live_node_info(self, nodes: list[Node]) -> dict[str, Any]:
        """node_info payloads by node UUID (None where a node did not answer)."""
        if not nodes:
            return {}
        try:
            rpc = self.rpc()
        except OpExecError as err:
            Logger().warn("No live node data: {error}", error=err)
            return {}
        results = await rpc.call([target(n) for n in nodes], "node_info", [])
        return {n.uuid: results[n.name].payload if results[n.name].success
                and isinstance(results[n.name].payload, dict) else None for n in nodes}

    def _job_texts(self) -> dict[int, str]:
        return {job_id: json.dumps(job.to_dict())
                for job_id, job in self.queue.visible.items()}

    def _lu_context(self, handle: JobHandle, job: QueuedJob) -> LUContext:
        return LUContext(config=self.config_writer, clock=self.reactor, locks=self.locks,
                         feedback=lambda kind, msg: self.queue.feedback(job, kind, msg),
                         query=self.job_methods.query,
                         query_fields=self.job_methods.query_fields,
                         owner=handle.owner, rpc=self.rpc, replicator=self.replicator,
                         run_blocking=self.run_blocking, job_texts=self._job_texts,
                         submit_jobs=self.queue.submit_many,
                         queue_health=self.store.health, hooks=self.hooks,
                         reservations=self.reservations, resolver=self.resolver,
                         allocators=self.allocators)
