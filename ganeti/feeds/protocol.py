"""The feed protocol's messages: client requests (validated strictly) and server messages.

Clients send one JSON object per text message (``subscribe`` or
``unsubscribe``); the server sends JSON *arrays* of messages, so that many
events travel in one WebSocket frame.  Each event from masterd is encoded
once, when it arrives (:func:`entry_from_event`); a batch for a subscription
is then only the join of the encoded events that match it
(:func:`batch_payload`).  See docs/feeds.md for the protocol with examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants
from ganeti.core.serializer import JsonTooDeep, load_json

#: Largest client message accepted; larger ones close the connection (1009).
MAX_MESSAGE_BYTES = 64 * 1024
#: Most job ids, statuses and opcodes one subscription may list.
MAX_JOB_IDS = 1000
MAX_OPCODES = 100
STATUSES = constants.JOB_STATUS_ALL
_OP_ID = re.compile(r"OP_[A-Z0-9_]{1,100}")
_SUBSCRIBE_KEYS = frozenset({"type", "jobs", "status", "opcode", "since"})

#: Kinds of masterd events the feed forwards; others are kept for serial
#: accounting only (masterd may add kinds later).
FORWARDED_KINDS = frozenset({"job", "archive"})

#: ``code`` values of resync messages.
RESYNC_TOO_OLD = "too_old"
RESYNC_UNKNOWN_SERIAL = "unknown_serial"
RESYNC_SLOW = "slow_consumer"
RESYNC_UPSTREAM = "upstream"
RESYNC_REASONS = {
    RESYNC_TOO_OLD: "the requested serial is older than the events the feed keeps",
    RESYNC_UNKNOWN_SERIAL: "the requested serial is newer than any event the feed has seen",
    RESYNC_SLOW: "the client did not read fast enough",
    RESYNC_UPSTREAM: "masterd's event stream was interrupted (masterd restarted or events "
                     "were lost)",
}


class FeedProtocolError(Exception):
    """A client message that is not valid; the text is sent back in an ``error`` message."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One event as the feed keeps it: what filters look at, and its encoded message."""

    serial: int
    kind: str
    job_id: int | None
    status: str | None
    ops: frozenset[str] | None
    data: bytes | None  # None: not forwarded (unknown kind)


@dataclass(frozen=True, slots=True)
class Filter:
    """What a subscription selects.  ``None`` in a field means "no restriction".

    Job events match when their id, status and opcodes all pass; archive
    events match on the id alone (a job leaving the queue concerns everybody
    who may have seen it, whatever its status or opcodes were).
    """

    jobs: frozenset[int] | None = None
    status: frozenset[str] | None = None
    opcode: frozenset[str] | None = None

    @property
    def everything(self) -> bool:
        """True when every forwarded event matches."""
        return self.jobs is None and self.status is None and self.opcode is None

    def matches(self, entry: Entry) -> bool:
        """Whether ``entry`` is sent to subscribers with this filter."""
        if entry.data is None:
            return False
        if self.jobs is not None and entry.job_id not in self.jobs:
            return False
        if entry.kind != "job":
            return True
        if self.status is not None and entry.status not in self.status:
            return False
        if self.opcode is not None:
            return entry.ops is not None and not self.opcode.isdisjoint(entry.ops)
        return True


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``{"type": "subscribe", ...}``: replaces the connection's subscription."""

    filter: Filter
    since: int | None = None


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """``{"type": "unsubscribe"}``: ends the connection's subscription."""


ClientMessage = Subscribe | Unsubscribe


# Client -> server


def parse_client_message(payload: bytes | str) -> ClientMessage:
    """Decode and validate one client text message; raises :class:`FeedProtocolError`."""
    try:
        message = load_json(payload)
    except JsonTooDeep as err:
        raise FeedProtocolError(f"message is nested too deeply: {err}") from None
    except ValueError as err:  # UnicodeDecodeError included
        raise FeedProtocolError(f"message is not JSON: {err}") from None
    if not isinstance(message, dict):
        raise FeedProtocolError("message must be a JSON object")
    kind = message.get("type")
    if kind == "subscribe":
        return _parse_subscribe(message)
    if kind == "unsubscribe":
        extra = sorted(set(message) - {"type"})
        if extra:
            raise FeedProtocolError(f"unsubscribe: unknown key(s) {', '.join(extra)}")
        return Unsubscribe()
    if kind is None:
        raise FeedProtocolError("message has no 'type'")
    raise FeedProtocolError(f"unknown message type {_short(kind)}; "
                            "expected 'subscribe' or 'unsubscribe'")


