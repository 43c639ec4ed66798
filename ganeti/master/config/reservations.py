"""Resources reserved by a job until its locks are released (Ganeti's temporary reservations).

Between an LU's prerequisite check and its config change, other jobs run.
To stop two jobs from picking the same MAC address, IP, TCP/UDP port, DRBD
minor, logical volume name or DRBD secret, a job *reserves* what it will
use.  A reservation is checked against the committed config and against
every other job's reservations, and it lasts until :meth:`release` drops
everything the job (the *owner*, its job id) holds; the processor calls
that where it releases the job's locks.  Committing the resource into the
config (a NIC's MAC, a port taken from the pool) is the LU's config change;
:func:`commit_ip` and :func:`commit_port` are the pure helpers for it.

Errors are Ganeti's: :class:`ReservationError` (the resource is taken); an LU
turns it into ``OpPrereqError`` with ``ECODE_NOTUNIQUE`` and Ganeti's
wording, e.g. with :func:`as_prereq`::

    try:
        reservations.reserve_mac(job_id, cfg, mac)
    except ReservationError as err:
        raise as_prereq(err, f"MAC address {mac} already in use in cluster")

Look-ups of what the config uses are built once per committed config
(identity and ``serial_no``), so at 20,000 instances a job pays the index
once, not on every call.
"""

from __future__ import annotations

import ipaddress
import random
import uuid as uuidmod
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator
from typing import Any

from ganeti.core import constants
from ganeti.core import network as netpool
from ganeti.core.errors import (
    ECODE_NOTUNIQUE,
    AddressPoolError,
    OpPrereqError,
    ProgrammerError,
    ReservationError,
)
from ganeti.core.objects import Cluster, ConfigData, Disk, Network

#: How often a random value is drawn before generation gives up (Ganeti's 64).
GENERATE_RETRIES = 64
DRBD_SECRET_BYTES = 20

Owner = Hashable
Resource = tuple[Hashable, ...]


def as_prereq(err: ReservationError, message: str, code: str = ECODE_NOTUNIQUE
              ) -> OpPrereqError:
    """The ``OpPrereqError`` an LU raises for a failed reservation."""
    error = OpPrereqError(message, code)
    error.__cause__ = err
    return error


# -- what the committed config uses -------------------------------------------------------

def _walk_disks(disks: Iterable[Disk]) -> Iterator[Disk]:
    for disk in disks:
        yield disk
        yield from _walk_disks(disk.children)


