"""An independent validator of iallocator answers.

Given an iallocator v2 input (the JSON dict) and an allocator's answer (its stdout, or the
parsed dict), :func:`check` applies the answer to the input in order and lists every hard
rule the answer breaks: the answer's shape, unknown/offline/drained/non-vm-capable target
nodes, the node count, distinct nodes of a mirrored instance in one group, memory on the
primary and disk on every LVM-backed node (what forthcoming instances reserve counted as
used), the group's instance policy (spec ranges and
disk templates), the evacuated node never a target, every requested instance named exactly
once, and (node-evacuate, change-group) opcodes that are well formed and lead exactly to the
nodes the answer claims.  It also returns the after-state as an iallocator input, so that
htools (``placement_htools.score``) can score before and after.

``python -m tests.placement_check INPUT [ANSWER]`` checks one answer from the shell.

Deliberately written from Ganeti's documented behaviour, on the raw JSON: it imports
nothing from ``ganeti.core.placement`` so that a bug in the allocator's rules cannot hide
in the checker too.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Disk templates whose disks take space from the nodes' volume group (what the input's
#: total_disk/free_disk report).
LVM_TEMPLATES = frozenset({"plain", "drbd"})
MIRRORED = frozenset({"drbd"})
#: Templates whose instances move freely between nodes (shared or no storage).
MOVABLE = frozenset({"diskless", "sharedfile", "rbd", "ext", "gluster", "blockdev", "file"})
#: Opcodes an evacuation / group change may use, with the fields each must carry.
OPCODES: dict[str, tuple[str, ...]] = {
    "OP_INSTANCE_MIGRATE": ("instance_name",),
    "OP_INSTANCE_FAILOVER": ("instance_name",),
    "OP_INSTANCE_REPLACE_DISKS": ("instance_name", "mode"),
}
EVAC_MODES = ("primary-only", "secondary-only", "all")


@dataclass
class Report:
    """What :func:`check` found."""

    errors: list[str] = field(default_factory=list)
    #: hail's soft rules the answer breaks (not counted in ``valid``): a node newly
    #: failing N+1, a node newly above the group's vCPU ratio.
    soft: list[str] = field(default_factory=list)
    requested: int = 0
    placed: int = 0
    success: bool = False
    info: str = ""
    after: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """No hard rule broken."""
        return not self.errors


class _State:
    """The cluster of an input, mutated as the answer is applied."""

    def __init__(self, data: Mapping[str, Any], report: Report) -> None:
        self.data = copy.deepcopy(dict(data))
        self.nodes: dict[str, dict[str, Any]] = self.data["nodes"]
        self.insts: dict[str, dict[str, Any]] = self.data["instances"]
        self.groups: dict[str, dict[str, Any]] = self.data["nodegroups"]
        self.report = report
        #: What forthcoming instances (reservations) hold per node: they are in no
        #: node's live figures, and count as used all the same.
        self.reserved_mem: dict[str, int] = dict.fromkeys(self.nodes, 0)
        self.reserved_disk: dict[str, int] = dict.fromkeys(self.nodes, 0)
        for inst in self.insts.values():
            if inst.get("forthcoming"):
                self._mem(inst, inst["nodes"][0], +1)
                for node in inst["nodes"]:
                    self._disk(inst, node, +1)

    def err(self, msg: str) -> None:
        self.report.errors.append(msg)

    def group_name(self, node: str) -> str:
        return str(self.groups[self.nodes[node]["group"]]["name"])

    def target_ok(self, node: Any, what: str) -> bool:
        """The node exists and may receive instances."""
        if not isinstance(node, str) or node not in self.nodes:
            self.err(f"{what}: unknown node {node!r}")
            return False
        n = self.nodes[node]
        for flag, bad in (("offline", True), ("drained", True), ("vm_capable", False)):
            if n.get(flag, not bad) == bad:
                self.err(f"{what}: node {node} is {flag if bad else 'not ' + flag}")
                return False
        if self.groups[n["group"]].get("alloc_policy") == "unallocable":
            self.err(f"{what}: node {node} is in an unallocable group")
        return True

    def policy(self, inst: Mapping[str, Any], node: str, what: str) -> None:
        """The instance fits its group's instance policy."""
        pol = self.groups[self.nodes[node]["group"]]["ipolicy"]
        template = inst["disk_template"]
        if template not in pol["disk-templates"]:
            self.err(f"{what}: disk template {template} not allowed by the policy")
        sizes = [d["size"] for d in inst.get("disks", [])]
        figures = {"memory-size": [inst["memory"]], "cpu-count": [inst["vcpus"]],
                   "disk-size": sizes, "nic-count": [len(inst.get("nics", []))],
                   "spindle-use": [inst.get("spindle_use", 1)]}
        if template != "diskless":
            figures["disk-count"] = [len(sizes)]
        for mm in pol["minmax"]:
            if all(mm["min"][k] <= v <= mm["max"][k] for k, vals in figures.items()
                   for v in vals):
                return
        self.err(f"{what}: outside every min/max spec of the policy")

    # -- resources --------------------------------------------------------------------

    def _mem(self, inst: Mapping[str, Any], node: str, sign: int) -> None:
        if inst.get("forthcoming"):
            self.reserved_mem[node] += sign * inst["memory"]
            return
        n = self.nodes[node]
        n["i_pri_memory"] = n.get("i_pri_memory", 0) + sign * inst["memory"]
        if inst.get("admin_state", "up") == "up":
            n["free_memory"] -= sign * inst["memory"]
            n["i_pri_up_memory"] = n.get("i_pri_up_memory", 0) + sign * inst["memory"]

    def _disk(self, inst: Mapping[str, Any], node: str, sign: int) -> None:
        if inst["disk_template"] not in LVM_TEMPLATES:
            return
        if inst.get("forthcoming"):
            self.reserved_disk[node] += sign * inst["disk_space_total"]
        else:
            self.nodes[node]["free_disk"] -= sign * inst["disk_space_total"]

    def place(self, name: str, inst: dict[str, Any], nodes: list[str], what: str) -> None:
        """Put ``inst`` on ``nodes`` (primary first), checking memory and disk."""
        self._mem(inst, nodes[0], +1)
        for node in nodes:
            self._disk(inst, node, +1)
        inst["nodes"] = list(nodes)
        self.insts[name] = inst
        if self.nodes[nodes[0]]["free_memory"] - self.reserved_mem[nodes[0]] < 0:
            self.err(f"{what}: not enough memory on {nodes[0]} (reservations counted)")
        for node in nodes:
            if inst["disk_template"] in LVM_TEMPLATES and \
                    self.nodes[node]["free_disk"] - self.reserved_disk[node] < 0:
                self.err(f"{what}: not enough disk on {node} (reservations counted)")

    def unplace(self, name: str) -> dict[str, Any]:
        inst = self.insts.pop(name)
        self._mem(inst, inst["nodes"][0], -1)
        for node in inst["nodes"]:
            self._disk(inst, node, -1)
        return inst


