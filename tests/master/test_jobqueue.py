"""The job queue on a fake reactor: the whole masterd wiring, driven by a Clock."""

import os

from twisted.internet import defer
from twisted.internet.testing import MemoryReactorClock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import errors
from ganeti.master.jobs.jobstore import JobStore
from ganeti.master.service import MasterDaemon
from tests.fakes.configs import node_paths, scratch_dir, small_config


def sync(fn, *args):
    return defer.maybeDeferred(fn, *args)


#: The shortest delay used where a job should just finish (Ganeti refuses 0).
TICK = 0.001


def delay(duration=TICK, **params):
    op = {"OP_ID": "OP_TEST_DELAY", "duration": duration}
    op.update(params)
    return op


class QueueTestCase(SynchronousTestCase):
    max_running = 20

    def setUp(self):
        self.paths = node_paths(scratch_dir(self))  # absolute, whatever the working dir
        os.makedirs(self.paths.data_dir)
        cfg = small_config()
        cfg.cluster.max_running_jobs = self.max_running
        with open(self.paths.config_file, "w") as f:
            f.write(configmod.dump(cfg))
        self.start()

    def start(self):
        self.reactor = MemoryReactorClock()
        self.reactor.advance(1800000000)
        self.daemon = MasterDaemon(self.reactor, self.paths,
                                   configmod.load_file(self.paths.config_file),
                                   run_blocking=sync, durable=False)
        self.daemon.startService()
        self.addCleanup(self._stop, self.daemon)
        self.queue = self.daemon.queue
        self.methods = self.daemon.job_methods
        self.events = []
        self.daemon.events.subscribe(self.events.append)

    def _stop(self, daemon):
        if daemon.running:
            daemon.stopService()

    def crash_and_restart(self):
        """Stop without any orderly shutdown of the jobs, then start again."""
        self.daemon.store.close()
        self.daemon.running = False
        self.start()

    def submit(self, *ops):
        return self.successResultOf(defer.Deferred.fromCoroutine(self.queue.submit(list(ops))))

    def finished(self, *ops):
        """Submit a job of short delays and let the clock run until it has finished."""
        jid = self.submit(*ops)
        self.reactor.advance(sum(op.get("duration", 0) for op in ops))
        return jid

    def status(self, job_id):
        return self.queue.visible[job_id].status

    def query_jobs(self, ids, fields):
        return self.successResultOf(defer.Deferred.fromCoroutine(
            self.methods.query_jobs(ids, fields)))

    def query(self, what, fields, qfilter):
        return self.successResultOf(defer.Deferred.fromCoroutine(
            self.methods.query(what, fields, qfilter)))

    def field(self, job_id, name):
        (row,) = self.query_jobs([job_id], [name])
        return row[0]


