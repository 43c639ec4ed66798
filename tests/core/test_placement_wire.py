"""ganeti.core.placement: real Ganeti 3.0 iallocator inputs parse into the model and render
back key for key; answers are checked as Ganeti's master checks them.

The files under tests/data/iallocator/ were written by Debian's Ganeti 3.0.2 on a real
three-node cluster (real_cluster_up.sh), groups ``default`` (node1, node2) and ``g2``
(node3), instances inst1 (file, up, node1) and inst2 (diskless, down, node2):
``X.in.json`` is the input Ganeti gave the allocator for ``gnt-debug iallocator
--dir out -m X``, ``X.hail.json`` what Debian's hail answered.
"""

from __future__ import annotations

import copy
import json
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import OpExecError, ParseError, ResultValidationError
from ganeti.core.placement import model, requests, wire

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                    "iallocator")
MODES = ("allocate", "multi-allocate", "node-evacuate", "change-group")


def real_input(mode: str) -> dict:
    with open(os.path.join(DATA, f"{mode}.in.json"), encoding="utf-8") as f:
        return json.load(f)


def hail_answer(mode: str) -> str:
    with open(os.path.join(DATA, f"{mode}.hail.json"), encoding="utf-8") as f:
        return f.read()


class RealInputTest(SynchronousTestCase):
    def test_round_trip_is_exact(self):
        for mode in MODES:
            data = real_input(mode)
            parsed = wire.parse_input(data)
            self.assertEqual(parsed.request.MODE, mode)
            self.assertEqual(wire.render_input(parsed), data, mode)

    def test_model_holds_the_cluster(self):
        cluster = wire.parse_input(real_input("allocate")).cluster
        self.assertEqual(cluster.name, "cluster.example.com")
        self.assertEqual(cluster.tags, ("ctag1",))
        self.assertEqual(sorted(g.name for g in cluster.groups.values()), ["default", "g2"])
        self.assertEqual(cluster.group_of("node3.example.com").name, "g2")
        node1 = cluster.nodes["node1.example.com"]
        self.assertTrue(node1.usable)
        self.assertEqual(node1.resources.i_pri_memory, 256)
        self.assertEqual(node1.resources.i_pri_up_memory, 256)
        self.assertEqual(cluster.nodes["node2.example.com"].tags, ("ntag",))
        inst1 = cluster.instances["inst1.example.com"]
        inst2 = cluster.instances["inst2.example.com"]
        self.assertEqual((inst1.primary, inst1.secondaries, inst1.running),
                         ("node1.example.com", (), True))
        self.assertEqual((inst1.disk_template, inst1.disk_space_total), ("file", 512))
        self.assertEqual((inst2.vcpus, inst2.running, inst2.disks), (2, False, ()))
        self.assertEqual([i.name for i in cluster.primaries("node2.example.com")],
                         ["inst2.example.com"])
        policy = cluster.groups[cluster.nodes["node1.example.com"].group].ipolicy
        self.assertEqual(policy.disk_templates, ("diskless", "file"))
        self.assertEqual((policy.vcpu_ratio, policy.spindle_ratio), (4.0, 32.0))
        self.assertTrue(policy.allows(model.ISpec(512, 1, 1024, 1, 1, 1), "file"))
        self.assertFalse(policy.allows(model.ISpec(512, 1, 1024, 1, 1, 1), "plain"))
        self.assertFalse(policy.allows(model.ISpec(65536, 1, 1024, 1, 1, 1), "file"))

    def test_requests_are_typed(self):
        alloc = wire.parse_input(real_input("allocate")).request
        self.assertIsInstance(alloc, requests.Allocate)
        self.assertEqual((alloc.name, alloc.memory, alloc.required_nodes, alloc.disk_space_total),
                         ("inst3.example.com", 512, 1, 1024))
        multi = wire.parse_input(real_input("multi-allocate")).request
        self.assertEqual([r.name for r in multi.instances],
                         ["inst4.example.com0", "inst4.example.com1"])
        evac = wire.parse_input(real_input("node-evacuate")).request
        self.assertEqual((evac.instances, evac.evac_mode),
                         (("inst2.example.com",), "primary-only"))
        change = wire.parse_input(real_input("change-group")).request
        self.assertEqual((change.instances, change.target_groups), (("inst2.example.com",), ()))

    def test_hail_answers_parse(self):
        answers = {m: wire.parse_answer(hail_answer(m), wire.parse_input(real_input(m)))
                   for m in MODES}
        self.assertEqual(answers["allocate"].result, ("node1.example.com",))
        self.assertEqual(answers["multi-allocate"].result.placed,
                         (("inst4.example.com0", ("node3.example.com",)),
                          ("inst4.example.com1", ("node1.example.com",))))
        evac = answers["node-evacuate"].result
        self.assertEqual(evac.moved, (requests.Moved("inst2.example.com", "default",
                                                     ("node1.example.com",)),))
        self.assertEqual(evac.jobs[0][0]["OP_ID"], "OP_INSTANCE_MIGRATE")
        change = answers["change-group"].result
        self.assertEqual((change.moved, change.failed[0][0]), ((), "inst2.example.com"))
        for mode, answer in answers.items():  # and they render back as hail printed them
            self.assertEqual(json.loads(wire.render_answer(answer)),
                             json.loads(hail_answer(mode)), mode)


