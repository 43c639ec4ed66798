"""What the instance units share: finding instances, node checks, the hooks
environment, parameter checks, NIC building, and starting/stopping on the node.

Messages and error codes are Ganeti 3.0's (cmdlib/instance_utils.py,
cmdlib/common.py), so that clients and scripts matching on them keep working.
"""

from __future__ import annotations

import copy
import ipaddress
import re
import uuid as uuidmod
from collections.abc import Mapping, Sequence
from typing import Any

from ganeti.core import constants as c
from ganeti.core import hvchecks, params_fill
from ganeti.core.errors import (
    ECODE_ENVIRON,
    ECODE_INVAL,
    ECODE_NOENT,
    ECODE_NORES,
    ECODE_NOTUNIQUE,
    ECODE_STATE,
    OpExecError,
    OpPrereqError,
    ReservationError,
)
from ganeti.core.objects import NIC, ConfigData, Instance, Node
from ganeti.core.params_merge import fill_dict
from ganeti.core.params_types import (
    BE_MEMORY,
    BES_PARAMETER_COMPAT,
    BES_PARAMETER_TYPES,
    HVS_PARAMETER_TYPES,
    NICS_PARAMETER_TYPES,
    force_dict_type,
)
from ganeti.core.rpcdefs.encoders import InstanceArg
from ganeti.master.config import nodes as nodesmod
from ganeti.master.config.reservations import commit_ip, release_ip
from ganeti.master.lu.base import LogicalUnit

VALUE_AUTO = "auto"
VALUE_GENERATE = "generate"
VALUE_NONE = "none"
NIC_IP_POOL = "pool"
NIC_MODE_BRIDGED = "bridged"
NIC_MODE_ROUTED = "routed"
NIC_MODE_OVS = "openvswitch"
NIC_MODES = (NIC_MODE_BRIDGED, NIC_MODE_ROUTED, NIC_MODE_OVS)
_MAC_RE = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
DISK_ACCESS_MODES = ("rw", "ro")


def find_instance(cfg: ConfigData, name: str, uuid: str | None = None) -> Instance:
    """The instance with this name (or UUID); ``OpPrereqError(..., ECODE_NOENT)`` if none.

    A UUID given with a name must match it (Ganeti's ExpandInstanceUuidAndName)."""
    inst = cfg.instances.get(uuid) if uuid else None
    if inst is None:
        inst = cfg.instance_by_name(name) or cfg.instances.get(name)
    if inst is None and name:
        # Ganeti's name expansion: a unique instance whose name is ``name`` followed
        # by domain components ("web1" for "web1.example.com"), case-insensitively
        prefix = name.lower() + "."
        found = [i for i in cfg.instances.values() if i.name.lower().startswith(prefix)]
        if len(found) == 1:
            inst = found[0]
    if inst is None:
        raise OpPrereqError(f"Instance '{name}' not known", ECODE_NOENT)
    if uuid and inst.uuid != uuid:
        raise OpPrereqError(f"The instances UUID '{uuid}' does not match the expected UUID "
                            f"'{inst.uuid}' for instance '{name}'. Maybe the instance changed "
                            "since you submitted this job.", ECODE_NOTUNIQUE)
    return inst


def node_name(cfg: ConfigData, uuid: str) -> str:
    node = cfg.nodes.get(uuid)
    return node.name if node is not None else uuid


def check_node_online(node: Node, msg: str | None = None) -> None:
    """Ganeti's CheckNodeOnline."""
    if node.offline:
        raise OpPrereqError(f"{msg or 'Can' + chr(39) + 't use offline node'} {node.name}",
                            ECODE_STATE)


def check_node_not_drained(node: Node) -> None:
    if node.drained:
        raise OpPrereqError(f"Can't use drained node {node.name}", ECODE_STATE)


def check_node_vm_capable(node: Node) -> None:
    if not node.vm_capable:
        raise OpPrereqError(f"Can't use non-vm_capable node {node.name}", ECODE_STATE)


# --- parameters ---------------------------------------------------------------------

def upgrade_beparams(beparams: dict[str, Any]) -> dict[str, Any]:
    """Ganeti's UpgradeBeParams: the old ``memory`` sets both maxmem and minmem;
    values are coerced to their types; unknown names are refused."""
    out = copy.deepcopy(beparams)
    force_dict_type(out, BES_PARAMETER_COMPAT)
    if BE_MEMORY in out:
        memory = out.pop(BE_MEMORY)
        out.setdefault(c.BE_MAXMEM, memory)
        out.setdefault(c.BE_MINMEM, memory)
    force_dict_type(out, BES_PARAMETER_TYPES)
    return out


