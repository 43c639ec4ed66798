"""Forthcoming instances (seed 004) through the real queue and processor, the
built-in allocator in process: a reservation holds capacity in the config only,
counts as real for every later placement and start, is named, modified, removed
and committed, and a refused or failed commit keeps it."""

from __future__ import annotations

import json

from ganeti.core import constants as c
from ganeti.core.errors import RequestError
from ganeti.master.lu.instance_forthcoming import NOT_SUPPORTED
from tests.fakes.allocators import builtin
from tests.master.test_lu_allocate import FREE_MEMORY, AllocatorCase, alloc_op
from tests.master.test_lu_instance import create_op


def reserve_op(name=None, memory=3000, **params):
    """A reservation: only what it holds (no OS, no NICs, no name unless given)."""
    op = {"OP_ID": "OP_INSTANCE_CREATE", "forthcoming": True, "disk_template": "diskless",
          "beparams": {"maxmem": memory, "minmem": memory}}
    if name:
        op["instance_name"] = name
    op.update(params)
    return op


def commit_op(name, **params):
    op = {"OP_ID": "OP_INSTANCE_CREATE", "commit": True, "instance_name": name,
          "os_type": "busybox", "no_install": True, "start": False, "name_check": False,
          "ip_check": False}
    op.update(params)
    return op


class ForthcomingCase(AllocatorCase):
    programs = {"ganeti-place": builtin}

    def setUp(self):
        super().setUp()
        self.node_calls = []
        for name, handler in list(self.net.handlers.items()):
            self.net.handlers[name] = self._recorded(name, handler)

    def _recorded(self, name, handler):
        def call(ctx, *args):
            self.node_calls.append(name)
            return handler(ctx, *args)
        return call

    def changing_calls(self):
        """The node calls made for an instance's sake that change something there
        (the reads the allocator's input needs, the job queue's and config's
        replication and the hooks left out)."""
        return [n for n in self.node_calls
                if n.startswith(("blockdev_", "instance_", "file_storage_", "bdev_"))
                and n not in ("instance_info", "instance_list")]

    def reserved(self):
        return {i.name: i for i in self.config.instances.values() if i.forthcoming}


