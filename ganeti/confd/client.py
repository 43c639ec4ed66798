"""Confd client: ask several master candidates one question over UDP and pick an answer.

A request is signed with the cluster's confd HMAC key and sent to ``coverage``
randomly chosen peers (0: ``min(#peers, 6)``, -1: all).  Replies are accepted
only if their salt is the request's ``rsalt`` and their HMAC verifies; the
client stops once enough peers replied (fewer than 3 sent: all; fewer than 5:
all but one; otherwise a majority) or when the request expires, and picks the
reply with the highest serial.  Two replies with the same serial but different
answers make the result inconsistent.

:class:`ConfdClient` is Deferred-based (one UDP port, many outstanding
requests); :func:`query_blocking` does the same with a plain socket and
``select`` for scripts without a reactor.
"""

from __future__ import annotations

import random
import select
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.internet.protocol import DatagramProtocol
from twisted.logger import Logger

from ganeti.confd import protocol
from ganeti.core import constants, ssconf
from ganeti.core.paths import Paths

#: Request types by name (``CONFD_REQ_*``) and number.
REQUEST_TYPES: dict[str, int] = {
    "ping": 0,
    "node-role": 1,
    "node-pip-by-instance-ip": 2,
    "cluster-master": 3,
    "node-pip-list": 4,
    "mc-pip-list": 5,
    "instances-ips-list": 6,
    "node-drbd": 7,
    "node-instances": 8,
    "instance-disks": 9,
    "config-query": 10,
    "data-collectors": 11,
}
REQUEST_NAMES: dict[int, str] = {v: k for k, v in REQUEST_TYPES.items()}

#: Reply statuses.
STATUS_OK = 0
STATUS_ERROR = 1
STATUS_NOTIMPLEMENTED = 2
STATUS_NAMES = {STATUS_OK: "ok", STATUS_ERROR: "error", STATUS_NOTIMPLEMENTED: "not implemented"}
#: Error answers (with status 1).
ERROR_NAMES = {0: "unknown entry", 1: "internal error", 2: "bad argument"}
#: Node roles (answer of node-role).
ROLE_NAMES = {0: "master", 1: "candidate", 2: "offline", 3: "drained", 4: "regular"}

DEFAULT_COVERAGE = 6
DEFAULT_EXPIRY = 10.0
MAX_UDP_DATA_SIZE = 61440
#: Seconds between two log lines about replies dropped for the same reason.
DROP_LOG_INTERVAL = 60.0

_log = Logger()


class ConfdError(Exception):
    """A request cannot be sent (bad type, coverage, peers or size)."""


@dataclass(frozen=True)
class ConfdReply:
    """One verified reply."""

    server: str
    port: int
    status: int
    answer: Any
    serial: int


@dataclass(frozen=True)
class ConfdResult:
    """The outcome of one request: the chosen reply (status/answer/serial/server are
    None if nobody answered), every reply received, how many peers were asked."""

    status: int | None
    answer: Any
    serial: int | None
    server: str | None
    replies: tuple[ConfdReply, ...]
    consistent: bool
    timed_out: bool
    sent: int = 0

    @property
    def answered(self) -> bool:
        return bool(self.replies)

    @property
    def servers(self) -> list[str]:
        return [r.server for r in self.replies]


def request_type(value: str | int) -> int:
    """A request type number from a name (``node-role``, ``NODE_ROLE_BYNAME`` style
    accepted loosely) or a number."""
    if isinstance(value, int):
        number = value
    else:
        text = value.strip().lower().replace("_", "-")
        if text.isdigit():
            number = int(text)
        elif text in REQUEST_TYPES:
            number = REQUEST_TYPES[text]
        elif text == "node-role-byname":
            number = REQUEST_TYPES["node-role"]
        else:
            raise ConfdError(f"unknown request type {value!r}; known: "
                             + ", ".join(REQUEST_TYPES))
    if number not in REQUEST_NAMES:
        raise ConfdError(f"unknown request type number {number} (0-{max(REQUEST_NAMES)})")
    return number


def needed_replies(sent: int) -> int:
    """How many replies are enough when ``sent`` peers were asked."""
    if sent < 3:
        return sent
    if sent < 5:
        return sent - 1
    return sent // 2 + 1


def choose_peers(peers: Sequence[str], coverage: int,
                 rng: random.Random | None = None) -> list[str]:
    """The peers to ask: a shuffled selection of ``coverage`` of them."""
    if not peers:
        raise ConfdError("no confd peers known")
    if coverage == 0:
        count = min(len(peers), DEFAULT_COVERAGE)
    elif coverage == -1:
        count = len(peers)
    elif coverage < -1:
        raise ConfdError(f"invalid coverage {coverage} (0: default, -1: all peers)")
    elif coverage > len(peers):
        raise ConfdError(f"coverage {coverage} is more than the {len(peers)} known peers")
    else:
        count = coverage
    shuffled = list(peers)
    (rng or random).shuffle(shuffled)
    return shuffled[:count]


