"""OP_INSTANCE_CREATE with instance allocators, through the real queue and processor:
which allocator runs (-I NAME, '.', the cluster's default list, the built-in), the
input it is given, the locks, dry run, and what a bad or failing allocator leaves
behind (nothing)."""

from __future__ import annotations

import json
import os

import pytest

from ganeti.core import constants as c
from ganeti.master.locking.manager import BGL, LEVEL_CLUSTER, LEVEL_NODE
from tests.fakes.allocators import InlineAllocators, always, answer, emptiest
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet
from tests.master.test_lu_instance import InstanceCase, create_op

HAIL_DIR = "/usr/lib/ganeti/iallocators"
#: Every node's free memory (MiB) in these tests.
FREE_MEMORY = 8000


def alloc_op(name="inst1.test", **params):
    """A create without nodes."""
    op = create_op(name, **params)
    del op["pnode"]
    return op


class AllocatorCase(InstanceCase):
    programs: dict = {}

    def setUp(self):
        tmp = self.mktemp()
        os.makedirs(tmp)
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE],
                           enabled_disk_templates=[c.DT_DISKLESS, c.DT_FILE, c.DT_PLAIN])
        self.net = FakeNodeNet(os.path.join(tmp, "nodes"), None)
        self.allocators = InlineAllocators({"stub": emptiest, **self.programs},
                                           search_path=(HAIL_DIR,))
        self.master = InProcessMaster(tmp, cfg=cfg, rpc=self.net, allocators=self.allocators)
        self.addCleanup(self.master.stop)
        self.net.clock = self.master.reactor
        self.net.config = lambda: self.master.config
        self.net.add("node1.test", "127.0.1.1", paths=self.master.paths)
        self.net.add("node2.test", "127.0.1.2")
        self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                     "primary_ip": "127.0.1.2"})
        # the nodes' memory as a fixed machine's, not this host's (which varies)
        real = self.net.handlers["node_info"]

        async def node_info(ctx, *args):
            info = dict(await real(ctx, *args))
            info.update(memory_total=8192, memory_free=FREE_MEMORY, memory_dom0=192)
            return info
        self.net.handlers["node_info"] = node_info

    def run_logged(self, *ops):
        status, results, log = self.master.finish(self.master.submit(*ops))
        return status, results[-1], log

    def set_default(self, value):
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "default_iallocator": value})

    def node_of(self, name="inst1.test"):
        return self.config.nodes[self.instance(name).primary_node].name


class ChoiceTest(AllocatorCase):
    programs = {"node2only": always(["node2.test"]), "broken": lambda _data: "[]",
                "refuses": always([], success=False, info="FailMem"),
                "ganeti-place": always(["node1.test"])}

    def test_named_allocator_chooses_and_is_logged(self):
        status, result, log = self.run_logged(alloc_op(iallocator="node2only"))
        self.assertEqual(status, "success", result)
        self.assertEqual(result, ["node2.test"])
        self.assertEqual(self.node_of(), "node2.test")
        self.assertIn(" - INFO: Selected nodes for instance inst1.test via iallocator node2only: "
                      "node2.test", log)
        request = self.allocators.inputs("node2only")[0]["request"]
        self.assertEqual(request["type"], "allocate")
        self.assertEqual((request["name"], request["memory"], request["required_nodes"],
                          request["disk_template"], request["hypervisor"]),
                         ("inst1.test", 128, 1, "diskless", c.HT_FAKE))
        self.assertNotIn("restrict-to-nodes", request)  # every node was free

    def test_no_node_no_allocator_no_default_uses_the_built_in(self):
        self.assertEqual(self.run_ok(alloc_op()), ["node1.test"])
        self.assertEqual(len(self.allocators.inputs("ganeti-place")), 1)

    def test_dot_and_nothing_use_the_default_list_in_order(self):
        self.set_default("broken,refuses,node2only")
        status, result, log = self.run_logged(alloc_op(iallocator="."))
        self.assertEqual((status, result), ("success", ["node2.test"]))
        self.assertIn("iallocator 'broken' failed (Can't parse iallocator results: not a "
                      "dict), trying 'refuses'", log)
        self.assertIn("iallocator 'refuses' found no solution (FailMem), trying "
                      "'node2only'", log)
        self.assertEqual(self.run_ok(alloc_op("inst2.test")), ["node2.test"])
        self.assertEqual(self.allocators.inputs("ganeti-place"), [])

    def test_a_default_must_name_allocators_that_exist(self):
        cls, msg, code = self.run_error({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                         "default_iallocator": "node2only,missing"})
        self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input",
                                            "Invalid default iallocator script 'missing' "
                                            "specified"))

    def test_nodes_given_win_over_the_default(self):
        self.set_default("node2only")
        self.assertEqual(self.run_ok(create_op(pnode="node1.test")), ["node1.test"])
        self.assertEqual(self.allocators.calls, [])

    def test_both_allocator_and_node_are_refused(self):
        for name in ("stub", "."):
            cls, msg, code = self.run_error(create_op(iallocator=name))
            self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input",
                                                "Do not specify both, iallocator and node"))

    def test_dry_run_returns_the_nodes_and_creates_nothing(self):
        serial = self.config.serial_no
        status, result, log = self.run_logged(alloc_op(iallocator="node2only", dry_run=True))
        self.assertEqual((status, result), ("success", ["node2.test"]))
        self.assertIn(" - INFO: Selected nodes for instance inst1.test via iallocator node2only: "
                      "node2.test", log)
        self.assertIsNone(self.instance())
        self.assertEqual(self.config.serial_no, serial)


