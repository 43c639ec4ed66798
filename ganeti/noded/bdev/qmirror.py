"""The ``qemu`` mirror engine's daemon: one ``qemu-storage-daemon`` per mirrored disk.

Each node runs, per drbd disk, one ``qemu-storage-daemon`` (QSD) that opens the
disk's local data volume and serves it over NBD on ``local-ip:port`` (the
disk's DRBD port, Ganeti's layout: both nodes use the same port, each on its
own address).  Its node graph is::

    file "disk-file"  (the data volume: a file, or the PV holding an LV)
      raw "disk"      (offset/size: the LV's extents on its PV; none for a file)
        NBD export "disk", writable   (the local guest's, when primary)
        NBD export "peer", writable   (the peer's mirror's, when secondary;
                                       write-back unless ``peer_writethrough``)

With a metadata volume, ``disk`` is instead a qcow2 node whose metadata (and
persistent dirty bitmaps) live on the metadata volume and whose data file is
the data volume's raw node ``data`` (``data-file-raw``: the data volume stays
a plain raw image); a zeroed metadata volume is formatted on first start.

The daemon is started through the node's child processes
(:mod:`ganeti.noded.procs`) with ``--daemonize``: the child ends when the
daemon is ready (or fails, with QEMU's reason), and the daemon itself lives on
in its own session, outside the child's process group, so a noded restart
does not end it.  Its pid file and QMP socket are under the node's run
directory (``RUN_DIR/qmirror/<name>.pid`` and ``.qmp``); :meth:`MirrorDaemon.start`
re-finds a running daemon by its pid file and reconnects to it rather than
starting another.  The roles, the mirror job and the resync are in
:mod:`.qmirror_roles`.

QSD runs one NBD server per process, so the exports share the TCP listener
(a migration target serves its peer's mirror and the incoming guest at once);
the guest-facing export is reached on the node's own address, not a UNIX
socket (docs/design/block-devices.md, "The qemu mirror engine").
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime, IReactorUNIX
from twisted.logger import Logger

from ganeti.noded.bdev import qmp
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.procs import ChildProcesses

log = Logger()

#: Seconds the daemon may take to start (it opens files and binds a port).
START_TIMEOUT = 30.0
#: The export every daemon serves (the peer's mirror and the guest open it by name).
EXPORT = "disk"
#: The export the peer's mirror writes into (write-through: see the module docstring).
PEER_EXPORT = "peer"
#: The node the export serves.
DISK_NODE = "disk"


def _program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BlockDeviceError(f"{name} is not installed (not found on PATH)")
    return os.path.abspath(path)


def qsd_program() -> str:
    """The ``qemu-storage-daemon`` program on the daemon's PATH."""
    return _program("qemu-storage-daemon")


def qemu_io_program() -> str:
    """The ``qemu-io`` program on the daemon's PATH (flushes the peer's export)."""
    return _program("qemu-io")


@dataclass(frozen=True)
class Volume:
    """Where a disk's data is: ``path`` (a file or block device), and for a logical
    volume reached through its physical volume, its byte ``offset`` and ``size``."""

    path: str
    offset: int = 0
    size: int | None = None

    def nodes(self, name: str) -> list[dict[str, Any]]:
        """The protocol node ``<name>-file`` (QEMU's ``file`` driver, ``host_device``
        for a block device: a volume's physical volume, a loop device) and the raw
        node ``name`` over it."""
        try:
            block = stat.S_ISBLK(os.stat(self.path).st_mode)
        except OSError:
            block = False  # QEMU says what is wrong with it
        file_node: dict[str, Any] = {
            "driver": "host_device" if block else "file", "filename": self.path,
            "node-name": f"{name}-file", "aio": "threads", "cache": {"direct": False}}
        if self.offset or self.size is not None:
            # a range of a physical volume that other volumes share (the data and the
            # metadata of one disk, among others): QEMU's image locks are on the whole
            # file and would refuse the second range; each range has one user, this
            # daemon
            file_node["locking"] = "off"
        raw: dict[str, Any] = {"driver": "raw", "file": f"{name}-file", "node-name": name}
        if self.offset:
            raw["offset"] = self.offset
        if self.size is not None:
            raw["size"] = self.size
        return [file_node, raw]

    def head(self, length: int = 4096) -> bytes:
        """The first bytes of the volume (a small read: is it formatted?)."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read(length)


def export_args(node: str, name: str = EXPORT, writethrough: bool = False
                ) -> dict[str, Any]:
    """``block-export-add`` of the writable NBD export ``name`` on ``node``."""
    return {"type": "nbd", "id": name, "node-name": node, "name": name, "writable": True,
            "writethrough": writethrough}


def daemon_dir(run_dir: str) -> str:
    """The directory of the mirror daemons' pid files and QMP sockets."""
    return os.path.join(run_dir, "qmirror")


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running qemu-storage-daemon."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(argv0) == b"qemu-storage-daemon"


