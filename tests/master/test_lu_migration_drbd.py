"""Migration and failover of mirrored (drbd) instances through the real queue and
processor, with three in-process nodes whose mirrors really connect (in memory, on the
master's clock): the target is the secondary (anything else refused with Ganeti's
message), Ganeti's disk steps and job-log lines, the mirror healthy and single-master
after each move with the old primary secondary, a degraded target refused,
failover (consistency, ignore_consistency, a dead primary), cleanup, and the node
operations that move every primary of a node.  The fault matrix of the mirror's
steps: tests/master/test_lu_migration_drbd_faults.py."""

from __future__ import annotations

from ganeti.core.rpcdefs.disks import DiskArg
from ganeti.noded.bdev import drbdstate
from tests.master import test_lu_migration_faults as faults
from tests.master.drbd_cases import DrbdCase

SOURCE, TARGET = "node1.test", "node2.test"
#: Ganeti 3.0's lines of a drbd migration, in order.
MIGRATION_LINES = (
    "Migrating instance inst1.test",
    "* checking disk consistency between source and target",
    "* closing instance disks on node node2.test",
    "* changing into standalone mode",
    "* changing disks into dual-master mode",
    "* wait until resync is done",
    "* opening instance disks on node node1.test in shared mode",
    "* opening instance disks on node node2.test in shared mode",
    "* preparing node2.test to accept the instance",
    "* migrating instance to node2.test",
    "* starting memory transfer",
    "* memory transfer complete",
    "* closing instance disks on node node1.test",
    "* wait until resync is done",
    "* changing into standalone mode",
    "* changing disks into single-master mode",
    "* wait until resync is done",
    "* done",
)
#: The mirror's node calls of a migration, in order (node, call).
MIRROR_CALLS = (
    (TARGET, "blockdev_find"), (TARGET, "blockdev_close"),
    (SOURCE, "drbd_disconnect_net"), (TARGET, "drbd_disconnect_net"),
    (SOURCE, "drbd_attach_net"), (TARGET, "drbd_attach_net"),
    (SOURCE, "drbd_wait_sync"), (TARGET, "drbd_wait_sync"),
    (SOURCE, "blockdev_open"), (TARGET, "blockdev_open"),
    (SOURCE, "blockdev_close"),
)


def in_order(lines, wanted):
    """Whether ``wanted`` appear in ``lines`` in that order."""
    it = iter(lines)
    return all(any(line == w for line in it) for w in wanted)


