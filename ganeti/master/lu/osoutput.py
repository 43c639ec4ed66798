"""OS script output streamed into the job's log while the script runs.

An OS script call (``instance_os_add``, ``instance_run_rename``) can run for
hours; the node keeps the script's output (hidden values replaced) under a run
id the master chooses (:mod:`ganeti.noded.osoutput`).  :func:`run_os_call`
makes the call with that run id and, while it is pending, asks the node with
``os_output`` every :data:`POLL_INTERVAL` seconds of the LU's clock (at once
again while the node has more), feeding each new line to the job's log.

Nothing here can fail the job: a node daemon that does not know ``os_output``
(the first read fails) gets the call without a run id, as before; a read that
fails later ends the streaming, and the call goes on.  A job log gets at most
:data:`MAX_LINES` lines per run, then one line that names the log file on the
node.  Cancelling the LU cancels the script call (the node ends the script).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from ganeti.core.objects import Node
from ganeti.master.lu.base import LogicalUnit
from ganeti.rpc.client import RpcResult

#: Seconds between two reads of a running script's output.
POLL_INTERVAL = 1.0
#: Lines of one run put into the job's log; then one "truncated" line.
MAX_LINES = 1000
#: Reads one after the other once the call has ended (the node has the rest).
MAX_FINAL_READS = 10
#: Reads that may fail in a row before the streaming stops.
MAX_FAILED_READS = 3


class _Stream:
    """The lines of one run that reached the job's log so far."""

    def __init__(self, feedback: Callable[[str, Any], None], node: Node, what: str) -> None:
        self.feedback = feedback
        self.node = node
        self.what = what
        self.offset = 0
        self.shown = 0
        self.done = False
        self.stopped = False  # nothing more to read (truncated, or reads failing)
        self.failures = 0

    def take(self, result: RpcResult) -> bool:
        """One ``os_output`` answer; whether the node may have more at once."""
        if not result.success:
            self.failures += 1
            self.stopped = self.failures >= MAX_FAILED_READS
            return False
        self.failures = 0
        answer = result.payload
        if answer is None:  # the node has not started the run yet
            return False
        log_file = answer.get("log_file") or "the OS log directory"
        for line in answer["lines"]:
            if self.shown >= MAX_LINES:
                self._truncated(log_file)
                return False
            self.feedback("message", f"{self.what}: {line}")
            self.shown += 1
        self.offset = max(self.offset, int(answer["next"]))
        if answer["truncated"]:
            self._truncated(log_file)
            return False
        self.done = bool(answer["done"])
        return bool(answer["lines"]) and not self.done

    def _truncated(self, log_file: str) -> None:
        self.feedback("message", f"{self.what}: ... output truncated, see {log_file} on "
                                 f"node {self.node.name}")
        self.stopped = True


class _Waker:
    """Waits on the clock, cut short when the call ends."""

    def __init__(self, main: defer.Deferred[Any], clock: IReactorTime) -> None:
        self.clock = clock
        self.waiting: list[defer.Deferred[None]] = []
        main.addBoth(self._ended)

    def _ended(self, result: Any) -> Any:
        for waiter in self.waiting:
            if not waiter.called:
                waiter.callback(None)
        self.waiting.clear()
        return result

    def sleep(self, seconds: float) -> defer.Deferred[None]:
        """Fires after ``seconds`` or when the call has ended, whichever is first."""
        timer: IDelayedCall | None = None

        def cancel(_: defer.Deferred[None]) -> None:
            if timer is not None and timer.active():
                timer.cancel()
        waiter: defer.Deferred[None] = defer.Deferred(cancel)

        def wake() -> None:
            if not waiter.called:
                waiter.callback(None)

        def stop_timer(result: Any) -> Any:
            cancel(waiter)
            return result
        timer = self.clock.callLater(seconds, wake)
        waiter.addBoth(stop_timer)
        self.waiting = [w for w in self.waiting if not w.called]
        self.waiting.append(waiter)
        return waiter


async def run_os_call(lu: LogicalUnit, node: Node, call: str, args: list[Any],
                      what: str) -> RpcResult:
    """``call`` with ``args`` on ``node`` (an OS script call taking a run id last),
    its script's output streamed to the job's log as ``<what>: <line>``; the
    node's result."""
    ctx = lu.ctx
    rpc = ctx.rpc()
    run_id = uuid.uuid4().hex
    probe = await rpc.call_one(node, "os_output", [run_id, 0])
    if not probe.success:  # a node daemon without os_output: no streaming
        return await rpc.call_one(node, call, args)
    stream = _Stream(ctx.feedback, node, what)
    main: defer.Deferred[RpcResult] = rpc.call_one(node, call, [*args, run_id])
    waker = _Waker(main, ctx.clock)
    try:
        while not main.called and not stream.stopped:
            await waker.sleep(POLL_INTERVAL)
            while not main.called and not stream.stopped:
                answer = await rpc.call_one(node, "os_output", [run_id, stream.offset])
                if not stream.take(answer):
                    break
        result = await main
    except BaseException:
        main.cancel()  # the LU is cancelled: so is the script
        main.addErrback(lambda _: None)  # its CancelledError is this one
        raise
    for _ in range(MAX_FINAL_READS):
        if stream.done or stream.stopped:
            break
        answer = await rpc.call_one(node, "os_output", [run_id, stream.offset])
        if not stream.take(answer) and not stream.done:
            break
    return result