# -- per request type ----------------------------------------------------------------------

def _node_list(st: _State, nodes: Any, count: int, template: str, what: str,
               kept: frozenset[str] = frozenset()) -> bool:
    """A well-formed, usable node list for an instance of ``template``; nodes in
    ``kept`` (the instance's own, for a move) need only exist: a drbd failover to a
    drained secondary, or keeping a drained node as secondary, is what Ganeti does."""
    if not isinstance(nodes, list):
        st.err(f"{what}: node list is not a list: {nodes!r}")
        return False
    if len(nodes) != count:
        st.err(f"{what}: {len(nodes)} nodes given, {count} required")
        return False
    if not all([st.target_ok(n, what) if n not in kept else n in st.nodes
                for n in nodes]):
        return False
    if len(set(nodes)) != len(nodes):
        st.err(f"{what}: the same node twice: {nodes}")
        return False
    if len({st.nodes[n]["group"] for n in nodes}) > 1:
        st.err(f"{what}: nodes in different groups: {nodes}")
        return False
    if template in MIRRORED and len(nodes) != 2:
        st.err(f"{what}: a mirrored instance needs two nodes")
        return False
    return True


def _new_instance(req: Mapping[str, Any]) -> dict[str, Any]:
    return {"tags": list(req.get("tags", [])), "admin_state": "up", "vcpus": req["vcpus"],
            "memory": req["memory"], "spindle_use": req.get("spindle_use", 1),
            "os": req.get("os", ""), "nics": list(req.get("nics", [])),
            "disks": [dict(d, dev_type=req["disk_template"], spindles=d.get("spindles"))
                      for d in req.get("disks", [])],
            "disk_template": req["disk_template"], "disks_active": True,
            "hypervisor": req.get("hypervisor", ""),
            "disk_space_total": req["disk_space_total"],
            **({"forthcoming": True} if req.get("forthcoming") else {})}