class LockTest(AllocatorCase):
    def test_busy_node_is_neither_waited_for_nor_chosen(self):
        locks = self.master.daemon.locks
        node1 = self.config.node_by_name("node1.test").uuid
        self.master.run_until(locks.acquire("other", LEVEL_CLUSTER, [BGL], shared=True))
        self.master.run_until(locks.acquire("other", LEVEL_NODE, [node1]))
        try:
            self.assertEqual(self.run_ok(alloc_op(iallocator="stub")), ["node2.test"])
            request = self.allocators.inputs("stub")[0]["request"]
            self.assertEqual(request["restrict-to-nodes"], ["node2.test"])
        finally:
            locks.release("other", LEVEL_NODE)
            locks.release("other", LEVEL_CLUSTER)

    def test_an_allocator_choosing_a_busy_node_fails(self):
        self.allocators.programs["rogue"] = always(["node1.test"])
        locks = self.master.daemon.locks
        node1 = self.config.node_by_name("node1.test").uuid
        self.master.run_until(locks.acquire("other", LEVEL_CLUSTER, [BGL], shared=True))
        self.master.run_until(locks.acquire("other", LEVEL_NODE, [node1]))
        try:
            cls, msg, code = self.run_error(alloc_op(iallocator="rogue"))
        finally:
            locks.release("other", LEVEL_NODE)
            locks.release("other", LEVEL_CLUSTER)
        self.assertEqual((cls, code), ("OpPrereqError", "insufficient_resources"))
        self.assertIn("not locked by this job: node1.test", msg)
        self.assertIsNone(self.instance())

    def test_no_answer_on_the_free_nodes_falls_back_to_waiting_for_all(self):
        def needs1(data):  # only node1 will do
            allowed = data["request"].get("restrict-to-nodes")
            if allowed is not None and "node1.test" not in allowed:
                return answer([], False, "FailMem: 1")
            return answer(["node1.test"])
        self.allocators.programs["needs1"] = needs1
        locks = self.master.daemon.locks
        node1 = self.config.node_by_name("node1.test").uuid
        self.master.run_until(locks.acquire("other", LEVEL_CLUSTER, [BGL], shared=True))
        self.master.run_until(locks.acquire("other", LEVEL_NODE, [node1]))
        job = self.master.submit(alloc_op(iallocator="needs1"))
        self.master.reactor.advance(5)
        self.assertFalse(self.master.daemon.queue.visible[job].finalized)  # it waits
        locks.release("other", LEVEL_NODE)
        locks.release("other", LEVEL_CLUSTER)
        status, result, log = self.master.finish(job)
        self.assertEqual((status, result[-1]), ("success", ["node1.test"]))
        self.assertIn(" - INFO: IAllocator 'needs1' failed on opportunistically acquired "
                      "nodes: FailMem: 1", log)
        self.assertIn("* falling back to full lock allocation", log)
        requests = [d["request"] for d in self.allocators.inputs("needs1")]
        self.assertEqual([r.get("restrict-to-nodes") for r in requests],
                         [["node2.test"], None])

    def test_only_the_chosen_node_stays_locked(self):
        locks = self.master.daemon.locks
        held = []
        one = self.net._one

        async def spy(target, call, args):
            if call.name == "blockdev_create":  # after the choice, before the config
                held.append({self.config.nodes[u].name for job_id in range(1, 10)
                             for u in locks.owned(f"job/{job_id}", LEVEL_NODE)})
            return await one(target, call, args)
        self.net._one = spy
        self.allocators.programs["two"] = always(["node2.test"])
        job = self.master.submit(alloc_op(iallocator="two", disk_template=c.DT_FILE,
                                          ignore_ipolicy=True,
                                          disks=[{"size": 4}]))
        status, result, _log = self.master.finish(job)
        self.assertEqual(status, "success", result)
        self.assertEqual(held, [{"node2.test"}])
        self.assertEqual(self.node_of(), "node2.test")


