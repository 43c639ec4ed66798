"""Query responses, QueryFields, old-style rows and the job fields."""

import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import query
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.query import Field
from ganeti.core.queryfields import catalog
from ganeti.core.queryfields.jobs import JOB_FIELDS as JOB_DECLS

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
        self.assertIs(catalog.resource_fields("job"), JOB_DECLS)
        for what in ("exports", 5, None, ["job"]):
            err = self.assertRaises(OpPrereqError, catalog.resource_fields, what)
            self.assertEqual(err.args[1], ECODE_INVAL)