def _allocate_one(st: _State, req: Mapping[str, Any], nodes: Any) -> None:
    what = f"allocate {req['name']}"
    if req["name"] in st.insts:
        st.err(f"{what}: instance already exists")
        return
    if not _node_list(st, nodes, req["required_nodes"], req["disk_template"], what):
        return
    inst = _new_instance(req)
    st.policy(inst, nodes[0], what)
    st.place(req["name"], inst, nodes, what)
    st.report.placed += 1


def _allocate(st: _State, req: Mapping[str, Any], result: Any) -> None:
    st.report.requested = 1
    _allocate_one(st, req, result)


def _multi(st: _State, req: Mapping[str, Any], result: Any) -> None:
    reqs = {r["name"]: r for r in req["instances"]}
    st.report.requested = len(reqs)
    if not (isinstance(result, list) and len(result) == 2
            and all(isinstance(x, list) for x in result)):
        st.err(f"multi-allocate: result is not [allocated, failed]: {result!r:.200}")
        return
    named: list[str] = []
    for entry in result[0]:
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in reqs):
            st.err(f"multi-allocate: bad allocation entry {entry!r:.200}")
            continue
        named.append(entry[0])
        _allocate_one(st, reqs[entry[0]], entry[1])
    for name in result[1]:
        if name not in reqs:
            st.err(f"multi-allocate: unknown failed instance {name!r}")
        named.append(name)
    _named_once(st, "multi-allocate", named, set(reqs))


def _relocate(st: _State, req: Mapping[str, Any], result: Any) -> None:
    st.report.requested = 1
    name = req["name"]
    what = f"relocate {name}"
    inst = st.insts.get(name)
    if inst is None:
        st.err(f"{what}: unknown instance")
        return
    if not _node_list(st, result, req["required_nodes"], "", what):
        return
    new = result[0]
    if new in req["relocate_from"] or new in inst["nodes"]:
        st.err(f"{what}: target {new} is one of the instance's nodes or relocated from")
        return
    if inst["disk_template"] in MIRRORED:
        old_sec = req["relocate_from"][0]
        nodes = [n if n != old_sec else new for n in inst["nodes"]]
    else:
        nodes = [new]
    if st.nodes[new]["group"] != st.nodes[inst["nodes"][0]]["group"]:
        st.err(f"{what}: target {new} outside the instance's group")
    _move(st, name, nodes, what)
    st.report.placed += 1


def _move(st: _State, name: str, nodes: list[str], what: str) -> None:
    inst = st.unplace(name)
    st.policy(inst, nodes[0], what)
    st.place(name, inst, nodes, what)


def _named_once(st: _State, what: str, named: list[str], wanted: set[str]) -> None:
    seen: set[str] = set()
    for name in named:
        if name in seen:
            st.err(f"{what}: instance {name} named twice")
        seen.add(name)
    for name in sorted(wanted - seen):
        st.err(f"{what}: instance {name} neither moved nor failed")


def _opcode_nodes(st: _State, name: str, jobs: list[Any], what: str) -> list[str] | None:
    """The nodes ``name`` ends on when its opcodes run in order (None: malformed)."""
    nodes = list(st.insts[name]["nodes"])
    template = st.insts[name]["disk_template"]
    for job in jobs:
        for op in job:
            if not isinstance(op, dict) or op.get("OP_ID") not in OPCODES:
                st.err(f"{what}: unknown opcode {op!r:.200}")
                return None
            if any(k not in op for k in OPCODES[op["OP_ID"]]):
                st.err(f"{what}: {op['OP_ID']} lacks {OPCODES[op['OP_ID']]}")
                return None
            if op["instance_name"] != name:
                continue
            if op["OP_ID"] == "OP_INSTANCE_REPLACE_DISKS":
                remote = op.get("remote_node")
                if op["mode"] != "replace_new_secondary" or template not in MIRRORED \
                        or not st.target_ok(remote, what) or remote == nodes[0]:
                    st.err(f"{what}: bad replace-disks {op!r:.200}")
                    return None
                nodes = [nodes[0], remote]
            elif template in MIRRORED:
                if op.get("target_node") not in (None, nodes[1]):
                    st.err(f"{what}: a mirrored instance fails over only to its secondary")
                    return None
                nodes = [nodes[1], nodes[0]]
            else:
                target = op.get("target_node")
                if not st.target_ok(target, what):
                    return None
                nodes = [target]
    return nodes