class BadAllocatorTest(AllocatorCase):
    programs = {
        "unknown": always(["nosuch.test"]),
        "shape": always({"node": "node1.test"}),
        "count": always(["node1.test", "node2.test"]),
        "refuses": always([], success=False, info="FailMem: 2"),
        "garbage": lambda _data: "this is not json",
        "nokeys": lambda _data: {"success": True},
    }
    cases = [
        ("unknown", "ResultValidationError", None,
         "iallocator returned unknown node(s): nosuch.test"),
        ("shape", "ResultValidationError", None,
         "iallocator returned invalid result, expected"),
        ("count", "ResultValidationError", None,
         "iallocator returned invalid number of nodes (2), required 1"),
        ("refuses", "OpPrereqError", "insufficient_resources",
         "Can't compute nodes using iallocator 'refuses': FailMem: 2"),
        ("garbage", "OpExecError", None, "Can't parse iallocator results: "),
        ("nokeys", "OpExecError", None, "Can't parse iallocator results: missing key 'info'"),
        ("nosuchallocator", "OpExecError", None,
         "Failure while running the iallocator script: iallocator module 'nosuchallocator' "
         "not found in the search path"),
    ]

    def test_each_fails_the_job_and_changes_nothing(self):
        serial = self.config.serial_no
        for name, cls_want, code_want, text in self.cases:
            cls, msg, code = self.run_error(alloc_op(iallocator=name))
            self.assertEqual(cls, cls_want, (name, msg))
            if code_want:
                self.assertEqual(code, code_want, name)
            self.assertTrue(msg.startswith(text), (name, msg))
            self.assertIsNone(self.instance())
        self.assertEqual(self.config.serial_no, serial)


@pytest.mark.subprocess
class HailTest(AllocatorCase):
    """Debian's hail, unchanged, chooses the nodes (run as a real program)."""

    def test_hail_places_a_file_instance(self):
        if not os.path.exists(os.path.join(HAIL_DIR, "hail")):
            raise AssertionError("Debian's hail is not installed")
        status, result, log = self.run_logged(alloc_op(
            iallocator="hail", disk_template=c.DT_FILE, disks=[{"size": 1024}]))
        self.assertEqual(status, "success", result)
        self.assertEqual(len(result), 1)
        self.assertIn(result[0], ("node1.test", "node2.test"))
        self.assertEqual(self.node_of(), result[0])
        self.assertIn(f" - INFO: Selected nodes for instance inst1.test via iallocator hail: "
                      f"{result[0]}", log)


