"""ganeti-watcher (the cron command) against an in-process masterd: pause, lock,
node-local work, master checks with daemon restarts, archiving, group watchers with
their state file, verify-disks and exit codes."""

import fcntl
import io
import json
import os

import pytest

from ganeti.cli import watcher, watcher_node
from ganeti.core import constants, errors, ssconf
from ganeti.core import watcher as watchermod
from tests.fakes.clirun import MasterCliTestCase


class WatcherTestCase(MasterCliTestCase):
    def setUp(self):
        super().setUp()
        for key, value in ssconf.compute(self.master.config).items():
            with open(self.master.paths.ssconf_file(key), "w") as f:
                f.write(ssconf.file_content(value))
        self.group = next(iter(self.master.config.nodegroups))
        self.started = []
        self.stopped = []
        self.probes = []
        self.rapi_answers = []
        self.spawned = []
        self.no_master = 0
        self.rt = watcher.Runtime(
            luxi_factory=self._luxi, now=self.master.reactor.seconds, sleep=lambda s: None,
            start_daemon=lambda paths, d, ip: self.started.append((d, ip)) or 1,
            stop_daemon=lambda paths, d: self.stopped.append(d) or True,
            rapi_probe=self._probe, spawn_group=self._spawn)

    def _luxi(self, paths):
        if self.no_master:
            self.no_master -= 1
            raise errors.NoMasterError("connection refused")
        return self.master.client()

    def _probe(self, ip):
        self.probes.append(ip)
        return self.rapi_answers.pop(0) if self.rapi_answers else True

    def _spawn(self, argv, uuid, lock_fd):
        code = self.watch(*[a for a in argv], "--node-group", uuid)
        self.spawned.append((uuid, code))
        return code

    def watch(self, *argv):
        self.stderr = io.StringIO()
        return watcher.main(list(argv), environ=self.environ, stderr=self.stderr,
                            runtime=self.rt)

    def log_text(self):
        with open(self.master.paths.log_file("watcher")) as f:
            return f.read()

    def state(self):
        with open(self.master.paths.watcher_group_state_file(self.group)) as f:
            return json.load(f)


class PauseAndLockTest(WatcherTestCase):
    def test_paused_exits_quietly(self):
        watchermod.write_pause_file(self.master.paths.watcher_pause_file,
                                    self.master.reactor.seconds() + 600, durable=False)
        self.assertEqual(self.watch("-d"), 0)
        self.assertIn("Pause has been set, exiting", self.stderr.getvalue())
        self.assertEqual((self.master.calls, self.started), ([], []))

    def test_ignore_pause(self):
        watchermod.write_pause_file(self.master.paths.watcher_pause_file,
                                    self.master.reactor.seconds() + 600, durable=False)
        self.assertEqual(self.watch("--ignore-pause"), 0)
        self.assertIn("AutoArchiveJobs", self.methods())

    def test_exclusive_lock_holder_keeps_it_out(self):
        path = self.master.paths.watcher_lock_file
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.assertEqual(self.watch(), 0)
        self.assertIn("Can't acquire lock on", self.log_text())
        self.assertEqual(self.master.calls, [])


