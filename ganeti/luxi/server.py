"""The LUXI server protocol on Twisted.

One connection may carry many requests; they are answered in order, one
at a time, which is what every LUXI client expects.  Malformed frames,
unknown methods and wrong arguments get an error answer and the connection
stays usable; a frame over the size limit gets an error and the connection
is closed, since the stream cannot be resynchronised.

Flow control: a client cannot make the daemon hold or compute
more than :class:`FlowLimits` allow, whether it pipelines without end,
never reads its answers, or leaves with requests still queued.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, protocol
from twisted.internet.interfaces import (
    IConsumer,
    IDelayedCall,
    IHalfCloseableProtocol,
    IPushProducer,
    IReactorTime,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from ganeti.core import constants, errors
from ganeti.luxi import wire
from ganeti.luxi.loglimit import LogBudget
from ganeti.luxi.methods import METHODS, Method
from ganeti.luxi.stream import Stream, StreamSender

Implementation = Callable[..., Awaitable[Any] | Any]


#: How luxid starts the answer to a request it cannot parse.
PARSE_FAILURE = "Failed to parse request"


class RequestRefused(errors.ProtocolError):
    """A request refused while it is parsed, as luxid refuses it.

    luxid answers such requests with a plain string (``Failed to parse
    request: ...``) instead of an encoded exception; Ganeti's clients raise
    ``RequestError`` with that text.  Wrong argument shapes and ill-typed
    opcodes of submitted jobs are refused this way.
    """

    @classmethod
    def parsing(cls, method: str | None, detail: str) -> RequestRefused:
        """``Failed to parse request: METHOD: detail`` (no method: no prefix)."""
        where = f"{method}: " if method else ""
        return cls(f"{PARSE_FAILURE}: {where}{detail}")


class UnknownMethod(RequestRefused):
    """The request names a method this server does not have."""


class LuxiDispatcher:
    """Maps method names to implementations, validating against the method table."""

    log = Logger()

    def __init__(self, implementations: dict[str, Implementation],
                 table: dict[str, Method] | None = None) -> None:
        self.table = METHODS if table is None else table
        unknown = set(implementations) - set(self.table)
        if unknown:
            raise errors.ProgrammerError(f"LUXI methods not in the table: {sorted(unknown)}")
        self.implementations = implementations

    def dispatch(self, method: str, args: list[Any]) -> defer.Deferred[Any]:
        """Validate and run one call; the Deferred fires with its result."""
        spec = self.table.get(method)
        impl = self.implementations.get(method)
        if spec is None or impl is None:
            return defer.fail(UnknownMethod(
                f"{PARSE_FAILURE}: Unable to parse LUXI request method: Invalid string "
                f"value for type LuxiReq: {json.dumps(method)}"))
        try:
            spec.check_args(args)
        except errors.GenericError as err:
            return defer.fail(RequestRefused.parsing(None, str(err.args[0])))

        async def run() -> Any:
            result = impl(*args)
            if isinstance(result, Awaitable):
                result = await result
            return result

        return defer.Deferred.fromCoroutine(run())


@dataclass(frozen=True)
class FlowLimits:
    """How much one connection may make the daemon hold or do at once.

    ``max_pending``: complete requests waiting to be answered; reading stops
    at this many and starts again once half of them are answered.
    ``max_buffered``: bytes of input held behind a request being answered
    (one frame of any allowed size is always read in full).
    ``per_turn``: answers computed in one reactor turn before the other
    connections get theirs.
    Output is bounded by the transport: when its write buffer is full, no
    further answer is computed and reading stops until the client reads.
    """

    max_pending: int = 64
    max_buffered: int = 1024 * 1024
    per_turn: int = 32


@implementer(IHalfCloseableProtocol, IPushProducer)
class LuxiServerProtocol(protocol.Protocol):
    """One client connection, with flow control both ways.

    A client may half-close its side after sending (``printf ... | socat``):
    every request received is still answered before the connection closes.
    The protocol is the transport's streaming producer, so the transport
    pauses it while its write buffer is full (a client that does not read).
    Once the client has gone, nothing more is computed for it.
    """

    log = Logger()

    def __init__(self, dispatcher: LuxiDispatcher, max_frame: int, clock: IReactorTime,
                 limits: FlowLimits | None = None, budget: LogBudget | None = None) -> None:
        self.dispatcher = dispatcher
        self.clock = clock
        self.limits = limits if limits is not None else FlowLimits()
        self.budget = budget if budget is not None else LogBudget(clock, self.log)
        self.splitter = wire.FrameSplitter(max_frame)
        self.busy = False
        self.closed = False
        self.input_closed = False
        self.output_blocked = False
        self.reading_paused = False
        self.stream: StreamSender | None = None
        self._turn: IDelayedCall | None = None
        self._registered = False

    @property
    def pending(self) -> int:
        """Complete requests received and not yet being answered."""
        return self.splitter.ready

    def connectionMade(self) -> None:
        consumer = IConsumer(self.transport, None)
        if consumer is not None:
            consumer.registerProducer(self, True)
            self._registered = True

    def dataReceived(self, data: bytes) -> None:
        if self.closed or self.stream is not None:
            return
        self.splitter.append(data)
        self._process()

    def readConnectionLost(self) -> None:
        self.input_closed = True
        if self.stream is None:  # a stream goes on until the client really leaves
            self._process()

    def writeConnectionLost(self) -> None:
        self._shutdown()
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self._shutdown()
        if self.stream is not None:
            self.stream.stopProducing()

    def _shutdown(self) -> None:
        # The peer is gone: drop what it sent and never compute another answer for it.
        self.closed = True
        self.splitter.clear()
        if self._turn is not None and self._turn.active():
            self._turn.cancel()
        self._turn = None

    # IPushProducer, driven by the transport's write buffer

    def pauseProducing(self) -> None:
        """The client is not reading: stop answering and stop reading."""
        self.output_blocked = True
        self._update_reading()

    def resumeProducing(self) -> None:
        """The client has read what was buffered: go on."""
        self.output_blocked = False
        self._process()

    def stopProducing(self) -> None:
        """The transport is closing."""
        self._shutdown()

    # Answering

    def _can_answer(self) -> bool:
        return not (self.closed or self.busy or self.output_blocked
                    or self.stream is not None or self.transport is None)

    def _process(self) -> None:
        # Answer in order; a call that finishes synchronously is answered inline
        # (a loop, not recursion), at most ``per_turn`` of them before yielding
        # the reactor to other connections.
        if self._turn is not None:
            if self._turn.active():  # called early (the client read): this is the turn
                self._turn.cancel()
            self._turn = None
        answered = 0
        while self._can_answer():
            if answered >= self.limits.per_turn:
                if self.splitter.ready:
                    self._turn = self.clock.callLater(0, self._process)
                break
            frame = self.splitter.next_frame()
            if frame is None:
                break
            answered += 1
            d = self._handle(frame)
            if d.called:
                d.addCallback(self._reply)
                continue
            self.busy = True
            d.addCallback(self._reply_async)
        self._update_reading()
        self._maybe_finish()

    def _update_reading(self) -> None:
        """Pause or resume reading from the client, as the bounds say."""
        if self.closed or self.input_closed or self.transport is None:
            return  # nothing more to read (touching it would re-report the EOF)
        limits = self.limits
        if self.stream is not None:
            pause = False  # a stream reads only to notice the client leaving
        else:
            waiting = self.splitter.ready
            full = (waiting > limits.max_pending // 2 if self.reading_paused
                    else waiting >= limits.max_pending)
            pause = (self.output_blocked or full or self.splitter.refusing
                     or ((waiting > 0 or self.busy)
                         and self.splitter.pending > limits.max_buffered))
        reader = IPushProducer(self.transport, None)
        if reader is not None and pause != self.reading_paused:
            self.reading_paused = pause
            if pause:
                reader.pauseProducing()
            else:
                reader.resumeProducing()

    def _maybe_finish(self) -> None:
        """Close once everything received is answered, if the input has ended."""
        if (self.closed or self.busy or self.splitter.ready or self.transport is None
                or self.stream is not None):
            return
        overflow = self.splitter.overflow
        if overflow is not None:
            self.budget.warn("overflow", "Closing LUXI connection: {error}", error=str(overflow))
            self.transport.write(wire.encode_error(overflow))
        if overflow is not None or self.input_closed:
            self._shutdown()
            self.transport.loseConnection()

    def _handle(self, frame: bytes) -> defer.Deferred[bytes | Stream]:
        try:
            method, args = wire.parse_request(frame)
        except errors.ProtocolError as err:
            return defer.succeed(wire.encode_response(False, str(err.args[0])))
        d = self.dispatcher.dispatch(method, args)
        d.addCallbacks(self._encode_result,
                       lambda failure: self._encode_failure(method, failure))
        return d

    @staticmethod
    def _encode_result(result: Any) -> bytes | Stream:
        return result if isinstance(result, Stream) else wire.encode_response(True, result)

    def _encode_failure(self, method: str, failure: Failure) -> bytes:
        err = failure.value
        assert err is not None
        if isinstance(err, RequestRefused):
            # Like Ganeti's luxid: requests it cannot decode get a plain error string.
            return wire.encode_response(False, str(err.args[0]))
        if not isinstance(err, errors.GenericError):
            # A bug, but one a client can trigger at will: the budget bounds the tracebacks.
            self.budget.failure("internal", "Internal error in LUXI method {method}", failure,
                                method=method)
        return wire.encode_error(err)

    def _reply(self, data: bytes | Stream) -> None:
        if self.closed or self.transport is None:
            return
        if isinstance(data, Stream):
            self._start_stream(data)
        else:
            self.transport.write(data)

    def _start_stream(self, stream: Stream) -> None:
        assert self.transport is not None
        self.transport.write(wire.encode_response(True, stream.first_reply()))
        sender = StreamSender(self.transport)
        self.stream = sender
        self.splitter.clear()
        # From now on the sender is the transport's producer (it queues events, bounded).
        consumer = IConsumer(self.transport)
        if self._registered:
            consumer.unregisterProducer()
            self._registered = False
        consumer.registerProducer(sender, True)
        sender.stop = stream.start(sender.send)
        self._update_reading()

    def _reply_async(self, data: bytes | Stream) -> None:
        self.busy = False
        self._reply(data)
        self._process()


class LuxiServerFactory(protocol.Factory):
    """Builds a protocol per LUXI connection.

    ``clock`` schedules the answering of pipelined requests in slices; it
    defaults to the global reactor, for callers that predate it.  The log
    budget is shared by every connection, so reconnecting does not reset it.
    """

    noisy = False
    log = Logger()

    def __init__(self, dispatcher: LuxiDispatcher,
                 max_frame: int = constants.LUXI_MAX_FRAME, *,
                 clock: IReactorTime, limits: FlowLimits | None = None) -> None:
        self.dispatcher = dispatcher
        self.max_frame = max_frame
        self.clock = clock
        self.limits = limits if limits is not None else FlowLimits()
        self.budget = LogBudget(clock, self.log)

    def buildProtocol(self, addr: Any) -> LuxiServerProtocol:
        proto = LuxiServerProtocol(self.dispatcher, self.max_frame, self.clock, self.limits,
                                   self.budget)
        proto.factory = self
        return proto