def _parse_subscribe(message: dict[str, Any]) -> Subscribe:
    extra = sorted(set(message) - _SUBSCRIBE_KEYS)
    if extra:
        raise FeedProtocolError(f"subscribe: unknown key(s) {', '.join(extra)}")
    if "jobs" not in message:
        raise FeedProtocolError("subscribe: 'jobs' is required ('all' or a list of job ids)")
    jobs = _parse_jobs(message["jobs"])
    status = _parse_list(message.get("status"), "status", len(STATUSES), _check_status)
    opcode = _parse_list(message.get("opcode"), "opcode", MAX_OPCODES, _check_opcode)
    since = message.get("since")
    if since is not None and (not isinstance(since, int) or isinstance(since, bool)
                              or since < 0):
        raise FeedProtocolError("subscribe: 'since' must be a non-negative integer or null")
    return Subscribe(Filter(jobs, status, opcode), since)


def _parse_jobs(value: Any) -> frozenset[int] | None:
    if value == "all":
        return None
    if not isinstance(value, list) or not value:
        raise FeedProtocolError("subscribe: 'jobs' must be 'all' or a non-empty list of "
                                "job ids")
    if len(value) > MAX_JOB_IDS:
        raise FeedProtocolError(f"subscribe: at most {MAX_JOB_IDS} job ids per "
                                f"subscription, got {len(value)}")
    ids = set()
    for item in value:
        # Ganeti's RAPI returns job ids as strings, LUXI as integers: take both.
        if isinstance(item, str) and item.isascii() and item.isdigit() and len(item) < 19:
            item = int(item)
        if not isinstance(item, int) or isinstance(item, bool) or item < 0:
            raise FeedProtocolError(f"subscribe: invalid job id {_short(item)}")
        ids.add(item)
    return frozenset(ids)


def _check_status(item: Any) -> str:
    if not isinstance(item, str) or item not in STATUSES:
        raise FeedProtocolError(f"subscribe: unknown job status {_short(item)}; known: "
                                f"{', '.join(constants.JOB_STATUS_ORDER)}")
    return item


def _check_opcode(item: Any) -> str:
    if not isinstance(item, str) or not _OP_ID.fullmatch(item):
        raise FeedProtocolError(f"subscribe: invalid opcode {_short(item)} (expected an "
                                "OP_ID such as OP_TEST_DELAY)")
    return item


def _parse_list(value: Any, key: str, limit: int,
                check: Callable[[Any], str]) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise FeedProtocolError(f"subscribe: '{key}' must be a non-empty list or null")
    if len(value) > limit:
        raise FeedProtocolError(f"subscribe: at most {limit} entries in '{key}', "
                                f"got {len(value)}")
    return frozenset(check(item) for item in value)


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# Server -> client


def encode(message: dict[str, Any]) -> bytes:
    """The compact JSON of one server message."""
    return json.dumps(message, separators=(",", ":")).encode()


def batch_payload(fragments: list[bytes]) -> bytes:
    """A text message carrying encoded messages, in order, as a JSON array."""
    return b"[" + b",".join(fragments) + b"]"


def entry_from_event(event: dict[str, Any], serial: int) -> Entry:
    """Keep a masterd event (``kind`` becomes ``type``) and encode its message once."""
    kind = event.get("kind")
    kind = kind if isinstance(kind, str) else "unknown"
    if kind not in FORWARDED_KINDS:
        return Entry(serial, kind, None, None, None, None)
    message: dict[str, Any] = {"type": kind}
    message.update((key, value) for key, value in event.items() if key != "kind")
    job_id = event.get("id")
    status = event.get("status")
    ops = event.get("ops")
    return Entry(
        serial, kind,
        job_id if isinstance(job_id, int) else None,
        status if isinstance(status, str) else None,
        frozenset(op for op in ops if isinstance(op, str)) if isinstance(ops, list) else None,
        encode(message))


def subscribed(serial: int, oldest: int) -> bytes:
    """The answer to a subscribe: the feed's newest serial and the oldest it can replay."""
    return encode({"type": "subscribed", "serial": serial, "oldest": oldest})


def resync(serial: int, code: str) -> bytes:
    """Tells the client to re-read the state; events after ``serial`` follow."""
    return encode({"type": "resync", "serial": serial, "code": code,
                   "reason": RESYNC_REASONS[code]})


def error(message: str) -> bytes:
    """The answer to an invalid client message (the connection stays open)."""
    return encode({"type": "error", "message": message})


def upstream(connected: bool) -> bytes:
    """Whether the feed is connected to masterd's event stream."""
    return encode({"type": "upstream", "connected": connected})
