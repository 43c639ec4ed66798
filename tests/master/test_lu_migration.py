"""OP_INSTANCE_MIGRATE, OP_INSTANCE_FAILOVER and OP_NODE_MIGRATE through the real queue and
processor, with three in-process node daemons (the fake hypervisor): refusals with
Ganeti's errors, failover up and down, live and non-live migration with its progress,
cleanup, and the node migrate's jobs.  The fault matrix:
tests/master/test_lu_migration_faults.py."""

from __future__ import annotations

import os

from ganeti.core import constants as c
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.hypervisors.base import NodeEnv
from ganeti.noded.hypervisors.registry import NodeHypervisors
from ganeti.rpc.client import RpcResult
from tests.fakes.allocators import InlineAllocators, always, answer, builtin, emptiest
from tests.fakes.configs import small_config
from tests.fakes.masterd import InProcessMaster
from tests.fakes.nodes import FakeNodeNet
from tests.master.test_lu_instance import InstanceCase, create_op

HAIL_DIR = "/usr/lib/ganeti/iallocators"
FREE_MEMORY = 8000
NODES = ("node1.test", "node2.test", "node3.test")


class MigrationNet(FakeNodeNet):
    """The fake node network with a migration rate on every node's fake hypervisor and
    faults, each met once: ``faults[(node, call)]`` is ``"fail"`` (the next such call
    fails on the node) or ``"down"`` (the node stops answering from the next such call
    on, for ``down_for`` seconds of the clock, forever if None)."""

    migration_rate: float | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.faults: dict[tuple[str, str], str] = {}
        self.skip: dict[tuple[str, str], int] = {}
        self.down_for: float | None = 5.0

    def _context(self, paths):
        base = super()._context(paths)
        options = ({c.HT_FAKE: {"migration_rate": self.migration_rate}}
                   if self.migration_rate else {})
        env = NodeEnv(paths.run_dir, self.clock, base.run, base.events, options=options)
        return NodeContext(paths=base.paths, clock=base.clock, run=base.run,
                           shutdown=base.shutdown, os_runs=base.os_runs,
                           children=base.children, hypervisors=NodeHypervisors(env),
                           mirrors=base.mirrors)

    async def _one(self, target, call, args):
        key = (target.name, call.name)
        if self.skip.get(key):  # calls that pass before the fault is met
            self.skip[key] -= 1
            return await super()._one(target, call, args)
        fault = self.faults.pop(key, None)
        if fault == "fail":
            self.contacted.append((target.name, call.name))
            return RpcResult(target.name, False, call=call.name,
                             fail_msg=f"injected failure of {call.name}")
        if fault == "down":
            self.down.add(target.name)
            if self.down_for is not None:
                self.clock.callLater(self.down_for, self.down.discard, target.name)
        return await super()._one(target, call, args)


def elsewhere(data):
    """An allocator that relocates to the first node not relocated from."""
    request = data["request"]
    nodes = sorted(n for n, info in data["nodes"].items()
                   if n not in request["relocate_from"] and not info["offline"])
    return answer(nodes[:1])