class BadInputTest(SynchronousTestCase):
    def assert_bad(self, data, needle):
        err = self.assertRaises(ParseError, wire.parse_input, data)
        self.assertIn(needle, str(err))

    def test_errors_name_the_key(self):
        data = real_input("allocate")
        del data["nodes"]["node1.example.com"]["free_memory"]
        self.assert_bad(data, "nodes.node1.example.com.free_memory: missing")
        data = real_input("allocate")
        data["request"]["memory"] = "lots"
        self.assert_bad(data, "request.memory: 'lots' is not a int")
        data = real_input("allocate")
        data["request"]["type"] = "teleport"
        self.assert_bad(data, "unknown request type 'teleport'")
        data = real_input("allocate")
        data["version"] = 1
        self.assert_bad(data, "version 1")
        data = real_input("allocate")
        data["instances"]["inst1.example.com"]["nodes"] = ["ghost"]
        self.assert_bad(data, "instance inst1.example.com: unknown node ghost")
        data = real_input("node-evacuate")
        data["request"]["evac_mode"] = "some"
        self.assert_bad(data, "request.evac_mode")
        self.assert_bad([], "not an object")

    def test_offline_node_has_no_resources(self):
        data = real_input("allocate")
        node = data["nodes"]["node3.example.com"]
        for key in ("total_memory", "reserved_memory", "free_memory", "total_disk", "free_disk",
                    "total_spindles", "free_spindles", "total_cpus", "reserved_cpus",
                    "i_pri_memory", "i_pri_up_memory"):
            del node[key]
        node["offline"] = True
        parsed = wire.parse_input(data)
        self.assertIsNone(parsed.cluster.nodes["node3.example.com"].resources)
        self.assertFalse(parsed.cluster.nodes["node3.example.com"].usable)
        self.assertEqual(wire.render_input(parsed), data)


