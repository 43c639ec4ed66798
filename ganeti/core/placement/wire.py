"""Ganeti's iallocator protocol, version 2: the input dict and the answer text.

:func:`parse_input` reads an input (what ``gnt-debug allocator --dir in``
prints and what an allocator program reads from its file) into the model and a
typed request; :func:`render_input` writes the same dict back, key for key, so
the master builds its input by rendering a model.  :func:`parse_answer` reads
an allocator's stdout and checks it as Ganeti's master does (the messages are
Ganeti's); :func:`render_answer` writes one, for allocators of our own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ganeti.core.errors import OpExecError
from ganeti.core.placement.model import (
    Cluster,
    Disk,
    Group,
    Instance,
    IPolicy,
    ISpec,
    Nic,
    Node,
    NodeResources,
)
from ganeti.core.placement.requests import AnyRequest, request_from_wire
from ganeti.core.placement.shapes import (
    as_bool,
    as_float,
    as_int,
    as_str,
    as_str_list,
    bad,
    get,
)

#: The protocol version this module speaks (Ganeti's ``IALLOCATOR_VERSION``).
VERSION = 2

#: ISpec field -> the policy's key.
_SPEC_KEYS = {"memory_size": "memory-size", "cpu_count": "cpu-count",
              "disk_size": "disk-size", "disk_count": "disk-count",
              "nic_count": "nic-count", "spindle_use": "spindle-use"}
#: NodeResources field names are the input's keys.
_RESOURCE_KEYS = tuple(NodeResources.__dataclass_fields__)


@dataclass(frozen=True)
class AllocatorInput:
    """One iallocator input: the cluster and the request."""

    cluster: Cluster
    request: AnyRequest


@dataclass(frozen=True)
class Answer:
    """An allocator's answer; ``result`` is typed by the request when ``success``."""

    success: bool
    info: str
    result: Any


# -- instance policy ----------------------------------------------------------------------

def _spec_from_wire(data: Mapping[str, Any], where: str) -> ISpec:
    return ISpec(**{field: as_int(data, key, where) for field, key in _SPEC_KEYS.items()})


def _spec_to_wire(spec: ISpec) -> dict[str, int]:
    return {key: getattr(spec, field) for field, key in _SPEC_KEYS.items()}


def ipolicy_from_wire(data: Mapping[str, Any], where: str = "ipolicy") -> IPolicy:
    """An instance policy from its dict (minmax, std, ratios, disk-templates)."""
    minmax = []
    for i, entry in enumerate(get(data, "minmax", list, where)):
        at = f"{where}.minmax[{i}]"
        minmax.append((_spec_from_wire(get(entry, "min", dict, at), f"{at}.min"),
                       _spec_from_wire(get(entry, "max", dict, at), f"{at}.max")))
    return IPolicy(minmax=tuple(minmax),
                   std=_spec_from_wire(get(data, "std", dict, where), f"{where}.std"),
                   disk_templates=tuple(as_str_list(data, "disk-templates", where)),
                   vcpu_ratio=as_float(data, "vcpu-ratio", where),
                   spindle_ratio=as_float(data, "spindle-ratio", where))


def ipolicy_to_wire(policy: IPolicy) -> dict[str, Any]:
    """The policy's dict."""
    return {"minmax": [{"min": _spec_to_wire(low), "max": _spec_to_wire(high)}
                       for low, high in policy.minmax],
            "std": _spec_to_wire(policy.std), "spindle-ratio": policy.spindle_ratio,
            "vcpu-ratio": policy.vcpu_ratio, "disk-templates": list(policy.disk_templates)}


# -- groups, nodes, instances -------------------------------------------------------------

def _group_from_wire(uuid: str, data: Mapping[str, Any]) -> Group:
    where = f"nodegroups.{uuid}"
    return Group(uuid=uuid, name=as_str(data, "name", where),
                 alloc_policy=as_str(data, "alloc_policy", where),
                 ipolicy=ipolicy_from_wire(get(data, "ipolicy", dict, where),
                                           f"{where}.ipolicy"),
                 networks=tuple(data.get("networks") or ()), tags=tuple(data.get("tags") or ()))


