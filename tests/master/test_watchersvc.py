"""masterd's watcher service on a fake clock: rounds, pause, reboots, locking with the
cron command, verify-disks without double submission, archiving."""

import json
import os

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants
from ganeti.core import watcher as watchermod
from ganeti.master.watchersvc import (
    JobAccess,
    WatcherService,
    queue_job_access,
)
from tests.fakes.masterd import InProcessMaster


class FakeJobs:
    """Records submissions; jobs end at once with a verify-disks result."""

    def __init__(self):
        self.submitted = []
        self.archived = []
        self.auto_archived = []

    async def submit(self, ops):
        self.submitted.append(ops)
        return 100 + len(self.submitted)

    async def wait(self, job_id, timeout):
        return [{}, [], {}]

    async def archive(self, job_id):
        self.archived.append(job_id)
        return True

    async def auto_archive(self, age, timeout):
        self.auto_archived.append(age)
        return [0, 0]

    def access(self):
        return JobAccess(self.submit, self.wait, self.archive, self.auto_archive)


class ServiceTestCase(SynchronousTestCase):
    def setUp(self):
        self.master = InProcessMaster(self.mktemp())
        self.addCleanup(self.master.stop)
        self.paths = self.master.paths
        self.clock = self.master.reactor
        self.boot_ids = {"node1.test": "boot-1"}
        self.blocking_calls = []
        self.group = next(iter(self.master.config.nodegroups))

    def run_blocking(self, fn, *args):
        self.blocking_calls.append(getattr(fn, "__name__", repr(fn)))
        return defer.maybeDeferred(fn, *args)

    async def query(self, what, fields, qfilter):
        if what == "instance":  # the restart check: every instance runs as it should
            self.assertEqual((fields, qfilter),
                             (["name", "status"], ["==", "pnode.group.uuid", self.group]))
            return {"data": []}
        self.assertEqual((what, fields), ("node", ["name", "bootid", "offline"]))
        self.assertEqual(qfilter, ["==", "group.uuid", self.group])
        return {"data": [[[0, name], [0, boot], [0, False]]
                         for name, boot in sorted(self.boot_ids.items())]}

    def service(self, jobs=None, instances=(), **kwargs):
        svc = WatcherService(self.clock, self.paths, lambda: self.master.config, self.query,
                             jobs if jobs is not None else FakeJobs().access(),
                             self.run_blocking, **kwargs)
        svc.group_instances = lambda uuid: list(instances)
        return svc

    def round(self, svc):
        return self.successResultOf(defer.Deferred.fromCoroutine(svc.run_once()))

    def state(self):
        with open(self.paths.watcher_group_state_file(self.group)) as f:
            return json.load(f)


class RoundsTest(ServiceTestCase):
    def test_runs_every_interval_and_stops(self):
        svc = self.service(interval=10)
        svc.startService()
        self.clock.advance(9)
        self.assertEqual(svc.history, [])
        self.clock.advance(1)
        self.assertEqual(len(svc.history), 1)
        self.clock.advance(10)
        self.assertEqual(len(svc.history), 2)
        svc.stopService()
        self.clock.advance(100)
        self.assertEqual(len(svc.history), 2)

    def test_interval_zero_is_off(self):
        svc = self.service(interval=0)
        svc.startService()
        self.clock.advance(1000)
        self.assertEqual(svc.history, [])
        svc.stopService()

    def test_file_work_goes_through_the_blocking_runner(self):
        self.round(self.service())
        self.assertIn("read_pause_file", self.blocking_calls)
        self.assertIn("open_state_file", self.blocking_calls)
        self.assertIn("save", self.blocking_calls)

    def test_paused_does_nothing(self):
        fake = FakeJobs()
        watchermod.write_pause_file(self.paths.watcher_pause_file, self.clock.seconds() + 60,
                                    durable=False)
        svc = self.service(jobs=fake.access())
        self.assertEqual(self.round(svc), {"when": self.clock.seconds(), "paused": True})
        self.assertEqual(fake.auto_archived, [])
        self.assertFalse(os.path.exists(self.paths.watcher_group_state_file(self.group)))
        self.clock.advance(61)  # the pause ends by itself
        self.assertFalse(self.round(svc)["paused"])
        self.assertEqual(fake.auto_archived, [watchermod.DEFAULT_JOB_AGE])

    def test_a_reboot_is_seen_within_one_round(self):
        svc = self.service()
        first = self.round(svc)
        self.assertEqual(first["groups"][self.group]["rebooted"], ["node1.test"])  # first sight
        self.assertEqual(self.state()["node"], {"node1.test": {"bootid": "boot-1"}})
        self.assertEqual(self.round(svc)["groups"][self.group]["rebooted"], [])
        self.boot_ids["node1.test"] = "boot-2"
        self.assertEqual(self.round(svc)["groups"][self.group]["rebooted"], ["node1.test"])
        self.assertEqual(self.state()["node"]["node1.test"]["bootid"], "boot-2")

    def test_a_node_without_boot_id_is_skipped(self):
        self.boot_ids["node1.test"] = None
        self.assertEqual(self.round(self.service())["groups"][self.group]["rebooted"], [])

    def test_group_locked_by_the_cron_command_is_skipped(self):
        held = watchermod.open_state_file(self.paths.watcher_group_state_file(self.group))
        self.addCleanup(held.close)
        fake = FakeJobs()
        summary = self.round(self.service(jobs=fake.access(), instances=[{"name": "i1"}]))
        self.assertEqual(summary["groups"][self.group], {"skipped": "locked"})
        self.assertEqual(fake.submitted, [])

    def test_archiving_every_five_minutes(self):
        fake = FakeJobs()
        svc = self.service(jobs=fake.access())
        self.round(svc)
        self.clock.advance(100)
        self.round(svc)
        self.assertEqual(len(fake.auto_archived), 1)
        self.clock.advance(200)
        self.round(svc)
        self.assertEqual(len(fake.auto_archived), 2)


