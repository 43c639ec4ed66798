"""Lock attempt timeouts (reference 7.4) and the priority increase between rounds."""

import random

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import lockstrategy as ls

# (prev * 1.05) ** 1.25 from 5.0, clamped to [5, 75], until the sum reaches 1800.
EXPECTED_HEAD = [5.0, 7.946925, 14.181936, 29.252032, 72.307222]


class TimeoutSequenceTest(SynchronousTestCase):
    def test_constants(self):
        self.assertEqual(ls.LOCK_ATTEMPTS_MINWAIT, 5.0)
        self.assertEqual(ls.LOCK_ATTEMPTS_MAXWAIT, 75.0)
        self.assertEqual(ls.LOCK_ATTEMPTS_TIMEOUT, 1800)
        self.assertEqual((ls.OP_PRIO_HIGHEST, ls.OP_PRIO_DEFAULT, ls.OP_PRIO_LOWEST),
                         (-20, 0, 19))

    def test_exact_sequence(self):
        timeouts = ls.LOCK_ATTEMPT_TIMEOUTS
        self.assertEqual(len(timeouts), 28)
        for got, want in zip(timeouts, EXPECTED_HEAD, strict=False):
            self.assertAlmostEqual(got, want, places=6)
        self.assertEqual(list(timeouts[5:]), [75.0] * 23)
        self.assertAlmostEqual(sum(timeouts), 1853.688116, places=6)
        self.assertLess(sum(timeouts[:-1]), 1800)

    def test_formula(self):
        prev = 5.0
        for t in ls.LOCK_ATTEMPT_TIMEOUTS[1:]:
            self.assertEqual(t, min(max((prev * 1.05) ** 1.25, 5.0), 75.0))
            prev = t

    def test_other_bounds(self):
        self.assertEqual(ls.attempt_timeouts(10.0, 12.0, 30.0), (10.0, 12.0, 12.0))
        self.assertEqual(ls.attempt_timeouts(5.0, 75.0, 5.0), (5.0,))

    def test_strategy_without_jitter_then_blocks(self):
        strategy = ls.LockAttemptTimeouts()
        self.assertEqual(strategy.peek(), 5.0)
        got = [strategy.next_timeout() for _ in range(28)]
        self.assertEqual(got, list(ls.LOCK_ATTEMPT_TIMEOUTS))
        self.assertTrue(strategy.exhausted())
        self.assertIsNone(strategy.peek())
        self.assertIsNone(strategy.next_timeout())
        self.assertIsNone(strategy.next_timeout())

    def test_jitter_is_within_five_percent(self):
        strategy = ls.LockAttemptTimeouts(random.Random(42))
        got = [strategy.next_timeout() for _ in range(28)]
        for value, exact in zip(got, ls.LOCK_ATTEMPT_TIMEOUTS, strict=True):
            self.assertLessEqual(abs(value - exact), exact * 0.05 + 1e-9)
        self.assertNotEqual(got, list(ls.LOCK_ATTEMPT_TIMEOUTS))
        again = ls.LockAttemptTimeouts(random.Random(42))
        self.assertEqual([again.next_timeout() for _ in range(28)], got)

    def test_jitter_extremes(self):
        class Fixed(random.Random):
            def __init__(self, value):
                super().__init__()
                self.value = value

            def random(self):
                return self.value

        self.assertAlmostEqual(ls.LockAttemptTimeouts(Fixed(0.0)).next_timeout(), 4.75)
        self.assertAlmostEqual(ls.LockAttemptTimeouts(Fixed(0.5)).next_timeout(), 5.0)
        self.assertAlmostEqual(ls.LockAttemptTimeouts(Fixed(1.0)).next_timeout(), 5.25)


class PriorityIncreaseTest(SynchronousTestCase):
    def test_increase_priority(self):
        self.assertEqual(ls.increase_priority(0), -1)
        self.assertEqual(ls.increase_priority(19), 18)
        self.assertEqual(ls.increase_priority(-19), -20)
        self.assertIsNone(ls.increase_priority(-20))

    def test_no_increase_before_exhaustion(self):
        schedule = ls.LockAttemptSchedule()
        schedule.next_timeout()
        self.assertFalse(schedule.check_priority_increase())
        self.assertEqual(schedule.priority, 0)

    def test_increase_and_restart(self):
        schedule = ls.LockAttemptSchedule(priority=-19)
        for _ in range(28):
            self.assertIsNotNone(schedule.next_timeout())
        self.assertTrue(schedule.check_priority_increase())
        self.assertEqual(schedule.priority, -20)
        self.assertEqual(schedule.next_timeout(), 5.0)  # restarted
        for _ in range(27):
            schedule.next_timeout()
        self.assertFalse(schedule.check_priority_increase())  # already highest
        self.assertEqual(schedule.priority, -20)
        self.assertIsNone(schedule.next_timeout())

    def test_rounds_from_default_priority(self):
        schedule = ls.LockAttemptSchedule()
        timed_attempts = 0
        while schedule.next_timeout() is not None:
            timed_attempts += 1  # ... this attempt timed out:
            schedule.check_priority_increase()
        self.assertEqual(schedule.priority, -20)
        self.assertEqual(timed_attempts, 21 * 28)  # priorities 0, -1, ..., -20

    def test_priority_range_checked(self):
        self.assertRaises(ValueError, ls.LockAttemptSchedule, priority=-21)
        self.assertRaises(ValueError, ls.LockAttemptSchedule, priority=20)
