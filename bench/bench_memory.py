"""masterd memory with many jobs: RSS with L live and A archived jobs.

Writes A archived job files straight into a virtual node's queue archive,
starts masterd (which scans the archive for the serial but keeps no archived
job in memory), submits L OP_TEST_DELAY jobs and waits for them, then prints
the daemon's resident set size, next to the RSS of the same daemon idle.
Run: .venv/bin/python bench/bench_memory.py [LIVE] [ARCHIVED]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from ganeti.luxi.client import LuxiClient

BIN = os.path.dirname(os.path.abspath(sys.executable))


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def archived_job(job_id):
    return {"id": job_id, "ops": [{
        "input": {"OP_ID": "OP_TEST_DELAY", "duration": 0.0, "reason": [
            ["gnt:client:gnt-debug", "delay", 1795000000000000000],
            ["gnt:opcode:test_delay", f"job={job_id};index=0", 1795000000000000000]]},
        "status": "success", "result": None, "log": [], "priority": 0,
        "start_timestamp": [1795000000, 0], "exec_timestamp": [1795000000, 10],
        "end_timestamp": [1795000000, 20]}],
        "received_timestamp": [1795000000, 0], "start_timestamp": [1795000000, 0],
        "end_timestamp": [1795000000, 20]}


def main(live, archived):
    tmp = tempfile.mkdtemp(prefix="bench-mem-")
    vc = os.path.join(tmp, "vc")
    tool = os.path.join(BIN, "ganeti-vcluster")
    root = os.path.join(vc, "node1.vcluster.test")
    try:
        subprocess.run([tool, "create", vc], check=True, capture_output=True)
        archive = os.path.join(root, "var/lib/ganeti/queue/archive")
        for job_id in range(1, archived + 1):
            sub = os.path.join(archive, str(job_id // 10000))
            if job_id % 10000 == 0 or job_id == 1:
                os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, f"job-{job_id}"), "w") as f:
                json.dump(archived_job(job_id), f)
        subprocess.run([tool, "start", vc], check=True, capture_output=True)
        with open(os.path.join(root, "var/run/ganeti/ganeti-masterd.pid")) as f:
            pid = int(f.read())
        idle = rss_mib(pid)
        sock = os.path.join(root, "var/run/ganeti/socket/ganeti-query")
        with LuxiClient(sock) as c:
            ids = []
            for start in range(0, live, 500):
                batch = [[{"OP_ID": "OP_TEST_DELAY", "duration": 0}]
                         for _ in range(min(500, live - start))]
                ids += [jid for ok, jid in c.call("SubmitManyJobs", batch) if ok]
            first_new = min(ids)
            for jid in ids:  # wait for all (each call returns at once when finished)
                c.call("WaitForJobChange", jid, ["status"], None, None, 60)
            statuses = c.call("QueryJobs", ids, ["status"])
        done = sum(1 for row in statuses if row and row[0] == "success")
        loaded = rss_mib(pid)
        print(f"memory: masterd RSS {idle:.0f} MiB with {archived} archived jobs on disk; "
              f"{loaded:.0f} MiB with {len(ids)} live jobs more ({done} succeeded; new ids "
              f"start at {first_new}, above the archive's {archived})")
    finally:
        subprocess.run([tool, "destroy", vc], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [5000, 100000][len(args):]))