def encode_request(hmac_key: bytes, req_type: int, query: Any, rsalt: str,
                   now: float) -> bytes:
    """The signed datagram of a request."""
    try:
        data = protocol.pack_request(hmac_key, req_type, query, rsalt, now)
    except protocol.BadMessage as err:
        raise ConfdError(f"invalid request: {err.reason}") from None
    if len(data) > MAX_UDP_DATA_SIZE:
        raise ConfdError(f"request too large for one datagram ({len(data)} bytes)")
    return data


def decode_reply(hmac_key: bytes, data: bytes) -> tuple[str, int, Any, int] | None:
    """``(salt, status, answer, serial)`` of a reply datagram, or None if it is not a
    well-formed reply signed with ``hmac_key``.

    Replies come from the network: the HMAC is checked before the inner
    message is parsed, and every parse is bounded in depth (see
    :mod:`ganeti.confd.protocol`).
    """
    try:
        text, salt = protocol.unpack(hmac_key, data)
        reply = protocol.parse_reply(text)
    except protocol.BadMessage:
        return None
    return salt, reply.status, reply.answer, reply.serial


@dataclass
class _Pending:
    """Replies gathered for one outstanding request."""

    sent: int
    replies: list[ConfdReply] = field(default_factory=list)

    def add(self, reply: ConfdReply) -> bool:
        """Record a reply (one per server); True when enough have arrived."""
        if any((r.server, r.port) == (reply.server, reply.port) for r in self.replies):
            return False
        self.replies.append(reply)
        return self.done()

    def done(self) -> bool:
        return len(self.replies) >= needed_replies(self.sent)

    def result(self, timed_out: bool) -> ConfdResult:
        return summarise(self.replies, self.sent, timed_out)


def summarise(replies: Sequence[ConfdReply], sent: int, timed_out: bool) -> ConfdResult:
    """Pick the reply with the highest serial (the first received among equals) and
    check that replies with that serial agree."""
    if not replies:
        return ConfdResult(None, None, None, None, (), True, timed_out, sent)
    best = replies[0]
    for reply in replies[1:]:
        if reply.serial > best.serial:
            best = reply
    consistent = all((r.status, r.answer) == (best.status, best.answer)
                     for r in replies if r.serial == best.serial)
    return ConfdResult(best.status, best.answer, best.serial, best.server, tuple(replies),
                       consistent, timed_out, sent)


def read_peers(paths: Paths) -> list[str]:
    """The master candidates' IPs from the node's ssconf ``master_candidates_ips``."""
    text = ssconf.read(paths, "master_candidates_ips")
    return [line.strip() for line in text.splitlines() if line.strip()]


def read_node_files(paths: Paths) -> tuple[list[str], bytes]:
    """The master candidates' IPs (ssconf ``master_candidates_ips``) and the confd
    HMAC key (the whole ``hmac.key``) of a node."""
    peers = read_peers(paths)
    with open(paths.hmac_key, "rb") as f:
        key = f.read()
    return peers, key


def _family(peers: Sequence[str]) -> socket.AddressFamily:
    families = {socket.AF_INET6 if ":" in p else socket.AF_INET for p in peers}
    if len(families) > 1:
        raise ConfdError("confd peers mix IPv4 and IPv6 addresses")
    return families.pop() if families else socket.AF_INET


class _ClientProtocol(DatagramProtocol):
    def __init__(self, client: ConfdClient) -> None:
        self.client = client

    def datagramReceived(self, datagram: bytes, addr: Any) -> None:
        self.client._received(datagram, addr[0], addr[1])


