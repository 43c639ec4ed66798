"""masterd's job queries over many jobs: built a slice per reactor turn (so other
clients are served in between), with the same answer as in one go."""

import inspect

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.core.jobs import QueuedJob
from ganeti.master.jobs.luxi_jobs import ROWS_PER_TURN, JobMethods
from ganeti.master.query import jobquery as query
from tests.fakes.clock import TurnClock

FIELDS = ["id", "ops", "status", "summary", "opstatus", "received_ts", "start_ts", "end_ts",
          "wait_reason"]


class FakeStore:
    """No archived jobs."""

    async def read_archived(self, job_ids):
        return {}


class FakeQueue:
    """The part of JobQueue the query methods read: the live jobs, the archive."""

    def __init__(self, count):
        self.visible = {i: QueuedJob.new(i, [{"OP_ID": "OP_TEST_DELAY", "duration": i % 3}],
                                         1_700_000_000 + i) for i in range(1, count + 1)}
        self.store = FakeStore()


class SlicedQueryTest(SynchronousTestCase):
    def setUp(self):
        self.clock = TurnClock()
        self.queue = FakeQueue(ROWS_PER_TURN * 3 + 17)
        self.methods = JobMethods(self.queue, None, None, self.clock)  # type: ignore[arg-type]
        self.items = sorted(self.queue.visible.items())

    def turns(self, d):
        count = 0
        while not d.called:
            self.clock.turn()
            count += 1
        return count

    def test_query_jobs_in_slices_same_rows(self):
        d = defer.Deferred.fromCoroutine(self.methods.query_jobs(None, FIELDS))
        self.assertEqual(self.turns(d), 3)
        self.assertEqual(self.successResultOf(d), query.old_style_rows(self.items, FIELDS))

    def test_other_work_runs_between_slices(self):
        d = defer.Deferred.fromCoroutine(self.methods.query_jobs(None, ["id"]))
        ran = []
        self.clock.callLater(0, ran.append, "other client")
        self.clock.turn()
        self.assertEqual(ran, ["other client"])
        self.assertNoResult(d)
        self.turns(d)
        self.assertEqual(len(self.successResultOf(d)), len(self.items))

    def test_query_with_a_filter_in_slices_same_answer(self):
        qfilter = ["=", "status", "queued"]
        d = defer.Deferred.fromCoroutine(self.methods.query("job", ["id", "status"], qfilter))
        self.turns(d)
        self.assertEqual(self.successResultOf(d),
                         query.query_jobs(self.items, ["id", "status"], qfilter))

    def test_few_jobs_answer_in_the_same_turn(self):
        self.queue.visible = dict(list(self.queue.visible.items())[:10])
        d = defer.Deferred.fromCoroutine(self.methods.query_jobs([1, 2, 99999], ["id"]))
        self.assertEqual(self.successResultOf(d), [[1], [2], [99999]])

    def test_fake_store_matches_the_real_one(self):
        from ganeti.master.jobs.jobstore import JobStore

        self.assertEqual(inspect.signature(FakeStore.read_archived).parameters.keys(),
                         inspect.signature(JobStore.read_archived).parameters.keys())

    def test_unknown_fields_are_refused_at_once(self):
        d = defer.Deferred.fromCoroutine(self.methods.query_jobs(None, ["id", "nonsense"]))
        self.assertIsInstance(self.failureResultOf(d).value, errors.OpPrereqError)