class MigrationCase(InstanceCase):
    programs: dict = {"elsewhere": elsewhere}

    def setUp(self):
        tmp = self.master_dir = self.mktemp()
        os.makedirs(tmp)
        cfg = small_config(enabled_hypervisors=[c.HT_FAKE],
                           enabled_disk_templates=[c.DT_DISKLESS, c.DT_SHARED_FILE,
                                                   c.DT_FILE, c.DT_PLAIN])
        self.net = MigrationNet(os.path.join(tmp, "nodes"), None)
        # the built-in allocator in process (the quick run starts no process)
        self.allocators = InlineAllocators({"stub": emptiest, "ganeti-place": builtin,
                                            **self.programs},
                                           search_path=(HAIL_DIR,))
        self.master = InProcessMaster(tmp, cfg=cfg, rpc=self.net, allocators=self.allocators)
        self.addCleanup(self.master.stop)
        self.net.clock = self.master.reactor
        self.net.config = lambda: self.master.config
        self.net.add("node1.test", "127.0.1.1", paths=self.master.paths)
        for k in (2, 3):
            self.net.add(f"node{k}.test", f"127.0.1.{k}")
            self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                         "primary_ip": f"127.0.1.{k}"})
        self._share_storage()
        real = self.net.handlers["node_info"]

        async def node_info(ctx, *args):
            info = dict(await real(ctx, *args))
            info.update(memory_total=8192, memory_free=FREE_MEMORY, memory_dom0=192)
            return info
        self.net.handlers["node_info"] = node_info

    def _share_storage(self):
        """The shared file storage directory is one directory for every node (as a
        cluster file system is)."""
        rel = c.DEFAULT_SHARED_FILE_STORAGE_DIR.lstrip("/")
        first = os.path.join(self.net.paths("node1.test").root, rel)
        os.makedirs(first, exist_ok=True)
        for name in NODES[1:]:
            path = os.path.join(self.net.paths(name).root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not os.path.lexists(path):
                os.symlink(first, path)

    def run_logged(self, *ops):
        status, results, log = self.master.finish(self.master.submit(*ops))
        return status, results[-1], log

    def make(self, name="inst1.test", start=True, **params):
        self.run_ok(create_op(name, **params))
        if start:
            self.run_ok({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": name})

    def where(self, name="inst1.test"):
        """The nodes whose fake hypervisor runs the instance."""
        return [n for n in NODES if self.running(name, n)]

    def primary(self, name="inst1.test"):
        return self.config.nodes[self.instance(name).primary_node].name

    def migrate(self, name="inst1.test", **params):
        return {"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": name, **params}

    def failover(self, name="inst1.test", **params):
        return {"OP_ID": "OP_INSTANCE_FAILOVER", "instance_name": name, **params}

    def assert_consistent(self, name="inst1.test"):
        """The instance runs on exactly one node and the config names that node."""
        self.assertEqual(self.where(name), [self.primary(name)])


class MigrateTest(MigrationCase):
    def test_live_migration_moves_the_instance_and_logs_its_steps(self):
        self.make()
        status, result, log = self.run_logged(self.migrate(target_node="node2.test"))
        self.assertEqual(status, "success", result)
        self.assertIsNone(result)
        self.assertEqual(self.where(), ["node2.test"])
        self.assertEqual(self.primary(), "node2.test")
        for line in ("Migrating instance inst1.test",
                     "* preparing node2.test to accept the instance",
                     "* migrating instance to node2.test", "* starting memory transfer",
                     "* memory transfer complete", "* done"):
            self.assertIn(line, log)

    def test_mode_and_live_choose_the_kind_of_migration(self):
        self.make()
        seen = []
        real = self.net.handlers["instance_migrate"]

        async def spy(ctx, cluster, instance, target, live):
            seen.append(live)
            return await real(ctx, cluster, instance, target, live)
        self.net.handlers["instance_migrate"] = spy
        self.run_ok(self.migrate(target_node="node2.test", mode="non-live"))
        self.run_ok(self.migrate(target_node="node1.test", live=True))
        self.run_ok(self.migrate(target_node="node3.test"))  # the hvparam: live
        self.assertEqual(seen, [False, True, True])
        self.assert_consistent()
        cls, msg, code = self.run_error(self.migrate(target_node="node1.test", live=True,
                                                     mode="live"))
        self.assertEqual((cls, msg, code), ("OpPrereqError", "Only one of the 'live' and "
                                            "'mode' parameters are accepted", "wrong_input"))

    def test_progress_of_a_slow_transfer_is_in_the_job_log(self):
        self.net.migration_rate = 2.0  # MiB/s: 128 MiB take 64 s of the clock
        self.make()
        start = self.master.reactor.seconds()
        status, result, log = self.run_logged(self.migrate(target_node="node3.test"))
        self.assertEqual(status, "success", result)
        progress = [line for line in log if line.startswith("* memory transfer progress")]
        self.assertGreaterEqual(len(progress), 5)
        self.assertEqual(progress[0], "* memory transfer progress: 15.62 %")
        values = [float(line.split(": ")[1].split(" ")[0]) for line in progress]
        self.assertEqual(values, sorted(values))
        self.assertGreaterEqual(self.master.reactor.seconds() - start, 64)
        self.assert_consistent()
        self.assertEqual(self.primary(), "node3.test")

    def test_sharedfile_instance_migrates_and_fails_over(self):
        self.make(disk_template="sharedfile", disks=[{"size": 1024}])
        self.run_ok(self.migrate(target_node="node2.test"))
        self.assert_consistent()
        self.assertEqual(self.primary(), "node2.test")
        disk = self.config.disks[self.instance().disks[0]]
        self.assertEqual(disk.nodes, [self.instance().primary_node])
        self.run_ok(self.failover(target_node="node3.test"))
        self.assert_consistent()
        self.assertEqual(self.primary(), "node3.test")
        self.assertTrue(self.instance().disks_active)

    def test_stopped_instance_with_allow_failover_fails_over(self):
        self.make(start=False)
        status, result, log = self.run_logged(self.migrate(target_node="node2.test",
                                                           allow_failover=True))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Instance is marked down or offline, fallback allowed, "
                      "switching to failover", log)
        self.assertIn("Failover instance inst1.test", log)
        self.assertEqual(self.primary(), "node2.test")
        self.assertEqual(self.where(), [])

    def test_always_failover_fails_over(self):
        self.make(beparams={"maxmem": 128, "minmem": 128, "always_failover": True})
        status, result, log = self.run_logged(self.migrate(target_node="node2.test"))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Instance configured to always failover; fallback to "
                      "failover", log)
        self.assertIn("* shutting down instance on source node", log)
        self.assert_consistent()
        self.assertEqual(self.primary(), "node2.test")

    def test_allocator_chooses_the_target(self):
        self.make()
        status, result, log = self.run_logged(self.migrate(iallocator="elsewhere"))
        self.assertEqual(status, "success", result)
        request = self.allocators.inputs("elsewhere")[0]["request"]
        self.assertEqual((request["type"], request["name"], request["relocate_from"]),
                         ("relocate", "inst1.test", ["node1.test"]))
        self.assertNotEqual(self.primary(), "node1.test")
        self.assertIn(f" - INFO: Selected nodes for instance inst1.test via iallocator "
                      f"elsewhere: {self.primary()}", log)
        self.assert_consistent()

    def test_builtin_allocator_is_the_default(self):
        self.make()
        status, result, log = self.run_logged(self.migrate())
        self.assertEqual(status, "success", result)
        self.assertNotEqual(self.primary(), "node1.test")
        self.assertIn(f" - INFO: Selected nodes for instance inst1.test via iallocator "
                      f"ganeti-place: {self.primary()}", log)
        self.assert_consistent()


class RefusalTest(MigrationCase):
    programs = {"nothing": always([], success=False, info="FailMem")}


    def assert_refused(self, op, cls, msg, code):
        serial = self.config.serial_no
        got = self.run_error(op)
        self.assertEqual(got, (cls, msg, code))
        self.assertEqual(self.config.serial_no, serial)

    def test_refusals_are_ganetis_and_change_nothing(self):
        self.make()
        self.make("file1.test", start=False, disk_template="file", disks=[{"size": 1024}])
        self.assert_refused(self.migrate(target_node="node1.test"), "OpPrereqError",
                            "Cannot migrate instance inst1.test to its primary (node1.test)",
                            "wrong_state")
        self.assert_refused(self.migrate("file1.test", target_node="node2.test"),
                            "OpPrereqError", "Instance's disk layout 'file' does not allow "
                            "migrations", "wrong_state")
        self.assert_refused(self.failover("file1.test", target_node="node2.test"),
                            "OpPrereqError", "Instance's disk layout 'file' does not allow "
                            "failovers", "wrong_state")
        self.assert_refused(self.migrate(target_node="node2.test", iallocator="stub"),
                            "OpPrereqError", "Do not specify both, iallocator and node",
                            "wrong_input")
        self.assert_refused(self.migrate(target_node="nosuch.test"), "OpPrereqError",
                            "Node 'nosuch.test' not known", "unknown_entity")
        self.assert_refused(self.migrate(iallocator="nothing"), "OpPrereqError",
                            "Can't compute nodes using iallocator 'nothing': FailMem",
                            "insufficient_resources")
        self.assert_refused(self.migrate("inst1.test", target_node="node2.test",
                                         mode="non-live", live=False), "OpPrereqError",
                            "Only one of the 'live' and 'mode' parameters are accepted",
                            "wrong_input")

    def test_stopped_instance_is_refused_without_allow_failover(self):
        self.make(start=False)
        self.assert_refused(self.migrate(target_node="node2.test"), "OpPrereqError",
                            "Can't migrate, please use failover: Instance inst1.test is not "
                            "running", "wrong_state")

    def test_drained_offline_and_not_vm_capable_targets(self):
        self.make()
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "drained": True})
        self.assert_refused(self.migrate(target_node="node2.test"), "OpPrereqError",
                            "Can't use drained node node2.test", "wrong_state")
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "drained": False})
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                     "offline": True})
        self.assert_refused(self.migrate(target_node="node3.test"), "OpPrereqError",
                            "Can't get data from node node3.test: Node is marked offline",
                            "environment_error")
        self.make("down1.test", start=False)
        self.assert_refused(self.failover("down1.test", target_node="node3.test"),
                            "OpPrereqError", "Error checking bridges on destination node "
                            "'node3.test': Node is marked offline", "environment_error")
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "vm_capable": False})
        self.assert_refused(self.migrate(target_node="node2.test"), "OpPrereqError",
                            "Can't use non-vm_capable node node2.test", "wrong_state")
        self.assertEqual(self.where(), ["node1.test"])

    def test_memory_of_the_target(self):
        self.make(beparams={"maxmem": 7000, "minmem": 7000})
        real = self.net.handlers["node_info"]

        async def node_info(ctx, *args):
            info = dict(await real(ctx, *args))
            if ctx.paths.hostname == "node2.test":
                info["memory_free"] = 1000
            return info
        self.net.handlers["node_info"] = node_info
        for op in (self.migrate(target_node="node2.test"),
                   self.failover(target_node="node2.test")):
            self.assert_refused(op, "OpPrereqError", "Not enough memory on node node2.test "
                                "for migrating instance inst1.test: needed 7000 MiB, "
                                "available 1000 MiB", "insufficient_resources")
        self.assertEqual(self.where(), ["node1.test"])

    def test_forthcoming_instance_is_not_migrated(self):
        self.run_ok(create_op("res1.test", forthcoming=True))
        self.assert_refused(self.migrate("res1.test", target_node="node2.test"),
                            "OpPrereqError", "forthcoming instances not supported for this "
                            "operation", None)


