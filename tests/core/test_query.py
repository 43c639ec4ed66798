"""Query responses, QueryFields, old-style rows and the job fields."""

import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import jobs, opcodes, query
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.query import Field

# A toy resource: dict items, with special answers for some fields.
TOY = query.field_table([
    Field("name", "Name", "text", "Item name", lambda item: item["name"], hostname=True),
    Field("size", "Size", "unit", "Size in MiB", lambda item: item.get("size", query.NODATA)),
    Field("up", "Up", "bool", "Whether it runs",
          lambda item: query.OFFLINE if item.get("offline") else item["up"]),
    Field("load", "Load", "float", "Load average",
          lambda item: item.get("load", query.UNAVAIL)),
    Field("tags", "Tags", "other", "Tags", lambda item: item.get("tags", [])),
    Field("disk10", "Disk10", "number", "Tenth disk", lambda item: 10),
    Field("disk2", "Disk2", "number", "Second disk", lambda item: 2),
])
ITEMS = [
    {"name": "a.example.com", "size": 10, "up": True, "load": 0.5, "tags": ["x"]},
    {"name": "b.example.com", "up": False, "tags": ["x", "y"]},
    {"name": "c.example.com", "size": 30, "up": True, "offline": True, "load": 2.0},
]


class FieldTest(SynchronousTestCase):
    def test_bad_fields(self):
        getter = lambda item: item  # noqa: E731
        self.assertRaises(ValueError, Field, "Bad Name", "T", "text", "doc", getter)
        self.assertRaises(ValueError, Field, "ok", "two words", "text", "doc", getter)
        self.assertRaises(ValueError, Field, "ok", "T", "string", "doc", getter)
        self.assertRaises(ValueError, Field, "ok", "T", "unknown", "doc", getter)
        self.assertRaises(ValueError, Field, "ok", "T", "text", "", getter)
        self.assertRaises(ValueError, Field, "ok", "T", "text", "a\nb", getter)
        self.assertRaises(ValueError, query.field_table,
                          [Field("a", "A", "text", "d", getter),
                           Field("a", "B", "text", "d", getter)])
        self.assertRaises(ValueError, query.field_table,
                          [Field("a", "A", "text", "d", getter),
                           Field("b", "a", "text", "d", getter)])

    def test_fielddef(self):
        self.assertEqual(TOY["size"].fielddef(), {"name": "size", "title": "Size",
                                                  "kind": "unit", "doc": "Size in MiB"})
        self.assertEqual(query.unknown_fielddef("x"), {"name": "x", "title": "x",
                                                       "kind": "unknown",
                                                       "doc": "Unknown field 'x'"})


class QueryFieldsTest(SynchronousTestCase):
    def test_all_fields_sorted_by_name(self):
        names = [f["name"] for f in query.query_fields(TOY, None)["fields"]]
        self.assertEqual(names, ["disk2", "disk10", "load", "name", "size", "tags", "up"])

    def test_selected_fields_in_order_with_unknown(self):
        result = query.query_fields(TOY, ["up", "bogus", "name"])
        self.assertEqual([f["name"] for f in result["fields"]], ["up", "bogus", "name"])
        self.assertEqual(result["fields"][1]["kind"], "unknown")
        self.assertEqual(query.query_fields(TOY, []), {"fields": []})

    def test_bad_names(self):
        for names in ("name", [1], {"name": 1}):
            err = self.assertRaises(OpPrereqError, query.query_fields, TOY, names)
            self.assertEqual(err.args[1], ECODE_INVAL)


class QueryTest(SynchronousTestCase):
    def test_response_with_statuses(self):
        q = query.Query(TOY, ["name", "size", "up", "load", "nope"])
        result = q.response(ITEMS)
        self.assertEqual([f["kind"] for f in result["fields"]],
                         ["text", "unit", "bool", "float", "unknown"])
        self.assertEqual(result["data"], [
            [[0, "a.example.com"], [0, 10], [0, True], [0, 0.5], [1, None]],
            [[0, "b.example.com"], [2, None], [0, False], [3, None], [1, None]],
            [[0, "c.example.com"], [0, 30], [4, None], [0, 2.0], [1, None]],
        ])
        self.assertEqual(q.unknown_fields(), ["nope"])
        json.dumps(result)

    def test_filtering(self):
        q = query.Query(TOY, ["name"], ["=[]", "tags", "y"])
        self.assertEqual(q.rows(ITEMS), [[[0, "b.example.com"]]])
        self.assertEqual(q.filter_fields(), {"tags"})
        q = query.Query(TOY, ["name"], ["|", ["=", "name", "a"], ["=", "name", "c"]])
        self.assertEqual(q.old_style(ITEMS), [["a.example.com"], ["c.example.com"]])
        # size has no data for b: the comparison accepts it, as luxid does
        q = query.Query(TOY, ["name"], [">", "size", 20])
        self.assertEqual(q.old_style(ITEMS), [["b.example.com"], ["c.example.com"]])
        q = query.Query(TOY, ["name"], ["?", "up"])
        self.assertEqual(q.old_style(ITEMS), [["a.example.com"], ["c.example.com"]])

    def test_bad_queries(self):
        for fields, flt, fragment in [("name", None, "list of field names"),
                                      (["name", 3], None, "list of field names"),
                                      (["name"], ["=", "nope", 1], "unknown field 'nope'"),
                                      (["name"], ["=", "size", "big"], "kind 'unit'"),
                                      (["name"], ["~", "size", 1], "unknown operator")]:
            err = self.assertRaises(OpPrereqError, query.Query, TOY, fields, flt)
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertIn(fragment, err.args[0])

    def test_old_style(self):
        q = query.Query(TOY, ["name", "size", "up"])
        self.assertEqual(q.old_style(ITEMS), [["a.example.com", 10, True],
                                              ["b.example.com", None, False],
                                              ["c.example.com", 30, None]])
        err = self.assertRaises(OpPrereqError, query.Query(TOY, ["name", "x", "y"]).old_style,
                                ITEMS)
        self.assertEqual(err.args, ("Unknown output fields selected: x, y", ECODE_INVAL))

    def test_resources(self):
        self.assertIs(query.resource_fields("job"), query.JOB_FIELDS)
        for what in ("instance", 5, None):
            err = self.assertRaises(OpPrereqError, query.resource_fields, what)
            self.assertEqual(err.args[1], ECODE_INVAL)


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
        result = query.query_fields(query.JOB_FIELDS, ["id", "summary", "x"])
        self.assertEqual(result["fields"][0], {"name": "id", "title": "ID", "kind": "number",
                                               "doc": "Job ID"})
        self.assertEqual(result["fields"][2]["kind"], "unknown")
        self.assertEqual(len(query.query_fields(query.JOB_FIELDS, None)["fields"]), 17)
