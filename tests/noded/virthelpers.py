"""Driving the libvirt thread from a test: a reactor stub and a settle loop.

The libvirt thread hands its answers over with ``callFromThread``; the stub queues
them and :func:`settle` runs them until the Deferred under test fires, blocking on
the queue (never sleeping).
"""

from __future__ import annotations

import queue
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure


class ThreadReactor:
    """callFromThread into a queue that the test drains."""

    def __init__(self) -> None:
        self.calls: queue.Queue[Any] = queue.Queue()

    def callFromThread(self, f: Any, *args: Any) -> None:
        self.calls.put((f, args))

    def run_pending(self) -> None:
        while True:
            try:
                f, args = self.calls.get_nowait()
            except queue.Empty:
                return
            f(*args)


def settle(reactor: ThreadReactor, d: Any, timeout: float = 20.0) -> Any:
    """Run the libvirt thread's hand-offs until ``d`` fires; its result (or raise)."""
    d = defer.ensureDeferred(d) if not isinstance(d, defer.Deferred) else d
    while not d.called:
        f, args = reactor.calls.get(timeout=timeout)
        f(*args)
    out: list[Any] = []
    d.addBoth(out.append)
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]
