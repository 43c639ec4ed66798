"""The logical-unit contract (docs/design/lu-contract.md), on a fake clock.

The acceptance cases of issue 15:

- a queued OP_NODE_REMOVE whose node was set offline while it waited must not
  contact that node (names are resolved under the BGL, the node is read
  again with its lock held);
- OP_NODE_SET_PARAMS on a node removed while it waited fails with Ganeti's
  ``OpPrereqError`` (``unknown_entity``), not a raw ``LockError``;
- a unit retried after a lock timeout does not duplicate its locks (a fresh
  unit for every attempt).

Then the pieces of the contract one by one: phase order, owned/release
helpers, locking the nodes of locked instances, opportunistic locking,
tasklets, ResultWithJobs, hooks, error classes, lock keys by UUID.
"""

from __future__ import annotations

import os
import random
from types import SimpleNamespace
from typing import Any

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase, TestCase

from ganeti.core import errors
from ganeti.core.errors import ECODE_NOENT, LockError, OpExecError, OpPrereqError
from ganeti.master.jobs.processor import JobHandle, Processor
from ganeti.master.locking.manager import (
    BGL,
    LEVEL_CLUSTER,
    LEVEL_INSTANCE,
    LEVEL_NODE,
    LEVEL_NODE_RES,
    LockManager,
)
from ganeti.master.lu.base import (
    ALL_SET,
    LOCKS_APPEND,
    LogicalUnit,
    LUContext,
    ResultWithJobs,
    Tasklet,
)
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet

MASTER = "node1.test"


# --- acceptance: names resolved under the lock, on a whole master ---------------------

class NamesUnderLockTest(TestCase):
    """A job queued behind the BGL resolves its names only once it holds it."""

    def setUp(self) -> None:
        tmp = self.mktemp()
        os.makedirs(tmp)
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.master = InProcessMaster(tmp, small_config(candidate_pool_size=10), rpc=self.net)
        self.net.clock = self.master.reactor
        self.net.add(MASTER, "127.0.1.1", paths=self.master.paths)
        self.addCleanup(self.master.stop)
        for k in (2, 3):
            self.net.add(f"node{k}.test", f"127.0.1.{k}")
            job = self.master.submit({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                                      "primary_ip": f"127.0.1.{k}"})
            self.assertEqual(self.master.finish(job)[0], "success")
        self.locks = self.master.daemon.locks

    def hold_bgl(self) -> None:
        self.successResultOf(self.locks.acquire("test", LEVEL_CLUSTER, [BGL]))

    def queue(self, op: dict[str, Any]) -> int:
        """Submit ``op`` and let it start: it waits for the BGL the test holds."""
        job = self.master.submit(op)
        self.master.reactor.advance(0.5)
        status = self.master.client().call("QueryJobs", [job], ["status"])[0][0]
        self.assertEqual(status, "waiting")
        return job

    def change_config(self, change: Any) -> None:
        self.master.run_until(self.master.daemon.config_writer.update(change))

    def test_queued_node_remove_does_not_contact_a_node_offlined_meanwhile(self) -> None:
        self.hold_bgl()
        job = self.queue({"OP_ID": "OP_NODE_REMOVE", "node_name": "node3.test"})

        def offline(cfg: Any) -> None:  # what another job's OP_NODE_SET_PARAMS did
            node = cfg.node_by_name("node3.test")
            node.offline, node.master_candidate = True, False

        self.change_config(offline)
        self.net.contacted.clear()
        self.locks.release("test", LEVEL_CLUSTER)
        status, results, _ = self.master.finish(job)
        self.assertEqual(status, "success", results)
        self.assertIsNone(self.master.config.node_by_name("node3.test"))
        self.assertNotIn("node3.test", [name for name, _ in self.net.contacted],
                         "an offline node was contacted")

    def test_set_params_on_a_node_removed_meanwhile_is_unknown_entity(self) -> None:
        self.hold_bgl()
        job = self.queue({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                          "drained": True})
        node = self.master.config.node_by_name("node3.test")
        # what another job's OP_NODE_REMOVE did: the node and its locks are gone
        for level in (LEVEL_NODE, LEVEL_NODE_RES):
            keys = [k for k in (node.uuid, node.name) if k in self.locks.names(level)]
            self.successResultOf(self.locks.acquire("test", level, keys))
            self.locks.remove("test", level, keys)

        def remove(cfg: Any) -> None:
            gone = cfg.nodes.pop(node.uuid)
            cfg.nodegroups[gone.group].members.remove(gone.uuid)

        self.change_config(remove)
        self.locks.release_all("test")
        status, results, _ = self.master.finish(job)
        self.assertEqual(status, "error")
        self.assertEqual(results[-1], ["OpPrereqError", ["Node 'node3.test' not known",
                                                         ECODE_NOENT]])

    def test_node_locks_are_keyed_by_uuid_and_shown_by_uuid(self) -> None:
        cfg = self.master.config
        self.assertEqual(self.locks.names(LEVEL_NODE), sorted(cfg.nodes))
        self.assertEqual(self.locks.names(LEVEL_NODE_RES), sorted(cfg.nodes))
        self.assertEqual(self.locks.names("nodegroup"), sorted(cfg.nodegroups))
        uuid = cfg.node_by_name("node2.test").uuid
        self.successResultOf(self.locks.acquire("job/7", LEVEL_CLUSTER, [BGL], shared=True))
        self.successResultOf(self.locks.acquire("job/7", LEVEL_NODE, [uuid]))
        rows = self.master.client().call("Query", "lock", ["name", "owner"], None)
        shown = {row[0][1]: row[1][1] for row in rows["data"]}
        self.assertEqual(shown[f"node/{uuid}"], ["7"])  # Ganeti's monitor: node/<uuid>
        self.locks.release_all("job/7")

    def test_group_rename_keeps_its_lock(self) -> None:
        before = self.locks.names("nodegroup")
        job = self.master.submit({"OP_ID": "OP_GROUP_RENAME", "group_name": "default",
                                  "new_name": "renamed"})
        self.assertEqual(self.master.finish(job)[:2], ("success", ["renamed"]))
        self.assertEqual(self.locks.names("nodegroup"), before)