class ConfdClient:
    """Sends confd requests from one UDP port and gathers the replies."""

    def __init__(self, reactor: Any, hmac_key: bytes, peers: Sequence[str],
                 port: int = constants.DEFAULT_CONFD_PORT, clock: Any = None,
                 expiry: float = DEFAULT_EXPIRY, rng: random.Random | None = None) -> None:
        if not isinstance(hmac_key, bytes):
            raise TypeError("hmac_key must be bytes")
        self.reactor = reactor
        self.clock = reactor if clock is None else clock
        self.hmac_key = hmac_key
        self.peers = list(peers)
        self.family = _family(self.peers)
        self.port = port
        self.expiry = expiry
        self.rng = rng or random.Random()
        self._listening: Any = None
        self._pending: dict[str, tuple[_Pending, defer.Deferred[ConfdResult], Any]] = {}
        # Anyone can send datagrams to our port: one line per reason per interval.
        self.drops = protocol.RateLimitedLog(self.clock, _log, DROP_LOG_INTERVAL)

    @classmethod
    def from_paths(cls, reactor: Any, paths: Paths, **kwargs: Any) -> ConfdClient:
        """A client for the master candidates of the node ``paths`` belongs to."""
        peers, key = read_node_files(paths)
        return cls(reactor, key, peers, **kwargs)

    def _transport(self) -> Any:
        if self._listening is None:
            interface = "::" if self.family == socket.AF_INET6 else ""
            self._listening = self.reactor.listenUDP(0, _ClientProtocol(self),
                                                     interface=interface)
        return self._listening

    def request(self, req_type: str | int, query: Any = None,
                coverage: int = 0) -> defer.Deferred[ConfdResult]:
        """Ask ``coverage`` peers; fires with a :class:`ConfdResult` once enough peers
        answered or the request expired (errbacks with ConfdError for bad input)."""
        try:
            number = request_type(req_type)
            targets = choose_peers(self.peers, coverage, self.rng)
            rsalt = str(uuid.uuid4())
            data = encode_request(self.hmac_key, number, query, rsalt, self.clock.seconds())
        except ConfdError:
            return defer.fail()
        transport = self._transport()
        d: defer.Deferred[ConfdResult] = defer.Deferred()
        pending = _Pending(sent=len(targets))
        timer = self.clock.callLater(self.expiry, self._expire, rsalt)
        self._pending[rsalt] = (pending, d, timer)
        for peer in targets:
            try:
                transport.write(data, (peer, self.port))
            except OSError as err:
                _log.warn("confd client: cannot send to {peer}: {error}", peer=peer,
                          error=err)
        return d

    def _received(self, data: bytes, host: str, port: int) -> None:
        decoded = decode_reply(self.hmac_key, data)
        if decoded is None:
            self.drops.drop("malformed or mis-signed reply", host)
            return
        salt, status, answer, serial = decoded
        entry = self._pending.get(salt)
        if entry is None:
            self.drops.drop("reply for an unknown or expired request", host)
            return
        pending, d, timer = entry
        if pending.add(ConfdReply(host, port, status, answer, serial)):
            del self._pending[salt]
            timer.cancel()
            d.callback(pending.result(timed_out=False))

    def _expire(self, salt: str) -> None:
        entry = self._pending.pop(salt, None)
        if entry is not None:
            pending, d, _ = entry
            d.callback(pending.result(timed_out=True))

    def close(self) -> defer.Deferred[None]:
        """Expire every outstanding request and close the UDP port."""
        for salt in list(self._pending):
            self._pending[salt][2].cancel()
            self._expire(salt)
        listening, self._listening = self._listening, None
        if listening is None:
            return defer.succeed(None)
        return defer.maybeDeferred(listening.stopListening)


def query_blocking(peers: Sequence[str], hmac_key: bytes, req_type: str | int,
                   query: Any = None, *, port: int = constants.DEFAULT_CONFD_PORT,
                   coverage: int = 0, timeout: float = DEFAULT_EXPIRY,
                   now: Callable[[], float] = time.time,
                   rng: random.Random | None = None) -> ConfdResult:
    """One request with a plain UDP socket and ``select``, no reactor."""
    number = request_type(req_type)
    targets = choose_peers(peers, coverage, rng)
    rsalt = str(uuid.uuid4())
    start = now()
    data = encode_request(hmac_key, number, query, rsalt, start)
    pending = _Pending(sent=len(targets))
    sock = socket.socket(_family(targets), socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        for peer in targets:
            try:
                sock.sendto(data, (peer, port))
            except OSError:
                pass  # that peer counts as not answering
        while True:
            remaining = start + timeout - now()
            if remaining <= 0:
                return pending.result(timed_out=True)
            readable, _, _ = select.select([sock], [], [], remaining)
            if not readable:
                continue
            try:
                datagram, addr = sock.recvfrom(65536)
            except (BlockingIOError, ConnectionRefusedError):
                continue  # ICMP port unreachable from a peer without confd
            decoded = decode_reply(hmac_key, datagram)
            if decoded is None or decoded[0] != rsalt:
                continue
            _, status, answer, serial = decoded
            if pending.add(ConfdReply(addr[0], addr[1], status, answer, serial)):
                return pending.result(timed_out=False)
    finally:
        sock.close()


def query_node(paths: Paths, req_type: str | int, query: Any = None,
               **kwargs: Any) -> ConfdResult:
    """:func:`query_blocking` against the master candidates of a node."""
    peers, key = read_node_files(paths)
    return query_blocking(peers, key, req_type, query, **kwargs)