class ReserveTest(ForthcomingCase):
    def test_a_nameless_reservation_is_placed_and_touches_no_node(self):
        status, result, log = self.run_logged(reserve_op(disk_template="file",
                                                         disks=[{"size": 1024}]))
        self.assertEqual(status, "success", result)
        for line in ("Instance is forthcoming, not creating disks", "adding disks to cluster "
                     "config", "Instance is forthcoming; not creating the actual instance"):
            self.assertIn(line, log)  # Ganeti's job log
        self.assertEqual(sorted(result), ["nodes", "uuid"])
        inst = self.config.instances[result["uuid"]]
        self.assertEqual(inst.name, inst.uuid)  # its UUID names it until it is renamed
        self.assertTrue(inst.forthcoming)
        self.assertEqual(inst.admin_state, c.ADMINST_DOWN)
        self.assertEqual(result["nodes"], [self.config.nodes[inst.primary_node].name])
        (disk,) = [self.config.disks[u] for u in inst.disks]
        self.assertTrue(disk.forthcoming)
        self.assertEqual(disk.size, 1024)
        self.assertEqual(self.changing_calls(), [])
        self.assertEqual(len(inst.nics), 1)  # gnt-instance add's default NIC
        # the allocator was asked: placement is the same as for a real instance
        self.assertEqual(len(self.allocators.inputs("ganeti-place")), 1)

    def test_without_template_or_disks_a_reservation_is_diskless(self):
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                     "enabled_disk_templates": ["file", "diskless", "plain"]})
        op = reserve_op("r.test")
        del op["disk_template"]
        self.run_ok(op)
        self.assertEqual(self.instance("r.test").disk_template, c.DT_DISKLESS)

    def test_reservations_count_as_real_until_the_cluster_is_full(self):
        # 8000 MiB free on each of two nodes: two reservations of 3000 MiB per node
        for _ in range(4):
            self.run_ok(reserve_op())
        serial = self.config.serial_no
        cls, msg, code = self.run_error(reserve_op())
        self.assertEqual((cls, code), ("OpPrereqError", "insufficient_resources"))
        self.assertIn("FailMem", msg)
        self.assertEqual(self.config.serial_no, serial)  # the refusal changed nothing
        self.assertEqual(len(self.reserved()), 4)
        placed = sorted(self.config.nodes[i.primary_node].name for i in self.reserved().values())
        self.assertEqual(placed, ["node1.test", "node1.test", "node2.test", "node2.test"])
        # a real instance needs the room too: 2000 MiB would fit without reservations
        cls, msg, code = self.run_error(alloc_op("real.test",
                                                 beparams={"maxmem": 2500, "minmem": 2500}))
        self.assertEqual(code, "insufficient_resources", msg)

    def test_on_given_nodes_a_reservation_must_fit(self):
        self.run_ok(reserve_op("r1.test", pnode="node1.test", memory=5000))
        cls, msg, code = self.run_error(reserve_op("r2.test", pnode="node1.test",
                                                   memory=5000))
        self.assertEqual((cls, code), ("OpPrereqError", "insufficient_resources"))
        self.assertIn("Cannot reserve instance r2.test on node1.test", msg)
        self.run_ok(reserve_op("r2.test", pnode="node2.test", memory=5000))

    def test_forthcoming_and_commit_together_are_refused(self):
        cls, msg, code = self.run_error(reserve_op("r.test", commit=True))
        self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input",
                                            "Forthcoming generation and commiting are "
                                            "mutually exclusive"))

    def test_a_plain_create_still_needs_its_parameters(self):
        for key in ("disks", "instance_name", "nics", "mode"):
            op = alloc_op()
            del op[key]
            with self.assertRaises(RequestError) as caught:
                self.master.submit(op)
            self.assertIn(f"SubmitJob: key '{key}' not found", str(caught.exception))

    def test_a_reservation_cannot_be_started_or_stopped(self):
        self.run_ok(reserve_op("r.test"))
        for op_id in ("OP_INSTANCE_STARTUP", "OP_INSTANCE_SHUTDOWN", "OP_INSTANCE_REBOOT",
                      "OP_INSTANCE_REINSTALL", "OP_INSTANCE_ACTIVATE_DISKS"):
            cls, msg, code = self.run_error({"OP_ID": op_id, "instance_name": "r.test",
                                             **({"reboot_type": "hard"}
                                                if op_id == "OP_INSTANCE_REBOOT" else {})})
            self.assertEqual((cls, msg, code), ("OpPrereqError", NOT_SUPPORTED, None), op_id)

    def test_remove_and_rename_by_uuid_touch_no_node(self):
        result = self.run_ok(reserve_op(disk_template="file", disks=[{"size": 1024}]))
        uuid = result["uuid"]
        self.assertEqual(self.run_ok({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": uuid,
                                      "new_name": "named.test", "name_check": False,
                                      "ip_check": False}), "named.test")
        inst = self.config.instances[uuid]
        self.assertEqual(inst.name, "named.test")
        (disk,) = [self.config.disks[u] for u in inst.disks]
        self.assertIn("/named.test/", disk.logical_id[1])  # the file path follows the name
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": uuid})
        self.assertNotIn(uuid, self.config.instances)
        self.assertEqual(self.config.disks.get(disk.uuid), None)
        self.assertEqual(self.changing_calls(), [])

    def test_start_of_a_real_instance_leaves_room_for_reservations(self):
        self.run_ok(create_op("real.test", beparams={"maxmem": 3000, "minmem": 3000}))
        self.run_ok(reserve_op("r.test", pnode="node1.test", memory=4000))
        # then the node's free memory shrinks (another program took some)
        real = self.net.handlers["node_info"]

        async def node_info(ctx, *args):
            info = dict(await real(ctx, *args))
            info["memory_free"] = 6000
            return info
        self.net.handlers["node_info"] = node_info
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_STARTUP",
                                         "instance_name": "real.test"})
        self.assertEqual(code, "insufficient_resources", msg)
        self.assertEqual(msg, "Not enough memory on node node1.test for starting instance "
                              "real.test: needed 3000 MiB, available 6000 MiB (4000 MiB of it "
                              "reserved for forthcoming instances)")
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "r.test"})
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "real.test"})


