"""Typed opcode views (ganeti/core/opcodes/views.py), generated from the opcode table."""

from __future__ import annotations

import dataclasses
import os
import unittest

from ganeti.core import opcodes
from ganeti.core.errors import OpPrereqError
from ganeti.core.opcodes import genviews, views
from ganeti.core.opcodes.base import run_form


class GeneratedFileTest(unittest.TestCase):
    def test_the_views_modules_are_up_to_date(self) -> None:
        texts = genviews.render_all()
        self.assertEqual(sorted(texts), ["views.py", "views_backup.py", "views_base.py",
                                         "views_core.py", "views_evacuate.py",
                                         "views_instance.py",
                                         "views_network.py", "views_os.py",
                                         "views_storage.py"])
        for name, text in texts.items():
            with open(os.path.join(genviews.DIRECTORY, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), text, f"{name} is out of date: run python -m "
                                                 "ganeti.core.opcodes.genviews")
            self.assertLess(text.count("\n"), 600, name)  # the house's module size
        self.assertEqual(genviews.render(), texts["views.py"])
        self.assertEqual(genviews.main(["--check"]), 0)

    def test_views_re_exports_every_class(self) -> None:
        for op_id, cls in views.VIEWS.items():
            self.assertIs(getattr(views, genviews.class_name(op_id)), cls)
            self.assertIn(genviews.class_name(op_id), views.__all__)
        self.assertIs(views.OpView, views.VIEWS["OP_TEST_DELAY"].__mro__[1])

    def test_one_view_per_opcode_with_every_stored_parameter(self) -> None:
        self.assertEqual(sorted(views.VIEWS), sorted(opcodes.OPCODES))
        for op_id, decl in opcodes.OPCODES.items():
            cls = views.VIEWS[op_id]
            self.assertEqual(cls.OP_ID, op_id)
            self.assertTrue(cls.__dataclass_params__.frozen)  # type: ignore[attr-defined]
            self.assertEqual({f.name for f in dataclasses.fields(cls)},
                             {p.name for p in decl.stored_params}, op_id)

    def test_defaults_are_the_tables(self) -> None:
        for op_id, decl in opcodes.OPCODES.items():
            required = {p.name: "x" for p in decl.stored_params if p.required}
            try:
                stored = decl.validate(required)
            except OpPrereqError:
                continue  # a required kind "x" does not fit: checked elsewhere
            view = views.view(stored)
            for param in decl.stored_params:
                self.assertEqual(getattr(view, param.name), stored[param.name],
                                 f"{op_id}.{param.name}")


class ViewTest(unittest.TestCase):
    def test_reads_a_run_form(self) -> None:
        stored = opcodes.validate({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "n1",
                                   "offline": True})
        op = views.view(run_form(stored, opcodes.OPCODES["OP_NODE_SET_PARAMS"]))
        self.assertIsInstance(op, views.OpNodeSetParams)
        assert isinstance(op, views.OpNodeSetParams)
        self.assertEqual((op.node_name, op.offline, op.drained, op.force, op.priority),
                         ("n1", True, None, False, 0))
        self.assertEqual(op.debug_level, 0)  # run_form's
        with self.assertRaises(dataclasses.FrozenInstanceError):
            op.offline = False  # type: ignore[misc]

    def test_null_takes_the_default_where_the_type_excludes_it(self) -> None:
        op = views.view({"OP_ID": "OP_TEST_DELAY", "duration": 2.0, "on_master": None,
                         "on_nodes": None, "repeat": None})
        assert isinstance(op, views.OpTestDelay)
        self.assertEqual((op.on_master, op.on_nodes, op.repeat), (True, [], 0))
        self.assertEqual(op.on_node_uuids, None)  # nullable: stays null

    def test_missing_required_is_wrong_input(self) -> None:
        with self.assertRaises(OpPrereqError) as ctx:
            views.view({"OP_ID": "OP_TEST_DELAY"})
        self.assertEqual(ctx.exception.args, ("Parameter 'OP_TEST_DELAY.duration' is "
                                              "required but missing", "wrong_input"))

    def test_unknown_opcode_gives_the_common_parameters(self) -> None:
        op = views.view({"OP_ID": "OP_NOT_HERE", "comment": "c", "whatever": 1})
        self.assertIs(type(op), views.OpView)
        self.assertEqual(op.comment, "c")

    def test_defaults_are_fresh_per_view(self) -> None:
        a = views.view({"OP_ID": "OP_TEST_DELAY", "duration": 1.0})
        b = views.view({"OP_ID": "OP_TEST_DELAY", "duration": 1.0})
        assert isinstance(a, views.OpTestDelay) and isinstance(b, views.OpTestDelay)
        a.on_nodes.append("x")
        self.assertEqual(b.on_nodes, [])

    def test_field_types_follow_the_kinds(self) -> None:
        hints = {f.name: f.type for f in dataclasses.fields(views.OpNodeSetParams)}
        self.assertEqual(hints["offline"], "bool | None")
        self.assertEqual(hints["force"], "bool")
        self.assertEqual(hints["secondary_ip"], "str | None")
        hints = {f.name: f.type for f in dataclasses.fields(views.OpTestDelay)}
        self.assertEqual((hints["duration"], hints["on_nodes"], hints["repeat"]),
                         ("float", "list[str]", "int"))
