"""Query("job") with ids lists the jobs in the order asked for, as luxid does
(``gnt-job list 147 145`` prints 147 first); without ids, by id.  Found by the
side-by-side oracle (case job-list-ids)."""

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.master.jobs.luxi_jobs import JobMethods
from tests.fakes.clock import TurnClock
from tests.master.test_luxi_jobs import FakeQueue


class JobOrderTest(SynchronousTestCase):
    def setUp(self):
        self.methods = JobMethods(FakeQueue(5), None, None, TurnClock())  # type: ignore[arg-type]

    def ids(self, qfilter):
        d = defer.Deferred.fromCoroutine(self.methods.query("job", ["id"], qfilter))
        return [row[0][1] for row in self.successResultOf(d)["data"]]

    def test_ids_asked_for_keep_their_order(self):
        self.assertEqual(self.ids(["|", ["=", "id", 4], ["=", "id", 2]]), [4, 2])

    def test_all_jobs_by_id(self):
        self.assertEqual(self.ids(None), [1, 2, 3, 4, 5])
        self.assertEqual(self.ids(["!", ["=", "id", 3]]), [1, 2, 4, 5])
