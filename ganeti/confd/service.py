"""The service tree of ganeti-confd: config watcher and UDP listener.

:class:`ConfigWatcher` polls a cheap ``os.stat`` of DATA_DIR/config.data and
DATA_DIR/hmac.key every second; when either changed it loads both in a thread
and swaps the protocol's key and answerer on the reactor thread. Datagrams are
handled on that thread too and read both attributes once on arrival, so every
request is answered wholly from the old snapshot or wholly from the new one.

A reload costs time in proportion to the config (about 1.5 s of CPU for a
22 MB config of 20,000 instances), and the master may change the config many
times a second.  After a load that took T seconds the watcher waits
:data:`RELOAD_HOLDOFF` x T before the next one, so confd spends at most about
a tenth of a CPU on reloading however busy the master is: a small config
(milliseconds to load) is still followed within the poll interval, a huge one
lags by a few seconds at most.  SIGHUP reloads at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.application import service
from twisted.internet import defer, task
from twisted.internet.interfaces import IListeningPort, IReactorTime
from twisted.logger import Logger

from ganeti.confd.server import ConfdAnswerer, ConfdProtocol
from ganeti.core import config, serializer
from ganeti.core.errors import GenericError
from ganeti.core.paths import Paths
from ganeti.daemon import DaemonLog, DaemonService, ListenService, ProcessExit, SignalInstaller

log = Logger()

#: Wait this many times the duration of the last load before loading again.
RELOAD_HOLDOFF = 10.0

StatKey = tuple[tuple[int, int, int], tuple[int, int, int]]
Runner = Callable[[Callable[[], Any]], "defer.Deferred[Any]"]


@dataclass(frozen=True)
class Snapshot:
    """One loaded config with its key and the answerer built from them."""

    answerer: ConfdAnswerer
    key: bytes
    candidate: bool
    why_not: str


def _stat(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1, -1)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def candidate_status(answerer: ConfdAnswerer, hostname: str | None) -> tuple[bool, str]:
    """Whether this node may serve confd, and if not, why."""
    node = answerer.nodes_by_name.get(hostname or "")
    if node is None:
        return False, f"this node ({hostname}) is not in the cluster config"
    if node.master_candidate or node.uuid == answerer.cfg.cluster.master_node:
        return True, ""
    return False, f"this node ({hostname}) is not a master candidate"


def load_snapshot(paths: Paths) -> Snapshot:
    """Read config.data and hmac.key and index them (blocking; run in a thread)."""
    try:
        with open(paths.config_file, "rb") as f:
            text = f.read()
        with open(paths.hmac_key, "rb") as f:
            key = f.read()  # raw bytes, newline included, as Ganeti uses them
    except OSError as err:
        raise GenericError(f"cannot read {err.filename}: {err.strerror}") from err
    if not key.strip():
        raise GenericError(f"the confd key {paths.hmac_key} is empty")
    try:
        raw = serializer.load_json(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise GenericError(f"config {paths.config_file} is not JSON: {err}") from err
    answerer = ConfdAnswerer(config.parse(raw), raw)
    ok, why = candidate_status(answerer, paths.hostname)
    return Snapshot(answerer, key, ok, why)


def _in_thread(func: Callable[[], Any]) -> defer.Deferred[Any]:
    from twisted.internet import threads
    return threads.deferToThread(func)


class ConfigWatcher(service.Service):
    """Reloads the config when its file changes and swaps it into the protocol."""

    def __init__(self, paths: Paths, protocol: ConfdProtocol, clock: IReactorTime,
                 run: Runner = _in_thread, interval: float = 1.0) -> None:
        self.paths = paths
        self.protocol = protocol
        self.clock = clock
        self.run = run
        self.interval = interval
        self._seen: StatKey | None = None
        self._loading = False
        self._loop: task.LoopingCall | None = None
        self._not_before = 0.0  # no reload before this time (see RELOAD_HOLDOFF)
        self.loads = 0

    def stat_key(self) -> StatKey:
        """Cheap change detector: (mtime_ns, size, inode) of config and key."""
        return (_stat(self.paths.config_file), _stat(self.paths.hmac_key))

    def install(self, snap: Snapshot) -> None:
        """Make ``snap`` current (or stop answering if this node may not serve)."""
        if not snap.candidate:
            if self.protocol.answerer is not None:
                log.warn("Not answering confd queries: {why}", why=snap.why_not)
            self.protocol.answerer = None
            return
        self.protocol.key = snap.key
        self.protocol.answerer = snap.answerer
        self.loads += 1
        log.info("Loaded config serial {serial} (version {version})",
                 serial=snap.answerer.serial, version=snap.answerer.version)

    def check(self) -> defer.Deferred[None] | None:
        """One poll: reload in a thread if the files changed since the last load."""
        if self._loading or self.clock.seconds() < self._not_before:
            return None
        current = self.stat_key()
        if current == self._seen:
            return None
        self._loading = True
        started = self.clock.seconds()
        d = self.run(lambda: load_snapshot(self.paths))

        def loaded(snap: Snapshot) -> None:
            self._seen = current
            self.install(snap)

        def failed(failure: Any) -> None:
            # Remember the state so a broken file is logged once, not every second.
            self._seen = current
            if current[0][0] == -1 and self.protocol.answerer is not None:
                # config.data is gone: the node was demoted (Ganeti's DemoteFromMC
                # removes it) or left the cluster; its last copy is no longer kept
                # up to date, so answering from it would spread stale data.
                log.warn("{path} was removed; not answering confd queries",
                         path=self.paths.config_file)
                self.protocol.answerer = None
                return
            log.error("Cannot load the config; keeping the previous one: {error}",
                      error=failure.getErrorMessage())

        def done(_: Any) -> None:
            self._loading = False
            now = self.clock.seconds()
            self._not_before = now + RELOAD_HOLDOFF * max(now - started, 0.0)

        d.addCallbacks(loaded, failed)
        d.addBoth(done)
        return d

    def force_check(self) -> defer.Deferred[None] | None:
        """Reload now even if the files look unchanged (SIGHUP), unless a load runs."""
        if not self._loading:
            self._seen = None
            self._not_before = 0.0
        return self.check()

    def startService(self) -> None:
        super().startService()
        self._loop = task.LoopingCall(self.check)
        self._loop.clock = self.clock
        self._loop.start(self.interval, now=True)

    def stopService(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        super().stopService()


class ConfdDaemon(DaemonService):
    """Log and SIGHUP hooks, config watcher and the UDP listener (:mod:`ganeti.daemon`).

    SIGHUP reopens the log files and re-reads the config and key at once.  A
    port that cannot be bound fails the start.
    """

    program = "ganeti-confd"

    def __init__(self, reactor: Any, paths: Paths, protocol: ConfdProtocol, port: int,
                 bind: str, first: Snapshot | None = None,
                 daemon_log: DaemonLog | None = None,
                 install_signal: SignalInstaller | None = None,
                 process_exit: ProcessExit | None = None) -> None:
        super().__init__(reactor, daemon_log, install_signal, process_exit)
        self.protocol = protocol
        self.port = port
        self.bind = bind
        self.watcher = ConfigWatcher(paths, protocol, reactor)
        self.watcher.setServiceParent(self)
        self.reloader.add_hook("re-read the config", self.watcher.force_check)
        if first is not None:
            self.watcher.install(first)
            self.watcher._seen = self.watcher.stat_key()
        self.listener = ListenService(
            f"{bind}:{port} (UDP)",
            lambda: reactor.listenUDP(port, protocol, interface=bind, maxPacketSize=65536),
            announce=self._listening)
        self.listener.setServiceParent(self)

    @property
    def listening(self) -> IListeningPort | None:
        """The UDP port while listening."""
        return self.listener.port

    def _listening(self, port: IListeningPort) -> None:
        _enlarge_receive_buffer(port)
        log.info("ganeti-confd listening on {bind}:{port} (UDP)", bind=self.bind,
                 port=self.port)


#: Bytes of kernel receive buffer asked for: bursts of queries wait there while
#: the reactor is busy instead of being dropped (the kernel may grant less).
RECEIVE_BUFFER = 4 * 1024 * 1024


def _enlarge_receive_buffer(port: Any) -> None:
    """Ask for a larger UDP receive buffer; keep the default if the kernel refuses."""
    handle = getattr(port, "getHandle", None)
    if handle is None:
        return
    try:
        handle().setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    except OSError as err:
        log.warn("Cannot enlarge the UDP receive buffer: {error}", error=err)
