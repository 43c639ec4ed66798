"""The migration fault matrix: each step of a migration × {the node call fails, the node
stops answering} ends with the instance running on exactly one node, the config naming
that node, and the next migration working, with no cleanup run by anyone; and a
migration interrupted earlier (a master restarted mid-job, a node that came back) is
reconciled by the next migrate or failover of the instance."""

from __future__ import annotations

import os

from tests.master.test_lu_migration import MigrationCase

#: The migration's node calls, in order, and the node each runs on.
STEPS = (
    ("node_info", "source"), ("node_info", "target"), ("migration_info", "source"),
    ("accept_instance", "target"), ("instance_migrate", "source"),
    ("instance_get_migration_status", "source"),
    ("instance_finalize_migration_dst", "target"),
    ("instance_finalize_migration_src", "source"),
)
SOURCE, TARGET = "node1.test", "node2.test"


class FaultMatrixTest(MigrationCase):
    def _one(self, call, side, fault):
        node = SOURCE if side == "source" else TARGET
        self.net.faults[(node, call)] = fault
        if call == "instance_get_migration_status":  # (the first: the unit's own probe)
            self.net.skip[(node, call)] = 1
        before = len(self.net.contacted)
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.net.faults.clear()
        self.assertIn((node, call), self.net.contacted[before:])  # the fault was met
        self.logs[(call, side, fault)] = log
        where = self.where()
        self.assertEqual(status, "error", (call, side, fault, result))
        self.assertEqual(len(where), 1, (call, side, fault, where, log))
        self.assertEqual(where, [self.primary()], (call, side, fault, log))
        self.net.down.clear()  # the node is back (it answered again within the job anyway)
        # no cleanup: the next migration works from where the instance is
        other = TARGET if self.primary() == SOURCE else SOURCE
        status, result, log = self.run_logged(self.migrate(target_node=other))
        self.assertEqual(status, "success", (call, side, fault, result, log))
        self.assert_consistent()
        self.assertEqual(self.primary(), other)
        if other == SOURCE:
            return
        # back to the source for the next case
        self.run_ok(self.migrate(target_node=SOURCE))
        self.assert_consistent()

    def test_every_step_failing_or_its_node_stopping(self):
        self.logs = {}
        self.net.migration_rate = 64.0  # two polls of the status
        self.make()
        for call, side in STEPS:
            for fault in ("fail", "down"):
                self.assertEqual(self.primary(), SOURCE)
                self._one(call, side, fault)
        # a node back within the retries is waited for, then both are reconciled
        log = self.logs[("instance_finalize_migration_src", "source", "down")]
        self.assertIn("* instance running on node2.test, updating config", log)
        log = self.logs[("accept_instance", "target", "down")]
        self.assertIn("* instance confirmed to be running on its primary node (node1.test)",
                      log)

    def test_the_migration_status_reporting_failure(self):
        self.make()
        real = self.net.handlers["instance_get_migration_status"]

        async def failed(ctx, instance):
            status = dict(await real(ctx, instance))
            status["status"] = "failed"
            return status
        self.net.handlers["instance_get_migration_status"] = failed
        cls, msg, _code = self.run_error(self.migrate(target_node=TARGET))
        self.assertEqual((cls, msg), ("OpExecError", "Could not migrate instance inst1.test: "
                                      "hypervisor returned failure"))
        self.assert_consistent()
        self.assertEqual(self.primary(), SOURCE)

    def test_messages_of_failed_steps_are_ganetis(self):
        self.make()
        cases = [
            (("node1.test", "migration_info"), "Failed fetching source migration "
             "information from node1.test: injected failure of migration_info"),
            (("node2.test", "accept_instance"), "Could not pre-migrate instance inst1.test: "
             "injected failure of accept_instance"),
            (("node1.test", "instance_migrate"), "Could not migrate instance inst1.test: "
             "injected failure of instance_migrate"),
            (("node2.test", "instance_finalize_migration_dst"), "Could not finalize instance "
             "migration: node2.test: injected failure of instance_finalize_migration_dst"),
        ]
        for fault, message in cases:
            self.net.faults = {fault: "fail"}
            cls, msg, _code = self.run_error(self.migrate(target_node=TARGET))
            self.assertEqual((cls, msg), ("OpExecError", message))
            self.assert_consistent()
            self.assertEqual(self.primary(), SOURCE)


