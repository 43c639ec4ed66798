"""The scheduler's incremental re-evaluation of filter rules (property test)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import jobfilters
from ganeti.core.jobs import QueuedJob
from ganeti.master.jobs.scheduler import Scheduler
from tests.core.test_jobfilters import _jobs, _rule, _unique, facts


class IncrementalTest(SynchronousTestCase):
    @settings(max_examples=200, deadline=None)
    @given(st.lists(_rule, max_size=5), st.lists(_rule, max_size=5),
           st.lists(_rule, max_size=5), _jobs)
    def test_incremental_reevaluation_equals_evaluating_from_scratch(self, r1, r2, r3, ops):
        """The scheduler's incremental verdicts after a series of rule changes equal
        the applying rule computed afresh for every job."""
        jobs = {}
        sched = Scheduler(jobs, start=lambda job: None, reject=lambda job, rule: None,
                          wait_reason=lambda job_id, text: None)
        for index, op in enumerate(ops):
            job = QueuedJob.new(index + 1, [op], 0.0)
            jobs[job.id] = job
            sched.track(job)
        keep = _unique(r1)
        for rules in (keep, keep + _unique(r2), _unique(r3), keep[:2] + _unique(r3), []):
            rules = _unique(rules)
            sched.set_rules(rules)
            while sched.pending:  # in small slices, as the queue does with many jobs
                sched.evaluate_pending(3)
            ordered = jobfilters.sorted_rules(rules)
            for job_id, job in jobs.items():
                expected = jobfilters.applying_rule(ordered, facts(job_id, [job.ops[0].input]))
                got = sched.rule_of(job_id)
                self.assertEqual(None if got is None else got.uuid,
                                 None if expected is None else expected.uuid)

