"""LUXI messages and framing (reference section 2), independent of any transport.

Each message is UTF-8 JSON followed by one ETX byte (0x03).  A request is
``{"method": name, "args": [...], "version": n}``; a response is
``{"success": bool, "result": value}``, where a failed call's result is an
encoded exception ``["ClassName", [args]]``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ganeti.core import constants, errors
from ganeti.core.serializer import JsonTooDeep, load_json

EOM = constants.LUXI_EOM


class FrameTooLarge(errors.ProtocolError):
    """A message grew beyond the allowed size before its terminator arrived."""


class FrameSplitter:
    """Cut a byte stream into ETX-terminated frames, refusing oversized ones.

    Bytes are appended with :meth:`append` and complete frames taken one at
    a time with :meth:`next_frame`, so a reader can leave frames in the
    buffer (``ready`` counts them) and stop reading while they wait; or all
    at once with :meth:`feed`.  Frames that complete before an oversized one
    are still returned; from the oversized frame on, the stream cannot be
    trusted, so once the frames before it are taken ``overflow`` is set and
    everything after it is discarded.
    """

    def __init__(self, max_size: int = constants.LUXI_MAX_FRAME) -> None:
        self.max_size = max_size
        self._buffer = bytearray()
        self._tail = 0  # bytes after the last ETX in the buffer
        self._refusing = False  # an oversized frame follows the complete ones
        #: Complete frames in the buffer, not yet taken.
        self.ready = 0
        self.overflow: FrameTooLarge | None = None

    def append(self, data: bytes) -> None:
        """Add bytes received; nothing is parsed yet."""
        if self._refusing or self.overflow is not None:
            return
        last = data.rfind(EOM)
        if last < 0:
            tail = self._tail + len(data)
        else:
            tail = len(data) - last - 1
            self.ready += data.count(EOM)
        if tail > self.max_size:
            # Keep the complete frames before it; the frame in progress is dropped
            # now rather than buffered up to the end of the connection.
            keep = len(self._buffer) - self._tail if last < 0 else None
            if keep is not None:
                del self._buffer[keep:]
            else:
                self._buffer += data[:last + 1]
            self._tail = 0
            self._refusing = True
            self._check_exhausted()
            return
        self._buffer += data
        self._tail = tail

    def next_frame(self) -> bytes | None:
        """The next complete frame (without ETX), or None if there is none yet."""
        if not self.ready:
            return None
        end = self._buffer.find(EOM)
        if end > self.max_size:
            self._refuse()
            return None
        frame = bytes(self._buffer[:end])
        del self._buffer[:end + 1]  # cheap: bytearray deletes at the front in place
        self.ready -= 1
        self._check_exhausted()
        return frame

    def feed(self, data: bytes) -> list[bytes]:
        """Add bytes; return the complete frames (without ETX) now available."""
        self.append(data)
        frames = []
        while (frame := self.next_frame()) is not None:
            frames.append(frame)
        return frames

    def clear(self) -> None:
        """Forget everything buffered (the peer has gone)."""
        self._buffer.clear()
        self._tail = 0
        self.ready = 0

    def _refuse(self) -> None:
        self.clear()
        self._refusing = True
        self._check_exhausted()

    def _check_exhausted(self) -> None:
        if self._refusing and not self.ready and self.overflow is None:
            self.overflow = FrameTooLarge(
                f"LUXI message exceeds the limit of {self.max_size} bytes")
            self.clear()

    @property
    def refusing(self) -> bool:
        """Whether an oversized frame was seen (what follows it is discarded)."""
        return self._refusing

    @property
    def pending(self) -> int:
        """Bytes received and not yet taken as frames (complete or not)."""
        return len(self._buffer)


def _integral_floats_as_ints(obj: Any) -> Any:
    # Ganeti's Haskell daemons write 4.0 as 4; clients print what they get, so we do
    # the same to give byte-identical output in existing tools.
    if isinstance(obj, float):
        return int(obj) if obj.is_integer() else obj
    if isinstance(obj, dict):
        return {k: _integral_floats_as_ints(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_integral_floats_as_ints(v) for v in obj]
    return obj


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + EOM


def encode_request(method: str, args: list[Any] | tuple[Any, ...],
                   version: int = constants.LUXI_VERSION) -> bytes:
    """A request frame, including the ETX terminator."""
    return _dump({constants.LUXI_KEY_METHOD: method, constants.LUXI_KEY_ARGS: list(args),
                  constants.LUXI_KEY_VERSION: version})


#: Where an encoded answer may hold a float with an integral value: a number ending
#: in ``.0`` or written with an exponent, right before ``,``, ``]`` or ``}``.  An
#: integer never matches, nor does almost any string (it ends with a quote).
_FLOATISH = re.compile(rb"\d(?:\.0|[eE][+-]?\d+)(?=[,\]}])")


def encode_response(success: bool, result: Any) -> bytes:
    """A response frame, including the ETX terminator.

    Integral floats are written as integers, as Ganeti's daemons do.  Walking a
    large answer for them costs several times its encoding (a second for 20,000
    instances' parameters), so the answer is encoded first and walked only if
    its text shows a number that may be such a float."""
    frame = _dump({constants.LUXI_KEY_SUCCESS: success, constants.LUXI_KEY_RESULT: result})
    if _FLOATISH.search(frame) is None:
        return frame
    return _dump({constants.LUXI_KEY_SUCCESS: success,
                  constants.LUXI_KEY_RESULT: _integral_floats_as_ints(result)})


def encode_error(err: BaseException) -> bytes:
    """A failure response carrying an encoded exception."""
    return encode_response(False, errors.encode_exception(err))


def parse_request(frame: bytes) -> tuple[str, list[Any]]:
    """Method name and argument list of a request frame; ProtocolError if malformed."""
    try:
        msg = load_json(frame)
    except JsonTooDeep as err:
        raise errors.ProtocolError(f"Invalid LUXI request: {err}") from None
    except ValueError as err:  # UnicodeDecodeError included
        raise errors.ProtocolError(f"Invalid LUXI request: not UTF-8 JSON ({err})") from None
    if not isinstance(msg, dict):
        raise errors.ProtocolError("Invalid LUXI request: not a JSON object")
    method = msg.get(constants.LUXI_KEY_METHOD)
    args = msg.get(constants.LUXI_KEY_ARGS)
    if not isinstance(method, str) or not method:
        raise errors.ProtocolError("Invalid LUXI request: 'method' must be a non-empty string")
    if not isinstance(args, list):
        raise errors.ProtocolError("Invalid LUXI request: 'args' must be a list")
    return method, args


def parse_response(frame: bytes) -> Any:
    """The result of a response frame; raises the encoded error of a failed call."""
    try:
        msg = load_json(frame)
    except JsonTooDeep as err:
        raise errors.ProtocolError(f"Invalid LUXI response: {err}") from None
    except ValueError as err:
        raise errors.ProtocolError(f"Invalid LUXI response: not UTF-8 JSON ({err})") from None
    if (not isinstance(msg, dict) or constants.LUXI_KEY_SUCCESS not in msg
            or constants.LUXI_KEY_RESULT not in msg):
        raise errors.ProtocolError(f"Invalid LUXI response: {msg!r:.200}")
    result = msg[constants.LUXI_KEY_RESULT]
    if msg[constants.LUXI_KEY_SUCCESS]:
        return result
    raise errors.decode_exception(result) or errors.RequestError(
        result if isinstance(result, str) else repr(result))


class RawJson:
    """A result kept as the JSON text it arrived in, to be passed on undecoded
    (ganeti-rapi's bulk answers: tens of megabytes it need not parse and re-encode)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def value(self) -> Any:
        """The decoded result."""
        return load_json(self.text)


#: How a successful answer of masterd begins (:func:`encode_response`).
_SUCCESS_PREFIX = b'{"' + constants.LUXI_KEY_SUCCESS.encode() + b'":true,"' + \
    constants.LUXI_KEY_RESULT.encode() + b'":'


def parse_response_raw(frame: bytes) -> RawJson:
    """The result of a response frame as its JSON text; raises like :func:`parse_response`.

    A success frame as masterd writes it is cut, not parsed (the text is whole
    JSON: the frame's parser would have been the receiver's).  Any other frame
    is parsed and the result re-encoded."""
    if frame.startswith(_SUCCESS_PREFIX) and frame.endswith(b"}"):
        return RawJson(frame[len(_SUCCESS_PREFIX):-1])
    result = parse_response(frame)
    return RawJson(json.dumps(result, separators=(",", ":")).encode("utf-8"))
