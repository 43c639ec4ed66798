"""Lock manager under contention, and one long hand-off chain.

Contention: JOBS jobs each take 3 of 100 instance locks (every other job in
shared mode), optionally after the BGL in shared mode, through the real
LockManager.  All jobs are submitted at once; a granted job holds its locks for
one tick of a simulated clock and then releases everything, which grants the
next jobs.  Printed: lock acquisitions per second of wall time (every lock a
job gets counts, BGL included), jobs per second, and how many ticks jobs
waited (p50/p90/p99/max).  Setup (building the manager and the job list) is not
timed; submitting, granting and releasing are.

Hand-off: 100,000 waiters queue for one exclusive lock and each releases it as
soon as it is granted; printed are the time to queue them and the time for the
whole chain to drain after the first release.

Real Ganeti's threaded SharedLock manages 134k-190k acquisitions/s.  Run:
.venv/bin/python bench/bench_locks.py [JOBS] [RUNS]
"""

import os
import random
import sys
import time

from twisted.internet.task import Clock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.master.locking import BGL, LockManager, SharedLock

LOCKS = 100
PER_JOB = 3


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def contention(jobs, with_bgl, seed):
    """One run; returns (lock acquisitions, jobs, seconds, sorted waits in ticks)."""
    names = [f"inst{i:03d}" for i in range(LOCKS)]
    lm = LockManager(Clock(), instances=names)
    rng = random.Random(seed)
    plans = [(f"job/{i}", rng.sample(names, PER_JOB), i % 2 == 1) for i in range(jobs)]
    tick = 0
    granted_at = {}
    holding = []

    def granted(_names, owner):
        granted_at[owner] = tick
        holding.append(owner)

    def then_instances(_bgl, owner, wanted, shared):
        lm.acquire(owner, "instance", wanted, shared).addCallback(granted, owner)

    start = time.perf_counter()
    for owner, wanted, shared in plans:
        if with_bgl:
            lm.acquire(owner, "cluster", [BGL], True).addCallback(
                then_instances, owner, wanted, shared)
        else:
            lm.acquire(owner, "instance", wanted, shared).addCallback(granted, owner)
    while holding:
        tick += 1
        releasing = holding[:]
        holding.clear()
        for owner in releasing:
            lm.release_all(owner)
    elapsed = time.perf_counter() - start
    assert len(granted_at) == jobs, "some jobs never got their locks"
    per_job = PER_JOB + (1 if with_bgl else 0)
    return jobs * per_job, jobs, elapsed, sorted(granted_at.values())


def contention_line(label, jobs, runs, with_bgl):
    # The same workload every run, so the waits are the same; the machine's
    # speed (and when the garbage collector runs) is what varies.
    results = [contention(jobs, with_bgl, seed=1) for _ in range(runs)]
    acquisitions, njobs, _, waits = results[0]
    times = sorted(r[2] for r in results)
    best, median = times[0], times[len(times) // 2]
    return (f"locks {label}: {njobs} jobs x {PER_JOB} of {LOCKS} locks (half shared): "
            f"{acquisitions / best:,.0f} lock acquisitions/s best, {acquisitions / median:,.0f} "
            f"median of {runs} runs ({njobs / best:,.0f} jobs/s best); wait in ticks "
            f"p50={percentile(waits, 0.5)} p90={percentile(waits, 0.9)} "
            f"p99={percentile(waits, 0.99)} max={waits[-1]}")


def handoff(waiters):
    lock = SharedLock("instance/inst000", Clock())
    lock.acquire("holder")
    done = []

    def release_at_once(_granted, owner):
        done.append(owner)
        lock.release(owner)

    start = time.perf_counter()
    for i in range(waiters):
        owner = f"job/{i}"
        lock.acquire(owner).addCallback(release_at_once, owner)
    queued = time.perf_counter()
    lock.release("holder")
    drained = time.perf_counter()
    assert len(done) == waiters
    return queued - start, drained - queued


def main(argv):
    jobs = int(argv[1]) if len(argv) > 1 else 2000
    runs = int(argv[2]) if len(argv) > 2 else 9
    contention(200, True, 99)  # warm up
    print(contention_line("without BGL", jobs, runs, False))
    print(contention_line("with BGL shared", jobs, runs, True))
    waiters = 100_000
    queue_s, drain_s = handoff(waiters)
    print(f"handoff: {waiters:,} waiters on one lock, each releasing at once: queued in "
          f"{queue_s:.2f} s, all handed off in {drain_s:.2f} s "
          f"({waiters / drain_s:,.0f} hand-offs/s)")


if __name__ == "__main__":
    main(sys.argv)
