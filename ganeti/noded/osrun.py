"""Running one OS script: its own process group, its output in a log file, secrets hidden.

A script runs through the daemon's :class:`~ganeti.noded.procs.ChildProcesses`
(``spawnProcess``, a session of its own), with exactly the environment built
by :mod:`ganeti.noded.osenv` and the OS directory as working directory.  Its
standard output and error go, as they come, to its log file under
``LOG_DIR/os/`` (Ganeti's names: ``add-<os>-<instance>-<time>.log``,
``rename-<os>-<old>-<new>-<time>.log``, ...); the values of private and secret
OS parameters are replaced by ``<redacted>`` before anything is written, so
they reach neither the log nor an error message.  The last lines are kept for
the error a failure answers with.  A timeout, a cancelled call or the daemon
stopping ends the script's whole group (SIGTERM, SIGKILL after the grace).

The log is written from the reactor thread in small appends, as the daemon's
own log is; opening it (and creating ``LOG_DIR/os``) happens in the thread pool.
The same lines, hidden values replaced, can also go to an ``on_line`` callback
as they are written (:mod:`ganeti.noded.osoutput`: the master streams them into
the job's log).
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO

from ganeti.core.textutil import safe_encode
from ganeti.noded.backend.context import NodeContext, RPCFail
from ganeti.noded.procs import ProcessOutcome

REDACTED = b"<redacted>"
#: Values shorter than this are not hidden (a secret "1" would blank every digit).
MIN_HIDDEN_LENGTH = 4
#: Lines of the log an error shows (Ganeti's TailFile(lines=20)).
TAIL_LINES = 20
#: A line longer than this is written (and hidden values replaced) in pieces.
_MAX_PENDING = 64 * 1024


def log_name(kind: str, os_name: str, instance: str, component: str | None,
             now: float) -> str:
    """Ganeti's log file name of one run (``_InstanceLogName``), in local time."""
    extra = f"-{component}" if component else ""
    stamp = time.strftime("%Y-%m-%d_%H_%M_%S", time.localtime(now))
    return f"{kind}-{os_name}-{instance}{extra}-{stamp}.log"


class ScriptLog:
    """A run's log file: output appended as it comes, hidden values replaced, the tail
    kept."""

    def __init__(self, f: IO[bytes] | None, hidden: Iterable[str]) -> None:
        self.f = f
        self.hidden = sorted({h.encode("utf-8") for h in hidden
                              if len(h) >= MIN_HIDDEN_LENGTH}, key=len, reverse=True)
        self.pending = b""
        self.tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)
        self.partial = b""
        #: gets each complete line as it is written (hidden values replaced, escaped)
        self.on_line: Callable[[str], None] | None = None

    @classmethod
    def open(cls, path: str, hidden: Iterable[str]) -> ScriptLog:
        """Open (append) ``path``, creating its directory (blocking: thread pool)."""
        os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
        return cls(open(path, "ab"), hidden)  # closed by close()

    def hide(self, data: bytes) -> bytes:
        """``data`` with every hidden value replaced."""
        for value in self.hidden:
            data = data.replace(value, REDACTED)
        return data

    def feed(self, data: bytes) -> None:
        """A chunk of output: complete lines are written at once."""
        self.pending += data
        cut = self.pending.rfind(b"\n") + 1
        if not cut and len(self.pending) > _MAX_PENDING:
            cut = len(self.pending)
        if cut:
            self._write(self.pending[:cut])
            self.pending = self.pending[cut:]

    def _write(self, data: bytes) -> None:
        data = self.hide(data)
        if self.f is not None:
            self.f.write(data)
            self.f.flush()
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        self.tail.extend(lines)
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        if self.on_line is not None:
            self.on_line(_shown(line))

    def close(self) -> None:
        """Write what is left and close the file."""
        if self.pending:
            self._write(self.pending)
            self.pending = b""
        if self.partial:
            self.tail.append(self.partial)
            self._line(self.partial)
            self.partial = b""
        if self.f is not None:
            self.f.close()
            self.f = None

    def last_lines(self) -> str:
        """The last lines written, each escaped as Ganeti shows them."""
        return "\n".join(_shown(line) for line in self.tail)


def _shown(line: bytes) -> str:
    """A line of output as Ganeti shows it (escaped)."""
    return safe_encode(line.decode("utf-8", "replace"))


@dataclass(frozen=True)
class ScriptRun:
    """How a script ended and what its log ends with."""

    outcome: ProcessOutcome
    tail: str
    timeout: float

    @property
    def ok(self) -> bool:
        """Started and exited 0 within its time."""
        return self.outcome.ok

    def reason(self) -> str:
        """Why it failed, in Ganeti's words."""
        if self.outcome.timed_out:
            return f"timeout after {self.timeout:g}s"
        return self.outcome.reason()


async def run_script(ctx: NodeContext, argv: list[str], env: Mapping[str, str], cwd: str,
                     log_path: str | None, hidden: Iterable[str], timeout: float,
                     stdin: bytes | None = None,
                     on_line: Callable[[str], None] | None = None) -> ScriptRun:
    """Run ``argv`` (an OS script) with ``env`` only; its output to ``log_path`` (None:
    kept in memory only, for verify) and, line by line, to ``on_line``.  RPCFail if
    this daemon may not start programs."""
    if ctx.children is None:
        raise RPCFail("This node daemon cannot start programs")
    hidden = list(hidden)
    log = (await ctx.run(ScriptLog.open, log_path, hidden) if log_path is not None
           else ScriptLog(None, hidden))
    log.on_line = on_line
    try:
        outcome = await ctx.children.run(argv, env=dict(env), timeout=timeout, cwd=cwd,
                                         stdin=stdin, on_output=log.feed,
                                         merge_stderr=True)
    finally:
        log.close()
    if outcome.exec_error is not None:
        log.tail.append(outcome.exec_error.encode("utf-8", "replace"))
    return ScriptRun(outcome, log.last_lines(), timeout)
