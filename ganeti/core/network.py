"""IP address pools of networks (Ganeti's ``network.AddressPool``).

A :class:`~ganeti.core.objects.Network` keeps two reservation maps, strings
with one character per address of its IPv4 range: ``reservations`` (``'1'``:
used by an instance NIC) and ``ext_reservations`` (``'1'``: reserved outside
Ganeti: the network and broadcast addresses, the gateway, node and master IPs,
addresses an administrator reserved).  A missing map means all free.

:class:`AddressPool` reads and changes those maps in place (so a change made
inside a config change is the change itself); :func:`initialize_network`
reserves what Ganeti reserves in a new network.  Per-job reservations of
addresses (``ip=pool`` for NICs) are the master's
(:class:`ganeti.master.config.reservations.ReservationManager`), which marks
the pool through :func:`is_taken` and :func:`mark`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from ganeti.core.errors import ECODE_NOENT, AddressPoolError, OpPrereqError
from ganeti.core.objects import ConfigData, Network

#: The smallest and the largest IPv4 network a pool may have (prefix lengths, Ganeti's).
IPV4_NETWORK_MIN_SIZE = 30
IPV4_NETWORK_MAX_SIZE = 16

_USED, _FREE = "1", "0"
_MAP_CHARS = str.maketrans({_USED: "X", _FREE: "."})


def lookup_network(cfg: ConfigData, target: str) -> Network:
    """The network named ``target`` (or with that UUID); Ganeti's error otherwise."""
    net = cfg.networks.get(target) or cfg.network_by_name(target)
    if net is None:
        raise OpPrereqError(f"Network '{target}' not found", ECODE_NOENT)
    return net


def parse_network4(text: str) -> ipaddress.IPv4Network:
    """An IPv4 network a pool can have: host bits zero, between /16 and /30.

    :class:`AddressPoolError` with Ganeti's wording otherwise.
    """
    try:
        cidr = ipaddress.IPv4Network(text, strict=True)
    except ValueError as err:
        raise AddressPoolError(f"Invalid IPv4 network '{text}': {err}") from None
    if cidr.num_addresses > 2 ** (32 - IPV4_NETWORK_MAX_SIZE):
        raise AddressPoolError(f"A big network with {cidr.num_addresses} host(s) is currently "
                               f"not supported. please specify at most a "
                               f"/{IPV4_NETWORK_MAX_SIZE} network")
    if cidr.num_addresses < 2 ** (32 - IPV4_NETWORK_MIN_SIZE):
        raise AddressPoolError(f"A network with only {cidr.num_addresses} host(s) is too "
                               f"small, please specify at least a /{IPV4_NETWORK_MIN_SIZE} "
                               "network")
    return cidr


def address_index(net: Network, address: str) -> int:
    """The position of ``address`` in the network's maps; AddressPoolError if it is
    not an address or not in the network."""
    cidr = ipaddress.ip_network(net.network, strict=False)
    try:
        addr = ipaddress.ip_address(address)
    except ValueError:
        raise AddressPoolError(f"{address!r} is not an IP address") from None
    if addr not in cidr:
        raise AddressPoolError(f"{cidr} does not contain {addr}")
    return int(addr) - int(cidr.network_address)


def _combined(net: Network, size: int) -> str:
    """Both maps or-ed, one character per address: ``'1'`` where either reserves it."""
    internal = int((net.reservations or "").ljust(size, _FREE)[:size] or _FREE, 2)
    external = int((net.ext_reservations or "").ljust(size, _FREE)[:size] or _FREE, 2)
    return format(internal | external, f"0{size}b")


def free_addresses(net: Network) -> Iterator[str]:
    """The addresses reserved in neither map, in order (lazily: ``ip=pool`` takes the
    first one no job holds)."""
    cidr = ipaddress.ip_network(net.network, strict=False)
    combined = _combined(net, cidr.num_addresses)
    index = combined.find(_FREE)
    while index >= 0:
        yield str(cidr[index])
        index = combined.find(_FREE, index + 1)


def is_taken(net: Network, index: int) -> bool:
    """Whether address number ``index`` of the network is reserved (either map)."""
    return any(bits is not None and index < len(bits) and bits[index] == _USED
               for bits in (net.reservations, net.ext_reservations))


def mark(net: Network, address: str, external: bool, used: bool) -> None:
    """Set one address of a map, whatever it was (in a config change)."""
    index = address_index(net, address)
    size = ipaddress.ip_network(net.network, strict=False).num_addresses
    attr = "ext_reservations" if external else "reservations"
    bits = getattr(net, attr)
    if bits is None or len(bits) != size:
        bits = _FREE * size
    setattr(net, attr, bits[:index] + (_USED if used else _FREE) + bits[index + 1:])


