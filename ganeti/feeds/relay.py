"""The feed relay: one masterd event stream in, many filtered client streams out.

The relay reads masterd's event stream through one :class:`EventSource`,
whatever the number of clients, and keeps the last ``history`` events, each
encoded once (:func:`ganeti.feeds.protocol.entry_from_event`).

A client (:class:`FeedClient`) is in one of two modes:

* **live**: it is a member of the *group* of clients with the same filter.
  Events are coalesced: at most one flush per ``flush_interval`` (the first
  event after a quiet period goes out at once), and each flush builds one
  batch per group, which every member of the group receives.  The framing of a
  batch is done once too (:class:`Batch` carries it), so the cost of an event
  grows with the number of distinct filters, not of clients.
* **catching up**: a cursor into the history (the serial it has received up
  to).  A new subscription with ``since`` starts here (the replay), and so does
  a live client whose transport says it is full (``pause``): it leaves its
  group and, once the transport drains (``resume``), reads on from the history
  in bounded chunks, one chunk per reactor turn, until it is current again and
  rejoins its group.  A client that falls out of the history gets a ``resync``
  message; one that does so ``max_resyncs`` times within ``resync_window``
  seconds, or stays paused for ``max_pause`` seconds, is closed.

So nothing is queued per client except a few control messages (at most
``max_control``): memory per client is bounded whatever it does, and a slow
reader that recovers within the history misses nothing.

Upstream: when masterd's stream reports a resync (masterd restarted, or the
relay fell behind it), or serials jump, the relay clears its history and
tells every client to resync; while the stream is down, clients get
``{"type": "upstream", "connected": false}``.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from typing import Any, Protocol

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from ganeti.feeds import protocol
from ganeti.feeds.protocol import Entry, Filter, Subscribe

DEFAULT_HISTORY = 10000
DEFAULT_FLUSH_INTERVAL = 0.05
DEFAULT_MAX_PAUSE = 60.0
DEFAULT_MAX_RESYNCS = 3
DEFAULT_RESYNC_WINDOW = 60.0
DEFAULT_CATCHUP_EVENTS = 500
DEFAULT_CATCHUP_BYTES = 128 * 1024
DEFAULT_MAX_CONTROL = 32
#: Catch-up chunks remembered for clients resuming from the same serial.
MAX_CACHED_CHUNKS = 256

EventsListener = Callable[[list[dict[str, Any]]], None]
StateListener = Callable[[bool, "dict[str, Any] | None"], None]


class EventSource(Protocol):
    """masterd's event stream as the relay sees it (``ganeti.luxi.twclient.EventStreamClient``).

    ``on_events`` receives the events of one read, in serial order;
    ``on_state(True, {"last_serial", "oldest_serial"})`` follows each
    (re)connection, ``on_state(False, None)`` each loss.  The source resumes
    by itself from the last serial it delivered.
    """

    def start(self, on_events: EventsListener, on_state: StateListener) -> None:
        """Begin delivering events and state changes."""

    def stop(self) -> None:
        """Stop delivering and close the stream."""


class Batch:
    """A text message for one or more clients; the transport may cache its frame here."""

    __slots__ = ("frame", "payload")

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.frame: bytes | None = None


class Sink(Protocol):
    """The relay's view of a client connection (the WebSocket protocol)."""

    def write_batch(self, batch: Batch) -> None:
        """Write a message now; the relay calls this only while the client is not paused."""

    def close_feed(self, reason: str, abort: bool) -> None:
        """End the connection: ``abort`` for a client that does not read."""