class FailoverTest(MigrationCase):
    def test_running_instance_fails_over_and_starts_on_the_target(self):
        self.make()
        status, result, log = self.run_logged(self.failover(target_node="node3.test",
                                                            shutdown_timeout=5))
        self.assertEqual(status, "success", result)
        self.assert_consistent()
        self.assertEqual(self.primary(), "node3.test")
        steps = ["Failover instance inst1.test",
                 "* checking disk consistency between source and target",
                 "* shutting down instance on source node",
                 "* deactivating the instance's disks on source node",
                 "* activating the instance's disks on target node node3.test",
                 "* starting the instance on the target node node3.test"]
        self.assertEqual([line for line in log if line in steps], steps)

    def test_stopped_instance_moves_in_the_config_only(self):
        self.make(start=False)
        status, result, log = self.run_logged(self.failover(target_node="node2.test"))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Not checking memory on the secondary node as instance will "
                      "not be started", log)
        self.assertIn("* not checking disk consistency as instance is not running", log)
        self.assertEqual(self.primary(), "node2.test")
        self.assertEqual(self.where(), [])

    def test_failed_shutdown_stops_unless_consistency_is_ignored(self):
        self.make()
        self.net.faults[("node1.test", "instance_shutdown")] = "fail"
        cls, msg, _code = self.run_error(self.failover(target_node="node2.test"))
        self.assertEqual((cls, msg), ("OpExecError", "Could not shutdown instance inst1.test "
                                      "on node node1.test: injected failure of "
                                      "instance_shutdown"))
        self.assertEqual(self.primary(), "node1.test")
        self.net.faults[("node1.test", "instance_shutdown")] = "fail"
        status, result, log = self.run_logged(self.failover(target_node="node2.test",
                                                            ignore_consistency=True))
        self.assertEqual(status, "success", result)
        self.assertIn(" - WARNING: Could not shutdown instance inst1.test on node node1.test, "
                      "proceeding anyway; please make sure node node1.test is down; error "
                      "details: injected failure of instance_shutdown", log)
        self.assertEqual(self.primary(), "node2.test")

    def test_offline_primary_is_passed_over(self):
        self.make()
        self.run_ok(self.migrate(target_node="node2.test"))
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "offline": True, "force": True})
        status, result, log = self.run_logged(self.failover(target_node="node3.test"))
        self.assertEqual(status, "success", result)
        self.assertEqual(self.primary(), "node3.test")
        self.assertTrue(self.running("inst1.test", "node3.test"))
        self.assertNotIn(("node2.test", "instance_shutdown"), self.net.contacted)

    def test_migration_off_an_offline_primary_falls_back_to_failover(self):
        self.make()
        self.run_ok(self.migrate(target_node="node2.test"))
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "offline": True, "force": True})
        cls, msg, code = self.run_error(self.migrate(target_node="node3.test"))
        self.assertEqual((cls, msg, code), ("OpPrereqError", "Can't migrate, please use "
                                            "failover: Node is marked offline", "wrong_state"))
        status, result, log = self.run_logged(self.migrate(target_node="node3.test",
                                                           allow_failover=True))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Can't migrate, instance offline, fallback to failover", log)
        self.assertEqual(self.primary(), "node3.test")
        self.assertTrue(self.running("inst1.test", "node3.test"))

    def test_forthcoming_instance_moves_in_the_config_only(self):
        self.run_ok(create_op("res1.test", forthcoming=True))
        status, result, log = self.run_logged(self.failover("res1.test",
                                                            target_node="node2.test"))
        self.assertEqual(status, "success", result)
        self.assertIn("Instance is forthcoming, just updating the  configuration", log)
        self.assertEqual(self.primary("res1.test"), "node2.test")
        self.assertTrue(self.instance("res1.test").forthcoming)


