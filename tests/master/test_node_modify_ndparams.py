"""``gnt-node modify --node-parameters`` merges into the node's own parameters as
Ganeti's LUNodeSetParams does (found by the oracle: node-modify-ndparams-back,
node-modify-ndparams-bad)."""

from __future__ import annotations

from tests.master.test_nodes import NodesTestCase


def set_params(name: str, **params):
    return {"OP_ID": "OP_NODE_SET_PARAMS", "node_name": name, **params}


class NodeParametersTest(NodesTestCase):
    extra_nodes = 1

    def setUp(self) -> None:
        super().setUp()
        self.add(2)

    def test_merge_coerce_and_default_drops_the_key(self):
        self.ok(set_params("node2.test", ndparams={"spindle_count": "3"}))
        self.ok(set_params("node2.test", ndparams={"ssh_port": 2222}))
        self.assertEqual(self.node("node2.test").ndparams,
                         {"spindle_count": 3, "ssh_port": 2222})
        self.ok(set_params("node2.test", ndparams={"spindle_count": "default"}))
        self.assertEqual(self.node("node2.test").ndparams, {"ssh_port": 2222})

    def test_bad_value_is_a_type_error_and_changes_nothing(self):
        self.fails(set_params("node2.test", ndparams={"spindle_count": "x"}))
        self.assertEqual(self.node("node2.test").ndparams, {})

    def test_global_parameters_are_refused_at_node_level(self):
        # as Ganeti's CheckParamsNotGlobal (checked on a real cluster: RAPI's GetNode
        # ndparams sent back to /modify fails this way; issue 34)
        err = self.fails(set_params("node2.test", ndparams={"exclusive_storage": False,
                                                            "spindle_count": 1}),
                         "wrong_input",
                         "The following node parameters are global and cannot be customized "
                         "at node level, please modify them at cluster or group level: "
                         "exclusive_storage")
        self.assertEqual(err[0], "OpPrereqError")
        self.assertEqual(self.node("node2.test").ndparams, {})