class _Counted:
    """A multiset with set-like ``in``: a value stays used while any holder has it."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[Any, int] = {}

    def add(self, value: Any) -> None:
        self._counts[value] = self._counts.get(value, 0) + 1

    def discard(self, value: Any) -> None:
        left = self._counts.get(value, 0) - 1
        if left > 0:
            self._counts[value] = left
        else:
            self._counts.pop(value, None)

    def __contains__(self, value: object) -> bool:
        return value in self._counts

    def __iter__(self) -> Iterator[Any]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)


def _instance_values(inst: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("macs", nic.mac) for nic in inst.nics if nic.mac]
    if inst.network_port is not None:
        out.append(("ports", inst.network_port))
    return out


def _disk_values(top: Disk) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for disk in _walk_disks([top]):
        lid = disk.logical_id
        if disk.dev_type == constants.DT_PLAIN and lid and len(lid) == 2:
            out.append(("lvs", f"{lid[0]}/{lid[1]}"))
        elif disk.dev_type == constants.DT_DRBD8 and lid and len(lid) == 6:
            node_a, node_b, port, minor_a, minor_b, secret = lid
            out += [("ports", port), ("minors", (node_a, minor_a)),
                    ("minors", (node_b, minor_b)), ("secrets", secret)]
    return out


class _Used:
    """The values a committed config uses (MACs, ports, DRBD minors, LV names, DRBD
    secrets), kept up to date from one config version to the next by looking only
    at the instances and disks that are new objects (the config writer copies only
    what a change touches, so the others are the same objects): a new version costs
    a pass of identity comparisons, not a rebuild."""

    def __init__(self) -> None:
        self.macs = _Counted()
        self.ports = _Counted()
        self.lvs = _Counted()
        self.secrets = _Counted()
        self._minors = _Counted()
        self.minors: dict[str, set[int]] = {}
        self._instances: dict[str, Any] = {}
        self._disks: dict[str, Any] = {}

    def _apply(self, values: list[tuple[str, Any]], add: bool) -> None:
        for table, value in values:
            if table == "minors":
                node, minor = value
                (self._minors.add if add else self._minors.discard)(value)
                if add:
                    self.minors.setdefault(node, set()).add(minor)
                elif value not in self._minors:
                    self.minors.get(node, set()).discard(minor)
            else:
                counted: _Counted = getattr(self, table)
                (counted.add if add else counted.discard)(value)

    def _sync(self, mine: dict[str, Any], theirs: dict[str, Any],
              values: Callable[[Any], list[tuple[str, Any]]]) -> None:
        for uuid in [u for u in mine if u not in theirs]:
            self._apply(values(mine.pop(uuid)), add=False)
        for uuid, obj in theirs.items():
            old = mine.get(uuid)
            if old is obj:
                continue
            if old is not None:
                self._apply(values(old), add=False)
            self._apply(values(obj), add=True)
            mine[uuid] = obj

    def update(self, cfg: ConfigData) -> _Used:
        """Follow ``cfg`` (any version: a whole new config is a full pass)."""
        self._sync(self._instances, cfg.instances, _instance_values)
        self._sync(self._disks, cfg.disks, _disk_values)
        return self

    @classmethod
    def of(cls, cfg: ConfigData) -> _Used:
        return cls().update(cfg)


# -- the manager --------------------------------------------------------------------------

class ReservationManager:
    """Reservations of all running jobs, keyed by owner (the job id)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.SystemRandom()
        self._by_owner: dict[Owner, set[Resource]] = {}
        self._holder: dict[Resource, Owner] = {}
        self._index_of: tuple[ConfigData, int, _Used] | None = None

    # generic --------------------------------------------------------------------------

    def _used(self, cfg: ConfigData) -> _Used:
        cached = self._index_of
        if cached is None or (cached[0] is cfg and cached[1] != cfg.serial_no):
            # first use, or a config changed in place (never by the writer): rebuild
            cached = (cfg, cfg.serial_no, _Used.of(cfg))
        elif cached[0] is not cfg:  # a new version: follow the objects that changed
            cached = (cfg, cfg.serial_no, cached[2].update(cfg))
        self._index_of = cached
        return cached[2]

    def _reserve(self, owner: Owner, resource: Resource) -> None:
        # Also for the same owner: one job giving two NICs one MAC is a clash too.
        if resource in self._holder:
            raise ReservationError(f"Duplicate reservation for resource '{_show(resource)}'")
        self._holder[resource] = owner
        self._by_owner.setdefault(owner, set()).add(resource)

    def is_reserved(self, resource: Resource) -> bool:
        """Whether any job holds ``resource``."""
        return resource in self._holder

    def reserved(self, owner: Owner | None = None) -> set[Resource]:
        """What ``owner`` holds, or what all jobs hold."""
        if owner is None:
            return set(self._holder)
        return set(self._by_owner.get(owner, ()))

    def release(self, owner: Owner) -> None:
        """Drop every reservation of ``owner`` (called with the job's lock release)."""
        for resource in self._by_owner.pop(owner, ()):
            self._holder.pop(resource, None)

    def release_one(self, owner: Owner, resource: Resource) -> None:
        """Give back one resource early (e.g. an IP an LU decided not to use)."""
        if self._holder.get(resource) == owner:
            del self._holder[resource]
            self._by_owner.get(owner, set()).discard(resource)

    def _generate(self, owner: Owner, kind: str, taken: Collection[Any],
                  make: Iterator[str]) -> str:
        last = None
        for _ in range(GENERATE_RETRIES):
            candidate = next(make)
            last = candidate
            if candidate not in taken and (kind, candidate) not in self._holder:
                self._reserve(owner, (kind, candidate))
                return candidate
        raise ReservationError(f"Not able generate new resource (last tried: {last})")

    # MAC addresses --------------------------------------------------------------------

    def reserve_mac(self, owner: Owner, cfg: ConfigData, mac: str) -> None:
        """Reserve ``mac`` (lower case); taken if a NIC has it or a job holds it."""
        mac = mac.lower()
        if mac in self._used(cfg).macs:
            raise ReservationError(f"MAC address {mac} already in use")
        self._reserve(owner, ("mac", mac))

    def generate_mac(self, owner: Owner, cfg: ConfigData,
                     network_uuid: str | None = None) -> str:
        """A new unique MAC: the network's ``mac_prefix`` (else the cluster's) + 3 random bytes."""
        prefix = cfg.cluster.mac_prefix
        if network_uuid is not None:
            net = cfg.networks.get(network_uuid)
            if net is None:
                raise ReservationError(f"Network {network_uuid} not found")
            prefix = net.mac_prefix or prefix

        def candidates() -> Iterator[str]:
            while True:
                tail = ":".join(f"{self._rng.randrange(256):02x}" for _ in range(3))
                yield f"{prefix}:{tail}"
        return self._generate(owner, "mac", self._used(cfg).macs, candidates())

    # IP addresses of networks ---------------------------------------------------------

    def reserve_ip(self, owner: Owner, cfg: ConfigData, network_uuid: str, ip: str,
                   check: bool = True) -> None:
        """Reserve ``ip`` in a network; with ``check`` it must be free in the network's pool."""
        net, cidr = _network(cfg, network_uuid)
        try:
            index = netpool.address_index(net, ip)
        except AddressPoolError:
            raise ReservationError(f"IP address {ip!r} does not belong to network "
                                   f"{net.name}") from None
        if check and netpool.is_taken(net, index):
            raise ReservationError(f"IP address {ip} already in use in network {net.name}")
        self._reserve(owner, ("ip", network_uuid, str(cidr[index])))

    def generate_ip(self, owner: Owner, cfg: ConfigData, network_uuid: str) -> str:
        """The first free address of a network's pool, reserved (``ip=pool``)."""
        net, _ = _network(cfg, network_uuid)
        for address in netpool.free_addresses(net):
            if ("ip", network_uuid, address) not in self._holder:
                self._reserve(owner, ("ip", network_uuid, address))
                return address
        raise ReservationError(f"No free IP address in network {net.name}")

    # TCP/UDP ports --------------------------------------------------------------------

    def reserve_port(self, owner: Owner, cfg: ConfigData, port: int) -> None:
        """Reserve a given port; taken if a DRBD disk or an instance uses it."""
        if port in self._used(cfg).ports:
            raise ReservationError(f"Port {port} already in use")
        self._reserve(owner, ("port", port))

    def allocate_port(self, owner: Owner, cfg: ConfigData) -> int:
        """A free port: from the cluster's pool first, else above ``highest_used_port``.

        The LU records the port with :func:`commit_port` in its config change.
        """
        used = self._used(cfg).ports
        for port in sorted(cfg.cluster.tcpudp_port_pool):
            if port not in used and ("port", port) not in self._holder:
                self._reserve(owner, ("port", port))
                return port
        held = [r[1] for r in self._holder if r[0] == "port" and isinstance(r[1], int)]
        port = max([cfg.cluster.highest_used_port, *held]) + 1
        if port >= constants.LAST_DRBD_PORT:
            raise ReservationError(f"The highest used port is greater than "
                                   f"{constants.LAST_DRBD_PORT}. Aborting.")
        self._reserve(owner, ("port", port))
        return port

    # DRBD minors and secrets ----------------------------------------------------------

    def reserve_drbd_minor(self, owner: Owner, cfg: ConfigData, node_uuid: str,
                           minor: int) -> None:
        """Reserve one minor on one node."""
        if minor in self._used(cfg).minors.get(node_uuid, ()):
            raise ReservationError(f"DRBD minor {minor} of node {node_uuid} already in use")
        self._reserve(owner, ("minor", node_uuid, minor))

    def allocate_drbd_minors(self, owner: Owner, cfg: ConfigData,
                             node_uuids: list[str]) -> list[int]:
        """The lowest free minor of each node, in the order given (Ganeti's
        ``AllocateDRBDMinor``); a node may not be given twice."""
        if len(set(node_uuids)) != len(node_uuids):
            raise ProgrammerError(f"A node can not be given multiple times: {node_uuids}")
        used = self._used(cfg).minors
        result = []
        for node in node_uuids:
            taken = used.get(node, set())
            minor = 0
            while minor in taken or ("minor", node, minor) in self._holder:
                minor += 1
            self._reserve(owner, ("minor", node, minor))
            result.append(minor)
        return result

    def generate_drbd_secret(self, owner: Owner, cfg: ConfigData) -> str:
        """A new shared secret for a DRBD disk (40 hex digits), unique in the cluster."""
        def candidates() -> Iterator[str]:
            while True:
                yield self._rng.getrandbits(DRBD_SECRET_BYTES * 8).to_bytes(
                    DRBD_SECRET_BYTES, "big").hex()
        return self._generate(owner, "secret", self._used(cfg).secrets, candidates())

    # logical volumes ------------------------------------------------------------------

    def reserve_lv(self, owner: Owner, cfg: ConfigData, lv_name: str) -> None:
        """Reserve a volume name ``vg/lv``; taken if a plain disk uses it."""
        if lv_name in self._used(cfg).lvs:
            raise ReservationError(f"Logical volume {lv_name} already in use")
        self._reserve(owner, ("lv", lv_name))

    def generate_lv_names(self, owner: Owner, cfg: ConfigData, vg: str,
                          suffixes: list[str]) -> list[str]:
        """Fresh volume names ``<uuid><suffix>`` in ``vg``, reserved (Ganeti's
        ``_GenerateUniqueNames``)."""
        names = []
        for suffix in suffixes:
            def candidates(sfx: str = suffix) -> Iterator[str]:
                while True:
                    yield f"{vg}/{uuidmod.UUID(int=self._rng.getrandbits(128), version=4)}{sfx}"
            names.append(self._generate(owner, "lv", self._used(cfg).lvs, candidates())
                         .split("/", 1)[1])
        return names


