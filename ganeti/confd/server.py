"""Confd answers and the UDP server protocol.

:class:`ConfdAnswerer` is built once per loaded config: every index the
queries need is computed at construction, so answering is dictionary look-ups
and never touches the disk. :class:`ConfdProtocol` checks each datagram
(size, fourcc, HMAC, timestamp, replay, shape), answers valid requests signed
with the request's ``rsalt``, and silently drops everything else (logging at
most one line per reason per interval).
"""

from __future__ import annotations

import collections
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import DatagramProtocol
from twisted.logger import Logger

from ganeti.confd import protocol
from ganeti.confd.protocol import BadMessage, RateLimitedLog, Request
from ganeti.core import constants
from ganeti.core.objects import ConfigData, Disk, Instance, Node

Answer = tuple[int, Any, int]

__all__ = ["AnswerCache", "ConfdAnswerer", "ConfdProtocol", "RateLimitedLog", "ReplayCache",
           "Stats", "json_pointer"]

#: Datagrams larger than this are dropped unread (the client's own limit).
MAX_DATAGRAM = constants.MAX_UDP_DATA_SIZE
#: Largest UDP payload that IPv4 can carry; bigger replies become errors.
MAX_REPLY = 65507
REPLAY_CACHE_SIZE = 1_000_000

_NOT_FOUND = object()


def _error(code: Any) -> Answer:
    return (constants.CONFD_REPL_STATUS_ERROR, code, 0)


UNKNOWN_ENTRY = _error(constants.CONFD_ERROR_UNKNOWN_ENTRY)
ARGUMENT_ERROR = _error(constants.CONFD_ERROR_ARGUMENT)


