"""OP_INSTANCE_MOVE through the real queue and processor with three in-process node
daemons: a file instance's data copied to the target (chunk by chunk through the
master), the config switched, the old disks removed, the instance started where it was
up; a failed copy leaves it where it was; Ganeti's refusals."""

from __future__ import annotations

import os

from tests.master.test_lu_migration import MigrationCase

MIB = 1024 * 1024


class MoveCase(MigrationCase):
    def move(self, name="inst1.test", target="node2.test", **params):
        return {"OP_ID": "OP_INSTANCE_MOVE", "instance_name": name, "target_node": target,
                **params}

    def disk_file(self, name="inst1.test", node="node1.test", idx=0):
        disk = self.config.disks[self.instance(name).disks[idx]]
        return os.path.join(self.net.paths(node).root, str(disk.logical_id[1]).lstrip("/"))

    def file_instance(self, name="inst1.test", start=True, sizes=(1024,)):
        self.make(name, start=start, disk_template="file",
                  disks=[{"size": s} for s in sizes])
        # some data at the start, in the middle and at the very end of the first disk
        with open(self.disk_file(name), "r+b") as f:
            f.write(b"head")
            f.seek(5 * MIB + 3)
            f.write(b"middle")
            f.seek(sizes[0] * MIB - 4)
            f.write(b"tail")


class MoveTest(MoveCase):
    def test_running_file_instance_moves_with_its_data(self):
        self.file_instance(sizes=(1024, 1024))
        status, result, log = self.run_logged(self.move(shutdown_timeout=5))
        self.assertEqual(status, "success", result)
        self.assertIsNone(result)
        self.assertEqual(self.primary(), "node2.test")
        self.assert_consistent()
        inst = self.instance()
        self.assertEqual([self.config.disks[u].nodes for u in inst.disks],
                         [[inst.primary_node]] * 2)
        with open(self.disk_file(node="node2.test"), "rb") as f:
            data = f.read()
        self.assertEqual(len(data), 1024 * MIB)
        self.assertEqual((data[:4], data[5 * MIB + 3:5 * MIB + 9], data[-4:]),
                         (b"head", b"middle", b"tail"))
        self.assertEqual(data.count(0), len(data) - 14)
        self.assertFalse(os.path.exists(self.disk_file(node="node1.test")))
        for line in (" - INFO: Shutting down instance inst1.test on source node node1.test",
                     " - INFO: Copying disk/0 (1024 MiB) from node1.test to node2.test",
                     " - INFO: disk/1 copied (1024 MiB)",
                     " - INFO: Removing the disks on the original node",
                     " - INFO: Starting instance inst1.test on node node2.test"):
            self.assertIn(line, log)
        # the holes of the sparse source travel whole: a few calls, not 512 chunks of 4 MiB
        writes = [c for c in self.net.contacted if c == ("node2.test", "blockdev_write_chunk")]
        self.assertLess(len(writes), 10)

    def test_stopped_instance_moves_and_stays_stopped(self):
        self.file_instance(start=False)
        status, result, log = self.run_logged(self.move(target="node3.test"))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Not checking memory on the secondary node as instance will "
                      "not be started", log)
        self.assertEqual(self.primary(), "node3.test")
        self.assertEqual(self.where(), [])
        self.assertFalse(self.instance().disks_active)

    def test_diskless_instance_moves(self):
        self.make()
        self.run_ok(self.move(target="node3.test"))
        self.assertEqual(self.primary(), "node3.test")
        self.assert_consistent()

    def test_failed_copy_leaves_the_instance_where_it_was(self):
        self.file_instance(start=False)
        self.net.skip[("node2.test", "blockdev_write_chunk")] = 3
        self.net.faults[("node2.test", "blockdev_write_chunk")] = "fail"
        status, result, log = self.run_logged(self.move())
        self.assertEqual(status, "error")
        self.assertEqual(result, ["OpExecError", ["Errors during disk copy: Failed to "
                                                  "transfer instance data"]])
        self.assertIn(" - WARNING: Some disks failed to copy, aborting", log)
        self.assertEqual(self.primary(), "node1.test")
        self.assertTrue(os.path.exists(self.disk_file(node="node1.test")))
        self.assertFalse(os.path.exists(self.disk_file(node="node2.test")))

    def test_failed_shutdown_stops_unless_consistency_is_ignored(self):
        self.make()
        self.net.faults[("node1.test", "instance_shutdown")] = "fail"
        cls, msg, _code = self.run_error(self.move())
        self.assertEqual((cls, msg), ("OpExecError", "Could not shutdown instance inst1.test "
                                      "on node node1.test: injected failure of "
                                      "instance_shutdown"))
        self.assertEqual(self.primary(), "node1.test")
        self.net.faults[("node1.test", "instance_shutdown")] = "fail"
        status, result, log = self.run_logged(self.move(ignore_consistency=True))
        self.assertEqual(status, "success", result)
        self.assertIn(" - WARNING: Could not shutdown instance inst1.test on node node1.test. "
                      "Proceeding anyway. Please make sure node node1.test is down. Error "
                      "details: injected failure of instance_shutdown", log)
        self.assertEqual(self.primary(), "node2.test")


class MoveRefusalTest(MoveCase):
    def assert_refused(self, op, msg, code):
        serial = self.config.serial_no
        self.assertEqual(self.run_error(op), ("OpPrereqError", msg, code))
        self.assertEqual(self.config.serial_no, serial)

    def test_refusals_are_ganetis(self):
        self.make()
        self.make("shared.test", start=False, disk_template="sharedfile",
                  disks=[{"size": 1024}])
        self.assert_refused(self.move("shared.test"), "Instance disk 0 has disk type "
                            "sharedfile and is not suitable for copying", "wrong_state")
        self.assert_refused(self.move(target="node1.test"), "Instance inst1.test is already "
                            "on the node node1.test", "wrong_state")
        self.assert_refused(self.move(target="nosuch.test"), "Node 'nosuch.test' not known",
                            "unknown_entity")
        self.assert_refused(self.move(compress="lzma9"), "Compression tool not allowed, "
                            "tools allowed are [gzip, gzip-fast, gzip-slow]", "wrong_input")
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "drained": True})
        self.assert_refused(self.move(), "Can't use drained node node2.test", "wrong_state")
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                     "offline": True})
        self.assert_refused(self.move(target="node3.test"),
                            "Can't use offline node node3.test", "wrong_state")
        self.assertEqual(self.where(), ["node1.test"])


class MoveHooksTest(MoveCase):
    def test_environment_and_nodes_are_ganetis(self):
        from tests.master.test_hooks import RecordingHooks
        hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = hooks
        self.make()
        self.run_ok(self.move(target="node3.test", shutdown_timeout=9))
        # Ganeti's: the master, the primary and the target, before and after
        for phase in ("pre", "post"):
            self.assertEqual(sorted(hooks.where("instance-move", phase)),
                             ["node1.test", "node3.test"])
        env = hooks.env("node3.test", "instance-move", "pre")
        self.assertEqual((env["GANETI_TARGET_NODE"], env["GANETI_SHUTDOWN_TIMEOUT"],
                          env["GANETI_INSTANCE_NAME"], env["GANETI_INSTANCE_PRIMARY"]),
                         ("node3.test", "9", "inst1.test", "node1.test"))
