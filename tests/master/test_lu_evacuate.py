"""OP_NODE_EVACUATE, OP_GROUP_EVACUATE and OP_INSTANCE_CHANGE_GROUP through the real queue
and processor, three in-process node daemons (the fake hypervisor) and the built-in
allocator in process: the jobs the units submit, their results, Ganeti's refusals and
messages.  The pure parts (the answer turned into jobs, the order of mode ``all``)
are tested without a master at the end."""

from __future__ import annotations

from ganeti.core.placement.requests import EvacuationResult, Moved
from ganeti.master.lu import evacuate
from tests.fakes.allocators import always, answer
from tests.master.test_lu_migration import MigrationCase


class EvacuateCase(MigrationCase):
    programs = {"nothing": always([], success=False, info="FailMem")}

    def evacuate(self, node="node1.test", mode="primary-only", **params):
        return {"OP_ID": "OP_NODE_EVACUATE", "node_name": node, "mode": mode, **params}

    def follow(self, result):
        """Run the submitted jobs to their end; their (status, ops)."""
        out = []
        for ok, job_id in result["jobs"]:
            self.assertTrue(ok)
            status, _results, _log = self.master.finish(job_id)
            ops = self.master.client().call("QueryJobs", [job_id], ["ops"])[0][0]
            out.append((status, ops))
        return out

    def shared(self, *names, node="node1.test", start=True):
        for name in names:
            self.make(name, start=start, disk_template="sharedfile", disks=[{"size": 1024}],
                      pnode=node)