def _group_to_wire(group: Group) -> dict[str, Any]:
    return {"name": group.name, "alloc_policy": group.alloc_policy,
            "networks": list(group.networks), "ipolicy": ipolicy_to_wire(group.ipolicy),
            "tags": list(group.tags)}


def _node_from_wire(name: str, data: Mapping[str, Any]) -> Node:
    where = f"nodes.{name}"
    resources = None
    if "total_memory" in data:  # offline nodes carry only the config's keys
        resources = NodeResources(**{k: as_int(data, k, where) for k in _RESOURCE_KEYS})
    primary_ip = as_str(data, "primary_ip", where)
    return Node(name=name, group=as_str(data, "group", where), primary_ip=primary_ip,
                secondary_ip=data.get("secondary_ip") or primary_ip, resources=resources,
                offline=bool(data.get("offline", False)),
                drained=bool(data.get("drained", False)),
                master_candidate=bool(data.get("master_candidate", False)),
                master_capable=bool(data.get("master_capable", True)),
                vm_capable=bool(data.get("vm_capable", True)),
                tags=tuple(data.get("tags") or ()), ndparams=dict(data.get("ndparams") or {}))


def _node_to_wire(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if node.resources is not None:
        out.update({k: getattr(node.resources, k) for k in _RESOURCE_KEYS})
    out.update({"tags": list(node.tags), "primary_ip": node.primary_ip,
                "secondary_ip": node.secondary_ip, "offline": node.offline,
                "drained": node.drained, "master_candidate": node.master_candidate,
                "group": node.group, "master_capable": node.master_capable,
                "vm_capable": node.vm_capable, "ndparams": dict(node.ndparams)})
    return out


def _nic_from_wire(data: Mapping[str, Any]) -> Nic:
    return Nic(mac=data.get("mac"), ip=data.get("ip"), mode=data.get("mode"),
               link=data.get("link"), bridge=data.get("bridge"))


def _nic_to_wire(nic: Nic) -> dict[str, Any]:
    out = {"mac": nic.mac, "ip": nic.ip, "mode": nic.mode, "link": nic.link}
    if nic.bridge is not None:
        out["bridge"] = nic.bridge
    return out


def _forthcoming(data: Mapping[str, Any], where: str) -> bool:
    """The optional ``forthcoming`` flag (absent or null: a real instance)."""
    if data.get("forthcoming") is None:
        return False
    return as_bool(data, "forthcoming", where)


def _instance_from_wire(name: str, data: Mapping[str, Any]) -> Instance:
    where = f"instances.{name}"
    template = as_str(data, "disk_template", where)
    disks = tuple(Disk(size=as_int(d, "size", f"{where}.disks[{i}]"),
                       mode=d.get("mode", "rw"), dev_type=d.get("dev_type", template),
                       spindles=d.get("spindles"))
                  for i, d in enumerate(get(data, "disks", list, where)))
    nodes = as_str_list(data, "nodes", where)
    if not nodes:
        raise bad(f"{where}.nodes: empty")
    return Instance(name=name, nodes=tuple(nodes), memory=as_int(data, "memory", where),
                    vcpus=as_int(data, "vcpus", where), disk_template=template, disks=disks,
                    nics=tuple(_nic_from_wire(n) for n in data.get("nics") or ()),
                    spindle_use=int(data.get("spindle_use", 1)),
                    admin_state=data.get("admin_state", "down"),
                    disks_active=bool(data.get("disks_active", False)), os=data.get("os"),
                    hypervisor=data.get("hypervisor", ""), tags=tuple(data.get("tags") or ()),
                    forthcoming=_forthcoming(data, where))


def _instance_to_wire(inst: Instance) -> dict[str, Any]:
    out = {"tags": list(inst.tags), "admin_state": inst.admin_state, "vcpus": inst.vcpus,
           "memory": inst.memory, "spindle_use": inst.spindle_use, "os": inst.os,
           "nodes": list(inst.nodes), "nics": [_nic_to_wire(n) for n in inst.nics],
           "disks": [{"dev_type": d.dev_type, "size": d.size, "mode": d.mode,
                      "spindles": d.spindles} for d in inst.disks],
           "disk_template": inst.disk_template, "disks_active": inst.disks_active,
           "hypervisor": inst.hypervisor, "disk_space_total": inst.disk_space_total}
    if inst.forthcoming:  # htools 3.0.2 reads it (default false); Ganeti's master omits it
        out["forthcoming"] = True
    return out


# -- the whole input ----------------------------------------------------------------------

def parse_input(data: Any) -> AllocatorInput:
    """The model and request of a version-2 input dict; ``ParseError`` naming the bad key."""
    if not isinstance(data, dict):
        raise bad("not an object")
    version = data.get("version")
    if version != VERSION:
        raise bad(f"version {version!r}, this allocator speaks version {VERSION}")
    groups = {uuid: _group_from_wire(uuid, g)
              for uuid, g in get(data, "nodegroups", dict, "input").items()}
    nodes = {name: _node_from_wire(name, n)
             for name, n in get(data, "nodes", dict, "input").items()}
    instances = {name: _instance_from_wire(name, i)
                 for name, i in get(data, "instances", dict, "input").items()}
    cluster = Cluster(name=as_str(data, "cluster_name", "input"),
                      ipolicy=ipolicy_from_wire(get(data, "ipolicy", dict, "input")),
                      groups=groups, nodes=nodes, instances=instances,
                      tags=tuple(as_str_list(data, "cluster_tags", "input")),
                      enabled_hypervisors=tuple(as_str_list(data, "enabled_hypervisors",
                                                            "input")))
    problems = cluster.check()
    if problems:
        raise bad("; ".join(problems))
    return AllocatorInput(cluster, request_from_wire(get(data, "request", dict, "input")))


def render_input(ialloc: AllocatorInput) -> dict[str, Any]:
    """The version-2 input dict of a model and request (Ganeti's keys and order)."""
    cluster = ialloc.cluster
    return {
        "version": VERSION, "cluster_name": cluster.name, "cluster_tags": list(cluster.tags),
        "enabled_hypervisors": list(cluster.enabled_hypervisors),
        "ipolicy": ipolicy_to_wire(cluster.ipolicy),
        "nodegroups": {uuid: _group_to_wire(g) for uuid, g in cluster.groups.items()},
        "nodes": {name: _node_to_wire(n) for name, n in cluster.nodes.items()},
        "instances": {name: _instance_to_wire(i) for name, i in cluster.instances.items()},
        "request": ialloc.request.to_wire(),
    }


# -- the answer ---------------------------------------------------------------------------

def parse_answer(text: str | bytes, ialloc: AllocatorInput) -> Answer:
    """An allocator's stdout, checked as Ganeti's master checks it.

    Text that is not a JSON object, or lacks ``success``, ``info`` or ``result``
    (``nodes``, the old name, is accepted) fails with ``OpExecError``; a
    successful answer whose result does not have the request's shape fails with
    ``ResultValidationError``."""
    try:
        answer = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise OpExecError(f"Can't parse iallocator results: {err}") from None
    if not isinstance(answer, dict):
        raise OpExecError("Can't parse iallocator results: not a dict")
    if "nodes" in answer and "result" not in answer:
        answer["result"] = answer.pop("nodes")
    for key in ("success", "info", "result"):
        if key not in answer:
            raise OpExecError(f"Can't parse iallocator results: missing key '{key}'")
    success = bool(answer["success"])
    result = answer["result"]
    if success:
        result = ialloc.request.check_result(result, ialloc.cluster)
    return Answer(success=success, info=str(answer["info"]), result=result)


def render_answer(answer: Answer) -> str:
    """An answer as an allocator prints it (a failed one carries an empty result)."""
    result = answer.result
    wire = result.to_wire() if hasattr(result, "to_wire") else result
    if isinstance(wire, tuple):
        wire = list(wire)
    return json.dumps({"success": answer.success, "info": answer.info,
                       "result": wire if answer.success else []})


__all__ = ["VERSION", "AllocatorInput", "Answer", "ipolicy_from_wire", "ipolicy_to_wire",
           "parse_input", "parse_answer", "render_answer", "render_input"]
