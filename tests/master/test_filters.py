"""Job filter rules in a whole masterd on a fake clock: LUXI methods and queue semantics."""

from twisted.internet import defer
from twisted.python.failure import Failure

from ganeti.core import errors
from ganeti.luxi import wire
from tests.master.test_jobqueue import TICK, QueueTestCase, delay

DRAIN = [["jobid", [">", "id", "watermark"]]]


def tagged(duration, reason):
    """A delay opcode with a user reason trail entry."""
    return delay(duration, reason=[["gnt:user", reason, 1]])


class FilterCase(QueueTestCase):
    max_running = 20

    def add(self, action, predicates=(), priority=0, reason=(), uuid=None):
        d = defer.Deferred.fromCoroutine(self.daemon.filters.replace_filter(
            uuid, priority, list(predicates), action, list(reason)))
        return self.successResultOf(d)

    def delete(self, uuid):
        self.successResultOf(defer.Deferred.fromCoroutine(
            self.daemon.filters.delete_filter(uuid)))

    def luxi(self, method, *args):
        """Through the dispatcher and the wire encoding, as a client sees it."""
        outcome = []
        self.daemon.luxi.factory.dispatcher.dispatch(method, list(args)).addBoth(
            outcome.append)
        self.assertEqual(len(outcome), 1)
        if isinstance(outcome[0], Failure):
            frame = wire.encode_error(outcome[0].value)
        else:
            frame = wire.encode_response(True, outcome[0])
        return wire.parse_response(frame[:-1])  # raises the decoded error

    def reject(self, *ops):
        """Submit a job a REJECT rule applies to: as luxid, it gets an id and is
        stored cancelled (no result, no log, no start); its id."""
        job_id = self.successResultOf(defer.Deferred.fromCoroutine(self.queue.submit(list(ops))))
        self.assert_rejected(job_id)
        return job_id

    def assert_rejected(self, job_id):
        self.assertEqual(self.status(job_id), "canceled")
        self.assertEqual(self.field(job_id, "opstatus"), ["canceled"] * len(
            self.field(job_id, "ops")))
        self.assertEqual(set(map(repr, self.field(job_id, "opresult"))), {"None"})
        self.assertEqual(self.field(job_id, "oplog"), [[]] * len(self.field(job_id, "ops")))
        self.assertIsNone(self.field(job_id, "start_ts"))
        self.assertIsNotNone(self.field(job_id, "end_ts"))

    def running_now(self):
        return sorted(j for j, job in self.queue.visible.items()
                      if job.status in ("running", "waiting")
                      and j not in self.queue.scheduler.paused)

    def track_concurrency(self, group):
        """The largest number of jobs in ``group`` running at once, from the events."""
        state = {"max": 0, "running": set()}

        def on_event(event):
            if event.kind != "job" or event.data["id"] not in group:
                return
            if event.data["status"] in ("running", "waiting"):
                state["running"].add(event.data["id"])
            else:
                state["running"].discard(event.data["id"])
            state["max"] = max(state["max"], len(state["running"]))
        self.daemon.events.subscribe(on_event)
        return state


