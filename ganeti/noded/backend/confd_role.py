"""Keep ganeti-confd running exactly while this node is the master or a master candidate.

ganeti-confd answers from the node's own copy of ``config.data``, which the
master sends to candidates only; on any other node it has nothing current to
answer from.  When the node daemon was started with ``--manage-confd`` (the
virtual cluster does so), every ``write_ssconf_files`` and every upload of
``config.data`` ends with :func:`sync_confd`, run in the I/O thread pool
without delaying the call's answer:

- the node is a candidate (``ssconf_master_candidates`` or
  ``ssconf_master_node`` names it, and the local ``config.data`` agrees)
  and confd does not run: start it (``twistd ... ganeti-confd``, bound to the
  node's primary IP from ssconf, as ``ganeti-vcluster start`` does);
- the node is neither (demoted, offline, drained, not master capable) and
  confd runs: stop it (SIGTERM through its pid file).

A promotion sends both the ssconf files and ``config.data``; whichever
arrives last finds both in agreement and starts confd.  Syncs run one at a
time per node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from twisted.logger import Logger

from ganeti.core import constants
from ganeti.core.paths import Paths
from ganeti.core.pidfile import running_pid

log = Logger()

#: Seconds a stopped confd may take to exit before it is killed.
STOP_TIMEOUT = 10.0
#: Seconds twistd may take to start confd.
START_TIMEOUT = 60.0

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(paths: Paths) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(paths.pid_file(constants.CONFD), threading.Lock())


def _ssconf_lines(paths: Paths, key: str) -> list[str]:
    try:
        with open(paths.ssconf_file(key), encoding="utf-8") as f:
            return [line.strip() for line in f.read().splitlines() if line.strip()]
    except OSError:
        return []


def ssconf_says_candidate(paths: Paths) -> bool:
    """Whether the ssconf files name this node as master or master candidate."""
    me = paths.hostname
    return bool(me) and (me in _ssconf_lines(paths, "master_candidates")
                         or me in _ssconf_lines(paths, "master_node"))


def config_says_candidate(paths: Paths) -> bool:
    """Whether the local config.data (and hmac.key) let confd serve on this node."""
    if not os.path.exists(paths.hmac_key):
        return False
    try:
        with open(paths.config_file, "rb") as f:
            raw = json.load(f)
        master = raw["cluster"]["master_node"]
        for uuid, node in raw["nodes"].items():
            if node.get("name") == paths.hostname:
                return uuid == master or bool(node.get("master_candidate"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return False


def confd_pid(paths: Paths) -> int | None:
    """The pid of this node's running confd, or None (a stale pid file's number,
    taken by another process since, does not count: :mod:`ganeti.core.pidfile`)."""
    return running_pid(paths.pid_file(constants.CONFD))


def _twistd() -> str:
    candidate = os.path.join(os.path.dirname(sys.executable), "twistd")
    if os.access(candidate, os.X_OK):
        return candidate
    return shutil.which("twistd") or candidate


def start_command(paths: Paths) -> list[str]:
    """The command that starts confd on this node (daemonised by twistd)."""
    return [_twistd(), "--pidfile", paths.pid_file(constants.CONFD),
            "--logfile", paths.log_file(constants.CONFD), "--umask", "0027",
            constants.CONFD, "--port", str(constants.DEFAULT_CONFD_PORT)]


def start_confd(paths: Paths) -> str:
    """Start confd; what happened, for the log (blocking)."""
    pidfile = paths.pid_file(constants.CONFD)
    if os.path.exists(pidfile) and confd_pid(paths) is None:
        os.unlink(pidfile)  # stale: twistd would refuse to start
    os.makedirs(paths.run_dir, exist_ok=True)
    os.makedirs(paths.log_dir, exist_ok=True)
    env = dict(os.environ)
    env.update(paths.env())
    try:
        proc = subprocess.run(start_command(paths), env=env, capture_output=True, text=True,
                              check=False, timeout=START_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"cannot start {constants.CONFD}: {err}"
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return (f"cannot start {constants.CONFD}: "
                f"{lines[-1] if lines else f'exit code {proc.returncode}'}")
    return f"started {constants.CONFD} (this node is a master candidate)"


def stop_confd(paths: Paths, pid: int) -> str:
    """Stop confd (SIGTERM, SIGKILL after :data:`STOP_TIMEOUT`); what happened (blocking)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return f"{constants.CONFD} had already exited"
    deadline = time.monotonic() + STOP_TIMEOUT
    while confd_pid(paths) == pid and time.monotonic() < deadline:
        time.sleep(0.05)
    if confd_pid(paths) == pid:
        os.kill(pid, signal.SIGKILL)
    return f"stopped {constants.CONFD} (this node is no longer a master candidate)"


def sync_confd(paths: Paths) -> str | None:
    """Start or stop confd to match this node's role; what was done, or None (blocking)."""
    with _lock(paths):
        pid = confd_pid(paths)
        if ssconf_says_candidate(paths):
            if pid is None and config_says_candidate(paths):
                return start_confd(paths)
            return None
        if pid is not None:
            return stop_confd(paths, pid)
        return None


def after(ctx: Any, result: Any) -> Any:
    """Schedule :func:`sync_confd` in the background if ``ctx`` manages confd;
    pass ``result`` (the call's answer) on unchanged."""
    if getattr(ctx, "manage_confd", False):
        d = ctx.run(sync_confd, ctx.paths)

        def report(what: str | None) -> None:
            if what:
                log.info("Role change: {what}", what=what)

        d.addCallbacks(report, lambda f: log.failure("Cannot sync ganeti-confd with the "
                                                     "node's role", f))
    return result
