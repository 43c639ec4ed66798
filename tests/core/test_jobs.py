"""Jobs: status and priority rules, timestamps, job-file JSON and corrupt files."""

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import jobs, opcodes
from ganeti.core.errors import JobQueueError
from ganeti.core.jobs import CorruptJobError, QueuedJob, QueuedOpCode

Q, W, CI, R, CD, S, E = ("queued", "waiting", "canceling", "running", "canceled",
                         "success", "error")


def _delay(duration=1.0, **extra):
    return opcodes.validate({"OP_ID": "OP_TEST_DELAY", "duration": duration, **extra})


# A job file as Ganeti writes it (Python masterd also wrote null livelock/process_id).
GANETI_JOB = {
    "id": 17,
    "ops": [
        {"input": {"OP_ID": "OP_TEST_DELAY", "duration": 2.0, "on_master": True,
                   "on_nodes": [], "repeat": 0, "priority": 0, "dry_run": None,
                   "debug_level": None, "depends": None, "comment": None,
                   "reason": [["gnt:client:gnt-debug", "delay", 1700000000000000000],
                              ["gnt:opcode:test_delay", "job=17;index=0",
                               1700000000100000000]],
                   "on_node_uuids": None, "interruptible": False, "no_locks": True},
         "status": "success", "result": None,
         "log": [[1, [1700000001, 5], "message", "sleeping"],
                 [2, [1700000003, 7], "delay-test", ["a", 1]]],
         "priority": 0, "start_timestamp": [1700000000, 200000],
         "exec_timestamp": [1700000000, 300000], "end_timestamp": [1700000003, 0]},
        {"input": {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": "web1"},
         "status": "error",
         "result": ["OpPrereqError", ["Instance 'web1' already exists", "already_exists"]],
         "log": [], "priority": -10, "start_timestamp": [1700000003, 1],
         "exec_timestamp": None, "end_timestamp": [1700000003, 2]},
    ],
    "received_timestamp": [1700000000, 100000],
    "start_timestamp": [1700000000, 200000],
    "end_timestamp": [1700000003, 2],
}


class StatusTest(SynchronousTestCase):
    def test_status_table(self):
        table = [
            ([], S),
            ([Q], Q), ([Q, Q], Q), ([S, Q], Q), ([Q, S], Q), ([S, S], S),
            ([W], W), ([S, W, Q], W), ([R], R), ([S, R, Q], R),
            ([W, R], R), ([R, W], W),  # the last waiting/running opcode decides
            ([E], E), ([S, E, Q], E), ([E, R], E), ([R, E], E),
            ([CI, Q], CI), ([S, CI, CD], CI), ([CD], CD), ([CD, E], CD), ([E, CD], E),
            ([R, CD, Q], CD), ([Q, W, CI], CI),
        ]
        for statuses, expected in table:
            self.assertEqual(jobs.job_status(statuses), expected, statuses)

    def test_unknown_status(self):
        self.assertRaises(ValueError, jobs.job_status, ["done"])

    def test_status_sets(self):
        self.assertEqual(jobs.FINALIZED, {CD, S, E})
        self.assertEqual(jobs.PENDING, {Q, W, CI})
        self.assertEqual(jobs.STATUS_ORDER, (Q, W, CI, R, CD, S, E))

    def test_priority(self):
        ops = [QueuedOpCode(_delay(), status=S, priority=-20),
               QueuedOpCode(_delay(), status=R, priority=5),
               QueuedOpCode(_delay(), status=Q, priority=10)]
        self.assertEqual(jobs.job_priority(ops), 5)
        self.assertEqual(jobs.job_priority(ops[:1]), 0)
        self.assertEqual(jobs.job_priority([]), 0)
        self.assertEqual(QueuedJob(1, ops).priority, 5)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.sampled_from([Q, W, CI, R, CD, S, E]), min_size=1, max_size=6))
    def test_status_properties(self, statuses):
        status = jobs.job_status(statuses)
        first_terminal = next((s for s in statuses if s in (E, CI, CD)), None)
        if first_terminal is not None:
            self.assertEqual(status, first_terminal)
        elif all(s == S for s in statuses):
            self.assertEqual(status, S)
        elif all(s in (Q, S) for s in statuses):
            self.assertEqual(status, Q)
        else:
            self.assertEqual(status, [s for s in statuses if s in (W, R)][-1])


class TimeTest(SynchronousTestCase):
    def test_split_and_merge(self):
        self.assertEqual(jobs.split_time(1700000000.25), [1700000000, 250000])
        self.assertEqual(jobs.split_time(0), [0, 0])
        self.assertEqual(jobs.merge_time([12, 500000]), 12.5)
        self.assertRaises(ValueError, jobs.split_time, -1.0)
        self.assertRaises(ValueError, jobs.split_time, float("nan"))
        self.assertEqual(jobs.time_ns(1.5), 1500000000)

    @given(st.floats(min_value=0, max_value=4e9))
    def test_split_merge_round_trip(self, value):
        stamp = jobs.split_time(value)
        self.assertTrue(0 <= stamp[1] <= 999999)
        self.assertLessEqual(abs(jobs.merge_time(stamp) - value), 2e-6)

    def test_log_entry(self):
        self.assertEqual(jobs.log_entry(3, 10.5, "message", "hi"),
                         [3, [10, 500000], "message", "hi"])
        self.assertEqual(jobs.log_entry(4, [1, 2], "delay-test", ["x"]),
                         [4, [1, 2], "delay-test", ["x"]])