class CleanupTest(MigrationCase):
    def test_cleanup_adopts_an_instance_found_on_the_target(self):
        self.make()
        # the instance moved, the config did not follow (a master that died mid-job)
        run1 = os.path.join(self.net.paths("node1.test").run_dir, "fake-hypervisor")
        run2 = os.path.join(self.net.paths("node2.test").run_dir, "fake-hypervisor")
        os.makedirs(run2, exist_ok=True)
        os.rename(os.path.join(run1, "inst1.test"), os.path.join(run2, "inst1.test"))
        status, result, log = self.run_logged(self.migrate(target_node="node2.test",
                                                           cleanup=True))
        self.assertEqual(status, "success", result)
        self.assertIn("* instance running on: node2.test", log)
        self.assertIn("* instance running on secondary node (node2.test), updating config",
                      log)
        self.assert_consistent()
        self.assertEqual(self.primary(), "node2.test")

    def test_cleanup_confirms_the_primary(self):
        self.make()
        status, result, log = self.run_logged(self.migrate(target_node="node2.test",
                                                           cleanup=True))
        self.assertEqual(status, "success", result)
        self.assertIn("* instance confirmed to be running on its primary node (node1.test)",
                      log)
        self.assert_consistent()


class NodeMigrateTest(MigrationCase):
    def test_one_migrate_job_per_primary_instance(self):
        self.make("b.test")
        self.make("a.test")
        self.make("c.test", pnode="node2.test")
        status, result, _log = self.run_logged({"OP_ID": "OP_NODE_MIGRATE",
                                                "node_name": "node1.test",
                                                "target_node": "node3.test"})
        self.assertEqual(status, "success", result)
        self.assertEqual(sorted(result), ["jobs"])
        self.assertEqual(len(result["jobs"]), 2)
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            job_status, _results, _ = self.master.finish(job_id)
            self.assertEqual(job_status, "success")
        ops = [self.master.client().call("QueryJobs", [j], ["ops"])[0][0][0]
               for _ok, j in result["jobs"]]
        self.assertEqual([op["instance_name"] for op in ops], ["a.test", "b.test"])
        self.assertEqual([op["OP_ID"] for op in ops], ["OP_INSTANCE_MIGRATE"] * 2)
        self.assertEqual((self.primary("a.test"), self.primary("b.test"),
                          self.primary("c.test")), ("node3.test",) * 2 + ("node2.test",))
        for name in ("a.test", "b.test", "c.test"):
            self.assert_consistent(name)