class FeedClient:
    """One connection's subscription and flow-control state (see the module doc)."""

    def __init__(self, relay: FeedRelay, sink: Sink) -> None:
        self.relay = relay
        self.sink = sink
        self.filter: Filter | None = None
        self.live = False
        self.cursor: int | None = None
        self.paused = False
        self.paused_at = 0.0
        self.closed = False
        self._control: deque[bytes] = deque()
        # Clients assume masterd is reachable until told otherwise.
        self._upstream_seen = True
        self._pump_call: IDelayedCall | None = None
        self._deadline_call: IDelayedCall | None = None
        self._slow_resyncs: deque[float] = deque()

    # Called by the connection

    def subscribe(self, request: Subscribe) -> None:
        """Replace the subscription; replays from ``request.since`` when it is given."""
        if not self.closed:
            self.relay._subscribe(self, request)

    def unsubscribe(self) -> None:
        """Stop receiving events (control messages still arrive)."""
        self._reset()

    def send_error(self, message: str) -> None:
        """Tell the client its message was invalid."""
        self._send_control(protocol.error(message))

    def pause(self) -> None:
        """The transport is full: stop writing, leave the group, keep a cursor."""
        if self.paused or self.closed:
            return
        self.paused = True
        self.paused_at = self.relay.clock.seconds()
        if self.live:
            self.relay._leave(self)
            self.cursor = self.relay.flushed_serial
        if self._deadline_call is None:
            self._deadline_call = self.relay.clock.callLater(self.relay.max_pause,
                                                             self._check_deadline)

    def resume(self) -> None:
        """The transport drained: send waiting control messages, then catch up."""
        if not self.paused or self.closed:
            return
        self.paused = False
        if self._control:
            pending = list(self._control)
            self._control.clear()
            self.sink.write_batch(Batch(protocol.batch_payload(pending)))
        self.notify_upstream()
        self._advance()

    def disconnect(self) -> None:
        """The connection is gone: forget the client."""
        if self.closed:
            return
        self.closed = True
        self._reset()
        self._control.clear()
        self._cancel(self._deadline_call)
        self._deadline_call = None
        self.relay._remove(self)

    # Called by the relay

    def notify_upstream(self) -> None:
        """Send the upstream state if it changed since the client last heard it."""
        state = self.relay.upstream_connected
        if not self.paused and not self.closed and self._upstream_seen != state:
            self._upstream_seen = state
            self.sink.write_batch(Batch(protocol.batch_payload([protocol.upstream(state)])))

    def _send_control(self, data: bytes) -> None:
        if self.closed:
            return
        if not self.paused:
            self.sink.write_batch(Batch(protocol.batch_payload([data])))
        elif len(self._control) < self.relay.max_control:
            self._control.append(data)
        else:
            self._close("too many messages are waiting for a client that does not read")

    def _start(self, cursor: int) -> None:
        self.cursor = cursor
        self._advance()

    def _advance(self) -> None:
        if (not self.paused and not self.closed and self.cursor is not None
                and self._pump_call is None):
            self._pump()

    def _pump(self) -> None:
        """One step of catching up: a chunk from the history, or a resync; then go live."""
        self._pump_call = None
        if self.paused or self.closed or self.cursor is None or self.filter is None:
            return
        relay = self.relay
        target = relay.flushed_serial
        assert target is not None
        if self.cursor < target:
            if self.cursor < relay.oldest - 1:
                upstream = self.cursor < relay.reset_serial
                self.cursor = target
                if not upstream and not self._count_slow_resync():
                    return
                code = protocol.RESYNC_UPSTREAM if upstream else protocol.RESYNC_SLOW
                relay.stats["resyncs_slow" if not upstream else "resyncs_upstream"] += 1
                self.sink.write_batch(Batch(protocol.batch_payload(
                    [protocol.resync(target, code)])))
            else:
                batch, self.cursor = relay._catch_up(self.cursor, target, self.filter)
                if batch is not None:
                    self.sink.write_batch(batch)
        if self.paused or self.closed or self.cursor is None:
            return
        if self.cursor >= relay.flushed_serial:  # type: ignore[operator]
            self.cursor = None
            relay._join(self)
            self.notify_upstream()
        else:
            self._pump_call = relay.clock.callLater(0, self._pump)

    def _count_slow_resync(self) -> bool:
        """Record a resync for slowness; False (and the client closed) if it was one too many."""
        relay = self.relay
        now = relay.clock.seconds()
        while self._slow_resyncs and self._slow_resyncs[0] <= now - relay.resync_window:
            self._slow_resyncs.popleft()
        self._slow_resyncs.append(now)
        if len(self._slow_resyncs) >= relay.max_resyncs:
            self._close(f"the client fell behind the history {len(self._slow_resyncs)} times "
                        f"within {relay.resync_window:g}s")
            return False
        return True

    def _check_deadline(self) -> None:
        self._deadline_call = None
        if self.closed or not self.paused:
            return
        remaining = self.paused_at + self.relay.max_pause - self.relay.clock.seconds()
        if remaining <= 0:
            self._close(f"the client did not read for {self.relay.max_pause:g}s")
        else:
            self._deadline_call = self.relay.clock.callLater(remaining, self._check_deadline)

    def _close(self, reason: str) -> None:
        self.relay.stats["closed_slow"] += 1  # the sink logs it (rate-limited, with the peer)
        self.disconnect()
        self.sink.close_feed(reason, abort=True)

    def _reset(self) -> None:
        self.relay._leave(self)
        self.relay._parked.pop(self, None)
        self.filter = None
        self.cursor = None
        self._cancel(self._pump_call)
        self._pump_call = None

    @staticmethod
    def _cancel(call: IDelayedCall | None) -> None:
        if call is not None and call.active():
            call.cancel()


