"""Child processes of node RPC calls: started with ``spawnProcess``, ended with the call.

Every external program a call runs (an OOB program, hook scripts, later OS
scripts) is started here, never by a blocking call: :meth:`ChildProcesses.run`
returns a Deferred of the :class:`ProcessOutcome`.  Each child runs in its
own session, so it leads a process group holding everything it starts.  The
group is ended -- SIGTERM, then SIGKILL after :attr:`ChildProcesses.grace`
seconds on the injected clock -- when

- the Deferred is cancelled: the server cancels a handler's Deferred when the
  master's connection drops, i.e. when the master cancelled or timed out the
  call; the Deferred then fails with CancelledError at once, and the group is
  still ended and reaped in the background;
- the run's own ``timeout`` passes: the outcome then has ``timed_out`` set;
- the daemon stops (:meth:`ChildProcesses.stop_all`).

The new session is made by a small trampoline (the running Python, isolated,
without site): ``setsid()``, then ``execv`` of the program.  If ``execv``
fails, the trampoline writes the reason to a pipe that closes on a
successful exec, so a program that cannot start is an error with its reason
(``ProcessOutcome.exec_error``), not an exit status to guess from.

Standard output and error are kept up to ``max_output`` bytes each; the rest
is read and dropped (a chatty program never blocks on a full pipe, nor fills
the daemon's memory).  If the child has exited but something it started
outside its group still holds the output pipes, they are closed after the
grace period (``truncated`` is then set).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from twisted.internet import defer, error, protocol
from twisted.internet.interfaces import IDelayedCall, IReactorProcess, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()

#: Seconds between SIGTERM and SIGKILL when a child is ended.
DEFAULT_GRACE = 5.0
#: Bytes kept of each of stdout and stderr.
DEFAULT_MAX_OUTPUT = 1024 * 1024
#: The child's descriptor on which the trampoline reports a failed exec.
_EXEC_ERROR_FD = 3

# sys.argv[1] holds flags: "l" keeps LC_CTYPE (Python sets it in its own environment
# when it starts in the C locale, PEP 538: only a caller's own LC_CTYPE may pass on),
# "m" sends standard error to standard output (one stream, in order).
_TRAMPOLINE = (
    "import os,sys\n"
    "os.setsid()\n"
    f"os.set_inheritable({_EXEC_ERROR_FD},False)\n"
    "if 'l' not in sys.argv[1]: os.environ.pop('LC_CTYPE',None)\n"
    "if 'm' in sys.argv[1]: os.dup2(1,2)\n"
    "try:\n"
    " os.execve(sys.argv[2],sys.argv[2:],os.environ)\n"
    "except OSError as e:\n"
    f" os.write({_EXEC_ERROR_FD},(e.strerror or str(e)).encode('utf-8','replace'))\n"
    " os._exit(127)\n"
)

Kill = Callable[[int, int], None]
#: Receives every chunk of a child's standard output and error, as it comes.
OutputSink = Callable[[bytes], None]


def kill_group(pid: int, sig: int) -> None:
    """Signal the process group led by ``pid``; the process itself if it has not
    made its group yet (between spawn and ``setsid``).  A group that is gone is fine."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


@dataclass(frozen=True)
class ProcessOutcome:
    """How a child ended: its exit code or signal, its (bounded) output.

    ``exec_error`` is set (and the rest empty) when the program could not be
    started; ``timed_out`` when the run's timeout ended it.
    """

    argv: tuple[str, ...]
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    exec_error: str | None = None
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """Started, not timed out, exit status 0."""
        return self.exec_error is None and not self.timed_out and self.exit_code == 0

    def reason(self) -> str:
        """Why it failed, in Ganeti's ``RunResult.fail_reason`` words ('' if it did not)."""
        if self.exec_error is not None:
            return self.exec_error
        if self.timed_out:
            return "timeout"
        if self.signal is not None:
            return f"terminated by signal {self.signal}"
        if self.exit_code:
            return f"exited with exit code {self.exit_code}"
        return ""


