"""masterd's instance event watch on a fake clock and a fake node RPC (Deferreds the
tests fire): restarts at once on a crash, Ganeti's watcher rules (admin state, user
shutdown, back-off, give-up), node list changes, failures, the unknown-call fallback."""

import dataclasses
import json
import os

from twisted.internet import defer, task
from twisted.logger import Logger, formatEvent
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core import rpcdefs
from ganeti.core import watcher as watchermod
from ganeti.master import instwatch
from ganeti.master.instwatch import InstanceEventWatch, parse_answer
from ganeti.master.watchersvc import JobAccess, WatcherService
from ganeti.rpc.noderpc import OneNodeCalls
from ganeti.rpc.result import RpcResult
from tests.fakes.configs import node_paths, small_config
from tests.fakes.instances import add_instance

MASTER = "node1.test"
OTHER = "node2.test"


class FakeRpc(OneNodeCalls):
    """Each call returns a Deferred the test fires (one node per call, as the watch)."""

    def __init__(self):
        self.calls = []  # [node, args, deferred]

    def call(self, nodes, name, args=(), timeout=None):
        assert name == "instance_events", name
        [node] = list(nodes)
        d = defer.Deferred()
        self.calls.append((node.name, list(args), d))
        return d.addCallback(lambda result: {node.name: result})

    def pending(self, node):
        return [(args, d) for n, args, d in self.calls if n == node and not d.called]

    def answer(self, node, payload=None, fail=None):
        [(args, d)] = self.pending(node)
        if fail is not None:
            d.callback(RpcResult(node, False, fail_msg=fail, call="instance_events"))
        else:
            d.callback(RpcResult(node, True, payload=payload, call="instance_events"))
        return args

    def count(self, node):
        return sum(1 for n, _, _ in self.calls if n == node)


class FakeJobs:
    def __init__(self):
        self.submitted = []

    async def submit(self, ops):
        self.submitted.append(ops)
        return 100 + len(self.submitted)

    async def wait(self, job_id, timeout):
        return None

    async def archive(self, job_id):
        return True

    async def auto_archive(self, age, timeout):
        return [0, 0]


def ev(serial, instance, event, t=1000.0, reason=""):
    return {"serial": serial, "instance": instance, "hypervisor": "fake", "event": event,
            "reason": reason, "time": t}


def answer(serial, events=(), boot="boot-1"):
    return {"boot_id": boot, "serial": serial, "events": list(events)}


class WatchCase(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self.mktemp())
        os.makedirs(self.paths.data_dir, exist_ok=True)
        self.clock = task.Clock()
        self.clock.advance(1000)
        cfg = small_config()
        other = dataclasses.replace(cfg.master, uuid="uuid-node2", name=OTHER,
                                    primary_ip="127.0.1.2", master_candidate=False)
        cfg.nodes[other.uuid] = other
        self.cfg = cfg
        add_instance(cfg, "inst1.test")
        add_instance(cfg, "inst2.test", pnode=OTHER)
        add_instance(cfg, "down1.test", admin_state=c.ADMINST_DOWN)
        self.group = cfg.master.group
        self.status = {"inst1.test": "ERROR_down", "inst2.test": "running",
                       "down1.test": "ADMIN_down"}
        self.queries = []
        self.jobs = FakeJobs()
        self.rpc = FakeRpc()
        self.logged = []
        self.watcher = WatcherService(
            self.clock, self.paths, lambda: self.cfg, self.query,
            JobAccess(self.jobs.submit, self.jobs.wait, self.jobs.archive,
                      self.jobs.auto_archive),
            lambda fn, *args: defer.maybeDeferred(fn, *args), interval=30)

    async def query(self, what, fields, qfilter):
        self.assertEqual((what, fields), ("instance", ["name", "status"]))
        self.queries.append(qfilter)
        op, field, value = qfilter
        self.assertEqual(op, "==")
        if field == "name":
            names = [value]
        else:
            self.assertEqual(field, "pnode")
            names = [i.name for i in self.cfg.instances.values()
                     if self.cfg.nodes[i.primary_node].name == value]
        return {"data": [[[0, n], [0, self.status[n]]] for n in sorted(names)]}

    def start(self, **kwargs):
        watch = InstanceEventWatch(self.watcher, lambda: self.rpc, **kwargs)
        watch.log = Logger(observer=self.logged.append)
        watch.startService()
        self.addCleanup(watch.stopService)
        return watch

    def messages(self, level=None):
        return [formatEvent(e) for e in self.logged
                if level is None or e["log_level"].name == level]

    def started(self, node=MASTER, serial=0, boot="boot-1"):
        """Start the watch and answer the first poll of ``node`` (first contact)."""
        watch = self.start()
        self.rpc.answer(node, answer(serial, boot=boot))
        return watch

    def restarts(self):
        return [ops[0]["instance_name"] for ops in self.jobs.submitted
                if ops[0]["OP_ID"] == "OP_INSTANCE_STARTUP"]

    def statefile(self):
        with open(self.paths.watcher_group_state_file(self.group)) as f:
            return json.load(f)


