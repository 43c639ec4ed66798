"""The confd wire format (pure: no reactor; the drop log takes an injected clock).

A datagram is the fourcc ``plj0`` followed by the JSON text of a signed
envelope ``{"msg": <JSON text>, "salt": <str>, "hmac": <hex>}``, where
``hmac`` is HMAC-SHA1 over ``salt + msg`` with the cluster's confd key
(DATA_DIR/hmac.key). The inner ``msg`` is a request
``{"protocol": 1, "type": int, "query": null|str|dict, "rsalt": str}`` or a
reply ``{"protocol": 1, "status": int, "answer": json, "serial": int}``.
Requests are salted with the sender's unix time; replies with the request's
``rsalt``. See docs/confd.md.

Parsing is bounded and ordered so that unauthenticated input is never parsed
deeply: the envelope, flat by definition, is loaded with a nesting bound of
:data:`ENVELOPE_MAX_DEPTH` (one object of strings); the HMAC is checked over
the ``msg`` string as received; only a correctly signed ``msg`` is parsed,
with the general bound :data:`ganeti.core.serializer.MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import hmac
import json
import re
from dataclasses import dataclass
from json.decoder import scanstring as _scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring_ascii as _encode_string
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import constants, serializer
from ganeti.core.loglimit import LineBudget

FOURCC = constants.CONFD_MAGIC_FOURCC
PROTOCOL_VERSION = constants.CONFD_PROTOCOL_VERSION
MAX_TYPE = max(constants.CONFD_REQS_ALL)
#: The envelope is one object whose values are strings: nothing in it nests.
ENVELOPE_MAX_DEPTH = 1
_WS = r"[ \t\n\r]*"  # what json.loads skips
_STR = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # a string literal (unrolled: linear time)
_PAIR = rf"{_STR}{_WS}:{_WS}{_STR}{_WS}"
#: One object of string members and nothing else, matched whole.
_FLAT_OBJECT = re.compile(rf"{_WS}\{{{_WS}(?:{_PAIR}(?:,{_WS}{_PAIR})*)?\}}{_WS}",
                          re.DOTALL).fullmatch
_ENVELOPE_HEAD = FOURCC + b'{"msg":'
#: The envelope as sign() writes it: this head, the msg literal, then the tail.
_SIGNED_HEAD = '{"msg":"'
_SIGNED_TAIL = re.compile(r',"salt":"([^"\\\x00-\x1f]*)","hmac":"([^"\\\x00-\x1f]*)"\}').fullmatch
_ENVELOPE_SALT = b',"salt":'
_ENVELOPE_HMAC = b',"hmac":"'
_ENVELOPE_TAIL = b'"}'

__all__ = [
    "FOURCC", "PROTOCOL_VERSION", "BadMessage", "Request", "Reply", "sign", "unpack",
    "hmac_hex", "unpack_signed", "sign_encoded", "flat_string_object", "dump_message",
    "make_request", "parse_request", "make_reply", "parse_reply", "pack_request",
    "pack_reply", "salt_time", "normalize_query",
    "ENVELOPE_MAX_DEPTH", "RateLimitedLog",
]


class BadMessage(ValueError):
    """A datagram or inner message that must be dropped; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Request:
    """A validated confd request (dict query keys normalised to strings)."""

    type: int
    query: Any
    rsalt: str
    protocol: int = PROTOCOL_VERSION


@dataclass(frozen=True)
class Reply:
    """A validated confd reply."""

    status: int
    answer: Any
    serial: int
    protocol: int = PROTOCOL_VERSION


def hmac_hex(key: bytes, msg: str, salt: str) -> str:
    """Lower-case hex HMAC-SHA1 of ``salt + msg`` under ``key``."""
    # hmac.digest with a digest *name* is OpenSSL's one-shot HMAC (no Python
    # HMAC object, no key padding in Python): a third of hmac.new(..., sha1).
    return hmac.digest(key, (salt + msg).encode("utf-8"), "sha1").hex()


def _json_string(text: str) -> bytes:
    return _encode_string(text).encode("ascii")


def sign(key: bytes, msg: str, salt: str) -> bytes:
    """The datagram carrying ``msg`` (inner JSON text) signed with ``salt``.

    Byte for byte ``FOURCC + json.dumps({"msg", "salt", "hmac"}, compact)``,
    assembled from the encoded strings (see :func:`sign_encoded`).
    """
    return sign_encoded(key, _json_string(msg), msg.encode("utf-8"), salt)