class LuxiMethodsTest(FilterCase):
    def test_add_query_replace_delete(self):
        self.submit(delay())
        self.submit(delay())
        uuid = self.luxi("ReplaceFilter", None, 3, DRAIN, "REJECT", [["gnt:user", "x", 5]])
        self.assertEqual(len(uuid), 36)
        (row,) = self.luxi("QueryFilters", None, ["uuid", "watermark", "priority",
                                                  "predicates", "action", "reason_trail"])
        self.assertEqual(row[:5], [uuid, 2, 3, DRAIN, "REJECT"])
        self.assertEqual(row[5][0], ["gnt:user", "x", 5])
        self.assertEqual(row[5][1][:2], ["luxid", ""])
        self.assertEqual(row[5][1][2], 1800000000 * 10**9)
        # Replacing keeps the uuid and takes a new watermark.
        self.luxi("ReplaceFilter", uuid, 1, [], ["RATE_LIMIT", 4], [])
        self.assertEqual(self.luxi("QueryFilters", [uuid], ["priority", "action"]),
                         [[1, ["RATE_LIMIT", 4]]])
        # Query("filter") and QueryFields("filter").
        result = self.luxi("Query", "filter", ["uuid", "action"], ["==", "priority", 1])
        self.assertEqual(result["data"], [[[0, uuid], [0, ["RATE_LIMIT", 4]]]])
        names = [f["name"] for f in self.luxi("QueryFields", "filter", None)["fields"]]
        self.assertEqual(sorted(names), ["action", "predicates", "priority",
                                         "reason_trail", "uuid", "watermark"])
        self.assertIsNone(self.luxi("DeleteFilter", uuid))
        self.assertEqual(self.luxi("QueryFilters", None, ["uuid"]), [])
        # As Ganeti's luxid: deleting an unknown rule is a GenericError, and
        # QueryFilters leaves unknown uuids out.
        err = self.assertRaises(errors.GenericError, self.luxi, "DeleteFilter", uuid)
        self.assertEqual(err.args[0], f"Filter rule with UUID {uuid} does not exist")
        self.assertEqual(self.luxi("QueryFilters", [uuid], ["uuid"]), [])

    def test_upsert_with_a_given_uuid(self):
        given = "6A3F7B0E-9B1C-4C6E-8A52-0B0D5B7E2F11".lower()
        self.assertEqual(self.luxi("ReplaceFilter", given, 0, [], "ACCEPT", []), given)
        self.assertEqual(self.luxi("QueryFilters", None, ["uuid"]), [[given]])

    def test_bad_rules_change_nothing(self):
        self.add("ACCEPT")
        serial = self.daemon.config_writer.config.serial_no
        before = dict(self.daemon.config_writer.config.filters)
        bad = [
            (None, 0, [], "DROP", []),  # unknown action
            (None, 0, [], "accept", []),  # actions are case-sensitive
            (None, 0, [], ["RATE_LIMIT", 0], []),
            (None, 0, [], ["RATE_LIMIT", -2], []),
            (None, 0, [], ["RATE_LIMIT", "3"], []),
            (None, -1, [], "ACCEPT", []),  # negative priority
            (None, 1.5, [], "ACCEPT", []),
            (None, 0, [["jobid"]], "ACCEPT", []),  # malformed predicate
            (None, 0, [["colour", None]], "ACCEPT", []),  # unknown predicate
            (None, 0, [["opcode", ["~~", "OP_ID", "x"]]], "ACCEPT", []),  # bad operator
            (None, 0, [["reason", ["=~", "reason", "("]]], "ACCEPT", []),  # bad regexp
            (None, 0, "jobid", "ACCEPT", []),
            (None, 0, [], "ACCEPT", [["gnt:user", "x"]]),  # bad reason trail
            ("not-a-uuid", 0, [], "ACCEPT", []),  # invalid uuid
        ]
        for args in bad:
            err = self.assertRaises(errors.OpPrereqError, self.luxi, "ReplaceFilter", *args)
            self.assertEqual(err.args[1], "wrong_input", args)
        err = self.assertRaises(errors.OpPrereqError, self.luxi, "ReplaceFilter",
                                "not-a-uuid", 0, [], "ACCEPT", [])
        self.assertIn("Unable to parse UUID", err.args[0])
        self.assertEqual(self.daemon.config_writer.config.serial_no, serial)
        self.assertEqual(self.daemon.config_writer.config.filters, before)

    def test_rules_survive_a_restart(self):
        uuid = self.add("PAUSE", DRAIN)
        job = self.submit(delay())
        self.crash_and_restart()
        self.assertEqual(self.status(job), "queued")
        self.assertIn(uuid, self.field(job, "wait_reason"))
        self.delete(uuid)
        self.reactor.advance(TICK)
        self.assertEqual(self.status(job), "success")


