"""A whole ganeti-masterd in process, and a LUXI client that talks to it without sockets.

:class:`InProcessMaster` runs the real :class:`MasterDaemon` on a
``MemoryReactorClock`` with synchronous blocking I/O (as
tests/master/test_jobqueue.py does).  :class:`DaemonLuxiClient` has the real
client's public methods; each call goes through the daemon's LUXI dispatcher
with the real wire encoding (JSON, integral floats, encoded errors), and when
the answer is not ready yet (WaitForJobChange, a job running a delay) the
fake reactor is advanced to its next timed call until it is.  So a CLI
command that waits for a job runs to completion at once, in simulated time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from ganeti.core import config as configmod
from ganeti.core.objects import ConfigData
from ganeti.luxi import wire
from ganeti.luxi.client import LuxiMethods
from ganeti.luxi.methods import METHODS
from ganeti.luxi.server import RequestRefused
from ganeti.master.service import MasterDaemon
from tests.fakes.configs import node_paths, small_config

START_TIME = 1800000000.0
Hook = Callable[[str, tuple[Any, ...]], None]


def _sync(fn: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
    return defer.maybeDeferred(fn, *args)


class InProcessMaster:
    """A master daemon on a fake clock, with the config written under ``tmpdir``."""

    def __init__(self, tmpdir: str, cfg: ConfigData | None = None, rpc: Any = None,
                 allocators: Any = None) -> None:
        self.paths = node_paths(tmpdir)
        os.makedirs(self.paths.data_dir, exist_ok=True)
        cfg = cfg if cfg is not None else small_config()
        with open(self.paths.config_file, "w", encoding="utf-8") as f:
            f.write(configmod.dump(cfg))
        self.reactor = MemoryReactorClock()
        self.reactor.advance(START_TIME)
        self.daemon = MasterDaemon(self.reactor, self.paths,
                                   configmod.load_file(self.paths.config_file),
                                   run_blocking=_sync, durable=False, rpc=rpc,
                                   allocators=allocators)
        self.daemon.startService()
        self.dispatcher = self.daemon.luxi.factory.dispatcher
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        #: Called before each LUXI call with (method, args): lets a test act
        #: "while" a command runs (cancel a job it is watching, ...).
        self.hooks: list[Hook] = []

    def stop(self) -> None:
        """Kill the unfinished jobs, let them end, then stop the daemon (idempotent).

        Jobs left suspended would be finished by the garbage collector later,
        in the middle of some other test.
        """
        if not self.daemon.running:
            return
        queue = self.daemon.queue
        for job_id in sorted(queue.jobs):
            if not queue.jobs[job_id].finalized:
                self.run_until(defer.Deferred.fromCoroutine(queue.cancel(job_id, True)))
        for _ in range(1000):
            if not queue.running:
                break
            self.reactor.advance(1)
        self.daemon.stopService()

    @property
    def config(self) -> ConfigData:
        """The daemon's current configuration."""
        return self.daemon.config_writer.config

    def client(self) -> DaemonLuxiClient:
        """A new client (what a tool's luxi_factory returns)."""
        return DaemonLuxiClient(self)

    def run_until(self, d: defer.Deferred[Any], max_seconds: float = 3600.0) -> Any:
        """Advance the clock until ``d`` fires; its result (a Failure is returned)."""
        box: list[Any] = []
        d.addBoth(box.append)
        start = self.reactor.seconds()
        while not box:
            pending = [call.getTime() for call in self.reactor.getDelayedCalls()
                       if call.active()]
            if not pending:
                raise AssertionError("the call would wait forever: nothing is scheduled")
            when = min(pending)
            if when - start > max_seconds:
                raise AssertionError(f"the call did not finish within {max_seconds}s "
                                     "of simulated time")
            self.reactor.advance(max(0.0, when - self.reactor.seconds()))
        return box[0]

    def submit(self, *ops: dict[str, Any]) -> int:
        """Submit a job directly (not through a tool); its id."""
        return int(self.client().call("SubmitJob", list(ops)))

    def finish(self, job_id: int) -> tuple[str, list[Any], list[str]]:
        """Advance the clock until the job is final and replicated;
        ``(status, [results], [log messages])``."""
        queue = self.daemon.queue
        for _ in range(100000):
            job = queue.visible.get(job_id)
            if job is not None and job.finalized:
                break
            pending = [d.getTime() for d in self.reactor.getDelayedCalls() if d.active()]
            if not pending:
                raise AssertionError(f"job {job_id} waits for nothing")
            self.reactor.advance(max(0.0, min(pending) - self.reactor.seconds()))
        self.run_until(self.daemon.replicator.jobs_idle())
        status, results, log = self.client().call("QueryJobs", [job_id],
                                                  ["status", "opresult", "oplog"])[0]
        return status, results, [entry[3] for entries in log for entry in entries]


class DaemonLuxiClient(LuxiMethods):
    """The real LuxiClient's public interface, answered by an :class:`InProcessMaster`."""

    max_calls = 10000  # a tool that loops forever fails the test instead of hanging it

    def __init__(self, master: InProcessMaster) -> None:
        self.master = master
        self.closed = False
        self._count = 0

    def call(self, method: str, *args: Any) -> Any:
        spec = METHODS.get(method)
        if spec is not None:
            spec.check_args(list(args))  # as the real client does
        self._count += 1
        if self._count > self.max_calls:
            raise AssertionError(f"more than {self.max_calls} LUXI calls")
        for hook in list(self.master.hooks):
            hook(method, args)
        self.master.calls.append((method, args))
        frame = wire.encode_request(method, args)[:-1]
        name, wire_args = wire.parse_request(frame)
        outcome = self.master.run_until(self.master.dispatcher.dispatch(name, wire_args))
        if isinstance(outcome, Failure):
            err = outcome.value
            if isinstance(err, RequestRefused):  # answered with a plain string
                response = wire.encode_response(False, str(err.args[0]))
            else:
                response = wire.encode_error(err)
        else:
            response = wire.encode_response(True, outcome)
        return wire.parse_response(response[:-1])

    def close(self) -> None:
        self.closed = True