def running_pid(pidfile: str) -> int | None:
    """The pid in ``pidfile`` if it is a running qemu-storage-daemon, else None."""
    try:
        with open(pidfile, encoding="ascii") as f:
            pid = int(f.read().strip() or 0)
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and _alive(pid) else None


EventListener = Callable[[str, dict[str, Any]], None]


class MirrorDaemon:
    """One disk's QSD on this node: started or re-found, its QMP connection, its events.

    ``name`` identifies the disk on the node (its minor, or a test's name);
    ``local_ip``/``port`` the NBD listener.
    """

    def __init__(self, reactor: IReactorUNIX, clock: IReactorTime, children: ChildProcesses,
                 run_dir: str, name: str, volume: Volume, local_ip: str, port: int,
                 meta: Volume | None = None, peer_writethrough: bool = False,
                 prefix: Sequence[str] = ()) -> None:
        self.reactor = reactor
        self.clock = clock
        self.children = children
        self.dir = daemon_dir(run_dir)
        self.name = name
        self.volume = volume
        self.meta = meta
        self.peer_writethrough = peer_writethrough
        #: runs the programs as on the node (a test's or bench's network namespace:
        #: ``ip netns exec NS``); the first word an absolute path
        self.prefix = list(prefix)
        self.local_ip = local_ip
        self.port = port
        self.qmp: qmp.QMPProtocol | None = None
        self.listeners: list[EventListener] = []

    @property
    def pidfile(self) -> str:
        """The daemon's pid file."""
        return os.path.join(self.dir, f"{self.name}.pid")

    @property
    def qmp_socket(self) -> str:
        """The daemon's QMP socket."""
        return os.path.join(self.dir, f"{self.name}.qmp")

    def pid(self) -> int | None:
        """The running daemon's pid, from its pid file; None if it does not run."""
        return running_pid(self.pidfile)

    def argv(self) -> list[str]:
        """The daemon's command line.  Without a metadata volume the data volume's raw
        node is ``disk`` and exported at once; with one, :meth:`start` opens the qcow2
        ``disk`` node over both and exports it."""
        data_name = DISK_NODE if self.meta is None else "data"
        argv = [*self.prefix, qsd_program(), "--daemonize", "--pidfile", self.pidfile,
                "--chardev", f"socket,id=qmp,path={self.qmp_socket},server=on,wait=off",
                "--monitor", "chardev=qmp"]
        for node in self.volume.nodes(data_name) + (self.meta.nodes("meta") if self.meta
                                                     else []):
            argv += ["--blockdev", json.dumps(node)]
        server = {"addr": {"type": "inet", "host": self.local_ip, "port": str(self.port)}}
        argv += ["--nbd-server", json.dumps(server)]
        if self.meta is None:
            argv += ["--export", json.dumps(export_args(DISK_NODE)),
                     "--export", json.dumps(self.peer_export())]
        return argv

    def peer_export(self) -> dict[str, Any]:
        """The export the peer's mirror writes into."""
        return export_args(DISK_NODE, PEER_EXPORT, self.peer_writethrough)

    async def start(self) -> bool:
        """Make sure the daemon runs and QMP is connected; True if it was started now,
        False if a running one was re-found."""
        started = False
        if self.pid() is None:
            os.makedirs(self.dir, exist_ok=True)
            for stale in (self.pidfile, self.qmp_socket):
                if os.path.lexists(stale):
                    os.unlink(stale)
            out = await self.children.run(self.argv(), timeout=START_TIMEOUT,
                                          merge_stderr=True)
            if not out.ok:
                text = out.stdout.decode("utf-8", "replace").strip()
                raise BlockDeviceError(f"Cannot start the mirror daemon of {self.name}: "
                                       f"{text or out.reason()}")
            started = True
        await self.connect()
        if started and self.meta is not None:
            await self._open_qcow2()
        return started

    async def _open_qcow2(self) -> None:
        """Open ``disk``: a qcow2 image on the metadata volume whose data file is the
        data volume (``data-file-raw``: the data stays a plain raw image); a zeroed
        metadata volume is formatted first (a new disk)."""
        assert self.meta is not None
        node = {"driver": "qcow2", "node-name": DISK_NODE, "file": "meta",
                "data-file": "data"}
        try:
            await self.execute("blockdev-add", node)
        except BlockDeviceError:
            if any(self.meta.head()):
                raise BlockDeviceError(f"The metadata volume of {self.name} holds data "
                                       "that is not its qcow2 metadata; refusing to "
                                       "format it") from None
            await self._format()
            await self.execute("blockdev-add", node)
        await self.execute("block-export-add", export_args(DISK_NODE))
        await self.execute("block-export-add", self.peer_export())

    async def _format(self) -> None:
        assert self.meta is not None
        info = await self.execute("query-named-block-nodes", {"flat": True})
        size = next(int(n["image"]["virtual-size"]) for n in info
                    if n.get("node-name") == "data")
        job = f"format-{self.name}"
        done = self.wait_event(lambda name, data: name == "JOB_STATUS_CHANGE"
                               and data.get("id") == job
                               and data.get("status") == "concluded", START_TIMEOUT)
        await self.execute("blockdev-create", {"job-id": job, "options": {
            "driver": "qcow2", "file": "meta", "size": size, "data-file": "data",
            "data-file-raw": True, "preallocation": "metadata", "cluster-size": 65536}})
        await done
        jobs = await self.execute("query-jobs")
        error = next((j.get("error") for j in jobs if j.get("id") == job), None)
        await self.execute("job-dismiss", {"id": job})
        if error:
            raise BlockDeviceError(f"Cannot format the metadata volume of {self.name}: "
                                   f"{error}")

    async def connect(self) -> qmp.QMPProtocol:
        """The QMP connection, (re)made if needed."""
        if self.qmp is not None and self.qmp.connected_:
            return self.qmp
        try:
            conn = await qmp.connect(self.reactor, self.clock, self.qmp_socket)
        except (OSError, qmp.QMPTimeout, qmp.QMPDisconnected, qmp.QMPError) as err:
            raise BlockDeviceError(f"Cannot reach the mirror daemon of {self.name}: "
                                   f"{err}") from None
        except Exception as err:  # the endpoint's ConnectError family
            raise BlockDeviceError(f"Cannot reach the mirror daemon of {self.name}: "
                                   f"{err}") from None
        conn.listeners.append(self._event)
        self.qmp = conn
        return conn

    def _event(self, name: str, data: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(name, data)

    async def execute(self, command: str, arguments: dict[str, Any] | None = None,
                      timeout: float | None = None) -> Any:
        """Run a QMP command; QEMU's errors become BlockDeviceError."""
        conn = await self.connect()
        try:
            return await conn.execute(command, arguments, timeout)
        except (qmp.QMPError, qmp.QMPTimeout, qmp.QMPDisconnected) as err:
            raise BlockDeviceError(f"Mirror daemon of {self.name}: {err}") from None

    def wait_event(self, match: Callable[[str, dict[str, Any]], bool],
                   timeout: float) -> defer.Deferred[dict[str, Any]]:
        """A Deferred of the data of the first event ``match`` accepts (register it
        before the command that causes the event); fails with QMPTimeout."""
        def forget(_: defer.Deferred[dict[str, Any]]) -> None:
            if listener in self.listeners:
                self.listeners.remove(listener)
        d: defer.Deferred[dict[str, Any]] = defer.Deferred(forget)

        def listener(name: str, data: dict[str, Any]) -> None:
            if match(name, data) and not d.called:
                self.listeners.remove(listener)
                d.callback(data)

        self.listeners.append(listener)

        def expired(result: object, limit: float) -> dict[str, Any]:
            raise qmp.QMPTimeout(f"mirror daemon of {self.name}: no event in {limit:g} s")
        return d.addTimeout(timeout, self.clock, onTimeoutCancel=expired)

    async def stop(self) -> None:
        """End the daemon (QMP ``quit``) and wait until its connection closes; safe if
        it does not run."""
        if self.pid() is None:
            self._forget()
            return
        conn = await self.connect()
        lost = conn.lost
        try:
            await conn.execute("quit")
        except (qmp.QMPDisconnected, qmp.QMPError):
            pass
        await lost.addTimeout(START_TIMEOUT, self.clock)
        self._forget()

    def _forget(self) -> None:
        self.qmp = None
        for stale in (self.pidfile, self.qmp_socket):
            if os.path.lexists(stale):
                try:
                    os.unlink(stale)
                except OSError:
                    pass


#: Seconds the file export's NBD client waits for the guest-facing export to come
#: back (a resync's last round closes it while no guest uses it).
FILE_RECONNECT_DELAY = 30


class FileExport:
    """A disk served as a regular file to programs on its primary node (OS scripts).

    A second, short-lived qemu-storage-daemon opens the disk's guest-facing export
    over NBD, as a guest does, so what is written there goes through the mirror
    (both sides have it when the write returns), and serves it as a file with QEMU's
    FUSE export.  (The disk daemon cannot serve the file itself: a writable FUSE export
    takes the resize permission, which the mirror job does not share.)  Its pid file
    and mount point are beside the disk daemon's; :meth:`start` first ends one a
    crashed caller left.
    """

    def __init__(self, daemon: MirrorDaemon) -> None:
        self.daemon = daemon
        self.pidfile = os.path.join(daemon.dir, f"{daemon.name}.file.pid")
        self.mountpoint = os.path.join(daemon.dir, f"{daemon.name}.file")

    def pid(self) -> int | None:
        """The running file daemon's pid, None if there is none."""
        return running_pid(self.pidfile)

    def argv(self) -> list[str]:
        d = self.daemon
        client = {"driver": "nbd", "node-name": "nbd", "export": EXPORT,
                  "server": {"type": "inet", "host": d.local_ip, "port": str(d.port)},
                  "reconnect-delay": FILE_RECONNECT_DELAY}
        fuse = {"type": "fuse", "id": "file", "node-name": "nbd",
                "mountpoint": self.mountpoint, "writable": True}
        return [*d.prefix, qsd_program(), "--daemonize", "--pidfile", self.pidfile,
                "--blockdev", json.dumps(client), "--export", json.dumps(fuse)]

    async def start(self) -> str:
        """Serve the file; its path as this process opens it (``/proc/<pid>/root/...``:
        the daemon may be in another mount namespace, as a test's node is)."""
        await self.stop()
        os.makedirs(self.daemon.dir, exist_ok=True)
        with open(self.mountpoint, "a"):  # FUSE mounts over a regular file
            pass
        out = await self.daemon.children.run(self.argv(), timeout=START_TIMEOUT,
                                             merge_stderr=True)
        pid = self.pid()
        if not out.ok or pid is None:
            text = out.stdout.decode("utf-8", "replace").strip()
            raise BlockDeviceError(f"Cannot serve {self.daemon.name} as a file: "
                                   f"{text or out.reason()}")
        return f"/proc/{pid}/root{self.mountpoint}"

    async def stop(self) -> None:
        """End the file daemon (SIGTERM: it flushes, unmounts and closes) and wait for
        it; safe if there is none."""
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            waited = 0.0
            while _alive(pid):
                if waited > START_TIMEOUT:
                    raise BlockDeviceError(f"The file export of {self.daemon.name} does "
                                           f"not end (pid {pid})")
                await task.deferLater(self.daemon.clock, 0.05, lambda: None)
                waited += 0.05
        for stale in (self.pidfile, self.mountpoint):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass


# --- the drbd engine's addresses (the qemu engine of the drbd device, .qmirror_drbd;
# here so that the hypervisor can find a guest's export without the device code) ---

ENGINE = "qemu"
#: The daemon's NBD port is the resource's port plus this (the handshake has the port).
NBD_PORT_OFFSET = 10000


def nbd_port(port: int) -> int:
    """The NBD port of a resource whose DRBD port is ``port``."""
    if not 0 < port + NBD_PORT_OFFSET < 65536:
        raise BlockDeviceError(f"port {port} leaves no room for the mirror's NBD port")
    return port + NBD_PORT_OFFSET


def is_qemu(dynamic_params: Mapping[str, Any]) -> bool:
    """Whether a disk's dynamic parameters ask for this engine."""
    return dynamic_params.get("mirror") == ENGINE


def guest_nbd(disk: Mapping[str, Any]) -> tuple[str, str, int]:
    """(export, host, port) the guest opens on this node, from the disk dict (its
    port in ``logical_id``, this node's address in its dynamic parameters)."""
    lid = disk.get("logical_id")
    dyn = disk.get("dynamic_params") or {}
    port = lid[2] if isinstance(lid, list) and len(lid) == 6 else None
    host = dyn.get("local-ip") if isinstance(dyn, Mapping) else None
    if not isinstance(port, int) or isinstance(port, bool) or not host:
        raise BlockDeviceError("drbd disk without its network parameters (port, "
                               "local-ip)")
    return EXPORT, str(host), nbd_port(port)
