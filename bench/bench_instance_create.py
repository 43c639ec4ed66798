"""Instance creation on the fake hypervisor, end to end (issue 16's scale acceptance).

A real 3-node virtual cluster (ganeti-vcluster: masterd, noded per node, fake
hypervisor) is created; through LUXI this then

1. times OP_TAGS_SET jobs (the baseline: a durable, replicated config change),
2. times single OP_INSTANCE_CREATE jobs one after the other (submit until the job
   is final): diskless, started, no OS install, round-robin over the nodes;
   with ``--os`` also a ``file`` disk with our busybox OS installed and started,
3. submits ``--parallel`` creations at once (one job each, SubmitManyJobs) and
   reports how many complete per second.

Figures are printed with ratios against the baseline of the same run.

Run: .venv/bin/python bench/bench_instance_create.py [--jobs 30] [--parallel 1000] [--os]
     [--profile masterd.txt]  (py-spy samples of ganeti-masterd in the parallel phase)
Never part of the test run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient
from tests.integration.helpers import free_ip_base, run
from tests.integration.jobtools import wait_for_job

DOMAIN = "vcluster.test"
MASTER = f"node1.{DOMAIN}"
NODES = [f"node{k}.{DOMAIN}" for k in (1, 2, 3)]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VCLUSTER = [sys.executable, os.path.join(ROOT, "bin", "ganeti-vcluster")]


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def create_op(name: str, node: str, with_os: bool = False) -> dict:
    op = {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
          "pnode": node, "os_type": "busybox", "nics": [{}], "name_check": False,
          "ip_check": False, "beparams": {"maxmem": 128, "minmem": 128}, "start": True}
    if with_os:
        op.update(disk_template="file", disks=[{"size": 1024}])
    else:
        op.update(disk_template="diskless", disks=[], no_install=True, start=False)
    return op


def timed_jobs(client: LuxiClient, ops: list[dict]) -> list[float]:
    times = []
    for op in ops:
        t0 = time.perf_counter()
        job = int(client.call("SubmitJob", [op]))
        status = wait_for_job(client, job, timeout=300)
        if status != "success":
            result = client.call("QueryJobs", [job], ["opresult"])[0][0]
            raise SystemExit(f"job {job} ({op['OP_ID']}) ended {status}: {result}")
        times.append(time.perf_counter() - t0)
    return times


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parallel(client: LuxiClient, count: int, profile: str | None = None,
             masterd_pid: int = 0) -> tuple[float, int, float]:
    ops = [[create_op(f"par{i}.{DOMAIN}", NODES[i % 3])] for i in range(count)]
    spy = None
    if profile:
        spy = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "py-spy"),
                                "record", "-o", profile, "-p", str(masterd_pid), "-r", "100",
                                "-f", "raw" if not profile.endswith(".svg") else "flamegraph"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # let py-spy attach
    cpu0 = cpu_seconds(masterd_pid)
    t0 = time.perf_counter()
    answers = client.call("SubmitManyJobs", ops)
    ids = [int(a[1]) for a in answers if a[0]]
    failed = count - len(ids)
    # one status query for all jobs now and then: waiting on each job in turn would
    # cost the client more CPU than the master spends (two cores are shared)
    pending = set(ids)
    deadline = time.monotonic() + 600
    while pending and time.monotonic() < deadline:
        time.sleep(0.2)
        batch = sorted(pending)
        for job, (status,) in zip(batch, client.call("QueryJobs", batch, ["status"]),
                                  strict=True):
            if status in ("success", "error", "canceled"):
                pending.discard(job)
                failed += status != "success"
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(masterd_pid) - cpu0
    if spy is not None:
        spy.send_signal(2)
        spy.wait(timeout=60)
    return elapsed, failed + len(pending), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=30, help="sequential jobs per kind")
    parser.add_argument("--parallel", type=int, default=1000)
    parser.add_argument("--os", action="store_true",
                        help="also time creations with a file disk and the busybox OS")
    parser.add_argument("--profile", help="py-spy samples of ganeti-masterd during the "
                        "parallel phase (raw collapsed stacks, or a flame graph if .svg)")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-instance-create-")
    directory = os.path.join(workdir, "vc")
    run([*VCLUSTER, "create", directory, "--nodes", "3", "--ip-base", free_ip_base(3)],
        timeout=300)
    try:
        run([*VCLUSTER, "start", directory], timeout=600)
        paths = Paths.for_node(os.path.join(directory, MASTER), MASTER)
        with LuxiClient(paths.luxi_socket, timeout=300.0) as client:
            timed_jobs(client, [{"OP_ID": "OP_TAGS_SET", "kind": "cluster",
                                 "tags": [f"warm{i}"]} for i in range(3)])
            base = timed_jobs(client, [{"OP_ID": "OP_TAGS_SET", "kind": "cluster",
                                        "tags": [f"bench{i}"]} for i in range(args.jobs)])
            diskless = timed_jobs(client, [create_op(f"seq{i}.{DOMAIN}", NODES[i % 3])
                                           for i in range(args.jobs)])
            with_os = (timed_jobs(client, [create_op(f"os{i}.{DOMAIN}", NODES[i % 3], True)
                                           for i in range(max(3, args.jobs // 3))])
                       if args.os else [])
            with open(os.path.join(paths.run_dir, "ganeti-masterd.pid")) as pid_file:
                masterd_pid = int(pid_file.read().split()[0])
            elapsed, failed, cpu = parallel(client, args.parallel, args.profile, masterd_pid)
        b50 = _pct(base, 0.5)
        print(f"baseline OP_TAGS_SET: p50 {b50 * 1000:.0f} ms, p95 "
              f"{_pct(base, 0.95) * 1000:.0f} ms")
        d50 = _pct(diskless, 0.5)
        print(f"instance create (diskless, fake hypervisor): p50 {d50 * 1000:.0f} ms "
              f"(x{d50 / b50:.1f} the baseline), p95 {_pct(diskless, 0.95) * 1000:.0f} ms")
        if with_os:
            o50 = _pct(with_os, 0.5)
            print(f"instance create (file disk, busybox OS installed, started): p50 "
                  f"{o50 * 1000:.0f} ms (x{o50 / b50:.1f}), p95 "
                  f"{_pct(with_os, 0.95) * 1000:.0f} ms")
        print(f"parallel: {args.parallel} creations in {elapsed:.1f} s = "
              f"{args.parallel / elapsed:.0f} per second ({failed} failed); ganeti-masterd "
              f"used {cpu:.1f} CPU-s = {cpu / args.parallel * 1000:.1f} ms per creation "
              f"(the most it could do with a whole core: {args.parallel / cpu:.0f} per second)")
    finally:
        run([*VCLUSTER, "destroy", directory], timeout=300, check=False)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
