"""LineBudget: which log lines about outside input are written."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.loglimit import LineBudget


class LineBudgetTest(SynchronousTestCase):
    def test_burst_per_key_then_the_count(self):
        budget = LineBudget(interval=60, burst=2)
        got = [budget.allow("k", 0) for _ in range(5)]
        self.assertEqual(got, [("k", 0), ("k", 0), None, None, None])
        self.assertEqual(budget.allow("k", 60), ("k", 3))
        self.assertEqual(budget.suppressed, 3)

    def test_overflow_key_shares_one_line_and_keys_stay_bounded(self):
        budget = LineBudget(interval=60, max_keys=2, overflow="other")
        got = [budget.allow(i, 0) for i in range(10)]
        self.assertEqual(got[:3], [(0, 0), (1, 0), ("other", 0)])
        self.assertEqual(got[3:], [None] * 7)
        self.assertEqual(budget.tracked, 2)
        self.assertEqual(budget.allow(99, 60), (99, 0))  # the old keys expired
        self.assertEqual(budget.allow(98, 60), (98, 0))
        self.assertEqual(budget.allow(97, 60), ("other", 7))

    def test_lines_per_interval_capped_over_all_keys(self):
        budget = LineBudget(interval=60, max_keys=2, max_lines=3)
        logged = [budget.allow(i, 0) is not None for i in range(50)]
        self.assertEqual(logged.count(True), 3)
        self.assertLessEqual(budget.tracked, 3)
        self.assertIsNotNone(budget.allow(49, 60))
        self.assertLessEqual(budget.tracked, 2)
