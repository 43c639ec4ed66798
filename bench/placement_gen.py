"""Deterministic generator of iallocator v2 input files for the placement benchmark.

The clusters have the shape of issue 29: N nodes (10/40/200/1,000), about 15 primary
instances per node, 50 % drbd, 30 % plain, 20 % diskless, one node group (or two, for
change-group).  Every figure is what Ganeti 3.0's master would write for such a cluster
(``lib/masterd/iallocator.py``): ``free_memory`` is the hypervisor's free memory, i.e.
total - dom0 - the memory of the running primaries; ``i_pri_memory`` / ``i_pri_up_memory``
are the sums of the primaries' (running primaries') memory; the disk figures are the
volume group's (free = total - what the LVs of primaries and drbd secondaries use, drbd
metadata included); ``disk_space_total`` is Ganeti's ``ComputeDiskSize``.  Every instance
fits the default instance policy (hail refuses everything when one does not), and memory is
tight enough that N+1 redundancy decides where a mirrored instance may go.

``python -m bench.placement_gen [--sizes 10,40] [--out DIR]`` writes
``DIR/<nodes>/<request>.json`` (default DIR ``/tmp/placement-inputs``).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

#: Where the benchmark and the other helpers read the files from.
DEFAULT_OUT = Path("/tmp/placement-inputs")
#: Cluster sizes of the issue.
SIZES = (10, 40, 200, 1000)
#: Request kinds, each one file per size.
REQUESTS = ("allocate-drbd", "allocate-plain", "multi-allocate", "relocate",
            "evacuate-primary", "evacuate-secondary", "evacuate-all", "change-group",
            "allocate-drbd-big", "allocate-drbd-tight", "relocate-tight")
#: Suffix of the request kinds on a tight cluster: each node's memory is what its running
#: primaries and the failover of its busiest peer need, plus a random slack (MiB) in
#: ``TIGHT_SLACK`` on some nodes, so N+1 redundancy rules out many targets ...
TIGHT = "-tight"
TIGHT_SLACK = (0, 2048)
#: ... on 30 % of the nodes; the others have a slack in this range.  At 10 nodes the
#: cluster stays globally N+1 redundant as hail sees it; from 40 nodes on it is not (some
#: node's instances cannot all move elsewhere), so hail with its capacity checks refuses
#: every allocation there.  ("allocate-drbd-big", a 16 GiB drbd instance on the usual
#: cluster, is the case where local N+1 rules out targets on a redundant cluster.)
TIGHT_SPARE = (8192, 16384)

INSTANCES_PER_NODE = 15
DRBD_META = 128  # MiB of metadata per drbd disk (Ganeti's DRBD_META_SIZE)

#: Ganeti 3.0's default instance policy (constants.IPOLICY_DEFAULTS).
IPOLICY: dict[str, Any] = {
    "minmax": [{
        "min": {"memory-size": 128, "cpu-count": 1, "disk-count": 1, "disk-size": 1024,
                "nic-count": 1, "spindle-use": 1},
        "max": {"memory-size": 32768, "cpu-count": 8, "disk-count": 16,
                "disk-size": 1048576, "nic-count": 8, "spindle-use": 12},
    }],
    "std": {"memory-size": 128, "cpu-count": 1, "disk-count": 1, "disk-size": 1024,
            "nic-count": 1, "spindle-use": 1},
    "disk-templates": ["blockdev", "diskless", "drbd", "ext", "file", "gluster", "plain",
                       "rbd", "sharedfile"],
    "vcpu-ratio": 4.0,
    "spindle-ratio": 32.0,
}

NDPARAMS = {"cpu_speed": 1, "exclusive_storage": False, "oob_program": "", "ovs": False,
            "ovs_link": "", "ovs_name": "switch1", "spindle_count": 1, "ssh_port": 22}

#: Node models: (total memory MiB, dom0 memory MiB, VG size MiB, CPUs), with weights.
NODE_KINDS = ((65536, 2048, 1536 * 1024, 32), (98304, 2048, 2048 * 1024, 48))
NODE_WEIGHTS = (3, 1)
#: Instance memory sizes (MiB) and weights: mean about 3 GiB.
MEMORY = (512, 1024, 2048, 4096, 8192)
MEMORY_WEIGHTS = (2, 4, 5, 5, 2)
DISK_SIZES = (10240, 20480, 51200, 102400)
DISK_WEIGHTS = (5, 4, 2, 1)
TEMPLATE_SHARE = (("drbd", 50), ("plain", 30), ("diskless", 20))
#: Memory kept free on each node when filling it: the N+1 headroom.
HEADROOM = 0.16


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _mac(rng: random.Random) -> str:
    a, b, c = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    return f"aa:00:00:{a:02x}:{b:02x}:{c:02x}"


def disk_space(template: str, disks: list[dict[str, Any]]) -> int:
    """Ganeti's ComputeDiskSize: what the instance's LVs take on each of its nodes."""
    if template == "drbd":
        return sum(d["size"] + DRBD_META for d in disks)
    if template in ("plain", "file", "sharedfile", "blockdev", "rbd", "ext", "gluster"):
        return sum(d["size"] for d in disks)
    return 0


def _disks(rng: random.Random, template: str) -> list[dict[str, Any]]:
    if template == "diskless":
        return []
    count = rng.choices((1, 2, 3), (6, 3, 1))[0]
    return [{"dev_type": template, "size": rng.choices(DISK_SIZES, DISK_WEIGHTS)[0],
             "mode": "rw", "spindles": None} for _ in range(count)]


def _nics(rng: random.Random) -> list[dict[str, Any]]:
    return [{"mac": _mac(rng), "ip": None, "mode": "bridged", "link": "xen-br0",
             "bridge": "xen-br0"}]


def _group(name: str) -> dict[str, Any]:
    return {"name": name, "alloc_policy": "preferred", "networks": [],
            "ipolicy": copy.deepcopy(IPOLICY), "tags": []}


def _templates(rng: random.Random, count: int) -> list[str]:
    out: list[str] = []
    for template, share in TEMPLATE_SHARE:
        out += [template] * (count * share // 100)
    out += ["diskless"] * (count - len(out))
    rng.shuffle(out)
    return out


def _pick_secondary(rng: random.Random, peers: list[str], pnode: str,
                    sec_mem: dict[tuple[str, str], int], sec_total: dict[str, int]) -> str:
    """A drbd secondary for ``pnode``: of a few random peers, the one holding the least
    memory of ``pnode``'s mirrors (then the least of all mirrors), so a failover never
    needs much more than one instance's memory on any node, as an operator keeps it."""
    sample = rng.sample(peers, min(12, len(peers)))
    return min(sample, key=lambda n: (sec_mem.get((n, pnode), 0), sec_total[n]))