class NodesTest(WatchCase):
    def test_polls_every_online_vm_capable_node_with_the_hold(self):
        self.cfg.nodes["uuid-off"] = dataclasses.replace(
            self.cfg.master, uuid="uuid-off", name="off.test", offline=True)
        self.cfg.nodes["uuid-novm"] = dataclasses.replace(
            self.cfg.master, uuid="uuid-novm", name="novm.test", vm_capable=False)
        self.start()
        self.assertEqual(sorted(n for n, _, _ in self.rpc.calls), [MASTER, OTHER])
        self.assertEqual(self.rpc.calls[0][1], [0, 0.0])  # first: serial and boot id
        self.rpc.answer(MASTER, answer(4))
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [4, instwatch.DEFAULT_HOLD])

    def test_rpc_timeout_exceeds_the_hold(self):
        call = rpcdefs.CALLS["instance_events"]
        self.assertGreater(call.timeout_for([0, 30.0]), 30.0)
        self.assertGreater(call.timeout_for([0, 1e6]), 30.0)
        self.assertEqual(call.check_args([5, 30]), [5, 30])
        for bad in ([-1, 30], [True, 30], [1, -1], [1, "x"]):
            self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, bad)

    def test_off_with_the_watcher_or_by_option(self):
        self.watcher.interval = 0
        self.start()
        self.assertEqual(self.rpc.calls, [])
        self.watcher.interval = 30
        self.start(enabled=False)
        self.assertEqual(self.rpc.calls, [])
        self.assertIn("Instance event watch off (--no-instance-events)", self.messages())

    def test_removed_node_stops_its_poll_and_new_node_is_polled(self):
        watch = self.start()
        [(_, d)] = self.rpc.pending(OTHER)
        del self.cfg.nodes["uuid-node2"]
        watch.config_changed(self.cfg)
        self.assertTrue(d.called)  # cancelled
        self.assertNotIn(OTHER, watch.polls)
        self.clock.advance(1000)
        self.assertEqual(self.rpc.count(OTHER), 1)
        self.cfg.nodes["uuid-node3"] = dataclasses.replace(
            self.cfg.master, uuid="uuid-node3", name="node3.test", primary_ip="127.0.1.3")
        watch.config_changed(self.cfg)
        self.assertEqual(len(self.rpc.pending("node3.test")), 1)
        self.assertEqual(len(self.rpc.pending(MASTER)), 1)  # untouched

    def test_nothing_is_polled_before_the_queue_is_ready(self):
        ready = defer.Deferred()
        watch = self.start(ready=lambda: ready)
        watch.config_changed(self.cfg)
        self.assertEqual(self.rpc.calls, [])
        ready.callback(None)
        self.assertEqual(sorted(n for n, _, _ in self.rpc.calls), [MASTER, OTHER])

    def test_node_going_offline_is_dropped(self):
        watch = self.start()
        self.cfg.nodes["uuid-node2"] = dataclasses.replace(self.cfg.nodes["uuid-node2"],
                                                           offline=True)
        watch.config_changed(self.cfg)
        self.assertEqual(self.rpc.pending(OTHER), [])

    def test_stop_cancels_every_poll(self):
        watch = self.start()
        watch.stopService()
        self.assertEqual(self.rpc.pending(MASTER) + self.rpc.pending(OTHER), [])
        self.clock.advance(1000)
        self.assertEqual(len(self.rpc.calls), 2)


