"""OP_TEST_ALLOCATOR (gnt-debug allocator) and OP_INSTANCE_MULTI_ALLOC through the real
queue and processor, with in-process allocators."""

from __future__ import annotations

import json

from ganeti.core import constants as c
from tests.fakes.allocators import answer
from tests.master.test_lu_allocate import AllocatorCase, alloc_op


def debug_op(direction="in", mode="allocate", **params):
    op = {"OP_ID": "OP_TEST_ALLOCATOR", "direction": direction, "mode": mode,
          "name": "new.test", "memory": 256, "vcpus": 1, "disk_template": "file",
          "disks": [{"size": 1024, "mode": "rw"}], "nics": [{"mac": "aa:00:00:00:00:01"}],
          "os": "busybox"}
    op.update(params)
    return op


def place_some(data):
    """Places every instance but the last on node2."""
    names = [i["name"] for i in data["request"]["instances"]]
    return answer([[[n, ["node2.test"]] for n in names[:-1]], names[-1:]])


class TestAllocatorTest(AllocatorCase):
    programs = {"two": lambda _d: answer(["node2.test"]), "some": place_some}

    def test_in_returns_the_input_ganeti_builds(self):
        data = json.loads(self.run_ok(debug_op()))
        self.assertEqual(data["version"], 2)
        self.assertEqual(sorted(data["nodes"]), ["node1.test", "node2.test"])
        request = data["request"]
        self.assertEqual((request["type"], request["name"], request["memory"],
                          request["disk_space_total"], request["hypervisor"]),
                         ("allocate", "new.test", 256, 1024, c.HT_FAKE))
        self.assertEqual(self.allocators.calls, [])  # nothing was run

    def test_out_returns_the_raw_output(self):
        out = self.run_ok(debug_op("out", iallocator="two"))
        self.assertEqual(json.loads(out), answer(["node2.test"]))
        self.assertEqual(self.allocators.inputs("two")[0]["request"]["name"], "new.test")

    def test_relocating_a_diskless_instance_gives_its_input_as_ganeti(self):
        # Ganeti's check is "every disk mirrored", which an instance without disks passes
        self.run_ok(alloc_op("taken.test", iallocator="two"))
        data = json.loads(self.run_ok(debug_op(mode="relocate", name="taken.test")))
        self.assertEqual(data["request"], {"name": "taken.test", "disk_space_total": 0,
                                           "required_nodes": 1, "relocate_from": [],
                                           "type": "relocate"})

    def test_multi_allocate_names_count_instances(self):
        data = json.loads(self.run_ok(debug_op(mode="multi-allocate", count=3)))
        self.assertEqual([i["name"] for i in data["request"]["instances"]],
                         ["new.test0", "new.test1", "new.test2"])

    def test_our_capacity_and_balance_requests(self):
        data = json.loads(self.run_ok(debug_op(mode="capacity", spindle_use=2)))
        self.assertEqual(data["request"], {
            "type": "capacity", "disk_template": "file", "memory": 256, "vcpus": 1,
            "disks": [{"size": 1024, "mode": "rw"}], "spindle_use": 2,
            "nics": [{"mac": "aa:00:00:00:00:01"}], "group": None})
        group = next(iter(self.config.nodegroups))
        data = json.loads(self.run_ok(debug_op(mode="balance", count=5, min_gain=0.01,
                                              group_name="default")))
        self.assertEqual(data["request"], {"type": "balance", "max_moves": 5,
                                           "group": group, "min_gain": 0.01})

    def test_refusals(self):
        self.run_ok(alloc_op("taken.test", iallocator="two"))
        self.run_ok(alloc_op("filed.test", iallocator="two", disk_template="file",
                             disks=[{"size": 1024}]))
        cases = [
            (debug_op("out"), "OpPrereqError", "wrong_input", "Missing allocator name"),
            (debug_op(name="taken.test"), "OpPrereqError", "already_exists",
             "Instance 'taken.test' already in the cluster"),
            (debug_op(disks=[{"size": 1}]), "OpPrereqError", "wrong_input",
             "Invalid contents of the 'disks' parameter"),
            (debug_op(memory=None), "OpPrereqError", "wrong_input",
             "Request parameter 'memory' has invalid type <class 'NoneType'>/value None"),
            (debug_op(mode="node-evacuate"), "OpPrereqError", "wrong_input",
             "Missing instances"),
            (debug_op(mode="relocate", name="filed.test"), "OpPrereqError", "wrong_input",
             "Can't relocate non-mirrored instances"),
            (debug_op(mode="relocate", name="nosuch.test"), "OpPrereqError",
             "unknown_entity", "Instance 'nosuch.test' not known"),
            (debug_op("out", iallocator="nosuch"), "OpExecError", None,
             "Failure while running the iallocator script: iallocator module 'nosuch' not "
             "found in the search path"),
        ]
        for op, cls_want, code_want, msg_want in cases:
            cls, msg, code = self.run_error(op)
            self.assertEqual((cls, code, msg), (cls_want, code_want, msg_want))


class MultiAllocTest(AllocatorCase):
    programs = {"some": place_some}

    def multi(self, count=3, **params):
        ops = [dict(alloc_op(f"m{i}.test"), OP_ID="OP_INSTANCE_CREATE")
               for i in range(count)]
        return {"OP_ID": "OP_INSTANCE_MULTI_ALLOC", "instances": ops, **params}

    def test_places_what_fits_and_names_the_rest(self):
        result = self.run_ok(self.multi(iallocator="some"))
        self.assertEqual(result["allocatable"], ["m0.test", "m1.test"])
        self.assertEqual(result["failed"], ["m2.test"])
        self.assertEqual(len(result["jobs"]), 2)
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            status, results, _log = self.master.finish(job_id)
            self.assertEqual(status, "success", results)
        self.assertEqual(self.node_of("m0.test"), "node2.test")
        self.assertEqual(self.node_of("m1.test"), "node2.test")
        self.assertIsNone(self.instance("m2.test"))
        request = self.allocators.inputs("some")[0]["request"]
        self.assertEqual(request["type"], "multi-allocate")
        self.assertEqual([i["name"] for i in request["instances"]],
                         ["m0.test", "m1.test", "m2.test"])

    def test_dry_run_submits_nothing(self):
        result = self.run_ok(self.multi(iallocator="some", dry_run=True))
        self.assertEqual(result, {"allocatable": ["m0.test", "m1.test"],
                                  "failed": ["m2.test"], "jobs": []})
        self.assertIsNone(self.instance("m0.test"))

    def test_refusals(self):
        mixed = self.multi(2)
        mixed["instances"][0]["pnode"] = "node1.test"
        named = self.multi(1)
        named["instances"][0]["iallocator"] = "some"
        dup = self.multi(1)
        dup["instances"].append(dup["instances"][0])
        for op, msg_want in [
                (mixed, "There are instance objects providing pnode/snode while others "
                        "do not"),
                (named, "iallocator are not allowed to be set on instance objects"),
                (dup, "There are duplicate instance names: m0.test")]:
            cls, msg, code = self.run_error(op)
            self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input", msg_want))

    def test_with_nodes_every_instance_gets_a_job(self):
        op = self.multi(2)
        for inst in op["instances"]:
            inst["pnode"] = "node1.test"
        result = self.run_ok(op)
        self.assertEqual((result["allocatable"], result["failed"]),
                         (["m0.test", "m1.test"], []))
        for _ok, job_id in result["jobs"]:
            self.assertEqual(self.master.finish(job_id)[0], "success")
        self.assertEqual(self.allocators.calls, [])
