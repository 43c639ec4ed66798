"""Running an external instance allocator, as Ganeti does, without blocking the reactor.

Ganeti's protocol (seed 002): the allocator is a program named by its file
name, looked up in the iallocator search path (``--with-iallocator-search-path``;
the first directory holding a regular file of that name wins, and the name
must match ``^[a-zA-Z0-9_-]+$``).  It is started with one argument, a file
holding the JSON input, plus the cluster's default allocator parameters as
``--key=value`` (``--key`` for a null value), in the C locale.  A non-zero exit
is a failure reported with the whole output; on success its stdout is the
answer, checked by :func:`ganeti.core.placement.wire.parse_answer`.

The program runs as a child process (``spawnProcess``).  Beyond Ganeti, which
waits for ever and keeps everything, a run has a timeout on the injected clock
and a bound on the output it keeps: a hanging or flooding allocator is killed
and the run fails with a message saying which limit it hit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer, error, protocol
from twisted.internet.interfaces import IDelayedCall, IReactorProcess, IReactorTime
from twisted.python.failure import Failure

import ganeti
from ganeti.core.errors import OpExecError
from ganeti.core.params_cluster import BUILTIN_IALLOCATOR, IALLOCATOR_SEARCH_PATH
from ganeti.core.placement.wire import AllocatorInput, Answer, parse_answer, render_input

#: Where allocators are looked for (Ganeti 3.0 as Debian builds it).
SEARCH_PATH: tuple[str, ...] = IALLOCATOR_SEARCH_PATH
#: What an allocator's file name may be (Ganeti's ``EXT_PLUGIN_MASK``).
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
#: Seconds an allocator may run.
DEFAULT_TIMEOUT = 300.0
#: Bytes of output (stdout and stderr together) an allocator may write.
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
#: Seconds the pipes stay open after the program exited (for what it left running).
DEFAULT_GRACE = 5.0
#: Runs the program as the leader of a new process group, so that killing it (timeout,
#: too much output) kills what it started too.
_SETSID = ("import os,sys\n"
           "os.setsid()\n"
           "try:\n"
           " os.execv(sys.argv[1],sys.argv[1:])\n"
           "except OSError as e:\n"
           " sys.stderr.write('cannot run '+sys.argv[1]+': '+(e.strerror or str(e)))\n"
           " os._exit(127)\n")
#: Ganeti's prefix for every failure of the run itself.
FAILURE = "Failure while running the iallocator script"
#: The built-in allocator's name: found after the search path (an administrator's
#: program of that name in the search path wins), run as this Python's module.
BUILTIN = BUILTIN_IALLOCATOR
BUILTIN_MODULE = "ganeti.cli.place"

BlockingRunner = Callable[..., Awaitable[Any]]


def find_allocator(name: str, search_path: Sequence[str] = SEARCH_PATH) -> str | None:
    """The path of the allocator ``name``: the first regular file of that name in the
    search path; None if there is none or the name is not a plain file name."""
    if not name or not set(name) <= _NAME_CHARS:
        return None
    for directory in search_path:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def allocator_command(name: str, search_path: Sequence[str] = SEARCH_PATH) -> list[str] | None:
    """The command line (without the input file) that runs allocator ``name``: the
    program of the search path, else the built-in run by this Python; None if neither."""
    path = find_allocator(name, search_path)
    if path is not None:
        return [path]
    if name == BUILTIN:
        return [sys.executable, "-c", f"import sys; from {BUILTIN_MODULE} import main; "
                                      "sys.exit(main(sys.argv[1:]))"]
    return None


def _package_root() -> str:
    """The directory holding the ``ganeti`` package (the built-in's PYTHONPATH)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(ganeti.__file__)))


def allocator_arguments(params: Mapping[str, str | None]) -> list[str]:
    """The cluster's allocator parameters as options: ``--key=value`` or ``--key``."""
    return [f"--{key}" if value is None else f"--{key}={value}"
            for key, value in params.items()]


@dataclass(frozen=True)
class RunOutcome:
    """How the program ended and what it wrote."""

    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    overflowed: bool = False

    def failure(self, timeout: float, max_output: int) -> str | None:
        """Why the run failed, in Ganeti's words where Ganeti has them; None if it did not."""
        if self.timed_out:
            return f"terminated after timeout of {timeout:.2f} seconds"
        if self.overflowed:
            return f"killed: its output exceeded {max_output} bytes"
        if self.signal is not None:
            return f"terminated by signal {self.signal}"
        if self.exit_code:
            return f"exited with exit code {self.exit_code}"
        return None


class _Allocator(protocol.ProcessProtocol):
    """Collects the program's output (up to a bound) and reports how it ended."""

    def __init__(self, max_output: int, clock: IReactorTime, grace: float) -> None:
        self.max_output = max_output
        self.clock = clock
        self.grace = grace
        self.out: dict[int, list[bytes]] = {1: [], 2: []}
        self.size = 0
        self.timed_out = False
        self.overflowed = False
        self.linger: IDelayedCall | None = None
        self.ended: defer.Deferred[RunOutcome] = defer.Deferred()

    def kill(self) -> None:
        """SIGKILL the program's process group (it leads one: see :data:`_SETSID`)."""
        pid = self.transport.pid if self.transport is not None else None  # type: ignore[attr-defined]
        if pid is None:
            return
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:  # not yet its own group, or gone
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def childDataReceived(self, childFD: int, data: bytes) -> None:  # noqa: N803 (Twisted's)
        if childFD not in self.out or self.overflowed:
            return
        self.size += len(data)
        if self.size > self.max_output:
            self.overflowed = True
            self.kill()
            return
        self.out[childFD].append(data)

    def processExited(self, reason: Failure) -> None:
        # something the program left behind may hold its pipes: stop reading after a while
        self.linger = self.clock.callLater(self.grace, self._close_pipes)

    def _close_pipes(self) -> None:
        self.linger = None
        if self.transport is not None:
            self.transport.loseConnection()

    def processEnded(self, reason: Failure) -> None:
        if self.linger is not None and self.linger.active():
            self.linger.cancel()
        code: int | None = 0
        sig: int | None = None
        if isinstance(reason.value, error.ProcessTerminated):
            code, sig = reason.value.exitCode, reason.value.signal
        self.ended.callback(RunOutcome(code, sig, b"".join(self.out[1]), b"".join(self.out[2]),
                                       timed_out=self.timed_out, overflowed=self.overflowed))


def _write_input(text: str, tmp_dir: str | None) -> str:
    fd, path = tempfile.mkstemp(prefix="ganeti-iallocator.", dir=tmp_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@dataclass
class AllocatorRunner:
    """Runs allocator programs: ``reactor`` spawns them, ``clock`` times them out,
    ``run_blocking`` writes and removes the input file (the master's I/O pool).

    ``timeout`` bounds the run, ``max_output`` what it may print (stdout and stderr);
    either ends the program's process group with SIGKILL."""

    reactor: IReactorProcess
    clock: IReactorTime
    run_blocking: BlockingRunner = _inline
    search_path: Sequence[str] = SEARCH_PATH
    timeout: float = DEFAULT_TIMEOUT
    max_output: int = DEFAULT_MAX_OUTPUT
    tmp_dir: str | None = None
    grace: float = DEFAULT_GRACE
    #: the programs running now (what a test driving a fake clock waits for)
    active: set[_Allocator] = field(default_factory=set)

    def exists(self, name: str) -> bool:
        """Whether allocator ``name`` can be run (blocking: stats files)."""
        return allocator_command(name, self.search_path) is not None

    async def run_text(self, name: str, input_text: str,
                       params: Mapping[str, str | None] | None = None) -> str:
        """The stdout of allocator ``name`` on ``input_text``; ``OpExecError`` when it
        cannot be found or run, exits non-zero, is killed, or its output is not UTF-8."""
        command = allocator_command(name, self.search_path)
        if command is None:
            raise OpExecError(f"{FAILURE}: iallocator module '{name}' not found in the "
                              "search path")
        path = await self.run_blocking(_write_input, input_text, self.tmp_dir)
        try:
            outcome = await self._spawn(command[0], [*command[1:], path,
                                                     *allocator_arguments(params or {})])
        finally:
            await self.run_blocking(os.unlink, path)
        reason = outcome.failure(self.timeout, self.max_output)
        if reason is not None:
            output = (outcome.stdout + outcome.stderr).decode("utf-8", "replace")
            raise OpExecError(f"{FAILURE}: iallocator module '{name}' failed: {reason}, "
                              f"output '{output}'")
        try:
            return outcome.stdout.decode("utf-8")
        except UnicodeDecodeError as err:
            raise OpExecError(f"Can't parse iallocator results: {err}") from None

    async def run(self, name: str, ialloc: AllocatorInput,
                  params: Mapping[str, str | None] | None = None) -> Answer:
        """Run allocator ``name`` on ``ialloc`` and check its answer against the request."""
        text = json.dumps(render_input(ialloc))
        return parse_answer(await self.run_text(name, text, params), ialloc)

    async def _spawn(self, script: str, args: list[str]) -> RunOutcome:
        child = _Allocator(self.max_output, self.clock, self.grace)
        env = dict(os.environ, LC_ALL="C")
        if script == sys.executable:  # the built-in: this interpreter, this package
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        self.reactor.spawnProcess(child, sys.executable,
                                  [sys.executable, "-I", "-S", "-c", _SETSID, script, *args],
                                  env=env)
        timer: IDelayedCall = self.clock.callLater(self.timeout, self._expire, child)
        self.active.add(child)
        try:
            return await child.ended
        finally:
            self.active.discard(child)
            if timer.active():
                timer.cancel()

    @staticmethod
    def _expire(child: _Allocator) -> None:
        child.timed_out = True
        child.kill()


__all__ = ["BUILTIN", "BUILTIN_MODULE", "DEFAULT_MAX_OUTPUT", "DEFAULT_TIMEOUT", "FAILURE",
           "SEARCH_PATH", "AllocatorRunner", "RunOutcome", "allocator_arguments",
           "allocator_command", "find_allocator"]
