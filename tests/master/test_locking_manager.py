"""LockManager: level order, BGL, runtime add/remove, the lock monitor, and seed 001's
"Operation C" scenario driven by the lock-attempt strategy."""


from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import LockError, OpPrereqError
from ganeti.core.lockstrategy import LOCK_ATTEMPT_TIMEOUTS, LockAttemptSchedule
from ganeti.master.locking import (
    BGL,
    LEVEL_INSTANCE,
    LEVEL_NAMES,
    LEVEL_NODE,
    LOCK_FIELDS,
    LockManager,
    level_index,
)
from ganeti.master.locking.manager import monitor_owner

FIELDS = ["name", "mode", "owner", "pending"]


class ManagerTestBase(SynchronousTestCase):
    def setUp(self):
        self.clock = Clock()
        self.lm = LockManager(self.clock, nodes=["node2", "node1"], nodegroups=["g1"],
                              instances=["inst1", "inst2"], networks=["net1"])

    def take(self, owner, level, names=None, shared=False):
        return self.successResultOf(self.lm.acquire(owner, level, names, shared=shared))

    def row(self, name):
        return {r[0]: r for r in self.lm.query(FIELDS)}[name]


class LevelsTest(ManagerTestBase):
    def test_level_names(self):
        self.assertEqual(LEVEL_NAMES, ("cluster", "instance", "nodegroup", "node", "node-res",
                                       "network"))
        self.assertEqual(level_index("node-res"), 4)
        self.assertEqual(level_index(3), 3)
        self.assertRaises(LockError, level_index, "node-alloc")
        self.assertRaises(LockError, level_index, 6)
        self.failureResultOf(self.lm.acquire("j", "bogus"), LockError)

    def test_initial_members(self):
        self.assertEqual(self.lm.names("cluster"), [BGL])
        self.assertEqual(self.lm.names("node"), ["node1", "node2"])
        self.assertEqual(self.lm.names("node-res"), ["node1", "node2"])
        self.assertEqual(self.lm.names("network"), ["net1"])

    def test_increasing_order(self):
        self.take("j", "cluster", shared=True)
        self.assertEqual(self.take("j", "instance", ["inst1"]), {"inst1"})
        self.assertEqual(self.take("j", LEVEL_NODE, None, shared=True), {"node1", "node2"})
        self.assertEqual(self.take("j", "network", ["net1"]), {"net1"})
        self.assertEqual(self.lm.owned("j", "node"), {"node1", "node2"})
        self.assertTrue(self.lm.is_owned("j", "cluster"))

    def test_lower_level_after_higher_is_refused(self):
        self.take("j", "node", ["node1"])
        f = self.failureResultOf(self.lm.acquire("j", "instance", ["inst1"]), LockError)
        self.assertIn("node", str(f.value))
        self.failureResultOf(self.lm.acquire("j", "cluster"), LockError)
        self.failureResultOf(self.lm.acquire("j", "node", ["node2"]), LockError)  # same level
        self.assertEqual(self.lm.owned("j", "instance"), set())

    def test_waiting_at_a_higher_level_counts(self):
        self.take("other", "node", ["node1"])
        pending = self.lm.acquire("j", "node", ["node1"])
        self.failureResultOf(self.lm.acquire("j", "instance", ["inst1"]), LockError)
        self.lm.release("other", "node")
        self.successResultOf(pending)

    def test_bgl_shared_and_exclusive(self):
        for job in ("j1", "j2", "j3"):
            self.take(job, "cluster", shared=True)
        exclusive = self.lm.acquire("j4", "cluster", [BGL])
        self.assertNoResult(exclusive)
        for job in ("j1", "j2", "j3"):
            self.lm.release(job, "cluster")
        self.assertEqual(self.successResultOf(exclusive), {BGL})

    def test_bgl_released_last(self):
        self.take("j", "cluster", shared=True)
        self.take("j", "instance", ["inst2"])
        self.assertRaises(LockError, self.lm.release, "j", "cluster")
        self.lm.release("j", "instance")
        self.lm.release("j", "cluster")
        self.assertFalse(self.lm.is_owned("j", "cluster"))

    def test_release_all(self):
        self.take("j", "cluster", shared=True)
        self.take("j", "instance")
        self.take("j", "node", ["node2"])
        self.take("j", "node-res", ["node2"], shared=True)
        self.lm.release_all("j")
        for level in LEVEL_NAMES:
            self.assertFalse(self.lm.is_owned("j", level))
        self.assertEqual(self.lm.query(["name", "mode"]), [])  # nothing held: none listed
        self.assertEqual({info[1] for info in self.lm.lock_info()}, {None})

    def test_downgrade(self):
        self.take("j", "instance", ["inst1"])
        self.lm.downgrade("j", "instance")
        self.assertEqual(self.take("k", "instance", ["inst1"], shared=True), {"inst1"})


