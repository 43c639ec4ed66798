"""Logical units: networks (add, remove, modify, connect, disconnect).

Each unit follows docs/design/lu-contract.md; :mod:`ganeti.master.lu.registry`
dispatches to the units listed in :data:`LUS`.  Checks, messages, error codes,
locks and hooks are Ganeti 3.0's, except that bad input Ganeti only notices
while executing (a range too big for a pool, a gateway or a reserved address
outside the network) is refused before anything is done, with
``OpPrereqError(..., "wrong_input")``.
"""

from __future__ import annotations

import copy
import uuid as uuidmod
from collections.abc import Callable
from typing import Any

from ganeti.core import constants
from ganeti.core import hooks as hookdefs
from ganeti.core.errors import (
    ECODE_EXISTS,
    ECODE_INVAL,
    ECODE_STATE,
    AddressPoolError,
    ConfigurationError,
    OpExecError,
    OpPrereqError,
)
from ganeti.core.network import AddressPool, initialize_network, lookup_network
from ganeti.core.objects import NIC, ConfigData, Instance, Network, NodeGroup
from ganeti.core.opcodes.table_network import VALUE_NONE
from ganeti.core.opcodes.views import (
    OpNetworkAdd,
    OpNetworkConnect,
    OpNetworkDisconnect,
    OpNetworkRemove,
    OpNetworkSetParams,
)
from ganeti.core.params_merge import normalize_mac_prefix
from ganeti.core.query import nice_sort_key
from ganeti.master.config import nodes as nodesmod
from ganeti.master.locking.manager import (
    LEVEL_INSTANCE,
    LEVEL_NETWORK,
    LEVEL_NODE,
    LEVEL_NODEGROUP,
)
from ganeti.master.lu.base import ALL_SET, LogicalUnit
from ganeti.master.lu.tags import check_tag


def network_hooks_env(name: str | None, subnet: str | None, gateway: str | None,
                      network6: str | None, gateway6: str | None, mac_prefix: str | None,
                      tags: list[str] | None) -> dict[str, str]:
    """Ganeti's network hook variables: only those with a value."""
    env = {}
    for key, value in (("NETWORK_NAME", name), ("NETWORK_SUBNET", subnet),
                       ("NETWORK_GATEWAY", gateway), ("NETWORK_SUBNET6", network6),
                       ("NETWORK_GATEWAY6", gateway6), ("NETWORK_MAC_PREFIX", mac_prefix)):
        if value:
            env[key] = value
    if tags:
        env["NETWORK_TAGS"] = " ".join(tags)
    return env


def _invalid(err: AddressPoolError, prefix: str = "") -> OpPrereqError:
    return OpPrereqError(f"{prefix}{err.args[0]}", ECODE_INVAL)


def _check_gateway6(network6: str | None, gateway6: str | None) -> None:
    probe = Network(uuid="x", name="x", network="0.0.0.0/16", network6=network6,
                    gateway6=gateway6)
    try:
        AddressPool(probe).validate()
    except AddressPoolError as err:
        raise _invalid(err, "Invalid IPv6 gateway: ") from None


def _warning(ctx_feedback: Callable[[str, Any], None], message: str) -> None:
    ctx_feedback("message", f" - WARNING: {message}")


def _info(ctx_feedback: Callable[[str, Any], None], message: str) -> None:
    ctx_feedback("message", f" - INFO: {message}")


class _NetworkLU(LogicalUnit):
    """Hooks of type NETWORK on the master (both phases), as Ganeti's units."""

    REQ_BGL = False
    HTYPE = hookdefs.HTYPE_NETWORK

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        master = self.ctx.config.config.cluster.master_node
        return [master], [master]

    def warn(self, message: str) -> None:
        """Ganeti's ``LogWarning``."""
        _warning(self.ctx.feedback, message)


# --- add -------------------------------------------------------------------------------