def check_be_memory(be: Mapping[str, Any]) -> None:
    if be.get(c.BE_MINMEM, 0) > be.get(c.BE_MAXMEM, 0):
        raise OpPrereqError("Minimum memory cannot be greater than maximum memory "
                            f"({be.get(c.BE_MINMEM)} > {be.get(c.BE_MAXMEM)})", ECODE_INVAL)


def check_hvparams(cfg: ConfigData, hypervisor: str, os_name: str | None,
                   hvparams: Mapping[str, Any]) -> dict[str, Any]:
    """The instance's own hypervisor parameters, checked; the filled ones returned.

    Global parameters (Ganeti's HVC_GLOBALS) may only be set on the cluster;
    names the hypervisor does not know are refused; values get their types
    and the hypervisor's syntax checks (Ganeti's CheckParameterSyntax)."""
    own = copy.deepcopy(dict(hvparams))
    globals_used = sorted(set(own) & params_fill.HVC_GLOBALS)
    if globals_used:
        raise OpPrereqError("The following hypervisor parameters are global and cannot be "
                            "customized at instance level, please modify them at cluster "
                            f"level: {', '.join(globals_used)}", ECODE_INVAL)
    defaults = c.HVC_DEFAULTS.get(hypervisor, {})
    unknown = sorted(set(own) - set(defaults))
    if unknown:
        raise OpPrereqError(f"Unknown hypervisor parameter(s) for {hypervisor}: "
                            f"{', '.join(unknown)}", ECODE_INVAL)
    force_dict_type(own, HVS_PARAMETER_TYPES)
    filled = fill_dict(params_fill.fill_hv(cfg.cluster, hypervisor, os_name, {}), own)
    hvchecks.check_syntax(hypervisor, filled)
    check_uid_pool_for(cfg.cluster.uid_pool, hypervisor, filled)
    return filled


def check_uid_pool_for(uid_pool: Sequence[Any], hypervisor: str,
                       filled: Mapping[str, Any]) -> None:
    """``security_model=pool`` needs uids: refused while the cluster's pool is empty."""
    if filled.get("security_model") == hvchecks.SM_POOL and not uid_pool:
        raise OpPrereqError(f"Parameter 'security_model' of hypervisor {hypervisor} is "
                            "'pool' but the cluster's user-id pool is empty (set it with "
                            "'gnt-cluster modify --uid-pool')", ECODE_INVAL)


async def validate_hvparams_on_nodes(lu: LogicalUnit, node_uuids: Sequence[str], hypervisor: str,
                                     hvfull: Mapping[str, Any],
                                     prereq: bool = True) -> None:
    """Ganeti's CheckHVParams: the vm_capable online nodes among ``node_uuids`` validate
    the filled parameters (``hypervisor_validate_params``); a node's refusal becomes
    ``OpPrereqError`` naming the node and (in the node's message) the parameter, or
    with ``prereq`` false ``OpExecError`` (as Ganeti's cluster modify reports it)."""
    if not hvchecks.needs_node_validation(hypervisor):
        return
    cfg = lu.ctx.config.config
    nodes = [cfg.nodes[u] for u in dict.fromkeys(node_uuids)
             if u in cfg.nodes and cfg.nodes[u].vm_capable and not cfg.nodes[u].offline]
    if not nodes:
        return
    results = await lu.ctx.rpc().call([nodesmod.target(n) for n in nodes],
                                      "hypervisor_validate_params",
                                      [hypervisor, dict(hvfull)])
    for node in nodes:
        result = results[node.name]
        if result.offline:
            continue
        result.raise_if_failed(f"Hypervisor parameter validation failed on node {node.name}",
                               prereq=prereq, ecode=ECODE_INVAL if prereq else None)


def check_disk_mode(mode: Any) -> str:
    if mode not in DISK_ACCESS_MODES:
        raise OpPrereqError(f"Invalid disk access mode '{mode}'", ECODE_INVAL)
    return str(mode)


def check_nic_params(nicparams: Mapping[str, Any]) -> None:
    """Ganeti's NIC.CheckParameterSyntax on filled NIC parameters."""
    mode = nicparams.get(c.NIC_MODE)
    if mode not in NIC_MODES:
        raise OpPrereqError(f"Invalid NIC mode '{mode}'", ECODE_INVAL)
    if mode == NIC_MODE_BRIDGED and not nicparams.get(c.NIC_LINK):
        raise OpPrereqError("Missing bridged NIC link", ECODE_INVAL)