class EventsTest(WatchCase):
    def test_first_contact_only_learns_the_serial(self):
        self.start()
        self.rpc.answer(MASTER, answer(7, [ev(7, "inst1.test", "crashed")]))
        # what happened before the watch is the periodic rounds' business
        self.assertEqual(self.queries, [])
        self.assertEqual(self.jobs.submitted, [])
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [7, instwatch.DEFAULT_HOLD])

    def test_crash_restarts_at_once_with_the_watchers_job(self):
        self.status["inst1.test"] = "running"
        self.started(serial=3)
        self.assertEqual(self.restarts(), [])
        self.clock.advance(1)
        self.status["inst1.test"] = "ERROR_down"
        self.clock.advance(0.4)
        self.rpc.answer(MASTER, answer(4, [ev(4, "inst1.test", "crashed", t=1000.9,
                                               reason="qemu killed")]))
        # same reactor turn: status read, restart submitted, next poll open
        self.assertEqual(self.queries, [["==", "name", "inst1.test"]])
        [[op]] = self.jobs.submitted
        expected = watchermod.restart_opcode("inst1.test", self.clock.seconds())
        self.assertEqual(op, expected)
        self.assertEqual(op["reason"][0][0], c.OPCODE_REASON_SRC_WATCHER)
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [4, instwatch.DEFAULT_HOLD])
        self.assertEqual(self.statefile()["instance"]["inst1.test"]["restart_count"], 1)
        entry = self.watcher.history[-1]
        self.assertEqual((entry["source"], entry["restarted"]),
                         ("instance events", {"inst1.test": 101}))
        text = "\n".join(self.messages())
        self.assertIn("Instance event: inst1.test crashed on node node1.test (node time "
                      "1000.900, seen by the master at 1001.400, 0.500 s later): qemu killed",
                      text)
        self.assertIn("Restart of instance inst1.test submitted as job 101, 0.500 s after",
                      text)

    def test_guest_shutdown_without_user_shutdown_is_restarted(self):
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "shutdown")]))
        self.assertEqual(self.restarts(), ["inst1.test"])

    def test_guest_shutdown_with_user_shutdown_is_cleaned_up_not_restarted(self):
        self.cfg.cluster.enabled_user_shutdown = True
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "shutdown")]))
        [[op]] = self.jobs.submitted
        self.assertEqual((op["OP_ID"], op["instance_name"], op["admin_state_source"]),
                         ("OP_INSTANCE_SHUTDOWN", "inst1.test", c.USER_SOURCE))
        self.assertEqual(op["reason"][0][:2],
                         [c.OPCODE_REASON_SRC_WATCHER, "Cleaning up instance inst1.test"])
        # a crash is still restarted
        self.rpc.answer(MASTER, answer(2, [ev(2, "inst1.test", "crashed")]))
        self.assertEqual(self.restarts(), ["inst1.test"])

    def test_kvm_needs_its_user_shutdown_parameter(self):
        self.cfg.cluster.enabled_user_shutdown = True
        inst = self.cfg.instance_by_name("inst1.test")
        inst.hypervisor = c.HT_KVM
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "shutdown")]))
        self.assertEqual(self.restarts(), ["inst1.test"])
        inst.hvparams = {"user_shutdown": True}
        self.rpc.answer(MASTER, answer(2, [ev(2, "inst1.test", "shutdown")]))
        self.assertEqual(self.jobs.submitted[-1][0]["OP_ID"], "OP_INSTANCE_SHUTDOWN")

    def test_nothing_for_stopped_started_admin_down_or_other_nodes(self):
        self.started()
        self.rpc.answer(MASTER, answer(4, [ev(1, "inst1.test", "stopped"),
                                           ev(2, "inst1.test", "started"),
                                           ev(3, "down1.test", "crashed"),
                                           ev(4, "inst2.test", "crashed"),
                                           ]))
        self.assertEqual(self.jobs.submitted, [])
        self.assertEqual(self.queries, [])
        text = "\n".join(self.messages())
        self.assertIn("its admin state is down: not restarted", text)
        self.assertIn("which is not its primary (node2.test)", text)

    def test_unknown_instance_is_ignored(self):
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "ghost.test", "crashed")]))
        self.assertEqual(self.jobs.submitted, [])

    def test_instance_running_again_is_not_restarted(self):
        self.status["inst1.test"] = "running"
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        self.assertEqual(self.jobs.submitted, [])
        self.assertIn("Instance inst1.test is running now: not restarted", self.messages())

    def test_gives_up_after_the_watchers_attempts(self):
        self.started()
        for serial in range(1, 8):
            self.rpc.answer(MASTER, answer(serial, [ev(serial, "inst1.test", "crashed")]))
        self.assertEqual(self.restarts(), ["inst1.test"] * watchermod.MAX_RESTARTS)
        gave_up = [e for e in self.watcher.history if e["gave_up"]]
        self.assertEqual(len(gave_up), 1)
        self.assertEqual(gave_up[0]["gave_up"], ["inst1.test"])
        self.assertIn("Could not restart instance 'inst1.test' after 5 attempts, giving up",
                      self.messages("error"))
        self.assertIn("Not restarting instance 'inst1.test', retries exhausted",
                      self.messages("warn"))

    def test_other_instances_records_are_kept(self):
        # a check of one instance must not drop the group's other records
        path = self.paths.watcher_group_state_file(self.group)
        state = watchermod.WatcherState()
        state.record_restart_attempt("inst2.test", self.clock.seconds())
        with open(path, "w") as f:
            f.write(state.dump())
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        self.assertEqual(sorted(self.statefile()["instance"]), ["inst1.test", "inst2.test"])

    def test_paused_watcher_restarts_nothing(self):
        watchermod.write_pause_file(self.paths.watcher_pause_file, self.clock.seconds() + 60,
                                    durable=False)
        self.started()
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        self.assertEqual(self.jobs.submitted, [])

    def test_locked_state_file_is_retried(self):
        self.started()
        held = watchermod.open_state_file(self.paths.watcher_group_state_file(self.group))
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        self.assertEqual(self.jobs.submitted, [])
        self.clock.advance(instwatch.LOCKED_RETRY)
        self.assertEqual(self.jobs.submitted, [])
        held.close()
        self.clock.advance(instwatch.LOCKED_RETRY)
        self.assertEqual(self.restarts(), ["inst1.test"])

    def test_boot_id_change_checks_the_node_instead_of_trusting_events(self):
        self.status["inst1.test"] = "running"
        self.started(serial=50)
        self.rpc.answer(MASTER, answer(2, [ev(1, "inst1.test", "started"),
                                           ev(2, "inst1.test", "crashed")], boot="boot-2"))
        self.assertEqual(self.queries, [["==", "pnode", MASTER]])
        self.assertEqual(self.jobs.submitted, [])  # the check found it running
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [2, instwatch.DEFAULT_HOLD])

    def test_serial_gap_checks_the_node(self):
        self.started(serial=3)
        self.rpc.answer(MASTER, answer(9, [ev(8, "inst1.test", "crashed"),
                                           ev(9, "inst1.test", "started")]))
        self.assertEqual(self.queries, [["==", "pnode", MASTER]])
        self.assertIn("events 4 to 7 were lost", "\n".join(self.messages()))
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [9, instwatch.DEFAULT_HOLD])

    def test_old_events_are_not_acted_on_twice(self):
        self.started(serial=1)
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        self.assertEqual(self.jobs.submitted, [])