class SubmitTest(QueueTestCase):
    def test_job_runs_to_success(self):
        jid = self.finished(delay(1.0))
        self.assertEqual(jid, 1)
        self.assertEqual(self.status(jid), "success")
        self.assertEqual(self.field(jid, "opresult"), [None])
        self.assertEqual(self.field(jid, "summary"), ["TEST_DELAY(1.0)"])
        kinds = [(e.data["id"], e.data["status"]) for e in self.events if e.kind == "job"]
        self.assertEqual(kinds, [(1, "queued"), (1, "running"), (1, "success")])
        for event in self.events:
            self.assertEqual((event.data["ops"], event.data["summary"]),
                             (["OP_TEST_DELAY"], ["TEST_DELAY(1.0)"]))
        reason = self.queue.visible[jid].ops[0].input["reason"]
        self.assertEqual(reason[-1][:2], ["gnt:opcode:test_delay", "job=1;index=0"])

    def test_delay_runs_on_the_clock(self):
        jid = self.submit(delay(5))
        self.assertEqual(self.status(jid), "running")
        self.reactor.advance(4.9)
        self.assertEqual(self.status(jid), "running")
        self.reactor.advance(0.2)
        self.assertEqual(self.status(jid), "success")

    def test_bad_input_creates_no_job(self):
        bad = [
            [{"OP_ID": "OP_NO_SUCH"}],
            [{"OP_ID": "OP_TEST_DELAY"}],
            [delay("x")],
            [delay(1, priority=5)],
            [delay(1, depends=[["abc", []]])],
            [delay(1, bogus=1)],
            [],
            "not a list",
        ]
        for ops in bad:
            d = defer.Deferred.fromCoroutine(self.queue.submit(ops))
            f = self.failureResultOf(d, errors.OpPrereqError)
            self.assertEqual(f.value.args[1], "wrong_input", ops)
        self.assertEqual(self.queue.jobs, {})
        self.assertEqual(self.daemon.store.serial, 0)

    def test_submit_many_is_all_or_nothing(self):
        # As luxid: one invalid job refuses the whole request, and nothing is queued.
        d = defer.Deferred.fromCoroutine(self.queue.submit_many(
            [[delay(1)], [{"OP_ID": "OP_NOPE"}], [delay(1, depends=[[-1, ["success"]]])]]))
        err = self.failureResultOf(d, errors.OpPrereqError).value
        self.assertIn("Job 1: Opcode 0: Unknown opcode 'OP_NOPE'", err.args[0])
        self.assertEqual(self.queue.jobs, {})
        d = defer.Deferred.fromCoroutine(self.queue.submit_many(
            [[delay(1)], [delay(1, depends=[[-1, ["success"]]])]]))
        first, second = self.successResultOf(d)
        self.assertEqual([first[0], second[0]], [True, True])
        self.assertEqual(self.queue.visible[second[1]].ops[0].input["depends"],
                         [[first[1], ["success"]]])

    def test_drain(self):
        self.successResultOf(self.daemon.store.set_drain(True))
        for submit in (lambda: self.queue.submit([delay(1)]),
                       lambda: self.queue.submit_many([]),
                       lambda: self.queue.submit_many([[delay(1)]])):
            err = self.failureResultOf(defer.Deferred.fromCoroutine(submit()),
                                       errors.GenericError).value
            self.assertEqual((type(err), err.args), (errors.GenericError, ("Queue drained",)))
        jid = self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.submit([delay(1)], ignore_drain=True)))
        self.reactor.advance(1)
        self.assertEqual(self.status(jid), "success")

    def test_queue_size_limit(self):
        self.queue.size_limit = 2
        self.submit(delay())
        self.submit(delay())
        d = defer.Deferred.fromCoroutine(self.queue.submit([delay()]))
        self.failureResultOf(d, errors.JobQueueFull)


class SchedulingTest(QueueTestCase):
    max_running = 2

    def test_max_running_jobs(self):
        ids = [self.submit(delay(10)) for _ in range(5)]
        self.assertEqual([self.status(i) for i in ids],
                         ["running", "running", "queued", "queued", "queued"])
        self.reactor.advance(10)
        self.assertEqual([self.status(i) for i in ids],
                         ["success", "success", "running", "running", "queued"])

    def test_priority_order(self):
        blockers = [self.submit(delay(10)) for _ in range(2)]
        low = self.submit(delay(1, priority=10))
        normal = self.submit(delay(1))
        high = self.submit(delay(1, priority=-10))
        self.reactor.advance(10)
        self.assertEqual([self.status(j) for j in blockers], ["success", "success"])
        self.assertEqual([self.status(j) for j in (high, normal, low)],
                         ["running", "running", "queued"])

    def test_change_priority(self):
        [self.submit(delay(10)) for _ in range(2)]
        a = self.submit(delay(1))
        b = self.submit(delay(1))
        result = self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.change_priority(b, -10)))
        self.assertTrue(result[0])
        self.assertEqual(self.field(b, "oppriority"), [-10])
        self.reactor.advance(10)
        self.assertEqual((self.status(a), self.status(b)), ("running", "running"))
        bad = defer.Deferred.fromCoroutine(self.queue.change_priority(b, 3))
        self.failureResultOf(bad, errors.OpPrereqError)


