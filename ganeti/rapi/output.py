"""Large answers without stalling the reactor: JSON encoded in slices, bodies
written as the client reads them.

:func:`encode_json` encodes small values at once; a list of more than
:data:`SLICE_ITEMS` items (at the top, or as a value of a top-level object,
such as a query's ``data``) is encoded :data:`SLICE_ITEMS` items per reactor
turn, so that a bulk list of thousands of jobs never holds the reactor for
more than a few milliseconds.  The text is the same as one ``json.dumps``.

:class:`BodyProducer` writes a body to a twisted.web request in slices,
pausing while the transport's buffer is full, so that a connection holds at
most about one buffer of encrypted output however large the body (the body
itself is shared by every request it answers).  A client that stops reading
for ``stall_timeout`` seconds is disconnected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, task
from twisted.internet.interfaces import IDelayedCall, IPushProducer, IReactorTime
from twisted.web import server
from zope.interface import implementer

#: Items of a large list encoded per reactor turn (bulk jobs: about 2 ms).
SLICE_ITEMS = 250
#: Bodies larger than this are written by a :class:`BodyProducer`.
STREAM_THRESHOLD = 64 * 1024
#: Bytes written per step of a :class:`BodyProducer` (the transport pauses it
#: when its buffer is full; without a pause, one step per reactor turn).
WRITE_SLICE = 64 * 1024
WRITES_PER_TURN = 4
#: Seconds a client may leave a paused answer unread before it is dropped.
DEFAULT_STALL_TIMEOUT = 60.0

#: Compact JSON; LUXI results hold no cycles, so the cycle check is skipped (a
#: handler bug making one fails with RecursionError, answered 500).
ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def _large(value: Any) -> bool:
    return isinstance(value, list) and len(value) > SLICE_ITEMS


def needs_slices(value: Any) -> bool:
    """Whether :func:`encode_json` would encode ``value`` over several turns."""
    if _large(value):
        return True
    return (isinstance(value, dict) and all(isinstance(k, str) for k in value)
            and any(_large(v) for v in value.values()))


def encode_json(value: Any, clock: IReactorTime) -> bytes | defer.Deferred[bytes]:
    """``value`` as compact JSON bytes: at once, or (large lists) over reactor turns."""
    if not needs_slices(value):
        return ENCODER.encode(value).encode()
    return defer.Deferred.fromCoroutine(_encode_slices(value, clock))


async def _next_turn(clock: IReactorTime) -> None:
    await task.deferLater(clock, 0, lambda: None)


async def _encode_list(items: list[Any], parts: list[str], clock: IReactorTime) -> None:
    parts.append("[")
    for start in range(0, len(items), SLICE_ITEMS):
        if start:
            await _next_turn(clock)
            parts.append(",")
        parts.append(ENCODER.encode(items[start:start + SLICE_ITEMS])[1:-1])
    parts.append("]")


async def _encode_slices(value: Any, clock: IReactorTime) -> bytes:
    parts: list[str] = []
    if isinstance(value, list):
        await _encode_list(value, parts, clock)
    else:
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                parts.append(",")
            parts.append(ENCODER.encode(key) + ":")
            if _large(item):
                await _encode_list(item, parts, clock)
            else:
                parts.append(ENCODER.encode(item))
        parts.append("}")
    return "".join(parts).encode()


@implementer(IPushProducer)
class BodyProducer:
    """Writes ``body`` to ``request`` in slices as the transport drains, then
    finishes the request and calls ``done`` (also if the client goes away)."""

    def __init__(self, request: server.Request, body: bytes, clock: IReactorTime,
                 done: Callable[[], None], stall_timeout: float = DEFAULT_STALL_TIMEOUT) -> None:
        self.request = request
        self.body = body
        self.clock = clock
        self.done = done
        self.stall_timeout = stall_timeout
        self.offset = 0
        self.paused = False
        self.finished = False
        self._step: IDelayedCall | None = None
        self._stall: IDelayedCall | None = None

    def start(self) -> None:
        """Register with the request and write the first slices."""
        self.request.notifyFinish().addBoth(self._ended)
        self.request.registerProducer(self, True)
        # twisted.web pauses a producer only when the buffer fills, not when it
        # is registered on a connection whose buffer is full already.
        if getattr(self.request.channel, "_waitingForTransport", False):
            self.pauseProducing()
        else:
            self._write()

    def _write(self) -> None:
        self._step = None
        request = self.request
        for _ in range(WRITES_PER_TURN):
            if self.paused or self.finished:
                return
            if self.offset >= len(self.body):
                self.finished = True
                request.unregisterProducer()
                request.finish()
                return
            chunk = self.body[self.offset:self.offset + WRITE_SLICE]
            self.offset += len(chunk)
            request.write(chunk)
        if not self.paused and not self.finished:
            self._step = self.clock.callLater(0, self._write)

    def pauseProducing(self) -> None:
        """The transport's buffer is full: wait, but not for ever."""
        self.paused = True
        self._cancel_step()
        if self._stall is None and not self.finished:
            self._stall = self.clock.callLater(self.stall_timeout, self._stalled)

    def resumeProducing(self) -> None:
        """The transport drained: write on."""
        self.paused = False
        if self._stall is not None:
            if self._stall.active():
                self._stall.cancel()
            self._stall = None
        if self._step is None and not self.finished:
            self._write()

    def stopProducing(self) -> None:
        """The connection is going away."""
        self.finished = True
        self._cancel_step()

    def _cancel_step(self) -> None:
        if self._step is not None and self._step.active():
            self._step.cancel()
        self._step = None

    def _stalled(self) -> None:
        self._stall = None
        if not self.finished:
            self.finished = True
            transport: Any = self.request.channel.transport
            if transport is not None:
                transport.abortConnection()

    def _ended(self, result: object) -> None:
        self.finished = True
        self._cancel_step()
        if self._stall is not None and self._stall.active():
            self._stall.cancel()
        self._stall = None
        self.body = b""
        self.done()