def _n1_victims(instances: dict[str, dict[str, Any]], free: dict[str, int]) -> list[str]:
    """Mirrored instances to leave out so that every node is N+1 happy as htools sees it
    (its free memory at least the memory of the mirrors of its busiest peer)."""
    by_pair: dict[tuple[str, str], list[str]] = {}
    for name, inst in instances.items():
        if inst["disk_template"] == "drbd":
            by_pair.setdefault((inst["nodes"][1], inst["nodes"][0]), []).append(name)
    victims = []
    for snode in sorted(free):
        while True:
            pairs = {p: sum(instances[i]["memory"] for i in names)
                     for (s, p), names in by_pair.items() if s == snode and names}
            if not pairs:
                break
            peer = max(sorted(pairs), key=lambda p: pairs[p])
            if free[snode] >= pairs[peer]:
                break
            names = by_pair[(snode, peer)]
            victim = max(names, key=lambda i: (instances[i]["memory"], i))
            names.remove(victim)
            victims.append(victim)
            if instances[victim]["admin_state"] == "up":
                free[peer] += instances[victim]["memory"]
    return victims


def _tighten(spec: dict[str, tuple[int, int, int, int]], instances: dict[str, Any],
             mem_used: dict[str, int], rng: random.Random
             ) -> dict[str, tuple[int, int, int, int]]:
    """Node models whose memory is dom0 + running primaries + the memory the drbd
    instances of the busiest peer need on failover + a slack (MiB, 512 steps)."""
    need: dict[tuple[str, str], int] = {}
    for inst in instances.values():
        if inst["disk_template"] == "drbd":
            key = (inst["nodes"][1], inst["nodes"][0])
            need[key] = need.get(key, 0) + inst["memory"]
    worst = dict.fromkeys(spec, 0)
    for (sec, _), mem in need.items():
        worst[sec] = max(worst[sec], mem)
    out = {}
    for n, (_, dom0, vg, cpus) in spec.items():
        low, high = TIGHT_SLACK if rng.random() < 0.3 else TIGHT_SPARE
        slack = rng.randrange(low, high + 1, 512)
        out[n] = (dom0 + mem_used[n] + worst[n] + slack, dom0, vg, cpus)
    return out


