"""The job query fields bound to their getters, Query("job") and QueryJobs rows."""

import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import jobs, opcodes
from ganeti.core import query as corequery
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.master.query import jobquery as query


def _job(job_id, *durations, received=1700000000.25):
    ops = [opcodes.validate({"OP_ID": "OP_TEST_DELAY", "duration": d}) for d in durations]
    return jobs.QueuedJob.new(job_id, opcodes.prepare_job_ops(ops, job_id, 5), received)


class JobFieldsTest(SynchronousTestCase):
    def setUp(self):
        self.queued = _job(1, 1)
        self.done = _job(2, 2, 3)
        for op in self.done.ops:
            op.status = jobs.SUCCESS
            op.start_timestamp = [1700000001, 0]
            op.exec_timestamp = [1700000001, 5]
            op.end_timestamp = [1700000002, 0]
            op.log.append(jobs.log_entry(1, 1700000001.5, "message", "slept"))
        self.done.ops[1].priority = -10
        self.done.start_timestamp = [1700000001, 0]
        self.done.end_timestamp = [1700000002, 0]
        self.items = [(2, self.done), (1, self.queued), (9, None)]

    def test_field_list(self):
        self.assertEqual(list(query.JOB_FIELDS), [
            "id", "status", "priority", "ops", "opresult", "opstatus", "oplog", "opstart",
            "opexec", "opend", "oppriority", "summary", "received_ts", "start_ts", "end_ts",
            "archived", "wait_reason"])  # the last one is ours: why a queued job waits
        # ... answered when named, but not in the list of all fields (Ganeti's 17)
        self.assertTrue(query.JOB_FIELDS["wait_reason"].extension)
        self.assertEqual(query.JOB_FIELDS["archived"].kind, "bool")
        self.assertEqual(query.JOB_FIELDS["opresult"].title, "OpCode_result")
        self.assertEqual(query.JOB_FIELDS["id"].kind, "number")
        self.assertEqual(query.JOB_FIELDS["status"].kind, "text")

    def test_query_response(self):
        fields = ["id", "status", "priority", "summary", "opstatus", "oppriority",
                  "received_ts", "start_ts", "end_ts", "opstart", "opexec", "opend",
                  "oplog", "opresult"]
        result = query.query_jobs(self.items, fields)
        data = result["data"]
        self.assertEqual([row[0] for row in data], [[0, 1], [0, 2], [0, 9]])  # by id
        self.assertEqual(data[0][:9], [
            [0, 1], [0, "queued"], [0, 0], [0, ["TEST_DELAY(1.0)"]], [0, ["queued"]],
            [0, [0]], [0, [1700000000, 250000]], [3, None], [3, None]])
        self.assertEqual(data[0][9:], [[0, [None]], [0, [None]], [0, [None]], [0, [[]]],
                                       [0, [None]]])
        self.assertEqual(data[1][:6], [
            [0, 2], [0, "success"], [0, 0], [0, ["TEST_DELAY(2.0)", "TEST_DELAY(3.0)"]],
            [0, ["success", "success"]], [0, [0, -10]]])
        self.assertEqual(data[1][7:10], [[0, [1700000001, 0]], [0, [1700000002, 0]],
                                         [0, [[1700000001, 0], [1700000001, 0]]]])
        self.assertEqual(data[1][12][1][0], [[1, [1700000001, 500000], "message", "slept"]])
        self.assertEqual(data[2], [[0, 9]] + [[3, None]] * (len(fields) - 1))
        json.dumps(result)

    def test_ops_field(self):
        row = query.query_jobs([(1, self.queued)], ["ops"])["data"][0]
        self.assertEqual(row[0][1][0]["OP_ID"], "OP_TEST_DELAY")
        self.assertEqual(row[0][1][0]["reason"][-1][:2], ["gnt:opcode:test_delay",
                                                          "job=1;index=0"])

    def test_gnt_job_list_filter(self):
        flt = ["|", ["=", "id", 1], ["=", "id", 9]]
        result = query.query_jobs(self.items, ["id", "status"], flt)
        self.assertEqual(result["data"], [[[0, 1], [0, "queued"]], [[0, 9], [3, None]]])
        self.assertEqual(query.requested_job_ids(flt), [1, 9])
        self.assertIsNone(query.requested_job_ids(None))
        self.assertIsNone(query.requested_job_ids(["=", "status", "queued"]))

    def test_filters_on_job_fields(self):
        def ids(flt):
            return [row[0][1] for row in query.query_jobs(self.items[:2], ["id"], flt)["data"]]
        self.assertEqual(ids(["=", "status", "success"]), [2])
        self.assertEqual(ids(["=[]", "opstatus", "queued"]), [1])
        self.assertEqual(ids(["=[]", "summary", "TEST_DELAY(3.0)"]), [2])
        self.assertEqual(ids([">", "received_ts", 1700000000]), [1, 2])
        self.assertEqual(ids(["<", "received_ts", 1700000000.2]), [])
        self.assertEqual(ids(["!", ["?", "start_ts"]]), [])  # unavailable: accepted
        self.assertEqual(ids(["<", "priority", 0]), [])
        err = self.assertRaises(OpPrereqError, query.query_jobs, self.items, ["id"],
                                ["=", "status", 1])
        self.assertEqual(err.args[1], ECODE_INVAL)

    def test_old_style_rows(self):
        rows = query.old_style_rows([(2, self.done), (9, None), (1, self.queued)],
                                    ["id", "status", "start_ts"])
        self.assertEqual(rows, [[2, "success", [1700000001, 0]], None, [1, "queued", None]])
        err = self.assertRaises(OpPrereqError, query.old_style_rows, self.items,
                                ["id", "bogus"])
        self.assertEqual(err.args, ("Unknown output fields selected: bogus", ECODE_INVAL))

    def test_query_fields_for_jobs(self):
        result = corequery.query_fields(query.JOB_FIELDS, ["id", "summary", "x"])
        self.assertEqual(result["fields"][0], {"name": "id", "title": "ID", "kind": "number",
                                               "doc": "Job ID"})
        self.assertEqual(result["fields"][2]["kind"], "unknown")
        # Ganeti's job fields exactly (Ganeti's QA compares the list); our wait_reason
        # only when named
        self.assertEqual(sorted(f["name"] for f in corequery.query_fields(
            query.JOB_FIELDS, None)["fields"]), sorted([
                "id", "status", "priority", "ops", "opresult", "opstatus", "oplog",
                "opstart", "opexec", "opend", "oppriority", "summary", "received_ts",
                "start_ts", "end_ts", "archived"]))
        self.assertEqual(corequery.query_fields(query.JOB_FIELDS, ["wait_reason"])["fields"],
                         [{"name": "wait_reason", "title": "WaitReason", "kind": "text",
                           "doc": query.JOB_FIELDS["wait_reason"].doc}])