class NodeEvacuateTest(EvacuateCase):
    def test_primaries_leave_the_node_through_migrations(self):
        self.shared("a.test", "b.test")
        self.make("c.test", start=False)  # diskless, stopped: its job fails over
        status, result, log = self.run_logged(self.evacuate())
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Evacuating instances from node 'node1.test': a.test, b.test, "
                      "c.test", log)
        moved = [line for line in log if line.startswith(" - INFO: Instances to be moved: ")]
        self.assertEqual(len(moved), 1)
        for name in ("a.test", "b.test", "c.test"):
            self.assertIn(name + " (to node", moved[0])
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"] * 3)
        self.assertEqual(sorted(ops[0]["instance_name"] for _, ops in jobs),
                         ["a.test", "b.test", "c.test"])
        self.assertEqual({ops[0]["OP_ID"] for _, ops in jobs}, {"OP_INSTANCE_MIGRATE"})
        for name in ("a.test", "b.test", "c.test"):
            self.assertNotEqual(self.primary(name), "node1.test")
        for name in ("a.test", "b.test"):
            self.assert_consistent(name)
        self.assertEqual(self.where("c.test"), [])
        self.assertEqual({ops[0]["comment"] for _, ops in jobs},
                         {"Submitted by OP_NODE_EVACUATE"})

    def test_an_offline_node_is_evacuated_by_failovers(self):
        """A dead node marked offline: the migrations fall back to failovers (hail's
        allow_failover) and the instances start elsewhere."""
        self.shared("a.test", "b.test", node="node2.test")
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2.test",
                     "offline": True, "force": True})
        status, result, _log = self.run_logged(self.evacuate("node2.test"))
        self.assertEqual(status, "success", result)
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"] * 2)
        for name in ("a.test", "b.test"):
            self.assertNotEqual(self.primary(name), "node2.test")
            self.assertTrue(self.running(name, self.primary(name)))

    def test_mode_all_is_accepted_and_moves_the_primaries(self):
        self.shared("a.test")
        status, result, log = self.run_logged(self.evacuate(mode="all"))
        self.assertEqual(status, "success", result)
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"])
        self.assertNotEqual(self.primary("a.test"), "node1.test")
        self.assert_consistent("a.test")
        request = self.allocators.inputs("ganeti-place")[-1]["request"]
        self.assertEqual((request["type"], request["evac_mode"], request["instances"]),
                         ("node-evacuate", "all", ["a.test"]))

    def test_nothing_to_evacuate(self):
        status, result, log = self.run_logged(self.evacuate(mode="secondary-only"))
        self.assertEqual((status, result), ("success", {"jobs": []}))
        self.assertIn(" - INFO: No instances to evacuate from node 'node1.test'", log)
        self.assertEqual(self.allocators.calls, [])

    def test_an_instance_that_cannot_move_fails_the_evacuation(self):
        self.shared("a.test")
        self.make("f.test", start=False, disk_template="file", disks=[{"size": 1024}])
        serial = self.config.serial_no
        status, result, log = self.run_logged(self.evacuate())
        self.assertEqual(status, "error")
        why = "f.test (Instances of type file cannot be relocated)"
        self.assertEqual(result[1][0], f"Unable to evacuate instances {why}")
        self.assertEqual(result[0], "OpExecError")
        self.assertIn(f" - WARNING: Unable to evacuate instances {why}", log)
        self.assertEqual(self.config.serial_no, serial)
        self.assertEqual(self.primary("a.test"), "node1.test")

    def test_an_allocator_without_a_solution(self):
        self.shared("a.test")
        cls, msg, code = self.run_error(self.evacuate(iallocator="nothing"))
        self.assertEqual((cls, msg, code), ("OpPrereqError", "Can't compute node evacuation "
                                            "using iallocator 'nothing': FailMem",
                                            "insufficient_resources"))

    def test_ignore_soft_errors_reaches_the_allocator(self):
        self.shared("a.test")
        self.run_error(self.evacuate(iallocator="nothing", ignore_soft_errors=True))
        self.assertEqual(self.allocators.calls[-1][2], {"ignore-soft-errors": None})
        self.run_error(self.evacuate(iallocator="nothing"))
        self.assertEqual(self.allocators.calls[-1][2], {})
        self.assertEqual(len(self.allocators.calls), 2)

    def test_refusals_are_ganetis(self):
        self.shared("a.test")
        for op, msg in (
                (self.evacuate(remote_node="node2.test"),
                 "Without the use of an iallocator only secondary instances can be "
                 "evacuated"),
                (self.evacuate(mode="secondary-only", remote_node="node1.test"),
                 "Can not use evacuated node as a new secondary node"),
                (self.evacuate(mode="secondary-only", remote_node="node2.test",
                               iallocator="nothing"),
                 "Do not specify both, iallocator and node")):
            self.assertEqual(self.run_error(op), ("OpPrereqError", msg, "wrong_input"))
        self.assertEqual(self.run_error(self.evacuate("nosuch.test")),
                         ("OpPrereqError", "Node 'nosuch.test' not known", "unknown_entity"))

    def test_new_secondary_and_no_secondary_instances(self):
        # (secondary instances: SecondaryTest)
        status, result, log = self.run_logged(self.evacuate(mode="secondary-only",
                                                            remote_node="node2.test"))
        self.assertEqual((status, result), ("success", {"jobs": []}))


class GroupCase(EvacuateCase):
    def setUp(self):
        super().setUp()
        self.run_ok({"OP_ID": "OP_GROUP_ADD", "group_name": "rack2"})
        self.run_ok({"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "rack2",
                     "nodes": ["node2.test", "node3.test"]})

    def group_of(self, name):
        node = self.config.nodes[self.instance(name).primary_node]
        return self.config.nodegroups[node.group].name