def new_network(op: OpNetworkAdd, cfg: ConfigData, uuid: str, now: float,
                mac_prefix: str | None) -> tuple[Network, list[str], list[str]]:
    """The network OP_NETWORK_ADD makes, with its pool filled as Ganeti's.

    Returns ``(network, info messages, warnings)``; OpPrereqError
    (``wrong_input``) for a range no pool can have, a gateway or a reserved
    address outside the network.
    """
    net = Network(uuid=uuid, name=op.network_name, network=op.network, gateway=op.gateway,
                  network6=op.network6, gateway6=op.gateway6, mac_prefix=mac_prefix,
                  ctime=now, mtime=now, tags=sorted(set(op.tags)))
    try:
        pool = initialize_network(net)
    except AddressPoolError as err:
        raise _invalid(err, f"Cannot create IP address pool for network "
                            f"'{op.network_name}': ") from None
    _check_gateway6(op.network6, op.gateway6)
    infos: list[str] = []
    warnings: list[str] = []
    if op.conflicts_check:
        # Node and master addresses are useless to instances (routed mode would break).
        for node in sorted(cfg.nodes.values(), key=lambda n: nice_sort_key(n.name)):
            for ip in dict.fromkeys((node.primary_ip, node.secondary_ip)):
                if not pool.contains(ip):
                    continue
                try:
                    pool.reserve(str(ip), external=True)
                    infos.append(f"Reserved IP address of node '{node.name}' ({ip})")
                except AddressPoolError as err:
                    warnings.append(f"Cannot reserve IP address '{ip}' of node "
                                    f"'{node.name}': {err.args[0]}")
        master_ip = cfg.cluster.master_ip
        if pool.contains(master_ip):
            try:
                pool.reserve(master_ip, external=True)
                infos.append(f"Reserved cluster master IP address ({master_ip})")
            except AddressPoolError as err:
                warnings.append(f"Cannot reserve cluster master IP address ({master_ip}): "
                                f"{err.args[0]}")
    for ip in op.add_reserved_ips or []:
        try:
            pool.reserve(ip, external=True)
        except AddressPoolError as err:
            raise OpPrereqError(f"Cannot reserve IP address '{ip}': {err.args[0]}",
                                ECODE_INVAL) from None
    return net, infos, warnings


class LUNetworkAdd(_NetworkLU):
    """OP_NETWORK_ADD: a new network and its address pool."""

    OP_ID = "OP_NETWORK_ADD"
    op: OpNetworkAdd
    HPATH = "network-add"

    def check_arguments(self) -> None:
        self.mac_prefix = (normalize_mac_prefix(self.op.mac_prefix)
                           if self.op.mac_prefix else None)
        for tag in self.op.tags:
            check_tag(tag)

    def expand_names(self) -> None:
        super().expand_names()
        self.network_uuid = str(uuidmod.uuid4())
        if self.op.conflicts_check:  # the node addresses are read
            self.needed_locks[LEVEL_NODE] = ALL_SET
            self.share_locks[LEVEL_NODE] = True

    def _check_name(self, cfg: ConfigData) -> None:
        existing = cfg.network_by_name(self.op.network_name)
        if existing is not None:
            raise OpPrereqError(f"Desired network name '{self.op.network_name}' already "
                                f"exists as a network (UUID: {existing.uuid})", ECODE_EXISTS)

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        self._check_name(cfg)
        new_network(self.op, cfg, self.network_uuid, 0.0, self.mac_prefix)

    def build_hooks_env(self) -> dict[str, Any]:
        op = self.op
        return network_hooks_env(op.network_name, op.network, op.gateway, op.network6,
                                 op.gateway6, self.mac_prefix, list(op.tags))

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> tuple[list[str], list[str]]:
            self._check_name(cfg)
            net, infos, warnings = new_network(self.op, cfg, self.network_uuid, now,
                                               self.mac_prefix)
            cfg.networks[net.uuid] = net
            return infos, warnings

        infos, warnings = await self.update_config(change)
        for message in infos:
            _info(self.ctx.feedback, message)
        for message in warnings:
            self.warn(message)
        await self.ctx.locks.add(LEVEL_NETWORK, [self.network_uuid])
        return None


# --- remove ----------------------------------------------------------------------------

def _connected_groups(cfg: ConfigData, uuid: str) -> list[str]:
    return sorted((g.name for g in cfg.nodegroups.values() if uuid in g.networks),
                  key=nice_sort_key)


def _users(cfg: ConfigData, uuid: str) -> list[str]:
    return sorted((i.name for i in cfg.instances.values()
                   if any(nic.network == uuid for nic in i.nics)), key=nice_sort_key)