class HooksTest(MigrationCase):
    def test_environment_and_nodes_are_ganetis(self):
        from tests.master.test_hooks import RecordingHooks
        self.make()
        hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = hooks
        self.run_ok(self.migrate(target_node="node2.test", mode="non-live"))
        self.assertEqual(sorted(hooks.where("instance-migrate", "pre")),
                         ["node1.test", "node2.test"])
        env = hooks.env("node2.test", "instance-migrate", "post")
        self.assertEqual({k: env[k] for k in (
            "GANETI_OLD_PRIMARY", "GANETI_NEW_PRIMARY", "GANETI_MIGRATE_LIVE",
            "GANETI_MIGRATE_CLEANUP", "GANETI_OLD_SECONDARY", "GANETI_INSTANCE_NAME")},
            {"GANETI_OLD_PRIMARY": "node1.test", "GANETI_NEW_PRIMARY": "node2.test",
             "GANETI_MIGRATE_LIVE": "False", "GANETI_MIGRATE_CLEANUP": "False",
             "GANETI_OLD_SECONDARY": "", "GANETI_INSTANCE_NAME": "inst1.test"})
        self.run_ok(self.failover(target_node="node3.test", shutdown_timeout=7))
        # Ganeti's: before, the master and the target; after, the old primary too
        self.assertEqual(sorted(hooks.where("instance-failover", "pre")),
                         ["node1.test", "node3.test"])
        self.assertEqual(sorted(hooks.where("instance-failover", "post")),
                         ["node1.test", "node2.test", "node3.test"])
        env = hooks.env("node3.test", "instance-failover", "pre")
        self.assertEqual((env["GANETI_SHUTDOWN_TIMEOUT"], env["GANETI_IGNORE_CONSISTENCY"],
                          env["GANETI_OLD_PRIMARY"], env["GANETI_NEW_PRIMARY"]),
                         ("7", "False", "node2.test", "node3.test"))
        self.run_ok({"OP_ID": "OP_NODE_MIGRATE", "node_name": "node3.test",
                     "target_node": "node1.test"})
        env = hooks.env("node1.test", "node-migrate", "pre")
        self.assertEqual((env["GANETI_NODE_NAME"], env["GANETI_ALLOW_RUNTIME_CHANGES"]),
                         ("node3.test", "True"))