def normalize_mac(mac: str) -> str:
    """Ganeti's NormalizeAndValidateMac."""
    low = mac.lower()
    if not _MAC_RE.fullmatch(low):
        raise OpPrereqError(f"Invalid MAC address '{mac}'", ECODE_INVAL)
    return low


def check_vlan(vlan: str) -> str:
    """Ganeti's VLAN syntax: ``N`` (becomes ``.N``), ``.N``, ``.N:M:..``, ``:N:M``."""
    if vlan.isdigit():
        return "." + vlan
    parts = vlan[1:].split(":") if vlan[:1] in (".", ":") else None
    if vlan[:1] == "." and parts and parts[0].isdigit():
        parts = parts[1:]
    if parts is None or not all(p.isdigit() for p in parts if p != "") or \
            any(p == "" for p in parts):
        raise OpPrereqError(f"Specified VLAN parameter is invalid : {vlan}", ECODE_INVAL)
    return vlan


def build_nics(lu: LogicalUnit, cfg: ConfigData, specs: Sequence[Mapping[str, Any]],
               name_check: bool, default_ip: str | None) -> list[NIC]:
    """NIC objects from the opcode's NIC definitions (Ganeti's ComputeNics), MACs
    given explicitly and pool IPs reserved for the job (``generate`` and
    ``auto`` MACs stay until :func:`assign_nic_resources`)."""
    cluster = cfg.cluster
    default_mode = cluster.nicparams.get(params_fill.PP_DEFAULT, {}).get(c.NIC_MODE,
                                                                          NIC_MODE_BRIDGED)
    nics: list[NIC] = []
    names: set[str] = set()
    for spec in specs:
        mode_req = spec.get("mode")
        mode = default_mode if mode_req in (None, VALUE_AUTO) else mode_req
        net = spec.get("network")
        link = spec.get("link")
        ip = spec.get("ip")
        vlan = spec.get("vlan")
        if net is None or net.lower() == VALUE_NONE:
            net = None
        elif mode_req is not None or link is not None:
            raise OpPrereqError("If network is given, no mode or link is allowed to be passed",
                                ECODE_INVAL)
        nic_ip: str | None
        if ip is None or ip.lower() == VALUE_NONE:
            nic_ip = None
        elif ip.lower() == VALUE_AUTO:
            if not name_check:
                raise OpPrereqError("IP address set to auto but name checks have been "
                                    "skipped", ECODE_INVAL)
            nic_ip = default_ip
        elif ip.lower() == NIC_IP_POOL:
            if net is None:
                raise OpPrereqError("if ip=pool, parameter network must be passed too",
                                    ECODE_INVAL)
            nic_ip = NIC_IP_POOL
        else:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                raise OpPrereqError(f"Invalid IP address '{ip}'", ECODE_INVAL) from None
            nic_ip = ip
        if mode == NIC_MODE_ROUTED and not nic_ip and not net:
            raise OpPrereqError("Routed nic mode requires an ip address if not attached to "
                                "a network", ECODE_INVAL)
        mac = spec.get("mac") or VALUE_AUTO
        if mac not in (VALUE_AUTO, VALUE_GENERATE):
            mac = normalize_mac(mac)
        nicparams: dict[str, Any] = {}
        if mode_req:
            nicparams[c.NIC_MODE] = mode
        if link:
            nicparams[c.NIC_LINK] = link
        if vlan:
            nicparams[c.NIC_VLAN] = check_vlan(vlan)
        force_dict_type(nicparams, NICS_PARAMETER_TYPES)
        check_nic_params(params_fill.fill_nic(cluster, nicparams))
        net_uuid = None
        if net is not None:
            network = cfg.networks.get(net) or cfg.network_by_name(net)
            if network is None:
                raise OpPrereqError(f"Network '{net}' not found", ECODE_NOENT)
            net_uuid = network.uuid
        name = spec.get("name")
        if name is not None and name.lower() == VALUE_NONE:
            name = None
        if name is not None:
            if name in names:
                raise OpPrereqError(f"NIC name '{name}' already used", ECODE_NOTUNIQUE)
            names.add(name)
        nics.append(NIC(uuid=str(uuidmod.uuid4()), name=name, mac=mac, ip=nic_ip, network=net_uuid,
                        nicparams=nicparams))
    return nics


