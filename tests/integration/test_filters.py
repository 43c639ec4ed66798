"""Seed 000's job filter rules, example by example, on a real ganeti-masterd.

One one-node virtual cluster for the module; LUXI over the master's UNIX
socket; ``OP_TEST_DELAY`` jobs of a fraction of a second stand in for the
opcodes of the design's examples.  Nothing sleeps: a job is followed with
WaitForJobChange (bounded), "still waiting after a while" is a
WaitForJobChange that must time out without a change, and concurrency is
observed on the ``SubscribeEvents`` stream, where a job's end is published
before the job that takes its place starts.

Every test removes its rules, cancels what it left unfinished and checks that
the master logged no traceback meanwhile (a failing config listener, for
example, is invisible to clients but leaves the scheduler wrong).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections import deque

from ganeti.luxi import wire
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.jobtools import (
    FINAL,
    delay,
    wait_for_job,
    wait_for_jobs,
)

DRAIN = [["jobid", [">", "id", "watermark"]]]
RULE_FIELDS = ["uuid", "watermark", "priority", "predicates", "action", "reason_trail"]
RUNNING = frozenset({"waiting", "running", "canceling"})
OUR_GNT_JOB = os.path.join(ROOT, "bin", "gnt-job")
DEBIAN_GNT_JOB = "/usr/share/ganeti/3.0/gnt-job"
BUNNY = "maintenance pink bunny"


def user_reason(text):
    """A reason trail with one user entry, as ``--reason`` gives it."""
    return [["gnt:user", text, time.time_ns()]]


def tags_set(*tags):
    """OP_TAGS_SET on the cluster."""
    return {"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": list(tags)}


def max_overlap(spans):
    """The largest number of [start, end] spans open at once (touching spans do not
    overlap: one job's end is recorded before the next one's start)."""
    points = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans],
                    key=lambda p: (p[0], p[1]))
    best = now = 0
    for _, step in points:
        now += step
        best = max(best, now)
    return best


def ts(value):
    """[seconds, microseconds] -> float seconds."""
    return value[0] + value[1] / 1e6


class EventStream:
    """A blocking ``SubscribeEvents`` reader: subscribe first, then submit, then read."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.splitter = wire.FrameSplitter(max_size=64 * 1024 * 1024)
        self.frames = deque()
        self.sock.sendall(wire.encode_request("SubscribeEvents", [None]))
        reply = self.next(timeout)
        if not reply.get("success"):
            raise AssertionError(f"SubscribeEvents refused: {reply}")

    def close(self):
        self.sock.close()

    def next(self, timeout):
        """The next frame (a dict); AssertionError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no event within {timeout}s")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                raise AssertionError(f"no event within {timeout}s") from None
            if not data:
                raise AssertionError("the master closed the event stream")
            self.frames.extend(self.splitter.feed(data))
        frame = json.loads(self.frames.popleft())
        if frame.get("kind") == "resync":
            raise AssertionError(f"the event stream lost events: {frame}")
        return frame

    def follow(self, job_ids, group_of=lambda jid: "all", timeout=30.0):
        """Read job events until every job in ``job_ids`` has finished.

        Returns ``(peaks, reasons, final)``: the largest number of jobs of each
        group (``group_of(job id)``) waiting, running or canceling at once, every
        wait reason seen per job, and each job's final status.
        """
        pending = set(job_ids)
        state = {}
        peaks = {}
        reasons = {jid: [] for jid in job_ids}
        final = {}
        deadline = time.monotonic() + timeout
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"jobs {sorted(pending)} did not finish within {timeout}s")
            event = self.next(remaining)
            if event.get("kind") != "job" or event["id"] not in reasons:
                continue
            jid = event["id"]
            state[jid] = event["status"]
            if event.get("wait_reason"):
                reasons[jid].append(event["wait_reason"])
            if event["status"] in FINAL:
                final[jid] = event["status"]
                pending.discard(jid)
            group = group_of(jid)
            now = sum(1 for j, s in state.items() if s in RUNNING and group_of(j) == group)
            peaks[group] = max(peaks.get(group, 0), now)
        return peaks, reasons, final


class FilterRulesTest(ClusterCase):
    """The design's examples, against ganeti-masterd on a one-node virtual cluster."""

    PREFIX = "ganeti-filter-rules-"

    def setUp(self):
        assert self.cluster is not None
        self.c = self.cluster.client()
        self.addCleanup(self.c.close)
        self.log_offset = self._log_size()
        self.addCleanup(self.check_master_log)
        self.addCleanup(self.finish_all_jobs)
        self.addCleanup(self.remove_all_rules)

    # --- housekeeping ----------------------------------------------------------------

    def _log_size(self):
        try:
            return os.path.getsize(self.cluster.log_file)
        except OSError:
            return 0

    def check_master_log(self):
        """The master logged no traceback while the test ran."""
        with open(self.cluster.log_file, encoding="utf-8", errors="replace") as f:
            f.seek(self.log_offset)
            text = f.read()
        self.assertNotIn("Traceback", text, f"the master logged a failure:\n{text[-4000:]}")

    def remove_all_rules(self):
        for (uuid,) in self.c.call("QueryFilters", None, ["uuid"]):
            self.c.call("DeleteFilter", uuid)
        self.assertEqual(self.c.call("QueryFilters", None, ["uuid"]), [])

    def finish_all_jobs(self):
        """Cancel whatever a (failed) test left unfinished; wait until it has ended."""
        left = [jid for jid, status in self.c.call("QueryJobs", None, ["id", "status"])
                if status not in FINAL]
        for jid in left:
            self.c.call("CancelJob", jid, True)
        wait_for_jobs(self.c, left, timeout=30)

    # --- helpers -----------------------------------------------------------------------

    def add_rule(self, action, predicates, priority=0, reason="filter test"):
        uuid = self.c.call("ReplaceFilter", None, priority, predicates, action,
                           user_reason(reason))
        self.assertIsInstance(uuid, str)
        return uuid

    def rule(self, uuid):
        (row,) = self.c.call("QueryFilters", [uuid], RULE_FIELDS)
        return dict(zip(RULE_FIELDS, row, strict=True))

    def submit(self, *ops):
        jid = self.c.call("SubmitJob", list(ops))
        self.assertIsInstance(jid, int)
        return jid

    def submit_many(self, *jobs):
        answer = self.c.call("SubmitManyJobs", [list(ops) for ops in jobs])
        self.assertEqual([ok for ok, _ in answer], [True] * len(jobs), answer)
        return [jid for _, jid in answer]

    def rows(self, ids, fields):
        return [dict(zip(fields, row, strict=True))
                for row in self.c.call("QueryJobs", list(ids), list(fields))]

    def row(self, jid, fields):
        (row,) = self.rows([jid], fields)
        return row

    def wait_until(self, jid, fields, check, timeout=15.0):
        """WaitForJobChange on ``fields`` until ``check(dict of values)``; the values."""
        deadline = time.monotonic() + timeout
        prev, serial = None, None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"job {jid}: {fields} never satisfied the check "
                                     f"within {timeout}s (last: {prev})")
            info, logs = self.c.call("WaitForJobChange", jid, list(fields), prev, serial,
                                     min(remaining, 10.0))
            if logs:
                serial = logs[-1][0]
            prev = info
            values = dict(zip(fields, info, strict=True))
            if check(values):
                return values

    def assert_unchanged(self, jid, fields, seconds):
        """For ``seconds``, nothing in ``fields`` of the job changes (bounded waits)."""
        before = self.row(jid, fields)
        expected = [before[f] for f in fields]
        deadline = time.monotonic() + seconds
        serial = None
        while (remaining := deadline - time.monotonic()) > 0:
            info, logs = self.c.call("WaitForJobChange", jid, list(fields), expected, serial,
                                     remaining)
            self.assertEqual(info, expected, f"job {jid} changed")
            if logs:
                serial = logs[-1][0]
        return before

    def assert_rejected(self, *ops):
        """Submit a job a REJECT rule applies to: as Ganeti's luxid, it gets an id and
        is cancelled at once (no result, no log, no start time); its id."""
        jid = self.c.call("SubmitJob", list(ops))
        self.assert_cancelled_by_rule(jid)
        return jid

    def assert_cancelled_by_rule(self, jid):
        row = self.row(jid, ["status", "opstatus", "opresult", "oplog", "start_ts"])
        self.assertEqual((row["status"], set(row["opstatus"]), set(map(repr, row["opresult"])),
                          row["start_ts"]), ("canceled", {"canceled"}, {"None"}, None), jid)
        self.assertEqual(row["oplog"], [[]] * len(row["opstatus"]))

    def stream(self):
        events = EventStream(self.cluster.socket)
        self.addCleanup(events.close)
        return events

    def set_max_running_jobs(self, value):
        jid = self.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS", "max_running_jobs": value})
        self.assertEqual(wait_for_job(self.c, jid), "success")
        self.assertEqual(self.c.call("QueryClusterInfo")["max_running_jobs"], value)

    # --- 1. draining ---------------------------------------------------------------------

    def test_draining_rejects_new_jobs_only(self):
        old, behind = self.submit_many([delay(1.2)], [delay(0.2, depends=[[-1, []]])])
        self.wait_until(old, ["status"], lambda v: v["status"] == "running")
        uuid = self.add_rule("REJECT", DRAIN, reason="draining for an upgrade")
        rule = self.rule(uuid)
        self.assertEqual(rule["watermark"], behind)  # the highest job id so far
        self.assertEqual((rule["priority"], rule["action"], rule["predicates"]),
                         (0, "REJECT", DRAIN))
        self.assertEqual(rule["reason_trail"][0][:2], ["gnt:user", "draining for an upgrade"])
        self.assertEqual(rule["reason_trail"][-1][:2], ["luxid", ""])
        # the job queued behind the running one is older than the rule: still queued
        waiting = self.row(behind, ["status", "wait_reason"])
        self.assertEqual(waiting["status"], "queued")
        self.assertIn(f"waiting for job {old}", waiting["wait_reason"])

        self.assert_rejected(delay(0.1))
        answer = self.c.call("SubmitManyJobs", [[delay(0.1)], [delay(0.1), delay(0.1)]])
        self.assertEqual([ok for ok, _ in answer], [True, True])
        for _, jid in answer:
            self.assert_cancelled_by_rule(jid)
        self.assertEqual(self.c.call("Query", "filter", ["uuid", "action"], None)["data"],
                         [[[0, uuid], [0, "REJECT"]]])

        self.assertEqual(wait_for_jobs(self.c, [old, behind]),
                         {old: "success", behind: "success"})
        self.c.call("DeleteFilter", uuid)
        self.assertEqual(self.c.call("QueryFilters", None, ["uuid"]), [])
        self.assertEqual(wait_for_job(self.c, self.submit(delay(0.01))), "success")
        answer = self.c.call("SubmitManyJobs", [[delay(0.01)], [delay(0.01)]])
        self.assertEqual([ok for ok, _ in answer], [True, True])
        self.assertEqual(set(wait_for_jobs(self.c, [j for _, j in answer]).values()),
                         {"success"})

    # --- 2. soft draining ----------------------------------------------------------------

    def test_soft_draining_pauses_new_jobs_until_the_rule_goes(self):
        old, behind = self.submit_many([delay(0.8)], [delay(0.2, depends=[[-1, []]])])
        self.wait_until(old, ["status"], lambda v: v["status"] == "running")
        uuid = self.add_rule("PAUSE", DRAIN, reason="soft drain")
        events = self.stream()
        new = self.submit_many([delay(0.2)], [delay(0.2)])
        # the event stream tells why the new jobs wait
        seen = {}
        while set(seen) != set(new):
            event = events.next(10)
            if event.get("kind") == "job" and event["id"] in new and event["wait_reason"]:
                self.assertEqual(event["status"], "queued")
                seen[event["id"]] = event["wait_reason"]
        for reason in seen.values():
            self.assertIn(f"paused by filter rule {uuid}", reason)
            self.assertIn("soft drain", reason)
        # the old jobs, running and queued, finish as usual
        self.assertEqual(wait_for_jobs(self.c, [old, behind]),
                         {old: "success", behind: "success"})
        # the new ones stay queued, well past their own duration
        for jid in new:
            row = self.assert_unchanged(jid, ["status", "opstatus", "wait_reason"], 0.6)
            self.assertEqual(row["status"], "queued")
            self.assertIn(uuid, row["wait_reason"])
            self.assertIsNone(self.row(jid, ["start_ts"])["start_ts"])
        answer = self.c.call("Query", "job", ["id", "status", "wait_reason"],
                             ["=", "id", new[0]])
        self.assertEqual(answer["data"][0][1], [0, "queued"])
        self.assertIn(uuid, answer["data"][0][2][1])

        self.c.call("DeleteFilter", uuid)
        self.assertEqual(wait_for_jobs(self.c, new), dict.fromkeys(new, "success"))
        for row in self.rows(new, ["wait_reason", "opstatus"]):
            self.assertEqual(row, {"wait_reason": "", "opstatus": ["success"]})

    # --- 3. the maintenance exception ----------------------------------------------------

    def test_maintenance_jobs_run_while_everything_else_is_paused(self):
        accept = self.add_rule("ACCEPT", [["reason", ["=~", "reason", BUNNY]]], priority=0,
                               reason="let the maintenance through")
        pause = self.add_rule("PAUSE", DRAIN, priority=1, reason="pause the rest")
        # listed by uuid, as Ganeti's luxid does (evaluation order is by priority)
        self.assertEqual([r[0] for r in self.c.call("QueryFilters", None, ["uuid"])],
                         sorted([accept, pause]))
        other = self.submit(delay(0.1))
        maint = self.submit(delay(0.2, reason=user_reason(f"ticket 42: {BUNNY}")))
        # a multi-opcode job needs the reason in one opcode only
        mixed = self.submit(delay(0.1), delay(0.1, reason=user_reason(BUNNY)))
        near_miss = self.submit(delay(0.1, reason=user_reason("maintenance pink")))
        self.assertEqual(wait_for_jobs(self.c, [maint, mixed]),
                         {maint: "success", mixed: "success"})
        ops = self.row(maint, ["ops"])["ops"]
        self.assertEqual(ops[0]["reason"][0][:2], ["gnt:user", f"ticket 42: {BUNNY}"])
        for jid in (other, near_miss):
            row = self.assert_unchanged(jid, ["status", "wait_reason"], 0.4)
            self.assertEqual(row["status"], "queued")
            self.assertIn(f"paused by filter rule {pause}", row["wait_reason"])
        self.c.call("DeleteFilter", pause)
        self.assertEqual(wait_for_jobs(self.c, [other, near_miss]),
                         {other: "success", near_miss: "success"})
        self.assertEqual([r[0] for r in self.c.call("QueryFilters", None, ["uuid"])],
                         [accept])

    # --- 4. cancelling queued jobs of one opcode -----------------------------------------

    def test_reject_by_opcode_cancels_queued_jobs_and_refuses_new_ones(self):
        before = self.c.call("QueryClusterInfo")["max_running_jobs"]
        self.addCleanup(self._restore_max_running_jobs, before)
        self.set_max_running_jobs(1)
        blocker = self.submit(delay(2.0))
        self.wait_until(blocker, ["status"], lambda v: v["status"] == "running")
        first, tagger, second, third = self.submit_many(
            [delay(0.1)], [tags_set("filter-test")], [delay(0.1)], [delay(0.1), delay(0.1)])
        queued = [first, second, third]
        for row in self.rows([*queued, tagger], ["status"]):
            self.assertEqual(row["status"], "queued")

        self.add_rule("REJECT", [["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]],
                      priority=1, reason="no more delays")
        for jid in queued:  # at once: not when a place to run frees up
            self.wait_until(jid, ["status"], lambda v: v["status"] in FINAL, timeout=1.5)
        self.assertEqual(self.row(blocker, ["status"])["status"], "running")
        for jid, row in zip(queued, self.rows(queued, ["status", "opstatus", "opresult",
                                                       "start_ts"]), strict=True):
            self.assertEqual(row["status"], "canceled", jid)
            self.assertEqual(set(row["opstatus"]), {"canceled"})
            self.assertIsNone(row["start_ts"])
            self.assertEqual(set(map(repr, row["opresult"])), {"None"})  # as luxid
        self.assertEqual(self.row(tagger, ["status"])["status"], "queued")

        # the running job is not touched; the other opcode runs after it
        self.assertEqual(wait_for_jobs(self.c, [blocker, tagger]),
                         {blocker: "success", tagger: "success"})
        self.assertIn("filter-test", self.c.call("QueryTags", "cluster", None))
        # new jobs with the opcode are refused, also when only one opcode matches
        self.assert_rejected(delay(0.1))
        self.assert_rejected(tags_set("x"), delay(0.1))
        cleanup = self.submit({"OP_ID": "OP_TAGS_DEL", "kind": "cluster",
                               "tags": ["filter-test"]})
        self.assertEqual(wait_for_job(self.c, cleanup), "success")

    def _restore_max_running_jobs(self, value):
        self.remove_all_rules()
        self.finish_all_jobs()
        self.set_max_running_jobs(value)

    # --- 5. RATE_LIMIT -------------------------------------------------------------------

    def test_rate_limit_keeps_two_jobs_running(self):
        limit = self.add_rule(["RATE_LIMIT", 2], [["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]],
                              priority=99, reason="throttle")
        events = self.stream()
        ids = self.submit_many(*([delay(0.4)] for _ in range(8)))
        peaks, reasons, final = events.follow(ids)
        self.assertEqual(final, dict.fromkeys(ids, "success"))
        self.assertEqual(peaks["all"], 2)
        limited = [r for jid in ids for r in reasons[jid]
                   if r.startswith(f"rate-limited by filter rule {limit}")]
        self.assertTrue(limited, reasons)
        spans = [(ts(r["start_ts"]), ts(r["end_ts"]))
                 for r in self.rows(ids, ["start_ts", "end_ts"])]
        self.assertEqual(max_overlap(spans), 2)
        self.assertEqual(self.rule(limit)["action"], ["RATE_LIMIT", 2])

    # --- 6. ad-hoc buckets ---------------------------------------------------------------

    def test_reason_buckets_limit_each_bucket(self):
        events = self.stream()
        evacuate = user_reason("rate-limit:2:evacuate node1")
        other = user_reason("rate-limit:1:other")
        jobs = [[delay(0.3, reason=evacuate)] for _ in range(6)]
        jobs[2:2] = [[delay(0.3, reason=other)] for _ in range(3)]
        ids = self.submit_many(*jobs)
        bucket = {jid: ("other" if ops[0]["reason"] == other else "evacuate")
                  for jid, ops in zip(ids, jobs, strict=True)}
        peaks, reasons, final = events.follow(ids, bucket.__getitem__)
        self.assertEqual(final, dict.fromkeys(ids, "success"))
        self.assertEqual(peaks, {"evacuate": 2, "other": 1})
        seen = " ".join(r for jid in ids for r in reasons[jid])
        self.assertIn("rate-limited by bucket '2:evacuate node1'", seen)
        self.assertIn("rate-limited by bucket '1:other'", seen)
        # the buckets limit each other not at all: three jobs ran at once
        rows = self.rows(ids, ["start_ts", "end_ts"])
        self.assertEqual(max_overlap([(ts(r["start_ts"]), ts(r["end_ts"])) for r in rows]), 3)

    # --- 7. PAUSE on a running multi-opcode job ------------------------------------------

    def held_job(self, first=1.0):
        """A three-opcode job stopped by a PAUSE rule after its first opcode:
        (job id, rule uuid, the job's status, opstatus and wait_reason)."""
        jid = self.submit(delay(first), delay(0.2), delay(0.2))
        self.wait_until(jid, ["opstatus"], lambda v: v["opstatus"][0] == "running")
        uuid = self.add_rule("PAUSE", [["jobid", ["=", "id", jid]]], reason="hold it")
        fields = ["status", "opstatus", "wait_reason"]
        values = self.wait_until(jid, fields, lambda v: v["wait_reason"] != "")
        return jid, uuid, values

    def test_pause_stops_a_running_job_between_opcodes(self):
        jid, uuid, values = self.held_job()
        self.assertEqual(values["opstatus"], ["success", "queued", "queued"])
        self.assertEqual(values["status"], "queued")
        self.assertIn(f"paused by filter rule {uuid}", values["wait_reason"])
        self.assertIn("before its next opcode", values["wait_reason"])
        row = self.assert_unchanged(jid, ["status", "opstatus", "wait_reason"], 0.8)
        self.assertEqual(row["opstatus"], ["success", "queued", "queued"])
        self.assertEqual(self.row(jid, ["opstart"])["opstart"][1:], [None, None])
        # our gnt-job shows why it waits
        env = node_env(self.cluster.dir)
        r = run([sys.executable, OUR_GNT_JOB, "list", "--no-headers", "-o",
                 "id,status,wait_reason", str(jid)], env=env, timeout=60)
        self.assertEqual(" ".join(r.stdout.split()),
                         " ".join(f"{jid} queued {values['wait_reason']}".split()), r.stderr)
        released = time.time()
        self.c.call("DeleteFilter", uuid)
        self.assertEqual(wait_for_job(self.c, jid), "success")
        row = self.row(jid, ["opstatus", "opstart", "wait_reason"])
        self.assertEqual(row["opstatus"], ["success"] * 3)
        self.assertEqual(row["wait_reason"], "")
        self.assertGreaterEqual(ts(row["opstart"][1]), released - 0.5)

    def test_debian_gnt_job_with_paused_jobs(self):
        if not os.path.exists(DEBIAN_GNT_JOB):
            self.skipTest(f"Debian's ganeti-3.0 is not installed ({DEBIAN_GNT_JOB} is "
                          "missing; make test installs it)")
        held, _, values = self.held_job(first=0.6)
        self.add_rule("PAUSE", DRAIN, reason="soft drain")
        never = self.submit(delay(0.01))
        never_reason = self.wait_until(never, ["wait_reason"],
                                       lambda v: v["wait_reason"] != "")["wait_reason"]
        env = node_env(self.cluster.dir)
        env["PYTHONHASHSEED"] = "0"

        def tool(*argv):
            r = run([DEBIAN_GNT_JOB, *argv], env=env, check=False, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stdout + r.stderr)
            return r.stdout

        lines = [" ".join(line.split()) for line in tool("list", "--no-headers").splitlines()]
        self.assertIn(f"{held} queued TEST_DELAY(0.6),TEST_DELAY(0.2),TEST_DELAY(0.2)", lines)
        self.assertIn(f"{never} queued TEST_DELAY(1.0e-2)", lines)
        out = tool("info", str(held), str(never))
        self.assertIn(f"Job ID: {held}", out)
        self.assertIn(f"Job ID: {never}", out)
        self.assertEqual(out.count("Status: queued"), 2 + 2 + 1)  # jobs and queued opcodes
        self.assertEqual(out.count("Status: success"), 1)
        lines = [" ".join(line.split()) for line in
                 tool("list", "--no-headers", "-o", "id,status,wait_reason").splitlines()]
        self.assertIn(f"{held} queued {values['wait_reason']}", lines)
        self.assertIn(f"{never} queued {never_reason}", lines)
        self.remove_all_rules()
        self.assertEqual(wait_for_jobs(self.c, [held, never]),
                         {held: "success", never: "success"})

    # --- rules replaced in place; dependencies on refused jobs ----------------------------

    def test_replacing_a_rule_in_place_applies_its_new_action_to_queued_jobs(self):
        # gnt-filter replace / RAPI PUT /2/filters/<uuid>: the same uuid, a new action
        pause = [["opcode", ["=", "comment", "pause-then-accept"]]]
        drop = [["opcode", ["=", "comment", "pause-then-reject"]]]
        to_accept = self.add_rule("PAUSE", pause)
        to_reject = self.add_rule("PAUSE", drop)
        accepted = self.submit(delay(0.01, comment="pause-then-accept"))
        rejected = self.submit(delay(0.01, comment="pause-then-reject"))
        for jid in (accepted, rejected):
            self.wait_until(jid, ["wait_reason"], lambda v: v["wait_reason"] != "")
        for uuid, predicates, action in ((to_accept, pause, "ACCEPT"),
                                         (to_reject, drop, "REJECT")):
            self.assertEqual(self.c.call("ReplaceFilter", uuid, 0, predicates, action, []),
                             uuid)
            self.assertEqual(self.rule(uuid)["action"], action)
        self.wait_until(rejected, ["status"], lambda v: v["status"] in FINAL, timeout=3)
        self.wait_until(accepted, ["status"], lambda v: v["status"] in FINAL, timeout=3)
        rows = self.rows([accepted, rejected], ["status", "wait_reason"])
        self.assertEqual(rows, [{"status": "success", "wait_reason": ""},
                                {"status": "canceled", "wait_reason": ""}])

    def test_replacing_a_pause_rule_in_place_releases_a_held_job(self):
        held, hold, _ = self.held_job(first=0.6)
        predicates = [["jobid", ["=", "id", held]]]
        self.assertEqual(self.c.call("ReplaceFilter", hold, 0, predicates, "ACCEPT", []),
                         hold)
        self.assertEqual(self.rule(hold)["action"], "ACCEPT")
        status = self.wait_until(held, ["status", "wait_reason"],
                                 lambda v: v["status"] in FINAL, timeout=3)
        self.assertEqual(status, {"status": "success", "wait_reason": ""})

    def test_a_dependency_on_a_rejected_job_does_not_run(self):
        self.add_rule("REJECT", [["opcode", ["=", "comment", "refused"]]])
        (ok, refused), (accepted, dependent) = self.c.call("SubmitManyJobs", [
            [delay(0.1, comment="refused")], [delay(0.1, depends=[[-1, ["success"]]])]])
        self.assertIs(ok, True)  # as luxid: queued, and cancelled at once
        self.assert_cancelled_by_rule(refused)
        if accepted:  # refusing the dependent job too would be fine as well
            status = wait_for_job(self.c, dependent)
            self.assertIn(status, ("error", "canceled"),
                          f"job {dependent} ran although the job it depends on (with "
                          f"status success) was refused")