def make_cluster(nodes: int, groups: int = 1, seed: int = 29,
                 per_node: int = INSTANCES_PER_NODE,
                 fill_groups: int | None = None, tight: bool = False) -> dict[str, Any]:
    """An iallocator input (without request) of ``nodes`` nodes in ``groups`` groups.

    Instances are placed in the first ``fill_groups`` groups (default: all); a drbd
    instance's secondary is in its primary's group.  Nodes are filled to leave
    ``HEADROOM`` of their memory free, so a node's free memory is about what one of its
    peers' mirrored instances need on failover; ``tight`` sizes each node's memory to
    that need plus a slack of ``TIGHT_SLACK``."""
    rng = random.Random(f"{seed}/{nodes}/{groups}/{per_node}")
    gids = [_uuid(rng) for _ in range(groups)]
    gnames = ["default"] + [f"group{i + 1}" for i in range(1, groups)]
    fill = groups if fill_groups is None else fill_groups
    node_names = [f"node{i + 1:04d}.example.com" for i in range(nodes)]
    node_group = {n: gids[i * groups // nodes] for i, n in enumerate(node_names)}
    spec = {n: rng.choices(NODE_KINDS, NODE_WEIGHTS)[0] for n in node_names}
    mem_used = dict.fromkeys(node_names, 0)      # running primaries
    mem_all = dict.fromkeys(node_names, 0)       # all primaries
    disk_used = dict.fromkeys(node_names, 0)
    cpu_used = dict.fromkeys(node_names, 0)
    sec_mem: dict[tuple[str, str], int] = {}    # (secondary, primary) -> memory
    sec_total = dict.fromkeys(node_names, 0)
    instances: dict[str, dict[str, Any]] = {}
    by_group = {g: [n for n in node_names if node_group[n] == g] for g in gids}
    filled = [n for n in node_names if node_group[n] in gids[:fill]]
    templates = _templates(rng, per_node * len(filled))
    serial = 0
    for k, template in enumerate(templates):
        pnode = filled[k % len(filled)]
        peers = [n for n in by_group[node_group[pnode]] if n != pnode]
        total_mem, dom0, vg, cpus = spec[pnode]
        budget = int(total_mem * (1 - HEADROOM)) - dom0 - mem_all[pnode]
        mem = rng.choices(MEMORY, MEMORY_WEIGHTS)[0]
        while mem > budget and mem > MEMORY[0]:
            mem //= 2
        if mem > budget:
            continue
        disks = _disks(rng, template)
        dsk = disk_space(template, disks)
        nodes_of = [pnode]
        if template == "drbd":
            if not peers:
                continue
            snode = _pick_secondary(rng, peers, pnode, sec_mem, sec_total)
            if disk_used[snode] + dsk > spec[snode][2] * 0.85:
                continue
            nodes_of.append(snode)
        if disk_used[pnode] + dsk > vg * 0.85:
            continue
        up = rng.random() < 0.9
        vcpus = rng.choices((1, 2, 4, 8), (4, 4, 2, 1))[0]
        serial += 1
        name = f"inst{serial:05d}.example.com"
        instances[name] = {
            "tags": [], "admin_state": "up" if up else "down", "vcpus": vcpus,
            "memory": mem, "spindle_use": 1, "os": "debootstrap+default",
            "nodes": nodes_of, "nics": _nics(rng), "disks": disks,
            "disk_template": template, "disks_active": up, "hypervisor": "xen-pvm",
            "disk_space_total": dsk,
        }
        mem_all[pnode] += mem
        if up:
            mem_used[pnode] += mem
        cpu_used[pnode] += vcpus
        for n in nodes_of:
            disk_used[n] += dsk
        if template == "drbd":
            key = (nodes_of[1], pnode)
            sec_mem[key] = sec_mem.get(key, 0) + mem
            sec_total[nodes_of[1]] += mem
    for name in _n1_victims(instances, {n: spec[n][0] - spec[n][1] - mem_used[n]
                                        for n in node_names}):
        inst = instances.pop(name)
        pnode = inst["nodes"][0]
        mem_all[pnode] -= inst["memory"]
        if inst["admin_state"] == "up":
            mem_used[pnode] -= inst["memory"]
        for n in inst["nodes"]:
            disk_used[n] -= inst["disk_space_total"]
    if tight:
        spec = _tighten(spec, instances, mem_used, random.Random(f"{seed}/tight/{nodes}"))
    node_data: dict[str, dict[str, Any]] = {}
    for i, n in enumerate(node_names):
        total_mem, dom0, vg, cpus = spec[n]
        node_data[n] = {
            "total_memory": total_mem, "reserved_memory": dom0,
            "free_memory": total_mem - dom0 - mem_used[n],
            "total_disk": vg, "free_disk": vg - disk_used[n],
            "total_spindles": 0, "free_spindles": 0,
            "total_cpus": cpus, "reserved_cpus": 1,
            "i_pri_memory": mem_all[n], "i_pri_up_memory": mem_used[n],
            "tags": [], "primary_ip": f"192.0.{2 + i // 250}.{1 + i % 250}",
            "secondary_ip": f"198.51.{100 + i // 250}.{1 + i % 250}",
            "offline": False, "drained": False, "master_candidate": i < 10,
            "group": node_group[n], "master_capable": True, "vm_capable": True,
            "ndparams": dict(NDPARAMS),
        }
    return {
        "version": 2, "cluster_name": f"cluster{nodes}.example.com", "cluster_tags": [],
        "enabled_hypervisors": ["xen-pvm"], "ipolicy": copy.deepcopy(IPOLICY),
        "nodegroups": {g: _group(name) for g, name in zip(gids, gnames, strict=True)},
        "nodes": node_data, "instances": instances,
    }


def alloc_request(name: str, template: str, memory: int, vcpus: int,
                  disk_sizes: list[int]) -> dict[str, Any]:
    """An allocate request as Ganeti's IAReqInstanceAlloc writes it (``type`` aside)."""
    disks = [{"size": s, "mode": "rw", "dev_type": template} for s in disk_sizes]
    return {"name": name, "disk_template": template, "group_name": None, "tags": [],
            "os": "debootstrap+default", "vcpus": vcpus, "memory": memory,
            "spindle_use": 1, "disks": disks, "disk_space_total": disk_space(template, disks),
            "nics": [{"mac": "00:11:22:33:44:55", "ip": None, "mode": "bridged",
                      "link": "xen-br0", "bridge": "xen-br0"}],
            "required_nodes": 2 if template == "drbd" else 1, "hypervisor": "xen-pvm"}


def _instances_of(cluster: dict[str, Any], node: str, mode: str) -> list[str]:
    """Ganeti's node-evacuate instance list for ``mode`` (sorted by name)."""
    out = []
    for name, inst in cluster["instances"].items():
        nodes = inst["nodes"]
        if mode in ("primary-only", "all") and nodes[0] == node:
            out.append(name)
        elif mode in ("secondary-only", "all") and node in nodes[1:]:
            out.append(name)
    return sorted(out)


def _busiest(cluster: dict[str, Any]) -> str:
    """The first node holding both primaries and drbd secondaries (deterministic)."""
    for node in sorted(cluster["nodes"]):
        if _instances_of(cluster, node, "primary-only") and \
                _instances_of(cluster, node, "secondary-only"):
            return node
    return sorted(cluster["nodes"])[0]


def make_request(cluster: dict[str, Any], kind: str, seed: int = 29) -> dict[str, Any]:
    """The ``request`` dict of ``kind`` for ``cluster`` (see REQUESTS)."""
    kind = kind.removesuffix(TIGHT)
    rng = random.Random(f"{seed}/{kind}/{len(cluster['nodes'])}")
    if kind == "allocate-drbd":
        return {**alloc_request("new-drbd.example.com", "drbd", 4096, 2, [20480]),
                "type": "allocate"}
    if kind == "allocate-drbd-big":
        return {**alloc_request("new-big.example.com", "drbd", 16384, 4, [51200]),
                "type": "allocate"}
    if kind == "allocate-plain":
        return {**alloc_request("new-plain.example.com", "plain", 4096, 2, [20480]),
                "type": "allocate"}
    if kind == "multi-allocate":
        reqs = []
        for i, template in enumerate(_templates(rng, 50)):
            disk_sizes = [] if template == "diskless" else [rng.choice((10240, 20480))]
            reqs.append(alloc_request(f"multi{i:02d}.example.com", template,
                                      rng.choice((2048, 4096, 8192)), 2, disk_sizes))
        return {"instances": reqs, "type": "multi-allocate"}
    if kind == "relocate":
        drbd = sorted(n for n, i in cluster["instances"].items()
                      if i["disk_template"] == "drbd")
        name = rng.choice(drbd)
        inst = cluster["instances"][name]
        return {"name": name, "disk_space_total": inst["disk_space_total"],
                "required_nodes": 1, "relocate_from": [inst["nodes"][1]], "type": "relocate"}
    if kind.startswith("evacuate-"):
        mode = {"evacuate-primary": "primary-only", "evacuate-secondary": "secondary-only",
                "evacuate-all": "all"}[kind]
        node = _busiest(cluster)
        return {"instances": _instances_of(cluster, node, mode), "evac_mode": mode,
                "type": "node-evacuate"}
    if kind == "change-group":
        first = next(u for u, g in cluster["nodegroups"].items() if g["name"] == "default")
        movable = sorted(n for n, i in cluster["instances"].items()
                         if cluster["nodes"][i["nodes"][0]]["group"] == first
                         and i["disk_template"] in ("drbd", "diskless"))
        return {"instances": sorted(rng.sample(movable, min(5, len(movable)))),
                "target_groups": [], "type": "change-group"}
    raise ValueError(f"unknown request kind {kind!r}")


def make_input(nodes: int, kind: str, seed: int = 29) -> dict[str, Any]:
    """A whole input file's dict: the cluster for ``kind`` (two groups, the second
    empty, for change-group) and its request."""
    if kind == "change-group":
        cluster = make_cluster(nodes, groups=2, seed=seed, fill_groups=1)
    elif kind.endswith(TIGHT):
        cluster = make_cluster(nodes, seed=seed, tight=True)
    else:
        cluster = make_cluster(nodes, seed=seed)
    cluster["request"] = make_request(cluster, kind, seed)
    return cluster


def write_inputs(sizes: list[int], kinds: list[str], out: Path = DEFAULT_OUT,
                 seed: int = 29) -> list[Path]:
    """Write ``out/<nodes>/<kind>.json`` for every size and kind; the paths written."""
    written = []
    for size in sizes:
        (out / str(size)).mkdir(parents=True, exist_ok=True)
        base = make_cluster(size, seed=seed)
        for kind in kinds:
            if kind == "change-group" or kind.endswith(TIGHT):
                data = make_input(size, kind, seed)
            else:
                data = dict(base)
                data["request"] = make_request(base, kind, seed)
            path = out / str(size) / f"{kind}.json"
            path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Write the input files; print their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--requests", default=",".join(REQUESTS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=29)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    for path in write_inputs(sizes, args.requests.split(","), args.out, args.seed):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