class FailuresTest(WatchCase):
    def test_errors_back_off_and_are_logged_once(self):
        self.start()
        times = []
        for _ in range(9):
            self.rpc.answer(MASTER, fail="connection refused")
            before = self.rpc.count(MASTER)
            start = self.clock.seconds()
            while self.rpc.count(MASTER) == before:
                self.clock.advance(0.5)
            times.append(self.clock.seconds() - start)
        self.assertEqual(times, [1, 2, 4, 8, 16, 32, 60, 60, 60])
        warnings = [m for m in self.messages("warn") if "unavailable" in m]
        self.assertEqual(len(warnings), 1)
        self.assertIn("node1.test unavailable (connection refused)", warnings[0])
        self.rpc.answer(MASTER, answer(0))
        self.assertIn("Instance events of node node1.test flow again", self.messages("info"))
        self.rpc.answer(MASTER, fail="timed out")  # back-off starts over
        self.clock.advance(1)
        # the first call after a failure is not held: a restarted node daemon is seen
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [0, 0.0])
        self.rpc.answer(MASTER, answer(0, boot="boot-2"))
        self.assertIn("Checking the instances of node node1.test (node daemon restarted "
                      "(boot id boot-2))", self.messages("info"))
        self.rpc.answer(MASTER, fail="timed out")
        self.clock.advance(1)
        self.assertEqual(len([m for m in self.messages("warn") if "unavailable" in m]), 3)

    def test_no_busy_loop_when_a_node_answers_at_once(self):
        self.started()
        for _ in range(5):
            self.rpc.answer(MASTER, answer(0))  # nothing new, at once
            self.assertEqual(self.rpc.pending(MASTER), [])
            self.clock.advance(instwatch.MIN_SPACING)
            self.assertEqual(len(self.rpc.pending(MASTER)), 1)

    def test_unknown_call_falls_back_quietly(self):
        self.start()
        self.rpc.answer(MASTER, fail="HTTP 404: unknown RPC call '/instance_events'")
        self.clock.advance(instwatch.UNSUPPORTED_RETRY - 1)
        self.assertEqual(self.rpc.count(MASTER), 1)
        self.clock.advance(1)
        self.assertEqual(self.rpc.count(MASTER), 2)
        self.assertEqual(self.messages("warn"), [])
        # the node daemon was upgraded: first contact again
        self.rpc.answer(MASTER, answer(3))
        self.assertEqual(self.rpc.pending(MASTER)[0][0], [3, instwatch.DEFAULT_HOLD])

    def test_malformed_answers_fail_and_bad_events_are_dropped(self):
        self.start()
        self.rpc.answer(MASTER, {"boot_id": 3, "serial": 1, "events": []})
        self.assertIn("unexpected answer", "\n".join(self.messages("warn")))
        self.clock.advance(1)
        self.rpc.answer(MASTER, answer(0))
        self.queries.clear()
        self.rpc.answer(MASTER, answer(3, [ev(1, "inst1.test", "exploded"), "junk",
                                           ev(3, "inst1.test", "crashed")]))
        self.assertIn("Node node1.test sent 2 malformed instance event(s); ignored",
                      self.messages("warn"))

    def test_parse_answer(self):
        a = parse_answer(answer(5, [ev(5, "b", "crashed"), ev(4, "a", "stopped")]))
        self.assertEqual([e.serial for e in a.events], [4, 5])
        for bad in (None, [], {"boot_id": "", "serial": 0, "events": []},
                    {"boot_id": "x", "serial": -1, "events": []},
                    {"boot_id": "x", "serial": True, "events": []},
                    {"boot_id": "x", "serial": 0, "events": {}},
                    {"boot_id": "x", "serial": 0, "events": [{}] * 5001}):
            self.assertRaises(ValueError, parse_answer, bad)
        bad_events = [ev(1, "", "crashed"), ev(0, "a", "crashed"), ev(1, "a", "crashed",
                                                                     t=float("nan")),
                      dict(ev(1, "a", "crashed"), serial=True)]
        self.assertEqual(parse_answer(answer(1, bad_events)).dropped, 4)

    def test_no_client_is_a_failure_with_back_off(self):
        def broken():
            raise RuntimeError("no certificate")
        watch = InstanceEventWatch(self.watcher, broken)
        watch.log = Logger(observer=self.logged.append)
        watch.startService()
        self.addCleanup(watch.stopService)
        self.assertIn("unavailable (no certificate)", "\n".join(self.messages("warn")))
        self.assertEqual(watch.polls[MASTER].polls, 1)
        self.clock.advance(1)
        self.assertEqual(watch.polls[MASTER].polls, 2)


