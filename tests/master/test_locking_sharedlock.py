"""SharedLock: modes, priorities, FIFO, shared groups, timeouts, cancel, delete, downgrade."""

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import LockError
from ganeti.master.locking import MIN_TIMEOUT, SharedLock


class Recorder:
    """Collects the order in which acquires fire."""

    def __init__(self):
        self.order = []

    def watch(self, d, owner):
        def fired(result):
            self.order.append((owner, result))
            return result
        return d.addCallback(fired)


class SharedLockTestBase(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.lock = SharedLock("instance/inst1", self.clock)
        self.rec = Recorder()

    def acquire(self, owner, **kwargs):
        return self.rec.watch(self.lock.acquire(owner, **kwargs), owner)

    def granted(self):
        return [owner for owner, result in self.rec.order if result is True]

    def pending(self):
        return self.lock.info()[3]


class ModesTest(SharedLockTestBase):
    def test_exclusive_then_waiter_gets_it_on_release(self):
        self.assertTrue(self.successResultOf(self.acquire("a")))
        d = self.acquire("b")
        self.assertNoResult(d)
        self.assertEqual(self.lock.info(), ("instance/inst1", "exclusive", ["a"],
                                            [("exclusive", ["b"])]))
        self.lock.release("a")
        self.assertTrue(self.successResultOf(d))
        self.assertTrue(self.lock.is_owned("b", shared=False))
        self.assertFalse(self.lock.is_owned("b", shared=True))
        self.assertEqual(self.lock.owners(), frozenset({"b"}))

    def test_many_sharers(self):
        for owner in "abc":
            self.assertTrue(self.successResultOf(self.acquire(owner, shared=True)))
        self.assertEqual(self.lock.info(), ("instance/inst1", "shared", ["a", "b", "c"], []))
        self.assertTrue(self.lock.is_owned("a", shared=True))
        self.assertFalse(self.lock.is_owned("a", shared=False))
        self.assertTrue(self.lock.is_owned("a"))

    def test_last_sharer_leaving_grants_exclusive(self):
        self.acquire("a", shared=True)
        self.acquire("b", shared=True)
        d = self.acquire("x")
        self.lock.release("a")
        self.assertNoResult(d)
        self.lock.release("b")
        self.assertTrue(self.successResultOf(d))

    def test_not_recursive(self):
        self.acquire("a")
        self.failureResultOf(self.lock.acquire("a"), LockError)
        self.failureResultOf(self.lock.acquire("a", shared=True), LockError)
        d = self.acquire("b")
        self.failureResultOf(self.lock.acquire("b"), LockError)  # already waiting
        self.lock.release("a")
        self.assertTrue(self.successResultOf(d))

    def test_release_not_owned(self):
        self.assertRaises(LockError, self.lock.release, "a")
        self.acquire("a")
        self.assertRaises(LockError, self.lock.release, "b")

    def test_none_is_not_an_owner(self):
        self.failureResultOf(self.lock.acquire(None), LockError)

    def test_free_lock_info(self):
        self.assertEqual(self.lock.info(), ("instance/inst1", None, [], []))
        self.assertEqual(self.lock.owners(), frozenset())


class OrderTest(SharedLockTestBase):
    def test_fifo_within_priority(self):
        self.acquire("holder")
        owners = [f"job/{i}" for i in range(20)]
        for owner in owners:
            self.acquire(owner)
        for owner in ["holder", *owners]:
            self.lock.release(owner)
        self.assertEqual(self.granted(), ["holder", *owners])

    def test_priorities_lower_number_first(self):
        self.acquire("holder")
        self.acquire("p5", priority=5)
        self.acquire("p0a")
        self.acquire("m5", priority=-5)
        self.acquire("p0b")
        self.assertEqual(self.pending(), [("exclusive", ["m5"]), ("exclusive", ["p0a"]),
                                          ("exclusive", ["p0b"]), ("exclusive", ["p5"])])
        for owner in ["holder", "m5", "p0a", "p0b"]:
            self.lock.release(owner)
        self.assertEqual(self.granted(), ["holder", "m5", "p0a", "p0b", "p5"])

    def test_no_overtaking(self):
        self.acquire("a", shared=True)
        x = self.acquire("x")
        s = self.acquire("s", shared=True)  # compatible with "a", but "x" waits first
        self.assertNoResult(s)
        self.lock.release("a")
        self.assertTrue(self.successResultOf(x))
        self.assertNoResult(s)
        self.lock.release("x")
        self.assertTrue(self.successResultOf(s))

    def test_new_exclusive_waits_behind_waiters_even_when_free_for_it(self):
        self.acquire("a")
        b = self.acquire("b")
        self.lock.release("a")
        c = self.acquire("c")
        self.assertTrue(self.successResultOf(b))
        self.assertNoResult(c)

    def test_more_urgent_compatible_newcomer_is_granted_at_once(self):
        self.acquire("a", shared=True)
        x = self.acquire("x", priority=0)
        urgent = self.acquire("urgent", shared=True, priority=-1)
        self.assertTrue(self.successResultOf(urgent))
        self.assertNoResult(x)

    def test_shared_waiters_of_a_priority_are_granted_together(self):
        self.acquire("holder")
        self.acquire("s1", shared=True)
        self.acquire("s2", shared=True)
        self.acquire("x")
        self.acquire("s3", shared=True)  # joins the waiting shared group (Ganeti)
        self.assertEqual(self.pending(), [("shared", ["s1", "s2", "s3"]),
                                          ("exclusive", ["x"])])
        self.lock.release("holder")
        self.assertEqual(self.granted(), ["holder", "s1", "s2", "s3"])
        self.assertEqual(self.pending(), [("exclusive", ["x"])])
        # The group has been granted: later sharers queue behind "x".
        self.acquire("s4", shared=True)
        self.assertEqual(self.pending(), [("exclusive", ["x"]), ("shared", ["s4"])])
        for owner in ["s1", "s2", "s3"]:
            self.lock.release(owner)
        self.assertEqual(self.granted()[-1], "x")
        self.lock.release("x")
        self.assertEqual(self.granted()[-1], "s4")

    def test_consecutive_shared_groups_of_different_priorities(self):
        self.acquire("holder")
        self.acquire("s0", shared=True)
        self.acquire("s3", shared=True, priority=3)
        self.acquire("x", priority=4)
        self.lock.release("holder")
        self.assertEqual(self.granted(), ["holder", "s0", "s3"])
        self.assertEqual(self.pending(), [("exclusive", ["x"])])


class TimeoutTest(SharedLockTestBase):
    def test_timeout_fires_false_and_withdraws(self):
        self.acquire("a")
        d = self.acquire("b", timeout=5)
        self.clock.advance(4.9)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.assertIs(self.successResultOf(d), False)
        self.assertEqual(self.pending(), [])
        self.lock.release("a")
        self.assertEqual(self.lock.info()[1], None)

    def test_grant_cancels_timer(self):
        self.acquire("a")
        d = self.acquire("b", timeout=5)
        self.lock.release("a")
        self.assertTrue(self.successResultOf(d))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_tiny_timeout_on_busy_lock_fails_at_once(self):
        self.acquire("a")
        for timeout in (0, MIN_TIMEOUT / 2):
            self.assertIs(self.successResultOf(self.lock.acquire("b", timeout=timeout)), False)
        self.assertEqual(self.pending(), [])
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_tiny_timeout_on_free_lock_succeeds(self):
        self.assertTrue(self.successResultOf(self.lock.acquire("a", timeout=0)))

    def test_tiny_timeout_behind_waiters_fails(self):
        self.acquire("a")
        self.acquire("b")
        self.lock.release("a")  # "b" has it now
        self.assertIs(self.successResultOf(self.lock.acquire("c", timeout=0)), False)

    def test_head_timing_out_unblocks_followers(self):
        self.acquire("a", shared=True)
        x = self.acquire("x", timeout=1)
        s = self.acquire("s", shared=True)
        self.assertNoResult(s)
        self.clock.advance(1)
        self.assertIs(self.successResultOf(x), False)
        self.assertTrue(self.successResultOf(s))
        self.assertEqual(self.lock.info()[2], ["a", "s"])

    def test_shared_group_member_timing_out(self):
        self.acquire("holder")
        s1 = self.acquire("s1", shared=True, timeout=1)
        s2 = self.acquire("s2", shared=True)
        self.clock.advance(1)
        self.assertIs(self.successResultOf(s1), False)
        self.assertEqual(self.pending(), [("shared", ["s2"])])
        self.lock.release("holder")
        self.assertTrue(self.successResultOf(s2))


class CancelTest(SharedLockTestBase):
    def test_cancel_withdraws(self):
        self.acquire("a")
        d = self.lock.acquire("b", timeout=10)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.pending(), [])
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.lock.release("a")
        self.assertEqual(self.lock.info()[1], None)

    def test_cancel_head_unblocks_followers(self):
        self.acquire("a", shared=True)
        x = self.lock.acquire("x")
        s = self.acquire("s", shared=True)
        x.cancel()
        self.failureResultOf(x, defer.CancelledError)
        self.assertTrue(self.successResultOf(s))

    def test_cancel_after_grant_changes_nothing(self):
        d = self.lock.acquire("a")
        d.cancel()
        self.assertTrue(self.successResultOf(d))
        self.assertTrue(self.lock.is_owned("a"))

    def test_cancel_of_group_member_while_group_is_being_notified(self):
        self.acquire("holder")
        s1 = self.lock.acquire("s1", shared=True)
        s2 = self.lock.acquire("s2", shared=True)  # same group, told after s1
        s1.addCallback(lambda _: s2.cancel())
        self.lock.release("holder")
        self.successResultOf(s1)
        self.failureResultOf(s2, defer.CancelledError)
        self.assertEqual(self.lock.info()[1:3], ("shared", ["s1"]))