class LUNetworkRemove(_NetworkLU):
    """OP_NETWORK_REMOVE: only a network no group is connected to."""

    OP_ID = "OP_NETWORK_REMOVE"
    op: OpNetworkRemove
    HPATH = "network-remove"

    def expand_names(self) -> None:
        super().expand_names()
        self.network_uuid = lookup_network(self.ctx.config.config, self.op.network_name).uuid
        self.needed_locks[LEVEL_NETWORK] = [self.network_uuid]
        self.needed_locks[LEVEL_NODEGROUP] = ALL_SET
        self.share_locks[LEVEL_NODEGROUP] = True

    def _check_unused(self, cfg: ConfigData, warn: bool) -> None:
        groups = _connected_groups(cfg, self.network_uuid)
        if groups:
            if warn:
                self.warn(f"Network '{self.op.network_name}' is connected to the following "
                          f"node groups: {', '.join(groups)}")
            raise OpPrereqError("Network still connected", ECODE_STATE)
        # Ganeti relies on disconnect's check; a NIC left on the network (moved to
        # another group) would point at nothing, so it is refused here too.
        users = _users(cfg, self.network_uuid)
        if users:
            raise OpPrereqError(f"Network '{self.op.network_name}' is still used by "
                                f"instances: {', '.join(users)}", ECODE_STATE)

    def check_prereq(self) -> None:
        self._check_unused(self.ctx.config.config, True)

    def build_hooks_env(self) -> dict[str, Any]:
        return {"NETWORK_NAME": self.op.network_name}

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        uuid = self.network_uuid

        def change(cfg: ConfigData) -> None:
            if uuid not in cfg.networks:
                raise OpExecError(f"Network '{self.op.network_name}' with UUID {uuid} "
                                  "disappeared")
            self._check_unused(cfg, False)
            del cfg.networks[uuid]

        await self.update_config(change)
        self.ctx.locks.remove(self.ctx.owner, LEVEL_NETWORK, [uuid])
        return None


# --- modify ----------------------------------------------------------------------------

def _cleared(value: str | None) -> str | None:
    return None if value == VALUE_NONE else value


class LUNetworkSetParams(_NetworkLU):
    """OP_NETWORK_SET_PARAMS: gateways, IPv6 range, MAC prefix, external reservations."""

    OP_ID = "OP_NETWORK_SET_PARAMS"
    op: OpNetworkSetParams
    HPATH = "network-modify"

    def check_arguments(self) -> None:
        if self.op.gateway and (self.op.add_reserved_ips or self.op.remove_reserved_ips):
            raise OpPrereqError("Cannot modify gateway and reserved ips at once", ECODE_INVAL)

    def expand_names(self) -> None:
        super().expand_names()
        self.network_uuid = lookup_network(self.ctx.config.config, self.op.network_name).uuid
        self.needed_locks[LEVEL_NETWORK] = [self.network_uuid]

    def check_prereq(self) -> None:
        op = self.op
        net = self.ctx.config.config.networks[self.network_uuid]
        self.network = net
        self.gateway = net.gateway
        self.mac_prefix = net.mac_prefix
        self.network6 = net.network6
        self.gateway6 = net.gateway6
        try:
            pool = AddressPool(net)
        except AddressPoolError as err:
            raise OpPrereqError(f"Network '{net.name}' has an unusable pool: "
                                f"{err.args[0]}", ECODE_STATE) from None
        if op.gateway:
            self.gateway = _cleared(op.gateway)
            if self.gateway is not None:
                try:
                    taken = pool.is_reserved(self.gateway, external=True) or (
                        pool.is_reserved(self.gateway))
                except AddressPoolError as err:
                    raise _invalid(err) from None
                if taken and self.gateway != net.gateway:
                    raise OpPrereqError(f"Gateway IP address '{self.gateway}' is already "
                                        "reserved", ECODE_STATE)
        if op.mac_prefix:
            self.mac_prefix = (None if op.mac_prefix == VALUE_NONE
                               else normalize_mac_prefix(op.mac_prefix))
        if op.gateway6:
            self.gateway6 = _cleared(op.gateway6)
        if op.network6:
            self.network6 = _cleared(op.network6)
        _check_gateway6(self.network6, self.gateway6)
        try:
            self.apply(copy.deepcopy(net))  # every other failure, on a copy
        except AddressPoolError as err:
            raise OpPrereqError(str(err.args[0]), ECODE_STATE) from None

    def apply(self, net: Network) -> list[str]:
        """Change ``net`` as the opcode says; Ganeti's warnings for what it skipped."""
        op, warnings = self.op, []
        pool = AddressPool(net)
        if op.gateway:
            if self.gateway == net.gateway:
                warnings.append(f"Gateway is already {self.gateway}")
            else:
                if self.gateway is not None:
                    pool.reserve(self.gateway, external=True)
                if net.gateway is not None:
                    pool.release(net.gateway, external=True)
                net.gateway = self.gateway
        for ip in op.add_reserved_ips or []:
            try:
                pool.reserve(ip, external=True)
            except AddressPoolError as err:
                warnings.append(f"Cannot reserve IP address {ip}: {err.args[0]}")
        for ip in op.remove_reserved_ips or []:
            if ip == net.gateway:
                warnings.append("Cannot unreserve Gateway's IP")
                continue
            try:
                pool.release(ip, external=True)
            except AddressPoolError as err:
                warnings.append(f"Cannot release IP address {ip}: {err.args[0]}")
        if op.mac_prefix:
            net.mac_prefix = self.mac_prefix
        if op.network6:
            net.network6 = self.network6
        if op.gateway6:
            net.gateway6 = self.gateway6
        pool.validate()
        return warnings

    def build_hooks_env(self) -> dict[str, Any]:
        return network_hooks_env(self.op.network_name, self.network.network, self.gateway,
                                 self.network6, self.gateway6, self.mac_prefix,
                                 list(self.network.tags))

    async def exec(self) -> Any:
        if self.op.dry_run:
            return None
        uuid = self.network_uuid
        now = self.ctx.clock.seconds()

        def change(cfg: ConfigData) -> list[str]:
            net = cfg.networks[uuid]
            warnings = self.apply(net)
            net.serial_no += 1
            net.mtime = now
            return warnings

        for message in await self.update_config(change):
            self.warn(message)
        return None


