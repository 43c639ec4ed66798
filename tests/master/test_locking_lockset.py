"""LockSet: all-or-nothing in sorted order, running-total timeouts, add/remove at runtime."""

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import LockError
from ganeti.master.locking import LockSet


class LockSetTestBase(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.ls = LockSet("instance", ["c", "a", "b"], self.clock)

    def holders(self, name):
        return self.ls.lock(name).info()[2]

    def set_lock_info(self):
        return self.ls.info()[0]


class AcquireTest(LockSetTestBase):
    def test_acquire_some_and_release(self):
        self.assertEqual(self.successResultOf(self.ls.acquire("j1", ["b", "a"])), {"a", "b"})
        self.assertEqual(self.ls.owned("j1"), {"a", "b"})
        self.assertTrue(self.ls.is_owned("j1"))
        self.assertFalse(self.ls.owns_all("j1"))
        self.ls.release("j1", ["a"])
        self.assertEqual(self.ls.owned("j1"), {"b"})
        self.ls.release("j1")
        self.assertFalse(self.ls.is_owned("j1"))
        self.assertEqual([i[1] for i in self.ls.info()], [None] * 4)

    def test_single_name_string(self):
        self.assertEqual(self.successResultOf(self.ls.acquire("j1", "c", shared=True)), {"c"})
        self.assertTrue(self.ls.lock("c").is_owned("j1", shared=True))

    def test_unknown_name(self):
        f = self.failureResultOf(self.ls.acquire("j1", ["a", "zz"]), LockError)
        self.assertIn("zz", str(f.value))
        self.assertFalse(self.ls.is_owned("j1"))

    def test_twice_in_one_set_is_refused(self):
        self.ls.acquire("j1", ["a"])
        self.failureResultOf(self.ls.acquire("j1", ["b"]), LockError)
        self.ls.acquire("j2", ["a"])  # waits
        self.failureResultOf(self.ls.acquire("j2", ["c"]), LockError)

    def test_sorted_order_and_waiting(self):
        self.ls.acquire("j1", ["b"])
        d = self.ls.acquire("j2", ["c", "b", "a"])
        self.assertNoResult(d)
        # Took "a" first, now waits for "b"; "c" untouched.
        self.assertEqual(self.holders("a"), ["j2"])
        self.assertEqual(self.ls.lock("b").info()[3], [("exclusive", ["j2"])])
        self.assertEqual(self.holders("c"), [])
        self.ls.release("j1")
        self.assertEqual(self.successResultOf(d), {"a", "b", "c"})

    def test_timeout_releases_everything(self):
        self.ls.acquire("j1", ["b"])
        d = self.ls.acquire("j2", None, timeout=10)
        self.clock.advance(9)
        self.assertNoResult(d)
        self.clock.advance(1)
        self.assertIsNone(self.successResultOf(d))
        self.assertFalse(self.ls.is_owned("j2"))
        self.assertEqual(self.holders("a"), [])
        self.assertEqual(self.set_lock_info()[1], None)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        # j2 may try again.
        self.assertNoResult(self.ls.acquire("j2", ["a", "b"]))

    def test_timeout_is_a_running_total(self):
        self.ls.acquire("j1", ["a"])
        self.ls.acquire("j3", ["c"])
        d = self.ls.acquire("j2", ["a", "b", "c"], timeout=10)
        self.clock.advance(6)
        self.ls.release("j1")  # j2 gets a and b, then waits for c with 4 s left
        self.assertEqual(self.holders("b"), ["j2"])
        self.clock.advance(3.9)
        self.assertNoResult(d)
        self.clock.advance(0.1)
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual((self.holders("a"), self.holders("b")), ([], []))

    def test_budget_spent_on_free_locks_still_takes_them(self):
        self.ls.acquire("j1", ["a"])
        d = self.ls.acquire("j2", ["a", "b"], timeout=1)
        self.clock.advance(1 - 1e-9)
        self.ls.release("j1")
        self.assertEqual(self.successResultOf(d), {"a", "b"})

    def test_cancel_releases_what_was_taken(self):
        self.ls.acquire("j1", ["c"])
        d = self.ls.acquire("j2", None, timeout=30)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertFalse(self.ls.is_owned("j2"))
        self.assertEqual([i[1] for i in self.ls.info()], [None, None, None, "exclusive"])
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_opportunistic_takes_what_is_free(self):
        self.ls.acquire("j1", ["b"])
        got = self.successResultOf(self.ls.acquire("j2", ["a", "b", "c"], opportunistic=True))
        self.assertEqual(got, {"a", "c"})
        self.assertEqual(self.ls.owned("j2"), {"a", "c"})
        self.assertEqual(self.ls.lock("b").info()[3], [])

    def test_opportunistic_nothing_free(self):
        self.ls.acquire("j1", None)
        self.assertEqual(self.successResultOf(self.ls.acquire("j2", ["a"], opportunistic=True)),
                         set())
        self.assertFalse(self.ls.is_owned("j2"))

    def test_shared_all_by_several(self):
        self.assertEqual(self.successResultOf(self.ls.acquire("j1", None, shared=True)),
                         {"a", "b", "c"})
        self.assertEqual(self.successResultOf(self.ls.acquire("j2", None, shared=True)),
                         {"a", "b", "c"})
        self.assertEqual(self.set_lock_info()[1:3], ("shared", ["j1", "j2"]))

    def test_downgrade(self):
        self.ls.acquire("j1", None)
        waiter = self.ls.acquire("j2", ["a"], shared=True)
        self.ls.downgrade("j1")
        self.assertEqual(self.successResultOf(waiter), {"a"})
        self.assertEqual(self.set_lock_info()[1], "shared")
        self.assertRaises(LockError, self.ls.downgrade, "j3")

    def test_release_errors(self):
        self.assertRaises(LockError, self.ls.release, "j1")
        self.ls.acquire("j1", ["a"])
        self.assertRaises(LockError, self.ls.release, "j1", ["b"])
        self.assertEqual(self.ls.owned("j1"), {"a"})


class AddRemoveTest(LockSetTestBase):
    def test_add_and_acquire(self):
        self.successResultOf(self.ls.add(["d"]))
        self.assertEqual(self.ls.names(), ["a", "b", "c", "d"])
        self.assertIn("d", self.ls)
        self.assertEqual(self.successResultOf(self.ls.acquire("j1", None)),
                         {"a", "b", "c", "d"})

    def test_add_existing_fails(self):
        self.failureResultOf(self.ls.add(["a"]), LockError)
        self.failureResultOf(self.ls.add(["x", "x"]), LockError)

    def test_acquiring_all_blocks_additions(self):
        self.successResultOf(self.ls.acquire("j1", None, shared=True))
        added = self.ls.add("d")
        self.assertNoResult(added)
        self.assertEqual(self.set_lock_info()[3], [("exclusive", ["instance/add"])])
        self.ls.release("j1")
        self.successResultOf(added)
        self.assertIn("d", self.ls)

    def test_waiting_acquire_all_blocks_additions(self):
        self.ls.acquire("j1", ["c"])
        whole = self.ls.acquire("j2", None)
        added = self.ls.add("d")
        self.assertNoResult(added)
        self.ls.release("j1")
        self.assertEqual(self.successResultOf(whole), {"a", "b", "c"})
        self.assertNoResult(added)
        self.ls.release("j2")
        self.successResultOf(added)

    def test_partial_release_ends_the_whole_set_hold(self):
        self.ls.acquire("j1", None)
        added = self.ls.add("d")
        self.ls.release("j1", ["a"])
        self.successResultOf(added)
        self.assertEqual(self.ls.owned("j1"), {"b", "c"})

    def test_add_does_not_wait_for_partial_holders(self):
        self.ls.acquire("j1", ["a"])
        self.successResultOf(self.ls.add("d"))

    def test_add_acquired_by_owner(self):
        self.successResultOf(self.ls.add(["e", "d"], owner="j1", shared=True))
        self.assertEqual(self.ls.owned("j1"), {"d", "e"})
        self.assertTrue(self.ls.lock("d").is_owned("j1", shared=True))

    def test_add_by_owner_of_whole_set(self):
        self.ls.acquire("j1", None)
        self.successResultOf(self.ls.add("d", owner="j1"))
        self.assertEqual(self.ls.owned("j1"), {"a", "b", "c", "d"})

    def test_add_by_partial_owner_is_refused(self):
        self.ls.acquire("j1", ["a"])
        self.failureResultOf(self.ls.add("d", owner="j1"), LockError)
        self.ls.acquire("j2", None, shared=False)
        self.failureResultOf(self.ls.add("d", owner="j2"), LockError)  # acquiring

    def test_remove(self):
        self.ls.acquire("j1", ["a", "b"])
        waiter = self.ls.acquire("j2", ["a"])
        self.assertEqual(self.ls.remove("j1", ["a"]), ["a"])
        self.failureResultOf(waiter, LockError)
        self.assertEqual(self.ls.names(), ["b", "c"])
        self.assertEqual(self.ls.owned("j1"), {"b"})
        self.failureResultOf(self.ls.acquire("j3", ["a"]), LockError)
        self.successResultOf(self.ls.add("a"))  # the name can come back

    def test_remove_requires_exclusive_hold(self):
        self.ls.acquire("j1", ["a"], shared=True)
        self.assertRaises(LockError, self.ls.remove, "j1", ["a"])
        self.assertRaises(LockError, self.ls.remove, "j1", ["b"])
        self.assertRaises(LockError, self.ls.remove, "j1", ["zz"])
        self.assertEqual(self.ls.names(), ["a", "b", "c"])

    def test_acquire_all_skips_removed_members(self):
        self.ls.acquire("j1", ["b"])
        whole = self.ls.acquire("j2", None)
        self.ls.remove("j1", "b")
        self.assertEqual(self.successResultOf(whole), {"a", "c"})

    def test_named_member_removed_while_waiting_fails(self):
        self.ls.acquire("j1", ["b"])
        d = self.ls.acquire("j2", ["a", "b", "c"])
        self.ls.remove("j1", "b")
        self.failureResultOf(d, LockError)
        self.assertEqual(self.holders("a"), [])
        self.assertFalse(self.ls.is_owned("j2"))

    def test_acquire_all_of_empty_set(self):
        ls = LockSet("network", [], self.clock)
        self.assertEqual(self.successResultOf(ls.acquire("j1", None)), set())
        self.assertTrue(ls.owns_all("j1"))
        ls.release("j1")
        self.assertFalse(ls.is_owned("j1"))


class ChainTest(SynchronousTestCase):
    def test_many_jobs_on_overlapping_sets_release_synchronously(self):
        ls = LockSet("node", [f"n{i}" for i in range(4)], Clock())
        self.successResultOf(ls.acquire("holder", None))
        done = []

        def finish(got, owner):
            done.append(owner)
            ls.release(owner)

        for i in range(20_000):
            names = [f"n{i % 4}", f"n{(i + 1) % 4}"]
            ls.acquire(i, names, shared=i % 3 == 0).addCallback(finish, i)
        ls.release("holder")
        self.assertEqual(len(done), 20_000)
        self.assertEqual([info[1] for info in ls.info()], [None] * 5)


class MoreAcquireAllTest(LockSetTestBase):
    def test_timeout_while_waiting_for_the_set_lock(self):
        self.ls.acquire("j1", None)
        d = self.ls.acquire("j2", None, timeout=3)
        self.assertEqual(self.set_lock_info()[3], [("exclusive", ["j2"])])
        self.clock.advance(3)
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.set_lock_info()[2:], (["j1"], []))

    def test_opportunistic_all(self):
        self.ls.acquire("j1", ["a"])
        got = self.successResultOf(self.ls.acquire("j2", None, opportunistic=True))
        self.assertEqual(got, {"b", "c"})
        self.assertTrue(self.ls.owns_all("j2"))

    def test_cancel_while_waiting_for_the_set_lock(self):
        self.ls.acquire("j1", None, shared=True)
        d = self.ls.acquire("j2", None)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.set_lock_info()[2:], (["j1"], []))
        self.successResultOf(self.ls.acquire("j2", ["a"], shared=True))

    def test_priority_across_the_set(self):
        self.ls.acquire("j1", ["b"])
        low = self.ls.acquire("low", ["b"], priority=5)
        high = self.ls.acquire("high", ["a", "b"], priority=-5)
        self.ls.release("j1")
        self.assertEqual(self.successResultOf(high), {"a", "b"})
        self.assertNoResult(low)
        self.ls.release("high")
        self.assertEqual(self.successResultOf(low), {"b"})