class DeleteTest(SharedLockTestBase):
    def test_delete_fails_waiters_and_later_acquires(self):
        self.acquire("a")
        b = self.lock.acquire("b", timeout=10)
        c = self.lock.acquire("c", shared=True)
        self.assertTrue(self.successResultOf(self.lock.delete("a")))
        self.failureResultOf(b, LockError)
        self.failureResultOf(c, LockError)
        self.failureResultOf(self.lock.acquire("d"), LockError)
        self.failureResultOf(self.lock.delete("d"), LockError)
        self.assertEqual(self.lock.info(), ("instance/inst1", "deleted", [], []))
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertFalse(self.lock.is_owned("a"))
        self.assertTrue(self.lock.deleted)

    def test_delete_waits_for_exclusive(self):
        self.acquire("a", shared=True)
        d = self.lock.delete("b")
        self.assertNoResult(d)
        self.lock.release("a")
        self.assertTrue(self.successResultOf(d))
        self.assertEqual(self.lock.info()[1], "deleted")

    def test_delete_times_out(self):
        self.acquire("a")
        d = self.lock.delete("b", timeout=2)
        self.clock.advance(2)
        self.assertIs(self.successResultOf(d), False)
        self.assertFalse(self.lock.deleted)

    def test_delete_while_shared_is_refused(self):
        self.acquire("a", shared=True)
        self.failureResultOf(self.lock.delete("a"), LockError)
        self.assertFalse(self.lock.deleted)