@pytest.mark.subprocess
class BuiltinTest(AllocatorCase):
    """The built-in ganeti-place, run as a program (``python -m ganeti.cli.place``): the
    default when no node, no allocator and no cluster default are given."""

    def test_default_create_and_multi_allocation_place_what_fits(self):
        status, result, log = self.run_logged(alloc_op())
        self.assertEqual(status, "success", result)
        self.assertIn(f" - INFO: Selected nodes for instance inst1.test via iallocator "
                      f"ganeti-place: {result[0]}", log)
        size = FREE_MEMORY // 2 - 200  # two fit on each node
        ops = [dict(alloc_op(f"m{i}.test", beparams={"maxmem": size, "minmem": size}),
                    OP_ID="OP_INSTANCE_CREATE") for i in range(5)]
        result = self.run_ok({"OP_ID": "OP_INSTANCE_MULTI_ALLOC", "instances": ops})
        # five do not fit in the two nodes' memory: some are placed, the rest named
        self.assertEqual(sorted(result["allocatable"] + result["failed"]),
                         [f"m{i}.test" for i in range(5)])
        self.assertTrue(result["allocatable"] and result["failed"], result)
        self.assertEqual(len(result["jobs"]), len(result["allocatable"]))
        for _ok, job_id in result["jobs"]:
            self.assertEqual(self.master.finish(job_id)[0], "success")
        used: dict[str, int] = {}
        for name in result["allocatable"]:
            node = self.node_of(name)
            used[node] = used.get(node, 0) + size
        self.assertTrue(all(total <= FREE_MEMORY for total in used.values()), used)
        for name in result["failed"]:
            self.assertIsNone(self.instance(name))


    def test_capacity_and_balance_through_gnt_debug_allocator(self):
        # OP_TEST_ALLOCATOR's capacity mode, run by the built-in: a diskless spec of half a
        # node's free memory less a little fits twice per node by memory, but a diskless
        # instance fails over to any node, and hspace's global N+1 check keeps room for
        # that: one per node, then FailN1
        size = FREE_MEMORY // 2 - 200
        op = {"OP_ID": "OP_TEST_ALLOCATOR", "direction": "out", "mode": "capacity",
              "name": "spec", "memory": size, "vcpus": 1, "disk_template": "diskless",
              "disks": [], "nics": [], "iallocator": "ganeti-place"}
        answer = json.loads(self.run_ok(op))
        self.assertTrue(answer["success"], answer)
        self.assertEqual((answer["result"]["count"], answer["result"]["limit"]),
                         (2, "FailN1"), answer)
        self.assertEqual(sorted(n for nodes in answer["result"]["allocations"]
                                for n in nodes), ["node1.test", "node2.test"])
        # balance: a well-formed answer whose score never rises; nothing is changed
        serial = self.config.serial_no
        op = {"OP_ID": "OP_TEST_ALLOCATOR", "direction": "out", "mode": "balance",
              "name": "any", "count": 0, "iallocator": "ganeti-place"}
        answer = json.loads(self.run_ok(op))
        self.assertTrue(answer["success"], answer)
        result = answer["result"]
        self.assertLessEqual(result["final_score"], result["initial_score"])
        self.assertEqual(self.config.serial_no, serial, answer)


class RecreateDisksTest(AllocatorCase):
    programs = {"two": always(["node2.test"]), "full": always([], False, "FailDisk: 2")}

    def test_an_allocator_chooses_the_new_nodes(self):
        self.run_ok(create_op(disk_template=c.DT_FILE, disks=[{"size": 1024}]))
        self.assertEqual(self.node_of(), "node1.test")
        status, result, log = self.run_logged({
            "OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "inst1.test",
            "iallocator": "two"})
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Selected nodes for instance inst1.test via iallocator two: "
                      "node2.test", log)
        self.assertEqual(self.node_of(), "node2.test")
        request = self.allocators.inputs("two")[0]["request"]
        self.assertEqual((request["type"], request["name"], request["disk_template"],
                          request["disks"][0]["size"], request["nics"]),
                         ("allocate", "inst1.test", "file", 1024, [{}]))

    def test_refusals_change_nothing(self):
        self.run_ok(create_op(disk_template=c.DT_FILE, disks=[{"size": 1024}]))
        serial = self.config.serial_no
        cls, msg, code = self.run_error({
            "OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "inst1.test",
            "iallocator": "full"})
        self.assertEqual((cls, code, msg), ("OpPrereqError", "insufficient_resources",
                                            "Can't compute nodes using iallocator 'full': "
                                            "FailDisk: 2"))
        cls, msg, code = self.run_error({
            "OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "inst1.test",
            "iallocator": "two", "nodes": ["node1.test"]})
        self.assertEqual(msg, "Do not specify both, iallocator and node")
        self.assertEqual(self.config.serial_no, serial)
        self.assertEqual(self.node_of(), "node1.test")