class InterruptedTest(MigrationCase):
    def _move_state(self, src, dst, copy=False):
        """The fake hypervisor's state of inst1.test moved (or copied) between nodes, as
        a migration whose job died half-way leaves it."""
        run = {n: os.path.join(self.net.paths(n).run_dir, "fake-hypervisor")
               for n in (src, dst)}
        os.makedirs(run[dst], exist_ok=True)
        with open(os.path.join(run[src], "inst1.test"), encoding="utf-8") as f:
            state = f.read()
        with open(os.path.join(run[dst], "inst1.test"), "w", encoding="utf-8") as f:
            f.write(state)
        if not copy:
            os.remove(os.path.join(run[src], "inst1.test"))

    def test_source_gone_for_good_then_back(self):
        """The source stops answering at its finalize and stays away past the job: the
        config follows the destination; when the source is back with its stale copy,
        the next operation on the instance ends that copy first."""
        self.make()
        self.net.down_for = None
        self.net.faults[(SOURCE, "instance_finalize_migration_src")] = "down"
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.assertEqual(status, "error", result)
        self.assertEqual(self.primary(), TARGET)
        self.assertTrue(self.running("inst1.test", TARGET))
        self.net.down.clear()
        self.assertEqual(self.where(), [SOURCE, TARGET])  # the stale copy
        status, result, log = self.run_logged(self.migrate(target_node="node3.test"))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* instance inst1.test runs on node1.test,node2.test, its config names "
                      "node2.test: an interrupted migration, reconciling", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), "node3.test")

    def test_rerun_after_the_master_died_finds_the_job_done(self):
        """The master died after the memory moved, before the config: the re-run (or a
        new) migration to that node finds it there and only fixes the config."""
        self.make()
        self._move_state(SOURCE, TARGET)
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* instance inst1.test already runs on node2.test", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)

    def test_copy_on_two_nodes_keeps_the_primarys(self):
        self.make()
        self._move_state(SOURCE, "node3.test", copy=True)
        status, result, log = self.run_logged(self.failover(target_node=TARGET))
        self.assertEqual(status, "success", (result, log))
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)

    def test_found_on_another_node_updates_the_config_and_asks_again(self):
        self.make()
        self._move_state(SOURCE, "node3.test")
        cls, msg, _code = self.run_error(self.migrate(target_node=TARGET))
        self.assertEqual((cls, msg), ("OpExecError", "Instance inst1.test was found running "
                                      "on node3.test, its config now says so; submit the "
                                      "operation again"))
        self.assert_consistent()
        self.run_ok(self.migrate(target_node=TARGET))
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)


class RestartTest(MigrationCase):
    def test_master_restarted_mid_transfer(self):
        """The master dies while the memory is sent: the restarted master fails the job
        (the queue's crash rule) and submits the migration's cleanup itself, which ends
        the migration still recorded on the source; the next migration just works."""
        from tests.fakes.masterd import InProcessMaster
        self.net.migration_rate = 2.0  # 128 MiB: 64 s
        self.make()
        old = self.master
        job = old.submit(self.migrate(target_node=TARGET))
        outgoing = os.path.join(self.net.paths(SOURCE).run_dir, "fake-hypervisor",
                                ".outgoing", "inst1.test")
        for _ in range(100):
            if os.path.exists(outgoing):
                break
            old.reactor.advance(1)
        old.reactor.advance(10)
        self.assertTrue(os.path.exists(outgoing))
        # the master dies (no orderly stop; its clock never moves again) and a new one
        # starts on the same directories
        old.daemon.store.close()
        old.daemon.running = False
        new = InProcessMaster(self.master_dir, cfg=old.config, rpc=self.net,
                              allocators=self.allocators)
        self.addCleanup(new.stop)
        self.net.clock = new.reactor
        self.net.config = lambda: new.config
        self.master = new
        status, results, _log = new.finish(job)
        self.assertEqual((status, results[-1]), ("error", ["OpExecError", [
            "Job was running when the master daemon stopped (crash or restart)"]]))
        # the cleanup, submitted by the master (nobody ran --cleanup)
        cleanup = max(new.daemon.queue.jobs)
        self.assertGreater(cleanup, job)
        op = new.daemon.queue.jobs[cleanup].ops[0].input
        self.assertEqual((op["OP_ID"], op["instance_name"], op["cleanup"]),
                         ("OP_INSTANCE_MIGRATE", "inst1.test", True))
        self.assertEqual(op["reason"][0][:2], [
            "gnt:daemon:masterd:recovery", f"cleanup of the migration of job {job}, "
            "interrupted by the master daemon's stop"])
        status, result, log = new.finish(cleanup)
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* an interrupted migration of inst1.test is recorded on node1.test: "
                      "ending it", log)
        self.assertIn("* instance confirmed to be running on its primary node (node1.test)",
                      log)
        self.assertEqual(self.where(), [SOURCE])
        self.assert_consistent()
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.assertEqual(status, "success", (result, log))
        self.assertNotIn("* an interrupted migration of inst1.test is recorded on "
                         "node1.test: ending it", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)


class BrokenSourceTest(MigrationCase):
    def test_a_source_that_cannot_finalize_is_shut_down(self):
        """The source's finalize keeps failing: its copy is shut down, the destination
        keeps the instance; once the source works again, the migration it still records
        is ended by the next migration from it."""
        self.make()
        real = self.net.handlers["instance_finalize_migration_src"]

        async def broken(ctx, *args):
            from ganeti.noded.backend.context import RPCFail
            raise RPCFail("Failed to finalize the migration on the source node: broken")
        self.net.handlers["instance_finalize_migration_src"] = broken
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.assertEqual(status, "error", result)
        self.assertEqual(result, ["OpExecError", [
            "Could not finalize instance migration: node1.test: Failed to finalize the "
            "migration on the source node: broken"]])
        self.assertIn("* instance running on node2.test, updating config", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)
        self.net.handlers["instance_finalize_migration_src"] = real
        self.run_ok(self.migrate(target_node=SOURCE))
        status, result, log = self.run_logged(self.migrate(target_node=TARGET))
        self.assertEqual(status, "success", (result, log))
        self.assertIn("* an interrupted migration of inst1.test is recorded on node1.test: "
                      "ending it", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), TARGET)