def sign_encoded(key: bytes, msg_json: bytes, msg_utf8: bytes, salt: str) -> bytes:
    """:func:`sign` for a ``msg`` already encoded twice: as a JSON string literal
    (``msg_json``) and as UTF-8 (``msg_utf8``, what the HMAC covers).

    The server keeps both per cached answer, so that a reply costs one HMAC
    and the encoding of the request's salt.
    """
    salt_utf8 = salt.encode("utf-8")
    digest = hmac.digest(key, salt_utf8 + msg_utf8, "sha1").hex().encode("ascii")
    return b"".join((_ENVELOPE_HEAD, msg_json, _ENVELOPE_SALT, _json_string(salt),
                     _ENVELOPE_HMAC, digest, _ENVELOPE_TAIL))


def unpack(key: bytes, datagram: bytes) -> tuple[str, str]:
    """Check fourcc, envelope shape and HMAC; return ``(msg_text, salt)``.

    Raises :class:`BadMessage` for anything that is not a correctly signed
    envelope. The HMAC is compared in constant time, case-insensitively.
    """
    msg, salt, _ = unpack_signed(key, datagram)
    return msg, salt


def unpack_signed(key: bytes, datagram: bytes) -> tuple[str, str, str]:
    """Like :func:`unpack`, also returning the lower-case hex HMAC (a replay key)."""
    if not datagram.startswith(FOURCC):
        raise BadMessage("wrong fourcc")
    try:
        text = datagram[len(FOURCC):].decode("utf-8")
    except UnicodeDecodeError:
        raise BadMessage("envelope is not JSON") from None
    envelope = flat_string_object(text)
    if envelope is None:  # not an object of strings only: the bounded parser decides
        try:
            envelope = serializer.load_json(text, max_depth=ENVELOPE_MAX_DEPTH)
        except serializer.JsonTooDeep:
            raise BadMessage("envelope is not a flat object") from None
        except ValueError:
            raise BadMessage("envelope is not JSON") from None
    if not isinstance(envelope, dict):
        raise BadMessage("envelope is not an object")
    msg = envelope.get("msg")
    salt = envelope.get("salt")
    digest = envelope.get("hmac")
    if not isinstance(msg, str) or not isinstance(salt, str) or not isinstance(digest, str):
        raise BadMessage("envelope lacks string msg, salt or hmac")
    if not digest.isascii():
        raise BadMessage("bad hmac")
    given = digest.lower()
    if not hmac.compare_digest(given, hmac_hex(key, msg, salt)):
        raise BadMessage("bad hmac")
    return msg, salt, given


def flat_string_object(text: str) -> dict[str, str] | None:
    """``json.loads(text)`` if ``text`` is one JSON object whose values are all
    strings, else None (then :func:`ganeti.core.serializer.load_json` decides).

    The fast path for envelopes: a linear-time pattern first makes sure that
    outside its string literals the text holds nothing but one pair of braces,
    colons, commas and whitespace, so nothing in it can nest; only then does
    the standard (C) parser read it.  The result equals ``json.loads``'s for
    every text accepted.

    The form :func:`sign` writes (compact, keys ``msg``, ``salt``, ``hmac`` in
    that order, salt and hmac without escapes) is read faster still: the
    ``msg`` literal by the C string scanner, the rest by a short pattern.
    """
    if text.startswith(_SIGNED_HEAD):
        try:
            msg, end = _scanstring(text, len(_SIGNED_HEAD), True)
        except ValueError:
            return None  # a broken string literal: the parser will say so
        tail = _SIGNED_TAIL(text, end)
        if tail is not None:
            return {"msg": msg, "salt": tail.group(1), "hmac": tail.group(2)}
    if _FLAT_OBJECT(text) is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:  # e.g. a control character or a bad escape in a string
        return None
    return value if isinstance(value, dict) else None


def dump_message(message: dict[str, Any]) -> str:
    """Inner message text (compact JSON; Ganeti's client appends nothing else)."""
    return json.dumps(message, separators=(",", ":"))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def normalize_query(query: Any) -> Any:
    """Dict query keys as strings, and field codes of ``"3"`` as integers.

    Field ids are accepted as strings (``"1"``, the wire form) or integers.
    Raises :class:`BadMessage` for a query of the wrong type.
    """
    if query is None or isinstance(query, str):
        return query
    if not isinstance(query, dict):
        raise BadMessage("query must be null, a string or an object")
    out: dict[str, Any] = {}
    for k, v in query.items():
        if _is_int(k):
            k = str(k)
        elif not isinstance(k, str):
            raise BadMessage("query keys must be strings or integers")
        if k == constants.CONFD_REQQ_FIELDS and isinstance(v, list):
            v = [int(f) if isinstance(f, str) and f.isdigit() else f for f in v]
        out[k] = v
    return out


