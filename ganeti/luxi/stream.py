"""LUXI event streams: a method can turn its connection into a push stream.

A method returns a :class:`Stream`; the server answers the call normally
(``{"success": true, "result": <first reply>}``) and from then on writes one
ETX-framed JSON object per event until the connection closes.  Nothing the
client sends afterwards is read as a request.

Backpressure: the sender is the transport's push producer.  While the
transport's buffer is full, events wait in a bounded queue; if that
overflows, the queued events are dropped and, once the client reads again,
it receives one ``{"kind": "resync", ...}`` event telling it to re-read the
state, followed by live events.  Memory stays bounded whatever the client does.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IPushProducer, ITransport
from zope.interface import implementer

from ganeti.core import constants

Send = Callable[[dict[str, Any]], None]
Stop = Callable[[], None]
DEFAULT_MAX_QUEUED = 10000


class Stream:
    """What a streaming LUXI method returns: the first reply and how to start."""

    def __init__(self, first_reply: Callable[[], Any], start: Callable[[Send], Stop]) -> None:
        # Both run together when the stream begins, so nothing happens in between.
        self.first_reply = first_reply
        self.start = start


@implementer(IPushProducer)
class StreamSender:
    """Writes events to a transport, queueing (bounded) while it is paused."""

    def __init__(self, transport: ITransport, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self.transport = transport
        self.max_queued = max_queued
        self.queue: deque[dict[str, Any]] = deque()
        self.paused = False
        self.dropped = 0
        self.last_dropped_serial: int | None = None
        self.stop: Stop | None = None

    @staticmethod
    def encode(event: dict[str, Any]) -> bytes:
        """One event frame."""
        return json.dumps(event, separators=(",", ":")).encode() + constants.LUXI_EOM

    def send(self, event: dict[str, Any]) -> None:
        """Write an event now, or queue it while the client is not reading."""
        if not self.paused:
            self.transport.write(self.encode(event))
            return
        if self.dropped or len(self.queue) >= self.max_queued:
            # Too far behind: drop everything queued and resync on resume.
            self.dropped += len(self.queue) + 1
            self.last_dropped_serial = event.get("serial")
            self.queue.clear()
            return
        self.queue.append(event)

    def pauseProducing(self) -> None:
        self.paused = True

    def resumeProducing(self) -> None:
        self.paused = False
        if self.dropped:
            self.transport.write(self.encode({
                "kind": "resync", "reason": "the client did not read fast enough",
                "dropped": self.dropped, "last_dropped_serial": self.last_dropped_serial}))
            self.dropped = 0
        while self.queue and not self.paused:
            self.transport.write(self.encode(self.queue.popleft()))

    def stopProducing(self) -> None:
        self.queue.clear()
        if self.stop is not None:
            stop, self.stop = self.stop, None
            stop()
