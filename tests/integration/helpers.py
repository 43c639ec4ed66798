"""Running real daemons and tools on a virtual cluster in a temporary directory."""

from __future__ import annotations

import fcntl
import os
import random
import socket
import subprocess
import sys

from ganeti.cli import daemons
from ganeti.core import constants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(os.path.abspath(sys.executable))
VCLUSTER = os.path.join(BIN, "ganeti-vcluster")
DEBIAN_GNT_CLUSTER = "/usr/share/ganeti/3.0/gnt-cluster"


def run(argv, env=None, timeout=120, check=True):
    """Run a command; returns CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def node_env(directory, node="node1.vcluster.test"):
    """GANETI_ROOTDIR/GANETI_HOSTNAME of a virtual node, plus our tools on PATH."""
    return {"GANETI_ROOTDIR": os.path.join(directory, node), "GANETI_HOSTNAME": node,
            "PATH": BIN + ":" + os.environ.get("PATH", "")}


def rss(pid):
    """Resident set size of a process, in bytes (VmRSS)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


#: One lock file per 127.0.<x>. range: a test process holds an flock on each range it
#: was given (until :func:`release_ip_base` or its exit), so that the pytest processes
#: of a run (xdist workers and the one beside them) never pick the same range, also
#: for a cluster that is not listening at the moment one of them looks (a stopped
#: one, or test_daemon_startup's, whose ports the test itself takes).
#: Machine-wide, whatever TMPDIR a test process has (`make unit` gives the integration
#: tests a tmpfs of their own, the oracle's process the system's).
IP_LOCK_DIR = "/tmp/ganeti-test-ip-bases"
_held_ip_bases: dict[str, int] = {}


def free_ip_base(nodes=1, rng=random):
    """A random ``127.0.<2..250>.`` --ip-base reserved for this process whose first
    ``nodes`` addresses have port 1811 free, so that test clusters do not clash with
    each other or with a running demo (which uses 127.0.1.)."""
    os.makedirs(IP_LOCK_DIR, exist_ok=True)
    thirds = list(range(2, 251))
    rng.shuffle(thirds)
    for third in thirds:
        base = f"127.0.{third}."
        if base in _held_ip_bases:
            continue
        fd = os.open(os.path.join(IP_LOCK_DIR, str(third)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another test process has it
            os.close(fd)
            continue
        try:
            for k in range(1, nodes + 1):
                daemons.check_address_free(f"{base}{k}", constants.DEFAULT_NODED_PORT)
        except daemons.AddressInUse:
            os.close(fd)
            continue
        _held_ip_bases[base] = fd
        return base
    raise AssertionError("no free 127.0.x. address range for a virtual cluster")


def release_ip_base(base):
    """Give a range :func:`free_ip_base` reserved back (its cluster is gone)."""
    fd = _held_ip_bases.pop(base, None)
    if fd is not None:
        os.close(fd)  # and with it the flock


def raw_luxi(path, payload, timeout=10.0, until_eof=False):
    """Send raw bytes to a LUXI socket; return (bytes received, whether the server closed).

    Reads until there is one reply per request sent, or (``until_eof``) until EOF.
    """
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    try:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close before reading everything; read its answer
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return data, True
            data += chunk
            if (not until_eof and data.endswith(b"\x03")
                    and data.count(b"\x03") >= payload.count(b"\x03")):
                return data, False
    finally:
        s.close()