def _show(resource: Resource) -> str:
    return ":".join(str(part) for part in resource)


# -- networks and committing --------------------------------------------------------------

def _network(cfg: ConfigData, network_uuid: str
             ) -> tuple[Network, ipaddress.IPv4Network | ipaddress.IPv6Network]:
    net = cfg.networks.get(network_uuid)
    if net is None:
        raise ReservationError(f"Network {network_uuid} not found")
    try:
        return net, ipaddress.ip_network(net.network)
    except ValueError:
        raise ReservationError(f"Network {net.name} has an invalid range "
                               f"{net.network!r}") from None


def _mark_ip(net: Network, ip: str, external: bool, value: str) -> None:
    try:
        netpool.mark(net, ip, external, value == "1")
    except AddressPoolError:
        raise ReservationError(f"IP address {ip} does not belong to network "
                               f"{net.name}") from None


def commit_ip(net: Network, ip: str, external: bool = False) -> None:
    """Mark ``ip`` used in the network's pool (in a config change)."""
    _mark_ip(net, ip, external, "1")


def release_ip(net: Network, ip: str, external: bool = False) -> None:
    """Give ``ip`` back to the network's pool (in a config change)."""
    _mark_ip(net, ip, external, "0")


def commit_port(cluster: Cluster, port: int) -> None:
    """Record a port taken by :meth:`ReservationManager.allocate_port` (in a config change)."""
    if port in cluster.tcpudp_port_pool:
        cluster.tcpudp_port_pool = [p for p in cluster.tcpudp_port_pool if p != port]
    cluster.highest_used_port = max(cluster.highest_used_port, port)
