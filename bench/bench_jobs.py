"""Job throughput and latency of a real ganeti-masterd on a virtual cluster.

N OP_TEST_DELAY jobs (duration 0.001, no_locks) are submitted over K LUXI
connections (one thread and one blocking client each), either with
SubmitManyJobs in batches of B or with one SubmitJob per job, and waited for
(QueryJobs in batches plus WaitForJobChange).  Reported per run: jobs/s
submitted (first call to last answer) and completed (first call to the last
job's end_ts), and p50/p99 of queued->running (start_ts - received_ts) and
received->end (end_ts - received_ts), from the jobs' own timestamps.  Each
mode runs with max_running_jobs raised to N (nothing waits for a slot) and at
its default of 20.
With NODES > 1 the cluster has that many nodes (all master candidates), so
every job file is also replicated to NODES - 1 node daemons; the number of job
files that reached node 2 is reported after each run.
Run: .venv/bin/python bench/bench_jobs.py [N [B [K [NODES]]]]
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.luxi.client import LuxiClient

BIN = os.path.dirname(os.path.abspath(sys.executable))
VCLUSTER = os.path.join(BIN, "ganeti-vcluster")
NODE = "node1.vcluster.test"
FINAL = {"success", "error", "canceled"}
OP = {"OP_ID": "OP_TEST_DELAY", "duration": 0.001, "no_locks": True}
DEFAULT_MAX_RUNNING = 20
QUERY_BATCH = 500


def seconds(stamp):
    return stamp[0] + stamp[1] / 1e6


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def wait_job(client, job_id, timeout=60.0):
    deadline = time.monotonic() + timeout
    prev = None
    while time.monotonic() < deadline:
        info, _ = client.call("WaitForJobChange", job_id, ["status"], prev, None, 10)
        prev = info
        if info[0] in FINAL:
            return info[0]
    raise RuntimeError(f"job {job_id} did not finish")


def set_max_running(client, value):
    jid = client.call("SubmitJob", [{"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                     "max_running_jobs": value}])
    if wait_job(client, jid) != "success":
        raise RuntimeError(f"could not set max_running_jobs to {value}")


def submit(socket_path, n, batch, connections):
    """Submit n jobs over ``connections`` threads; returns (ids, t_start, t_end)."""
    shares = [n // connections + (1 if i < n % connections else 0)
              for i in range(connections)]
    results = [[] for _ in shares]
    errors = []
    clients = [LuxiClient(socket_path) for _ in shares]
    for c in clients:  # connect before the clock starts
        c.call("QueryConfigValues", ["drain_flag"])
    barrier = threading.Barrier(len(shares) + 1)

    def worker(index):
        client, count, out = clients[index], shares[index], results[index]
        barrier.wait()
        try:
            while count > 0:
                if batch:
                    size = min(batch, count)
                    answer = client.call("SubmitManyJobs", [[dict(OP)]] * size)
                    bad = [msg for ok, msg in answer if not ok]
                    if bad:
                        raise RuntimeError(f"rejected: {bad[0]}")
                    out.extend(jid for _, jid in answer)
                else:
                    size = 1
                    out.append(client.call("SubmitJob", [dict(OP)]))
                count -= size
        except Exception as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(shares))]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.time()
    for t in threads:
        t.join()
    end = time.time()
    for c in clients:
        c.close()
    if errors:
        raise errors[0]
    return [jid for r in results for jid in r], start, end


def wait_all(client, ids, timeout=300.0):
    """Wait until every job is finished: QueryJobs in batches, WaitForJobChange on the
    newest unfinished one in between."""
    deadline = time.monotonic() + timeout
    pending = sorted(ids)
    while pending:
        still = []
        for i in range(0, len(pending), QUERY_BATCH):
            chunk = pending[i:i + QUERY_BATCH]
            rows = client.call("QueryJobs", chunk, ["status"])
            still.extend(j for j, row in zip(chunk, rows, strict=True) if row[0] not in FINAL)
        pending = still
        if not pending:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} jobs unfinished after {timeout}s")
        rows = client.call("QueryJobs", [pending[-1]], ["status"])
        client.call("WaitForJobChange", pending[-1], ["status"], rows[0], None, 5)


def timestamps(client, ids):
    rows = []
    for i in range(0, len(ids), QUERY_BATCH):
        rows += client.call("QueryJobs", ids[i:i + QUERY_BATCH],
                            ["status", "received_ts", "start_ts", "end_ts"])
    return rows


def run_once(socket_path, n, batch, connections, max_running):
    ids, start, end = submit(socket_path, n, batch, connections)
    with LuxiClient(socket_path) as client:
        wait_all(client, ids)
        rows = timestamps(client, ids)
        client.call("AutoArchiveJobs", -1, 60)  # keep the live queue small between runs
    failed = sum(1 for r in rows if r[0] != "success")
    last_end = max(seconds(r[3]) for r in rows)
    to_running = [(seconds(r[2]) - seconds(r[1])) * 1000 for r in rows]
    to_end = [(seconds(r[3]) - seconds(r[1])) * 1000 for r in rows]
    mode = f"SubmitManyJobs(B={batch})" if batch else "SubmitJob"
    return (f"max_running_jobs={max_running:<5} {mode:<20} N={n} K={connections}: "
            f"submitted {n / (end - start):7.0f} jobs/s, completed "
            f"{n / (last_end - start):6.0f} jobs/s; queued->running p50 "
            f"{percentile(to_running, 0.5):6.1f} ms p99 {percentile(to_running, 0.99):7.1f} ms;"
            f" received->end p50 {percentile(to_end, 0.5):6.1f} ms p99 "
            f"{percentile(to_end, 0.99):7.1f} ms" + (f"; {failed} FAILED" if failed else ""))


def replicated(vc, nodes):
    """Job files (live and archived) on node 2, or '' for a one-node cluster."""
    if nodes < 2:
        return ""
    queue = os.path.join(vc, NODE.replace("node1", "node2"), "var/lib/ganeti/queue")
    count = sum(1 for _, _, names in os.walk(queue) for name in names
                if name.startswith("job-"))
    return f"; job files on node2 (live and archived): {count}"


def main(n, batch, connections, nodes=1):
    tmp = tempfile.mkdtemp(prefix="bench-jobs-")
    vc = os.path.join(tmp, "vc")
    socket_path = os.path.join(vc, NODE, "var/run/ganeti/socket/ganeti-query")
    ip_base = f"127.0.{random.randint(200, 250)}."
    try:
        subprocess.run([VCLUSTER, "create", vc, "--nodes", str(nodes), "--ip-base", ip_base],
                       check=True, capture_output=True)
        subprocess.run([VCLUSTER, "start", vc], check=True, capture_output=True)
        print(f"{nodes} node(s)", flush=True)
        for max_running in (max(n, DEFAULT_MAX_RUNNING), DEFAULT_MAX_RUNNING):
            with LuxiClient(socket_path) as client:
                set_max_running(client, max_running)
            for mode_batch in (batch, 0):
                line = run_once(socket_path, n, mode_batch, connections, max_running)
                time.sleep(1)  # let replication catch up before counting (benchmark only)
                print(line + replicated(vc, nodes), flush=True)
    finally:
        start = time.monotonic()
        subprocess.run([VCLUSTER, "destroy", vc], check=False, capture_output=True)
        took = time.monotonic() - start
        if took > 5:
            print(f"note: stopping and removing the virtual cluster took {took:.0f} s "
                  "(masterd writes pending job files before it exits; after 30 s it is killed)")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:5]]
    main(*(args + [2000, 100, 4, 1][len(args):]))
