"""Job store: durable job state changes per second.

N jobs each go through three durable states (queued, running, success), all
jobs in flight at once, through the journalled store with group commit; the
baseline is the naive way, each state an fsynced file replacement
(tmp + fsync + rename + fsync(dir)) on 4 threads, measured in the same run.
Run: .venv/bin/python bench/bench_jobstore.py [JOBS]
"""

import functools
import os
import sys
import tempfile
import time

from twisted.internet import defer, task, threads
from twisted.python.threadpool import ThreadPool

from ganeti.core import fileutil
from ganeti.core.paths import Paths
from ganeti.master.jobs.jobstore import JobStore


def job(job_id, status):
    return {"id": job_id, "ops": [{"input": {"OP_ID": "OP_TEST_DELAY", "duration": 0.001},
                                   "status": status, "result": None, "log": [],
                                   "priority": 0}],
            "received_timestamp": [1, 0], "start_timestamp": None, "end_timestamp": None}


async def lifecycle(store, jid):
    for status in ("queued", "running", "success"):
        await store.save(jid, job(jid, status))


async def run(reactor, jobs):
    pool = ThreadPool(minthreads=4, maxthreads=4)
    pool.start()
    run_blocking = functools.partial(threads.deferToThreadPool, reactor, pool)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "node1")
        store = JobStore(Paths.for_node(root, "node1"), run_blocking, reactor)
        store.recover()
        start = time.perf_counter()
        ids = store.allocate_ids(jobs)
        await defer.gatherResults([defer.Deferred.fromCoroutine(lifecycle(store, j))
                                   for j in ids])
        journal = time.perf_counter() - start
        commits = store.commits
        await store.wait_idle()
        store.close()

        naive_dir = os.path.join(tmp, "naive")
        os.makedirs(naive_dir)
        sample = max(jobs // 5, 50)  # the naive way is slow: time a sample

        async def naive(jid):
            for status in ("queued", "running", "success"):
                await run_blocking(fileutil.atomic_write,
                                   os.path.join(naive_dir, f"job-{jid}"),
                                   str(job(jid, status)), 0o640, True)

        start = time.perf_counter()
        await defer.gatherResults([defer.Deferred.fromCoroutine(naive(j))
                                   for j in range(sample)])
        naive_time = time.perf_counter() - start
    pool.stop()
    changes, per_s = 3 * jobs, 3 * jobs / journal
    naive_per_s = 3 * sample / naive_time
    print(f"jobstore: {jobs} jobs x 3 durable states: {per_s:.0f} changes/s "
          f"({jobs / journal:.0f} job lifecycles/s, {commits} journal commits for {changes} "
          f"changes); naive fsynced files {naive_per_s:.0f} changes/s; "
          f"x{per_s / naive_per_s:.1f}")


def main(reactor, jobs="2000"):
    return defer.Deferred.fromCoroutine(run(reactor, int(jobs)))


if __name__ == "__main__":
    task.react(main, sys.argv[1:])
