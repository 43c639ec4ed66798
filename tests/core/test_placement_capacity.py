"""ganeti.core.placement.capacity: hspace's standard allocation, on clusters whose
capacity is counted by hand; the capacity request's wire form and result check."""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import place
from ganeti.core.errors import ParseError, ResultValidationError
from ganeti.core.placement import model, solve, wire
from ganeti.core.placement.allocate import AllocationError, Options
from ganeti.core.placement.capacity import capacity, limit_reason
from ganeti.core.placement.requests import Capacity, CapacityResult, request_from_wire
from ganeti.core.placement.state import ClusterState

POLICY = model.IPolicy(minmax=((model.ISpec(0, 1, 0, 0, 0, 0),
                                model.ISpec(32768, 8, 1 << 20, 16, 8, 12)),),
                       std=model.ISpec(128, 1, 1024, 1, 1, 1),
                       disk_templates=("drbd", "plain", "file", "diskless"), vcpu_ratio=4.0,
                       spindle_ratio=32.0)


def node(name: str, memory: int = 4096, disk: int = 100_000, cpus: int = 4,
         group: str = "g1", **flags) -> model.Node:
    res = model.NodeResources(total_memory=memory, reserved_memory=0, free_memory=memory,
                              total_disk=disk, free_disk=disk, total_spindles=0,
                              free_spindles=0, total_cpus=cpus, reserved_cpus=1,
                              i_pri_memory=0, i_pri_up_memory=0)
    return model.Node(name=name, group=group, primary_ip="192.0.2.1",
                      secondary_ip="192.0.2.1", resources=res,
                      ndparams={"spindle_count": 1, "exclusive_storage": False}, **flags)


def cluster(*nodes: model.Node, policies: dict[str, str] | None = None) -> model.Cluster:
    policies = policies or {"g1": "preferred"}
    groups = {uuid: model.Group(uuid, f"group-{uuid}", pol, POLICY)
              for uuid, pol in policies.items()}
    return model.Cluster(name="c", ipolicy=POLICY, groups=groups,
                         nodes={n.name: n for n in nodes}, instances={})


def spec(template: str, memory: int, vcpus: int = 1, disk: int = 1024,
         group: str | None = None) -> Capacity:
    disks = () if template == "diskless" else (model.Disk(disk),)
    return Capacity(disk_template=template, memory=memory, vcpus=vcpus, disks=disks,
                    group=group)


def fill(c: model.Cluster, req: Capacity, checks: bool = True) -> CapacityResult:
    return capacity(ClusterState(c), req, Options(capacity_checks=checks))


class CapacityTest(SynchronousTestCase):
    def test_memory_bound_without_capacity_checks(self):
        # 4096 MiB nodes take 4 instances of 1000 MiB (a fifth leaves -904): 3 x 4
        result = fill(cluster(node("a"), node("b"), node("c")), spec("plain", 1000),
                      checks=False)
        self.assertEqual((result.count, result.limit), (12, "FailMem"))
        self.assertEqual(sorted(n for (n,) in result.allocations),
                         sorted(["a", "b", "c"] * 4))
        # the score spreads them: every node has one before any has two
        self.assertEqual(sorted(n for (n,) in result.allocations[:3]), ["a", "b", "c"])

    def test_global_n1_stops_plain_instances_earlier(self):
        # every node's plain instances must be recreatable on the two others: (3, 3, 2)
        # still is (node a's 3 go to b's 1 free slot and c's 2), a ninth never is
        result = fill(cluster(node("a"), node("b"), node("c")), spec("plain", 1000))
        self.assertEqual((result.count, result.limit), (8, "FailN1"))
        self.assertEqual(sorted(sorted(n for (n,) in result.allocations).count(x)
                                for x in "abc"), [2, 3, 3])

    def test_drbd_disk_bound(self):
        # 10,000 MiB disks take 10,128 with drbd metadata on both nodes: 4 fit in 50,000
        c = cluster(node("a", disk=50_000), node("b", disk=50_000))
        result = fill(c, spec("drbd", 512, disk=10_000))
        self.assertEqual((result.count, result.limit), (4, "FailDisk"))
        for nodes in result.allocations:
            self.assertEqual(sorted(nodes), ["a", "b"])
        self.assertEqual(sorted(p for p, _ in result.allocations), ["a", "a", "b", "b"])

    def test_vcpu_ratio_bound(self):
        # 2 CPUs at a vCPU ratio of 4 hold 8 vCPUs: two instances of 3
        c = cluster(node("a", cpus=2), node("b", cpus=2), node("c", cpus=2))
        result = fill(c, spec("diskless", 128, vcpus=3))
        self.assertEqual((result.count, result.limit), (6, "FailCPU"))

    def test_only_usable_nodes_and_allocable_groups(self):
        c = cluster(node("a"), node("b", offline=True), node("c", drained=True),
                    node("d", group="g2"), node("e", vm_capable=False),
                    policies={"g1": "preferred", "g2": "unallocable"})
        result = fill(c, spec("plain", 1000), checks=False)
        self.assertEqual((result.count, {n for (n,) in result.allocations}), (4, {"a"}))

    def test_one_group(self):
        c = cluster(node("a"), node("b", group="g2"), node("c", group="g2"),
                    policies={"g1": "preferred", "g2": "preferred"})
        result = fill(c, spec("plain", 1000, group="g2"), checks=False)
        self.assertEqual((result.count, {n for (n,) in result.allocations}), (8, {"b", "c"}))
        by_name = fill(c, spec("plain", 1000, group="group-g2"), checks=False)
        self.assertEqual(by_name.count, 8)
        with self.assertRaises(AllocationError):
            fill(c, spec("plain", 1000, group="nope"))

    def test_drbd_pairs_stay_in_a_group(self):
        c = cluster(node("a"), node("b"), node("c", group="g2"),
                    policies={"g1": "preferred", "g2": "preferred"})
        result = fill(c, spec("drbd", 1000, disk=1000))
        self.assertGreater(result.count, 0)
        self.assertTrue(all(set(nodes) == {"a", "b"} for nodes in result.allocations))

    def test_a_node_failing_n1_takes_nothing(self):
        base = cluster(node("a", memory=2048), node("b", memory=8192))
        inst = model.Instance(name="big", nodes=("b", "a"), memory=4096, vcpus=1,
                              disk_template="drbd", disks=(model.Disk(1000),),
                              admin_state="up")
        result = fill(base.with_instance(inst), spec("plain", 128))
        self.assertEqual((result.count, result.allocations, result.limit), (0, (), "FailN1"))

    def test_nothing_fits_names_the_reason(self):
        result = fill(cluster(node("a", memory=1024)), spec("plain", 2000))
        self.assertEqual((result.count, result.limit), (0, "FailMem"))
        with self.assertRaises(AllocationError):  # no node at all
            fill(cluster(node("a", offline=True)), spec("plain", 128))

    def test_limit_reason_ties_go_to_htools_order(self):
        self.assertEqual(limit_reason([{"FailCPU": 2}, {"FailMem": 1, "FailDisk": 2}]),
                         "FailDisk")
        self.assertEqual(limit_reason([{"FailN1": 3, "FailMem": 3}]), "FailMem")
        self.assertEqual(limit_reason([]), "FailMem")


