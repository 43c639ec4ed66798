"""The drbd template through the real queue and processor with three in-process node
daemons (tests/master/drbd_cluster.py): creation on both nodes with Ganeti's job log,
the reservations, removal, refusals that change nothing, a failed creation that leaves
nothing behind, activate/deactivate, startup and shutdown, grow-disk on both nodes,
the allocator choosing two nodes."""

from __future__ import annotations

import pytest

from ganeti.core import constants as c
from tests.master.drbd_cluster import VG_SIZE, DrbdCase, drbd_op

#: the nodes' volumes are made by the fake lvm program (a child process)
pytestmark = pytest.mark.subprocess


class CreateTest(DrbdCase):
    def test_create_on_both_nodes_and_remove(self) -> None:
        status, result, log = self.run_logged(drbd_op())
        self.assertEqual(status, "success", result)
        self.assertEqual(result, ["node1.test", "node2.test"])
        self.assertIn(" - INFO: Waiting for instance inst1.test to sync disks", log)
        self.assertIn(" - INFO: Instance inst1.test's disks are in sync", log)
        cfg = self.config
        inst = self.instance()
        node1, node2 = (cfg.node_by_name(n).uuid for n in ("node1.test", "node2.test"))
        disk, = self.disks()
        self.assertEqual((inst.disk_template, disk.dev_type, disk.size), ("drbd", "drbd", 256))
        pnode, snode, port, pminor, sminor, secret = disk.logical_id
        self.assertEqual((pnode, snode, pminor, sminor), (node1, node2, 0, 0))
        self.assertEqual(disk.nodes, [node1, node2])
        self.assertLessEqual(port, cfg.cluster.highest_used_port)  # recorded
        self.assertEqual(len(secret), 40)
        data, meta = disk.children
        self.assertEqual((data.size, meta.size), (256, c.DRBD_META_SIZE))
        names = {f"xenvg/{data.logical_id[1]}", f"xenvg/{meta.logical_id[1]}"}
        self.assertTrue(data.logical_id[1].endswith(".disk0_data"))
        for node in ("node1.test", "node2.test"):  # both ends have both volumes
            self.assertEqual(set(self.volumes(node)), names)
        self.assertEqual(self.volumes("node3.test"), {})
        for node in ("node1.test", "node2.test"):
            found = self.find(node)
            self.assertEqual((found["dev_path"], found["major"], found["minor"]),
                             ("/dev/drbd0", 147, 0))
            self.assertFalse(found["is_degraded"])
        self.assertEqual(self.master.daemon.reservations.reserved(), set())  # none left
        self.run_ok({"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "inst1.test"})
        self.assertIsNone(self.instance())
        for node in ("node1.test", "node2.test"):
            self.assertEqual(self.volumes(node), {})
            self.assertIsNone(self.find_removed(node, disk))

    def find_removed(self, node, disk):
        from ganeti.core.rpcdefs.disks import DiskArg
        result = self.node_call(node, "blockdev_find", [DiskArg(disk)])
        return result.payload

    def test_second_instance_gets_the_next_port_and_minors(self) -> None:
        self.run_ok(drbd_op())
        self.run_ok(drbd_op("inst2.test", pnode="node2.test", snode="node1.test",
                            disks=[{"size": 128}, {"size": 64}]))
        first, = self.disks()
        second = self.disks("inst2.test")
        port = first.logical_id[2]
        self.assertEqual([d.logical_id[2] for d in second], [port + 1, port + 2])
        # node2 is the primary of inst2: its minors come first in the logical id
        self.assertEqual([d.logical_id[3:5] for d in second], [[1, 1], [2, 2]])
        self.assertEqual(self.find("node1.test", "inst2.test", 1)["minor"], 2)

    def test_no_wait_for_sync_looks_once(self) -> None:
        status, _result, log = self.run_logged(drbd_op(wait_for_sync=False))
        self.assertEqual(status, "success")
        self.assertIn("* checking mirrors status", log)
        self.assertNotIn(" - INFO: Waiting for instance inst1.test to sync disks", log)

    def test_the_allocator_chooses_two_nodes(self) -> None:
        op = drbd_op(iallocator="ganeti-place", disks=[{"size": 1024}])  # the policy's minimum
        del op["pnode"], op["snode"]
        status, result, _log = self.run_logged(op)
        self.assertEqual(status, "success", result)
        self.assertEqual(len(result), 2)
        disk, = self.disks()
        self.assertEqual(set(disk.nodes), {self.config.node_by_name(n).uuid for n in result})


@pytest.mark.subprocess
class HailTest(DrbdCase):
    def test_debians_hail_chooses_two_nodes(self) -> None:
        op = drbd_op(iallocator="hail", disks=[{"size": 1024}])
        del op["pnode"], op["snode"]
        status, result, _log = self.run_logged(op)
        self.assertEqual(status, "success", result)
        self.assertEqual(len(set(result)), 2)
        request = self.allocators.inputs("hail")[0]["request"]
        self.assertEqual((request["required_nodes"], request["disk_template"],
                          request["disk_space_total"]), (2, "drbd", 1024 + 128))


class RefusalTest(DrbdCase):
    def assert_refused(self, op, code, text):
        serial = self.config.serial_no
        cls, msg, ecode = self.run_error(op)
        self.assertEqual((cls, ecode), ("OpPrereqError", code), msg)
        self.assertEqual(msg, text)
        self.assertEqual(self.config.serial_no, serial)
        for node in ("node1.test", "node2.test", "node3.test"):
            self.assertEqual(self.volumes(node), {})

    def test_refusals_change_nothing(self) -> None:
        op = drbd_op()
        del op["snode"]
        self.assert_refused(op, "wrong_input",
                            "The networked disk templates need a mirror node")
        self.assert_refused(drbd_op(snode="node1.test"), "wrong_input",
                            "The secondary node cannot be the primary node")
        self.assert_refused(drbd_op(snode="nosuch.test"), "unknown_entity",
                            "Node 'nosuch.test' not known")
        for flag, value, text in (("offline", True, "Can't use offline node node2.test"),
                                  ("drained", True, "Can't use drained node node2.test"),
                                  ("vm_capable", False,
                                   "Can't use non-vm_capable node node2.test")):
            self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                         flag: value, "force": True})
            self.assert_refused(drbd_op(), "wrong_state", text)
            self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                         flag: not value, "force": True})

    def test_space_on_both_nodes_counts_the_metadata(self) -> None:
        # fits the data alone but not with the 128 MiB metadata volume
        self.assert_refused(drbd_op(disks=[{"size": VG_SIZE - 64}]), "insufficient_resources",
                            "Not enough disk space on target node node1.test vg xenvg: "
                            f"required {VG_SIZE + 64} MiB, available {VG_SIZE} MiB")
        state = self.lvms["node2.test"].state  # the secondary is fuller
        state["lvs"]["xenvg/other"] = {"size": 4000, "tags": []}
        self.lvms["node2.test"].state = state
        self.assert_refused_keeping(drbd_op(disks=[{"size": 256}]),
                                    "Not enough disk space on target node node2.test vg "
                                    "xenvg: required 384 MiB, available 96 MiB")

    def assert_refused_keeping(self, op, text):
        cls, msg, ecode = self.run_error(op)
        self.assertEqual((cls, ecode, msg), ("OpPrereqError", "insufficient_resources", text))
        self.assertEqual(list(self.volumes("node1.test")), [])

    def test_drbd_not_enabled(self) -> None:
        def change(cfg):
            cfg.cluster.enabled_disk_templates = [c.DT_PLAIN, c.DT_DISKLESS]
        self.master.run_until(self.master.daemon.config_writer.update(change))
        self.assert_refused(drbd_op(), None,  # Ganeti 3.0's words, no error code
                            "Disk template 'drbd' is not enabled in cluster. Enabled disk "
                            "templates are: plain,diskless")

    def test_degraded_mirrors_remove_the_new_instance(self) -> None:
        async def degraded(ctx, disks):
            return [{"dev_path": "/dev/drbd0", "major": 147, "minor": 0,
                     "sync_percent": None, "estimated_time": None, "is_degraded": True,
                     "ldisk_status": 4} for _ in disks]
        self.net.handlers["blockdev_getmirrorstatus"] = degraded
        status, result, log = self.run_logged(drbd_op())
        self.assertEqual(status, "error")
        self.assertEqual(result, ["OpExecError",
                                  ["There are some degraded disks for this instance"]])
        self.assertIn("Removing instance inst1.test after the failure", log)
        self.assertIsNone(self.instance())
        for node in NODE_NAMES:
            self.assertEqual(self.volumes(node), {})

    def test_a_failed_creation_leaves_nothing_and_frees_its_reservations(self) -> None:
        self.lvms["node2.test"].fail("lvcreate", "  Volume group xenvg has gone")
        status, result, _log = self.run_logged(drbd_op())
        self.assertEqual(status, "error")
        self.assertEqual(result[0], "OpExecError")
        self.assertIn("Can't create block device", result[1][0])
        self.assertIn("on node node2.test for instance inst1.test", result[1][0])
        self.assertIsNone(self.instance())
        for node in NODE_NAMES:
            self.assertEqual(self.volumes(node), {})
        self.assertEqual(self.master.daemon.reservations.reserved(), set())
        state = self.lvms["node2.test"].state
        del state["fail"]
        self.lvms["node2.test"].state = state
        self.run_ok(drbd_op())  # the same port and minors again
        disk, = self.disks()
        self.assertEqual(disk.logical_id[3:5], [0, 0])
        self.assertEqual(disk.logical_id[2], c.FIRST_DRBD_PORT)


