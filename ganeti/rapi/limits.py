"""Fair shares for RAPI clients: connections and heavy reads per address, and
rate-limited logging of what clients do wrong.

One client address must not be able to take the daemon from everybody else:

* :class:`ConnectionGate` admits a connection only while its address holds
  fewer than ``per_address`` connections, and keeps the last ``reserve``
  places of the daemon's ``max_clients`` for addresses that hold none, so a
  new client can connect even when the daemon is nearly full;
* :class:`HeavyReads` bounds the reads whose cost grows with the cluster
  (bulk lists, queries): per address, at most ``per_address`` are in flight
  (more are answered 429), and over all addresses at most ``max_running``
  handler runs talk to masterd at once; the runs waiting for a slot are
  served round-robin by address, so one busy address does not starve others;
* :class:`AddressLog` writes at most one line per address and reason every
  ``interval`` seconds, and at most ``max_lines`` lines per interval in all.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core.loglimit import LineBudget
from ganeti.rapi import errors

#: The daemon's client limit when none is given (``--max-clients``' default).
DEFAULT_MAX_CLIENTS = 1000
#: Connections one address may hold at once.
DEFAULT_PER_ADDRESS = 100
#: Places of ``max_clients`` kept for addresses that hold no connection yet.
DEFAULT_RESERVE = 100
#: Heavy reads in flight per address, and handler runs of heavy reads at once.
DEFAULT_HEAVY_PER_ADDRESS = 8
DEFAULT_HEAVY_RUNNING = 2
#: The address of a connection whose peer is not an IP address (tests, UNIX sockets).
UNKNOWN_ADDRESS = "-"

Release = Callable[[], None]


def peer_host(address: Any) -> str:
    """The host part of a transport address, or :data:`UNKNOWN_ADDRESS`."""
    host = getattr(address, "host", None)
    return host if isinstance(host, str) and host else UNKNOWN_ADDRESS


class ConnectionGate:
    """Counts open connections per address and decides who may open another.

    ``max_clients`` should be the listener's own limit (``--max-clients``):
    the gate then refuses early enough that the listener's limit is never
    what refuses a new address.
    """

    def __init__(self, max_clients: int = DEFAULT_MAX_CLIENTS,
                 per_address: int = DEFAULT_PER_ADDRESS,
                 reserve: int = DEFAULT_RESERVE) -> None:
        if max_clients < 1 or per_address < 1 or reserve < 0:
            raise ValueError("connection limits must be positive")
        self.max_clients = max_clients
        self.per_address = min(per_address, max_clients)
        # A reserve as large as the limit would keep every address to one connection.
        self.reserve = min(reserve, max_clients - 1)
        self.open = 0
        self.by_address: dict[str, int] = {}

    def refusal(self, address: str) -> str | None:
        """Why a new connection from ``address`` is refused, or None if it may open."""
        held = self.by_address.get(address, 0)
        if held >= self.per_address:
            return f"{held} connections from this address (at most {self.per_address})"
        if self.open >= self.max_clients:
            return f"{self.open} clients connected (at most {self.max_clients})"
        if held and self.open >= self.max_clients - self.reserve:
            return (f"{self.open} clients connected; the last {self.reserve} places are "
                    "kept for addresses without a connection")
        return None

    def admit(self, address: str) -> str | None:
        """Count a connection from ``address`` unless refused; returns the refusal."""
        reason = self.refusal(address)
        if reason is None:
            self.open += 1
            self.by_address[address] = self.by_address.get(address, 0) + 1
        return reason

    def release(self, address: str) -> None:
        """A connection admitted from ``address`` has closed."""
        held = self.by_address.get(address, 0)
        if held <= 0:
            return
        self.open -= 1
        if held == 1:
            del self.by_address[address]
        else:
            self.by_address[address] = held - 1


class _Once:
    """A release callable that acts only the first time it is called."""

    __slots__ = ("_action",)

    def __init__(self, action: Release) -> None:
        self._action: Release | None = action

    def __call__(self) -> None:
        action, self._action = self._action, None
        if action is not None:
            action()


class HeavyReads:
    """Per-address tickets for heavy reads, and the global slots their runs take.

    :meth:`ticket` is taken when a heavy request is accepted and released
    once its answer has been sent (or its client has gone), so that the
    answers one address holds in memory stay bounded too.  :meth:`acquire`
    is taken by the handler run (one run may answer several coalesced
    requests) and released when the run is done.
    """

    def __init__(self, per_address: int = DEFAULT_HEAVY_PER_ADDRESS,
                 max_running: int = DEFAULT_HEAVY_RUNNING, max_tracked: int = 65536) -> None:
        if per_address < 1 or max_running < 1:
            raise ValueError("heavy-read limits must be positive")
        self.per_address = per_address
        self.max_running = max_running
        self.max_tracked = max_tracked
        self.in_flight: dict[str, int] = {}
        self.running = 0
        # address -> runs waiting for a slot; the first address is served next.
        self._waiting: collections.OrderedDict[str, collections.deque[defer.Deferred[Release]]] = (
            collections.OrderedDict())

    # Tickets: requests in flight per address

    def ticket(self, address: str) -> Release:
        """Admit one heavy request from ``address``; raises 429 past the bound.

        Returns the (idempotent) release to call when its answer is sent.
        """
        held = self.in_flight.get(address, 0)
        if held >= self.per_address or (not held and len(self.in_flight) >= self.max_tracked):
            raise errors.HttpTooManyRequests(
                f"Too many large reads in flight from this address (at most "
                f"{self.per_address}); retry when an answer has arrived",
                headers={"Retry-After": "1"})
        self.in_flight[address] = held + 1
        return _Once(lambda: self._end_ticket(address))

    def _end_ticket(self, address: str) -> None:
        held = self.in_flight.get(address, 0)
        if held <= 1:
            self.in_flight.pop(address, None)
        else:
            self.in_flight[address] = held - 1

    # Slots: handler runs at once

    @property
    def queued(self) -> int:
        """Runs waiting for a slot."""
        return sum(len(q) for q in self._waiting.values())

    def acquire(self, address: str) -> defer.Deferred[Release]:
        """A slot for one run on behalf of ``address``: fires with its release.

        Cancelling the Deferred gives up the wait.
        """
        if self.running < self.max_running and not self._waiting:
            self.running += 1
            return defer.succeed(_Once(self._end_run))
        waiter: defer.Deferred[Release] = defer.Deferred(
            lambda d: self._forget(address, d))
        self._waiting.setdefault(address, collections.deque()).append(waiter)
        return waiter

    def _forget(self, address: str, waiter: defer.Deferred[Release]) -> None:
        queue = self._waiting.get(address)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._waiting[address]

    def _end_run(self) -> None:
        self.running -= 1
        while self._waiting and self.running < self.max_running:
            address, queue = next(iter(self._waiting.items()))
            waiter = queue.popleft()
            # Round-robin: the address goes to the back of the line.
            del self._waiting[address]
            if queue:
                self._waiting[address] = queue
            self.running += 1
            waiter.callback(_Once(self._end_run))


class AddressLog:
    """Logs about client misbehaviour, at most one line per (address, reason) per
    ``interval`` seconds and ``max_lines`` lines per interval overall.

    Suppressed lines are counted and the count is reported with the next
    line of the same key; the table of keys is bounded
    (:class:`ganeti.core.loglimit.LineBudget`).
    """

    def __init__(self, clock: IReactorTime, logger: Logger, interval: float = 60.0,
                 max_lines: int = 100, max_keys: int = 4096) -> None:
        self.clock = clock
        self.logger = logger
        self.budget = LineBudget(interval, max_keys=max_keys, max_lines=max_lines)

    @property
    def suppressed(self) -> int:
        """Lines suppressed in all (for tests and statistics)."""
        return self.budget.suppressed

    def allow(self, address: str, reason: str) -> int | None:
        """Whether a line about ``(address, reason)`` may be written now: the number
        of lines suppressed for it since the last one, or None (suppressed)."""
        allowed = self.budget.allow((address, reason), self.clock.seconds())
        return None if allowed is None else allowed[1]

    def info(self, address: str, reason: str, message: str, **fields: Any) -> bool:
        """Log ``message`` (a twisted.logger format; ``address``, ``reason`` and
        ``suppressed`` are available) unless rate-limited; True if logged."""
        suppressed = self.allow(address, reason)
        if suppressed is None:
            return False
        self.logger.info(message, address=address, reason=reason, suppressed=suppressed,
                         **fields)
        return True
