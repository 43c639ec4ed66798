"""Start, stop and inspect daemons of a node through their pid files.

:data:`NODE_DAEMONS` run on every node, :data:`CANDIDATE_DAEMONS`
(``ganeti-confd``) on the master and the master candidates, :data:`MASTER_DAEMONS`
only on the master (``ganeti-masterd``, then ``ganeti-rapi``, its LUXI
client).  Start the node daemons of every node first, then confd, and the
master daemons last; stop the master daemons first (:func:`start_order`,
:func:`stop_order`): the master talks to the node daemons, never the other
way round.

:func:`start_on_node` starts a daemon with the arguments it needs on a node
with a given primary IP.  ``ganeti-noded`` binds ``<ip>:1811`` and
``ganeti-rapi`` ``<ip>:5080``, ``ganeti-confd`` ``<ip>:1814`` (UDP)
(:data:`DAEMON_PORTS`).  Every daemon listens while twistd starts it, and
one that cannot makes twistd exit with status 1 (:mod:`ganeti.daemon`);
:func:`start` then raises with the daemon's reason from its log.  The address
is still tried before starting (:class:`AddressInUse` with the address if it
is taken, so that callers can suggest another one), and after starting
:func:`wait_listening` waits until the daemon's own process holds a
listening socket on it (another process's listener does not count).  If the
daemon exits, logs that it cannot listen, or does not listen in time, the
error gives the reason from its log, and a daemon still running without its
port is stopped.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.cli import vcluster_lvm
from ganeti.core import constants, errors
from ganeti.core.paths import Paths
from ganeti.core.pidfile import is_owner, pid_alive, read_pid

STOPPED, RUNNING, STALE = "stopped", "running", "stale pid file"

#: Daemons every node runs (started first, stopped last).
NODE_DAEMONS: tuple[str, ...] = (constants.NODED,)
#: Daemons the master and the master candidates run (after the node daemons).
CANDIDATE_DAEMONS: tuple[str, ...] = (constants.CONFD,)
#: Daemons only the master runs (started last, stopped first), in start order.
MASTER_DAEMONS: tuple[str, ...] = (constants.MASTERD, constants.RAPI)
#: The port of each daemon that listens on its node's primary IP.
DAEMON_PORTS: dict[str, int] = {constants.NODED: constants.DEFAULT_NODED_PORT,
                                constants.RAPI: constants.DEFAULT_RAPI_PORT,
                                constants.CONFD: constants.DEFAULT_CONFD_PORT}
#: The daemons whose port is a UDP port (the others listen on TCP).
UDP_DAEMONS: frozenset[str] = frozenset({constants.CONFD})

#: Seconds a started daemon may take to listen on its port.
LISTEN_TIMEOUT = 30.0
#: The state column of a listening socket in /proc/net/tcp.
TCP_LISTEN = "0A"
#: The state column of a bound, unconnected socket in /proc/net/udp.
UDP_UNCONNECTED = "07"


class AddressInUse(errors.CommandError):
    """A daemon's address and port are taken by another process."""

    def __init__(self, message: str, address: str, port: int) -> None:
        super().__init__(message)
        self.address = address
        self.port = port


@dataclass
class DaemonState:
    """A daemon's pid (if any) and whether it runs."""

    daemon: str
    pid: int | None
    state: str


def state(paths: Paths, daemon: str) -> DaemonState:
    """Running state of ``daemon`` on the node of ``paths``."""
    return pid_file_state(daemon, paths.pid_file(daemon))


def pid_file_state(daemon: str, pid_file: str) -> DaemonState:
    """State of ``daemon`` from its pid file: a pid whose process is gone, or is
    another process that got the same number (its command line does not name the
    file), is stale (:mod:`ganeti.core.pidfile`)."""
    pid = read_pid(pid_file)
    if pid is None:
        return DaemonState(daemon, None, STOPPED)
    return DaemonState(daemon, pid, RUNNING if is_owner(pid, pid_file) else STALE)


def owner_gone(pid: int, pid_file: str) -> bool:
    """Whether the process ``pid`` that owned ``pid_file`` has ended (a new process
    with its number does not count)."""
    return not is_owner(pid, pid_file)


def twistd_path() -> str:
    """The twistd next to this interpreter (the project's virtualenv), else on PATH."""
    candidate = os.path.join(os.path.dirname(sys.executable), "twistd")
    if os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("twistd")
    if not found:
        raise errors.CommandError("twistd not found; install the project with 'make install'")
    return found


