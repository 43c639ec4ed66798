"""Real Ganeti 3.0 daemons as an oracle: Debian's Haskell ``ganeti-luxid``.

``make install-oracle`` (part of ``make test``) downloads ``ganeti-haskell-3.0``
with ``apt-get download`` and unpacks it into ``.cache/ganeti-haskell/root``;
nothing is installed system-wide except the libraries the binaries link
against and Ganeti's system users (see the Makefile).  The binaries are
never committed.

What the real luxid needs to serve queries for a node root copied from one of
ours (found by running it, see the Makefile and ``test_real_luxid``):

* ``GANETI_ROOTDIR``/``GANETI_HOSTNAME`` as for our daemons, the root's
  basename being the host name, and ``-f --no-user-checks``;
* ``--no-voting --yes-do-it``: otherwise it asks every node's ``ganeti-noded``
  to vote on the master, and with no node daemon it waits forever;
* the directory ``var/run/ganeti/livelocks`` (it exits without it);
* the system users and groups of ``users-setup`` (gnt-masterd, gnt-daemons,
  ...), even with ``--no-user-checks``: it looks them up at startup and
  chowns its socket to them, so it must run as root;
* no ``ganeti-wconfd``: luxid reads ``config.data`` itself for queries.

At startup it also asks the node daemon at each node's primary IP, port 1811,
to activate the master IP; the virtual clusters use loopback addresses only,
where nothing answers, so that call just fails and is logged.
"""

from __future__ import annotations

import errno
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

from tests.integration.helpers import ROOT

ORACLE_ROOT = os.environ.get("GANETI_ORACLE_ROOT",
                             os.path.join(ROOT, ".cache", "ganeti-haskell", "root"))
SBIN = os.path.join(ORACLE_ROOT, "usr", "lib", "ganeti", "3.0", "usr", "sbin")
LUXID = os.path.join(SBIN, "ganeti-luxid")
# What luxid looks up at startup (the users and groups Ganeti's users-setup creates).
USERS = ("gnt-masterd", "gnt-confd", "gnt-metad", "gnt-rapi")
GROUPS = ("gnt-admin", "gnt-confd", "gnt-daemons", "gnt-luxid", "gnt-masterd", "gnt-metad",
          "gnt-rapi")
ETX = b"\x03"
LUXI_VERSION = 3000000


def unavailable() -> str | None:
    """Why the real luxid cannot run here (a skip reason), or None."""
    if not os.access(LUXID, os.X_OK):
        return (f"the real ganeti-luxid is not unpacked at {LUXID}; "
                "'make install-oracle' (part of 'make test') downloads it")
    if os.geteuid() != 0:
        return "the real ganeti-luxid chowns its socket to gnt-masterd, so it needs root"
    missing = []
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            missing.append(user)
    for group in GROUPS:
        try:
            grp.getgrnam(group)
        except KeyError:
            missing.append(group)
    if missing:
        return (f"Ganeti's system users/groups are missing ({', '.join(missing)}); "
                "'make install-oracle' creates them with Ganeti's users-setup")
    return None


def copy_node_root(src: str, parent: str) -> str:
    """Copy a node's root directory (minus sockets and pid files) under ``parent``.

    The copy keeps the node's name as its basename, as GANETI_ROOTDIR requires.
    """
    dst = os.path.join(parent, os.path.basename(src))

    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if n.endswith(".pid")
                or os.path.basename(directory) == "socket"]

    shutil.copytree(src, dst, ignore=ignore)
    os.makedirs(os.path.join(dst, "var", "run", "ganeti", "livelocks"), exist_ok=True)
    os.makedirs(os.path.join(dst, "var", "run", "ganeti", "socket"), exist_ok=True)
    return dst


def luxi_call(path: str, method: str, args: list, timeout: float = 10.0) -> bytes:
    """One raw LUXI request; returns the response frame without its ETX."""
    request = json.dumps({"method": method, "args": args, "version": LUXI_VERSION})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(request.encode("utf-8") + ETX)
        data = b""
        while not data.endswith(ETX):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{path}: closed after {len(data)} bytes, no full answer")
            data += chunk
    return data[:-1]


def wait_until_answers(path: str, proc: subprocess.Popen | None, log: str,
                       timeout: float = 15.0) -> None:
    """Poll the LUXI socket at ``path`` until it answers, with a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            luxi_call(path, "QueryConfigValues", [["cluster_name"]], timeout=2.0)
            return
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ECONNREFUSED, None):
                raise
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"daemon exited with {proc.returncode} before answering "
                                 f"on {path}:\n{_tail(log)}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"nothing answered on {path} within {timeout:g}s:\n{_tail(log)}")
        time.sleep(0.02)


def _tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


class Daemon:
    """A foreground daemon run for a test: started here, always stopped here."""

    def __init__(self, argv: list[str], root: str, log: str, socket_path: str) -> None:
        self.argv = argv
        self.root = root
        self.log = log
        self.socket = socket_path
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 15.0) -> None:
        env = dict(os.environ)
        env.update({"GANETI_ROOTDIR": self.root,
                    "GANETI_HOSTNAME": os.path.basename(self.root)})
        with open(self.log, "ab") as out:
            # `timeout` bounds the daemon's life even if this test process dies.
            self.proc = subprocess.Popen(["timeout", "-k", "5", "300", *self.argv], env=env,
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until_answers(self.socket, self.proc, self.log, timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group start_new_session made for it
            proc.wait(timeout)


def real_luxid(root: str) -> Daemon:
    """The real luxid for a node root (not started yet)."""
    return Daemon([LUXID, "-f", "--no-user-checks", "--no-voting", "--yes-do-it"], root,
                  os.path.join(root, "var", "log", "ganeti", "luxid.out"),
                  os.path.join(root, "var", "run", "ganeti", "socket", "ganeti-query"))


# -- comparing answers ------------------------------------------------------------------

def differences(ours: object, real: object, where: str = "") -> list[tuple]:
    """Every place where two parsed JSON values differ, types included.

    Returns ``(path, ours, real, description)`` tuples; a key missing on one
    side is given as the string ``"<missing>"``.  Stricter than ``==``: 1,
    1.0 and True are three different values (the CLI prints them
    differently).  Object key order is not compared (JSON objects are
    unordered); list order is.
    """
    path = where or "/"
    if type(ours) is not type(real):
        return [(path, ours, real, f"{path}: ours {ours!r} ({type(ours).__name__}), "
                                   f"real {real!r} ({type(real).__name__})")]
    if isinstance(ours, dict):
        assert isinstance(real, dict)
        result = []
        for key in sorted(set(ours) | set(real)):
            a, b = ours.get(key, "<missing>"), real.get(key, "<missing>")
            if key not in ours or key not in real:
                result.append((f"{where}/{key}", a, b, f"{where}/{key}: ours {a!r}, real {b!r}"))
            else:
                result.extend(differences(a, b, f"{where}/{key}"))
        return result
    if isinstance(ours, list):
        assert isinstance(real, list)
        if len(ours) != len(real):
            return [(path, ours, real, f"{path}: ours {ours!r}, real {real!r}")]
        result = []
        for i, (a, b) in enumerate(zip(ours, real, strict=True)):
            result.extend(differences(a, b, f"{where}[{i}]"))
        return result
    return [] if ours == real else [(path, ours, real, f"{path}: ours {ours!r}, real {real!r}")]