def _evacuation(st: _State, req: Mapping[str, Any], result: Any) -> None:
    kind = req["type"]
    wanted = set(req["instances"])
    st.report.requested = len(wanted)
    if not (isinstance(result, list) and len(result) == 3
            and all(isinstance(x, list) for x in result)):
        st.err(f"{kind}: result is not [moved, failed, jobs]: {result!r:.200}")
        return
    moved, failed, jobs = result
    evacuated = _evacuated_node(st, req) if kind == "node-evacuate" else None
    named: list[str] = []
    for entry in failed:
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in wanted):
            st.err(f"{kind}: bad failure entry {entry!r:.200}")
            continue
        named.append(entry[0])
    for entry in moved:
        if not (isinstance(entry, list) and len(entry) == 3 and entry[0] in wanted
                and isinstance(entry[2], list)):
            st.err(f"{kind}: bad move entry {entry!r:.200}")
            continue
        name, group, nodes = entry
        named.append(name)
        what = f"{kind} {name}"
        inst = st.insts[name]
        old = list(inst["nodes"])
        if not _node_list(st, nodes, len(old), inst["disk_template"], what,
                          frozenset(old)):
            continue
        if st.group_name(nodes[0]) != group:
            st.err(f"{what}: group {group!r} is not the nodes' group")
        if evacuated is not None:
            banned = {"primary-only": nodes[:1], "secondary-only": nodes[1:],
                      "all": nodes}[req["evac_mode"]]
            if evacuated in banned:
                st.err(f"{what}: the evacuated node {evacuated} is still used")
        if kind == "change-group":
            targets = req.get("target_groups") or []
            if st.nodes[nodes[0]]["group"] == st.nodes[old[0]]["group"]:
                st.err(f"{what}: still in its group")
            elif targets and st.nodes[nodes[0]]["group"] not in targets:
                st.err(f"{what}: moved to a group not among the targets")
        ops = [job for job in jobs if isinstance(job, list)]
        end = _opcode_nodes(st, name, ops, what)
        if end is not None and end != nodes:
            st.err(f"{what}: the opcodes lead to {end}, the answer says {nodes}")
        _move(st, name, nodes, what)
        st.report.placed += 1
    if not all(isinstance(job, list) for job in jobs):
        st.err(f"{kind}: jobs are not lists of opcodes")
    moved_names = {e[0] for e in moved if isinstance(e, list) and e}
    for job in jobs:
        for op in job if isinstance(job, list) else []:
            if isinstance(op, dict) and op.get("instance_name") not in moved_names:
                st.err(f"{kind}: an opcode for {op.get('instance_name')!r}, not moved")
    _named_once(st, kind, named, wanted)


def _evacuated_node(st: _State, req: Mapping[str, Any]) -> str | None:
    """The node a node-evacuate request empties: the one all its instances share in
    the mode's role."""
    role: Callable[[list[str]], list[str]] = {
        "primary-only": lambda n: n[:1], "secondary-only": lambda n: n[1:],
        "all": lambda n: n}[req["evac_mode"]]
    common: set[str] | None = None
    for name in req["instances"]:
        nodes = set(role(st.insts[name]["nodes"]))
        common = nodes if common is None else common & nodes
    return sorted(common)[0] if common and len(common) == 1 else None


HANDLERS: dict[str, Callable[[_State, Mapping[str, Any], Any], None]] = {
    "allocate": _allocate, "multi-allocate": _multi, "relocate": _relocate,
    "node-evacuate": _evacuation, "change-group": _evacuation,
}