def assign_nic_resources(lu: LogicalUnit, cfg: ConfigData, nics: Sequence[NIC],
                         conflicts_check: bool = True) -> None:
    """Reserve MACs (generating ``auto``/``generate`` ones) and network IPs for the
    job: another job cannot take them until this one ends."""
    owner = lu.ctx.owner
    res = lu.ctx.reservations
    for nic in nics:
        try:
            if nic.mac in (VALUE_AUTO, VALUE_GENERATE, None):
                nic.mac = res.generate_mac(owner, cfg, nic.network)
            else:
                res.reserve_mac(owner, cfg, nic.mac)
        except ReservationError:
            raise OpPrereqError(f"MAC address {nic.mac} already in use in cluster",
                                ECODE_NOTUNIQUE) from None
        if nic.network is None:
            continue
        try:
            if nic.ip == NIC_IP_POOL:
                nic.ip = res.generate_ip(owner, cfg, nic.network)
            elif nic.ip is not None:
                res.reserve_ip(owner, cfg, nic.network, nic.ip, check=conflicts_check)
        except ReservationError as err:
            raise OpPrereqError(str(err), ECODE_NOTUNIQUE) from None


def commit_nic_ips(cfg: ConfigData, nics: Sequence[NIC], release: bool = False) -> None:
    """Mark (or free) the NICs' addresses in their networks' pools (inside a config change)."""
    for nic in nics:
        if nic.network and nic.ip and nic.network in cfg.networks:
            net = cfg.networks[nic.network]
            try:
                (release_ip if release else commit_ip)(net, nic.ip)
            except (ValueError, ReservationError):
                continue  # an address outside the pool (conflicts_check off)
            net.serial_no += 1


# --- hooks environment --------------------------------------------------------------

