"""What every logical unit declares on the class (the hooks part of the LU contract).

``LogicalUnit`` declares ``HPATH``, ``HTYPE``, the hooks builders and their
defaults; the hooks runner and the processor read them directly.  These tests
hold every registered unit to it, and check the defaults a unit inherits.
"""

from __future__ import annotations

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import hooks
from ganeti.master.lu.base import LogicalUnit, LUContext
from ganeti.master.lu.registry import REGISTRY
from ganeti.master.lu.test import LUTestDelay

HTYPES = {hooks.HTYPE_CLUSTER, hooks.HTYPE_GROUP, hooks.HTYPE_INSTANCE, hooks.HTYPE_NETWORK,
          hooks.HTYPE_NODE}


def bare_context() -> Any:
    return LUContext(config=None, clock=None, locks=None, feedback=None,  # type: ignore
                     query=None, query_fields=None)


class RegisteredUnitsTest(SynchronousTestCase):
    def test_units_with_hooks_declare_them(self) -> None:
        with_hooks = {op_id: cls for op_id, cls in REGISTRY.items() if cls.HPATH is not None}
        self.assertGreaterEqual(len(with_hooks), 25)  # instance, node, group, network, cluster
        for op_id, cls in with_hooks.items():
            self.assertTrue(hooks.is_hpath(cls.HPATH), op_id)
            self.assertIn(cls.HTYPE, HTYPES, op_id)
            # a unit with a hooks path says what its hooks get and where they run
            self.assertIsNot(cls.build_hooks_env, LogicalUnit.build_hooks_env, op_id)
            self.assertIsNot(cls.build_hooks_nodes, LogicalUnit.build_hooks_nodes, op_id)

    def test_hooks_paths_are_unique(self) -> None:
        paths = [cls.HPATH for cls in REGISTRY.values() if cls.HPATH is not None]
        self.assertEqual(len(paths), len(set(paths)))

    def test_every_unit_is_a_logical_unit(self) -> None:
        for op_id, cls in REGISTRY.items():
            self.assertTrue(issubclass(cls, LogicalUnit), op_id)
            self.assertEqual(cls.OP_ID, op_id)


class DefaultsTest(SynchronousTestCase):
    """What a unit that declares nothing gets (Ganeti's LogicalUnit and NoHooksLU)."""

    def setUp(self) -> None:
        class Plain(LogicalUnit):
            OP_ID = "OP_TEST_PLAIN"

        self.unit = Plain(bare_context(), {"OP_ID": "OP_TEST_PLAIN"})

    def test_no_hooks(self) -> None:
        self.assertIsNone(self.unit.HPATH)
        self.assertIsNone(self.unit.HTYPE)

    def test_hooks_builders_must_be_written_by_units_with_hooks(self) -> None:
        self.assertRaises(NotImplementedError, self.unit.build_hooks_env)
        self.assertRaises(NotImplementedError, self.unit.build_hooks_nodes)

    def test_post_hook_nodes_and_callback_change_nothing(self) -> None:
        self.assertEqual(self.unit.prepare_post_hook_nodes(["a", "b"]), ["a", "b"])
        result = object()
        self.assertIs(self.unit.hooks_callback(hooks.PHASE_POST, [], result), result)
        self.assertIsNone(self.unit.hooks_callback(hooks.PHASE_PRE, [], None))

    def test_not_interruptible(self) -> None:
        self.assertFalse(self.unit.interruptible)

    def test_test_delay_is_interruptible_when_asked(self) -> None:
        op = {"OP_ID": "OP_TEST_DELAY", "duration": 1.0}
        self.assertFalse(LUTestDelay(bare_context(), op).interruptible)
        self.assertTrue(LUTestDelay(bare_context(), {**op, "interruptible": True}).interruptible)