class DrbdMigrateTest(DrbdCase):
    def test_live_migration_to_the_secondary_and_back(self):
        self.make_drbd()
        ids = [list(d.logical_id) for d in self.disks()]
        before = len(self.net.contacted)
        status, result, log = self.run_logged(self.migrate())
        self.assertEqual(status, "success", (result, log))
        self.assertTrue(in_order(log, MIGRATION_LINES), log)
        self.assertEqual(self.where(), [TARGET])
        self.assertEqual(self.primary(), TARGET)
        # the disks' ids name both nodes and do not change; the old primary is secondary
        self.assertEqual([list(d.logical_id) for d in self.disks()], ids)
        self.assertEqual(self.config.nodes[
            [u for u in self.disks()[0].nodes if u != self.instance().primary_node][0]].name,
            SOURCE)
        calls = [c for c in self.net.contacted[before:]
                 if c[1].startswith(("drbd_", "blockdev_open", "blockdev_close",
                                     "blockdev_find"))]
        self.assertTrue(in_order(calls, MIRROR_CALLS), calls)
        self.assert_mirror_healthy()
        self.assertEqual(self.role(SOURCE, self.disks()[0]), drbdstate.SECONDARY)
        self.assertEqual(self.role(TARGET, self.disks()[0]), drbdstate.PRIMARY)
        # and back, to the secondary again (named this time)
        status, result, log = self.run_logged(self.migrate(target_node=SOURCE))
        self.assertEqual(status, "success", (result, log))
        self.assertEqual((self.where(), self.primary()), ([SOURCE], SOURCE))
        self.assert_mirror_healthy()

    def test_non_live_and_several_disks(self):
        self.make_drbd(sizes=(512, 256))
        status, result, log = self.run_logged(self.migrate(mode="non-live"))
        self.assertEqual(status, "success", (result, log))
        self.assertEqual(self.where(), [TARGET])
        self.assert_mirror_healthy()

    def test_only_the_secondary_is_a_target(self):
        self.make_drbd()
        message = ("Instances with disk types drbd cannot be {} to arbitrary nodes (neither "
                   "an iallocator nor a target node can be passed)")
        for op, verb in ((self.migrate(target_node="node3.test"), "migrated"),
                         (self.migrate(iallocator="elsewhere"), "migrated"),
                         (self.failover(target_node="node3.test"), "failed over"),
                         (self.failover(iallocator="elsewhere"), "failed over")):
            cls, msg, code = self.run_error(op)
            self.assertEqual((cls, msg, code), ("OpPrereqError", message.format(verb),
                                                "wrong_input"))
        self.assertEqual(self.where(), [SOURCE])

    def test_degraded_target_aborts_the_migration(self):
        self.make_drbd()
        # the secondary's disks lose their network: it is degraded
        self.disconnect(TARGET)
        cls, msg, _code = self.run_error(self.migrate())
        self.assertEqual((cls, msg), ("OpExecError", "Disk 0 is degraded or not fully "
                                      "synchronized on target node, aborting migration"))
        self.assertEqual((self.where(), self.primary()), ([SOURCE], SOURCE))

    def test_cleanup_puts_the_mirror_back(self):
        self.make_drbd()
        inst = self.instance()
        disks = [DiskArg(d, inst) for d in self.disks()]
        # a migration that stopped half-way: dual-master, both open
        self.on_nodes((SOURCE, TARGET), "drbd_disconnect_net", [disks])
        self.on_nodes((SOURCE, TARGET), "drbd_attach_net", [disks, True])
        self.ok(TARGET, "blockdev_open", ["inst1.test", disks, False])
        status, result, log = self.run_logged(self.migrate(cleanup=True))
        self.assertEqual(status, "success", (result, log))
        for line in ("* instance confirmed to be running on its primary node (node1.test)",
                     "* closing instance disks on node node2.test",
                     "* changing disks into single-master mode", "* done"):
            self.assertIn(line, log)
        self.assert_consistent()
        self.assert_mirror_healthy()

    def test_interrupted_migration_is_reconciled_with_its_mirror(self):
        """The job died after the memory moved: the instance runs on the target only,
        the mirror is dual-master with both sides primary.  The next migration finds
        its work done, the config follows, the mirror is single-master again."""
        self.make_drbd()
        inst = self.instance()
        disks = [DiskArg(d, inst) for d in self.disks()]
        self.on_nodes((SOURCE, TARGET), "drbd_disconnect_net", [disks])
        self.on_nodes((SOURCE, TARGET), "drbd_attach_net", [disks, True])
        self.ok(TARGET, "blockdev_open", ["inst1.test", disks, False])
        faults.InterruptedTest._move_state(self, SOURCE, TARGET)
        status, result, log = self.run_logged(self.migrate())
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* instance inst1.test already runs on node2.test", log)
        self.assertEqual((self.where(), self.primary()), ([TARGET], TARGET))
        self.assert_mirror_healthy()
        self.assertEqual(self.role(SOURCE, self.disks()[0]), drbdstate.SECONDARY)


