"""Two "nodes" of the qemu mirror engine on loopback addresses, files as volumes."""

import os
import shutil
import signal
import socket
import tempfile

from twisted.internet import defer, reactor

from ganeti.noded.bdev.qmirror import MirrorDaemon, Volume
from ganeti.noded.bdev.qmirror_roles import QemuMirror
from ganeti.noded.procs import ChildProcesses

MIB = 1024 * 1024
IPS = ("127.0.31.1", "127.0.31.2")


def free_port(ips=IPS):
    """A TCP port free on both addresses (the mirror's port is the same on both sides)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((ips[0], 0))
            port = s.getsockname()[1]
        with socket.socket() as s:
            try:
                s.bind((ips[1], port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port")


def program(name):
    return os.path.abspath(shutil.which(name))


class MirrorPair:
    """Node A (primary to be) and node B, each with a data file of ``size`` bytes."""

    def __init__(self, testcase, size=64 * MIB, name="d0", offset=0, meta=False):
        # UNIX socket paths must stay below 108 bytes: a short base, not mktemp()'s
        base = tempfile.mkdtemp(prefix="qm", dir="/tmp")
        testcase.addCleanup(shutil.rmtree, base, True)
        self.children = ChildProcesses(reactor, reactor)
        self.port = free_port()
        self.files = []
        self.daemons = []
        for i, ip in enumerate(IPS):
            root = os.path.join(base, f"node{i}")
            os.makedirs(root)
            path = os.path.join(root, "data.img")
            with open(path, "wb") as f:
                f.truncate(offset + size + offset)  # a "PV" with room on both ends
            self.files.append(path)
            meta_volume = None
            if meta:
                meta_path = os.path.join(root, "meta.img")
                with open(meta_path, "wb") as f:
                    f.truncate(128 * MIB)
                meta_volume = Volume(meta_path)
            self.daemons.append(MirrorDaemon(reactor, reactor, self.children,
                                             os.path.join(root, "run"), name,
                                             Volume(path, offset, size if offset else None),
                                             ip, self.port, meta=meta_volume))
        self.mirrors = [QemuMirror(d) for d in self.daemons]
        testcase.addCleanup(self.kill_all)

    def new_daemon(self, i):
        """Another object for node ``i``'s daemon (a restarted noded)."""
        old = self.daemons[i]
        return MirrorDaemon(reactor, reactor, self.children, os.path.dirname(old.dir),
                            old.name, old.volume, old.local_ip, old.port, meta=old.meta)

    def kill(self, i):
        """SIGKILL node ``i``'s daemon; a Deferred that fires once it has died (its QMP
        connection closed)."""
        d = self.daemons[i]
        lost = d.qmp.lost if d.qmp is not None and d.qmp.connected_ else defer.succeed(None)
        pid = d.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        return lost

    def kill_all(self):
        """Kill both daemons and end every child; fires once all have ended (a test
        must not leave a process, or its timers, behind)."""
        for m in self.mirrors:
            m.close()
        waits = []
        for i in range(len(self.daemons)):
            d = self.daemons[i]
            if d.qmp is not None:
                d.qmp.close()
            waits.append(self.kill(i))
        waits.append(self.children.stop_all())
        return defer.gatherResults(waits)

    async def io(self, i, *commands):
        """Run ``qemu-io`` commands against node ``i``'s export; the outcome."""
        argv = [program("qemu-io"), "-f", "raw"]
        for c in commands:
            argv += ["-c", c]
        argv.append(f"nbd://{IPS[i]}:{self.port}/disk")
        return await self.children.run(argv, timeout=60)

    def read(self, i, offset, length):
        with open(self.files[i], "rb") as f:
            f.seek(offset)
            return f.read(length)