# --- the processor with hand-made units -----------------------------------------------

class Recorder:
    """What the units of one test did, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.made = 0


class ContractTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.locks = LockManager(self.clock, nodes=["n1", "n2", "n3"],
                                 instances=["i1", "i2"])
        self.processor = Processor(self.locks, self.clock, random.Random(7))
        self.rec = Recorder()
        self.submitted: list[list[dict[str, Any]]] = []
        self.hooks: Any = None

    def ctx(self, owner: str = "job/1", cfg: Any = None) -> LUContext:
        async def submit(jobs: list[list[dict[str, Any]]]) -> list[Any]:
            self.submitted.extend(jobs)
            return [[True, 100 + i] for i in range(len(jobs))]

        return LUContext(config=SimpleNamespace(config=cfg),  # type: ignore[arg-type]
                         clock=self.clock, locks=self.locks,
                         feedback=lambda kind, msg: None, query=None,  # type: ignore[arg-type]
                         query_fields=None, owner=owner,  # type: ignore[arg-type]
                         submit_jobs=submit, hooks=self.hooks)

    def execute(self, cls: type[LogicalUnit], op: dict[str, Any] | None = None,
            job_id: int = 1, cfg: Any = None) -> defer.Deferred[Any]:
        ctx = self.ctx(f"job/{job_id}", cfg)

        def factory() -> LogicalUnit:
            self.rec.made += 1
            lu = cls(ctx, op or {"OP_ID": "OP_TEST_DELAY", "duration": 1.0})
            lu.rec = self.rec  # type: ignore[attr-defined]
            return lu

        async def on_running() -> None:
            self.rec.events.append("running")

        return defer.Deferred.fromCoroutine(
            self.processor.execute(factory, JobHandle(job_id), 0, on_running))


class AppendingLU(LogicalUnit):
    """Appends a node lock in declare_locks, as Ganeti units extend their lists."""

    REQ_BGL = False

    def expand_names(self) -> None:
        self.needed_locks[LEVEL_NODE] = ["n1"]

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_NODE:
            needed = self.needed_locks[LEVEL_NODE]
            assert needed is not None
            needed.append("n2")

    async def exec(self) -> Any:
        self.rec.events.append(("exec", list(self.needed_locks[LEVEL_NODE] or []),  # type: ignore[attr-defined]
                                sorted(self.owned_locks(LEVEL_NODE))))
        return "done"


class RetryTest(ContractTestCase):
    def test_a_retried_unit_does_not_duplicate_its_locks(self) -> None:
        self.successResultOf(self.locks.acquire("other", LEVEL_NODE, ["n2"]))
        d = self.execute(AppendingLU)
        self.assertNoResult(d)
        for _ in range(3):  # a few attempts time out while n2 is held
            self.clock.advance(20)
        self.assertNoResult(d)
        self.assertGreaterEqual(self.rec.made, 3)
        self.locks.release("other", LEVEL_NODE)
        for _ in range(20):
            self.clock.advance(20)
        self.assertEqual(self.successResultOf(d), "done")
        self.assertEqual(self.rec.events, ["running", ("exec", ["n1", "n2"], ["n1", "n2"])])
        self.assertEqual(self.locks.lock_info(), [i for i in self.locks.lock_info()
                                                   if not i[2]])  # nothing held


class PhasesLU(LogicalUnit):
    REQ_BGL = True

    def _held(self) -> dict[int, list[str]]:
        return {level: sorted(self.owned_locks(level)) for level in (LEVEL_CLUSTER, LEVEL_NODE)
                if self.owned_locks(level)}

    def check_arguments(self) -> None:
        self.rec.events.append(("check_arguments", self._held()))  # type: ignore[attr-defined]

    def expand_names(self) -> None:
        self.rec.events.append(("expand_names", self._held()))  # type: ignore[attr-defined]
        self.needed_locks[LEVEL_NODE] = ["n3"]

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_NODE:
            self.rec.events.append(("declare_locks", self._held()))  # type: ignore[attr-defined]

    def check_prereq(self) -> None:
        self.rec.events.append(("check_prereq", self._held()))  # type: ignore[attr-defined]

    async def exec(self) -> Any:
        self.release_locks(LEVEL_NODE)
        self.rec.events.append(("exec", self._held()))  # type: ignore[attr-defined]
        return None


class FakeHooks:
    def __init__(self, rec: Recorder, fail_pre: bool = False) -> None:
        self.rec = rec
        self.fail_pre = fail_pre

    async def run_pre(self, lu: LogicalUnit) -> None:
        self.rec.events.append("pre")
        if self.fail_pre:
            raise OpPrereqError("Hooks failed")

    async def run_post(self, lu: LogicalUnit, result: Any = None) -> Any:
        self.rec.events.append("post")
        return result


class PhaseOrderTest(ContractTestCase):
    def test_order_and_locks_held_in_each_phase(self) -> None:
        self.hooks = FakeHooks(self.rec)
        self.assertIsNone(self.successResultOf(self.execute(PhasesLU)))
        self.assertEqual(self.rec.events, [
            ("check_arguments", {}),
            ("expand_names", {LEVEL_CLUSTER: [BGL]}),
            ("declare_locks", {LEVEL_CLUSTER: [BGL]}),
            "running",
            ("check_prereq", {LEVEL_CLUSTER: [BGL], LEVEL_NODE: ["n3"]}),
            "pre",
            ("exec", {LEVEL_CLUSTER: [BGL]}),  # released early
            "post",
        ])

    def test_names_are_expanded_only_once_the_bgl_is_held(self) -> None:
        self.successResultOf(self.locks.acquire("other", LEVEL_CLUSTER, [BGL], shared=True))
        d = self.execute(PhasesLU)
        self.assertEqual(self.rec.events, [("check_arguments", {})])
        self.locks.release("other", LEVEL_CLUSTER)
        self.clock.advance(30)
        self.successResultOf(d)
        self.assertEqual(self.rec.events[1], ("expand_names", {LEVEL_CLUSTER: [BGL]}))

    def test_a_failing_pre_hook_stops_the_unit(self) -> None:
        self.hooks = FakeHooks(self.rec, fail_pre=True)
        failure = self.failureResultOf(self.execute(PhasesLU), OpPrereqError)
        self.assertEqual(failure.value.args[0], "Hooks failed")
        self.assertNotIn("post", self.rec.events)
        self.assertFalse([e for e in self.rec.events if e[0] == "exec"])
        self.assertEqual([i for i in self.locks.lock_info() if i[2]], [])

    def test_check_arguments_fails_before_any_lock(self) -> None:
        class Bad(PhasesLU):
            def check_arguments(self) -> None:
                assert not self.owned_locks(LEVEL_CLUSTER)
                raise OpPrereqError("bad", "wrong_input")

        self.failureResultOf(self.execute(Bad), OpPrereqError)
        self.assertEqual(self.rec.made, 1)


class KeepLU(LogicalUnit):
    REQ_BGL = False

    def expand_names(self) -> None:
        self.needed_locks[LEVEL_NODE] = ALL_SET

    async def exec(self) -> Any:
        before = sorted(self.owned_locks(LEVEL_NODE))
        self.release_locks(LEVEL_NODE, keep=["n2"])
        return before, sorted(self.owned_locks(LEVEL_NODE))


class InstancesNodesLU(LogicalUnit):
    REQ_BGL = False

    def expand_names(self) -> None:
        self.needed_locks[LEVEL_INSTANCE] = ["i1"]
        self.needed_locks[LEVEL_NODE] = ["n3"]
        self.recalculate_locks[LEVEL_NODE] = LOCKS_APPEND
        self.needed_locks[LEVEL_NODE_RES] = []

    def declare_locks(self, level: int) -> None:
        if level == LEVEL_NODE:
            self.lock_instances_nodes()
        elif level == LEVEL_NODE_RES:
            self.lock_instances_nodes(primary_only=True, level=LEVEL_NODE_RES)

    async def exec(self) -> Any:
        return sorted(self.owned_locks(LEVEL_NODE)), sorted(self.owned_locks(LEVEL_NODE_RES))


class OpportunisticLU(LogicalUnit):
    REQ_BGL = False

    def expand_names(self) -> None:
        self.needed_locks[LEVEL_NODE] = ["n1", "n2", "n3"]
        self.opportunistic_locks[LEVEL_NODE] = True

    async def exec(self) -> Any:
        return self.needed_locks[LEVEL_NODE]


class HelpersTest(ContractTestCase):
    def test_release_all_but_keep(self) -> None:
        before, after = self.successResultOf(self.execute(KeepLU))
        self.assertEqual(before, ["n1", "n2", "n3"])
        self.assertEqual(after, ["n2"])

    def test_nodes_of_locked_instances(self) -> None:
        inst = SimpleNamespace(name="i1", primary_node="n1", disks=["d1"])
        cfg = SimpleNamespace(instance_by_name={"i1": inst}.get,
                              disks={"d1": SimpleNamespace(nodes=["n1", "n2"])})
        nodes, res = self.successResultOf(self.execute(InstancesNodesLU, cfg=cfg))
        self.assertEqual(nodes, ["n1", "n2", "n3"])  # appended to n3
        self.assertEqual(res, ["n1"])  # primary only

    def test_opportunistic_takes_what_is_free(self) -> None:
        self.successResultOf(self.locks.acquire("other", LEVEL_NODE, ["n2"]))
        self.assertEqual(self.successResultOf(self.execute(OpportunisticLU)), ["n1", "n3"])


class Step(Tasklet):
    def __init__(self, lu: LogicalUnit, name: str) -> None:
        super().__init__(lu)
        self.name = name

    def check_prereq(self) -> None:
        self.lu.rec.events.append(("check", self.name))  # type: ignore[attr-defined]

    async def exec(self) -> Any:
        self.lu.rec.events.append(("exec", self.name))  # type: ignore[attr-defined]


class TaskletsLU(LogicalUnit):
    REQ_BGL = False

    def expand_names(self) -> None:
        self.tasklets = [Step(self, "a"), Step(self, "b")]


class JobsLU(LogicalUnit):
    REQ_BGL = False

    async def exec(self) -> Any:
        return ResultWithJobs([[{"OP_ID": "OP_TEST_DELAY", "duration": 1.0}],
                               [{"OP_ID": "OP_TEST_DELAY", "duration": 2.0,
                                 "comment": "mine", "priority": 5}]], extra="x")


class ResultsTest(ContractTestCase):
    def test_tasklets_run_in_order(self) -> None:
        self.successResultOf(self.execute(TaskletsLU))
        self.assertEqual(self.rec.events, ["running", ("check", "a"), ("check", "b"),
                                           ("exec", "a"), ("exec", "b")])

    def test_result_with_jobs(self) -> None:
        op = {"OP_ID": "OP_TEST_DELAY", "duration": 1.0, "priority": -5, "debug_level": 2,
              "reason": [["src", "why", 1]]}
        result = self.successResultOf(self.execute(JobsLU, op))
        self.assertEqual(result, {"extra": "x", "jobs": [[True, 100], [True, 101]]})
        first, second = (job[0] for job in self.submitted)
        self.assertEqual((first["comment"], first["priority"], first["debug_level"]),
                         ("Submitted by OP_TEST_DELAY", -5, 2))
        self.assertEqual((second["comment"], second["priority"]), ("mine", 5))
        self.assertEqual(first["reason"], [["src", "why", 1]])

    def test_internal_errors_reach_clients_as_ganeti_classes(self) -> None:
        class Broken(LogicalUnit):
            REQ_BGL = False

            async def exec(self) -> Any:
                return {}["missing"]

        class BadLock(LogicalUnit):
            REQ_BGL = False

            async def exec(self) -> Any:
                raise LockError("misuse")

        for cls, text in ((Broken, "Internal error: KeyError"),
                          (BadLock, "Internal lock error: misuse")):
            failure = self.failureResultOf(self.execute(cls), OpExecError)
            self.assertIn(text, failure.value.args[0])
            self.assertEqual(errors.encode_exception(failure.value)[0], "OpExecError")
        self.flushLoggedErrors()

    def test_a_vanished_lock_restarts_the_attempt(self) -> None:
        class Gone(LogicalUnit):
            REQ_BGL = False

            def expand_names(self) -> None:
                self.needed_locks[LEVEL_NODE] = ["n1"] if self.rec.made > 1 else ["nx"]  # type: ignore[attr-defined]

            async def exec(self) -> Any:
                return sorted(self.owned_locks(LEVEL_NODE))

        self.assertEqual(self.successResultOf(self.execute(Gone)), ["n1"])
        self.assertEqual(self.rec.made, 2)