class GroupEvacuateTest(GroupCase):
    def test_instances_move_to_the_other_group(self):
        self.shared("a.test", "b.test")
        status, result, log = self.run_logged({"OP_ID": "OP_GROUP_EVACUATE",
                                               "group_name": "default"})
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Iallocator returned 2 job(s) for evacuating node group "
                      "default", log)
        request = self.allocators.inputs("ganeti-place")[-1]["request"]
        rack2 = self.config.group_by_name("rack2").uuid
        self.assertEqual((request["type"], request["instances"], request["target_groups"]),
                         ("change-group", ["a.test", "b.test"], [rack2]))
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"] * 2)
        for name in ("a.test", "b.test"):
            self.assertEqual(self.group_of(name), "rack2")
            self.assert_consistent(name)

    def test_sequential_and_force_failover(self):
        self.shared("a.test", "b.test")
        status, result, log = self.run_logged({"OP_ID": "OP_GROUP_EVACUATE",
                                               "group_name": "default", "sequential": True,
                                               "force_failover": True})
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Will insist on failovers", log)
        self.assertIn(" - INFO: Jobs will be submitted to run sequentially", log)
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"] * 2)
        self.assertEqual([ops[0]["OP_ID"] for _, ops in jobs], ["OP_INSTANCE_FAILOVER"] * 2)
        first, second = (job_id for _ok, job_id in result["jobs"])
        self.assertEqual(jobs[0][1][0]["depends"], None)
        self.assertEqual(jobs[1][1][0]["depends"], [[first, ["error", "success"]]])
        self.assertEqual(second, first + 1)
        for name in ("a.test", "b.test"):
            self.assertEqual(self.group_of(name), "rack2")
            self.assert_consistent(name)

    def test_refusals(self):
        self.assertEqual(self.run_error({"OP_ID": "OP_GROUP_EVACUATE", "group_name": "rack2",
                                         "target_groups": ["nosuch"]}),
                         ("OpPrereqError", "Node group 'nosuch' not found", "unknown_entity"))
        default = self.config.group_by_name("default").uuid
        self.assertEqual(self.run_error({"OP_ID": "OP_GROUP_EVACUATE",
                                         "group_name": "default",
                                         "target_groups": ["rack2", "default"]}),
                         ("OpPrereqError", f"Group to be evacuated ({default}) can not be "
                          f"used as a target group (targets are "
                          f"{self.config.group_by_name('rack2').uuid}, {default})",
                          "wrong_input"))


class ChangeGroupTest(GroupCase):
    def test_one_instance_changes_group(self):
        self.shared("a.test", "b.test")
        status, result, log = self.run_logged({"OP_ID": "OP_INSTANCE_CHANGE_GROUP",
                                               "instance_name": "a.test",
                                               "target_groups": ["rack2"]})
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Iallocator returned 1 job(s) for changing group of instance "
                      "'a.test'", log)
        self.assertIn(" - INFO: Instances to be moved: a.test (to rack2)",
                      [line.replace(self.config.group_by_name("rack2").uuid, "rack2")
                       for line in log])
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"])
        self.assertEqual(self.group_of("a.test"), "rack2")
        self.assertEqual(self.group_of("b.test"), "default")
        self.assert_consistent("a.test")

    def test_own_group_as_target_is_refused(self):
        self.shared("a.test")
        cls, msg, code = self.run_error({"OP_ID": "OP_INSTANCE_CHANGE_GROUP",
                                         "instance_name": "a.test",
                                         "target_groups": ["default"]})
        default = self.config.group_by_name("default").uuid
        self.assertEqual((cls, msg, code), (
            "OpPrereqError", f"Can't use group(s) '{default}' as targets, they are used by "
                             "the instance 'a.test'", "wrong_input"))

    def test_no_other_group(self):
        self.run_ok({"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "default",
                     "nodes": ["node2.test", "node3.test"]})
        self.run_ok({"OP_ID": "OP_GROUP_REMOVE", "group_name": "rack2"})
        self.shared("a.test")
        self.assertEqual(self.run_error({"OP_ID": "OP_INSTANCE_CHANGE_GROUP",
                                         "instance_name": "a.test"}),
                         ("OpPrereqError", "There are no possible target groups",
                          "wrong_input"))