class CapacityTest(ForthcomingCase):
    def capacity(self):
        """How many 1000 MiB diskless instances still fit (our hspace-style request)."""
        out = self.run_ok({"OP_ID": "OP_TEST_ALLOCATOR", "direction": "out",
                           "mode": "capacity", "iallocator": "ganeti-place",
                           "name": "spec.test", "memory": 1000, "vcpus": 1,
                           "disk_template": "diskless", "disks": [], "nics": [{}],
                           "os": "busybox"})
        self._info = json.loads(out)["info"]
        return json.loads(out)["result"]["count"]

    def test_capacity_counts_reservations_as_real(self):
        # memory decides (not the vCPU ratio): 7 x 1000 MiB fit in 8000 MiB free, and
        # N+1 redundancy (either node holding everything) keeps it at 7 in all
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "ipolicy": {"vcpu-ratio": 64.0}})
        self.assertEqual(FREE_MEMORY, 8000)
        self.assertEqual(self.capacity(), 7)
        # a reservation of 6000 MiB on each node leaves room for one more on each
        self.run_ok(reserve_op("r1.test", pnode="node1.test", memory=6000))
        self.run_ok(reserve_op("r2.test", pnode="node2.test", memory=6000))
        self.assertEqual(self.capacity(), 2)
        self.assertIn("the next fails: FailMem", self._info)
        # the allocator's input lists them
        data = self.allocators.inputs("ganeti-place")[-1]
        self.assertEqual(data["instances"]["r1.test"]["memory"], 6000)


class ModifyTest(ForthcomingCase):
    def test_parameters_change_in_the_config_and_growth_must_fit(self):
        self.run_ok(reserve_op("r.test", pnode="node1.test", memory=3000))
        self.run_ok(reserve_op("s.test", pnode="node1.test", memory=3000))
        self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "r.test",
                     "beparams": {"maxmem": 2000, "minmem": 2000}, "nics": [["add", {}]]})
        inst = self.instance("r.test")
        self.assertEqual((inst.beparams["maxmem"], len(inst.nics)), (2000, 2))
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_SET_PARAMS",
                                         "instance_name": "r.test",
                                         "beparams": {"maxmem": 6000, "minmem": 6000}})
        self.assertEqual(code, "insufficient_resources", msg)
        self.assertEqual(self.instance("r.test").beparams["maxmem"], 2000)
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_SET_PARAMS",
                                         "instance_name": "r.test", "runtime_mem": 1000})
        self.assertEqual(code, "wrong_state", msg)
        self.assertTrue(msg.startswith(NOT_SUPPORTED), msg)
        self.assertEqual(self.changing_calls(), [])

    def test_disks_are_added_forthcoming(self):
        self.run_ok(reserve_op("r.test", pnode="node1.test", disk_template="file",
                               disks=[{"size": 1024}]))
        self.run_ok({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "r.test",
                     "disks": [["add", {"size": 1024}]]})
        disks = [self.config.disks[u] for u in self.instance("r.test").disks]
        self.assertEqual([(d.size, d.forthcoming) for d in disks], [(1024, True), (1024, True)])
        self.assertEqual(self.changing_calls(), [])


