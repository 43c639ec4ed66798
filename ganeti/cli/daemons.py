"""Start, stop and inspect daemons of a node through their pid files."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from ganeti.core import constants, errors
from ganeti.core.paths import Paths

STOPPED, RUNNING, STALE = "stopped", "running", "stale pid file"


@dataclass
class DaemonState:
    """A daemon's pid (if any) and whether it runs."""

    daemon: str
    pid: int | None
    state: str


def read_pid(path: str) -> int | None:
    """The pid in a pid file, or None if absent or unreadable."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def state(paths: Paths, daemon: str) -> DaemonState:
    """Running state of ``daemon`` on the node of ``paths``."""
    pid = read_pid(paths.pid_file(daemon))
    if pid is None:
        return DaemonState(daemon, None, STOPPED)
    return DaemonState(daemon, pid, RUNNING if pid_alive(pid) else STALE)


def twistd_path() -> str:
    """The twistd next to this interpreter (the project's virtualenv), else on PATH."""
    candidate = os.path.join(os.path.dirname(sys.executable), "twistd")
    if os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("twistd")
    if not found:
        raise errors.CommandError("twistd not found; install the project with 'make install'")
    return found


def start(paths: Paths, daemon: str, args: list[str] | None = None) -> int:
    """Start ``daemon`` with twistd (daemonised, pid and log file of the node)."""
    os.makedirs(paths.run_dir, exist_ok=True)
    os.makedirs(paths.log_dir, exist_ok=True)
    pidfile = paths.pid_file(daemon)
    if state(paths, daemon).state == STALE:
        os.unlink(pidfile)
    cmd = [twistd_path(), "--pidfile", pidfile, "--logfile", paths.log_file(daemon),
           "--umask", "0027", daemon] + list(args or [])
    env = dict(os.environ)
    env.update(paths.env())
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        detail = lines[-1] if lines else f"exit code {proc.returncode}"
        raise errors.CommandError(f"{daemon} on {paths.hostname} failed to start: {detail}")
    pid = read_pid(pidfile)
    return pid or 0


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
    pid = st.pid
    os.kill(pid, signal.SIGTERM)
    if not wait_for(lambda: not pid_alive(pid), timeout):
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not pid_alive(pid), 5.0)
    if os.path.exists(paths.pid_file(daemon)) and not pid_alive(pid):
        os.unlink(paths.pid_file(daemon))
    return True


MASTER_DAEMONS = (constants.MASTERD,)
