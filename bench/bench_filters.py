"""Job filter rules: does scheduling stay fast with 10,000 queued jobs and 100 rules?

  .venv/bin/python bench/bench_filters.py [--jobs 10000] [--rules 100]

Part 1, the scheduler alone (ganeti.master.jobs.scheduler, in process, no I/O):
  - admission: tracking a new job (finding the rule that applies, its buckets);
  - draining the queue: every job started and finished, 25 running at a time,
    with no rules (the baseline) and with the rules below;
  - rule changes with every job queued: adding a rule evaluated first, one
    evaluated last, removing the rule that applies to a third of the jobs,
    lifting a PAUSE that holds every job.
Part 2, a whole masterd in process (real job queue and job files, fake clock,
  no fsync): JOBS OP_TEST_DELAY jobs held by a PAUSE rule, then the rule is
  deleted and the run to the last job's end is timed; without and with the
  other rules.

The rules: a third RATE_LIMIT 10 on jobs of one opcode parameter (the comment); the rest
opcode, reason and jobid predicates that match no job (the expensive case:
every rule is tried for every job).  A tenth of the jobs also carry a
``rate-limit:5:`` reason bucket.  Figures are ratios against the baseline of
the same run where it makes sense.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid as uuidmod

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock

from ganeti.core import config as configmod
from ganeti.core import jobs as jobsmod
from ganeti.core.jobfilters import CompiledRule
from ganeti.core.jobs import QueuedJob
from ganeti.master.jobs.jobqueue import EVALUATION_SLICE
from ganeti.master.jobs.scheduler import Scheduler
from tests.fakes.configs import node_paths, small_config

RUNNING = 25


def make_rules(count: int) -> list[list]:
    """(priority, predicates, action) of ``count`` rules."""
    rules: list[list] = [[50, [["opcode", ["==", "comment", "group 1"]]], ["RATE_LIMIT", 10]]]
    for i in range(1, count):
        kind = i % 3
        if kind == 0:
            pred = ["opcode", ["&", ["=", "OP_ID", "OP_TEST_DELAY"],
                               ["==", "comment", f"group {100 + i}"]]]
        elif kind == 1:
            pred = ["reason", ["=~", "reason", f"^maintenance {i}$"]]
        else:
            pred = ["jobid", ["|", ["<", "id", -i], ["==", "id", -1]]]
        rules.append([i % 7, [pred], "PAUSE" if i % 2 else "REJECT"])
    return rules


def compiled(rules: list[list]) -> list[CompiledRule]:
    return [CompiledRule(str(uuidmod.UUID(int=i + 1)), 0, prio, preds, action, [])
            for i, (prio, preds, action) in enumerate(rules)]


def job_ops(job_id: int) -> list[dict]:
    reason = [["gnt:user", "routine", job_id]]
    if job_id % 10 == 0:
        reason.append(["gnt:user", "rate-limit:5:replication", job_id])
    return [{"OP_ID": "OP_TEST_DELAY", "duration": 0.0, "no_locks": True,
             "comment": f"group {job_id % 3}", "reason": reason}]


class Sim:
    """The scheduler with jobs that finish when told, RUNNING at a time."""

    def __init__(self, count: int) -> None:
        self.jobs: dict[int, QueuedJob] = {}
        self.started: list[int] = []
        self.sched = Scheduler(self.jobs, self.start, self.reject, lambda job, text: None)
        self.count = count

    def start(self, job: QueuedJob) -> None:
        job.ops[0].status = jobsmod.RUNNING
        self.started.append(job.id)

    def reject(self, job: QueuedJob, rule: CompiledRule) -> None:
        job.ops[0].status = jobsmod.CANCELED
        self.sched.forget(job.id)

    def room(self) -> int:
        return RUNNING - (len(self.sched.started) - len(self.sched.paused))

    def admit_all(self) -> float:
        begin = time.perf_counter()
        for job_id in range(1, self.count + 1):
            job = QueuedJob.new(job_id, job_ops(job_id), 0.0)
            self.jobs[job_id] = job
            self.sched.track(job)
            self.sched.enqueue(job)
        return time.perf_counter() - begin

    def drain(self) -> tuple[float, int]:
        """Run and finish jobs until none can start; (seconds, jobs finished)."""
        begin = time.perf_counter()
        finished = 0
        self.sched.run(self.room)
        while self.sched.started:
            job_id = min(self.sched.started)
            self.jobs[job_id].ops[0].status = jobsmod.SUCCESS
            self.sched.forget(job_id)
            finished += 1
            self.sched.run(self.room)
        return time.perf_counter() - begin, finished


def part1(count: int, rule_count: int) -> None:
    rules = compiled(make_rules(rule_count))
    print(f"== scheduler alone: {count} jobs, {len(rules)} rules, {RUNNING} running at a time")
    results = {}
    for label, active in (("no rules", []), (f"{len(rules)} rules", rules)):
        sim = Sim(count)
        sim.sched.set_rules(active)
        admit = sim.admit_all()
        spent, done = sim.drain()
        results[label] = (admit, spent)
        print(f"  {label:>10}: admission {admit / count * 1e6:7.1f} us/job, "
              f"run to empty {spent:6.3f} s ({spent / max(done, 1) * 1e6:6.1f} us/job, "
              f"{done} jobs)")
    base, ruled = results["no rules"], results[f"{len(rules)} rules"]
    print(f"  ratio with/without rules: admission {ruled[0] / base[0]:.1f}x, "
          f"scheduling {ruled[1] / base[1]:.1f}x")

    # Rule changes with every job queued (nothing running: RUNNING slots all paused).
    sim = Sim(count)
    hold = CompiledRule(str(uuidmod.uuid4()), 0, 0, [], "PAUSE", [])
    sim.sched.set_rules(rules)
    sim.admit_all()
    sim.sched.set_rules([*rules, hold])
    sim.sched.run(sim.room)
    print(f"== rule changes with {count} queued jobs (all held by a PAUSE rule)")

    def change(label: str, new_rules: list[CompiledRule]) -> None:
        begin = time.perf_counter()
        tested = sim.sched.set_rules(new_rules)
        blocks = [time.perf_counter() - begin]
        while sim.sched.pending:  # as the queue does: one slice per reactor turn
            start = time.perf_counter()
            tested += sim.sched.evaluate_pending(EVALUATION_SLICE)
            blocks.append(time.perf_counter() - start)
        start = time.perf_counter()
        sim.sched.run(sim.room)
        blocks.append(time.perf_counter() - start)
        print(f"  {label:<42} {sum(blocks) * 1e3:7.1f} ms in {len(blocks) - 1:3d} turn(s), "
              f"longest {max(blocks) * 1e3:6.1f} ms; {tested:7d} rule tests")

    last = CompiledRule(str(uuidmod.uuid4()), 0, 99, [["jobid", [">", "id", 0]]], "ACCEPT", [])
    first = CompiledRule(str(uuidmod.UUID(int=0)), 0, 0, [["jobid", ["<", "id", 0]]],
                         "ACCEPT", [])
    change("add a rule evaluated after the PAUSE", [*rules, hold, last])
    change("add a rule evaluated before every rule", [first, *rules, hold, last])
    change("remove a rule that applies to no job", [first, *rules[1:], hold, last])
    change("lift the PAUSE (every job re-evaluated)", [first, *rules[1:], last])
    spent, done = sim.drain()
    print(f"  then run to empty: {spent:.3f} s for {done} jobs")


def part2(count: int, rule_count: int) -> None:
    from ganeti.master.service import MasterDaemon

    print(f"== whole masterd in process: {count} jobs held by a PAUSE rule, then released")
    timings = {}
    for label, extra in (("no rules", []), (f"{rule_count} rules", make_rules(rule_count))):
        with tempfile.TemporaryDirectory() as tmp:
            paths = node_paths(tmp)
            os.makedirs(paths.data_dir)
            cfg = small_config()
            cfg.cluster.max_running_jobs = RUNNING
            with open(paths.config_file, "w", encoding="utf-8") as f:
                f.write(configmod.dump(cfg))
            reactor = MemoryReactorClock()
            reactor.advance(1800000000)
            daemon = MasterDaemon(reactor, paths, configmod.load_file(paths.config_file),
                                  run_blocking=defer.maybeDeferred, durable=False)
            daemon.startService()
            daemon.queue.size_limit = count + 1

            def run(coro, reactor=reactor):
                d = defer.Deferred.fromCoroutine(coro)
                out: list = []
                d.addBoth(out.append)
                while not out:  # e.g. rules evaluated over several reactor turns
                    reactor.advance(0)
                if isinstance(out[0], Exception) or hasattr(out[0], "raiseException"):
                    out[0].raiseException()
                return out[0]

            for prio, preds, action in extra:
                run(daemon.filters.replace_filter(None, prio, preds, action, []))
            hold = run(daemon.filters.replace_filter(None, 0, [], "PAUSE", []))
            begin = time.perf_counter()
            for start in range(1, count + 1, 500):
                batch = [job_ops(j) for j in range(start, min(start + 500, count + 1))]
                refused = [r for r in run(daemon.queue.submit_many(batch)) if not r[0]]
                if refused:
                    raise SystemExit(f"jobs refused: {refused[:3]}")
            submitted = time.perf_counter() - begin
            begin = time.perf_counter()
            run(daemon.filters.delete_filter(hold))
            while daemon.queue.running:
                reactor.advance(0)
            spent = time.perf_counter() - begin
            statuses = {}
            for job in daemon.queue.visible.values():
                statuses[job.status] = statuses.get(job.status, 0) + 1
            daemon.stopService()
            timings[label] = spent
            print(f"  {label:>10}: submit {submitted:6.2f} s, release to all done "
                  f"{spent:6.2f} s ({count / spent:7.0f} jobs/s); {statuses}")
    base, ruled = timings["no rules"], timings[f"{rule_count} rules"]
    print(f"  ratio with/without rules: {ruled / base:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--skip-masterd", action="store_true",
                        help="only the scheduler alone (part 1)")
    args = parser.parse_args()
    part1(args.jobs, args.rules)
    if not args.skip_masterd:
        part2(args.jobs, args.rules)


if __name__ == "__main__":
    main()