class PureTest(EvacuateCase):
    def test_early_release_only_where_the_opcode_has_it(self):
        result = EvacuationResult(
            moved=(Moved("a", "g1", ("n2",)),), failed=(),
            jobs=(({"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": "a"},),
                  ({"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": "b",
                    "early_release": False},)))
        messages = []

        class Context:
            feedback = staticmethod(lambda kind, text: messages.append(text))

        class Unit:
            ctx = Context
        jobs = evacuate.load_evac_result(Unit, result, True, True)
        self.assertNotIn("early_release", jobs[0][0])
        self.assertTrue(jobs[1][0]["early_release"])
        self.assertEqual(messages, [" - INFO: Instances to be moved: a (to n2)"])
        evacuate.load_evac_result(Unit, result, False, False)
        self.assertEqual(messages[-1], " - INFO: Instances to be moved: a (to g1)")

    def test_primaries_first_and_the_rest_depend_on_them(self):
        self.shared("p1.test", "p2.test")
        self.shared("s1.test", node="node2.test")
        node1 = self.config.node_by_name("node1.test").uuid
        jobs = [[{"OP_ID": "X", "instance_name": n}] for n in ("s1.test", "p1.test",
                                                               "p2.test")]
        out = evacuate.primaries_first(self.config, node1, jobs)
        self.assertEqual([j[0]["instance_name"] for j in out], ["p1.test", "p2.test",
                                                                 "s1.test"])
        self.assertNotIn("depends", out[0][0])
        self.assertEqual(out[2][0]["depends"], [[-2, evacuate.ANY_END],
                                                [-1, evacuate.ANY_END]])


class ConcurrencyTest(EvacuateCase):
    def test_a_node_takes_part_in_one_migration_at_a_time(self):
        """The evacuation's jobs run concurrently, but each locks its instance's nodes:
        the evacuated node's migrations never overlap (the bound is one per node)."""
        self.net.migration_rate = 16.0  # MiB/s: 128 MiB take 8 s of the clock each
        self.shared("a.test", "b.test", "c.test")
        running: dict[str, int] = {}
        peak: dict[str, int] = {}
        start, finish = (self.net.handlers[n] for n in ("instance_migrate",
                                                        "instance_finalize_migration_src"))

        async def migrate(ctx, *args):
            node = ctx.paths.hostname
            running[node] = running.get(node, 0) + 1
            peak[node] = max(peak.get(node, 0), running[node])
            return await start(ctx, *args)

        async def finalize(ctx, *args):
            running[ctx.paths.hostname] -= 1
            return await finish(ctx, *args)
        self.net.handlers["instance_migrate"] = migrate
        self.net.handlers["instance_finalize_migration_src"] = finalize
        status, result, _log = self.run_logged(self.evacuate())
        self.assertEqual(status, "success", result)
        t0 = self.master.reactor.seconds()
        jobs = self.follow(result)
        self.assertEqual([s for s, _ in jobs], ["success"] * 3)
        self.assertEqual(peak, {"node1.test": 1})
        self.assertGreaterEqual(self.master.reactor.seconds() - t0, 3 * 8)
        for name in ("a.test", "b.test", "c.test"):
            self.assert_consistent(name)


def planned(data):
    """An allocator that moves every drbd instance's secondary, and migrates the others,
    to node3 (the fake nodes have no volume group for the built-in allocator)."""
    moved, jobs = [], []
    for name in data["request"]["instances"]:
        inst = data["instances"][name]
        group = data["nodes"]["node3.test"]["group"]
        if inst["disk_template"] == "drbd":
            moved.append([name, group, [inst["nodes"][0], "node3.test"]])
            jobs.append([{"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": name,
                          "mode": "replace_new_secondary", "remote_node": "node3.test",
                          "disks": [], "early_release": False, "ignore_ipolicy": False}])
        else:
            moved.append([name, group, ["node3.test"]])
            jobs.append([{"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": name,
                          "target_node": "node3.test", "allow_failover": True}])
    return answer([moved, [], jobs])


