"""Instance lifecycle events of this node, for the master's long poll.

A ring of the last :data:`RING_SIZE` events, each with a serial that grows by one
from 1 per noded start, and a ``boot_id`` drawn at random when the ring is made
(a master holding a serial of an earlier noded sees the boot_id change).
:meth:`InstanceEvents.wait` answers ``instance_events(since, timeout)``
(the shared interfaces of issue 17, item 4): at once if an event newer than
``since`` is retained, else when one arrives or ``timeout`` (clamped to 0..30 s)
passes on the injected clock.  Everything runs on the reactor.
"""

from __future__ import annotations

import collections
import secrets
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime

RING_SIZE = 1000
MAX_WAIT = 30.0
#: What an event may say happened.
EVENTS = ("started", "stopped", "crashed", "shutdown")


class InstanceEvents:
    """The ring of events and the calls waiting for the next one."""

    def __init__(self, clock: IReactorTime, size: int = RING_SIZE,
                 boot_id: str | None = None) -> None:
        self.clock = clock
        self.boot_id = boot_id or secrets.token_hex(16)
        self.serial = 0
        self._ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=size)
        self._waiters: list[defer.Deferred[None]] = []

    def emit(self, instance: str, hypervisor: str, event: str, reason: str = "") -> None:
        """Record one event and wake every waiting call."""
        if event not in EVENTS:
            raise ValueError(f"unknown instance event {event!r}")
        self.serial += 1
        self._ring.append({"serial": self.serial, "instance": instance,
                           "hypervisor": hypervisor, "event": event, "reason": reason,
                           "time": self.clock.seconds()})
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.callback(None)

    def answer(self, since: int) -> dict[str, Any]:
        """The retained events after ``since`` (all of them for a ``since`` from the future)."""
        events = [e for e in self._ring if since > self.serial or e["serial"] > since]
        return {"boot_id": self.boot_id, "serial": self.serial,
                "events": [dict(e) for e in events]}

    def _has_news(self, since: int) -> bool:
        if not self._ring:
            return False
        return since > self.serial or self._ring[-1]["serial"] > since

    async def wait(self, since: int, timeout: float) -> dict[str, Any]:
        """Answer now if there is news, else when there is or ``timeout`` passes."""
        timeout = min(max(float(timeout), 0.0), MAX_WAIT)
        if self._has_news(since) or timeout == 0:
            return self.answer(since)
        d: defer.Deferred[None] = defer.Deferred(lambda dd: self._forget(dd))
        self._waiters.append(d)
        timer = self.clock.callLater(timeout, self._expire, d)
        try:
            await d
        finally:
            if timer.active():
                timer.cancel()
            self._forget(d)
        return self.answer(since)

    def _expire(self, d: defer.Deferred[None]) -> None:
        self._forget(d)
        if not d.called:
            d.callback(None)

    def _forget(self, d: defer.Deferred[None]) -> None:
        try:
            self._waiters.remove(d)
        except ValueError:
            pass