def json_pointer(document: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 pointer; returns ``_NOT_FOUND`` if it leads nowhere."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return _NOT_FOUND
    value = document
    for token in pointer[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            if token not in value:
                return _NOT_FOUND
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or (token != "0" and token.startswith("0")):
                return _NOT_FOUND
            index = int(token)
            if index >= len(value):
                return _NOT_FOUND
            value = value[index]
        else:
            return _NOT_FOUND
    return value


def _drbd_disks(disk: Disk) -> list[Disk]:
    found = [disk] if disk.dev_type == constants.DT_DRBD8 else []
    for child in disk.children:
        found.extend(_drbd_disks(child))
    return found


class ConfdAnswerer:
    """Answers confd requests from one immutable config snapshot."""

    def __init__(self, cfg: ConfigData, raw: dict[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.raw = raw if raw is not None else cfg.to_dict()
        self.serial = cfg.cluster.serial_no
        self.version = cfg.version
        master = cfg.nodes.get(cfg.cluster.master_node)
        self.master: Node | None = master
        self.nodes_by_name = {n.name: n for n in cfg.nodes.values()}
        ordered = [cfg.nodes[u] for u in sorted(cfg.nodes)]
        # IP lists in descending node-UUID order, as Ganeti's own confd sends them.
        self.node_pips = [n.primary_ip for n in reversed(ordered)]
        self.mc_pips = [n.primary_ip for n in reversed(ordered) if n.master_candidate]
        self.roles = {n.name: self._role(n) for n in ordered}
        self.default_link = cfg.cluster.nicparams.get("default", {}).get("link")
        self.instances_by_name = {i.name: i for i in cfg.instances.values()}
        self.ips_by_link: dict[Any, list[str]] = {}
        self.pnode_pip_by_link_ip: dict[tuple[Any, str], str] = {}
        # Instance objects as in config.data, as Ganeti's own confd answers.
        self.instances_by_node: dict[str, tuple[list[Any], list[Any]]] = {
            n.name: ([], []) for n in ordered}
        self.drbd_by_node: dict[str, list[list[Any]]] = {n.name: [] for n in ordered}
        self.disks_by_instance: dict[str, list[dict[str, Any]]] = {}
        for uuid in sorted(cfg.instances):
            self._index_instance(cfg.instances[uuid])

    def _role(self, node: Node) -> int:
        # Precedence: master > drained > offline > candidate > regular.
        if node.uuid == self.cfg.cluster.master_node:
            return constants.CONFD_NODE_ROLE_MASTER
        if node.drained:
            return constants.CONFD_NODE_ROLE_DRAINED
        if node.offline:
            return constants.CONFD_NODE_ROLE_OFFLINE
        if node.master_candidate:
            return constants.CONFD_NODE_ROLE_CANDIDATE
        return constants.CONFD_NODE_ROLE_REGULAR

    def _node_name(self, uuid: Any) -> Any:
        node = self.cfg.nodes.get(uuid) if isinstance(uuid, str) else None
        return node.name if node is not None else uuid

    def _index_instance(self, inst: Instance) -> None:
        pnode = self.cfg.nodes.get(inst.primary_node)
        for nic in inst.nics:
            link = nic.nicparams.get("link") or self.default_link
            if nic.ip:
                self.ips_by_link.setdefault(link, []).append(nic.ip)
                if pnode is not None:
                    self.pnode_pip_by_link_ip.setdefault((link, nic.ip), pnode.primary_ip)
        disks = [self.cfg.disks[d] for d in inst.disks if d in self.cfg.disks]
        raw_disks = self.raw.get("disks", {})
        self.disks_by_instance[inst.name] = [raw_disks.get(d.uuid) or d.to_dict()
                                             for d in disks]
        raw_inst = self.raw.get("instances", {}).get(inst.uuid) or inst.to_dict()
        secondaries: set[str] = set(inst.secondary_nodes or ())
        for disk in disks:
            secondaries.update(n for n in disk.nodes if n != inst.primary_node)
        if pnode is not None and pnode.name in self.instances_by_node:
            self.instances_by_node[pnode.name][0].append(raw_inst)
        for uuid in sorted(secondaries, key=lambda u: self._node_name(u)):
            name = self._node_name(uuid)
            if name in self.instances_by_node:
                self.instances_by_node[name][1].append(raw_inst)
        for index, top in enumerate(disks):
            iv_name = top.iv_name or f"disk/{index}"
            for drbd in _drbd_disks(top):
                self._index_drbd(inst, drbd, iv_name)

    def _index_drbd(self, inst: Instance, disk: Disk, iv_name: str) -> None:
        lid = disk.logical_id or []
        if len(lid) < 5:
            return
        for me, peer, minor in ((lid[0], lid[1], lid[3]), (lid[1], lid[0], lid[4])):
            name = self._node_name(me)
            if name not in self.drbd_by_node:
                continue
            role = "primary" if me == inst.primary_node else "secondary"
            self.drbd_by_node[name].append(
                [name, minor, inst.name, iv_name, role, self._node_name(peer)])

    # -- answers --------------------------------------------------------

    def answer(self, request: Request) -> Answer:
        """``(status, answer, serial)`` for a validated request."""
        handler = self._handlers.get(request.type)
        if handler is None:
            return (constants.CONFD_REPL_STATUS_NOTIMPLEMENTED, None, 0)
        try:
            return handler(self, request.query)
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            return (constants.CONFD_REPL_STATUS_ERROR, f"internal error: {err}", 0)

    def _ok(self, answer: Any) -> Answer:
        return (constants.CONFD_REPL_STATUS_OK, answer, self.serial)

    def ping(self, query: Any) -> Answer:
        return (constants.CONFD_REPL_STATUS_OK, self.version, 0)

    def cluster_master(self, query: Any) -> Answer:
        if self.master is None:
            return (constants.CONFD_REPL_STATUS_ERROR, "the config names no master node", 0)
        if query is None:
            return self._ok(self.master.name)
        if not isinstance(query, dict):
            return ARGUMENT_ERROR
        fields = query.get(constants.CONFD_REQQ_FIELDS, [])
        values = {constants.CONFD_REQFIELD_NAME: self.master.name,
                  constants.CONFD_REQFIELD_IP: self.cfg.cluster.master_ip,
                  constants.CONFD_REQFIELD_MNODE_PIP: self.master.primary_ip}
        if not isinstance(fields, list) or any(
                isinstance(f, bool) or f not in values for f in fields):
            return ARGUMENT_ERROR
        return self._ok([values[f] for f in fields])

    def node_role(self, query: Any) -> Answer:
        if not isinstance(query, str):
            return ARGUMENT_ERROR
        role = self.roles.get(query)
        return UNKNOWN_ENTRY if role is None else self._ok(role)

    def node_pip_list(self, query: Any) -> Answer:
        return self._ok(list(self.node_pips))

    def mc_pip_list(self, query: Any) -> Answer:
        return self._ok(list(self.mc_pips))

    def instances_ips(self, query: Any) -> Answer:
        if query is not None and not isinstance(query, str):
            return ARGUMENT_ERROR
        link = query if query is not None else self.default_link
        return self._ok(list(self.ips_by_link.get(link, [])))

    def _pip_by_ip(self, link: Any, ip: Any) -> Answer:
        if not isinstance(ip, str):
            return ARGUMENT_ERROR
        pip = self.pnode_pip_by_link_ip.get((link, ip))
        return UNKNOWN_ENTRY if pip is None else self._ok(pip)

    def node_pip_by_instance_ip(self, query: Any) -> Answer:
        if not isinstance(query, dict):
            return ARGUMENT_ERROR
        link = query.get(constants.CONFD_REQQ_LINK)
        if link is None:
            link = self.default_link
        ip = query.get(constants.CONFD_REQQ_IP)
        if ip is not None:
            return self._pip_by_ip(link, ip)
        iplist = query.get(constants.CONFD_REQQ_IPLIST)
        if not isinstance(iplist, list):
            return ARGUMENT_ERROR
        return self._ok([list(self._pip_by_ip(link, i)) for i in iplist])

    def _node(self, query: Any) -> Node | Answer:
        if not isinstance(query, str):
            return ARGUMENT_ERROR
        node = self.nodes_by_name.get(query)
        return UNKNOWN_ENTRY if node is None else node

    def node_drbd(self, query: Any) -> Answer:
        node = self._node(query)
        if not isinstance(node, Node):
            return node
        return (constants.CONFD_REPL_STATUS_OK, [list(m) for m in self.drbd_by_node[node.name]],
                node.serial_no)

    def node_instances(self, query: Any) -> Answer:
        node = self._node(query)
        if not isinstance(node, Node):
            return node
        prim, sec = self.instances_by_node[node.name]
        return (constants.CONFD_REPL_STATUS_OK, [list(prim), list(sec)], node.serial_no)

    def instance_disks(self, query: Any) -> Answer:
        if not isinstance(query, str):
            return ARGUMENT_ERROR
        inst = self.instances_by_name.get(query)
        if inst is None:
            return UNKNOWN_ENTRY
        return (constants.CONFD_REPL_STATUS_OK, self.disks_by_instance[inst.name], inst.serial_no)

    def config_query(self, query: Any) -> Answer:
        if not isinstance(query, str):
            return ARGUMENT_ERROR
        value = json_pointer(self.raw, query)
        return ARGUMENT_ERROR if value is _NOT_FOUND else self._ok(value)

    def data_collectors(self, query: Any) -> Answer:
        result = {}
        for name, params in sorted(self.cfg.cluster.data_collectors.items()):
            result[name] = {"active": params.get("active", True),
                            "interval": params.get("interval")}
        return self._ok(result)

    _handlers: dict[int, Callable[[ConfdAnswerer, Any], Answer]] = {
        constants.CONFD_REQ_PING: ping,
        constants.CONFD_REQ_NODE_ROLE_BYNAME: node_role,
        constants.CONFD_REQ_NODE_PIP_BY_INSTANCE_IP: node_pip_by_instance_ip,
        constants.CONFD_REQ_CLUSTER_MASTER: cluster_master,
        constants.CONFD_REQ_NODE_PIP_LIST: node_pip_list,
        constants.CONFD_REQ_MC_PIP_LIST: mc_pip_list,
        constants.CONFD_REQ_INSTANCES_IPS_LIST: instances_ips,
        constants.CONFD_REQ_NODE_DRBD: node_drbd,
        constants.CONFD_REQ_NODE_INSTANCES: node_instances,
        constants.CONFD_REQ_INSTANCE_DISKS: instance_disks,
        constants.CONFD_REQ_CONFIG_QUERY: config_query,
        constants.CONFD_REQ_DATA_COLLECTORS: data_collectors,
    }


class ReplayCache:
    """Keys of accepted requests, each remembered for ``window`` seconds.

    A dict for membership and a deque in arrival order for expiry; when
    ``cap`` keys are held the oldest is forgotten first.
    """

    def __init__(self, window: float = constants.CONFD_REPLAY_WINDOW,
                 cap: int = REPLAY_CACHE_SIZE) -> None:
        self.window = window
        self.cap = cap
        self._seen: dict[str, float] = {}
        self._order: collections.deque[tuple[float, str]] = collections.deque()

    def __len__(self) -> int:
        return len(self._seen)

    def expire(self, now: float) -> None:
        """Forget keys whose window has passed."""
        order = self._order
        while order and order[0][0] <= now:
            _, key = order.popleft()
            self._seen.pop(key, None)

    def check_and_add(self, key: str, now: float) -> bool:
        """True (and remember ``key``) unless it was seen within the window."""
        self.expire(now)
        if key in self._seen:
            return False
        while len(self._order) >= self.cap:
            _, old = self._order.popleft()
            self._seen.pop(old, None)
        expires = now + self.window
        self._seen[key] = expires
        self._order.append((expires, key))
        return True


def _query_key(request: Request) -> Any:
    query = request.query
    if query is None or isinstance(query, str):
        return (request.type, query)
    # A dict query (string keys after normalisation): its canonical text.
    return (request.type, json.dumps(query, sort_keys=True, separators=(",", ":")))


class AnswerCache:
    """Encoded reply messages per request, for the current config snapshot only.

    An answer depends on nothing but the snapshot and the request's type and
    query, so the inner reply text is built once and kept both as a JSON
    string literal and as UTF-8 (:func:`ganeti.confd.protocol.sign_encoded`);
    a reply then costs one HMAC over the request's own salt.  The cache
    empties when the answerer changes (a new config) and whenever it holds
    :attr:`max_entries` entries or :attr:`max_bytes` bytes.
    """

    def __init__(self, max_entries: int = 4096, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._owner: ConfdAnswerer | None = None
        self._entries: dict[Any, tuple[bytes, bytes]] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, answerer: ConfdAnswerer, request: Request) -> tuple[bytes, bytes]:
        """``(msg as a JSON string literal, msg as UTF-8)`` of the reply to ``request``."""
        if answerer is not self._owner:
            self._owner = answerer
            self._entries = {}
            self._bytes = 0
        key = _query_key(request)
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry
        self.misses += 1
        text = protocol.dump_message(protocol.make_reply(*answerer.answer(request)))
        entry = (json.dumps(text).encode("ascii"), text.encode("utf-8"))
        size = len(entry[0]) + len(entry[1])
        if len(self._entries) >= self.max_entries or self._bytes + size > self.max_bytes:
            self._entries = {}
            self._bytes = 0
        self._entries[key] = entry
        self._bytes += size
        return entry


@dataclass
class Stats:
    """Counters of the server protocol (for tests, logs and the benchmark)."""

    received: int = 0
    answered: int = 0
    dropped: int = 0


class ConfdProtocol(DatagramProtocol):
    """Validates datagrams and answers them with the current answerer.

    ``answerer`` and ``key`` are swapped by the config watcher; a request is
    answered from whatever snapshot is current when it arrives, never a mix.
    With no answerer (no config yet, or not a candidate) nothing is answered.
    """

    log = Logger()

    def __init__(self, clock: IReactorTime, key: bytes | None = None,
                 answerer: ConfdAnswerer | None = None,
                 max_skew: float = constants.CONFD_MAX_CLOCK_SKEW,
                 replays: ReplayCache | None = None, log_interval: float = 60.0) -> None:
        self.clock = clock
        self.key = key
        self.answerer = answerer
        self.max_skew = max_skew
        self.replays = replays if replays is not None else ReplayCache(window=2 * max_skew)
        self.drops = RateLimitedLog(clock, self.log, log_interval)
        self.stats = Stats()
        self.answers = AnswerCache()
        self._sendto: Callable[[bytes, Any], object] | None = None

    def _drop(self, reason: str, addr: Any) -> None:
        self.stats.dropped += 1
        self.drops.drop(reason, addr)

    def handle(self, data: bytes, addr: Any) -> bytes | None:
        """The signed reply to ``data``, or None if it must be dropped."""
        self.stats.received += 1
        if len(data) > MAX_DATAGRAM:
            self._drop("oversized", addr)
            return None
        answerer, key = self.answerer, self.key
        if answerer is None or key is None:
            self._drop("not serving (no usable config)", addr)
            return None
        try:
            msg, salt, digest = protocol.unpack_signed(key, data)
            now = self.clock.seconds()
            if abs(protocol.salt_time(salt) - now) > self.max_skew:
                raise BadMessage("timestamp outside the allowed clock skew")
            request = protocol.parse_request(msg)
        except BadMessage as err:
            self._drop(err.reason, addr)
            return None
        if not self.replays.check_and_add(salt + ":" + digest, now):
            self._drop("replayed request", addr)
            return None
        msg_json, msg_utf8 = self.answers.get(answerer, request)
        reply = protocol.sign_encoded(key, msg_json, msg_utf8, request.rsalt)
        if len(reply) > MAX_REPLY:
            reply = protocol.pack_reply(key, constants.CONFD_REPL_STATUS_ERROR,
                                        "answer too large for one datagram", 0,
                                        request.rsalt)
        self.stats.answered += 1
        return reply

    def datagramReceived(self, datagram: bytes, addr: Any) -> None:
        try:
            reply = self.handle(datagram, addr)
        except Exception as err:  # a datagram must never cost a traceback
            # handle() drops every bad input it knows of; anything else is a
            # bug, reported like a bad datagram so that a flood of the
            # datagrams that trigger it cannot flood the log.
            self.stats.dropped += 1
            self.drops.drop(f"internal error: {type(err).__name__}: {err}", addr)
            return
        if reply is not None and self.transport is not None:
            try:
                (self._sendto or self.transport.write)(reply, addr)
            except OSError as err:
                self.drops.drop(f"cannot send the reply: {err}", addr)

    def startProtocol(self) -> None:
        # Replies go to the address a datagram came from, which the kernel
        # gave us: Twisted's write() would parse it again three times per
        # reply, so send on the port's socket directly where there is one.
        sock = getattr(self.transport, "socket", None)
        self._sendto = sock.sendto if isinstance(sock, socket.socket) else None

    def stopProtocol(self) -> None:
        self._sendto = None