# --- connect, disconnect ---------------------------------------------------------------

def group_instances(cfg: ConfigData, group_uuid: str) -> list[str]:
    """Names of the instances with a node in the group (Ganeti's
    ``GetNodeGroupInstances``), sorted."""
    members = {u for u, n in cfg.nodes.items() if n.group == group_uuid}
    return sorted((i.name for i in cfg.instances.values()
                   if nodesmod.instance_nodes(cfg, i) & members), key=nice_sort_key)


def _conflicts(instances: list[Instance], check: Callable[[NIC], bool]
               ) -> list[tuple[str, list[tuple[int, str | None]]]]:
    found = []
    for inst in instances:
        nics = [(index, nic.ip) for index, nic in enumerate(inst.nics) if check(nic)]
        if nics:
            found.append((inst.name, nics))
    return found


class _GroupNetworkLU(_NetworkLU):
    """Connect and disconnect: one network and one group; the group's instances."""

    op: OpNetworkConnect | OpNetworkDisconnect
    lock_instances = True

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: the group's nodes, in both phases."""
        cfg = self.ctx.config.config
        nodes = sorted(u for u, n in cfg.nodes.items() if n.group == self.group_uuid)
        return nodes, nodes

    def expand_names(self) -> None:
        super().expand_names()
        cfg = self.ctx.config.config
        self.network_uuid = lookup_network(cfg, self.op.network_name).uuid
        self.group_uuid = nodesmod.find_group(cfg, self.op.group_name).uuid
        self.needed_locks[LEVEL_INSTANCE] = []
        self.share_locks[LEVEL_INSTANCE] = True
        self.needed_locks[LEVEL_NODEGROUP] = [self.group_uuid]

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_INSTANCE and self.lock_instances:
            # optimistic: checked again once the group is locked
            self.needed_locks[LEVEL_INSTANCE] = group_instances(self.ctx.config.config,
                                                                self.group_uuid)

    def check_group_instances(self) -> list[Instance]:
        """The locked instances, if they still are the group's (Ganeti's
        ``CheckNodeGroupInstances``)."""
        cfg = self.ctx.config.config
        owned = self.owned_locks(LEVEL_INSTANCE)
        wanted = set(group_instances(cfg, self.group_uuid))
        if owned != wanted:
            group = cfg.nodegroups[self.group_uuid]
            raise OpPrereqError(
                f"Instances in node group '{group.name}' changed since locks were acquired, "
                f"wanted '{', '.join(sorted(wanted))}', have '{', '.join(sorted(owned))}'; "
                "retry the operation", ECODE_STATE)
        found = (cfg.instance_by_name(name) for name in sorted(owned, key=nice_sort_key))
        return [inst for inst in found if inst is not None]

    def check_conflicts(self, group: NodeGroup, instances: list[Instance],
                        check: Callable[[NIC], bool], action: str) -> None:
        """Ganeti's ``_NetworkConflictCheck``: a warning naming the NICs, then the error."""
        conflicts = _conflicts(instances, check)
        if not conflicts:
            return
        listed = ", ".join(
            f"{name}: " + ", ".join(f"nic{index}/{ip}" for index, ip in nics)
            for name, nics in conflicts)
        self.warn(f"IP addresses from network '{self.op.network_name}', which is about to "
                  f"{action} node group '{group.name}', are in use: {listed}")
        raise OpPrereqError("Conflicting IP addresses found;  remove/modify the "
                            "corresponding network interfaces", ECODE_STATE)

    async def _update_group(self, change: Callable[[NodeGroup], None]) -> None:
        uuid, now = self.group_uuid, self.ctx.clock.seconds()

        def commit(cfg: ConfigData) -> None:
            group = cfg.nodegroups[uuid]
            change(group)
            group.serial_no += 1
            group.mtime = now

        await self.update_config(commit)