class TableTest(MigrationCase):
    def test_templates_move_as_the_table_says(self):
        from ganeti.master.lu import instance_migration as im
        self.assertEqual(im.MOBILITY, {"diskless": im.EXT, "sharedfile": im.EXT, "drbd": im.INT})
        self.make("s1.test", disk_template="sharedfile", disks=[{"size": 1024}])
        self.make("f1.test", start=False, disk_template="file", disks=[{"size": 1024}])
        cfg = self.config
        self.assertEqual(im.mobility(cfg, self.instance("s1.test")), (im.EXT, []))
        self.assertEqual(im.mobility(cfg, self.instance("f1.test")), (None, ["file"]))
        # a sharedfile instance placed by the built-in allocator's relocate
        status, result, log = self.run_logged(self.migrate("s1.test"))
        self.assertEqual(status, "success", result)
        self.assertNotEqual(self.primary("s1.test"), "node1.test")
        self.assert_consistent("s1.test")


class BalloonTest(MigrationCase):
    def setUp(self):
        super().setUp()
        real = self.net.handlers["node_info"]

        async def node_info(ctx, *args):
            info = dict(await real(ctx, *args))
            if ctx.paths.hostname == "node2.test":
                info["memory_free"] = 200
            return info
        self.net.handlers["node_info"] = node_info
        self.make(beparams={"maxmem": 256, "minmem": 64})

    def test_memory_is_ballooned_down_to_fit_the_target(self):
        status, result, log = self.run_logged(self.migrate(target_node="node2.test"))
        self.assertEqual(status, "success", result)
        self.assertIn("* setting instance memory to 200", log)
        self.assert_consistent()
        info = self.master.client().call("QueryInstances", ["inst1.test"], ["oper_ram"],
                                         False)
        self.assertEqual(info, [[200]])

    def test_without_runtime_changes_it_is_refused(self):
        cls, msg, _code = self.run_error(self.migrate(target_node="node2.test",
                                                      allow_runtime_changes=False))
        self.assertEqual((cls, msg), ("OpExecError", "Memory ballooning not allowed and not "
                                      "enough free memory to fit instance inst1.test on "
                                      "target node node2.test (have 200MB, need 256MB)"))
        self.assert_consistent()
        self.assertEqual(self.primary(), "node1.test")