def make_request(type: int, query: Any, rsalt: str) -> dict[str, Any]:
    """An inner request message (validated; dict query keys become strings)."""
    if not _is_int(type) or not 0 <= type <= MAX_TYPE:
        raise BadMessage(f"unknown request type {type!r}")
    if not isinstance(rsalt, str):
        raise BadMessage("rsalt must be a string")
    return {"protocol": PROTOCOL_VERSION, "type": type, "query": normalize_query(query),
            "rsalt": rsalt}


def _load_object(msg_text: str) -> dict[str, Any]:
    # Only ever called on a msg whose HMAC verified (or on our own text).
    try:
        data = serializer.load_json(msg_text)
    except serializer.JsonTooDeep:
        raise BadMessage("message nested too deep") from None
    except ValueError:
        raise BadMessage("message is not JSON") from None
    if not isinstance(data, dict):
        raise BadMessage("message is not an object")
    if data.get("protocol") != PROTOCOL_VERSION or not _is_int(data.get("protocol")):
        raise BadMessage(f"unsupported protocol {data.get('protocol')!r}")
    return data


def parse_request(msg_text: str) -> Request:
    """Validate an inner request text; raises :class:`BadMessage`."""
    data = _load_object(msg_text)
    rtype: Any = data.get("type")
    if not _is_int(rtype) or not 0 <= rtype <= MAX_TYPE:
        raise BadMessage(f"bad request type {rtype!r}")
    rsalt = data.get("rsalt")
    if not isinstance(rsalt, str):
        raise BadMessage("rsalt must be a string")
    return Request(type=rtype, query=normalize_query(data.get("query")), rsalt=rsalt)


def make_reply(status: int, answer: Any, serial: int) -> dict[str, Any]:
    """An inner reply message."""
    return {"protocol": PROTOCOL_VERSION, "status": status, "answer": answer,
            "serial": serial}


def parse_reply(msg_text: str) -> Reply:
    """Validate an inner reply text; raises :class:`BadMessage`."""
    data = _load_object(msg_text)
    status: Any = data.get("status")
    serial: Any = data.get("serial")
    if not _is_int(status) or status not in constants.CONFD_REPL_STATUSES:
        raise BadMessage(f"bad reply status {status!r}")
    if not _is_int(serial):
        raise BadMessage(f"bad reply serial {serial!r}")
    if "answer" not in data:
        raise BadMessage("reply lacks an answer")
    return Reply(status=status, answer=data["answer"], serial=serial)


def pack_request(key: bytes, type: int, query: Any, rsalt: str,
                 now: float) -> bytes:
    """A signed request datagram salted with the unix time ``now``."""
    return sign(key, dump_message(make_request(type, query, rsalt)), str(int(now)))


def pack_reply(key: bytes, status: int, answer: Any, serial: int, rsalt: str) -> bytes:
    """A signed reply datagram salted with the request's ``rsalt``."""
    return sign(key, dump_message(make_reply(status, answer, serial)), rsalt)


def salt_time(salt: str) -> int:
    """The unix time a request salt carries; raises :class:`BadMessage`."""
    text = salt.strip()
    if not text or len(text) > 20 or not text.lstrip("-").isdigit() or not text.isascii():
        raise BadMessage("salt is not a timestamp")
    return int(text)


class RateLimitedLog:
    """At most one log line per reason per ``interval`` seconds (counts the rest).

    Bounded whatever the input: reasons are cut to :attr:`MAX_REASON`
    characters, and once :attr:`max_reasons` distinct reasons were reported
    within one interval, further new ones share the line of
    :data:`OTHER_REASONS` (:class:`ganeti.core.loglimit.LineBudget`).  So a
    flood of bad datagrams costs at most ``max_reasons + 1`` lines per
    interval, and the memory of a few dozen entries.
    """

    MAX_REASON = 200
    OTHER_REASONS = "other reasons (too many distinct reasons to report each)"

    def __init__(self, clock: IReactorTime, logger: Logger, interval: float = 60.0,
                 max_reasons: int = 32) -> None:
        self.clock = clock
        self.logger = logger
        self.budget = LineBudget(interval, max_keys=max_reasons, overflow=self.OTHER_REASONS)

    def drop(self, reason: str, peer: Any) -> bool:
        """Record a dropped datagram; returns True if a line was logged."""
        if len(reason) > self.MAX_REASON:
            reason = reason[:self.MAX_REASON] + "..."
        allowed = self.budget.allow(reason, self.clock.seconds())
        if allowed is None:
            return False
        self.logger.info("Dropped confd datagram from {peer}: {reason}"
                         " ({suppressed} more since the last report)",
                         peer=peer, reason=allowed[0], suppressed=allowed[1])
        return True