class CapacityWireTest(SynchronousTestCase):
    WIRE = {"type": "capacity", "disk_template": "drbd", "memory": 512, "vcpus": 2,
            "disks": [{"size": 1024, "mode": "rw"}], "spindle_use": 1, "nics": [],
            "group": None}

    def test_round_trip(self):
        req = request_from_wire(self.WIRE)
        self.assertIsInstance(req, Capacity)
        self.assertEqual(req.to_wire(), self.WIRE)
        self.assertEqual((req.required_nodes, req.disk_space_total), (2, 1024 + 128))

    def test_bad_group(self):
        with self.assertRaises(ParseError):
            request_from_wire({**self.WIRE, "group": 7})

    def test_result_check(self):
        c = cluster(node("a"), node("b"))
        req = request_from_wire(self.WIRE)
        good = {"count": 1, "allocations": [["a", "b"]], "limit": "FailMem"}
        self.assertEqual(req.check_result(good, c),
                         CapacityResult(1, (("a", "b"),), "FailMem"))
        for bad in ({**good, "count": 2}, {**good, "allocations": [["a"]]},
                    {**good, "allocations": [["a", "zz"]]}, {"count": 1}, [1]):
            with self.assertRaises(ResultValidationError, msg=bad):
                req.check_result(bad, c)

    def test_answer_through_the_solver_table(self):
        c = cluster(node("a"), node("b"), node("c"))
        ialloc = wire.AllocatorInput(c, spec("plain", 1000))
        answer = solve.answer(ialloc, Options(capacity_checks=False))
        self.assertTrue(answer.success, answer.info)
        text = json.loads(wire.render_answer(answer))
        self.assertEqual((text["result"]["count"], text["result"]["limit"]), (12, "FailMem"))
        parsed = wire.parse_answer(wire.render_answer(answer), ialloc)
        self.assertEqual(parsed.result.count, 12)
        rendered = wire.render_input(ialloc)
        self.assertEqual(wire.parse_input(json.loads(json.dumps(rendered))).request,
                         ialloc.request)

    def test_state_is_filled(self):
        state = ClusterState(cluster(node("a"), node("b")))
        before = state.score()
        capacity(state, replace(spec("plain", 1000)), Options(capacity_checks=False))
        self.assertEqual(len([n for n in state.insts if n.startswith("new-")]), 8)
        self.assertNotEqual(state.score(), before)


class NotRedundantTest(SynchronousTestCase):
    def test_a_cluster_already_not_n1_redundant_takes_nothing_with_the_check(self):
        # a's plain instance (3000 MiB) fits on no other node: hspace's group is "bad"
        base = cluster(node("a"), node("b", memory=2048))
        inst = model.Instance(name="big", nodes=("a",), memory=3000, vcpus=1,
                              disk_template="plain", disks=(model.Disk(1000),),
                              admin_state="up")
        full = base.with_instance(inst)
        self.assertEqual(fill(full, spec("plain", 128)), CapacityResult(0, (), "FailN1"))
        self.assertGreater(fill(full, spec("plain", 128), checks=False).count, 0)


class ProgramTest(SynchronousTestCase):
    def test_ganeti_place_answers_a_capacity_input(self):
        c = cluster(node("a"), node("b"), node("c"))
        path = os.path.join(self.mktemp())
        with open(path, "w", encoding="utf-8") as f:
            json.dump(wire.render_input(wire.AllocatorInput(c, spec("plain", 1000))), f)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(place.main(["--no-capacity-checks", path]), 0)
        answer = json.loads(out.getvalue())
        self.assertTrue(answer["success"], answer)
        self.assertEqual((answer["result"]["count"], answer["result"]["limit"]),
                         (12, "FailMem"))
        self.assertEqual(len(answer["result"]["allocations"]), 12)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(place.main([path]), 0)  # with the global N+1 check
        self.assertEqual(json.loads(out.getvalue())["result"]["count"], 8)
