"""A small Twisted WebSocket client for real-reactor tests: raw RFC 6455 over TCP or TLS.

It can stop reading (``transport.pauseProducing()``) to play a slow consumer,
and it fires Deferreds when messages of interest arrive, so tests wait for
events, not for time.
"""

from __future__ import annotations

import json

from twisted.internet import defer
from twisted.internet.protocol import Factory, Protocol

from tests.feeds import wsframes


class RawFeedClient(Protocol):
    """Collects the feed's messages; ``wait(predicate)`` fires once one satisfies it."""

    def __init__(self, path="/2/feed", headers=None):
        self.path = path
        self.headers = headers or {}
        self.buffer = b""
        self.response = None
        self.messages = []
        self.frames = 0
        self.bytes = 0
        self.closed = defer.Deferred()
        self.opened = defer.Deferred()
        self._waiters = []

    def connectionMade(self):
        request, _ = wsframes.handshake_request(self.path, "localhost", self.headers)
        self.transport.write(request)

    def dataReceived(self, data):
        self.bytes += len(data)
        self.buffer += data
        if self.response is None:
            head, self.buffer = wsframes.split_handshake(self.buffer)
            if head is None:
                return
            self.response = head
            self.opened.callback(head)
        frames, self.buffer = wsframes.parse_frames(self.buffer)
        for opcode, payload in frames:
            if opcode == wsframes.OP_TEXT:
                self.frames += 1
                self.messages.extend(json.loads(payload))
            elif opcode == wsframes.OP_PING:
                self.transport.write(wsframes.client_frame(payload, wsframes.OP_PONG))
            elif opcode == wsframes.OP_CLOSE:
                self.transport.write(wsframes.client_frame(payload, wsframes.OP_CLOSE))
        self._check()

    def connectionLost(self, reason):
        self.lost_reason = reason
        self.closed.callback(None)
        for _, d in self._waiters:
            d.errback(reason)
        self._waiters = []

    def send(self, message):
        self.transport.write(wsframes.client_frame(json.dumps(message)))

    def wait(self, predicate):
        """Fires (with the messages so far) as soon as ``predicate(messages)`` holds."""
        d = defer.Deferred()
        self._waiters.append((predicate, d))
        self._check()
        return d

    def _check(self):
        for entry in list(self._waiters):
            predicate, d = entry
            if entry in self._waiters and predicate(self.messages):
                self._waiters.remove(entry)
                d.callback(self.messages)

    def events(self):
        return [m for m in self.messages if m["type"] in ("job", "archive")]

    def serials(self):
        return [m["serial"] for m in self.events()]


def factory(**kwargs):
    return Factory.forProtocol(lambda: RawFeedClient(**kwargs))
