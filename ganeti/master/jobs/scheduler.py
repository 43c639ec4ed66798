"""Which queued job starts next: priorities, dependencies, filter rules and rate limits.

The :class:`Scheduler` keeps the queued jobs in a heap ordered by
(priority, job id).  A scheduling pass takes jobs from the top while there
is room (``max_running_jobs``) and, for each, either starts it or *parks*
it where it waits:

- behind an unfinished dependency (until that job ends);
- under a PAUSE rule (until the rules change);
- under a ``RATE_LIMIT n`` rule that has n running jobs, or an ad-hoc
  ``rate-limit:n:label`` bucket with n running jobs (until one of them ends);

and a job a REJECT rule applies to is cancelled.  Nothing is evaluated
again unless it could change: the rule that applies to each unfinished
job is computed when the job arrives and kept; when rules change only
the jobs a changed rule could affect are evaluated again (a removed or
changed rule: the jobs it applied to; an added one: the jobs whose
current rule comes after it).  Parked jobs cost nothing per pass; when a
running job ends, only the groups it occupied release their next job.
See docs/design/jobqueue.md ("Filter rules").
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet import defer

from ganeti.core import jobfilters, jobs
from ganeti.core.jobfilters import CompiledRule, JobFacts
from ganeti.core.jobs import QueuedJob

# Where a parked job waits: ("pause" | "rule" | "bucket", rule uuid or bucket name).
ParkKey = tuple[str, str]
PAUSE_KEY, RULE_KEY, BUCKET_KEY = "pause", "rule", "bucket"


class Scheduler:
    """Queued jobs, where each waits, and what runs under which limit.

    ``jobs`` is the queue's dict of working copies (shared, read only here);
    ``start(job)`` starts a job, ``reject(job, rule)`` cancels a queued job a
    REJECT rule applies to, ``wait_reason(job_id, text or None)`` is told
    whenever the reason a job waits changes, and ``preempt(job_id)`` when a
    PAUSE rule comes to apply to a started job (which should then stop waiting
    for locks).
    """

    def __init__(self, jobs_by_id: dict[int, QueuedJob], start: Callable[[QueuedJob], None],
                 reject: Callable[[QueuedJob, CompiledRule], None],
                 wait_reason: Callable[[int, str | None], None],
                 preempt: Callable[[int], None] = lambda job_id: None) -> None:
        self.jobs = jobs_by_id
        self._preempt = preempt
        self._start = start
        self._reject = reject
        self._notify = wait_reason
        self.rules: list[CompiledRule] = []
        self._active_rules: list[CompiledRule] = []  # without CONTINUE: they never apply
        self._by_uuid: dict[str, CompiledRule] = {}
        self._facts: dict[int, JobFacts] = {}
        self._verdict: dict[int, str | None] = {}  # unfinished job -> uuid of its rule
        self._buckets: dict[int, frozenset[str]] = {}
        self._heap: list[tuple[int, int]] = []
        self._parked: dict[ParkKey, list[tuple[int, int]]] = {}
        self._parked_at: dict[int, ParkKey] = {}
        self._dep_waiting: dict[int, set[int]] = {}  # dependency -> jobs waiting for it
        self.started: set[int] = set()  # started and not finished (paused or not)
        self.paused: dict[int, defer.Deferred[None]] = {}  # started jobs held between opcodes
        self._counted: dict[int, str] = {}  # started job -> RATE_LIMIT rule it counts for
        self._rule_running: Counter[str] = Counter()
        self._bucket_running: Counter[str] = Counter()
        self.wait_reasons: dict[int, str] = {}
        self._pending: set[int] = set()  # queued jobs to evaluate against every rule
        self._pending_order: deque[int] = deque()

    # --- jobs coming and going ---------------------------------------------------------

    def applying(self, facts: JobFacts) -> CompiledRule | None:
        """The rule that applies to a job with ``facts`` under the current rules."""
        return jobfilters.applying_rule(self._active_rules, facts)

    def track(self, job: QueuedJob) -> None:
        """Know an unfinished job (new, or restored at start-up)."""
        facts = JobFacts.of(job.id, [op.input for op in job.ops])
        self._facts[job.id] = facts
        rule = self.applying(facts)
        self._verdict[job.id] = None if rule is None else rule.uuid
        buckets = jobfilters.rate_limit_buckets(facts)
        if buckets:
            self._buckets[job.id] = buckets

    def enqueue(self, job: QueuedJob) -> None:
        """Put a queued job (back) into the heap of jobs to consider."""
        heapq.heappush(self._heap, (job.priority, job.id))

    def forget(self, job_id: int) -> None:
        """The job has finished: drop everything known about it."""
        if job_id in self.started:
            self.started.discard(job_id)
            rule = self._counted.pop(job_id, None)
            if rule is not None:
                self._rule_running[rule] -= 1
            for bucket in self._buckets.get(job_id, ()):
                self._bucket_running[bucket] -= 1
        self._facts.pop(job_id, None)
        self._verdict.pop(job_id, None)
        self._buckets.pop(job_id, None)
        self._parked_at.pop(job_id, None)
        self._pending.discard(job_id)
        self._set_reason(job_id, None)
        for waiter in self._dep_waiting.pop(job_id, ()):
            other = self.jobs.get(waiter)
            if other is not None and other.status == jobs.QUEUED:
                self.enqueue(other)

    def rule_of(self, job_id: int) -> CompiledRule | None:
        """The rule that applies to an unfinished job now."""
        uuid = self._verdict.get(job_id)
        return None if uuid is None else self._by_uuid.get(uuid)

    # --- a scheduling pass -------------------------------------------------------------

    def run(self, room: Callable[[], int]) -> None:
        """Start jobs while ``room()`` is positive; park or cancel the others."""
        while True:
            while self._heap and room() > 0:
                priority, job_id = heapq.heappop(self._heap)
                job = self.jobs.get(job_id)
                if job is None or job.status != jobs.QUEUED or job.priority != priority:
                    continue  # stale entry
                self._consider(job)
            if room() <= 0 or not self._release_round():
                return

    def _consider(self, job: QueuedJob) -> None:
        job_id = job.id
        self._parked_at.pop(job_id, None)
        if job_id in self._pending:
            return  # back in the heap once evaluated
        rule = self.rule_of(job_id)
        if rule is not None and rule.kind == jobfilters.REJECT:
            self._reject(job, rule)
            return
        if rule is not None and rule.kind == jobfilters.PAUSE:
            self._park(job, (PAUSE_KEY, rule.uuid), f"paused by {rule.describe()}")
            return
        blocking = self._unfinished_dependency(job)
        if blocking is not None:
            self._dep_waiting.setdefault(blocking, set()).add(job_id)
            self._set_reason(job_id, f"waiting for job {blocking} to finish")
            return
        if (rule is not None and rule.kind == jobfilters.RATE_LIMIT
                and self._rule_running[rule.uuid] >= rule.limit):
            self._park(job, (RULE_KEY, rule.uuid),
                       f"rate-limited by {rule.describe()}: "
                       f"{self._rule_running[rule.uuid]} running")
            return
        for bucket in sorted(self._buckets.get(job_id, ())):
            if self._bucket_running[bucket] >= jobfilters.bucket_limit(bucket):
                self._park(job, (BUCKET_KEY, bucket),
                           f"rate-limited by bucket {bucket!r}: "
                           f"{self._bucket_running[bucket]} running")
                return
        self._set_reason(job_id, None)
        self.started.add(job_id)
        if rule is not None and rule.kind == jobfilters.RATE_LIMIT:
            self._counted[job_id] = rule.uuid
            self._rule_running[rule.uuid] += 1
        for bucket in self._buckets.get(job_id, ()):
            self._bucket_running[bucket] += 1
        self._start(job)

    def _unfinished_dependency(self, job: QueuedJob) -> int | None:
        for op in job.ops:
            for dep_id, _ in op.input.get("depends") or []:
                dep = self.jobs.get(int(dep_id))
                if dep is not None and not dep.finalized:
                    return int(dep_id)
        return None

    def _park(self, job: QueuedJob, key: ParkKey, reason: str) -> None:
        self._parked_at[job.id] = key
        heapq.heappush(self._parked.setdefault(key, []), (job.priority, job.id))
        self._set_reason(job.id, reason)

    def _has_room(self, key: ParkKey) -> bool:
        kind, name = key
        if kind == RULE_KEY:
            rule = self._by_uuid.get(name)
            return (rule is None or rule.kind != jobfilters.RATE_LIMIT
                    or self._rule_running[name] < rule.limit)
        if kind == BUCKET_KEY:
            return self._bucket_running[name] < jobfilters.bucket_limit(name)
        return False  # paused jobs move only when the rules change

    def _release_round(self) -> bool:
        """Move the best parked job of every group with room back to the heap."""
        moved = False
        for key in list(self._parked):
            if not self._has_room(key):
                continue
            heap = self._parked[key]
            while heap:
                priority, job_id = heapq.heappop(heap)
                job = self.jobs.get(job_id)
                if (self._parked_at.get(job_id) == key and job is not None
                        and job.status == jobs.QUEUED and job.priority == priority):
                    del self._parked_at[job_id]
                    self.enqueue(job)
                    moved = True
                    break
            if not heap:
                del self._parked[key]
        return moved

    def _set_reason(self, job_id: int, reason: str | None) -> None:
        if self.wait_reasons.get(job_id) == reason:
            return
        if reason is None:
            del self.wait_reasons[job_id]
        else:
            self.wait_reasons[job_id] = reason
        self._notify(job_id, reason)

    # --- started jobs held by a PAUSE rule -----------------------------------------------

    def hold(self, job_id: int, rule: CompiledRule) -> defer.Deferred[None]:
        """A started job stops before its next opcode; fires when no PAUSE rule applies."""
        d: defer.Deferred[None] = defer.Deferred()
        self.paused[job_id] = d
        self._set_reason(job_id, f"paused by {rule.describe()} before its next opcode")
        return d

    def unhold(self, job_id: int) -> None:
        """The held job goes on (or was cancelled)."""
        self.paused.pop(job_id, None)
        self._set_reason(job_id, None)

    # --- rules ---------------------------------------------------------------------------

    def set_rules(self, rules: Iterable[CompiledRule]) -> int:
        """Replace the rules; re-evaluate only what a change could affect.

        A job whose rule was removed or changed must be evaluated against
        every rule again: a started job at once, a queued one is marked
        *pending* (it cannot start) and evaluated by :meth:`evaluate_pending`,
        which the queue runs in slices when there are many.  Every other job
        is tested against the new rules that come before its current one.
        Returns how many rule tests were made.
        """
        old = self._by_uuid
        new = {rule.uuid: rule for rule in rules}
        gone = {uuid for uuid, rule in old.items()
                if uuid not in new or not rule.same_as(new[uuid])}
        fresh = jobfilters.sorted_rules(
            rule for uuid, rule in new.items()
            if rule.kind != jobfilters.CONTINUE and (uuid not in old or uuid in gone))
        self._by_uuid = new
        self.rules = jobfilters.sorted_rules(new.values())
        self._active_rules = [r for r in self.rules if r.kind != jobfilters.CONTINUE]
        if not gone and not fresh:
            return 0
        tested = 0
        changed: list[int] = []
        for job_id, current in self._verdict.items():
            if job_id in self._pending:
                continue  # evaluated in full later, against the rules of that moment
            if current is not None and (current in gone or current not in new):
                if job_id in self.started:
                    rule, count = self._evaluate(job_id)
                    tested += count
                else:
                    self._pending.add(job_id)
                    self._pending_order.append(job_id)
                    continue
            else:
                facts = self._facts[job_id]
                rule = None if current is None else new[current]
                for candidate in fresh:
                    if rule is not None and candidate.key >= rule.key:
                        break
                    tested += 1
                    if candidate.matches(facts):
                        rule = candidate
                        break
            uuid = None if rule is None else rule.uuid
            # A rule replaced in place keeps its uuid but may act differently now.
            if uuid != current or (uuid is not None and uuid in gone):
                self._verdict[job_id] = uuid
                changed.append(job_id)
        for job_id in changed:
            self._verdict_changed(job_id)
        # A RATE_LIMIT rule that was replaced may count differently now.
        for job_id in self.started:
            self._recount(job_id)
        return tested

    def _evaluate(self, job_id: int) -> tuple[CompiledRule | None, int]:
        """The applying rule of a job from scratch, and how many rules were tested."""
        facts = self._facts[job_id]
        for count, rule in enumerate(self._active_rules, 1):
            if rule.matches(facts):
                return rule, count
        return None, len(self._active_rules)

    @property
    def pending(self) -> int:
        """How many queued jobs wait for a full evaluation against the rules."""
        return len(self._pending)

    def evaluate_pending(self, budget: int) -> int:
        """Evaluate pending jobs until ``budget`` rule tests are spent; returns the tests."""
        tested = 0
        while self._pending_order and tested < budget:
            job_id = self._pending_order.popleft()
            if job_id not in self._pending:
                continue
            self._pending.discard(job_id)
            rule, count = self._evaluate(job_id)
            tested += count
            self._verdict[job_id] = None if rule is None else rule.uuid
            self._verdict_changed(job_id)
        return tested

    def _recount(self, job_id: int) -> None:
        rule = self.rule_of(job_id)
        want = rule.uuid if rule is not None and rule.kind == jobfilters.RATE_LIMIT else None
        have = self._counted.get(job_id)
        if want == have:
            return
        if have is not None:
            self._rule_running[have] -= 1
            del self._counted[job_id]
        if want is not None:
            self._rule_running[want] += 1
            self._counted[job_id] = want

    def _verdict_changed(self, job_id: int) -> None:
        job = self.jobs.get(job_id)
        if job is None:
            return
        if job_id in self.started:
            rule = self.rule_of(job_id)
            held = self.paused.get(job_id)
            if held is None:
                if rule is not None and rule.kind == jobfilters.PAUSE:
                    self._preempt(job_id)
                return
            if rule is None or rule.kind != jobfilters.PAUSE:
                held.callback(None)
            else:  # still held, perhaps by a rule replaced in place
                self._set_reason(job_id, f"paused by {rule.describe()} before its next opcode")
            return
        if job.status == jobs.QUEUED:
            self._parked_at.pop(job_id, None)
            rule = self.rule_of(job_id)
            if rule is not None and rule.kind == jobfilters.REJECT:
                self._reject(job, rule)  # at once, even when no job can start now
            else:
                self.enqueue(job)

    # --- for statistics and tests ----------------------------------------------------------

    def counts(self) -> dict[str, Any]:
        """Running jobs per RATE_LIMIT rule and per bucket, and parked jobs per group."""
        return {
            "rules": {k: v for k, v in self._rule_running.items() if v},
            "buckets": {k: v for k, v in self._bucket_running.items() if v},
            "parked": {f"{kind}:{name}": sum(1 for j in self._parked_at.values()
                                             if j == (kind, name))
                       for kind, name in self._parked},
        }