def start(paths: Paths, daemon: str, args: list[str] | None = None,
          wrapper: Sequence[str] = ()) -> int:
    """Start ``daemon`` with twistd (daemonised, pid and log file of the node);
    ``wrapper``: a command prefix that runs it elsewhere (a node's namespaces).

    A daemon that cannot start makes twistd exit with status 1; the error then
    gives the daemon's own reason from its log (twistd's message on stderr is
    cut at 100 bytes), else the telling line of twistd's output.
    """
    os.makedirs(paths.run_dir, exist_ok=True)
    os.makedirs(paths.log_dir, exist_ok=True)
    pidfile = paths.pid_file(daemon)
    if state(paths, daemon).state == STALE:
        os.unlink(pidfile)
    log_file = paths.log_file(daemon)
    offset = log_size(log_file)
    cmd = [*wrapper, twistd_path(), "--pidfile", pidfile, "--logfile", log_file,
           "--umask", "0027", daemon] + list(args or [])
    env = dict(os.environ)
    env.update(paths.env())
    env.update(vcluster_lvm.lvm_env(paths.root))  # a virtual node's own LVM
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason = startup_failure(daemon, log_since(log_file, offset))
        if reason:
            raise errors.CommandError(f"{daemon} on {paths.hostname} failed to start: "
                                      f"{reason} (see {log_file})")
        lines = [line.strip() for line in (proc.stderr or proc.stdout).strip().splitlines()]
        lines = [line for line in lines if line and not line.startswith("Please look at")]
        # the last line of a traceback or usage error; twistd's own pid-file complaint
        # is a paragraph whose first line matters
        detail = next((line for line in lines if line.startswith("Another twistd server")),
                      lines[-1] if lines else f"exit code {proc.returncode}")
        raise errors.CommandError(f"{daemon} on {paths.hostname} failed to start: {detail}")
    pid = read_pid(pidfile)
    return pid or 0


def startup_failure(daemon: str, log: str) -> str:
    """The reason a daemon gave in its log for not starting (``<daemon>: cannot ...``,
    :mod:`ganeti.daemon`), or ""."""
    marker = f"{daemon}: "
    for line in reversed(log.splitlines()):
        at = line.find(marker)
        if at >= 0 and line[at + len(marker):].startswith(("cannot ", "not starting")):
            return line[at:].strip()
    return ""


