"""The processor's lock phase: Ganeti's retry strategy and seed 001's operation C."""

import random

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import OpExecError
from ganeti.master.jobs.processor import JobHandle, Processor
from ganeti.master.locking.manager import LEVEL_INSTANCE, LockManager
from ganeti.master.lu.base import LogicalUnit, LUContext


class InstanceLocksLU(LogicalUnit):
    """Takes some instance locks (no BGL) and records when it ran."""

    OP_ID = "OP_TEST_INSTANCE_LOCKS"
    REQ_BGL = False  # the BGL shared, as every unit takes it

    def __init__(self, names, ran):
        # a context with nothing in it (no hooks, no job submission): the processor
        # reads only those, and the unit touches nothing else
        super().__init__(LUContext(config=None, clock=None, locks=None, feedback=None,
                                   query=None, query_fields=None), {})
        self.names = names
        self.ran = ran

    def expand_names(self):
        self.needed_locks[LEVEL_INSTANCE] = self.names

    async def exec(self):
        self.ran.append(tuple(self.names))
        return "done"


class OperationCTest(SynchronousTestCase):
    def holders(self):
        """Lock name -> owners, from the lock monitor (partial acquisitions included);
        the BGL, which every unit holds shared, is left out."""
        return {name: owners for name, _, owners, _ in self.locks.lock_info()
                if owners and not name.startswith("cluster/")}

    def setUp(self):
        self.clock = Clock()
        self.locks = LockManager(self.clock, instances=["inst1", "inst2", "inst3", "inst4"])
        self.processor = Processor(self.locks, self.clock, random.Random(3))
        self.ran = []

    def run_lu(self, job_id, names):
        running = []

        async def on_running():
            running.append(job_id)

        d = defer.Deferred.fromCoroutine(self.processor.execute(
            lambda: InstanceLocksLU(names, self.ran), JobHandle(job_id), 0, on_running))
        return d

    def test_operation_c_is_not_stuck_behind_b(self):
        # A holds inst4 for a long time.
        self.successResultOf(self.locks.acquire("A", "instance", ["inst4"]))
        # B wants all four: it takes inst1..3 and waits for inst4.
        b = self.run_lu(2, ["inst1", "inst2", "inst3", "inst4"])
        self.assertEqual(self.holders(), {"instance/inst1": ["job/2"], "instance/inst2":
                                          ["job/2"], "instance/inst3": ["job/2"],
                                          "instance/inst4": ["A"]})
        # C wants only inst1, held by B for now.
        c = self.run_lu(3, ["inst1"])
        self.assertNoResult(c)
        # B's first attempt times out (about 5 s): it releases everything and C runs.
        self.clock.advance(5.5)
        self.assertEqual(self.successResultOf(c), "done")
        self.assertEqual(self.ran, [("inst1",)])
        self.assertNoResult(b)
        # When A is done, B gets all its locks on a later attempt and runs.
        self.locks.release("A", "instance")
        for _ in range(20):
            self.clock.advance(10)
        self.assertEqual(self.successResultOf(b), "done")
        self.assertEqual(self.holders(), {})  # nothing held afterwards

    def test_cancel_while_waiting_releases_everything(self):
        self.successResultOf(self.locks.acquire("A", "instance", ["inst4"]))
        handle = JobHandle(2)

        async def on_running():
            pass

        d = defer.Deferred.fromCoroutine(self.processor.execute(
            lambda: InstanceLocksLU(["inst1", "inst4"], self.ran), handle, 0, on_running))
        self.assertEqual(self.holders()["instance/inst1"], ["job/2"])
        handle.request_cancel(kill=False)
        self.failureResultOf(d, defer.CancelledError)
        self.assertEqual(self.holders(), {"instance/inst4": ["A"]})
        self.assertEqual(self.ran, [])


class ReservationsTest(SynchronousTestCase):
    """A job's temporary reservations are dropped with its locks, whatever happened."""

    def setUp(self):
        from ganeti.master.config.reservations import ReservationManager
        from tests.fakes.configs import small_config
        self.clock = Clock()
        self.locks = LockManager(self.clock, instances=["inst1"])
        self.reservations = ReservationManager(random.Random(1))
        self.processor = Processor(self.locks, self.clock, random.Random(3),
                                   reservations=self.reservations)
        self.cfg = small_config()

    def run_lu(self, job_id, fail):
        test = self

        class ReservingLU(InstanceLocksLU):
            async def exec(self):
                test.reservations.reserve_mac(f"job/{job_id}", test.cfg, "aa:00:00:00:00:01")
                test.assertEqual(len(test.reservations.reserved(f"job/{job_id}")), 1)
                if fail:
                    raise OpExecError("boom")
                return "done"

        async def on_running():
            pass

        return defer.Deferred.fromCoroutine(self.processor.execute(
            lambda: ReservingLU(["inst1"], []), JobHandle(job_id), 0, on_running))

    def test_dropped_after_success(self):
        self.assertEqual(self.successResultOf(self.run_lu(1, fail=False)), "done")
        self.assertEqual(self.reservations.reserved(), set())

    def test_dropped_after_failure(self):
        self.failureResultOf(self.run_lu(2, fail=True))
        self.assertEqual(self.reservations.reserved(), set())
        # another job can now take the same MAC
        self.assertEqual(self.successResultOf(self.run_lu(3, fail=False)), "done")