@pytest.mark.subprocess
class GlobalWatcherTest(WatcherTestCase):
    def test_master_run(self):
        self.assertEqual(self.watch("-A", "1h"), 0, self.log_text())
        ip = ssconf.node_primary_ip(self.master.paths)
        # noded and rapi are not running here: started with the node's address
        self.assertIn((constants.NODED, ip), self.started)
        self.assertIn((constants.RAPI, ip), self.started)
        self.assertEqual(self.probes, [ip])
        archive = [args for m, args in self.master.calls if m == "AutoArchiveJobs"]
        self.assertEqual(archive, [(3600, 89)])
        self.assertEqual(self.spawned, [(self.group, 0)])
        # nothing changed (no boot ids without node daemons): created, left empty, as Ganeti
        with open(self.master.paths.watcher_group_state_file(self.group)) as f:
            self.assertEqual(f.read(), "")

    def test_not_the_master(self):
        with open(self.master.paths.ssconf_file("master_node"), "w") as f:
            f.write("node9.test\n")
        self.assertEqual(self.watch(), 0)
        self.assertIn(constants.NODED, [d for d, _ in self.started])  # node-local work done
        self.assertEqual(self.master.calls, [])

    def test_master_check_fails(self):
        self.rt.luxi_factory = lambda paths: OtherMaster(self.master.client())
        self.assertEqual(self.watch(), constants.EXIT_NOTMASTER)

    def test_restarts_masterd_that_does_not_answer(self):
        self.no_master = 1
        self.assertEqual(self.watch(), 0, self.log_text())
        self.assertEqual(self.stopped[:1], [constants.MASTERD])
        self.assertIn(constants.MASTERD, [d for d, _ in self.started])
        self.assertIn("Luxi daemon seems to be down", self.log_text())

    def test_restarts_rapi_once_if_it_does_not_answer(self):
        self.rapi_answers = [False, True]
        self.assertEqual(self.watch(), 0)
        self.assertEqual(len(self.probes), 2)
        self.assertIn(constants.RAPI, self.stopped)
        self.rapi_answers = [False, False]
        self.assertEqual(self.watch(), 0)
        self.assertIn("RAPI is not responding", self.log_text())

    def test_rapi_ip_option(self):
        self.watch("--rapi-ip", "192.0.2.7")
        self.assertEqual(self.probes, ["192.0.2.7"])

    def test_no_wait_children_and_drained_queue(self):
        self.assertEqual(self.watch("--no-wait-children"), 0)
        self.rt.luxi_factory = lambda paths: Drained(self.master.client())
        self.assertEqual(self.watch(), 0)
        self.assertIn("Job queue is drained", self.log_text())

    def test_bad_options(self):
        self.assertEqual(self.watch("-A", "xx"), 1)
        self.assertIn("Invalid time specification", self.stderr.getvalue())
        self.assertEqual(self.watch("extra"), 2)

    def test_watcher_hooks_run_in_order(self):
        hooks = self.master.paths.watcher_hooks_dir
        os.makedirs(hooks)
        out = os.path.abspath(self.mktemp())
        for name, body in [("10-ok", f"echo ok >> {out}"), ("20-fail", "exit 3"),
                           ("bad.name", "echo never >> " + out)]:
            path = os.path.join(hooks, name)
            with open(path, "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(path, 0o755)
        self.assertEqual(watcher_node.run_watcher_hooks(self.master.paths),
                         [("10-ok", "success"), ("20-fail", "failed"),
                          ("bad.name", "skipped")])
        with open(out) as f:
            self.assertEqual(f.read(), "ok\n")


class OtherMaster:
    def __init__(self, client):
        self.client = client

    def call(self, method, *args):
        if method == "QueryConfigValues" and args == (["master_node"],):
            answer = self.client.call(method, *args)
            return answer if self.first() else ["node9.test"]
        return self.client.call(method, *args)

    _n = 0

    def first(self):
        self._n += 1
        return self._n == 1


class Drained:
    def __init__(self, client):
        self.client = client

    def call(self, method, *args):
        if method == "AutoArchiveJobs":
            raise errors.JobQueueDrainError("drained")
        return self.client.call(method, *args)


class GroupWatcherTest(WatcherTestCase):
    def test_bad_and_unknown_groups(self):
        self.assertEqual(self.watch("--node-group", "not-a-uuid"), 1)
        self.assertIn("must be given a UUID", self.log_text())
        self.assertEqual(self.watch("--node-group", "0" * 8 + "-0000-0000-0000-" + "0" * 12), 1)
        self.assertIn("is not known by ssconf", self.log_text())

    def test_state_file_locked_by_another_watcher(self):
        held = watchermod.open_state_file(self.master.paths.watcher_group_state_file(self.group))
        self.addCleanup(held.close)
        self.assertEqual(self.watch("--node-group", self.group), 1)
        self.assertIn("Can't acquire lock on state file", self.log_text())
        self.assertNotIn("SubmitJob", self.methods())

    def test_no_instances_no_verify_disks(self):
        self.assertEqual(self.watch("--node-group", self.group), 0)
        self.assertNotIn("SubmitJob", self.methods())

    def test_verify_disks_submitted_unless_recently_done(self):
        self.patch(watcher, "group_instances",
                   lambda client, uuid: [{"name": "i1", "disk_template": "plain"}])
        path = self.master.paths.watcher_group_state_file(self.group)
        state = watchermod.WatcherState({"node": {"old.test": {"bootid": "x"}}, "extra": 1})
        state.record_verify_disks(self.master.reactor.seconds() - 60, 5, "ganeti-masterd")
        with open(path, "w") as f:
            f.write(state.dump())
        self.assertEqual(self.watch("--node-group", self.group), 0)
        self.assertNotIn("SubmitJob", self.methods())
        self.assertEqual(self.state()["extra"], 1)  # unknown keys are kept, as Ganeti
        self.master.reactor.advance(watchermod.CRON_VERIFY_SPACING)
        self.watch("--node-group", self.group)  # the job's own outcome does not matter here
        submitted = [args[0][0] for m, args in self.master.calls if m == "SubmitJob"]
        self.assertEqual([op["OP_ID"] for op in submitted], ["OP_GROUP_VERIFY_DISKS"])
        self.assertEqual(submitted[0]["group_name"], self.group)
        self.assertEqual(submitted[0]["priority"], constants.OP_PRIO_LOW)
        self.assertEqual(self.state()["verify_disks"]["by"], "ganeti-watcher")

    def test_no_verify_disks_option(self):
        self.patch(watcher, "group_instances",
                   lambda client, uuid: [{"name": "i1", "disk_template": "plain"}])
        self.assertEqual(self.watch("--node-group", self.group, "--no-verify-disks"), 0)
        self.assertNotIn("SubmitJob", self.methods())