class SecretParamsTest(QueueTestCase):
    """Ganeti 3.0 (QA TestSecretOsParams): a queued job's file holds private values as
    "<redacted>", in compact JSON as luxid writes it; once the job ran, null; the
    unit gets the values."""

    max_running = 1

    def job_file(self, jid):
        self.daemon.store.close()  # everything written out
        with open(os.path.join(self.paths.queue_dir, f"job-{jid}")) as f:
            return f.read()

    def test_redacted_while_queued_null_once_run(self):
        blocker = self.submit(delay(10))
        jid = self.submit({"OP_ID": "OP_TEST_OS_PARAMS",
                           "osparams_secret": {"param1": "secret1", "param2": "secret2"}})
        self.assertEqual(self.status(jid), "queued")
        ((op,),) = self.query_jobs([jid], ["ops"])[0]
        self.assertEqual(op["osparams_secret"], {"param1": "<redacted>",
                                                  "param2": "<redacted>"})
        self.reactor.advance(10)
        self.assertEqual([self.status(blocker), self.status(jid)], ["success", "success"])
        ((op,),) = self.query_jobs([jid], ["ops"])[0]
        self.assertEqual(op["osparams_secret"], {"param1": None, "param2": None})
        log = self.field(jid, "oplog")[0]
        self.assertIn("'param1': 'secret1'", log[0][3])
        text = self.job_file(jid)
        self.assertIn('"osparams_secret":{"param1":null,"param2":null}', text)
        # the unit's own log line shows them, as Ganeti's OP_TEST_OS_PARAMS does
        self.assertEqual(text.count("secret1"), 1)

    def test_the_queued_file_and_a_restart(self):
        self.submit(delay(10))
        jid = self.submit({"OP_ID": "OP_TEST_OS_PARAMS",
                           "osparams_secret": {"param1": "secret1"}})
        text = self.job_file(jid)
        self.assertIn('"osparams_secret":{"param1":"<redacted>"}', text)
        self.assertNotIn("secret1", text)
        self.daemon.running = False
        self.start()  # the values are gone with the old process: they read as null
        self.assertEqual(self.queue.visible[jid].ops[0].input["osparams_secret"],
                         {"param1": None})


class DependencyTest(QueueTestCase):
    def test_waits_for_dependency(self):
        first = self.submit(delay(10))
        second = self.submit(delay(depends=[[first, ["success"]]]))
        self.assertEqual(self.status(second), "queued")
        self.reactor.advance(10)
        self.reactor.advance(TICK)
        self.assertEqual(self.status(second), "success")

    def test_wrong_status_fails(self):
        first = self.submit(delay(1))
        second = self.submit(delay(depends=[[first, ["error"]]]))
        self.reactor.advance(1)
        self.assertEqual(self.status(second), "error")
        self.assertIn("not one of error", self.field(second, "opresult")[0][1][0])

    def test_canceled_dependency_cancels(self):
        first = self.submit(delay(10))
        second = self.submit(delay(depends=[[first, ["success"]]]))
        self.successResultOf(defer.Deferred.fromCoroutine(self.queue.cancel(first, True)))
        self.assertEqual(self.status(first), "canceled")
        self.assertEqual(self.status(second), "canceled")


class CancelTest(QueueTestCase):
    max_running = 1

    def cancel(self, jid, kill=False):
        return self.successResultOf(defer.Deferred.fromCoroutine(self.queue.cancel(jid, kill)))

    def test_cancel_queued(self):
        self.submit(delay(10))
        queued = self.submit(delay(1))
        self.assertEqual(self.cancel(queued), [True, f"Dequeued job {queued}"])
        self.assertEqual(self.status(queued), "canceled")
        # As luxid dequeues it: no result, no log, an end time but no start time.
        self.assertEqual(self.field(queued, "opresult"), [None])
        self.assertEqual(self.field(queued, "oplog"), [[]])
        self.assertIsNone(self.field(queued, "start_ts"))
        self.assertIsNotNone(self.field(queued, "end_ts"))
        self.assertIsNotNone(self.field(queued, "opend")[0])
        self.assertEqual(self.cancel(queued), [False, f"Job {queued} not found in queue"])
        self.assertEqual(self.cancel(999), [False, "Job 999 not found in queue"])

    def test_kill_running(self):
        jid = self.submit(delay(100))
        self.assertEqual(self.cancel(jid, kill=True), [True, "SIGKILL send to the process"])
        self.assertEqual(self.status(jid), "canceled")
        self.assertEqual(self.reactor.getDelayedCalls(), [])

    def test_cancel_running_stops_at_the_next_opcode(self):
        jid = self.submit(delay(5), delay(5))
        self.assertEqual(self.cancel(jid), [
            False, "Job no longer waiting, can't cancel (informed it anyway)"])
        self.assertEqual(self.status(jid), "running")
        self.reactor.advance(5)
        self.assertEqual(self.field(jid, "opstatus"), ["success", "canceled"])
        self.assertEqual(self.field(jid, "opresult")[1], "Job canceled by request")

    def test_interruptible_delay_stops_on_cancel(self):
        jid = self.submit(delay(100, interruptible=True))
        self.assertEqual(self.cancel(jid), [True, "Job successfully cancelled"])
        self.assertEqual(self.status(jid), "canceled")

    def test_cancel_while_waiting_for_locks(self):
        self.queue.limits = lambda: (5, 25)
        tagger = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "name": None,
                              "tags": ["a"]})
        self.assertEqual(self.status(tagger), "success")
        holder = self.submit(delay(10, no_locks=False))  # BGL shared
        waiter = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["b"]})
        self.assertEqual(self.status(waiter), "waiting")  # BGL exclusive, blocked
        self.assertEqual(self.cancel(waiter), [True, "Job successfully cancelled"])
        self.assertEqual(self.status(waiter), "canceled")
        self.assertEqual(self.field(waiter, "opresult"), ["Job canceled by request"])
        self.reactor.advance(10)
        self.assertEqual(self.status(holder), "success")
        self.assertEqual(self.daemon.config_writer.config.cluster.tags, ["a"])


