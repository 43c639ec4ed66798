"""The LUXI server protocol on Twisted.

One connection may carry many requests; they are answered in order, one
at a time, which is what every LUXI client expects.  Malformed frames,
unknown methods and wrong arguments get an error answer and the connection
stays usable; a frame over the size limit gets an error and the connection
is closed, since the stream cannot be resynchronised.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from twisted.internet import defer, protocol
from twisted.internet.interfaces import IConsumer, IHalfCloseableProtocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from ganeti.core import constants, errors
from ganeti.luxi import wire
from ganeti.luxi.methods import METHODS, Method
from ganeti.luxi.stream import Stream, StreamSender

Implementation = Callable[..., Awaitable[Any] | Any]


class UnknownMethod(errors.ProtocolError):
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
                "Failed to parse request: Unable to parse LUXI request method: Invalid string "
                f"value for type LuxiReq: {json.dumps(method)}"))
        try:
            spec.check_args(args)
        except errors.GenericError as err:
            return defer.fail(err)

        async def run() -> Any:
            result = impl(*args)
            if isinstance(result, Awaitable):
                result = await result
            return result

        return defer.Deferred.fromCoroutine(run())


@implementer(IHalfCloseableProtocol)
class LuxiServerProtocol(protocol.Protocol):
    """One client connection.

    A client may half-close its side after sending (``printf ... | socat``):
    every request received is still answered before the connection closes.
    """

    log = Logger()

    def __init__(self, dispatcher: LuxiDispatcher, max_frame: int) -> None:
        self.dispatcher = dispatcher
        self.splitter = wire.FrameSplitter(max_frame)
        self.pending: deque[bytes] = deque()
        self.busy = False
        self.closed = False
        self.input_closed = False
        self.stream: StreamSender | None = None

    def dataReceived(self, data: bytes) -> None:
        if self.closed or self.stream is not None:
            return
        self.pending.extend(self.splitter.feed(data))
        self._process()

    def readConnectionLost(self) -> None:
        self.input_closed = True
        if self.stream is None:  # a stream goes on until the client really leaves
            self._process()

    def writeConnectionLost(self) -> None:
        self.closed = True
        self.pending.clear()
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.closed = True
        self.pending.clear()
        if self.stream is not None:
            self.stream.stopProducing()

    def _process(self) -> None:
        # Answer in order; a call that finishes synchronously is answered inline
        # (a loop, not recursion, so many pipelined requests cannot overflow the stack).
        while self.pending and not self.busy and not self.closed and self.stream is None:
            frame = self.pending.popleft()
            d = self._handle(frame)
            if d.called:
                d.addCallback(self._reply)
                continue
            self.busy = True
            d.addCallback(self._reply_async)
        if (self.pending or self.busy or self.closed or self.transport is None
                or self.stream is not None):
            return
        overflow = self.splitter.overflow
        if overflow is not None:
            self.log.warn("Closing LUXI connection: {error}", error=str(overflow))
            self.transport.write(wire.encode_error(overflow))
        if overflow is not None or self.input_closed:
            self.closed = True
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
        if isinstance(err, UnknownMethod):
            # Like Ganeti's luxid: requests it cannot decode get a plain error string.
            return wire.encode_response(False, str(err.args[0]))
        if not isinstance(err, errors.GenericError):
            self.log.failure("Internal error in LUXI method {method}", failure, method=method)
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
        self.pending.clear()
        IConsumer(self.transport).registerProducer(sender, True)
        sender.stop = stream.start(sender.send)

    def _reply_async(self, data: bytes | Stream) -> None:
        self.busy = False
        self._reply(data)
        self._process()


class LuxiServerFactory(protocol.Factory):
    """Builds a protocol per LUXI connection."""

    noisy = False

    def __init__(self, dispatcher: LuxiDispatcher,
                 max_frame: int = constants.LUXI_MAX_FRAME) -> None:
        self.dispatcher = dispatcher
        self.max_frame = max_frame

    def buildProtocol(self, addr: Any) -> LuxiServerProtocol:
        proto = LuxiServerProtocol(self.dispatcher, self.max_frame)
        proto.factory = self
        return proto