class DrbdFailoverTest(DrbdCase):
    def test_failover_of_a_running_instance(self):
        self.make_drbd()
        status, result, log = self.run_logged(self.failover())
        self.assertEqual(status, "success", (result, log))
        self.assertTrue(in_order(log, (
            "Failover instance inst1.test",
            "* checking disk consistency between source and target",
            "* shutting down instance on source node",
            "* deactivating the instance's disks on source node",
            "* activating the instance's disks on target node node2.test",
            "* starting the instance on the target node node2.test")), log)
        self.assertEqual((self.where(), self.primary()), ([TARGET], TARGET))
        self.assert_mirror_healthy()

    def test_failover_of_a_stopped_instance(self):
        self.make_drbd(start=False)
        status, result, log = self.run_logged(self.failover())
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* not checking disk consistency as instance is not running", log)
        self.assertEqual((self.where(), self.primary()), ([], TARGET))
        self.assertFalse(self.instance().disks_active)

    def test_degraded_target_and_ignore_consistency(self):
        self.make_drbd()
        self.disconnect(TARGET)
        cls, msg, _code = self.run_error(self.failover())
        self.assertEqual((cls, msg), ("OpExecError", "Disk 0 is degraded on target node, "
                                      "aborting failover"))
        self.assertEqual((self.where(), self.primary()), ([SOURCE], SOURCE))
        status, result, log = self.run_logged(self.failover(ignore_consistency=True))
        self.assertEqual(status, "success", (result, log))
        self.assertEqual((self.where(), self.primary()), ([TARGET], TARGET))
        self.assert_mirror_healthy()

    def test_failover_off_a_dead_primary(self):
        self.make_drbd()
        self.net.down_for = None
        self.net.down.add(SOURCE)  # the node (its daemon and its mirror) is gone
        self.tcp.partition("127.0.1.1")
        cls, msg, _code = self.run_error(self.failover())
        self.assertEqual(cls, "OpExecError")
        self.assertEqual(self.primary(), SOURCE)
        status, result, log = self.run_logged(self.failover(ignore_consistency=True))
        self.assertEqual(status, "success", (result, log))
        self.assertEqual(self.primary(), TARGET)
        self.assertTrue(self.running("inst1.test", TARGET))
        self.assertTrue(any("Could not shutdown instance inst1.test on node node1.test" in
                            line for line in log), log)

    def test_failover_off_an_offline_primary(self):
        """A primary marked offline: its degraded peer is said and not refused, no call
        goes to it, the instance starts on the secondary."""
        self.make_drbd(pnode="node3.test", snode=TARGET)
        self.tcp.partition("127.0.1.3")  # the dead node's mirror is gone too

        def offline(cfg):
            node = cfg.nodes[self.node_uuid("node3.test")]
            node.offline, node.master_candidate = True, False
        self.update(offline)
        before = len(self.net.contacted)
        status, result, log = self.run_logged(self.failover())
        self.assertEqual(status, "success", (result, log))
        self.assertIn("Node node3.test is offline, ignoring degraded disk 0 on target node "
                      "node2.test", log)
        self.assertNotIn("node3.test", [node for node, _call in self.net.contacted[before:]])
        self.assertEqual(self.primary(), TARGET)
        self.assertTrue(self.running("inst1.test", TARGET))

    def test_old_primary_failing_to_assemble_is_a_warning(self):
        """Ganeti's ignore_secondaries: the instance starts on the new primary; the old
        one's mirror half is brought back by activate-disks."""
        self.make_drbd()
        self.net.faults[(SOURCE, "blockdev_assemble")] = "fail"
        status, result, log = self.run_logged(self.failover())
        self.assertEqual(status, "success", (result, log))
        self.assertIn(" - WARNING: Could not prepare block device disk/0 on node node1.test "
                      "(is_primary=False, pass=1): injected failure of blockdev_assemble",
                      log)
        self.assertEqual((self.where(), self.primary()), ([TARGET], TARGET))
        self.assertTrue(self.status(TARGET)[0]["is_degraded"])
        self.run_ok({"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS", "instance_name": "inst1.test"})
        self.assert_mirror_healthy()


class DrbdNodeOperationsTest(DrbdCase):
    def test_node_migrate_moves_every_drbd_primary_to_its_secondary(self):
        self.make_drbd("a.test", SOURCE, TARGET)
        self.make_drbd("b.test", SOURCE, "node3.test")
        self.make_drbd("c.test", TARGET, SOURCE)
        status, result, _log = self.run_logged({"OP_ID": "OP_NODE_MIGRATE",
                                                "node_name": SOURCE})
        self.assertEqual(status, "success", result)
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            job_status, results, log = self.master.finish(job_id)
            self.assertEqual(job_status, "success", (results, log))
        self.assertEqual([self.primary(n) for n in ("a.test", "b.test", "c.test")],
                         [TARGET, "node3.test", TARGET])
        for name in ("a.test", "b.test", "c.test"):
            self.assert_consistent(name)
            self.assert_mirror_healthy(name)

    def test_failover_jobs_of_a_node(self):
        # what gnt-node failover submits: one OP_INSTANCE_FAILOVER job per primary
        self.make_drbd("a.test", SOURCE, TARGET)
        self.make_drbd("b.test", SOURCE, "node3.test", start=False)
        jobs = [self.master.submit(self.failover(name)) for name in ("a.test", "b.test")]
        for job_id in jobs:
            status, results, log = self.master.finish(job_id)
            self.assertEqual(status, "success", (results, log))
        self.assertEqual((self.primary("a.test"), self.primary("b.test")),
                         (TARGET, "node3.test"))
        self.assertEqual((self.where("a.test"), self.where("b.test")), ([TARGET], []))
        self.assert_mirror_healthy("a.test")