class LocksAndUnitsTest(QueueTestCase):
    def test_shared_bgl_jobs_run_together_exclusive_waits(self):
        # (on_master=False: no node lock, only the BGL, shared)
        a = self.submit(delay(10, no_locks=False, on_master=False))
        b = self.submit(delay(10, no_locks=False, on_master=False))
        tag = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["x"]})
        self.assertEqual([self.status(j) for j in (a, b, tag)],
                         ["running", "running", "waiting"])
        rows = self.query("lock", ["name", "mode", "owner", "pending"], None)["data"]
        bgl = next(r for r in rows if r[0][1] == "cluster/BGL")
        self.assertEqual(bgl[1][1], "shared")
        self.assertEqual(sorted(bgl[2][1]), [str(a), str(b)])
        self.assertEqual(bgl[3][1], [["exclusive", [str(tag)]]])
        self.reactor.advance(10)
        self.assertEqual(self.status(tag), "success")
        self.assertEqual(self.daemon.config_writer.config.cluster.tags, ["x"])

    def test_tags_units(self):
        self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["env:prod", "b"]})
        get = self.submit({"OP_ID": "OP_TAGS_GET", "kind": "cluster"})
        self.assertEqual(self.field(get, "opresult"), [["b", "env:prod"]])
        search = self.submit({"OP_ID": "OP_TAGS_SEARCH", "pattern": "^env"})
        self.assertEqual(self.field(search, "opresult"), [[["/cluster", "env:prod"]]])
        bad = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["bad tag!"]})
        self.assertEqual(self.status(bad), "error")
        self.assertEqual(self.field(bad, "opresult")[0][0], "TagError")
        gone = self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster", "tags": ["nope"]})
        self.assertEqual(self.status(gone), "error")
        self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster", "tags": ["b"]})
        self.assertEqual(self.daemon.config_writer.config.cluster.tags, ["env:prod"])

    def test_tags_dry_run_checks_and_changes_nothing(self):
        serial = self.daemon.config_writer.config.serial_no
        ok = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["a"],
                          "dry_run": True})
        self.assertEqual(self.status(ok), "success")
        missing = self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster", "tags": ["a"],
                               "dry_run": True})
        self.assertEqual(self.status(missing), "error")
        self.assertEqual(self.daemon.config_writer.config.cluster.tags, [])
        self.assertEqual(self.daemon.config_writer.config.serial_no, serial)

    def test_cluster_query_and_query_units(self):
        info = self.submit({"OP_ID": "OP_CLUSTER_QUERY"})
        self.assertEqual(self.field(info, "opresult")[0]["name"], "cluster.test")
        q = self.submit({"OP_ID": "OP_QUERY", "what": "job", "fields": ["id", "status"],
                         "qfilter": ["=", "id", 1]})
        self.assertEqual(self.field(q, "opresult")[0]["data"], [[[0, 1], [0, "success"]]])

    def test_log_messages_have_serials(self):
        jid = self.submit(delay(1, repeat=3))
        self.reactor.pump([1, 1, 1])
        log = self.field(jid, "oplog")[0]
        self.assertEqual([entry[0] for entry in log], [1, 2, 3])
        self.assertEqual(log[2][3], " - INFO: Test delay iteration 2/2")
        logs = [e.data["log"] for e in self.events if e.kind == "job" and e.data["log"]]
        self.assertEqual([entry[0] for batch in logs for entry in batch], [1, 2, 3])


