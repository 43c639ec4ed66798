"""Consistency checks of instances, disks, NICs and networks in ``config.data``.

:func:`check` appends one readable line per problem, each starting with the
path of the object (``instances/<uuid> (<name>): nics[0]: ...``).

Each of the id arguments limits the check to those objects; None checks the
whole container, as at load time.  With ids, every check of one object runs
(its own fields and what it refers to), and the cross-object checks (unique
MACs, DRBD ports and minors, a disk owned by one instance) compare the
given objects with each other only: comparing them with the whole config
would cost O(config) on every change.  Uniqueness against the rest of the
config is what the per-job reservations (``ganeti.master.config.reservations``)
guarantee before a change is made, as Ganeti's temporary reservations do;
the full check (load, cluster verify) catches anything else.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import TypeEnforcementError
from ganeti.core.objects import NIC, ConfigData, Disk, Instance, Network
from ganeti.core.params_fill import fill_nic
from ganeti.core.params_types import (
    BES_PARAMETER_COMPAT,
    NICS_PARAMETER_TYPES,
    force_dict_type,
)

MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
MAC_PREFIX_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){2}$")
NIC_MODES = constants.NIC_VALID_MODES | {constants.NIC_MODE_POOL}
MAX_PORT = 65535

# logical_id of each disk type: the type of each element, as Ganeti 3.0 has them.
_TWO_STRINGS = (str, str)
LOGICAL_ID_SHAPES: dict[str, tuple[type, ...]] = {
    constants.DT_PLAIN: _TWO_STRINGS,                           # [vg, lv]
    constants.DT_DRBD8: (str, str, int, int, int, str),        # [nodeA, nodeB, port,
                                                                #  minorA, minorB, secret]
    constants.DT_FILE: _TWO_STRINGS,                            # [driver, path]
    constants.DT_SHARED_FILE: _TWO_STRINGS,                     # [driver, path]
    constants.DT_GLUSTER: _TWO_STRINGS,                         # [driver, path]
    constants.DT_BLOCK: _TWO_STRINGS,                           # [driver, path]
    constants.DT_RBD: _TWO_STRINGS,                             # [driver, name]
    constants.DT_EXT: _TWO_STRINGS,                             # [provider, name]
}
_FILE_TYPES = (constants.DT_FILE, constants.DT_SHARED_FILE, constants.DT_GLUSTER)


def check(cfg: ConfigData, problems: list[str], instances: Iterable[str] | None = None,
          disks: Iterable[str] | None = None, networks: Iterable[str] | None = None,
          unique: UniqueIndex | None = None, gone_instances: Iterable[str] = (),
          gone_disks: Iterable[str] = ()) -> Staged | None:
    """Append the problems of the given instances, disks and networks (None: all).

    With ``unique`` (the whole config's unique values before the change; the
    incremental check), the values of the checked objects are also compared
    with those of every other object.  The result is then what brings
    ``unique`` up to date once the change is accepted
    (``unique.replace(*staged)``): the checked objects' values replace theirs;
    those of ``gone_instances`` and ``gone_disks``, deleted, are dropped.
    """
    full = instances is None and disks is None and networks is None
    inst_ids = list(cfg.instances) if instances is None else list(instances)
    disk_ids = list(cfg.disks) if disks is None else list(disks)
    net_ids = list(cfg.networks) if networks is None else list(networks)
    clashes = _Clashes(fill_nic(cfg.cluster, {}))
    for uuid in inst_ids:
        inst = cfg.instances.get(uuid)
        if inst is not None:
            clashes.holder = (HOLDER_INSTANCE, uuid)
            _check_instance(cfg, inst, problems, clashes)
    for uuid in disk_ids:
        disk = cfg.disks.get(uuid)
        if disk is not None:
            clashes.holder = (HOLDER_DISK, uuid)
            _check_disk(cfg, disk, f"disks/{uuid}", problems, clashes, top=True)
    for uuid in net_ids:
        net = cfg.networks.get(uuid)
        if net is not None:
            _check_network(net, problems)
    _check_group_networks(cfg, problems, None if networks is None else set(net_ids))
    clashes.holder = HOLDER_CLUSTER
    if full or unique is not None:
        _check_port_pool(cfg, clashes, problems)
    if unique is None:
        clashes.report(problems)
        return None
    touched = ({(HOLDER_INSTANCE, u) for u in (*inst_ids, *gone_instances)}
               | {(HOLDER_DISK, u) for u in (*disk_ids, *gone_disks)} | {HOLDER_CLUSTER})
    clashes.report(problems, unique, touched)
    return touched, clashes.entries


#: Who holds a unique value: an instance, a (top-level) disk, or the cluster
#: (its pool of free ports).
Holder = tuple[str, str]
HOLDER_INSTANCE = "instance"
HOLDER_DISK = "disk"
HOLDER_CLUSTER: Holder = ("cluster", "")
#: The values that must be unique, in the order problems are reported.
UNIQUE_TABLES = ("macs", "ports", "minors", "disk_owner", "ips")
Entry = tuple[str, Any, str]  # (table, value, how the problem names the user)
#: What :meth:`UniqueIndex.replace` takes: the holders checked, their values.
Staged = tuple[set[Holder], dict[Holder, list[Entry]]]


class UniqueIndex:
    """Every value of the config that must be unique, with who uses it.

    ``table -> value -> {holder: [labels]}`` for the tables of
    :data:`UNIQUE_TABLES`.  Built once from a whole config (:meth:`of`), then
    kept up to date change by change by the incremental check, so that a
    change is compared with every untouched object at the cost of the change.
    :meth:`mark` and :meth:`rollback` undo the updates of changes whose commit
    failed.
    """

    def __init__(self) -> None:
        self._tables: dict[str, dict[Any, dict[Holder, list[str]]]] = {
            t: {} for t in UNIQUE_TABLES}
        self._by_holder: dict[Holder, list[Entry]] = {}
        self._undo: list[tuple[set[Holder], dict[Holder, list[Entry]]]] = []

    @classmethod
    def of(cls, cfg: ConfigData) -> UniqueIndex:
        """The index of a whole config (as costly as its full check)."""
        clashes = _Clashes(fill_nic(cfg.cluster, {}))
        ignored: list[str] = []
        for uuid, inst in cfg.instances.items():
            clashes.holder = (HOLDER_INSTANCE, uuid)
            _check_instance(cfg, inst, ignored, clashes)
        for uuid, disk in cfg.disks.items():
            clashes.holder = (HOLDER_DISK, uuid)
            _check_disk(cfg, disk, f"disks/{uuid}", ignored, clashes, top=True)
        clashes.holder = HOLDER_CLUSTER
        _check_port_pool(cfg, clashes, ignored)
        index = cls()
        index._put(clashes.entries)
        return index

    def users(self, table: str, value: Any) -> dict[Holder, list[str]]:
        """Who uses ``value`` of ``table``."""
        return self._tables[table].get(value, {})

    def replace(self, holders: set[Holder], entries: dict[Holder, list[Entry]]) -> None:
        """Drop every value of ``holders``, then add ``entries`` (undoable)."""
        old = {h: self._by_holder[h] for h in holders if h in self._by_holder}
        self._drop(holders)
        self._put(entries)
        self._undo.append((set(holders) | set(entries), old))

    def mark(self) -> int:
        """A point to :meth:`rollback` to."""
        return len(self._undo)

    def rollback(self, mark: int) -> None:
        """Undo the replacements made since ``mark``, last first."""
        while len(self._undo) > mark:
            holders, old = self._undo.pop()
            self._drop(holders)
            self._put(old)

    def forget(self) -> None:
        """The replacements so far are committed: no undo is kept."""
        self._undo.clear()

    def _drop(self, holders: Iterable[Holder]) -> None:
        for holder in holders:
            for table, value, _ in self._by_holder.pop(holder, ()):
                users = self._tables[table].get(value)
                if users is not None:
                    users.pop(holder, None)
                    if not users:
                        del self._tables[table][value]

    def _put(self, entries: dict[Holder, list[Entry]]) -> None:
        for holder, items in entries.items():
            self._by_holder.setdefault(holder, []).extend(items)
            for table, value, label in items:
                labels = self._tables[table].setdefault(value, {}).setdefault(holder, [])
                if label not in labels:
                    labels.append(label)


class _Clashes:
    """Values that must be unique, gathered while checking, reported at the end."""

    def __init__(self, nic_defaults: dict[str, Any]) -> None:
        # the cluster's filled NIC parameters, computed once per check
        self.nic_defaults = nic_defaults
        self.tables: dict[str, dict[Any, list[str]]] = {t: {} for t in UNIQUE_TABLES}
        #: who the values being added belong to
        self.holder: Holder = HOLDER_CLUSTER
        #: the values of each holder checked
        self.entries: dict[Holder, list[Entry]] = {}
        # parameter dicts already found valid (most instances share a few)
        self._valid_params: set[tuple[str, tuple[tuple[str, Any], ...]]] = set()

    def add(self, table: str, key: Any, owner: str) -> None:
        owners = self.tables[table].setdefault(key, [])
        if owner not in owners:
            owners.append(owner)
        self.entries.setdefault(self.holder, []).append((table, key, owner))

    def report(self, problems: list[str], unique: UniqueIndex | None = None,
               touched: frozenset[Holder] | set[Holder] = frozenset()) -> None:
        """Each value used more than once; with ``unique``, users outside ``touched``
        (the objects not checked this time) count too."""
        def owners(table: str, key: Any, own: list[str]) -> list[str]:
            if unique is None:
                return own
            others = [label for holder, labels in unique.users(table, key).items()
                      if holder not in touched for label in labels]
            return others + [o for o in own if o not in others]

        for mac, own in self.tables["macs"].items():
            found = owners("macs", mac, own)
            if len(found) > 1:
                problems.append(f"mac {mac}: used by more than one NIC: {', '.join(found)}")
        for port, own in sorted(self.tables["ports"].items()):
            found = owners("ports", port, own)
            if len(found) > 1:
                problems.append(f"tcp/udp port {port}: has duplicates: {', '.join(found)}")
        for (node, minor), own in sorted(self.tables["minors"].items()):
            found = owners("minors", (node, minor), own)
            if len(found) > 1:
                problems.append(f"drbd minor {minor} of node {node}: used by more than one "
                                f"disk: {', '.join(found)}")
        for disk, own in sorted(self.tables["disk_owner"].items()):
            found = owners("disk_owner", disk, own)
            if len(found) > 1:
                problems.append(f"disks/{disk}: used by more than one instance: "
                                f"{', '.join(found)}")
        for ip, own in sorted(self.tables["ips"].items()):
            found = owners("ips", ip, own)
            if len(found) > 1:
                problems.append(f"IP address {ip}: used by more than one NIC: "
                                f"{', '.join(found)}")

    def params_problem(self, kind: str, params: dict[str, Any],
                       types: dict[str, str]) -> str | None:
        """Why ``params`` do not fit ``types`` (Ganeti's type enforcement), or None."""
        try:
            key: tuple[str, tuple[tuple[str, Any], ...]] | None = (
                kind, tuple(sorted(params.items())))
            if key in self._valid_params:
                return None
        except TypeError:  # an unhashable value: checked each time
            key = None
        try:
            force_dict_type(dict(params), types)
        except TypeEnforcementError as err:
            return str(err)
        if key is not None:
            self._valid_params.add(key)
        return None


# -- instances ----------------------------------------------------------------------------

def _check_instance(cfg: ConfigData, inst: Instance, problems: list[str],
                    clashes: _Clashes) -> None:
    where = f"instances/{inst.uuid} ({inst.name})"
    if inst.primary_node not in cfg.nodes:
        problems.append(f"{where}: primary_node {inst.primary_node!r} is not a known node")
    for snode in inst.secondary_nodes or ():
        if snode not in cfg.nodes:
            problems.append(f"{where}: secondary node {snode!r} is not a known node")
    if inst.admin_state not in constants.ADMINST_ALL:
        problems.append(f"{where}: invalid admin_state {inst.admin_state!r}")
    if (inst.admin_state_source is not None
            and inst.admin_state_source not in constants.INSTANCE_ADMIN_SOURCES):
        problems.append(f"{where}: invalid admin_state_source {inst.admin_state_source!r}")
    if inst.hypervisor not in constants.HYPER_TYPES:
        problems.append(f"{where}: unknown hypervisor {inst.hypervisor!r}")
    if inst.disk_template is not None and inst.disk_template not in constants.DISK_TEMPLATES:
        problems.append(f"{where}: unknown disk_template {inst.disk_template!r}")
    if inst.network_port is not None:
        if not 0 < inst.network_port <= MAX_PORT:
            problems.append(f"{where}: network_port {inst.network_port} is not a port number")
        else:
            _check_port_recorded(cfg, inst.network_port, f"{where}: network_port", problems)
            clashes.add("ports", inst.network_port, f"{inst.name}/network port")
    if inst.beparams:
        problem = clashes.params_problem("be", inst.beparams, BES_PARAMETER_COMPAT)
        if problem is not None:
            problems.append(f"{where}: invalid beparams: {problem}")
    _check_instance_disks(cfg, inst, where, problems, clashes)
    for idx, nic in enumerate(inst.nics):
        _check_nic(cfg, inst, idx, nic, f"{where}: nics[{idx}]", problems, clashes)


def _check_instance_disks(cfg: ConfigData, inst: Instance, where: str,
                          problems: list[str], clashes: _Clashes) -> None:
    seen: set[str] = set()
    for idx, disk_uuid in enumerate(inst.disks):
        if disk_uuid in seen:
            problems.append(f"{where}: disk {disk_uuid!r} is listed twice")
            continue
        seen.add(disk_uuid)
        clashes.add("disk_owner", disk_uuid, inst.name)
        disk = cfg.disks.get(disk_uuid)
        if disk is None:
            problems.append(f"{where}: disk {disk_uuid!r} is not in the disks container")
            continue
        expected = f"disk/{idx}"
        if disk.iv_name != expected:
            problems.append(f"{where}: disks[{idx}] ({disk_uuid}) should be named "
                            f"{expected!r}, but is {disk.iv_name!r}")
        if disk.dev_type == constants.DT_DRBD8 and _drbd_shape_ok(disk):
            assert disk.logical_id is not None
            clashes.add("ports", disk.logical_id[2], f"{inst.name}/drbd disk {idx}")


def _check_nic(cfg: ConfigData, inst: Instance, idx: int, nic: NIC, where: str,
               problems: list[str], clashes: _Clashes) -> None:
    if nic.mac is None:
        problems.append(f"{where}: has no mac")
    elif not MAC_RE.match(nic.mac):
        problems.append(f"{where}: mac {nic.mac!r} is not a valid lower-case MAC address")
    else:
        clashes.add("macs", nic.mac, f"{inst.name}/nic {idx}")
    net = None
    if nic.network is not None:
        net = cfg.networks.get(nic.network)
        if net is None:
            problems.append(f"{where}: network {nic.network!r} is not a known network")
    if nic.ip is not None:
        try:
            address = ipaddress.ip_address(nic.ip)
        except ValueError:
            problems.append(f"{where}: ip {nic.ip!r} is not an IP address")
        else:
            if net is not None and _cidr(net.network) is not None:
                cidr = _cidr(net.network)
                assert cidr is not None
                if address not in cidr:
                    problems.append(f"{where}: ip {nic.ip} is not in network {net.name} "
                                    f"({net.network})")
    filled = {**clashes.nic_defaults, **nic.nicparams}  # read only: no deep copy
    if nic.nicparams:
        problem = clashes.params_problem("nic", nic.nicparams, NICS_PARAMETER_TYPES)
        if problem is not None:
            problems.append(f"{where}: invalid nicparams: {problem}")
            return
    mode = filled.get(constants.NIC_MODE)
    if mode not in NIC_MODES:
        problems.append(f"{where}: invalid nicparams: Invalid NIC mode {mode!r}")
    elif mode == constants.NIC_MODE_BRIDGED and not filled.get(constants.NIC_LINK):
        problems.append(f"{where}: invalid nicparams: Missing bridged NIC link")
    if nic.ip is not None:
        # Ganeti's key: the same IP on the same link and network is a clash.
        link = filled.get(constants.NIC_LINK)
        clashes.add("ips", f"{mode}:{link}/{nic.ip}/{nic.network}",
                     f"{inst.name}/nic {idx}")


# -- disks --------------------------------------------------------------------------------

def _drbd_shape_ok(disk: Disk) -> bool:
    return _shape_problem(disk) is None


def _shape_problem(disk: Disk) -> str | None:
    """Why ``disk.logical_id`` does not fit its dev_type, or None."""
    shape = LOGICAL_ID_SHAPES.get(disk.dev_type)
    lid = disk.logical_id
    if disk.dev_type == constants.DT_DISKLESS:
        return None
    if shape is None:
        return None  # unknown dev_type: reported on its own
    if lid is None:
        return "has no logical_id"
    if len(lid) != len(shape) or any(
            not isinstance(v, t) or (t is int and isinstance(v, bool))
            for v, t in zip(lid, shape, strict=True)):
        names = "[" + ", ".join(t.__name__ for t in shape) + "]"
        return f"logical_id {lid!r} does not have the {disk.dev_type} shape {names}"
    return None


def _check_disk(cfg: ConfigData, disk: Disk, where: str, problems: list[str],
                clashes: _Clashes, top: bool) -> None:
    if disk.dev_type not in constants.DISK_TEMPLATES:
        problems.append(f"{where}: unknown dev_type {disk.dev_type!r}")
    shape = _shape_problem(disk)
    if shape is not None:
        problems.append(f"{where}: {shape}")
    elif disk.logical_id is not None:
        _check_logical_id(cfg, disk, where, problems, clashes)
    if disk.mode not in constants.DISK_ACCESS_SET:
        problems.append(f"{where}: Disk access mode {disk.mode!r} is invalid")
    if disk.size < 0:
        problems.append(f"{where}: negative size {disk.size}")
    if disk.spindles is not None and disk.spindles < 0:
        problems.append(f"{where}: negative spindles {disk.spindles}")
    for node in disk.nodes:
        if node not in cfg.nodes:
            problems.append(f"{where}: node {node!r} is not a known node")
    if top and not disk.uuid:
        problems.append(f"{where}: has no uuid")
    # Ganeti's daemons (luxid, wconfd) refuse a disk, child or not, without these.
    lacking = [k for k in ("serial_no", "ctime", "mtime") if getattr(disk, k) is None]
    if lacking:
        problems.append(f"{where}: has no {', '.join(lacking)} (Ganeti's daemons need them)")
    if disk.dev_type == constants.DT_DRBD8:
        if len(disk.children) > 2:
            problems.append(f"{where}: a drbd disk has at most 2 children (data, meta), "
                            f"not {len(disk.children)}")
        for i, child in enumerate(disk.children):
            if child.dev_type != constants.DT_PLAIN:
                problems.append(f"{where}/children[{i}]: a drbd child must be plain, "
                                f"not {child.dev_type!r}")
    elif disk.children and disk.dev_type != constants.DT_DRBD8:
        problems.append(f"{where}: only drbd disks have children ({disk.dev_type} has "
                        f"{len(disk.children)})")
    for i, child in enumerate(disk.children):
        _check_disk(cfg, child, f"{where}/children[{i}]", problems, clashes, top=False)


def _check_logical_id(cfg: ConfigData, disk: Disk, where: str, problems: list[str],
                      clashes: _Clashes) -> None:
    lid = disk.logical_id
    assert lid is not None
    if disk.dev_type == constants.DT_PLAIN:
        if not lid[0] or not lid[1]:
            problems.append(f"{where}: logical_id {lid!r} needs a volume group and a name")
    elif disk.dev_type == constants.DT_DRBD8:
        node_a, node_b, port, minor_a, minor_b, _secret = lid
        for node in (node_a, node_b):
            if node not in cfg.nodes:
                problems.append(f"{where}: drbd node {node!r} is not a known node")
        if node_a == node_b:
            problems.append(f"{where}: drbd primary and secondary are the same node")
        if not 0 < port <= MAX_PORT:
            problems.append(f"{where}: drbd port {port} is not a port number")
        else:
            _check_port_recorded(cfg, port, f"{where}: drbd port", problems)
        for node, minor in ((node_a, minor_a), (node_b, minor_b)):
            if minor < 0:
                problems.append(f"{where}: negative drbd minor {minor}")
            else:
                clashes.add("minors", (node, minor), disk.uuid or where)
        if disk.nodes and set(disk.nodes) != {node_a, node_b}:
            problems.append(f"{where}: nodes {disk.nodes} differ from the drbd nodes "
                            f"{[node_a, node_b]}")
    elif disk.dev_type in _FILE_TYPES:
        if lid[0] not in constants.FILE_DRIVERS:
            problems.append(f"{where}: unknown file driver {lid[0]!r}")
        if not lid[1]:
            problems.append(f"{where}: logical_id {lid!r} has no path")
    elif disk.dev_type == constants.DT_BLOCK:
        if lid[0] != constants.BLOCKDEV_DRIVER_MANUAL:
            problems.append(f"{where}: unknown blockdev driver {lid[0]!r}")
        if not lid[1].startswith("/"):
            problems.append(f"{where}: blockdev path {lid[1]!r} is not absolute")


def _check_port_recorded(cfg: ConfigData, port: int, where: str,
                         problems: list[str]) -> None:
    if port > cfg.cluster.highest_used_port:
        problems.append(f"{where} {port} is above the cluster's highest_used_port "
                        f"{cfg.cluster.highest_used_port}")


def _check_port_pool(cfg: ConfigData, clashes: _Clashes, problems: list[str]) -> None:
    for port in cfg.cluster.tcpudp_port_pool:
        if not 0 < port <= MAX_PORT:
            problems.append(f"cluster: tcpudp_port_pool entry {port} is not a port number")
            continue
        clashes.add("ports", port, "cluster/port marked as free")
        if port > cfg.cluster.highest_used_port:
            problems.append(f"cluster: tcpudp_port_pool entry {port} is above "
                            f"highest_used_port {cfg.cluster.highest_used_port}")


# -- networks -----------------------------------------------------------------------------

_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def _cidr(text: str | None, version: int = 4) -> _Net | None:
    if not text:
        return None
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError:
        return None
    return net if net.version == version else None


def _check_network(net: Network, problems: list[str]) -> None:
    where = f"networks/{net.uuid} ({net.name})"
    cidr = _cidr(net.network)
    if cidr is None:
        problems.append(f"{where}: network {net.network!r} is not an IPv4 network "
                        "(address/prefix, host bits zero)")
    if net.gateway is not None:
        try:
            gateway = ipaddress.ip_address(net.gateway)
        except ValueError:
            problems.append(f"{where}: gateway {net.gateway!r} is not an IP address")
        else:
            if cidr is not None and gateway not in cidr:
                problems.append(f"{where}: gateway {net.gateway} is not in {net.network}")
    cidr6 = None
    if net.network6 is not None:
        cidr6 = _cidr(net.network6, 6)
        if cidr6 is None:
            problems.append(f"{where}: network6 {net.network6!r} is not an IPv6 network")
    if net.gateway6 is not None:
        try:
            gateway6 = ipaddress.ip_address(net.gateway6)
        except ValueError:
            problems.append(f"{where}: gateway6 {net.gateway6!r} is not an IP address")
        else:
            if cidr6 is not None and gateway6 not in cidr6 and not gateway6.is_link_local:
                problems.append(f"{where}: gateway6 {net.gateway6} is not in {net.network6}")
    if net.mac_prefix is not None and not MAC_PREFIX_RE.match(net.mac_prefix):
        problems.append(f"{where}: mac_prefix {net.mac_prefix!r} is not of the form aa:00:00")
    for attr in ("reservations", "ext_reservations"):
        bits = getattr(net, attr)
        if bits is None:
            continue
        if cidr is not None and len(bits) != cidr.num_addresses:
            problems.append(f"{where}: {attr} has {len(bits)} entries, the network "
                            f"has {cidr.num_addresses} addresses")
        if bits.strip("01"):
            problems.append(f"{where}: {attr} may hold only '0' and '1'")


def _check_group_networks(cfg: ConfigData, problems: list[str],
                          only: set[str] | None) -> None:
    """Groups connect only to networks that exist (all, or those in ``only``)."""
    for guuid, group in cfg.nodegroups.items():
        for net_uuid, netparams in group.networks.items():
            if only is not None and net_uuid not in only:
                continue
            where = f"nodegroups/{guuid} ({group.name}): networks/{net_uuid}"
            if net_uuid not in cfg.networks:
                problems.append(f"{where}: is not a known network")
            if not isinstance(netparams, dict):
                problems.append(f"{where}: parameters must be an object")
                continue
            mode = netparams.get(constants.NIC_MODE)
            if mode is not None and mode not in NIC_MODES:
                problems.append(f"{where}: invalid mode {mode!r}")