def instance_hook_env(cfg: ConfigData, inst: Instance,
                      override: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Ganeti's BuildInstanceHookEnvByObject (without the GANETI_ prefix)."""
    cluster = cfg.cluster
    be = params_fill.fill_instance_be(cluster, inst)
    hv = params_fill.fill_instance_hv(cluster, inst)
    env: dict[str, Any] = {
        "INSTANCE_NAME": inst.name,
        "INSTANCE_UUID": inst.uuid,
        "INSTANCE_PRIMARY": node_name(cfg, inst.primary_node),
        "INSTANCE_SECONDARIES": " ".join(node_name(cfg, u)
                                         for u in nodesmod.secondary_nodes(cfg, inst)),
        "INSTANCE_OS_TYPE": inst.os or "",
        "INSTANCE_STATUS": inst.admin_state,
        "INSTANCE_MINMEM": be.get(c.BE_MINMEM),
        "INSTANCE_MAXMEM": be.get(c.BE_MAXMEM),
        "INSTANCE_MEMORY": be.get(c.BE_MAXMEM),
        "INSTANCE_VCPUS": be.get(c.BE_VCPUS),
        "INSTANCE_DISK_TEMPLATE": inst.disk_template or c.DT_DISKLESS,
        "INSTANCE_HYPERVISOR": inst.hypervisor,
        "INSTANCE_NIC_COUNT": len(inst.nics),
        "INSTANCE_TAGS": " ".join(sorted(inst.tags)),
    }
    for idx, nic in enumerate(inst.nics):
        filled = params_fill.fill_nic(cluster, nic.nicparams)
        prefix = f"INSTANCE_NIC{idx}_"
        env[prefix + "NAME"] = nic.name or ""
        env[prefix + "UUID"] = nic.uuid or ""
        env[prefix + "IP"] = nic.ip or ""
        env[prefix + "MAC"] = nic.mac or ""
        env[prefix + "MODE"] = filled.get(c.NIC_MODE, "")
        env[prefix + "LINK"] = filled.get(c.NIC_LINK, "")
        env[prefix + "VLAN"] = filled.get(c.NIC_VLAN, "")
        if nic.network and nic.network in cfg.networks:
            env[prefix + "NETWORK_NAME"] = cfg.networks[nic.network].name
        if filled.get(c.NIC_MODE) == NIC_MODE_BRIDGED:
            env[prefix + "BRIDGE"] = filled.get(c.NIC_LINK, "")
    # (leniently: the post hooks of a remove describe an instance whose disks are gone)
    disks = [cfg.disks[u] for u in inst.disks if u in cfg.disks]
    env["INSTANCE_DISK_COUNT"] = len(disks)
    for idx, disk in enumerate(disks):
        prefix = f"INSTANCE_DISK{idx}_"
        env[prefix + "NAME"] = disk.name or ""
        env[prefix + "UUID"] = disk.uuid
        env[prefix + "SIZE"] = disk.size
        env[prefix + "MODE"] = disk.mode
    for key, value in be.items():
        env[f"INSTANCE_BE_{key}"] = value
    for key, value in hv.items():
        env[f"INSTANCE_HV_{key}"] = value
    env.update(override or {})
    return env


def hooks_nodes(cfg: ConfigData, inst: Instance) -> list[str]:
    """The master and the instance's nodes (UUIDs), Ganeti's usual hook targets."""
    return [cfg.cluster.master_node, *sorted(nodesmod.instance_nodes(cfg, inst)
                                             - {cfg.cluster.master_node})]


# --- memory and the node ------------------------------------------------------------

async def check_node_free_memory(lu: LogicalUnit, node: Node, reason: str, requested: int,
                                 exclude: str | None = None) -> None:
    """Ganeti's CheckNodeFreeMemory: the node must report at least ``requested`` MiB free,
    less the memory of the reservations on it (forthcoming instances; ``exclude``: the
    one being made real), which must stay able to start."""
    result = await lu.ctx.rpc().call_one(node, "node_info", [])
    result.raise_if_failed(f"Can't get data from node {node.name}", prereq=True,
                           ecode=ECODE_ENVIRON)
    free = (result.payload or {}).get("memory_free")
    if not isinstance(free, int):
        raise OpPrereqError(f"Can't compute free memory on node {node.name}, result was "
                            f"'{free}'", ECODE_ENVIRON)
    reserved = _reserved_memory(lu.ctx.config.config, node.uuid, exclude)
    if requested > free - reserved:
        held = f" ({reserved} MiB of it reserved for forthcoming instances)" if reserved else ""
        raise OpPrereqError(f"Not enough memory on node {node.name} for {reason}: needed "
                            f"{requested} MiB, available {free} MiB{held}", ECODE_NORES)


def _reserved_memory(cfg: ConfigData, node_uuid: str, exclude: str | None) -> int:
    """The maximum memory of the forthcoming instances whose primary is ``node_uuid``."""
    total = 0
    for inst in cfg.instances.values():
        if inst.forthcoming and inst.primary_node == node_uuid and inst.uuid != exclude:
            total += int(params_fill.fill_instance_be(cfg.cluster, inst)[c.BE_MAXMEM])
    return total


def instance_arg(inst: Instance, hvp: Mapping[str, Any] | None = None,
                 bep: Mapping[str, Any] | None = None) -> InstanceArg:
    return InstanceArg(inst, hvp=hvp or None, bep=bep or None)


def reason_trail(lu: LogicalUnit) -> list[Any]:
    """The opcode's reason trail (what the node records with a start or stop)."""
    return copy.deepcopy(list(lu.op_input.get("reason") or []))


async def start_on_node(lu: LogicalUnit, inst: Instance, hvp: Mapping[str, Any] | None = None,
                        bep: Mapping[str, Any] | None = None, paused: bool = False) -> None:
    cfg = lu.ctx.config.config
    node = cfg.nodes[inst.primary_node]
    result = await lu.ctx.rpc().call_one(
        node, "instance_start", [instance_arg(inst, hvp, bep), paused, reason_trail(lu)])
    result.raise_if_failed("Could not start instance")


async def shutdown_on_node(lu: LogicalUnit, inst: Instance, timeout: float,
                           ignore_failure: bool = False) -> bool:
    cfg = lu.ctx.config.config
    node = cfg.nodes[inst.primary_node]
    result = await lu.ctx.rpc().call_one(node, "instance_shutdown",
                                         [instance_arg(inst), timeout, reason_trail(lu)])
    if result.success:
        return True
    if ignore_failure:
        lu.ctx.feedback("message", f"Could not shutdown instance {inst.name} on node "
                                   f"{node.name}: {result.fail_msg}")
        return False
    raise OpExecError(f"Could not shutdown instance {inst.name} on node {node.name}: "
                      f"{result.fail_msg}")


async def instance_running(lu: LogicalUnit, inst: Instance) -> bool:
    """Whether the primary node reports the instance running (offline node: no)."""
    cfg = lu.ctx.config.config
    node = cfg.nodes[inst.primary_node]
    if node.offline:
        return False
    hvparams = params_fill.fill_instance_hv(cfg.cluster, inst)
    result = await lu.ctx.rpc().call_one(node, "instance_info",
                                         [inst.name, inst.hypervisor, hvparams])
    result.raise_if_failed(f"Error checking node {node.name}", prereq=True,
                           ecode=ECODE_ENVIRON)
    return bool(result.payload)
