"""Shared test helpers: a node root, a context and an in-memory HTTP exchange."""

import json
import os

from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, inline_runner
from ganeti.noded.backend.registry import handlers
from ganeti.noded.server import make_site


def loop_volume_group(testcase, prefix, volumes):
    """A real volume group ``<prefix><pid>`` on a 64 MiB loop device, with the inactive
    volumes ``volumes`` ({name: size such as "8M"}, created in order), removed after the
    test; ``(loop device, vg)``.  Skips unless root with lvm2 and losetup."""
    import shutil
    import subprocess

    sbin = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    if (os.geteuid() != 0 or not shutil.which("lvm", path=sbin)
            or not shutil.which("losetup", path=sbin)):
        testcase.skipTest("needs root, lvm2 and losetup")
    image = os.path.abspath(testcase.mktemp())
    with open(image, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    loop = subprocess.run(["losetup", "-f", "--show", image], check=True,
                          capture_output=True, text=True).stdout.strip()
    testcase.addCleanup(subprocess.run, ["losetup", "-d", loop], check=False)
    vg = f"{prefix}{os.getpid()}"
    env = dict(os.environ, LVM_SUPPRESS_FD_WARNINGS="1")

    def lvm(*args):
        subprocess.run(["lvm", *args], check=True, capture_output=True, env=env)

    lvm("pvcreate", "-ff", "-y", loop)
    testcase.addCleanup(subprocess.run, ["lvm", "pvremove", "-ff", "-y", loop],
                        check=False, capture_output=True, env=env)
    lvm("vgcreate", vg, loop)
    testcase.addCleanup(subprocess.run, ["lvm", "vgremove", "-f", vg], check=False,
                        capture_output=True, env=env)
    for name, size in volumes.items():
        lvm("lvcreate", "--driverloaded", "n", "-an", "-Zn", f"-L{size}", f"-n{name}", vg)
    return loop, vg


def node_paths(testcase, hostname="node1.example.com"):
    root = os.path.join(os.path.abspath(testcase.mktemp()), hostname)
    paths = Paths.for_node(root, hostname)
    for d in (paths.data_dir, paths.queue_dir, paths.conf_dir):
        os.makedirs(d)
    return paths


class MemoryNode:
    """A noded site fed raw HTTP over a StringTransport, with a Clock."""

    def __init__(self, paths, max_body=1024 * 1024, run=inline_runner, shutdown=None):
        self.clock = Clock()
        self.ctx = NodeContext(paths=paths, clock=self.clock, run=run, shutdown=shutdown)
        self.site = make_site(self.ctx, handlers(), max_body=max_body)

    def exchange(self, method, path, body=b"", advance=None):
        """Send one request; returns (status, decoded JSON body) of the reply."""
        proto = self.site.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        head = (f"{method} {path} HTTP/1.1\r\nHost: n\r\nContent-Length: {len(body)}\r\n\r\n")
        proto.dataReceived(head.encode() + body)
        if advance is not None:
            self.clock.advance(advance)
        raw = transport.value()
        proto.connectionLost(Failure(ConnectionDone()))
        if not raw:
            return None, None
        header, _, payload = raw.partition(b"\r\n\r\n")
        status = int(header.split(b" ", 2)[1])
        lines = header.split(b"\r\n")
        self.last_headers = {k.lower(): v for k, _, v in
                             (line.partition(b": ") for line in lines[1:])}
        if b"transfer-encoding: chunked" in header.lower():
            payload = _dechunk(payload)
        return status, json.loads(payload)

    def put(self, name, args, **kw):
        return self.exchange("PUT", "/" + name, json.dumps(args).encode(), **kw)


def _dechunk(data):
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return out