class SeedExamplesTest(FilterCase):
    def test_draining_rejects_new_jobs_only(self):
        self.submit(delay(10))
        queued = [self.submit(delay(1)) for _ in range(2)]
        uuid = self.add("REJECT", DRAIN)
        self.reject(delay(1))
        many = self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.submit_many([[delay(1)], [delay(1)]])))
        self.assertEqual([ok for ok, _ in many], [True, True])
        for _, job_id in many:
            self.assert_rejected(job_id)
        self.reactor.advance(10)
        self.assertEqual([self.status(j) for j in queued], ["success", "success"])
        self.delete(uuid)
        self.assertEqual(self.status(self.finished(delay())), "success")

    def test_soft_drain_pauses_new_jobs(self):
        old = self.submit(delay(5))
        uuid = self.add("PAUSE", DRAIN)
        new = [self.submit(delay(1)) for _ in range(3)]
        self.reactor.advance(10)
        self.assertEqual(self.status(old), "success")
        self.assertEqual([self.status(j) for j in new], ["queued"] * 3)
        self.assertIn(f"paused by filter rule {uuid}", self.field(new[0], "wait_reason"))
        self.delete(uuid)
        self.reactor.advance(1)
        self.assertEqual([self.status(j) for j in new], ["success"] * 3)
        self.assertEqual(self.field(new[0], "wait_reason"), "")

    def test_maintenance_exception(self):
        self.add("ACCEPT", [["reason", ["=~", "reason", "maintenance pink bunny"]]], 0)
        pause = self.add("PAUSE", DRAIN, 1)
        ours = self.submit(tagged(1, "maintenance pink bunny, step 2"))
        other = self.submit(tagged(1, "routine"))
        plain = self.submit(delay(1))
        self.reactor.advance(2)
        self.assertEqual(self.status(ours), "success")
        self.assertEqual((self.status(other), self.status(plain)), ("queued", "queued"))
        self.delete(pause)
        self.reactor.advance(1)
        self.assertEqual((self.status(other), self.status(plain)), ("success", "success"))


    def test_rate_limit(self):
        uuid = self.add(["RATE_LIMIT", 2], [["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]], 99)
        first = self.daemon.store.serial + 1
        jobs = list(range(first, first + 6))
        state = self.track_concurrency(set(jobs))
        for _ in jobs:
            self.submit(delay(10))
        self.assertEqual(len(self.running_now()), 2)
        waiting = [j for j in jobs if self.status(j) == "queued"]
        self.assertEqual(len(waiting), 4)
        self.assertIn(f"rate-limited by filter rule {uuid}", self.field(waiting[0],
                                                                         "wait_reason"))
        for _ in range(4):
            self.reactor.advance(10)
        self.assertEqual([self.status(j) for j in jobs], ["success"] * 6)
        self.assertEqual(state["max"], 2)

    def test_rate_limit_buckets(self):
        first = self.daemon.store.serial + 1
        a = [self.submit(tagged(10, "rate-limit:2:evacuate node1")) for _ in range(5)]
        b = [self.submit(tagged(10, "rate-limit:1:other")) for _ in range(3)]
        self.assertEqual(a[0], first)
        state_a = self.track_concurrency(set(a))
        state_b = self.track_concurrency(set(b))
        self.assertEqual(len(self.running_now()), 3)
        self.assertIn("rate-limited by bucket '2:evacuate node1'",
                      self.field(a[4], "wait_reason"))
        for _ in range(4):
            self.reactor.advance(10)
        self.assertEqual([self.status(j) for j in a + b], ["success"] * 8)
        self.assertEqual((state_a["max"], state_b["max"]), (2, 1))

    def test_rule_and_bucket_together(self):
        self.add(["RATE_LIMIT", 3], [], 5)
        ids = [self.submit(tagged(10, "rate-limit:1:x")) for _ in range(2)]
        ids += [self.submit(delay(10)) for _ in range(4)]
        state = self.track_concurrency(set(ids))
        self.assertEqual(len(self.running_now()), 3)  # one of the bucket, two others
        self.assertEqual(self.status(ids[1]), "queued")
        for _ in range(4):
            self.reactor.advance(10)
        self.assertEqual({self.status(j) for j in ids}, {"success"})
        self.assertEqual(state["max"], 3)


class PauseRunningJobTest(FilterCase):
    def test_running_job_stops_between_opcodes(self):
        job = self.submit(delay(5), delay(5), delay(5))
        other = self.submit(delay(30))
        uuid = self.add("PAUSE", [["jobid", ["==", "id", job]]])
        self.assertEqual(self.field(job, "opstatus")[0], "running")  # goes on
        self.reactor.advance(5)
        self.assertEqual(self.field(job, "opstatus"), ["success", "queued", "queued"])
        self.assertIn(job, self.queue.scheduler.paused)
        reason = self.field(job, "wait_reason")
        self.assertIn(f"paused by filter rule {uuid}", reason)
        self.assertIn("before its next opcode", reason)
        owners = {owner for _, _, holders, _ in self.daemon.locks.lock_info()
                  for owner in holders}
        self.assertNotIn(f"job/{job}", owners)  # holds no locks while paused
        self.reactor.advance(20)
        self.assertEqual(self.field(job, "opstatus"), ["success", "queued", "queued"])
        self.delete(uuid)
        self.assertEqual(self.field(job, "opstatus"), ["success", "running", "queued"])
        self.reactor.advance(5)
        self.reactor.advance(5)
        self.assertEqual(self.status(job), "success")
        self.assertEqual(self.status(other), "success")

    def test_cancel_while_paused(self):
        job = self.submit(delay(1), delay(1))
        self.add("PAUSE", [["jobid", ["==", "id", job]]])
        self.reactor.advance(1)
        result = self.successResultOf(defer.Deferred.fromCoroutine(
            self.queue.cancel(job, False)))
        self.assertTrue(result[0])
        self.assertEqual(self.field(job, "opstatus"), ["success", "canceled"])
        self.assertNotIn(job, self.queue.scheduler.paused)


class VisibilityTest(FilterCase):
    def test_wait_reason_in_events(self):
        uuid = self.add("PAUSE", DRAIN)
        job = self.submit(delay())
        reasons = [e.data.get("wait_reason") for e in self.events
                   if e.kind == "job" and e.data["id"] == job]
        self.assertTrue(any(r and uuid in r for r in reasons), reasons)
        self.delete(uuid)
        self.reactor.advance(TICK)
        last = [e.data for e in self.events if e.kind == "job" and e.data["id"] == job][-1]
        self.assertEqual((last["status"], last["wait_reason"]), ("success", None))

    def test_dependency_reason(self):
        first = self.submit(delay(10))
        second = self.submit(delay(depends=[[first, []]]))
        self.assertEqual(self.field(second, "wait_reason"),
                         f"waiting for job {first} to finish")


class ReevaluationTest(FilterCase):
    def test_only_affected_jobs_are_evaluated(self):
        self.add("PAUSE", DRAIN, 5)
        for _ in range(50):
            self.submit(delay())
        sched = self.queue.scheduler
        # A rule after the one that applies to every job: nothing to evaluate.
        before = self.add("ACCEPT", [], 9)
        self.assertEqual(self.daemon.filters.last_evaluated, 0)
        # A rule before it: each job is tested against that one rule only.
        self.add("CONTINUE", [], 1)
        self.assertEqual(self.daemon.filters.last_evaluated, 0)  # CONTINUE never applies
        self.add("ACCEPT", [["jobid", ["<", "id", 10]]], 1)
        self.assertEqual(self.daemon.filters.last_evaluated, 50)
        self.reactor.advance(0)
        self.reactor.advance(TICK)
        self.assertEqual(sum(1 for j in self.queue.visible.values()
                             if j.status == "success"), 9)
        self.delete(before)
        self.assertEqual(self.daemon.filters.last_evaluated, 0)
        self.assertEqual(len(sched.counts()["parked"]), 1)

    def test_other_config_changes_do_not_reevaluate(self):
        self.add("PAUSE", DRAIN)
        calls = []
        original = self.queue.set_rules
        self.queue.set_rules = lambda rules: calls.append(1) or original(rules)
        self.successResultOf(self.daemon.config_writer.update(
            lambda cfg: setattr(cfg.cluster, "tags", ["x"])))
        self.assertEqual(calls, [])


class PausedSlotTest(FilterCase):
    max_running = 1

    def test_paused_job_frees_its_slot(self):
        job = self.submit(delay(1), delay(1))
        waiting = self.submit(delay(1))
        self.add("PAUSE", [["jobid", ["==", "id", job]]])
        self.reactor.advance(1)
        self.assertIn(job, self.queue.scheduler.paused)
        self.reactor.advance(1)
        self.assertEqual(self.status(waiting), "success")


class OneAtATimeTest(FilterCase):
    max_running = 1

    def test_reject_by_opcode_cancels_queued_jobs(self):
        blocker = self.submit(delay(10))
        queued_delay = [self.submit(delay(1)) for _ in range(2)]
        queued_tags = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "name": None,
                                   "tags": ["a"]})
        uuid = self.add("REJECT", [["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]], 1)
        self.assertEqual([self.status(j) for j in queued_delay], ["canceled", "canceled"])
        for job_id in queued_delay:
            self.assert_rejected(job_id)
        self.assertIn(uuid, self.luxi("QueryFilters", [uuid], ["uuid"])[0])
        self.assertEqual(self.status(blocker), "running")  # running jobs go on
        self.assertEqual(self.status(queued_tags), "queued")
        self.reject(delay(1))
        self.reactor.advance(10)
        self.assertEqual((self.status(blocker), self.status(queued_tags)),
                         ("success", "success"))


class SlicedEvaluationTest(FilterCase):
    def test_many_jobs_are_evaluated_over_several_reactor_turns(self):
        from ganeti.master.jobs import jobqueue
        self.patch(jobqueue, "EVALUATION_SLICE", 10)
        hold = self.add("PAUSE", DRAIN)
        self.add("ACCEPT", [["opcode", ["==", "duration", 99]]], 5)
        ids = [self.submit(delay()) for _ in range(30)]
        slices = []
        original = self.queue._evaluate_slice
        self.queue._evaluate_slice = lambda: slices.append(1) or original()
        d = defer.Deferred.fromCoroutine(self.daemon.filters.delete_filter(hold))
        self.assertNoResult(d)  # the call returns once every job is evaluated
        # 30 jobs x 1 rule left > 10 tests per turn: evaluated later, held meanwhile.
        self.assertEqual(self.queue.scheduler.pending, 30)
        self.assertEqual({self.status(j) for j in ids}, {"queued"})
        self.reactor.advance(0)  # (each slice is a separate turn of a real reactor)
        self.successResultOf(d)
        self.assertEqual(len(slices), 3)
        self.reactor.pump([TICK, TICK])  # (20 run at a time)
        self.assertEqual({self.status(j) for j in ids}, {"success"})


class FoundInIntegrationTest(FilterCase):
    def test_replacing_a_pause_rule_in_place_releases_a_held_job(self):
        job = self.submit(delay(1), delay(1))
        uuid = self.add("PAUSE", [["jobid", ["==", "id", job]]], reason=[["u", "first", 1]])
        self.reactor.advance(1)
        self.assertIn("'first'", self.field(job, "wait_reason"))
        self.add("PAUSE", [["jobid", ["==", "id", job]]], reason=[["u", "second", 1]],
                 uuid=uuid)
        self.assertIn("'second'", self.field(job, "wait_reason"))  # reason refreshed
        self.add("ACCEPT", [["jobid", ["==", "id", job]]], uuid=uuid)
        self.assertEqual(self.field(job, "opstatus"), ["success", "running"])
        self.reactor.advance(1)
        self.assertEqual(self.status(job), "success")

    def test_replacing_in_place_reaches_queued_jobs(self):
        everything = [["jobid", [">", "id", 0]]]  # (replacing sets a new watermark)
        uuid = self.add("PAUSE", everything)
        paused = self.submit(delay())
        self.add("REJECT", everything, uuid=uuid)
        self.assertEqual(self.status(paused), "canceled")

    def test_a_dependency_on_a_rejected_job_does_not_run(self):
        self.add("REJECT", [["opcode", ["==", "comment", "no"]]])
        result = self.successResultOf(defer.Deferred.fromCoroutine(self.queue.submit_many([
            [delay(1, comment="no")],
            [delay(1, depends=[[-1, ["success"]]])],
            [delay(1)]])))
        self.assertEqual([ok for ok, _ in result], [True, True, True])
        rejected, dependent, free = (job_id for _, job_id in result)
        self.assert_rejected(rejected)
        # The dependency ended canceled: the dependent is cancelled too, as luxid does.
        self.reactor.advance(1)
        self.assertEqual(self.status(dependent), "canceled")
        self.assertEqual(self.field(dependent, "opresult"), ["Job canceled by request"])
        self.assertEqual(self.status(free), "success")
        later = self.submit(delay(1, depends=[[rejected, ["success"]]]))
        self.assertEqual(self.status(later), "canceled")


class PauseLockWaitTest(FilterCase):
    def test_a_job_waiting_for_locks_lets_go_when_paused(self):
        holder = self.submit(delay(10, no_locks=False))  # BGL shared for 10 s
        tags = self.submit({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "name": None,
                            "tags": ["a"]})  # wants BGL exclusive: waits
        self.reactor.advance(0.5)

        def pending_owners():
            return {owner for _, _, _, pending in self.daemon.locks.lock_info()
                    for _, owners in pending for owner in owners}
        self.assertIn(f"job/{tags}", pending_owners())
        self.assertEqual(self.field(tags, "opstatus"), ["waiting"])
        uuid = self.add("PAUSE", [["opcode", ["=", "OP_ID", "OP_TAGS_SET"]]])
        # It stops waiting at once: no longer pending, its opcode queued again.
        self.assertNotIn(f"job/{tags}", pending_owners())
        self.assertEqual(self.field(tags, "opstatus"), ["queued"])
        self.assertIsNone(self.field(tags, "opstart")[0])
        self.assertIn(f"paused by filter rule {uuid}", self.field(tags, "wait_reason"))
        self.assertNotIn(tags, [j for j in self.running_now()])
        self.delete(uuid)
        self.assertIn(f"job/{tags}", pending_owners())  # waits for its locks again
        for _ in range(20):
            self.reactor.advance(1)
        self.assertEqual((self.status(holder), self.status(tags)), ("success", "success"))
        self.assertEqual(self.daemon.config_writer.config.cluster.tags, ["a"])
