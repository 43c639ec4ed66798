"""Queries over networks: ``Query("network")`` and QueryNetworks.

The fields are declared in :mod:`ganeti.core.queryfields.networks`; here each
gets its getter.  Everything comes from the committed config.  Which groups
connect a network and which instances use it are indexed once per query, so
a query over many networks at 20,000 instances walks the instances once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.errors import ECODE_INVAL, AddressPoolError, OpPrereqError
from ganeti.core.network import AddressPool
from ganeti.core.objects import ConfigData, Network
from ganeti.core.query import NODATA, UNAVAIL, Field
from ganeti.core.queryfields.networks import NETWORK_FIELDS as DECLS
from ganeti.master.query.nodequeries import (
    requested_names,
    resolve_requested,
)
from ganeti.master.query.queryregistry import QuerySource


@dataclass
class _Index:
    """Per query: groups and instances by network UUID (built on first use)."""

    cfg: ConfigData
    _groups: dict[str, list[list[str]]] | None = None
    _instances: dict[str, list[str]] | None = None

    def groups(self, uuid: str) -> list[list[str]]:
        if self._groups is None:
            self._groups = {}
            for group in sorted(self.cfg.nodegroups.values(),
                                key=lambda g: query.nice_sort_key(g.name)):
                for net_uuid, params in group.networks.items():
                    self._groups.setdefault(net_uuid, []).append([
                        group.name, params.get(c.NIC_MODE), params.get(c.NIC_LINK),
                        params.get(c.NIC_VLAN, "")])
        return self._groups.get(uuid, [])

    def instances(self, uuid: str) -> list[str]:
        if self._instances is None:
            self._instances = {}
            for inst in self.cfg.instances.values():
                for net_uuid in {nic.network for nic in inst.nics if nic.network}:
                    self._instances.setdefault(net_uuid, []).append(inst.name)
            for names in self._instances.values():
                names.sort(key=query.nice_sort_key)
        return self._instances.get(uuid, [])


@dataclass
class NetworkItem:
    """A network as queries see it, with its pool (None: the maps are unusable)."""

    index: _Index
    net: Network
    _pool: AddressPool | None = field(default=None, init=False)
    _pool_made: bool = field(default=False, init=False)

    @property
    def pool(self) -> AddressPool | None:
        if not self._pool_made:
            self._pool_made = True
            try:
                self._pool = AddressPool(self.net)
            except (AddressPoolError, ValueError):
                self._pool = None
        return self._pool


def _maybe(value: Any) -> Any:
    return UNAVAIL if value is None else value


def _stat(fn: Callable[[AddressPool], Any]) -> Callable[[NetworkItem], Any]:
    def getter(item: NetworkItem) -> Any:
        pool = item.pool
        return NODATA if pool is None else fn(pool)
    return getter


NETWORK_GETTERS: dict[str, Callable[[NetworkItem], Any]] = {
    "name": lambda i: i.net.name,
    "network": lambda i: i.net.network,
    "gateway": lambda i: _maybe(i.net.gateway),
    "network6": lambda i: _maybe(i.net.network6),
    "gateway6": lambda i: _maybe(i.net.gateway6),
    "mac_prefix": lambda i: _maybe(i.net.mac_prefix),
    "free_count": _stat(AddressPool.free_count),
    "reserved_count": _stat(AddressPool.reserved_count),
    "map": _stat(AddressPool.map),
    "external_reservations": _stat(lambda p: ", ".join(p.external_reservations())),
    "group_cnt": lambda i: len(i.index.groups(i.net.uuid)),
    "group_list": lambda i: i.index.groups(i.net.uuid),
    "inst_cnt": lambda i: len(i.index.instances(i.net.uuid)),
    "inst_list": lambda i: i.index.instances(i.net.uuid),
    "ctime": lambda i: i.net.ctime,
    "mtime": lambda i: i.net.mtime,
    "uuid": lambda i: i.net.uuid,
    "serial_no": lambda i: i.net.serial_no,
    "tags": lambda i: sorted(i.net.tags),
}

NETWORK_TABLE: dict[str, Field[NetworkItem]] = query.bind(DECLS, NETWORK_GETTERS)


def sorted_networks(cfg: ConfigData) -> list[Network]:
    """Networks in Ganeti's "nice" name order."""
    return sorted(cfg.networks.values(), key=lambda n: query.nice_sort_key(n.name))


def select_networks(cfg: ConfigData, names: Iterable[str] | None) -> list[Network]:
    """Networks named (by name or UUID), in name order; unknown names are skipped
    (all networks if ``names`` is empty), as the other old-style queries."""
    networks = sorted_networks(cfg)
    if not names:
        return networks
    wanted = set(names)
    return [n for n in networks if n.name in wanted or n.uuid in wanted]


class NetworkQueries:
    """Answers network queries from the committed config."""

    def __init__(self, config: Callable[[], ConfigData]) -> None:
        self._config = config

    def source(self) -> QuerySource:
        """The query resource "network" (:mod:`ganeti.master.query.queryregistry`)."""
        return QuerySource(c.QR_NETWORK, NETWORK_TABLE, self.query,
                           ("QueryNetworks", self.query_networks))

    def query(self, fields: Any, qfilter: Any) -> dict[str, Any]:
        """``Query("network", fields, filter)``."""
        cfg = self._config()
        nq = query.Query(NETWORK_TABLE, fields, qfilter)
        networks = sorted_networks(cfg)
        wanted = requested_names(qfilter)
        if wanted is not None:
            networks = resolve_requested(networks, wanted, lambda n: n.name, "Network",
                                         False)
        index = _Index(cfg)
        return nq.response(NetworkItem(index, n) for n in networks)

    def query_networks(self, names: Any, fields: list[str], use_locking: Any) -> list[Any]:
        """QueryNetworks: old-style rows for the named networks (all if none named)."""
        if names is not None and (not isinstance(names, list)
                                  or not all(isinstance(n, str) for n in names)):
            raise OpPrereqError("Names must be a list of strings or null", ECODE_INVAL)
        cfg = self._config()
        index = _Index(cfg)
        return query.Query(NETWORK_TABLE, fields).old_style(
            NetworkItem(index, n) for n in select_networks(cfg, names))


__all__ = ["NETWORK_GETTERS", "NETWORK_TABLE", "NetworkItem", "NetworkQueries",
           "select_networks", "sorted_networks"]