class AddRemoveTest(ManagerTestBase):
    def test_add_then_acquire_and_remove(self):
        self.successResultOf(self.lm.add("instance", ["inst3"]))
        self.assertEqual(self.take("j", "instance", ["inst3"]), {"inst3"})
        self.assertEqual(self.lm.remove("j", "instance", ["inst3"]), ["inst3"])
        self.assertEqual(self.lm.names("instance"), ["inst1", "inst2"])
        self.assertEqual(self.lm.owned("j", "instance"), set())

    def test_cluster_level_is_fixed(self):
        self.failureResultOf(self.lm.add("cluster", ["X"]), LockError)
        self.take("j", "cluster")
        self.assertRaises(LockError, self.lm.remove, "j", "cluster", [BGL])

    def test_add_waits_for_whole_level_holders(self):
        self.take("j", "node", None, shared=True)
        added = self.lm.add(LEVEL_NODE, ["node3"])
        self.assertNoResult(added)
        self.lm.release("j", "node")
        self.successResultOf(added)
        self.assertEqual(self.lm.names("node"), ["node1", "node2", "node3"])
        self.assertEqual(self.lm.names("node-res"), ["node1", "node2"])

    def test_add_acquired_respects_order(self):
        self.take("j", "node", ["node1"])
        self.failureResultOf(self.lm.add("instance", ["inst9"], owner="j"), LockError)
        self.successResultOf(self.lm.add("node-res", ["node9"], owner="j"))
        self.assertEqual(self.lm.owned("j", "node-res"), {"node9"})

    def test_add_by_owner_of_whole_level(self):
        self.take("j", "instance", None)
        self.successResultOf(self.lm.add(LEVEL_INSTANCE, "inst3", owner="j"))
        self.assertEqual(self.lm.owned("j", "instance"), {"inst1", "inst2", "inst3"})