class AnswerTest(SynchronousTestCase):
    def setUp(self):
        self.alloc = wire.parse_input(real_input("allocate"))
        self.evac = wire.parse_input(real_input("node-evacuate"))

    def answer(self, result, success=True):
        return json.dumps({"success": success, "info": "x", "result": result})

    def test_ganeti_messages(self):
        for text, needle in [("not json", "Can't parse iallocator results: "),
                             ("[]", "Can't parse iallocator results: not a dict"),
                             ('{"success": true, "info": ""}',
                              "Can't parse iallocator results: missing key 'result'")]:
            err = self.assertRaises(OpExecError, wire.parse_answer, text, self.alloc)
            self.assertIn(needle, str(err))
        err = self.assertRaises(ResultValidationError, wire.parse_answer,
                                self.answer(["node1.example.com", "node2.example.com"]),
                                self.alloc)
        self.assertEqual(str(err), "iallocator returned invalid number of nodes (2), required 1")

    def test_shapes_and_unknown_nodes(self):
        for result in ("node1.example.com", [1], [None], {"a": 1}):
            self.assertRaises(ResultValidationError, wire.parse_answer,
                              self.answer(result), self.alloc)
        err = self.assertRaises(ResultValidationError, wire.parse_answer,
                                self.answer(["ghost.example.com"]), self.alloc)
        self.assertIn("unknown node(s): ghost.example.com", str(err))
        bad_job = [[], [], [[{"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "x"}]]]
        self.assertRaises(ResultValidationError, wire.parse_answer, self.answer(bad_job),
                          self.evac)
        self.assertRaises(ResultValidationError, wire.parse_answer,
                          self.answer([[["i", "g"]], [], []]), self.evac)

    def test_failure_keeps_any_result_and_old_key(self):
        answer = wire.parse_answer(self.answer("anything", success=False), self.alloc)
        self.assertEqual((answer.success, answer.result), (False, "anything"))
        old = wire.parse_answer('{"success": true, "info": "", "nodes": ["node2.example.com"]}',
                                self.alloc)
        self.assertEqual(old.result, ("node2.example.com",))
        self.assertEqual(json.loads(wire.render_answer(wire.Answer(False, "no", ("a",)))),
                         {"success": False, "info": "no", "result": []})

    def test_relocate_stays_in_the_group(self):
        data = real_input("allocate")
        data["request"] = {"type": "relocate", "name": "inst1.example.com",
                           "disk_space_total": 512, "required_nodes": 1,
                           "relocate_from": ["node1.example.com"]}
        ialloc = wire.parse_input(data)
        self.assertEqual(wire.render_input(ialloc)["request"], data["request"])
        ok = wire.parse_answer(self.answer(["node2.example.com"]), ialloc)
        self.assertEqual(ok.result, ("node2.example.com",))
        err = self.assertRaises(ResultValidationError, wire.parse_answer,
                                self.answer(["node3.example.com"]), ialloc)
        self.assertEqual(str(err), "Groups of nodes returned by iallocator (default, g2) "
                                   "differ from original groups (default)")


class ModelTest(SynchronousTestCase):
    def test_disk_space_as_ganeti(self):
        self.assertEqual(model.disk_space([("drbd", 1024), ("drbd", 512)]), 1536 + 256)
        self.assertEqual(model.disk_space([("plain", 100), ("diskless", 5), ("blockdev", 7)]),
                         100)
        self.assertRaises(KeyError, model.disk_space, [("floppy", 1)])
        self.assertEqual([model.required_nodes(t) for t in ("drbd", "plain", "file")],
                         [2, 1, 1])
        alloc = requests.Allocate(name="i", memory=128, vcpus=1, disk_template="drbd",
                                  disks=(model.Disk(1024),))
        self.assertEqual((alloc.required_nodes, alloc.disk_space_total), (2, 1152))

    def test_with_instance_takes_resources(self):
        cluster = wire.parse_input(real_input("allocate")).cluster
        before = cluster.nodes["node2.example.com"].resources
        inst = model.Instance(name="new", nodes=("node2.example.com",), memory=512, vcpus=2,
                              disk_template="file", disks=(model.Disk(1000),),
                              admin_state="up")
        after = cluster.with_instance(inst)
        res = after.nodes["node2.example.com"].resources
        self.assertEqual(before.free_memory - res.free_memory, 512)
        self.assertEqual(before.free_disk - res.free_disk, 1000)
        self.assertEqual(res.i_pri_up_memory - before.i_pri_up_memory, 512)
        self.assertEqual(after.primary_vcpus("node2.example.com"), 4)
        self.assertNotIn("new", cluster.instances)  # the original is unchanged
        self.assertEqual(after.check(), [])

    def test_request_wire_round_trips(self):
        made = [
            requests.AllocateSecondary("inst1.example.com"),
            requests.NodeEvacuate(("a", "b"), "secondary-only"),
            requests.ChangeGroup(("a",), ("uuid-1",)),
            requests.Relocate("a", ("n1",), 1152),
            requests.MultiAllocate((requests.Allocate(
                name="x", memory=128, vcpus=1, disk_template="plain",
                disks=(model.Disk(100),), restrict_to_nodes=("n1",)),)),
        ]
        for request in made:
            self.assertEqual(requests.request_from_wire(copy.deepcopy(request.to_wire())),
                             request)
        self.assertRaises(ValueError, requests.NodeEvacuate, ("a",), "most")
