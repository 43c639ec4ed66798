"""htools as the independent scorer: an iallocator input as htools' text backend, scored
by Debian's ``hinfo`` 3.0.2.

Why not ``hinfo -I INPUT``: in htools 3.0.2 the iallocator backend already merges the
instances into the nodes (``IAlloc.parseData`` calls ``mergeData``) and
``ExtLoader.loadExternalData`` merges them a second time, so ``hinfo``/``hbal``/``hspace``
with ``-I`` see every instance twice (twice the primaries, i_mem, secondaries) and print
the score of that doubled cluster; only ``hail`` reads the file once.  The text backend
(``-t FILE``) is merged once, so ``hinfo -t`` prints the score hail itself computes.

The conversion follows ``Backend/Text.hs`` (serializeNode/serializeInstance) and what
``Backend/IAlloc.hs`` makes of the input: spindles from ``ndparams.spindle_count``
unless exclusive storage, ``reserved_cpus`` as the node's CPUs, auto-balance on, the
run state from ``admin_state``.  Nothing here imports ganeti.core.placement.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HINFO = "/usr/bin/hinfo"
_STATUS = {"up": "running", "down": "ADMIN_down", "offline": "ADMIN_offline"}
_SPEC = ("memory-size", "cpu-count", "disk-size", "disk-count", "nic-count", "spindle-use")


def _spec(spec: Mapping[str, Any]) -> str:
    return ",".join(str(int(spec[k])) for k in _SPEC)


def _ipolicy(owner: str, pol: Mapping[str, Any]) -> str:
    minmax = ";".join(f"{_spec(mm['min'])};{_spec(mm['max'])}" for mm in pol["minmax"])
    return "|".join([owner, _spec(pol["std"]), minmax, ",".join(pol["disk-templates"]),
                     repr(float(pol["vcpu-ratio"])), repr(float(pol["spindle-ratio"]))])


def _node_line(name: str, n: Mapping[str, Any]) -> str:
    nd = n.get("ndparams", {})
    excl = bool(nd.get("exclusive_storage", False))
    live = not n["offline"] and n.get("vm_capable", True)
    spindles = n.get("total_spindles", 0) if excl else nd.get("spindle_count", 1)
    flag = "Y" if (not live or n["drained"]) else "N"
    fig = (lambda k: n[k]) if live else (lambda k: 0)
    return "|".join(str(x) for x in (
        name, fig("total_memory"), fig("reserved_memory"), fig("free_memory"),
        fig("total_disk"), fig("free_disk"), fig("total_cpus"), flag, n["group"],
        spindles if live or not excl else 0, ",".join(n.get("tags", [])),
        "Y" if excl else "N", fig("free_spindles") if excl or live else 0,
        fig("reserved_cpus"), float(nd.get("cpu_speed", 1))))


def _instance_line(name: str, i: Mapping[str, Any]) -> str:
    nodes = i["nodes"]
    spindles = [d.get("spindles") for d in i.get("disks", [])]
    # htools' getTotalSpindles: unknown when a disk's is; 0 without disks (what the
    # iallocator backend makes of a diskless instance, which matters for a forthcoming
    # one on exclusive storage: "-" there would count as -1 free spindles)
    spn = "-" if any(s is None for s in spindles) else str(sum(spindles))
    return "|".join(str(x) for x in (
        name, i["memory"], i["disk_space_total"], i["vcpus"],
        _STATUS.get(i.get("admin_state", "up"), "running"), "Y", nodes[0],
        nodes[1] if len(nodes) > 1 else "", i["disk_template"],
        ",".join(i.get("tags", [])), i["spindle_use"], spn,
        "Y" if i.get("forthcoming") else "N"))


def to_text(data: Mapping[str, Any]) -> str:
    """The cluster of an iallocator input in htools' text-backend format."""
    groups = [f"{g['name']}|{uuid}|{g['alloc_policy']}|{','.join(g.get('tags', []))}|"
              f"{','.join(g.get('networks', []))}" for uuid, g in data["nodegroups"].items()]
    nodes = [_node_line(n, v) for n, v in data["nodes"].items()]
    insts = [_instance_line(n, v) for n, v in data["instances"].items()]
    pols = [_ipolicy("", data["ipolicy"])] + [
        _ipolicy(g["name"], g["ipolicy"]) for g in data["nodegroups"].values()]
    sections = ["\n".join(groups), "\n".join(nodes), "\n".join(insts),
                "\n".join(data.get("cluster_tags", [])), "\n".join(pols)]
    return "\n\n".join(sections) + "\n"


def hinfo(data: Mapping[str, Any], timeout: float = 300.0) -> str:
    """``hinfo -t`` on the text form of ``data``: its whole output."""
    with tempfile.TemporaryDirectory(prefix="placement-hinfo-") as tmp:
        path = Path(tmp) / "cluster.txt"
        path.write_text(to_text(data))
        proc = subprocess.run([HINFO, "-t", str(path)], capture_output=True, text=True,
                              timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"hinfo failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout + proc.stderr


def score(data: Mapping[str, Any], timeout: float = 300.0) -> float:
    """htools 3.0.2's cluster score of the cluster in ``data``."""
    match = re.search(r"Cluster score: ([0-9.eE+-]+)", hinfo(data, timeout))
    if match is None:
        raise RuntimeError("hinfo printed no cluster score")
    return float(match.group(1))


def warnings(data: Mapping[str, Any], timeout: float = 300.0) -> list[str]:
    """htools' data-consistency warnings ("node X is missing ...") for ``data``."""
    return re.findall(r"node \S+ is missing [^\n]*", hinfo(data, timeout))


def n1_happy(data: Mapping[str, Any], timeout: float = 300.0) -> bool:
    """Whether htools finds the cluster N+1 happy."""
    return "Cluster is N+1 happy" in hinfo(data, timeout)