class JobObjectTest(SynchronousTestCase):
    def test_new_job(self):
        ops = opcodes.prepare_job_ops([_delay(2, priority=-10), _delay(3)], 5, 7)
        job = QueuedJob.new(5, ops, 1700000000.5)
        self.assertEqual(job.id, 5)
        self.assertEqual(job.status, Q)
        self.assertEqual(job.priority, -10)
        self.assertEqual([op.priority for op in job.ops], [-10, 0])
        self.assertEqual(job.received_timestamp, [1700000000, 500000])
        self.assertIsNone(job.start_timestamp)
        self.assertEqual(job.summary(), ["TEST_DELAY(2.0)", "TEST_DELAY(3.0)"])
        self.assertFalse(job.finalized)
        self.assertEqual(job.log_serial, 0)
        ops[0]["duration"] = 99.0
        self.assertEqual(job.ops[0].input["duration"], 2.0)  # copied
        self.assertRaises(ValueError, QueuedJob.new, 6, [], 1.0)

    def test_logs(self):
        job = QueuedJob.from_dict(GANETI_JOB)
        self.assertEqual(job.log_serial, 2)
        self.assertEqual([e[0] for e in job.log_entries_since(None)], [1, 2])
        self.assertEqual([e[0] for e in job.log_entries_since(1)], [2])
        self.assertEqual(job.log_entries_since(2), [])
        self.assertTrue(job.finalized)
        self.assertEqual(job.status, E)
        self.assertEqual(job.summary(), ["TEST_DELAY(2.0)", "INSTANCE_CREATE(web1)"])
        self.assertEqual(job.ops[1].op_id, "OP_INSTANCE_CREATE")