class MonitorTest(ManagerTestBase):
    def test_fields_declared_once_as_ganeti(self):
        self.assertEqual(list(LOCK_FIELDS), FIELDS)
        # Ganeti 3.0's QueryFields("lock"): every field of kind "other".
        self.assertEqual({f.kind for f in LOCK_FIELDS.values()}, {"other"})
        self.assertEqual([(f.title, f.doc) for f in LOCK_FIELDS.values()], [
            ("Name", "Lock name"),
            ("Mode", "Mode in which the lock is currently acquired (exclusive or shared)"),
            ("Owner", "Current lock owner(s)"),
            ("Pending", "Jobs waiting for the lock")])

    def test_idle_locks_are_not_listed(self):
        self.assertEqual(self.lm.query(FIELDS), [])
        self.assertEqual(len(self.lm.lock_info()), 15)  # the full view stays for debugging

    def test_rows_of_held_and_pending_locks_only(self):
        self.take("job/1", "cluster", [BGL], shared=True)
        self.take("job/2", "cluster", [BGL], shared=True)
        self.take("job/1", "instance", ["inst1"])
        self.lm.acquire("job/3", "instance", ["inst1"], shared=True)
        self.lm.acquire("job/4", "instance", ["inst1"], shared=True)
        self.lm.acquire("job/10", "instance", ["inst1"])
        rows = self.lm.query(FIELDS)
        names = [r[0] for r in rows]
        # The set lock of each busy level is listed too (idle), as in Ganeti.
        self.assertEqual(names, ["cluster/BGL", "cluster/[lockset]", "instance/[lockset]",
                                 "instance/inst1"])
        self.assertEqual(self.row("cluster/BGL"), ["cluster/BGL", "shared", ["1", "2"], []])
        self.assertEqual(self.row("cluster/[lockset]"), ["cluster/[lockset]", None, [], []])
        self.assertEqual(self.row("instance/inst1"),
                         ["instance/inst1", "exclusive", ["1"],
                          [["shared", ["3", "4"]], ["exclusive", ["10"]]]])
        self.assertEqual(self.lm.query(["owner", "name"])[0], [["1", "2"], "cluster/BGL"])

    def test_owners_sorted_as_numbers(self):
        for job in ("job/10", "job/9", "job/100"):
            self.take(job, "cluster", [BGL], shared=True)
        self.assertEqual(self.row("cluster/BGL")[2], ["9", "10", "100"])

    def test_whole_level_held(self):
        self.take("job/1", "cluster", [BGL], shared=True)
        self.take("job/1", "node", None, shared=True)
        names = {r[0]: r for r in self.lm.query(FIELDS)}
        self.assertEqual(names["node/[lockset]"], ["node/[lockset]", "shared", ["1"], []])
        self.assertEqual(names["node/node1"], ["node/node1", "shared", ["1"], []])
        self.assertNotIn("node-res/[lockset]", names)

    def test_member_names_shown_through_monitor_names(self):
        self.lm.monitor_names = lambda level, member: (f"{level}-{member}-uuid"
                                                       if level == "node" else member)
        self.take("job/1", "cluster", [BGL], shared=True)
        self.take("job/1", "node", ["node2"])
        self.assertEqual([r[0] for r in self.lm.query(["name"])],
                         ["cluster/BGL", "cluster/[lockset]", "node/[lockset]",
                          "node/node-node2-uuid"])

    def test_other_owners_named_by_str(self):
        class Job:
            def __init__(self, job_id):
                self.job_id = job_id

            def __str__(self):
                return f"job/{self.job_id}"

        self.take(Job(7), "instance", ["inst2"])
        self.take("watcher", "instance", ["inst1"])
        self.assertEqual(self.row("instance/inst2")[2], ["7"])
        self.assertEqual(self.row("instance/inst1")[2], ["watcher"])
        self.assertEqual(monitor_owner("job/x"), "job/x")

    def test_removed_lock_leaves_the_monitor(self):
        self.take("j", "instance", ["inst2"])
        self.lm.remove("j", "instance", ["inst2"])
        self.assertNotIn("instance/inst2", [r[0] for r in self.lm.query(["name"])])

    def test_unknown_field(self):
        self.assertRaises(OpPrereqError, self.lm.query, ["name", "colour"])