class DowngradeTest(SharedLockTestBase):
    def test_downgrade_grants_head_shared_waiters(self):
        self.acquire("a")
        s1 = self.acquire("s1", shared=True)
        s2 = self.acquire("s2", shared=True)
        x = self.acquire("x")
        self.lock.downgrade("a")
        self.assertTrue(self.successResultOf(s1))
        self.assertTrue(self.successResultOf(s2))
        self.assertNoResult(x)
        self.assertEqual(self.lock.info()[1:3], ("shared", ["a", "s1", "s2"]))

    def test_downgrade_does_not_pass_an_exclusive_head(self):
        self.acquire("a")
        x = self.acquire("x")
        s = self.acquire("s", shared=True)
        self.lock.downgrade("a")
        self.assertNoResult(x)
        self.assertNoResult(s)

    def test_downgrade_shared_is_noop_and_unowned_is_error(self):
        self.acquire("a", shared=True)
        self.lock.downgrade("a")
        self.assertTrue(self.lock.is_owned("a", shared=True))
        self.assertRaises(LockError, self.lock.downgrade, "b")


class NoRecursionTest(SynchronousTestCase):
    """Hand-offs run in a loop: long synchronous release chains keep the stack flat."""

    WAITERS = 100_000

    def test_chain_of_synchronous_releases(self):
        lock = SharedLock("instance/inst1", Clock())
        self.successResultOf(lock.acquire("holder"))
        granted = []

        def release_at_once(_result, owner):
            granted.append(owner)
            lock.release(owner)

        for i in range(self.WAITERS):
            lock.acquire(i, priority=i % 3).addCallback(release_at_once, i)
        self.assertEqual(lock.pending_count(), self.WAITERS)
        lock.release("holder")
        self.assertEqual(len(granted), self.WAITERS)
        expected = [i for prio in range(3) for i in range(prio, self.WAITERS, 3)]
        self.assertEqual(granted, expected)
        self.assertEqual(lock.info(), ("instance/inst1", None, [], []))

    def test_chain_of_reacquiring_coroutines(self):
        lock = SharedLock("node/node1", Clock())
        self.successResultOf(lock.acquire("holder"))
        rounds = []

        async def worker(owner):
            for _ in range(3):
                await lock.acquire(owner)
                rounds.append(owner)
                lock.release(owner)

        workers = [defer.Deferred.fromCoroutine(worker(i)) for i in range(20_000)]
        lock.release("holder")
        for d in workers:
            self.successResultOf(d)
        self.assertEqual(len(rounds), 60_000)
        self.assertEqual(rounds[:3], [0, 1, 2])


class FaultyWaiter:
    """A waiter (sharedlock.Waiter) whose grant callback raises."""

    def __init__(self, owner):
        self.owner = owner
        self.shared = True
        self.priority = 0
        self.timer = None
        self.group = None
        self.waiting = False

    def lock_granted(self, ok):
        raise RuntimeError("boom")

    def lock_failed(self, err):
        raise RuntimeError("boom")


class RobustnessTest(SynchronousTestCase):
    def test_failing_grant_callback_does_not_stop_the_hand_off(self):
        lock = SharedLock("node/node1", Clock())
        self.successResultOf(lock.acquire("holder"))
        self.assertIsNone(lock._submit(FaultyWaiter("bad"), None))
        good = lock.acquire("good", shared=True)
        lock.release("holder")
        self.assertTrue(self.successResultOf(good))
        self.assertEqual(lock.info()[1:3], ("shared", ["bad", "good"]))
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)