class CommitTest(ForthcomingCase):
    def test_commit_makes_the_reservation_real_where_it_was_reserved(self):
        result = self.run_ok(reserve_op(disk_template="file", disks=[{"size": 1024}],
                                        memory=512))
        uuid = result["uuid"]
        self.run_ok({"OP_ID": "OP_INSTANCE_RENAME", "instance_name": uuid,
                     "new_name": "web.test", "name_check": False, "ip_check": False})
        nodes = self.run_ok(commit_op("web.test"))
        self.assertEqual(nodes, result["nodes"])
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "web.test"})
        inst = self.config.instances[uuid]  # the same UUID: the reservation became it
        self.assertFalse(inst.forthcoming)
        self.assertEqual((inst.name, inst.os, inst.admin_state),
                         ("web.test", "busybox", c.ADMINST_UP))
        (disk,) = [self.config.disks[u] for u in inst.disks]
        self.assertFalse(disk.forthcoming)
        self.assertIn("/web.test/", disk.logical_id[1])
        self.assertIn("blockdev_create", self.changing_calls())  # made at the commit
        self.assertTrue(self.running("web.test", result["nodes"][0]))
        self.assertEqual(self.reserved(), {})

    def test_a_commit_lacking_a_parameter_keeps_the_reservation(self):
        self.run_ok(reserve_op("r.test", pnode="node1.test", disk_template="file",
                               disks=[{"size": 1024}]))
        serial = self.config.serial_no
        op = commit_op("r.test")
        del op["os_type"]
        cls, msg, code = self.run_error(op)
        self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input",
                                            "No guest OS or OS image specified"))
        cls, msg, code = self.run_error(commit_op("nothing.test"))
        self.assertEqual((cls, code, msg), ("OpPrereqError", "wrong_input",
                                            "Instance nothing.test unknown"))
        self.assertEqual(self.config.serial_no, serial)
        self.assertTrue(self.instance("r.test").forthcoming)
        # other disks given: the reserved ones are made (Ganeti's), with a warning
        status, _result, log = self.run_logged(commit_op("r.test", disks=[{"size": 2048}]))
        self.assertEqual(status, "success")
        self.assertEqual(log[:2], [" - INFO: Nodes of instance r.test: ['node1.test']",
                                   " - WARNING: the disks given are ignored: instance r.test "
                                   "is committed with its reserved disks of 1024 MiB"])
        inst = self.instance("r.test")
        self.assertFalse(inst.forthcoming)
        self.assertEqual([self.config.disks[u].size for u in inst.disks], [1024])

    def test_commit_of_a_nameless_or_real_instance_is_refused(self):
        uuid = self.run_ok(reserve_op())["uuid"]
        cls, msg, code = self.run_error(commit_op(uuid))
        self.assertEqual(code, "wrong_input", msg)
        self.assertIn("has no name yet", msg)
        self.run_ok(alloc_op("real.test"))
        cls, msg, code = self.run_error(commit_op("real.test"))
        real = self.instance("real.test")
        self.assertEqual((cls, code, msg), (
            "OpPrereqError", "wrong_state",
            f"Instance real.test (with uuid {real.uuid}) not forthcoming but --commit was "
            "passed."))

    def test_a_failed_install_puts_the_reservation_back(self):
        self.run_ok(reserve_op("r.test", pnode="node2.test", disk_template="file",
                               disks=[{"size": 1024}]))
        before = self.instance("r.test").to_dict()
        # the fake nodes have no OS "busybox": its create script cannot run
        cls, msg, _code = self.run_error(commit_op("r.test", no_install=False))
        self.assertEqual((cls, msg), ("OpExecError", "Could not add os for instance r.test "
                                      "on node node2.test: Directory for OS busybox not "
                                      "found in search path"))
        after = self.instance("r.test")
        self.assertEqual(after.to_dict(), before)
        (disk,) = [self.config.disks[u] for u in after.disks]
        self.assertTrue(disk.forthcoming)
        self.assertIn("blockdev_remove", self.node_calls)  # what the commit made is gone