class _Child(protocol.ProcessProtocol):
    """One running child: collects output, fires its Deferred when it has ended."""

    def __init__(self, owner: ChildProcesses, argv: tuple[str, ...], stdin: bytes | None,
                 max_output: int, on_output: OutputSink | None = None) -> None:
        self.owner = owner
        self.on_output = on_output
        self.argv = argv
        self.stdin = stdin
        self.max_output = max_output
        self.out: dict[int, list[bytes]] = {1: [], 2: []}
        self.size: dict[int, int] = {1: 0, 2: 0}
        self.exec_error = b""
        self.truncated = False
        self.timed_out = False
        self.cancelled = False
        self.pid: int | None = None
        self.ended = False
        self.deferred: defer.Deferred[ProcessOutcome] = defer.Deferred(self._cancel)
        self.timer: IDelayedCall | None = None
        self.kill_timer: IDelayedCall | None = None
        self.linger_timer: IDelayedCall | None = None
        self.waiters: list[defer.Deferred[None]] = []  # fired once the child has ended

    # -- process protocol -------------------------------------------------------------

    def connectionMade(self) -> None:
        if self.stdin:
            self.transport.write(self.stdin)  # type: ignore[union-attr]
        self.transport.closeStdin()  # type: ignore[union-attr]

    def childDataReceived(self, childFD: int, data: bytes) -> None:  # noqa: N803 (Twisted's)
        if childFD == _EXEC_ERROR_FD:
            self.exec_error = (self.exec_error + data)[:4096]
            return
        if childFD not in self.out:
            return
        if self.on_output is not None:
            self.on_output(data)
        room = self.max_output - self.size[childFD]
        if len(data) > room:
            self.truncated = True
            data = data[:max(room, 0)]
        if data:
            self.out[childFD].append(data)
            self.size[childFD] += len(data)

    def processExited(self, reason: Failure) -> None:
        # A process that left the group (its own setsid) may still hold the output
        # pipes: stop waiting for them after the grace period.
        self.linger_timer = self.owner.clock.callLater(self.owner.grace, self._close_pipes)

    def _close_pipes(self) -> None:
        self.linger_timer = None
        if self.transport is not None:
            self.truncated = True
            self.transport.loseConnection()

    def processEnded(self, reason: Failure) -> None:
        self.ended = True
        for timer in (self.timer, self.kill_timer, self.linger_timer):
            if timer is not None and timer.active():
                timer.cancel()
        self.owner._ended(self)
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            w.callback(None)
        code: int | None = None
        sig: int | None = None
        value = reason.value
        if isinstance(value, error.ProcessDone):
            code = 0
        elif isinstance(value, error.ProcessTerminated):
            code, sig = value.exitCode, value.signal
        if self.deferred.called:  # cancelled: nobody waits for the outcome
            return
        if self.exec_error:
            outcome = ProcessOutcome(self.argv, None, None, b"", b"",
                                     exec_error=self.exec_error.decode("utf-8", "replace"))
        else:
            outcome = ProcessOutcome(self.argv, code, sig, b"".join(self.out[1]),
                                     b"".join(self.out[2]), timed_out=self.timed_out,
                                     truncated=self.truncated)
        self.deferred.callback(outcome)

    # -- ending -----------------------------------------------------------------------

    def _cancel(self, _: defer.Deferred[ProcessOutcome]) -> None:
        self.cancelled = True
        self.terminate()

    def _timeout(self) -> None:
        self.timer = None
        self.timed_out = True
        self.terminate()

    def terminate(self) -> None:
        """SIGTERM to the group now, SIGKILL after the grace period unless it has ended."""
        if self.ended or self.pid is None or self.kill_timer is not None:
            return
        self.owner.kill(self.pid, signal.SIGTERM)
        self.kill_timer = self.owner.clock.callLater(self.owner.grace, self._kill)

    def _kill(self) -> None:
        if not self.ended and self.pid is not None:
            log.warn("Child {pid} ({argv}) outlived SIGTERM by {grace} s; killing its group",
                     pid=self.pid, argv=" ".join(self.argv), grace=self.owner.grace)
            self.owner.kill(self.pid, signal.SIGKILL)


@dataclass
class ChildProcesses:
    """Runs the external programs of RPC calls (see the module docstring).

    ``reactor`` spawns processes; ``clock`` times timeouts and the grace
    period; ``kill`` signals a group (tests may record instead).
    """

    reactor: IReactorProcess
    clock: IReactorTime
    grace: float = DEFAULT_GRACE
    max_output: int = DEFAULT_MAX_OUTPUT
    kill: Kill = kill_group
    python: str = field(default=sys.executable)
    running: dict[int, _Child] = field(default_factory=dict)

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float | None = None, cwd: str = "/",
            stdin: bytes | None = None, on_output: OutputSink | None = None,
            merge_stderr: bool = False) -> defer.Deferred[ProcessOutcome]:
        """Start ``argv`` (``argv[0]`` an absolute path) in its own process group.

        ``env`` is the whole environment (default: the daemon's own).  The
        Deferred fires with the outcome once the child has ended and its
        output is closed; cancelling it ends the child's group.  ``on_output``
        also gets all of standard output and error as it comes (the OS
        scripts' log files), not only the kept part; ``merge_stderr`` makes
        them one stream (``stdout``), in the order the program wrote them.
        """
        args = tuple(str(a) for a in argv)
        if not args or not os.path.isabs(args[0]):
            raise ValueError(f"not an absolute program path: {args[:1]}")
        child = _Child(self, args, stdin, self.max_output, on_output)
        environ = dict(os.environ if env is None else env)
        flags = "-" + ("l" if "LC_CTYPE" in environ else "") + ("m" if merge_stderr else "")
        transport = self.reactor.spawnProcess(
            child, self.python, [self.python, "-I", "-S", "-c", _TRAMPOLINE, flags, *args],
            env=environ, path=cwd,
            childFDs={0: "w", 1: "r", 2: "r", _EXEC_ERROR_FD: "r"})
        child.pid = transport.pid
        if child.pid is not None and not child.ended:
            self.running[child.pid] = child
        if timeout is not None and not child.ended:
            child.timer = self.clock.callLater(timeout, child._timeout)
        return child.deferred

    def _ended(self, child: _Child) -> None:
        if child.pid is not None:
            self.running.pop(child.pid, None)

    def stop_all(self) -> defer.Deferred[None]:
        """End every running child (SIGTERM, SIGKILL after the grace); fires when all
        have ended."""
        waits: list[defer.Deferred[None]] = []
        for child in list(self.running.values()):
            if child.ended:
                continue
            done: defer.Deferred[None] = defer.Deferred()
            child.waiters.append(done)
            waits.append(done)
            child.terminate()
        return defer.DeferredList(waits).addCallback(lambda _: None)
