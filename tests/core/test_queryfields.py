"""Query field declarations: one table per resource, checked, and what derives from them."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.queryfields import base, catalog, nodes
from ganeti.core.queryfields.base import FieldDecl


class DeclarationTest(SynchronousTestCase):
    def test_bad_declarations_refused(self):
        self.assertRaises(ValueError, FieldDecl, "Bad Name", "T", "text", "doc")
        self.assertRaises(ValueError, FieldDecl, "ok", "two words", "text", "doc")
        self.assertRaises(ValueError, FieldDecl, "ok", "T", "unknown", "doc")
        self.assertRaises(ValueError, FieldDecl, "ok", "T", "text", " doc")
        self.assertRaises(ValueError, base.decl_table,
                          [FieldDecl("a", "A", "text", "d"), FieldDecl("a", "B", "text", "d")])
        self.assertRaises(ValueError, base.decl_table,
                          [FieldDecl("a", "A", "text", "d"), FieldDecl("b", "a", "text", "d")])

    def test_every_resource_declared_once(self):
        self.assertEqual(sorted(catalog.RESOURCES),
                         ["export", "filter", "group", "instance", "job", "lock", "network",
                          "node", "os"])
        self.assertEqual(catalog.VIA_OPCODE, ("group", "instance", "job", "lock", "network",
                                              "node", "os"))
        for what, table in catalog.RESOURCES.items():
            self.assertTrue(table, what)
            for name, decl in table.items():
                self.assertEqual(decl.name, name)
                self.assertIn(decl.kind, base.KIND_NAMES)

    def test_live_fields_are_the_node_info_ones(self):
        self.assertEqual(nodes.NODE_LIVE_FIELDS, {
            "bootid", "cnodes", "cnos", "csockets", "ctotal", "dfree", "dtotal", "spfree",
            "sptotal", "mfree", "mnode", "mtotal", "hv_accel"})
        # hv_accel is ours: Ganeti has no such field, so it is the one extension
        self.assertEqual([n for n, d in nodes.NODE_FIELDS.items() if d.extension],
                         ["hv_accel"])
        for what, table in catalog.RESOURCES.items():
            if what not in (c.QR_NODE, c.QR_INSTANCE):
                self.assertFalse([n for n, d in table.items() if d.live], what)

    def test_value_schemas(self):
        node = nodes.NODE_FIELDS
        self.assertEqual(node["offline"].value_schema(), {"type": "boolean"})
        self.assertEqual(node["mfree"].value_schema(), {"type": "integer", "nullable": True})
        self.assertEqual(node["pinst_cnt"].value_schema(), {"type": "integer"})
        self.assertEqual(node["ctime"].value_schema(), {"type": "number", "nullable": True})
        self.assertEqual(node["pinst_list"].value_schema(),
                         {"type": "array", "items": {"type": "string"}})
        self.assertEqual(node["hv_state"].value_schema(), {})
        # a copy: a caller changing it does not change the declaration
        node["tags"].value_schema()["items"]["type"] = "integer"
        self.assertEqual(node["tags"].value_schema()["items"], {"type": "string"})
        schema = base.object_schema(node, ["name", "role"], description="x")
        self.assertEqual(schema["properties"]["role"]["enum"], ["C", "D", "M", "O", "R"])
        self.assertEqual(schema["description"], "x")


class BindTest(SynchronousTestCase):
    DECLS = base.decl_table([FieldDecl("a", "A", "text", "First"),
                             FieldDecl("b", "B", "number", "Second", live=True)])

    def test_bound_in_declared_order(self):
        table = query.bind(self.DECLS, {"b": lambda item: 2, "a": lambda item: 1})
        self.assertEqual(list(table), ["a", "b"])
        self.assertEqual(table["b"].fielddef(), self.DECLS["b"].fielddef())
        self.assertTrue(table["b"].live)
        self.assertEqual(query.Query(table, ["b", "a"]).row(None), [[0, 2], [0, 1]])

    def test_getter_missing_or_extra(self):
        err = self.assertRaises(ValueError, query.bind, self.DECLS, {"a": lambda item: 1})
        self.assertIn("fields without a getter: ['b']", str(err))
        err = self.assertRaises(ValueError, query.bind, self.DECLS,
                                {"a": len, "b": len, "c": len})
        self.assertIn("getters without a field: ['c']", str(err))