NODE_NAMES = ("node1.test", "node2.test", "node3.test")


class DisksTest(DrbdCase):
    def setUp(self) -> None:
        super().setUp()
        self.run_ok(drbd_op())

    def test_activate_in_two_passes_and_deactivate(self) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": "inst1.test"})
        for node in ("node1.test", "node2.test"):
            self.assertIsNone(self.find(node))
        self.net.contacted.clear()
        devices = self.run_ok({"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS",
                               "instance_name": "inst1.test"})
        self.assertEqual(devices, [["node1.test", "disk/0", "/dev/drbd0"]])
        assembles = [n for n, call in self.net.contacted if call == "blockdev_assemble"]
        self.assertEqual(assembles, ["node1.test", "node2.test", "node1.test"])
        self.assertTrue(self.instance().disks_active)
        for node in ("node1.test", "node2.test"):
            self.assertFalse(self.find(node)["is_degraded"])

    def test_startup_and_shutdown(self) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.assertTrue(self.running("inst1.test"))
        self.assertFalse(self.find("node2.test")["is_degraded"])
        self.run_ok({"OP_ID": "OP_INSTANCE_SHUTDOWN", "instance_name": "inst1.test"})
        self.assertFalse(self.running("inst1.test"))
        for node in ("node1.test", "node2.test"):
            self.assertIsNone(self.find(node))

    def test_reboot_keeps_the_mirror(self) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "inst1.test"})
        self.net.contacted.clear()
        self.run_ok({"OP_ID": "OP_INSTANCE_REBOOT", "instance_name": "inst1.test",
                     "reboot_type": "full"})
        self.assertTrue(self.running("inst1.test"))
        calls = [(n, call) for n, call in self.net.contacted
                 if call in ("blockdev_shutdown", "blockdev_assemble")]
        self.assertEqual(calls, [("node1.test", "blockdev_shutdown"),
                                 ("node2.test", "blockdev_shutdown"),
                                 ("node1.test", "blockdev_assemble"),
                                 ("node2.test", "blockdev_assemble"),
                                 ("node1.test", "blockdev_assemble")])
        self.assertFalse(self.find("node2.test")["is_degraded"])

    def test_startup_with_a_dead_secondary_needs_force(self) -> None:
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": "inst1.test"})
        self.net.down.add("node2.test")
        status, result, log = self.run_logged({"OP_ID": "OP_INSTANCE_STARTUP",
                                               "instance_name": "inst1.test"})
        self.assertEqual(status, "error")
        self.assertIn("on node node2.test", result[1][0])
        self.assertIn(" - WARNING: If the message above refers to a secondary node, you can "
                      "retry the operation using '--force'", log)
        self.assertTrue(any(line.startswith(" - WARNING: Could not prepare block device "
                                            "disk/0 on node node2.test (is_primary=False, "
                                            "pass=1)") for line in log), log)
        self.assertFalse(self.running("inst1.test"))
        self.assertIsNone(self.find("node1.test"))  # shut down again
        status, result, log = self.run_logged({"OP_ID": "OP_INSTANCE_STARTUP",
                                               "instance_name": "inst1.test", "force": True})
        self.assertEqual(status, "success", result)
        self.assertTrue(self.running("inst1.test"))
        self.assertTrue(self.find("node1.test")["is_degraded"])  # no peer

    def test_grow_on_both_nodes(self) -> None:
        status, _result, log = self.run_logged({
            "OP_ID": "OP_INSTANCE_GROW_DISK", "instance_name": "inst1.test", "disk": 0,
            "amount": 128})
        self.assertEqual(status, "success", log)
        self.assertEqual(self.disks()[0].size, 384)
        data = self.disks()[0].children[0]
        for node in ("node1.test", "node2.test"):
            self.assertEqual(self.volumes(node)[f"xenvg/{data.logical_id[1]}"]["size"], 384)
        self.assertIn(" - INFO: Instance inst1.test's disks are in sync", log)
        cls, msg, code = self.run_error({
            "OP_ID": "OP_INSTANCE_GROW_DISK", "instance_name": "inst1.test", "disk": 0,
            "amount": 8000})
        self.assertEqual((cls, code), ("OpPrereqError", "insufficient_resources"))
        self.assertIn("Not enough disk space on target node node1.test vg xenvg", msg)