class JobFileTest(SynchronousTestCase):
    def test_ganeti_job_file_round_trips(self):
        job = QueuedJob.from_dict(copy.deepcopy(GANETI_JOB), "job-17")
        self.assertEqual(job.to_dict(), GANETI_JOB)
        self.assertEqual(QueuedJob.from_json(job.to_json()), job)
        self.assertEqual(json.loads(job.to_json()), GANETI_JOB)

    def test_optional_fields(self):
        data = copy.deepcopy(GANETI_JOB)
        data["livelock"] = None
        data["process_id"] = None
        data["unknown_future_key"] = 1
        job = QueuedJob.from_dict(data)
        self.assertEqual(job.to_dict(), GANETI_JOB)  # nulls and unknown keys dropped
        data["livelock"] = "/var/lib/ganeti/livelocks/job_17"
        data["process_id"] = 4242
        data["id"] = "17"
        out = QueuedJob.from_dict(data).to_dict()
        self.assertEqual((out["id"], out["livelock"], out["process_id"]),
                         (17, "/var/lib/ganeti/livelocks/job_17", 4242))

    def test_missing_opcode_fields_take_defaults(self):
        data = {"id": 1, "ops": [{"input": {"OP_ID": "OP_CLUSTER_QUERY", "priority": 10},
                                  "status": "queued"}]}
        job = QueuedJob.from_dict(data)
        op = job.ops[0]
        self.assertEqual((op.result, op.log, op.priority, op.start_timestamp),
                         (None, [], 10, None))
        self.assertIsNone(job.received_timestamp)

    def test_to_dict_does_not_share_state(self):
        job = QueuedJob.from_dict(GANETI_JOB)
        out = job.to_dict()
        out["ops"][0]["log"].append("x")
        out["ops"][0]["input"]["duration"] = 0
        out["received_timestamp"][0] = 0
        self.assertEqual(job.to_dict(), GANETI_JOB)
        data = copy.deepcopy(GANETI_JOB)
        loaded = QueuedJob.from_dict(data)
        data["ops"][0]["input"]["duration"] = 0
        self.assertEqual(loaded.ops[0].input["duration"], 2.0)

    def test_changed_job_round_trips(self):
        job = QueuedJob.new(8, [_delay(1)], 100.0)
        op = job.ops[0]
        op.status = R
        op.start_timestamp = jobs.split_time(101.0)
        op.exec_timestamp = jobs.split_time(101.5)
        op.log.append(jobs.log_entry(1, 102.0, "message", "half way"))
        job.start_timestamp = jobs.split_time(101.0)
        job.process_id = 99
        job.livelock = "/x/job_8"
        again = QueuedJob.from_json(job.to_json())
        self.assertEqual(again, job)
        self.assertEqual(again.status, R)

    def _corrupt(self, mutate, *fragments, where="job-17"):
        data = copy.deepcopy(GANETI_JOB)
        mutate(data)
        err = self.assertRaises(CorruptJobError, QueuedJob.from_dict, data, where)
        self.assertIsInstance(err, JobQueueError)
        for fragment in fragments:
            self.assertIn(fragment, str(err))
        return err

    def test_corrupt_job_files(self):
        def set_(path, value):
            def mutate(data):
                target = data
                for key in path[:-1]:
                    target = target[key]
                target[path[-1]] = value
            return mutate

        def delete(path):
            def mutate(data):
                target = data
                for key in path[:-1]:
                    target = target[key]
                del target[path[-1]]
            return mutate

        cases = [
            (delete(["id"]), "job-17.id", "non-negative integer"),
            (set_(["id"], -3), "job-17.id"),
            (set_(["id"], True), "job-17.id"),
            (set_(["id"], "x1"), "job-17.id"),
            (set_(["ops"], []), "job-17.ops", "non-empty list"),
            (delete(["ops"]), "job-17.ops"),
            (set_(["ops", 1], "op"), "job-17.ops[1]", "expected an object"),
            (set_(["ops", 0, "input"], None), "job-17.ops[0].input"),
            (delete(["ops", 0, "input", "OP_ID"]), "job-17.ops[0].input", "no OP_ID"),
            (set_(["ops", 1, "status"], "finished"), "job-17.ops[1].status",
             '"finished"'),
            (delete(["ops", 1, "status"]), "job-17.ops[1].status"),
            (set_(["ops", 0, "priority"], 20), "job-17.ops[0].priority"),
            (set_(["ops", 0, "priority"], "0"), "job-17.ops[0].priority"),
            (set_(["ops", 0, "start_timestamp"], 1700000000),
             "job-17.ops[0].start_timestamp", "[seconds, microseconds]"),
            (set_(["ops", 0, "end_timestamp"], [1, 1000000]), "end_timestamp"),
            (set_(["ops", 0, "exec_timestamp"], [-1, 0]), "exec_timestamp"),
            (set_(["received_timestamp"], [1, 2, 3]), "job-17.received_timestamp"),
            (set_(["start_timestamp"], ["1", 2]), "job-17.start_timestamp"),
            (set_(["ops", 0, "log"], {}), "job-17.ops[0].log", "list of log entries"),
            (set_(["ops", 0, "log", 1], [1, 2, 3]), "job-17.ops[0].log[1]"),
            (set_(["ops", 0, "log", 0, 0], "1"), "job-17.ops[0].log[0]", "serial"),
            (set_(["ops", 0, "log", 0, 1], None), "job-17.ops[0].log[0]", "timestamp"),
            (set_(["ops", 0, "log", 0, 2], 5), "job-17.ops[0].log[0]", "log type"),
            (set_(["livelock"], 5), "job-17.livelock"),
            (set_(["process_id"], "123"), "job-17.process_id"),
        ]
        for mutate, *fragments in cases:
            self._corrupt(mutate, *fragments)

    def test_not_a_job(self):
        for text, fragment in [(b"", "not valid JSON"), ("{", "not valid JSON"),
                               (b"\xff\xfe", "not valid JSON"), ("[1, 2]", "JSON object"),
                               ("null", "JSON object")]:
            err = self.assertRaises(CorruptJobError, QueuedJob.from_json, text,
                                    "/q/job-3")
            self.assertIn("/q/job-3", str(err))
            self.assertIn(fragment, str(err))

    def test_integral_float_timestamps_are_accepted(self):
        data = copy.deepcopy(GANETI_JOB)
        data["received_timestamp"] = [1700000000.0, 100000.0]
        self.assertEqual(QueuedJob.from_dict(data).received_timestamp,
                         [1700000000, 100000])


_stamps = st.none() | st.lists(st.integers(0, 2 ** 40), min_size=1, max_size=1).map(
    lambda s: [s[0], s[0] % 1000000])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=3),
    max_leaves=8)
_ops = st.builds(
    QueuedOpCode,
    input=st.builds(lambda d: {"OP_ID": "OP_TEST_DELAY", "duration": d},
                    st.floats(0, 100)),
    status=st.sampled_from(sorted(jobs.ALL_STATUSES)),
    result=_json,
    log=st.lists(st.builds(lambda n, s, m: [n, s, "message", m], st.integers(0, 100),
                           _stamps.filter(lambda s: s is not None), _json), max_size=3),
    priority=st.integers(-20, 19),
    start_timestamp=_stamps, exec_timestamp=_stamps, end_timestamp=_stamps)
_jobs = st.builds(QueuedJob, id=st.integers(0, 10 ** 9), ops=st.lists(_ops, min_size=1,
                                                                       max_size=3),
                  received_timestamp=_stamps, start_timestamp=_stamps,
                  end_timestamp=_stamps,
                  livelock=st.none() | st.text(min_size=1, max_size=10),
                  process_id=st.none() | st.integers(0, 2 ** 22))


class RoundTripPropertyTest(SynchronousTestCase):
    @settings(max_examples=150, deadline=None)
    @given(_jobs)
    def test_any_job_round_trips(self, job):
        self.assertEqual(QueuedJob.from_json(job.to_json()), job)
        self.assertEqual(QueuedJob.from_dict(job.to_dict()).to_dict(), job.to_dict())