class SecondaryTest(EvacuateCase):
    """Secondary instances (a drbd instance written into the config: the template's
    units come with the drbd slice; here only the evacuation's jobs are looked at)."""

    programs = {"planned": planned}

    def setUp(self):
        super().setUp()
        from ganeti.core import constants as c
        from tests.fakes.instances import add_instance

        def change(cfg):
            add_instance(cfg, "m.test", "node2.test", c.DT_DRBD8, disks=(1024,),
                         snode="node1.test", admin_state=c.ADMINST_DOWN)
        self.successResultOf(self.master.daemon.config_writer.update(change))
        from ganeti.master.locking.manager import LEVEL_INSTANCE
        self.successResultOf(self.master.daemon.locks.add(LEVEL_INSTANCE, ["m.test"]))

    def submitted_ops(self, result):
        return [self.master.client().call("QueryJobs", [job_id], ["ops"])[0][0]
                for _ok, job_id in result["jobs"]]

    def test_new_secondary_gives_one_replace_disks_job_per_instance(self):
        status, result, log = self.run_logged(self.evacuate(
            mode="secondary-only", remote_node="node3.test", early_release=True))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Evacuating instances from node 'node1.test': m.test", log)
        self.assertEqual(self.allocators.calls, [])
        (ops,) = self.submitted_ops(result)
        self.assertEqual({k: ops[0][k] for k in ("OP_ID", "instance_name", "remote_node",
                                                  "mode", "disks", "early_release")},
                         {"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": "m.test",
                          "remote_node": "node3.test", "mode": "replace_new_secondary",
                          "disks": [], "early_release": True})

    def test_the_primary_cannot_be_the_new_secondary(self):
        self.assertEqual(self.run_error(self.evacuate(mode="secondary-only",
                                                      remote_node="node2.test")),
                         ("OpPrereqError", "Node node2.test is the primary node of instance "
                          "m.test, cannot use it as secondary", "wrong_input"))

    def test_allocator_chooses_the_new_secondary_with_early_release(self):
        status, result, log = self.run_logged(self.evacuate(
            mode="secondary-only", early_release=True, iallocator="planned"))
        self.assertEqual(status, "success", result)
        self.assertIn(" - INFO: Instances to be moved: m.test (to node2.test, node3.test)",
                      log)
        (ops,) = self.submitted_ops(result)
        self.assertEqual((ops[0]["OP_ID"], ops[0]["remote_node"], ops[0]["early_release"]),
                         ("OP_INSTANCE_REPLACE_DISKS", "node3.test", True))

    def test_mode_all_submits_the_primaries_first(self):
        self.shared("z.test")  # (after m.test in the request: reordered)
        status, result, _log = self.run_logged(self.evacuate(mode="all", iallocator="planned"))
        self.assertEqual(status, "success", result)
        first, second = self.submitted_ops(result)
        self.assertEqual((first[0]["OP_ID"], first[0]["instance_name"]),
                         ("OP_INSTANCE_MIGRATE", "z.test"))
        self.assertEqual((second[0]["OP_ID"], second[0]["instance_name"]),
                         ("OP_INSTANCE_REPLACE_DISKS", "m.test"))
        (first_id, second_id) = (job_id for _ok, job_id in result["jobs"])
        self.assertEqual(second[0]["depends"], [[first_id, evacuate.ANY_END]])


class HooksTest(GroupCase):
    def test_environment_and_nodes_are_ganetis(self):
        from tests.master.test_hooks import RecordingHooks
        hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = hooks
        self.shared("a.test", "b.test")
        rack2 = self.config.group_by_name("rack2").uuid
        self.run_ok({"OP_ID": "OP_INSTANCE_CHANGE_GROUP", "instance_name": "a.test",
                     "target_groups": ["rack2"]})
        # Ganeti's: the master only
        self.assertEqual(hooks.where("instance-change-group", "pre"), ["node1.test"])
        env = hooks.env("node1.test", "instance-change-group", "pre")
        self.assertEqual((env["GANETI_TARGET_GROUPS"], env["GANETI_INSTANCE_NAME"]),
                         (rack2, "a.test"))
        self.run_ok({"OP_ID": "OP_GROUP_EVACUATE", "group_name": "default"})
        # Ganeti's: the master and the group's nodes (node1 alone in default)
        self.assertEqual(sorted(hooks.where("group-evacuate", "post")), ["node1.test"])
        env = hooks.env("node1.test", "group-evacuate", "pre")
        self.assertEqual((env["GANETI_GROUP_NAME"], env["GANETI_TARGET_GROUPS"]),
                         ("default", rack2))
        # node evacuation runs no hooks (Ganeti's NoHooksLU)
        before = len(hooks.runs)
        self.run_ok(self.evacuate("node1.test", mode="secondary-only"))
        self.assertEqual(hooks.runs[before:], [])
