"""Ganeti's node role rules (LUNodeSetParams), out-of-band commands and node query semantics.

Each expectation was checked against a real Ganeti 3.0 cluster (the messages
and error codes are Ganeti's).  Node daemons run in process
(tests/fakes/nodes) with noded's real handlers, so the out-of-band program is
a real script run by the ``run_oob`` handler.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, ECODE_NOENT, ECODE_STATE
from tests.master.test_nodes import MASTER, NodesTestCase


def set_params(name: str, **params):
    return {"OP_ID": "OP_NODE_SET_PARAMS", "node_name": name, **params}


class ThreeCandidatesTest(NodesTestCase):
    """Master + node2 + node3, pool 10: all three are candidates."""

    extra_nodes = 2

    def setUp(self) -> None:
        super().setUp()
        self.add(2)
        self.add(3)
        self.assertTrue(all(n.master_candidate for n in self.config.nodes.values()))

    def test_demoting_one_of_three_candidates_is_allowed(self):
        # pool 10 but only 2 other possible candidates remain: Ganeti allows it
        result = self.ok(set_params("node3.test", master_candidate=False))
        self.assertEqual(result, [["master_candidate", "False"]])
        self.assertFalse(self.node("node3.test").master_candidate)
        self.assertEqual(self.config.node_role(self.node("node3.test")), c.NR_REGULAR)
        # the node dropped its config copy (Ganeti's node_demote_from_mc), keeping a backup
        paths = self.net.paths("node3.test")
        self.assertFalse(os.path.exists(paths.config_file))
        backups = [n for n in os.listdir(os.path.dirname(paths.config_file))
                   if n.startswith("config.data.backup-")]
        self.assertEqual(len(backups), 1, backups)
        self.assertIn(("node3.test", "node_demote_from_mc"), self.net.contacted)
        self.assert_replicated()

    def test_a_demoted_candidate_stays_regular_until_the_pool_is_asked_for(self):
        # as Ganeti (checked on a real cluster; issue 34): SetNodeRole "regular" and
        # gnt-node modify -C no both demote, and only a change of the candidate pool
        # size fills the pool again; other cluster changes leave the node regular
        self.ok(set_params("node3.test", master_candidate=False, drained=False,
                           offline=False))  # what RAPI's SetNodeRole "regular" sends
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "max_running_jobs": 21})
        self.assertEqual(self.config.node_role(self.node("node3.test")), c.NR_REGULAR)
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 10})
        self.assertEqual(self.config.node_role(self.node("node3.test")), c.NR_MCANDIDATE)

    def test_more_than_one_state(self):
        msg = "Can't set the node into more than one state at the same time"
        for params in ({"master_capable": True, "vm_capable": True},
                       {"master_candidate": True, "drained": True},
                       {"offline": True, "drained": True},
                       {"master_candidate": True, "vm_capable": True}):
            self.fails(set_params("node2.test", **params), ECODE_INVAL, msg)

    def test_nothing_to_change(self):
        self.fails(set_params("node2.test"), ECODE_INVAL, "Please pass at least one "
                                                          "modification")

    def test_master_role_flags_only_via_failover(self):
        msg = "The master role can be changed only via master-failover"
        for params in ({"master_candidate": False}, {"master_candidate": True},
                       {"drained": False}, {"offline": True}):
            self.fails(set_params(MASTER, **params), ECODE_INVAL, msg)
        self.fails(set_params(MASTER, master_capable=False), ECODE_STATE,
                   "Master must remain master capable")

    def test_secondary_ip_on_single_homed_cluster(self):
        msg = ("Changing the secondary ip on a single-homed cluster requires the --force "
               "option to be passed, and the target node to be the master")
        self.fails(set_params("node2.test", secondary_ip="127.0.9.2"), ECODE_INVAL, msg)
        self.fails(set_params("node2.test", secondary_ip="127.0.9.2", force=True),
                   ECODE_INVAL, msg)
        self.fails(set_params(MASTER, secondary_ip="127.0.9.1"), ECODE_INVAL, msg)
        self.fails(set_params("node2.test", secondary_ip="::1"), ECODE_INVAL,
                   "needs to be a valid IPv4 address")
        # the master with --force makes the cluster multi-homed
        status, results, log = self.run_job(set_params(MASTER, secondary_ip="127.0.9.1",
                                                       force=True))
        self.assertEqual(status, "success")
        self.assertEqual(results[-1], [["secondary_ip", "127.0.9.1"]])
        self.assertTrue(any("single-homed to multi-homed" in m for m in log), log)
        # now a node may get its own, but not its primary back (unless master + force)
        self.ok(set_params("node2.test", secondary_ip="127.0.9.2"))
        self.fails(set_params("node2.test", secondary_ip="127.0.1.2"), ECODE_INVAL,
                   "Cannot set the secondary IP to be the same as the primary IP")

    def test_drain_undrain_and_ineffective_unset(self):
        result = self.ok(set_params("node3.test", drained=True))
        self.assertEqual(result, [["master_candidate", "False"], ["drained", "True"]])
        # unsetting a flag that is not set is ignored, with Ganeti's info line
        status, results, log = self.run_job(set_params("node3.test", offline=False))
        self.assertEqual((status, results[-1]), ("success", []))
        self.assertIn(" - INFO: Ignoring request to unset flag offline, already unset", log)
        # undraining promotes the node again (the pool wants it)
        status, results, log = self.run_job(set_params("node3.test", drained=False))
        self.assertEqual(results[-1], [["master_candidate", "True"], ["drained", "False"]])
        self.assertIn(" - INFO: Auto-promoting node to master candidate", log)
        self.assertTrue(self.node("node3.test").master_candidate)

    def test_candidate_flag_on_drained_node_clears_drained(self):
        self.ok(set_params("node3.test", drained=True))
        result = self.ok(set_params("node3.test", master_candidate=True))
        self.assertEqual(result, [["master_candidate", "True"], ["drained", "False"]])
        node = self.node("node3.test")
        self.assertEqual((node.master_candidate, node.drained), (True, False))

    def test_not_master_capable_demotes_then_capable_promotes(self):
        status, results, log = self.run_job(set_params("node2.test", master_capable=False))
        self.assertEqual(results[-1], [["master_capable", "False"],
                                       ["master_candidate", "False"]])
        self.assertIn(" - INFO: Demoting from master candidate", log)
        self.fails(set_params("node2.test", master_candidate=True), ECODE_STATE,
                   "Node node2.test is not master capable, cannot make it a master "
                   "candidate")
        result = self.ok(set_params("node2.test", master_capable=True))
        self.assertEqual(result, [["master_capable", "True"], ["master_candidate", "True"]])

    def test_capabilities_are_reported_even_unchanged(self):
        self.assertEqual(self.ok(set_params("node2.test", vm_capable=True)),
                         [["vm_capable", "True"]])

    def test_offline_and_back(self):
        result = self.ok(set_params("node2.test", offline=True))
        self.assertEqual(result, [["master_candidate", "False"], ["offline", "True"]])
        status, results, log = self.run_job(set_params("node2.test", offline=False))
        self.assertEqual(results[-1], [["master_candidate", "True"], ["offline", "False"]])
        self.assertTrue(any("Transitioning node from offline to online state" in m
                            for m in log), log)
        # a node that does not answer stays offline
        self.ok(set_params("node2.test", offline=True))
        self.net.down.add("node2.test")
        self.fails(set_params("node2.test", offline=False), ECODE_STATE,
                   "is being de-offlined but fails to report its version")

    def test_powered_needs_out_of_band(self):
        self.fails(set_params("node2.test", powered=True, drained=True), ECODE_STATE,
                   "Unable to change powered state for node node2.test as it does not "
                   "support out-of-band handling")


class PoolOfThreeTest(NodesTestCase):
    """Pool 3 with four nodes: node4 is regular."""

    pool_size = 3

    def setUp(self) -> None:
        super().setUp()
        for k in (2, 3, 4):
            self.add(k)

    def test_auto_promote_promotes_other_and_reports(self):
        self.fails(set_params("node2.test", drained=True), ECODE_STATE,
                   "Not enough master candidates, please pass auto promote option")
        status, results, log = self.run_job(set_params("node2.test", drained=True,
                                                       auto_promote=True))
        self.assertEqual(status, "success")
        self.assertIn(" - INFO: Promoted nodes to master candidate role: node4.test", log)
        self.assertTrue(self.node("node4.test").master_candidate)
        self.assert_replicated()

    def test_without_auto_promote_nobody_else_is_promoted(self):
        self.ok(set_params("node4.test", master_capable=False))
        # node2 may leave: the only other possible candidates are master and node3
        self.ok(set_params("node2.test", master_candidate=False))
        self.assertEqual(sorted(n.name for n in self.config.nodes.values()
                                if n.master_candidate), [MASTER, "node3.test"])


OOB_SCRIPT = """#!/bin/sh
# test out-of-band program: logs its arguments, answers per command
echo "$1 $2" >> "{log}"
case "$1" in
  health) echo '[["disk", "OK"], ["fan", "WARNING"]]' ;;
  power-status) echo '{{"powered": true}}' ;;
  power-on|power-off|power-cycle) ;;