class ConvertTest(DrbdCase):
    """gnt-instance modify -t drbd -n SNODE / -t plain (Ganeti's rename, no copy)."""

    def convert(self, template: str, **params: object) -> dict:
        return {"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "inst1.test",
                "disk_template": template, "ignore_ipolicy": True, **params}

    def test_plain_to_drbd_and_back_keeps_the_data_volumes(self) -> None:
        self.run_ok(drbd_op(disk_template="plain", snode=None,
                            disks=[{"size": 256, "name": "root"}]))
        plain, = self.disks()
        volume = f"xenvg/{plain.logical_id[1]}"
        state = self.lvms["node1.test"].state
        state["lvs"][volume]["tags"].append("data-marker")  # the volume keeps what it holds
        self.lvms["node1.test"].state = state
        status, result, log = self.run_logged(self.convert("drbd", remote_node="node2.test"))
        self.assertEqual(status, "success", (result, log))
        self.assertEqual(result, [["disk_template", "drbd"]])
        for line in ("Converting disk template from 'plain' to 'drbd'",
                     "Creating additional volumes...", "Renaming original volumes...",
                     "Initializing DRBD devices...",
                     " - INFO: Instance inst1.test's disks are in sync"):
            self.assertIn(line, log)
        disk, = self.disks()
        self.assertEqual((disk.dev_type, disk.size, disk.name, disk.iv_name),
                         ("drbd", 256, "root", "disk/0"))
        self.assertEqual(self.instance().disk_template, "drbd")
        self.assertNotIn(plain.uuid, self.config.disks)
        data = f"xenvg/{disk.children[0].logical_id[1]}"
        meta = f"xenvg/{disk.children[1].logical_id[1]}"
        self.assertEqual(set(self.volumes("node1.test")), {data, meta})
        self.assertIn("data-marker", self.volumes("node1.test")[data]["tags"])  # renamed
        self.assertEqual(set(self.volumes("node2.test")), {data, meta})
        self.assertFalse(self.find("node2.test")["is_degraded"])
        self.assertLessEqual(disk.logical_id[2], self.config.cluster.highest_used_port)
        port = disk.logical_id[2]
        # and back: the data volume becomes the plain disk, the rest goes
        status, result, log = self.run_logged(self.convert("plain"))
        self.assertEqual(status, "success", (result, log))
        for line in ("Converting disk template from 'drbd' to 'plain'",
                     "Removing volumes on the secondary node...",
                     "Removing unneeded volumes on the primary node..."):
            self.assertIn(line, log)
        back, = self.disks()
        self.assertEqual((back.dev_type, back.logical_id, back.size, back.name),
                         ("plain", disk.children[0].logical_id, 256, "root"))
        self.assertEqual(back.nodes, [self.config.node_by_name("node1.test").uuid])
        self.assertEqual(set(self.volumes("node1.test")), {data})
        self.assertEqual(self.volumes("node2.test"), {})
        self.assertIsNone(self.find_gone("node1.test", disk))
        self.assertIn(port, self.config.cluster.tcpudp_port_pool)  # back in the pool
        self.assertEqual(self.instance().disk_template, "plain")

    def find_gone(self, node, disk):
        from ganeti.core.rpcdefs.disks import DiskArg
        return self.node_call(node, "blockdev_find", [DiskArg(disk, self.instance())]).payload

    def test_refusals_and_a_failed_conversion(self) -> None:
        self.run_ok(drbd_op(disk_template="plain", snode=None))
        plain, = self.disks()
        serial = self.config.serial_no
        for params, code, text in (
                ({}, "wrong_input", "Changing the disk template to a mirrored one needs a "
                                    "secondary node (choosing one with an allocator is not "
                                    "supported yet)"),
                ({"remote_node": "node1.test"}, "wrong_state",
                 "Given new secondary node node1.test is the same as the primary node of "
                 "the instance")):
            cls, msg, ecode = self.run_error(self.convert("drbd", **params))
            self.assertEqual((cls, ecode, msg), ("OpPrereqError", code, text))
        self.assertEqual(self.config.serial_no, serial)
        # the secondary cannot make its volumes: everything is as it was
        self.lvms["node2.test"].fail("lvcreate", "  Volume group xenvg is full")
        status, result, _log = self.run_logged(self.convert("drbd", remote_node="node2.test"))
        self.assertEqual(status, "error")
        self.assertEqual(self.disks(), [plain])
        self.assertEqual(set(self.volumes("node1.test")), {f"xenvg/{plain.logical_id[1]}"})
        self.assertEqual(self.volumes("node2.test"), {})
        self.assertEqual(self.master.daemon.reservations.reserved(), set())