def check(data: Mapping[str, Any], answer: str | Mapping[str, Any]) -> Report:
    """Check ``answer`` against the input ``data``; the report holds the after-state."""
    report = Report()
    st = _State(data, report)
    req = data["request"]
    if isinstance(answer, str):
        try:
            answer = json.loads(answer)
        except ValueError as exc:
            report.errors.append(f"answer is not JSON: {exc}")
            return report
    if not isinstance(answer, Mapping) or not isinstance(answer.get("success"), bool) \
            or not isinstance(answer.get("info"), str) or "result" not in answer:
        report.errors.append(f"answer lacks success/info/result: {answer!r:.200}")
        return report
    report.success, report.info = answer["success"], answer["info"]
    handler = HANDLERS.get(req["type"])
    if handler is None:
        report.errors.append(f"unknown request type {req['type']!r}")
        return report
    if answer["success"]:
        handler(st, req, answer["result"])
    else:
        report.requested = len(req.get("instances", [None]))
    st.data.pop("request", None)
    report.after = st.data
    if report.placed:
        report.soft = soft_violations(data, st.data)
    return report


def _n1_failing(data: Mapping[str, Any]) -> set[str]:
    """Nodes htools finds N+1 failing: free memory below what the drbd instances of
    their busiest peer need on failover (instances not offline count; reservations do
    not: htools 3.0.2 keeps them out of its N+1 figures, and hail places a real
    instance where a reservation's failover would not fit)."""
    need: dict[tuple[str, str], int] = {}
    for inst in data["instances"].values():
        nodes = inst["nodes"]
        if inst["disk_template"] in MIRRORED and len(nodes) == 2 \
                and inst.get("admin_state") != "offline" and not inst.get("forthcoming"):
            key = (nodes[1], nodes[0])
            need[key] = need.get(key, 0) + inst["memory"]
    worst: dict[str, int] = {}
    for (sec, _), mem in need.items():
        worst[sec] = max(worst.get(sec, 0), mem)
    return {n for n, mem in worst.items() if data["nodes"][n]["free_memory"] < mem}


def _vcpu_over(data: Mapping[str, Any]) -> set[str]:
    """Nodes whose primaries' vCPUs (plus the node's own) exceed the group's ratio."""
    used = {n: v.get("reserved_cpus", 0) for n, v in data["nodes"].items()}
    for inst in data["instances"].values():
        if inst.get("admin_state") != "offline":
            used[inst["nodes"][0]] += inst["vcpus"]
    over = set()
    for name, node in data["nodes"].items():
        ratio = data["nodegroups"][node["group"]]["ipolicy"]["vcpu-ratio"]
        if node.get("total_cpus") and used[name] / node["total_cpus"] > ratio:
            over.add(name)
    return over


def soft_violations(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """hail's soft rules broken between ``before`` and ``after``: online, undrained
    nodes newly failing N+1 or newly above the vCPU ratio (htools treats a drained node
    as offline and checks neither there).  hail enforces them when it allocates; its
    relocations and evacuations can break them (a failover has one possible target)."""
    live = {n for n, v in after["nodes"].items() if not v["offline"] and not v["drained"]}
    out = [f"node {n} newly N+1 failing"
           for n in sorted((_n1_failing(after) - _n1_failing(before)) & live)]
    out += [f"node {n} newly above the vCPU ratio"
            for n in sorted((_vcpu_over(after) - _vcpu_over(before)) & live)]
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.placement_check INPUT [ANSWER]``: check an answer (a file, or
    stdin) against an input file; print the broken rules; exit 1 if any hard one."""
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m tests.placement_check INPUT [ANSWER]", file=sys.stderr)
        return 2
    with open(args[0]) as fh:
        data = json.load(fh)
    if len(args) == 2:
        with open(args[1]) as fh:
            text = fh.read()
    else:
        text = sys.stdin.read()
    report = check(data, text)
    for err in report.errors:
        print(f"hard: {err}")
    for soft in report.soft:
        print(f"soft: {soft}")
    print(f"{'valid' if report.valid else 'INVALID'}: placed {report.placed}/"
          f"{report.requested}, success {report.success}")
    return 0 if report.valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