esac
case "$2" in
  node3.test) exit 3 ;;
esac
"""


@pytest.mark.subprocess
class OutOfBandTest(NodesTestCase):
    extra_nodes = 2

    def setUp(self) -> None:
        super().setUp()
        self.add(2)
        self.add(3)
        tmp = os.path.abspath(self.mktemp())
        os.makedirs(tmp)
        self.log = os.path.join(tmp, "oob.log")
        self.script = os.path.join(tmp, "oob.sh")
        with open(self.script, "w") as f:
            f.write(OOB_SCRIPT.format(log=self.log))
        os.chmod(self.script, stat.S_IRWXU)

    def oob(self, command, names=(), **params):
        return {"OP_ID": "OP_OOB_COMMAND", "command": command, "node_names": list(names),
                **params}

    def calls(self):
        with open(self.log) as f:
            return f.read().split("\n")[:-1]

    def test_no_program_is_unavailable(self):
        result = self.ok(self.oob("health"))
        self.assertEqual(result, [[[0, MASTER], [c.RS_UNAVAIL, None]],
                                  [[0, "node2.test"], [c.RS_UNAVAIL, None]],
                                  [[0, "node3.test"], [c.RS_UNAVAIL, None]]])

    def test_health_power_and_errors(self):
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                 "ndparams": {c.ND_OOB_PROGRAM: self.script}})
        status, results, log = self.run_job(self.oob("health", ["node2.test", "node3"]))
        self.assertEqual(status, "success", results)
        self.assertEqual(results[-1][0], [[0, "node2.test"],
                                          [0, [["disk", "OK"], ["fan", "WARNING"]]]])
        self.assertEqual(results[-1][1], [[0, "node3.test"], [c.RS_NODATA, None]])
        self.assertIn(" - WARNING: Item 'fan' on node 'node2.test' has status 'WARNING'", log)
        self.assertTrue(any("Out-of-band RPC failed on node 'node3.test'" in m
                            and "exited with exit code 3" in m for m in log), log)
        # run on the master's node daemon, with the node's name
        self.assertIn(("node1.test", "run_oob"), self.net.contacted)
        self.assertEqual(self.calls(), ["health node2.test", "health node3.test"])
        # power-status and power-on (power recorded in the config)
        result = self.ok(self.oob("power-status", ["node2.test"]))
        self.assertEqual(result, [[[0, "node2.test"], [0, {"powered": True}]]])
        self.ok(self.oob("power-on", ["node2.test"]))
        self.assertTrue(self.node("node2.test").powered)
        rows = self.client.call("QueryNodes", ["node2.test"], ["powered"], False)
        self.assertEqual(rows, [[True]])
        # power-off needs the node offline first (or ignore_status); never the master
        self.fails(self.oob("power-off", ["node2.test"]), ECODE_STATE,
                   "Cannot power off node node2.test because it is not marked offline")
        self.fails(self.oob("power-off", [MASTER], ignore_status=True), ECODE_INVAL,
                   f"Operating on the master node {MASTER} is not allowed for power-off; "
                   f"run '{self.script} power-off {MASTER}'")
        self.ok(self.oob("power-off", ["node2.test"], ignore_status=True))
        self.assertFalse(self.node("node2.test").powered)
        # an offline node with out-of-band support must be powered to come back
        self.ok(set_params("node2.test", offline=True))
        self.fails(set_params("node2.test", offline=False), ECODE_STATE,
                   "needs to be turned on before its offline status can be reset")
        # power-cycle of all nodes skips the master
        result = self.ok(self.oob("power-cycle"))
        self.assertEqual([r[0][1] for r in result], ["node2.test", "node3.test"])
        self.fails(self.oob("health", ["nosuch"]), ECODE_NOENT, "nosuch")

    def test_bad_payload_and_timeout(self):
        with open(self.script, "w") as f:
            f.write("#!/bin/sh\nif [ \"$1\" = health ]; then echo '{\"x\": 1}'; "
                    "else sleep 5; fi\n")
        self.ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                 "ndparams": {c.ND_OOB_PROGRAM: self.script}})
        status, results, log = self.run_job(self.oob("health", ["node2.test"]))
        self.assertEqual(results[-1], [[[0, "node2.test"], [c.RS_NODATA, None]]])
        self.assertTrue(any("is not valid" in m and "expected to return a list" in m
                            for m in log), log)
        status, results, log = self.run_job(self.oob("power-status", ["node2.test"],
                                                     timeout=1))
        self.assertEqual(results[-1], [[[0, "node2.test"], [c.RS_NODATA, None]]])
        self.assertTrue(any("timeout after 1s" in m for m in log), log)


class QueryNamesTest(NodesTestCase):
    extra_nodes = 2

    def setUp(self) -> None:
        super().setUp()
        self.add(2)
        self.add(3)

    def test_query_by_unknown_name_is_unknown_entity(self):
        from ganeti.core.errors import OpPrereqError
        for what, label in (("node", "Node"), ("group", "NodeGroup")):
            for qfilter in (["|", ["=", "name", "nosuch"]], ["=", "name", "nosuch"]):
                with self.assertRaises(OpPrereqError) as cm:
                    self.client.call("Query", what, ["name"], qfilter)
                self.assertEqual(cm.exception.args, (f"{label} name nosuch not found",
                                                     ECODE_NOENT))
        # requested names: in the order given, once per mention, short names expanded
        answer = self.client.call("Query", "node", ["name"],
                                  ["|", ["=", "name", "node3"], ["=", "name", MASTER],
                                   ["=", "name", "node3"]])
        self.assertEqual([row[0][1] for row in answer["data"]],
                         ["node3.test", MASTER, "node3.test"])
        # a filter on another field is no name request
        answer = self.client.call("Query", "node", ["name"], ["|", ["=", "uuid", "x"]])
        self.assertEqual(answer["data"], [])

    def test_classic_queries_skip_unknown_names(self):
        self.assertEqual(self.client.call("QueryNodes", ["nosuch"], ["name"], False), [])
        self.assertEqual(self.client.call("QueryNodes", ["node3", "nosuch", "node2"],
                                          ["name"], False),
                         [["node2.test"], ["node3.test"]])
        self.assertEqual(self.client.call("QueryGroups", ["default", "nosuch"], ["name"],
                                          False), [["default"]])

    def test_ndparam_field_metadata(self):
        fields = {f["name"]: f for f in self.client.call("QueryFields", "node",
                                                         None)["fields"]}
        expect = {
            "ndp/cpu_speed": ("ndp/cpu_speed", "float"),
            "ndp/exclusive_storage": ("ExclusiveStorage", "bool"),
            "ndp/oob_program": ("OutOfBandProgram", "other"),
            "ndp/ovs": ("OpenvSwitch", "bool"),
            "ndp/ovs_link": ("OpenvSwitchLink", "other"),
            "ndp/ovs_name": ("OpenvSwitchName", "other"),
            "ndp/spindle_count": ("SpindleCount", "number"),
            "ndp/ssh_port": ("ndp/ssh_port", "number"),
        }
        for name, (title, kind) in expect.items():
            self.assertEqual((fields[name]["title"], fields[name]["kind"]), (title, kind),
                             name)
        self.assertEqual(json.dumps(fields["ndp/ovs"]["doc"]), '"The \\"ovs\\" node parameter"')