class RecreateTest(DrbdCase):
    def test_recreate_in_place_and_on_new_nodes(self) -> None:
        self.run_ok(drbd_op())
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": "inst1.test"})
        before, = self.disks()
        for node in ("node1.test", "node2.test"):  # both nodes lost their volumes
            state = self.lvms[node].state
            state["lvs"] = {}
            self.lvms[node].state = state
        self.run_ok({"OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "inst1.test"})
        names = {f"xenvg/{ch.logical_id[1]}" for ch in before.children}
        for node in ("node1.test", "node2.test"):
            self.assertEqual(set(self.volumes(node)), names)
        self.assertEqual(self.disks(), [before])
        self.run_ok({"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS", "instance_name": "inst1.test"})
        for node in ("node1.test", "node2.test"):
            state = self.lvms[node].state
            state["lvs"] = {}
            self.lvms[node].state = state
        self.run_ok({"OP_ID": "OP_INSTANCE_RECREATE_DISKS", "instance_name": "inst1.test",
                     "nodes": ["node3.test", "node1.test"]})
        cfg = self.config
        node3, node1 = (cfg.node_by_name(n).uuid for n in ("node3.test", "node1.test"))
        after, = self.disks()
        self.assertEqual(self.instance().primary_node, node3)
        # node1's minor 0 is the disk's own in the config: Ganeti takes the next one
        self.assertEqual(after.logical_id, [node3, node1, before.logical_id[2], 0, 1,
                                            before.logical_id[5]])
        self.assertEqual(after.nodes, [node3, node1])
        self.assertEqual(set(self.volumes("node3.test")), names)
        self.assertEqual(set(self.volumes("node1.test")), names)
        self.assertEqual(self.volumes("node2.test"), {})
        self.assertEqual(self.find("node1.test")["dev_path"], "/dev/drbd1")


class ForthcomingTest(DrbdCase):
    def test_a_reserved_drbd_instance_is_made_on_both_nodes_at_its_commit(self) -> None:
        self.run_ok(drbd_op(forthcoming=True, disks=[{"size": 1024}]))  # the policy minimum
        disk, = self.disks()
        self.assertTrue(disk.forthcoming)
        self.assertTrue(all(ch.forthcoming for ch in disk.children))
        for node in NODE_NAMES:  # nothing on a node yet
            self.assertEqual(self.volumes(node), {})
        self.assertLessEqual(disk.logical_id[2], self.config.cluster.highest_used_port)
        status, result, log = self.run_logged(drbd_op(commit=True, disks=None))
        self.assertEqual(status, "success", (result, log))
        committed, = self.disks()
        self.assertFalse(committed.forthcoming)
        self.assertEqual(committed.logical_id, disk.logical_id)  # what was reserved
        for node in ("node1.test", "node2.test"):
            self.assertEqual(set(self.volumes(node)),
                             {f"xenvg/{ch.logical_id[1]}" for ch in disk.children})
        self.assertIn(" - INFO: Instance inst1.test's disks are in sync", log)