class WaitForJobChangeTest(QueueTestCase):
    def wfjc(self, jid, fields, prev, serial, timeout):
        return defer.Deferred.fromCoroutine(
            self.methods.wait_for_job_change(jid, fields, prev, serial, timeout))

    def test_changed_returns_at_once(self):
        jid = self.submit(delay(10))
        result = self.successResultOf(self.wfjc(jid, ["status"], None, None, 10))
        self.assertEqual(result, [["running"], []])

    def test_waits_for_the_change(self):
        jid = self.submit(delay(10))
        d = self.wfjc(jid, ["status"], ["running"], None, 60)
        self.assertNoResult(d)
        self.reactor.advance(10)
        self.assertEqual(self.successResultOf(d), [["success"], []])

    def test_timeout_gives_the_unchanged_answer(self):
        jid = self.submit(delay(100))
        d = self.wfjc(jid, ["status"], ["running"], None, 5)
        self.reactor.advance(5)
        self.assertEqual(self.successResultOf(d), [["running"], []])

    def test_unknown_job(self):
        self.failureResultOf(self.wfjc(99, ["status"], None, None, 1), errors.JobLost)


class ArchiveTest(QueueTestCase):
    def test_archive_finished_only(self):
        done = self.finished(delay())
        running = self.submit(delay(10))
        self.assertTrue(self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.archive(done))))
        self.assertFalse(self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.archive(running))))
        self.assertNotIn(done, self.queue.visible)
        self.assertTrue(os.path.exists(os.path.join(self.paths.queue_archive_dir, "0",
                                                    f"job-{done}")))
        # still queryable by id, from the archive (as luxid)
        self.assertEqual(self.query_jobs([done], ["id", "status"]), [[done, "success"]])
        self.assertEqual(self.query_jobs([999], ["id", "status"]), [[999, None]])  # as luxid

    def test_auto_archive(self):
        old = self.finished(delay())
        self.reactor.advance(3600)
        new = self.finished(delay())
        result = self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.auto_archive(600, 10)))
        self.assertEqual(result, [1, 0])
        self.assertNotIn(old, self.queue.visible)
        self.assertIn(new, self.queue.visible)
        self.successResultOf(defer.Deferred.fromCoroutine(self.queue.auto_archive(-1, 10)))
        self.assertEqual(self.queue.visible, {})


class RestartTest(QueueTestCase):
    def test_running_jobs_fail_queued_jobs_run(self):
        self.queue.limits = lambda: (1, 25)
        running = self.submit(delay(100))
        queued = self.submit(delay())
        self.crash_and_restart()
        self.assertEqual(self.status(running), "error")
        self.assertIn("master daemon stopped", self.field(running, "opresult")[0][1][0])
        self.reactor.advance(TICK)
        self.assertEqual(self.status(queued), "success")
        self.assertEqual(self.submit(delay()), 3)  # ids keep growing

    def test_restart_after_clean_stop_keeps_finished_jobs(self):
        jid = self.finished(delay())
        self.daemon.stopService()
        self.start()
        self.assertEqual(self.status(jid), "success")

    def test_store_is_recovered_before_luxi_listens(self):
        # the LUXI socket and WConfD's (masterd holds that daemon's role)
        self.assertEqual(sorted(os.path.basename(s[0]) for s in self.reactor.unixServers),
                         ["ganeti-query", "ganeti-wconfd"])
        self.assertIsInstance(self.daemon.store, JobStore)


class CorruptJobTest(QueueTestCase):
    def test_job_file_failing_the_model_check_is_moved_aside(self):
        jid = self.finished(delay())
        self.daemon.stopService()
        path = os.path.join(self.paths.queue_dir, f"job-{jid}")
        with open(path) as f:
            data = f.read()
        with open(path, "w") as f:  # an opcode status no Ganeti knows
            f.write(data.replace('"status":"success"', '"status":"sleeping"'))
        for name in os.listdir(self.paths.queue_dir):  # as after a checkpoint
            if name.startswith("journal."):
                os.unlink(os.path.join(self.paths.queue_dir, name))
        self.start()
        self.assertNotIn(jid, self.queue.visible)
        moved = os.path.join(self.paths.queue_dir, "corrupt", f"job-{jid}")
        self.assertTrue(os.path.exists(moved))
        self.assertEqual(self.submit(delay()), jid + 1)  # the id is not reused


class QueryTest(QueueTestCase):
    def test_requested_missing_job_is_listed_unavailable(self):
        jid = self.finished(delay())
        result = self.query("job", ["id", "status"],
                                    ["|", ["=", "id", jid], ["=", "id", 99]])
        self.assertEqual(result["data"], [[[0, jid], [0, "success"]], [[0, 99], [3, None]]])
        everything = self.query("job", ["id"], None)
        self.assertEqual(everything["data"], [[[0, jid]]])