class VerifyDisksTest(ServiceTestCase):
    def test_no_instances_no_verify_disks(self):
        """Ganeti's rule: a group without instances (or only ext) is not verified."""
        fake = FakeJobs()
        self.round(self.service(jobs=fake.access()))
        self.round(self.service(jobs=fake.access(), instances=[{"name": "e",
                                                                "disk_template": "ext"}]))
        self.assertEqual(fake.submitted, [])

    def test_submitted_once_per_interval_and_recorded_for_the_cron_command(self):
        fake = FakeJobs()
        svc = self.service(jobs=fake.access(), instances=[{"name": "i1",
                                                           "disk_template": "plain"}],
                           verify_interval=300)
        summary = self.round(svc)
        self.assertEqual(summary["groups"][self.group]["verify_disks"], 101)
        ((op,),) = fake.submitted
        self.assertEqual(op["OP_ID"], "OP_GROUP_VERIFY_DISKS")
        self.assertEqual(op["group_name"], self.group)
        self.assertEqual(op["priority"], constants.OP_PRIO_LOW)
        self.assertEqual(op["reason"][0][:2],
                         ["gnt:watcher", f"Verifying disks of group {self.group}"])
        self.assertEqual(fake.archived, [101])
        record = self.state()["verify_disks"]
        self.assertEqual(record, {"when": self.clock.seconds(), "job": 101,
                                  "by": "ganeti-masterd"})
        # the cron command, reading the same state, does not repeat it
        state = watchermod.WatcherState.load(json.dumps(self.state()))
        self.assertFalse(watchermod.verify_disks_due(state, self.clock.seconds() + 60,
                                                     watchermod.CRON_VERIFY_SPACING))
        self.clock.advance(299)
        self.round(svc)
        self.assertEqual(len(fake.submitted), 1)
        self.clock.advance(1)
        self.round(svc)
        self.assertEqual(len(fake.submitted), 2)

    def test_a_recent_cron_submission_is_not_repeated(self):
        path = self.paths.watcher_group_state_file(self.group)
        state = watchermod.WatcherState()
        state.record_verify_disks(self.clock.seconds() - 10, 7, "ganeti-watcher")
        with open(path, "w") as f:
            f.write(state.dump())
        fake = FakeJobs()
        self.round(self.service(jobs=fake.access(), instances=[{"name": "i1"}]))
        self.assertEqual(fake.submitted, [])
        self.assertEqual(self.state()["verify_disks"]["job"], 7)

    def test_through_the_real_queue(self):
        """Submitted as a client's job; an opcode the master does not know yet is
        tolerated (logged, nothing recorded), a known one runs and is archived."""
        d = self.master.daemon
        svc = self.service(jobs=queue_job_access(d.queue, d.events, self.clock),
                           instances=[{"name": "i1", "disk_template": "plain"}])
        result = self.master.run_until(defer.Deferred.fromCoroutine(svc.run_once()))
        job_id = result["groups"][self.group]["verify_disks"]
        if job_id is None:
            self.assertNotIn("verify_disks", self.state())
            self.flushLoggedErrors()
        else:
            self.assertNotIn(job_id, d.queue.visible)  # archived
            self.assertEqual(self.state()["verify_disks"]["job"], job_id)

    def test_archives_old_jobs_through_the_real_queue(self):
        d = self.master.daemon
        job_id = self.master.submit({"OP_ID": "OP_TEST_DELAY", "duration": 0})
        self.clock.advance(watchermod.DEFAULT_JOB_AGE + 10)
        svc = self.service(jobs=queue_job_access(d.queue, d.events, self.clock))
        summary = self.master.run_until(defer.Deferred.fromCoroutine(svc.run_once()))
        self.assertEqual(summary["archived"], 1)
        self.assertNotIn(job_id, d.queue.visible)


class TapOptionTest(SynchronousTestCase):
    def test_watcher_interval(self):
        from twisted.python import usage

        from ganeti.master.tap import Options
        opts = Options()
        opts.parseOptions([])
        self.assertEqual(opts["watcher-interval"], 30.0)
        opts = Options()
        opts.parseOptions(["--watcher-interval", "5"])
        self.assertEqual(opts["watcher-interval"], 5.0)
        for bad in ("-1", "nan", "100000", "soon"):
            with self.assertRaises(usage.UsageError, msg=bad):
                Options().parseOptions(["--watcher-interval", bad])
        # the environment sets the default (a virtual cluster's masterd without it)
        self.patch(os, "environ", {**os.environ, "GANETI_WATCHER_INTERVAL": "0"})
        opts = Options()
        opts.parseOptions([])
        self.assertEqual(opts["watcher-interval"], 0.0)
        opts = Options()
        opts.parseOptions(["--watcher-interval", "7"])
        self.assertEqual(opts["watcher-interval"], 7.0)
        for bad in ("x", "-3"):
            self.patch(os, "environ", {**os.environ, "GANETI_WATCHER_INTERVAL": bad})
            with self.assertRaises(usage.UsageError, msg=bad):
                Options().parseOptions([])
