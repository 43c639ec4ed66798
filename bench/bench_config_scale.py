"""Config-changing jobs and masterd start-up on large configs (issue 15's acceptance).

For each size (the small config of a fresh cluster, then 1,000 / 5,000 /
20,000 instances; 20,000 with 1,000 nodes) this creates a real 3-node
virtual cluster, grows the master's ``config.data`` (extra nodes offline;
plain, drbd (with children), file and diskless disks; one NIC each), starts
it, times masterd's start-up (process start until LUXI answers), then
submits OP_TAGS_SET on the cluster ``--jobs`` times one after the other
through LUXI and reports the end-to-end p50/p95 (durable and replicated to
the two other candidates), and masterd's RSS.  One line per size, with
ratios against the small config.

Run: .venv/bin/python bench/bench_config_scale.py [--quick] [--jobs N] [--sizes 0,1000,...]
(--quick: the small config and 20,000 only.)  Never part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid as uuidmod

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.cli import daemons
from ganeti.core import config as configmod
from ganeti.core import configjournal, constants
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient
from tests.integration.helpers import free_ip_base, rss, run
from tests.integration.jobtools import wait_for_job

MASTER = "node1.vcluster.test"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VCLUSTER = [sys.executable, os.path.join(ROOT, "bin", "ganeti-vcluster")]
DISK_KINDS = ("plain", "drbd", "file", "diskless")


def _uuid(kind: int, i: int) -> str:
    return str(uuidmod.UUID(int=(kind << 96) | i, version=4))


def grow(d: dict, instances: int, nodes: int) -> dict:
    """Add offline nodes and instances (in Ganeti 3.0's format) to a config dict."""
    group = next(iter(d["nodegroups"]))
    template = d["nodes"][d["cluster"]["master_node"]]
    node_ids = list(d["nodes"])
    for i in range(max(0, nodes - len(node_ids))):
        u = _uuid(1, i)
        d["nodes"][u] = dict(template, uuid=u, name=f"extra{i}.vcluster.test",
                             primary_ip=f"127.9.{i // 250}.{i % 250 + 1}", secondary_ip=None,
                             master_candidate=False, offline=True, tags=[])
        d["nodegroups"][group]["members"].append(u)
        node_ids.append(u)
    port = 11000
    minors: dict[str, int] = {}
    for i in range(instances):
        iu = _uuid(2, i)
        primary = node_ids[i % len(node_ids)]
        secondary = node_ids[(i + 1) % len(node_ids)]
        kind = DISK_KINDS[i % len(DISK_KINDS)]
        disks = []
        if kind != "diskless":
            du = _uuid(3, i)
            disk = {"uuid": du, "name": "disk0", "iv_name": "disk/0", "size": 10240,
                    "mode": "rw", "params": {}, "children": [], "nodes": [primary],
                    "serial_no": 1, "ctime": 1.0, "mtime": 1.0, "dev_type": kind}
            if kind == "plain":
                disk["logical_id"] = ["xenvg", f"{iu}.disk0"]
            elif kind == "file":
                disk["logical_id"] = ["loop", f"/srv/ganeti/file-storage/{iu}/disk0"]
            else:
                port += 1
                ma, mb = minors.get(primary, 0), minors.get(secondary, 0)
                minors[primary], minors[secondary] = ma + 1, mb + 1
                disk["nodes"] = [primary, secondary]
                disk["logical_id"] = [primary, secondary, port, ma, mb, f"secret{i}"]
                disk["children"] = [
                    {"dev_type": "plain", "logical_id": ["xenvg", f"{iu}.disk0_data"],
                     "size": 10240, "mode": "rw", "params": {}, "children": [],
                     "nodes": [primary, secondary], "iv_name": "", "serial_no": 1,
                     "ctime": 1.0, "mtime": 1.0},
                    {"dev_type": "plain", "logical_id": ["xenvg", f"{iu}.disk0_meta"],
                     "size": 128, "mode": "rw", "params": {}, "children": [],
                     "nodes": [primary, secondary], "iv_name": "", "serial_no": 1,
                     "ctime": 1.0, "mtime": 1.0}]
            d["disks"][du] = disk
            disks.append(du)
        port += 1
        d["instances"][iu] = {
            "uuid": iu, "name": f"inst{i}.vcluster.test", "primary_node": primary,
            "secondary_nodes": [secondary] if kind == "drbd" else [],
            "os": "debootstrap+default", "hypervisor": "fake", "hvparams": {},
            "beparams": {"maxmem": 1024}, "osparams": {}, "osparams_private": {},
            "admin_state": "up", "admin_state_source": "admin",
            "nics": [{"uuid": _uuid(4, i), "mac": "aa:00:" + ":".join(
                f"{(i >> shift) & 255:02x}" for shift in (24, 16, 8, 0)),
                "nicparams": {"mode": "bridged", "link": "br0", "vlan": ""}}],
            "disks": disks, "disk_template": kind, "disks_active": True, "network_port": port,
            "serial_no": 1, "ctime": 1.0, "mtime": 1.0, "tags": []}
    d["cluster"]["highest_used_port"] = max(d["cluster"].get("highest_used_port", 0), port)
    enabled = d["cluster"].setdefault("enabled_disk_templates", [])
    for kind in DISK_KINDS:
        if kind not in enabled:
            enabled.append(kind)
    d["serial_no"] += 1000  # the candidates' copies are older: they get the whole file
    return d


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def measure(size: int, jobs: int, workdir: str, keep: bool = False) -> dict:
    directory = os.path.join(workdir, f"vc{size}")
    base = free_ip_base(3)
    run([*VCLUSTER, "create", directory, "--nodes", "3", "--ip-base", base], timeout=300)
    try:
        paths = Paths.for_node(os.path.join(directory, MASTER), MASTER)
        with open(paths.config_file, encoding="utf-8") as f:
            d = json.load(f)
        if size:
            nodes = 1000 if size >= 20000 else 100
            grow(d, size, nodes)
            cfg = configmod.parse(d)
            problems = configmod.verify(cfg)
            if problems:
                raise SystemExit("generated config is inconsistent: " + "; ".join(problems[:5]))
            with open(paths.config_file, "w", encoding="utf-8") as f:
                f.write(configmod.dump(cfg))
            if os.path.exists(configjournal.journal_path(paths.config_file)):
                os.unlink(configjournal.journal_path(paths.config_file))
        text_mb = os.path.getsize(paths.config_file) / 1e6
        run([*VCLUSTER, "start", directory], timeout=600)
        # time masterd alone: stop it, start it again (the node daemons keep running)
        daemons.stop(paths, constants.MASTERD)
        start = time.perf_counter()
        run([*VCLUSTER, "start", directory], timeout=600)
        startup = time.perf_counter() - start
        times = []
        with LuxiClient(paths.luxi_socket, timeout=120.0) as client:
            for i in range(jobs + 3):
                t0 = time.perf_counter()
                job = client.call("SubmitJob", [{"OP_ID": "OP_TAGS_SET", "kind": "cluster",
                                                 "tags": [f"bench{i}"]}])
                status = wait_for_job(client, int(job), timeout=120)
                if status != "success":
                    raise SystemExit(f"job {job} ended {status}")
                if i >= 3:  # the first jobs give the candidates the whole file
                    times.append(time.perf_counter() - t0)
        pid = daemons.read_pid(paths.pid_file(constants.MASTERD))
        mem = rss(pid) / 1e6 if pid else float("nan")
        # a candidate's copy really follows
        other = Paths.for_node(os.path.join(directory, "node2.vcluster.test"),
                               "node2.vcluster.test")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                node_cfg = configmod.load_file(other.config_file, check=False)
            except Exception:
                node_cfg = None
            if node_cfg is not None and f"bench{jobs + 2}" in node_cfg.cluster.tags:
                break
            time.sleep(0.2)
        else:
            raise SystemExit("the candidate's config.data did not follow")
        return {"size": size, "mb": text_mb, "start": startup, "p50": _pct(times, 0.5),
                "p95": _pct(times, 0.95), "rss": mem}
    finally:
        if keep:
            print(f"kept the cluster: {directory}")
        else:
            run([*VCLUSTER, "destroy", directory], timeout=300, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small config and 20,000 only")
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--sizes", default=None, help="comma-separated instance counts")
    parser.add_argument("--keep", action="store_true",
                        help="leave the clusters running (destroy them with ganeti-vcluster)")
    args = parser.parse_args()
    sizes = [0, 20000] if args.quick else [0, 1000, 5000, 20000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    workdir = tempfile.mkdtemp(prefix="bench-config-scale-")
    try:
        results = [measure(size, args.jobs, workdir, args.keep) for size in sizes]
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    small = results[0]
    for r in results:
        label = "small config" if r["size"] == 0 else f"{r['size']} instances"
        print(f"config scale: {label:>16} ({r['mb']:5.1f} MB): masterd start {r['start']:.2f} s "
              f"(x{r['start'] / small['start']:.1f}); OP_TAGS_SET p50 "
              f"{r['p50'] * 1000:.0f} ms (x{r['p50'] / small['p50']:.1f}), p95 "
              f"{r['p95'] * 1000:.0f} ms; masterd RSS {r['rss']:.0f} MB")


if __name__ == "__main__":
    main()
