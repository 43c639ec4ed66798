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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.cli import daemons
from ganeti.core import config as configmod
from ganeti.core import configjournal, constants
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient
from tests.fakes.configs import grow
from tests.integration.helpers import free_ip_base, rss, run
from tests.integration.jobtools import wait_for_job

MASTER = "node1.vcluster.test"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VCLUSTER = [sys.executable, os.path.join(ROOT, "bin", "ganeti-vcluster")]


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
