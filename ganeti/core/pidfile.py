"""Pid files, and whether the process a pid file names is still the one that wrote it.

A daemon that dies without removing its pid file (``kill -9``, a crash) leaves
a pid that the kernel hands to another process sooner or later: on a busy
machine with Linux's default ``pid_max`` of 32768 within minutes.  Trusting such
a file would make "stop the daemon" signal whichever process got the number
(another node's libvirtd, say) and "is it running" answer yes for it.  So a pid
counts as the file's owner only while that process's command line names the
file: every daemon here is started with its pid file as an argument (twistd's
``--pidfile PATH``, libvirtd's and virtlogd's ``-p PATH``), and a process that
merely got the same number does not carry it.
"""

from __future__ import annotations

import os

#: Option prefixes whose value may carry the path in the same argument.
_INLINE = ("--pidfile=", "--pid-file=")


def read_pid(path: str) -> int | None:
    """The pid in a pid file, or None if absent or unreadable."""
    try:
        with open(path, encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


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
            return f.read().rsplit(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def _same_file(arg: str, path: str, real: str) -> bool:
    for prefix in _INLINE:
        if arg.startswith(prefix):
            arg = arg[len(prefix):]
    if arg == path:
        return True
    return (os.path.basename(arg) == os.path.basename(path)
            and os.path.realpath(arg) == real)


def names_file(pid: int, path: str) -> bool:
    """Whether process ``pid``'s command line names ``path`` (the same file through
    other links counts).  True when the command line cannot be read (another
    user's process under ``hidepid``): then only its existence can be checked."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    args = [os.fsdecode(a) for a in raw.split(b"\0") if a]
    real = os.path.realpath(path)
    return any(_same_file(arg, path, real) for arg in args)


def is_owner(pid: int, path: str) -> bool:
    """Whether process ``pid`` runs and owns pid file ``path`` (see the module
    docstring); the file itself need not exist any more."""
    return pid_alive(pid) and names_file(pid, path)


def running_pid(path: str) -> int | None:
    """The pid in pid file ``path`` if that process runs and is the file's owner,
    else None."""
    pid = read_pid(path)
    return pid if pid is not None and is_owner(pid, path) else None