def check_netparams(netparams: dict[str, Any]) -> None:
    """Ganeti's ``NIC.CheckParameterSyntax``: a known mode; a bridge needs a link."""
    mode = netparams[constants.NIC_MODE]
    if mode not in constants.NIC_VALID_MODES:
        raise ConfigurationError(f"Invalid NIC mode '{mode}'")
    if mode == constants.NIC_MODE_BRIDGED and not netparams[constants.NIC_LINK]:
        raise ConfigurationError("Missing bridged NIC link")


class LUNetworkConnect(_GroupNetworkLU):
    """OP_NETWORK_CONNECT: NICs of the group on this network get mode, link and VLAN."""

    OP_ID = "OP_NETWORK_CONNECT"
    op: OpNetworkConnect
    HPATH = "network-connect"

    def expand_names(self) -> None:
        self.lock_instances = self.op.conflicts_check
        super().expand_names()
        if self.op.conflicts_check:
            self.needed_locks[LEVEL_NETWORK] = [self.network_uuid]
            self.share_locks[LEVEL_NETWORK] = True

    def build_hooks_env(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name,
                "GROUP_NETWORK_MODE": self.op.network_mode,
                "GROUP_NETWORK_LINK": self.op.network_link,
                "GROUP_NETWORK_VLAN": self.op.network_vlan}

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        instances = self.check_group_instances() if self.op.conflicts_check else []
        self.netparams = {constants.NIC_MODE: self.op.network_mode,
                          constants.NIC_LINK: self.op.network_link,
                          constants.NIC_VLAN: self.op.network_vlan}
        check_netparams(self.netparams)
        group = cfg.nodegroups[self.group_uuid]
        self.connected = self.network_uuid in group.networks
        if self.connected:
            self.warn(f"Network '{self.op.network_name}' is already mapped to group "
                      f"'{group.name}'")
        elif self.op.conflicts_check:
            pool = AddressPool(cfg.networks[self.network_uuid])
            self.check_conflicts(group, instances, lambda nic: pool.contains(nic.ip),
                                 "connect to")

    async def exec(self) -> Any:
        if self.connected or self.op.dry_run:
            return None
        uuid, netparams = self.network_uuid, dict(self.netparams)

        def change(group: NodeGroup) -> None:
            group.networks[uuid] = netparams

        await self._update_group(change)
        return None


class LUNetworkDisconnect(_GroupNetworkLU):
    """OP_NETWORK_DISCONNECT: only if no NIC of the group's instances uses the network."""

    OP_ID = "OP_NETWORK_DISCONNECT"
    op: OpNetworkDisconnect
    HPATH = "network-disconnect"

    def build_hooks_env(self) -> dict[str, Any]:
        env: dict[str, Any] = {"GROUP_NAME": self.op.group_name}
        if self.connected:
            env.update({"GROUP_NETWORK_MODE": self.netparams.get(constants.NIC_MODE),
                        "GROUP_NETWORK_LINK": self.netparams.get(constants.NIC_LINK),
                        "GROUP_NETWORK_VLAN": self.netparams.get(constants.NIC_VLAN)})
        return env

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        instances = self.check_group_instances()
        group = cfg.nodegroups[self.group_uuid]
        self.connected = self.network_uuid in group.networks
        self.netparams: dict[str, Any] = {}
        if not self.connected:
            self.warn(f"Network '{self.op.network_name}' is not mapped to group "
                      f"'{group.name}'")
            return
        uuid = self.network_uuid
        self.check_conflicts(group, instances, lambda nic: nic.network == uuid,
                             "disconnect from")
        self.netparams = dict(group.networks[uuid])

    async def exec(self) -> Any:
        if not self.connected or self.op.dry_run:
            return None
        uuid = self.network_uuid

        def change(group: NodeGroup) -> None:
            group.networks.pop(uuid, None)

        await self._update_group(change)
        return None


#: The units of this module, registered by OP_ID.
LUS: tuple[type[LogicalUnit], ...] = (LUNetworkAdd, LUNetworkRemove, LUNetworkSetParams,
                                      LUNetworkConnect, LUNetworkDisconnect)