class OperationCTest(SynchronousTestCase):
    """Seed 001: B must not keep inst1..3 while it waits for inst4 for ever.

    A holds inst4.  B wants every instance and retries with growing timeouts,
    releasing what it took between attempts.  C wants inst1 only and gets it
    while B is between attempts, long before A finishes.
    """

    def test_operation_c(self):
        clock = Clock()
        lm = LockManager(clock, instances=["inst1", "inst2", "inst3", "inst4"])
        a, b, c = "job/A", "job/B", "job/C"
        self.successResultOf(lm.acquire(a, "instance", ["inst4"]))
        schedule = LockAttemptSchedule()  # no jitter: attempts of 5.0, 7.95, ... s
        timeouts_seen = []
        c_had_inst1 = []
        d_c = None

        async def operation_b():
            while True:
                timeout = schedule.next_timeout()
                timeouts_seen.append(timeout)
                got = await lm.acquire(b, "instance", None, priority=schedule.priority,
                                       timeout=timeout)
                if got is not None:
                    return got
                # Between attempts: B holds nothing at this level.
                self.assertEqual(lm.owned(b, "instance"), set())
                c_had_inst1.append(d_c is not None and d_c.called)
                schedule.check_priority_increase()

        d_b = defer.Deferred.fromCoroutine(operation_b())
        rows = {r[0]: r for r in lm.query(["name", "owner", "pending"])}
        self.assertEqual(rows["instance/inst1"][1], [b])
        self.assertEqual(rows["instance/inst4"][1:], [[a], [["exclusive", [b]]]])

        d_c = lm.acquire(c, "instance", ["inst1"])
        self.assertNoResult(d_c)  # B holds inst1 during its first attempt

        clock.advance(LOCK_ATTEMPT_TIMEOUTS[0])
        self.assertEqual(self.successResultOf(d_c), {"inst1"})
        self.assertEqual(c_had_inst1, [True])  # C got inst1 as B let go
        self.assertEqual(timeouts_seen, list(LOCK_ATTEMPT_TIMEOUTS[:2]))
        # B's second attempt now queues behind C on inst1.
        rows = {r[0]: r for r in lm.query(["name", "owner", "pending"])}
        self.assertEqual(rows["instance/inst1"][1:], [[c], [["exclusive", [b]]]])

        lm.release(c, "instance")  # C finishes; B proceeds up to inst4 again
        self.assertNoResult(d_b)
        self.assertEqual(lm.lockset("instance").lock("inst3").info()[2], [b])
        lm.release(a, "instance")  # A finishes
        self.assertEqual(self.successResultOf(d_b), {"inst1", "inst2", "inst3", "inst4"})
        self.assertEqual(timeouts_seen, list(LOCK_ATTEMPT_TIMEOUTS[:2]))
        self.assertEqual(clock.getDelayedCalls(), [])

    def test_without_retries_c_waits_for_a(self):
        clock = Clock()
        lm = LockManager(clock, instances=["inst1", "inst2", "inst3", "inst4"])
        lm.acquire("A", "instance", ["inst4"])
        d_b = lm.acquire("B", "instance", None)  # blocking, the 2.0 behaviour
        d_c = lm.acquire("C", "instance", ["inst1"])
        clock.advance(3600)
        self.assertNoResult(d_c)
        lm.release("A", "instance")
        self.successResultOf(d_b)
        self.assertNoResult(d_c)
        lm.release("B", "instance")
        self.successResultOf(d_c)

    def test_priority_rises_until_blocking(self):
        clock = Clock()
        lm = LockManager(clock, instances=["inst1"])
        lm.acquire("A", "instance", ["inst1"])
        schedule = LockAttemptSchedule(priority=-19)
        attempts = []

        async def operation():
            while True:
                timeout = schedule.next_timeout()
                attempts.append((schedule.priority, timeout))
                got = await lm.acquire("B", "instance", ["inst1"], priority=schedule.priority,
                                       timeout=timeout)
                if got is not None:
                    return got
                schedule.check_priority_increase()

        d = defer.Deferred.fromCoroutine(operation())
        n = len(LOCK_ATTEMPT_TIMEOUTS)
        while clock.getDelayedCalls():  # each attempt's timer, one after another
            clock.advance(clock.getDelayedCalls()[0].getTime() - clock.seconds())
        self.assertNoResult(d)
        self.assertAlmostEqual(clock.seconds(), 2 * sum(LOCK_ATTEMPT_TIMEOUTS))
        self.assertEqual(len(attempts), 2 * n + 1)
        self.assertEqual({p for p, _ in attempts[:n]}, {-19})
        self.assertEqual({p for p, _ in attempts[n:2 * n]}, {-20})
        self.assertEqual(attempts[-1], (-20, None))  # highest priority: block
        self.assertEqual(lm.lockset("instance").lock("inst1").info()[3],
                         [("exclusive", ["B"])])
        lm.release("A", "instance")
        self.assertEqual(self.successResultOf(d), {"inst1"})