class AddressPool:
    """The address pool of one network (Ganeti's semantics and messages).

    Making a pool changes nothing (queries make them from the committed
    config); :meth:`reserve` and :meth:`release` change the network's maps.
    """

    def __init__(self, net: Network) -> None:
        self.net = net
        self.network = parse_network4(net.network)
        size = self.network.num_addresses
        for attr in ("reservations", "ext_reservations"):
            bits = getattr(net, attr)
            if bits is not None and (len(bits) != size or bits.strip("01")):
                raise AddressPoolError(f"Network {net.name}: {attr} does not match "
                                       f"{self.network}")

    def _combined(self) -> str:
        return _combined(self.net, self.network.num_addresses)

    def contains(self, address: str | None) -> bool:
        """Whether ``address`` is in the network (None is not)."""
        if address is None:
            return False
        try:
            return ipaddress.ip_address(address) in self.network
        except ValueError:
            return False

    def is_reserved(self, address: str, external: bool = False) -> bool:
        """Whether ``address`` is marked in one map (AddressPoolError if outside)."""
        bits = self.net.ext_reservations if external else self.net.reservations
        index = address_index(self.net, address)
        return bits is not None and bits[index] == _USED

    def reserve(self, address: str, external: bool = False) -> None:
        """Mark ``address`` used; AddressPoolError if it is marked already."""
        if self.is_reserved(address, external):
            if external:
                raise AddressPoolError(f"IP {address} is already externally reserved")
            raise AddressPoolError(f"IP {address} is already used by an instance")
        mark(self.net, address, external, True)

    def release(self, address: str, external: bool = False) -> None:
        """Mark ``address`` free; AddressPoolError if it is not marked."""
        if not self.is_reserved(address, external):
            if external:
                raise AddressPoolError(f"IP {address} is not externally reserved")
            raise AddressPoolError(f"IP {address} is not used by an instance")
        mark(self.net, address, external, False)

    def reserved_count(self) -> int:
        """Addresses reserved in either map."""
        return self._combined().count(_USED)

    def free_count(self) -> int:
        """Addresses reserved in neither map."""
        return self.network.num_addresses - self.reserved_count()

    def is_full(self) -> bool:
        """Whether no address is free."""
        return _FREE not in self._combined()

    def map(self) -> str:
        """One character per address: ``X`` reserved, ``.`` free (Ganeti's map)."""
        return self._combined().translate(_MAP_CHARS)

    def first_free(self) -> str:
        """The first free address (not reserved by this call); AddressPoolError if full."""
        index = self._combined().find(_FREE)
        if index >= 0:
            return str(self.network[index])
        raise AddressPoolError(f"{self.network} is full")

    def external_reservations(self) -> list[str]:
        """The externally reserved addresses, in order."""
        bits = self.net.ext_reservations or ""
        return [str(self.network[i]) for i, bit in enumerate(bits) if bit == _USED]

    def validate(self) -> None:
        """AddressPoolError unless the gateways lie in their networks."""
        if self.net.gateway is not None and not self.contains(self.net.gateway):
            raise AddressPoolError(f"{self.network} does not contain {self.net.gateway}")
        if self.net.network6 and self.net.gateway6:
            network6 = ipaddress.IPv6Network(self.net.network6, strict=False)
            gateway6 = ipaddress.IPv6Address(self.net.gateway6)
            if gateway6 not in network6 and not gateway6.is_link_local:
                raise AddressPoolError(f"{network6} does not contain {gateway6}")


def initialize_network(net: Network) -> AddressPool:
    """Fill a new network's maps: its network and broadcast addresses and its gateway
    reserved externally, as Ganeti's ``InitializeNetwork``."""
    net.reservations = net.ext_reservations = None
    pool = AddressPool(net)
    net.reservations = net.ext_reservations = _FREE * pool.network.num_addresses
    for address in (pool.network[0], pool.network[-1]):
        pool.reserve(str(address), external=True)
    if net.gateway is not None:
        pool.reserve(net.gateway, external=True)
    pool.validate()
    return pool


__all__ = ["IPV4_NETWORK_MAX_SIZE", "IPV4_NETWORK_MIN_SIZE", "AddressPool", "address_index",
           "free_addresses", "initialize_network", "is_taken", "lookup_network", "mark",
           "parse_network4"]
