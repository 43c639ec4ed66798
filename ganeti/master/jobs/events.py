"""The in-process event bus: every job change, in order, with a serial.

Publishers (the job queue) call :meth:`EventBus.publish`; subscribers (LUXI
``WaitForJobChange`` waiters, the LUXI event stream that feeds the RAPI
daemon's WebSocket feeds) get each event once, in serial order.  A bounded
history lets a subscriber resume from the last serial it saw; one that asks
for events older than the history gets a single ``resync`` event first, so it
knows to re-read the state instead of silently missing changes.

Serials start at the daemon's start time in microseconds, so they keep
growing across restarts; a client holding a serial from before a restart is
older than the history and is told to resync.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.luxi.stream import Send, Stop, Stream

RESYNC = "resync"
DEFAULT_HISTORY = 50000


@dataclass(frozen=True)
class Event:
    """One change: serial, kind (e.g. ``job``, ``archive``, ``resync``), data, time."""

    serial: int
    kind: str
    data: dict[str, Any]
    time: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used on the LUXI event stream."""
        return {"serial": self.serial, "kind": self.kind, "time": self.time, **self.data}


Listener = Callable[[Event], None]


class Subscription:
    """A live subscription; :meth:`cancel` ends it."""

    def __init__(self, bus: EventBus, listener: Listener) -> None:
        self._bus = bus
        self.listener = listener
        self.active = True

    def cancel(self) -> None:
        """Stop receiving events."""
        if self.active:
            self.active = False
            self._bus._subscribers.discard(self)


class EventBus:
    """Ordered, serial-numbered events with a bounded history for resuming."""

    log = Logger()

    def __init__(self, clock: IReactorTime, history: int = DEFAULT_HISTORY,
                 first_serial: int | None = None) -> None:
        self._clock = clock
        self._history: deque[Event] = deque(maxlen=history)
        start = int(clock.seconds() * 1_000_000) if first_serial is None else first_serial
        self.last_serial = start
        self._subscribers: set[Subscription] = set()

    @property
    def oldest_serial(self) -> int:
        """The serial of the oldest event still kept (last_serial + 1 if none)."""
        return self._history[0].serial if self._history else self.last_serial + 1

    def publish(self, kind: str, data: dict[str, Any]) -> Event:
        """Record an event and deliver it to every subscriber."""
        self.last_serial += 1
        event = Event(self.last_serial, kind, data, self._clock.seconds())
        self._history.append(event)
        for sub in list(self._subscribers):
            if sub.active:
                self._deliver(sub, event)
        return event

    def _deliver(self, sub: Subscription, event: Event) -> None:
        try:
            sub.listener(event)
        except Exception:
            self.log.failure("Event subscriber failed; unsubscribing it")
            sub.cancel()

    def subscribe(self, listener: Listener, since: int | None = None) -> Subscription:
        """Deliver events after serial ``since`` (None: only new ones), then live ones.

        If ``since`` is older than the history, a ``resync`` event comes first
        (data: ``oldest`` and ``last`` serials) and delivery continues live.
        """
        sub = Subscription(self, listener)
        if since is not None and since < self.last_serial:
            if since < self.oldest_serial - 1:
                resync = Event(self.last_serial, RESYNC,
                               {"oldest": self.oldest_serial, "last": self.last_serial,
                                "requested": since}, self._clock.seconds())
                self._deliver(sub, resync)
            else:
                for event in self._events_after(since):
                    if not sub.active:
                        break
                    self._deliver(sub, event)
        if sub.active:
            self._subscribers.add(sub)
        return sub

    def _events_after(self, since: int) -> list[Event]:
        # History serials are consecutive, so the position is arithmetic.
        start = since + 1 - self.oldest_serial
        return list(self._history)[max(start, 0):]

    def wait_for(self, match: Callable[[Event], bool],
                 timeout: float) -> defer.Deferred[Event | None]:
        """Fires with the next event for which ``match`` is true, or None after ``timeout``."""
        d: defer.Deferred[Event | None] = defer.Deferred(lambda _: sub.cancel())

        def on_event(event: Event) -> None:
            if match(event):
                sub.cancel()
                timer.cancel()
                d.callback(event)

        def on_timeout() -> None:
            sub.cancel()
            d.callback(None)

        sub = self.subscribe(on_event)
        timer = self._clock.callLater(timeout, on_timeout)
        d.addBoth(self._cancel_timer, timer)
        return d

    @staticmethod
    def _cancel_timer(result: Any, timer: Any) -> Any:
        if timer.active():
            timer.cancel()
        return result

    @property
    def subscriber_count(self) -> int:
        """Live subscriptions (for the lock-free statistics of tests and metrics)."""
        return len(self._subscribers)


def subscribe_events_method(bus: EventBus) -> Callable[[int | None], Stream]:
    """The LUXI ``SubscribeEvents(since)`` implementation over ``bus``.

    The first reply tells the client where the stream starts
    (``last_serial``, ``oldest_serial``); events follow on the connection.
    """

    def subscribe_events(since: int | None) -> Stream:
        def first_reply() -> dict[str, int]:
            return {"last_serial": bus.last_serial, "oldest_serial": bus.oldest_serial}

        def start(send: Send) -> Stop:
            return bus.subscribe(lambda event: send(event.to_dict()), since).cancel

        return Stream(first_reply, start)

    return subscribe_events
