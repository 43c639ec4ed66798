"""Node evacuation end to end (issue 31's acceptance figure: a node with 10 primaries and
10 secondaries, primaries moved in < 20 s).

A real 3-node virtual cluster (ganeti-vcluster: masterd, noded per node, fake
hypervisor) gets ``--primaries`` running sharedfile instances on its first node
(created through LUXI, no OS install); then one OP_NODE_EVACUATE in mode
``primary-only`` (the built-in allocator plans the moves: live migrations) is
submitted and timed until every job it submitted is final.  Printed: the
evacuation's own job, the whole evacuation (submit to the last migration done),
the migrations' durations once their locks were held (p50, p95, longest) and how
many executed at once at most, by the jobs' own timestamps.

With ``--secondaries M`` (root: the cluster gets a volume group per node, drbd
enabled) M drbd instances get node 2 as primary and the evacuated node as
secondary, and the evacuation's mode is ``all``: the primaries move first, then
each drbd instance gets a new secondary (replace-disks, which ends once the new
secondary is in sync; the emulated mirror engine resyncs on the node clock at
the disk's resync-rate, so the figure includes that copy); printed also: the
secondaries' replacements, and that none is left on the node.

Run: .venv/bin/python bench/bench_evacuate.py [--primaries 10] [--secondaries 10]
Never part of the test run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.luxi.client import LuxiClient
from tests.integration.clustercase import VirtualCluster
from tests.integration.jobtools import wait_for_job

DOMAIN = "vcluster.test"
MASTER = f"node1.{DOMAIN}"
FINAL = ("success", "error", "canceled")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def job_ok(client: LuxiClient, ops: list[dict]) -> object:
    job = int(client.call("SubmitJob", ops))
    status = wait_for_job(client, job, timeout=600)
    result = client.call("QueryJobs", [job], ["opresult"])[0][0]
    if status != "success":
        raise SystemExit(f"job {job} ({ops[0]['OP_ID']}) ended {status}: {result}")
    return result[-1]


def create_op(name: str, template: str = "sharedfile", **extra: object) -> dict:
    return {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
            "pnode": MASTER, "os_type": "busybox", "nics": [{}], "name_check": False,
            "ip_check": False, "beparams": {"maxmem": 128, "minmem": 128},
            "disk_template": template, "disks": [{"size": 1024}],
            "no_install": True, "start": True, **extra}


def follow(client: LuxiClient, ids: list[int], deadline: float) -> dict[int, tuple]:
    """Poll until every job is final: {id: (status, start, end)}: when its opcode began to
    execute (its locks held) and ended."""
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        time.sleep(0.1)
        batch = sorted(pending)
        rows = client.call("QueryJobs", batch, ["status"])
        for job, (status,) in zip(batch, rows, strict=True):
            if status in FINAL:
                pending.discard(job)
    if pending:
        raise SystemExit(f"jobs {sorted(pending)} not final in time")
    rows = client.call("QueryJobs", ids, ["status", "opexec", "opend"])
    return {job: (status, _ts(start[0]), _ts(end[0]))
            for job, (status, start, end) in zip(ids, rows, strict=True)}


def _ts(value: object) -> float:
    seconds, micros = value  # type: ignore[misc]
    return float(seconds) + float(micros) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--primaries", type=int, default=10)
    parser.add_argument("--secondaries", type=int, default=0,
                        help="drbd instances with the node as secondary (root: volume groups)")
    args = parser.parse_args()
    drbd = args.secondaries > 0
    cluster = VirtualCluster("bench-evacuate-", nodes=3, start_timeout=600, lvm=drbd)
    try:
        cluster.create(start=True)
        with cluster.client(timeout=300.0) as client:
            templates = ["file", "diskless", "sharedfile", *(["plain", "drbd"] if drbd else [])]
            job_ok(client, [{"OP_ID": "OP_CLUSTER_SET_PARAMS",
                             "enabled_disk_templates": templates,
                             # 20 one-vCPU guests on nodes of this machine's 2 CPUs
                             "ipolicy": {"disk-templates": templates, "vcpu-ratio": 64.0}}])
            for k in range(args.primaries):
                job_ok(client, [create_op(f"pri{k}.{DOMAIN}")])
            for k in range(args.secondaries):
                job_ok(client, [create_op(f"sec{k}.{DOMAIN}", "drbd", pnode=f"node2.{DOMAIN}",
                                          snode=MASTER)])
            wall0, t0 = time.time(), time.perf_counter()
            evac = int(client.call("SubmitJob", [{"OP_ID": "OP_NODE_EVACUATE",
                                                  "node_name": MASTER,
                                                  "mode": "all" if drbd else "primary-only"}]))
            if wait_for_job(client, evac, timeout=600) != "success":
                raise SystemExit(client.call("QueryJobs", [evac], ["opresult"]))
            t_evac = time.perf_counter() - t0
            result = client.call("QueryJobs", [evac], ["opresult"])[0][0][0]
            ids = [int(job_id) for ok, job_id in result["jobs"] if ok]
            done = follow(client, ids, time.monotonic() + 600)
            total = time.perf_counter() - t0
            left, sleft = client.call("QueryNodes", [MASTER], ["pinst_cnt", "sinst_cnt"],
                                      False)[0]
            kinds = {job: ops[0]["OP_ID"] for job, (ops,) in
                     zip(ids, client.call("QueryJobs", ids, ["ops"]), strict=True)}
        print(f"OP_NODE_EVACUATE {t_evac:.2f} s; every job it submitted final after "
              f"{total:.2f} s (fake hypervisor, 3 nodes, built-in allocator)")
        report("primaries", {j: v for j, v in done.items()
                             if kinds[j] != "OP_INSTANCE_REPLACE_DISKS"}, wall0, left,
               f"{args.primaries} sharedfile primaries moved (live migrations)")
        report("secondaries", {j: v for j, v in done.items()
                               if kinds[j] == "OP_INSTANCE_REPLACE_DISKS"}, wall0, sleft,
               f"{args.secondaries} drbd secondaries replaced, new secondaries in sync "
               f"(emulated mirror engine, 1 GiB disks)")
    finally:
        cluster.destroy()


def report(what: str, done: dict[int, tuple], wall0: float, left: int, title: str) -> None:
    """One row: when the last job of the kind ended (from the submission, by the jobs'
    own timestamps), their durations once their locks were held, the most at once."""
    if not done:
        return
    durations = [end - start for _status, start, end in done.values()]
    failed = sum(1 for status, _s, _e in done.values() if status != "success")
    last = max(end for _status, _start, end in done.values()) - wall0
    events = sorted([(s, 1) for _x, s, _e in done.values()]
                    + [(e, -1) for _x, _s, e in done.values()])
    running = peak = 0
    for _t, step in events:
        running += step
        peak = max(peak, running)
    print(f"{title}: all in {last:.2f} s ({failed} failed, {left} {what} left on the "
          f"node); each p50 {_pct(durations, 0.5):.2f} s, p95 {_pct(durations, 0.95):.2f} s, "
          f"longest {max(durations):.2f} s, at most {peak} at once")


if __name__ == "__main__":
    main()
