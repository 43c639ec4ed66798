"""hooks_runner: run one phase of an opcode's hook scripts on this node (Ganeti's
HooksRunner); design: docs/design/hooks.md.

The scripts of ``HOOKS_BASE_DIR/<hpath>-<phase>.d/`` run one after the other
in the order of their names, as run-parts runs them: names starting with a
dot are ignored, a name that does not match ``[a-zA-Z0-9_-]+`` or a file that
is not an executable regular file is skipped (reported, not run).  Each
script gets exactly the environment the master sent, ``PATH`` set to
Ganeti's, standard input closed and ``/`` as working directory.  It runs in
a session of its own (``setsid``) through ``spawnProcess``, so the reactor
never waits and a script that outlives its timeout is ended with its
children: SIGTERM, then SIGKILL after a grace period (Ganeti has no per-script
timeout; the call's own timeout bounds the run there).  Cancelling the call
ends the running script the same way.

The answer is Ganeti's: ``[[<hpath>-<phase>.d/<name>, status, output], ...]``
with status 0 (skipped), 1 (failed) or 2 (succeeded) and the output
(standard output, then standard error) stripped and escaped as Ganeti's.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, error, protocol
from twisted.internet.interfaces import IDelayedCall, IReactorProcess, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core import hooks
from ganeti.noded.backend.context import NodeContext, RPCFail, Runner

#: Seconds one script may run before it is ended.
SCRIPT_TIMEOUT = 300.0
#: Seconds between SIGTERM and SIGKILL, and how long the output of an ended
#: script is waited for (Ganeti's CHILD_LINGER_TIMEOUT).
KILL_GRACE = 5.0
#: Bytes kept of each output stream of a script.
MAX_OUTPUT = 256 * 1024
#: Runs a program in a new session, so that its whole process group can be ended.
SETSID = "/usr/bin/setsid"

log = Logger()


def scan(dir_name: str) -> list[tuple[str, bool]]:
    """The visible entries of ``dir_name`` by name, each with whether it may run.

    Blocking (a directory listing and a stat per entry): call through the
    thread pool.  A missing directory, or one that cannot be listed, has no
    scripts (as Ganeti's, which logs no warning for every operation).
    """
    if not os.path.isdir(dir_name):
        return []
    try:
        names = os.listdir(dir_name)
    except OSError as err:
        log.warn("Hooks: cannot list {dir}: {error}", dir=dir_name, error=err)
        return []
    out: list[tuple[str, bool]] = []
    for name in sorted(n for n in names if not n.startswith(".")):
        path = os.path.join(dir_name, name)
        runnable = (hooks.SCRIPT_NAME_RE.fullmatch(name) is not None
                    and os.path.isfile(path) and os.access(path, os.X_OK))
        out.append((name, runnable))
    return out


@dataclass(frozen=True)
class ScriptResult:
    """How one script ended: exit code (None if killed by a signal), its output,
    whether it ran past its timeout."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool

    @property
    def failed(self) -> bool:
        return self.exit_code != 0


class _Script(protocol.ProcessProtocol):
    """One running script: collects its output, ends it on timeout or cancel."""

    def __init__(self, clock: IReactorTime, timeout: float, group: bool) -> None:
        self.clock = clock
        self.timeout = timeout
        self.group = group  # the script leads its own process group (setsid)
        self.out = bytearray()
        self.err = bytearray()
        self.exit_code: int | None = None
        self.timed_out = False
        self.done: defer.Deferred[ScriptResult] = defer.Deferred(self._cancel)
        self._calls: list[IDelayedCall] = []
        self._exited = False

    # -- process events --------------------------------------------------------

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.closeStdin()
        self._later(self.timeout, self._on_timeout)

    def outReceived(self, data: bytes) -> None:
        self.out += data[:max(MAX_OUTPUT - len(self.out), 0)]

    def errReceived(self, data: bytes) -> None:
        self.err += data[:max(MAX_OUTPUT - len(self.err), 0)]

    def processExited(self, reason: Failure) -> None:
        self._exited = True
        value = reason.value
        if isinstance(value, error.ProcessDone):
            self.exit_code = 0
        elif isinstance(value, error.ProcessTerminated):
            self.exit_code = value.exitCode
        self._cancel_calls()
        # a child that left the session may still hold the output pipes open
        self._later(KILL_GRACE, self._close_pipes)

    def processEnded(self, reason: Failure) -> None:
        self._cancel_calls()
        if not self.done.called:
            self.done.callback(ScriptResult(self.exit_code, bytes(self.out), bytes(self.err),
                                            self.timed_out))

    # -- ending it -------------------------------------------------------------

    def _later(self, delay: float, f: Any) -> None:
        self._calls.append(self.clock.callLater(delay, f))

    def _cancel_calls(self) -> None:
        for call in self._calls:
            if call.active():
                call.cancel()
        self._calls = []

    def _signal(self, sig: int) -> None:
        pid = getattr(self.transport, "pid", None)
        if pid is None:
            return
        try:
            if self.group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _on_timeout(self) -> None:
        self.timed_out = True
        self._signal(signal.SIGTERM)
        self._later(KILL_GRACE, self._kill)

    def _kill(self) -> None:
        self._signal(signal.SIGKILL)
        self._later(KILL_GRACE, self._close_pipes)

    def _close_pipes(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def _cancel(self, d: defer.Deferred[ScriptResult]) -> None:
        self._cancel_calls()
        if not self._exited:
            self._signal(signal.SIGKILL)
        self._close_pipes()


def _setsid_available() -> bool:
    return os.access(SETSID, os.X_OK)


async def run_script(spawner: IReactorProcess, clock: IReactorTime, path: str,
                     env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run one script; ``(status, output)`` as a ``hooks_runner`` entry has them."""
    group = _setsid_available()
    proto = _Script(clock, timeout, group)
    argv = [SETSID, path] if group else [path]
    try:
        spawner.spawnProcess(proto, argv[0], argv, env=env, path="/")
    except OSError as err:
        return hooks.HKR_FAIL, f"Hook script execution error: {err}"
    result = await proto.done
    text = (result.stdout + result.stderr).decode("utf-8", "replace").strip()
    if result.timed_out:
        text = (text + "\n" if text else "") + f"terminated after timeout of {timeout:.2f} seconds"
    status = hooks.HKR_FAIL if result.failed or result.timed_out else hooks.HKR_SUCCESS
    return status, hooks.safe_encode(text)


async def run_hooks(base_dir: str, hpath: str, phase: str, env: dict[str, str], *,
                    spawner: IReactorProcess | None, clock: IReactorTime, run: Runner,
                    timeout: float = SCRIPT_TIMEOUT) -> list[list[Any]]:
    """Run the scripts of ``<base_dir>/<hpath>-<phase>.d`` in order; Ganeti's answer.

    ``spawner`` None: RPCFail if there is a script to run (a daemon that may
    not start programs).
    """
    subdir = f"{hpath}-{phase}.d"
    dir_name = os.path.join(base_dir, subdir)
    entries: list[tuple[str, bool]] = await run(scan, dir_name)
    if spawner is None and any(runnable for _, runnable in entries):
        raise RPCFail("This node daemon cannot start programs")
    full_env = dict(env)
    full_env["PATH"] = hooks.HOOKS_PATH
    results: list[list[Any]] = []
    for name, runnable in entries:
        script = f"{subdir}/{name}"
        if not runnable:
            results.append([script, hooks.HKR_SKIP, ""])
            continue
        assert spawner is not None
        status, output = await run_script(spawner, clock, os.path.join(dir_name, name),
                                          full_env, timeout)
        if status == hooks.HKR_FAIL:
            log.info("Hook {script} failed: {output}", script=script, output=output[:200])
        results.append([script, status, output])
    return results


def hooks_runner(ctx: NodeContext, hpath: str, phase: str,
                 env: dict[str, str]) -> defer.Deferred[list[list[Any]]]:
    """The ``hooks_runner`` call: run the scripts of one hooks phase on this node."""
    return defer.Deferred.fromCoroutine(run_hooks(
        ctx.paths.hooks_base_dir, hpath, phase, env, spawner=ctx.processes, clock=ctx.clock,
        run=ctx.run))