class FeedRelay:
    """Relays masterd's job events to WebSocket clients (see the module doc)."""

    log = Logger()

    def __init__(self, clock: IReactorTime, source: EventSource,
                 history: int = DEFAULT_HISTORY,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL,
                 max_pause: float = DEFAULT_MAX_PAUSE,
                 max_resyncs: int = DEFAULT_MAX_RESYNCS,
                 resync_window: float = DEFAULT_RESYNC_WINDOW,
                 catchup_events: int = DEFAULT_CATCHUP_EVENTS,
                 catchup_bytes: int = DEFAULT_CATCHUP_BYTES,
                 max_control: int = DEFAULT_MAX_CONTROL) -> None:
        if history < 1:
            raise ValueError("history must keep at least one event")
        self.clock = clock
        self.source = source
        self.flush_interval = flush_interval
        self.max_pause = max_pause
        self.max_resyncs = max_resyncs
        self.resync_window = resync_window
        self.catchup_events = catchup_events
        self.catchup_bytes = catchup_bytes
        self.max_control = max_control
        self._history: deque[Entry] = deque(maxlen=history)
        #: Newest serial received from masterd, and newest sent to live clients.
        self.last_serial: int | None = None
        self.flushed_serial: int | None = None
        #: The history was last cleared here: a cursor before it missed an upstream resync.
        self.reset_serial = -1
        self.upstream_connected = False
        self.clients: set[FeedClient] = set()
        self.stats: dict[str, int] = dict.fromkeys(
            ("events", "duplicates", "flushes", "batches", "catchup_batches",
             "resyncs_upstream", "resyncs_slow", "closed_slow"), 0)
        self._pending: list[Entry] = []
        self._flush_call: IDelayedCall | None = None
        self._last_flush = float("-inf")
        self._groups: dict[Filter, dict[FeedClient, None]] = {}
        self._parked: dict[FeedClient, int | None] = {}
        self._accept_jump = False
        self._chunks: dict[tuple[Filter, int, int], tuple[Batch | None, int]] = {}

    @property
    def oldest(self) -> int:
        """The oldest serial kept; a client can resume from ``oldest - 1`` or later."""
        if self._history:
            return self._history[0].serial
        return (self.last_serial or 0) + 1

    @property
    def group_count(self) -> int:
        """Distinct filters among live clients (each costs one encoding per flush)."""
        return len(self._groups)

    def start(self) -> None:
        """Start reading masterd's stream."""
        self.source.start(self._on_events, self._on_state)

    def stop(self) -> None:
        """Stop reading and close every client (1001, going away)."""
        self.source.stop()
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush_call = None
        for client in list(self.clients):
            client.disconnect()
            client.sink.close_feed("the feed is shutting down", abort=False)

    def connect(self, sink: Sink) -> FeedClient:
        """A new connection; it receives nothing until it subscribes."""
        client = FeedClient(self, sink)
        self.clients.add(client)
        return client

    # Upstream

    def _on_state(self, connected: bool, reply: dict[str, Any] | None) -> None:
        if not connected:
            if self.upstream_connected:
                self.log.warn("Feed relay: masterd's event stream is down")
                self._set_upstream(False)
            return
        last = (reply or {}).get("last_serial")
        if not isinstance(last, int) or isinstance(last, bool):
            self.log.error("Feed relay: masterd's SubscribeEvents reply has no last_serial: "
                           "{reply}", reply=reply)
            last = self.last_serial if self.last_serial is not None else 0
        if self.last_serial is None:
            self.last_serial = self.flushed_serial = self.reset_serial = last
        elif last < self.last_serial:
            # Serials never go back on one masterd; a restart with a clock set back does.
            self._upstream_resync(last)
        self._set_upstream(True)
        parked, self._parked = self._parked, {}
        for client, since in parked.items():
            if not client.closed and client.filter is not None:
                self._start(client, since)

    def _set_upstream(self, connected: bool) -> None:
        self.upstream_connected = connected
        for client in list(self.clients):
            client.notify_upstream()

    def _on_events(self, events: list[dict[str, Any]]) -> None:
        history = self._history
        pending = self._pending
        for event in events:
            serial = event.get("serial")
            if event.get("kind") == "resync":
                if not isinstance(serial, int):
                    serial = event.get("last_dropped_serial")
                self._upstream_resync(serial if isinstance(serial, int) else None)
                continue
            if not isinstance(serial, int) or isinstance(serial, bool):
                self.log.warn("Feed relay: event without a serial ignored: {event}",
                              event=event)
                continue
            last = self.last_serial
            if last is None or self._accept_jump:
                self._accept_jump = False
                if last is None:
                    self.flushed_serial = self.reset_serial = serial - 1
                last = serial - 1
            elif serial <= last:
                self.stats["duplicates"] += 1
                continue
            elif serial != last + 1:
                self.log.warn("Feed relay: events {first}..{last} never arrived; resync",
                              first=last + 1, last=serial - 1)
                self._upstream_resync(serial - 1)
            entry = protocol.entry_from_event(event, serial)
            history.append(entry)
            pending.append(entry)
            self.last_serial = serial
        self.stats["events"] += len(events)
        if pending:
            self._schedule_flush()

    def _upstream_resync(self, serial: int | None) -> None:
        """Forget the history and tell every client to resync at ``serial``."""
        self._flush()
        self._history.clear()
        self._chunks.clear()
        if serial is None:
            self._accept_jump = True
        else:
            self.last_serial = serial
        self.flushed_serial = self.reset_serial = last = self.last_serial or 0
        self.log.warn("Feed relay: masterd's event stream resynced at serial {serial}",
                      serial=last)
        batch = Batch(protocol.batch_payload([protocol.resync(last, protocol.RESYNC_UPSTREAM)]))
        for client in list(self.clients):
            if client.live:
                self.stats["resyncs_upstream"] += 1
                client.sink.write_batch(batch)
            elif client.cursor is not None:
                client.cursor = -1  # behind the reset: its next step resyncs

    # Live delivery

    def _schedule_flush(self) -> None:
        if self._flush_call is not None:
            return
        wait = self._last_flush + self.flush_interval - self.clock.seconds()
        if wait <= 0:
            self._flush()
        else:
            self._flush_call = self.clock.callLater(wait, self._flush)

    def _flush(self) -> None:
        """Send the pending events: one batch per group, shared by its members."""
        if self._flush_call is not None:
            if self._flush_call.active():
                self._flush_call.cancel()
            self._flush_call = None
        entries = self._pending
        if not entries:
            return
        self._pending = []
        self._chunks.clear()
        self._last_flush = self.clock.seconds()
        self.flushed_serial = self.last_serial
        self.stats["flushes"] += 1
        everything: list[bytes] | None = None
        for filt, members in list(self._groups.items()):
            if filt.everything:
                if everything is None:
                    everything = [e.data for e in entries if e.data is not None]
                fragments = everything
            else:
                fragments = [e.data for e in entries if filt.matches(e)]  # type: ignore[misc]
            if not fragments:
                continue
            batch = Batch(protocol.batch_payload(fragments))
            self.stats["batches"] += 1
            for client in list(members):
                if client.live:
                    client.sink.write_batch(batch)

    def _join(self, client: FeedClient) -> None:
        assert client.filter is not None
        self._groups.setdefault(client.filter, {})[client] = None
        client.live = True

    def _leave(self, client: FeedClient) -> None:
        if not client.live:
            return
        client.live = False
        assert client.filter is not None
        members = self._groups.get(client.filter)
        if members is not None:
            members.pop(client, None)
            if not members:
                del self._groups[client.filter]

    def _remove(self, client: FeedClient) -> None:
        self._leave(client)
        self._parked.pop(client, None)
        self.clients.discard(client)

    # Subscriptions and replay

    def _subscribe(self, client: FeedClient, request: Subscribe) -> None:
        client._reset()
        client.filter = request.filter
        if self.last_serial is None:
            # masterd has not answered yet: serve the subscription once it has.
            self._parked[client] = request.since
            client.notify_upstream()
            return
        # Deliver what is pending first, so the new client's position is the
        # same for the history and for the live stream.
        self._flush()
        self._start(client, request.since)

    def _start(self, client: FeedClient, since: int | None) -> None:
        current = self.flushed_serial
        assert current is not None
        client._send_control(protocol.subscribed(current, self.oldest))
        code = None
        if since is None:
            since = current
        elif since > current:
            code = protocol.RESYNC_UNKNOWN_SERIAL
        elif since < self.oldest - 1:
            code = protocol.RESYNC_TOO_OLD
        if code is not None:
            client._send_control(protocol.resync(current, code))
            since = current
        client.notify_upstream()
        if not client.closed:
            client._start(since)

    def _catch_up(self, cursor: int, upto: int,
                  filt: Filter) -> tuple[Batch | None, int]:
        """The next catch-up chunk after ``cursor`` (None if nothing matches) and the
        serial the client is then at.

        Clients that fell behind together (a burst that filled many buffers at
        once) resume from the same serial: they share the chunk and its frame.
        The cache holds until the next flush moves ``upto``.
        """
        key = (filt, cursor, upto)
        cached = self._chunks.get(key)
        if cached is not None:
            return cached
        fragments, last = self._replay(cursor, upto, filt)
        batch = Batch(protocol.batch_payload(fragments)) if fragments else None
        if batch is not None:
            self.stats["catchup_batches"] += 1
        if len(self._chunks) >= MAX_CACHED_CHUNKS:
            self._chunks.clear()
        self._chunks[key] = (batch, last)
        return batch, last

    def _replay(self, cursor: int, upto: int, filt: Filter) -> tuple[list[bytes], int]:
        """Encoded events after ``cursor`` up to ``upto`` matching ``filt``, one chunk's worth.

        Returns them and the serial the client has then received up to.
        """
        start = bisect.bisect_right(self._history, cursor, key=attrgetter("serial"))
        fragments: list[bytes] = []
        size = 0
        everything = filt.everything
        for entry in itertools.islice(self._history, start, None):
            if entry.serial > upto:
                break
            cursor = entry.serial
            data = entry.data
            if data is not None and (everything or filt.matches(entry)):
                fragments.append(data)
                size += len(data)
                if len(fragments) >= self.catchup_events or size >= self.catchup_bytes:
                    return fragments, cursor
        return fragments, upto