class DaemonWiringTest(SynchronousTestCase):
    def test_masterd_has_the_watch_off_without_the_watcher(self):
        from tests.fakes.masterd import InProcessMaster
        master = InProcessMaster(self.mktemp())
        self.addCleanup(master.stop)
        watch = master.daemon.instance_events
        self.assertTrue(watch.running)
        self.assertEqual(watch.polls, {})
        self.assertIn(watch.config_changed, master.daemon.config_writer._listeners)


class MasterRpc(FakeRpc):
    """instance_events as FakeRpc; every node runs nothing (all_instances_info: {});
    any other call fails."""

    def call(self, nodes, name, args=(), timeout=None):
        if name == "instance_events":
            return super().call(nodes, name, args, timeout)
        if name == "all_instances_info":
            return defer.succeed({n.name: RpcResult(n.name, True, payload={}, call=name)
                                  for n in nodes})
        return defer.succeed({n.name: RpcResult(n.name, False, fail_msg="not here", call=name)
                              for n in nodes})


class InProcessMasterTest(SynchronousTestCase):
    """The real query (the instance's live status) and the real job queue (the
    opcodes are accepted and show in the job list with the watcher's reason)."""

    def setUp(self):
        from tests.fakes.masterd import InProcessMaster
        cfg = small_config()
        add_instance(cfg, "inst1.test")
        self.rpc = MasterRpc()
        self.master = InProcessMaster(self.mktemp(), cfg, rpc=self.rpc)
        self.addCleanup(self.master.stop)
        self.master.daemon.watcher.interval = 30
        self.watch = InstanceEventWatch(self.master.daemon.watcher, lambda: self.rpc)
        self.watch.startService()
        self.addCleanup(self.watch.stopService)
        self.rpc.answer(MASTER, answer(0))

    def jobs(self):
        return self.master.client().call("QueryJobs", None, ["id", "ops"])

    def test_crash_submits_a_startup_job(self):
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "crashed")]))
        [(job_id, [op])] = self.jobs()
        self.assertEqual((op["OP_ID"], op["instance_name"]),
                         ("OP_INSTANCE_STARTUP", "inst1.test"))
        self.assertEqual(op["reason"][0][:2],
                         [c.OPCODE_REASON_SRC_WATCHER, "Restarting instance inst1.test"])

    def test_user_shutdown_submits_the_cleanup(self):
        self.master.run_until(self.master.daemon.config_writer.update(
            lambda cfg: setattr(cfg.cluster, "enabled_user_shutdown", True)))
        self.rpc.answer(MASTER, answer(1, [ev(1, "inst1.test", "shutdown")]))
        [(job_id, [op])] = self.jobs()
        self.assertEqual((op["OP_ID"], op["admin_state_source"]),
                         ("OP_INSTANCE_SHUTDOWN", c.USER_SOURCE))

    def test_node_restart_checks_with_the_real_query(self):
        self.rpc.answer(MASTER, answer(0, boot="boot-2"))
        [(job_id, [op])] = self.jobs()
        self.assertEqual(op["OP_ID"], "OP_INSTANCE_STARTUP")