def wait_for(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``check`` until it is true or ``timeout`` seconds passed (CLI use only)."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def stop(paths: Paths, daemon: str, timeout: float = 30.0) -> bool:
    """Stop ``daemon`` (SIGTERM, then SIGKILL after ``timeout``); True if it was running."""
    st = state(paths, daemon)
    if st.state != RUNNING or st.pid is None:
        if st.state == STALE:
            os.unlink(paths.pid_file(daemon))
        return False
    pid, pid_file = st.pid, paths.pid_file(daemon)
    gone = functools.partial(owner_gone, pid, pid_file)
    os.kill(pid, signal.SIGTERM)
    if not wait_for(gone, timeout):
        os.kill(pid, signal.SIGKILL)
        wait_for(gone, 5.0)
    if os.path.exists(pid_file) and gone():
        os.unlink(pid_file)
    return True


def daemons_of(is_master: bool, is_candidate: bool = False) -> list[str]:
    """The daemons a node runs, in start order (the master is a candidate too)."""
    return (list(NODE_DAEMONS) + (list(CANDIDATE_DAEMONS) if is_master or is_candidate else [])
            + (list(MASTER_DAEMONS) if is_master else []))


def start_order(nodes: Sequence[tuple[Any, bool]],
                candidates: Collection[Any] = ()) -> list[tuple[Any, str]]:
    """``(node, daemon)`` in start order for ``(node, is_master)`` pairs.

    Every node's node daemons first (in the order given), then the candidate
    daemons of the master and of the nodes in ``candidates``, then the master
    daemons of the master(s): Ganeti's order (noded, confd, the master's).
    """
    first = [(node, d) for node, _ in nodes for d in NODE_DAEMONS]
    middle = [(node, d) for node, is_master in nodes if is_master or node in candidates
              for d in CANDIDATE_DAEMONS]
    last = [(node, d) for node, is_master in nodes if is_master for d in MASTER_DAEMONS]
    return first + middle + last


def stop_order(nodes: Sequence[tuple[Any, bool]]) -> list[tuple[Any, str]]:
    """Master daemons first, then every node's node daemons, then the candidate
    daemons of *every* node.

    Candidate daemons are stopped wherever they run, since a role may have
    changed since they started; and after the node daemons, since a node
    daemon started with ``--manage-confd`` may still be starting confd after
    a role change it was told of (it finishes that before it exits).
    """
    first = [(node, d) for node, is_master in reversed(nodes) if is_master
             for d in reversed(MASTER_DAEMONS)]
    middle = [(node, d) for node, _ in reversed(nodes) for d in reversed(NODE_DAEMONS)]
    last = [(node, d) for node, _ in reversed(nodes) for d in reversed(CANDIDATE_DAEMONS)]
    return first + middle + last


def twistd_args(daemon: str, ip: str, port: int | None = None) -> list[str]:
    """Arguments after the plugin name for ``daemon`` on a node with primary IP ``ip``
    (``port``: the daemon's own, default from :data:`DAEMON_PORTS`).

    ``ganeti-noded`` binds the node's own address (so that many virtual nodes
    share one machine) and does not lock itself into memory: it is a test
    node, and mlockall in every one of them would pin their whole memory; it
    starts and stops ``ganeti-confd`` as the node's role changes
    (``--manage-confd``).  ``ganeti-confd`` binds ``<ip>:1814`` (UDP).  Its
    log goes to ``LOG_DIR/node-daemon.log`` through twistd's ``--logfile`` (see
    :func:`start`), which every daemon opens for appending, at info level, and
    reopens on SIGHUP (:mod:`ganeti.daemon`): one file per daemon, each line
    once.
    ``ganeti-rapi`` binds the node's address too, so that every virtual
    cluster's master serves RAPI on its own ``<ip>:5080``; its log goes to
    ``LOG_DIR/rapi-daemon.log`` the same way.  ``ganeti-masterd`` takes no
    arguments.
    """
    if port is None:
        port = DAEMON_PORTS.get(daemon, 0)
    if daemon == constants.NODED:
        return ["--bind", ip, "--port", str(port), "--no-mlock", "--manage-confd"]
    if daemon in (constants.RAPI, constants.CONFD):
        return ["--bind", ip, "--port", str(port)]
    return []


def check_address_free(ip: str, port: int, udp: bool = False) -> None:
    """Raise :class:`AddressInUse` if nothing could listen on ``ip:port`` now.

    TCP binds with ``SO_REUSEADDR`` as Twisted does, so connections lingering
    in TIME_WAIT do not count; a listener on the address (or on 0.0.0.0)
    does.  ``udp``: any socket bound there counts (Twisted binds UDP without
    ``SO_REUSEADDR``).  An address this machine does not have is a
    :class:`errors.CommandError`.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                         socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    try:
        if not udp:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((ip, port))
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise AddressInUse(f"{ip}:{port} is already in use by another process", ip,
                               port) from None
        if err.errno == errno.EADDRNOTAVAIL:
            raise errors.CommandError(f"{ip} is not an address of this machine, so nothing "
                                      f"can listen on {ip}:{port}") from None
        raise errors.CommandError(f"Cannot listen on {ip}:{port}: {err.strerror}") from None
    finally:
        sock.close()


def accepts_connections(ip: str, port: int, timeout: float = 1.0) -> bool:
    """Whether a TCP connection to ``ip:port`` succeeds (closed again at once)."""
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_listens_on(pid: int, ip: str, port: int, udp: bool = False) -> bool | None:
    """Whether process ``pid`` holds a socket listening on ``ip:port`` (IPv4, Linux /proc
    of the process, so of its network namespace; ``udp``: a UDP socket bound there).

    None if that cannot be told (no /proc, or the process's descriptors are not
    readable); a mere connection test could be answered by another process.
    """
    try:
        (value,) = struct.unpack("=I", socket.inet_aton(ip))
        with open(f"/proc/{pid}/net/{'udp' if udp else 'tcp'}", encoding="ascii") as f:
            rows = [line.split() for line in f.readlines()[1:]]
    except (OSError, ValueError):
        return None
    local = f"{value:08X}:{port:04X}"
    listening = UDP_UNCONNECTED if udp else TCP_LISTEN
    wanted = {f"socket:[{row[9]}]" for row in rows
              if len(row) > 9 and row[1] == local and row[3] == listening}
    if not wanted:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
        except OSError:
            continue
    return False


def log_size(path: str) -> int:
    """Size of a log file (0 if absent): where the lines a daemon writes next begin."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def log_since(path: str, offset: int) -> str:
    """What was appended to a log file after ``offset`` (all of it if it shrank)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            if log_size(path) >= offset:
                f.seek(offset)
            return f.read()
    except OSError:
        return ""


def listen_failure(daemon: str, paths: Paths, ip: str, port: int, log: str) -> errors.CommandError:
    """The error for a daemon that does not listen, from its new log lines."""
    lines = [line.strip() for line in log.splitlines()]
    reason = next((line for line in reversed(lines)
                   if "Couldn't listen" in line or "CannotListenError" in line
                   or "cannot listen on" in line), "")
    reason = reason.split("CannotListenError: ", 1)[-1]
    if f"{daemon}: " in reason:
        reason = reason[reason.index(f"{daemon}: "):]
    where = f"see {paths.log_file(daemon)}"
    if "Address already in use" in log:
        return AddressInUse(f"{daemon} on {paths.hostname} cannot listen on {ip}:{port}: the "
                            f"address is already in use by another process ({where})", ip, port)
    if not reason:
        tail = [line for line in lines if line][-3:]
        reason = " | ".join(tail) if tail else "it exited without a message"
    return errors.CommandError(f"{daemon} on {paths.hostname} did not start listening on "
                               f"{ip}:{port}: {reason} ({where})")


def _cannot_listen(log: str) -> bool:
    return "CannotListenError" in log or "Couldn't listen" in log or "cannot listen on" in log


def wait_listening(paths: Paths, daemon: str, ip: str, port: int, log_offset: int = 0,
                   timeout: float = LISTEN_TIMEOUT, udp: bool = False) -> None:
    """Wait until ``daemon`` listens on ``ip:port``; raise a clear error if it cannot.

    It cannot when it exits, when its log (after ``log_offset``) says it
    could not listen, or after ``timeout`` seconds; a daemon still running
    without its port is stopped.
    """
    pid = read_pid(paths.pid_file(daemon))
    log_file = paths.log_file(daemon)
    outcome: list[str] = []

    def check() -> bool:
        if pid is None or not pid_alive(pid):
            outcome.append("died")
            return True
        listens = pid_listens_on(pid, ip, port, udp)
        if listens is None:  # cannot look at the process: any listener will do
            listens = True if udp else accepts_connections(ip, port, timeout=1.0)
        if listens:
            outcome.append("listening")
            return True
        if _cannot_listen(log_since(log_file, log_offset)):
            outcome.append("cannot listen")
            return True
        return False

    if not wait_for(check, timeout):
        stop(paths, daemon)
        raise errors.CommandError(f"{daemon} on {paths.hostname} did not listen on {ip}:{port} "
                                  f"within {timeout:g}s (stopped it again); see {log_file}")
    if outcome[-1] == "listening":
        return
    if outcome[-1] == "cannot listen":
        stop(paths, daemon)
    raise listen_failure(daemon, paths, ip, port, log_since(log_file, log_offset))


def wait_answering(paths: Paths, daemon: str, answers: Callable[[], bool], log_offset: int,
                   timeout: float = LISTEN_TIMEOUT) -> None:
    """Wait until ``daemon``, just started, ``answers()``; raise with its reason (from
    its log after ``log_offset``) if it exits first, or after ``timeout`` seconds."""
    pid = read_pid(paths.pid_file(daemon))
    exited: list[bool] = []

    def check() -> bool:
        if answers():
            return True
        if pid is None or not pid_alive(pid):
            exited.append(True)
            return True
        return False

    log_file = paths.log_file(daemon)
    if not wait_for(check, timeout):
        raise errors.CommandError(f"{daemon} on {paths.hostname} did not answer within "
                                  f"{timeout:g}s; see {log_file}")
    if exited:
        reason = startup_failure(daemon, log_since(log_file, log_offset))
        raise errors.CommandError(f"{daemon} on {paths.hostname} exited before it answered: "
                                  f"{reason or 'no reason in its log'} (see {log_file})")


def start_on_node(paths: Paths, daemon: str, ip: str, port: int | None = None,
                  timeout: float = LISTEN_TIMEOUT, wrapper: Sequence[str] = ()) -> int:
    """Start ``daemon`` on the node of ``paths`` whose primary IP is ``ip``; its pid.

    For a daemon with a port (:data:`DAEMON_PORTS`; ``port`` overrides it)
    the address is checked first and the call returns once the daemon
    listens; :class:`AddressInUse` or :class:`errors.CommandError` say
    clearly why it cannot.  The master daemon is started as :func:`start`
    does (waiting for it to answer LUXI is the caller's business).  ``wrapper`` runs
    the daemon inside a node's namespaces (see :func:`start`); the address is then
    not this process's to try.
    """
    if port is None:
        port = DAEMON_PORTS.get(daemon)
    if port is None:
        return start(paths, daemon, twistd_args(daemon, ip), wrapper)
    udp = daemon in UDP_DAEMONS
    if not wrapper:
        check_address_free(ip, port, udp)
    offset = log_size(paths.log_file(daemon))
    pid = start(paths, daemon, twistd_args(daemon, ip, port), wrapper)
    wait_listening(paths, daemon, ip, port, offset, timeout, udp)
    return pid
