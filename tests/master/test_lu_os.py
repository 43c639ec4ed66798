"""OS definitions on the master: OP_OS_DIAGNOSE, Query("os"), OP_QUERY, and the per-OS
cluster parameters of OP_CLUSTER_SET_PARAMS (os_hvp, osparams,
osparams_private_cluster, hidden_os, blacklisted_os).

A whole master daemon on a fake clock whose nodes are in-process node daemons
(tests/fakes/nodes.py) with real OS directories under their roots.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants
from ganeti.master.query import osqueries
from tests.fakes.nodes import master_with_nodes
from tests.noded.test_osdefs import make_os


class OsLuTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 3)
        for k in (2, 3):
            self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                         "primary_ip": f"127.0.1.{k}", "readd": False})
        self.uuid = {n.name: u for u, n in self.master.config.nodes.items()}
        self.tops = {name: self.net.paths(name).os_search_path[0]
                     for name in ("node1.test", "node2.test", "node3.test")}
        for top in self.tops.values():
            os.makedirs(top)

    def job(self, *ops: dict[str, Any]) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit(*ops))

    def run_ok(self, *ops: dict[str, Any]) -> list[Any]:
        status, results, log = self.job(*ops)
        self.assertEqual(status, "success", (results, log))
        return results

    def diagnose(self, fields: list[str], names: list[str] | None = None) -> list[Any]:
        op = {"OP_ID": "OP_OS_DIAGNOSE", "output_fields": fields}
        if names is not None:
            op["names"] = names
        return self.run_ok(op)[0]

    def everywhere(self, name: str, **kw: Any) -> None:
        for top in self.tops.values():
            make_os(top, name, **kw)

    def test_list_merges_the_nodes(self):
        self.everywhere("debian", variants="squeeze\nlenny\n")
        self.everywhere("busybox", variants="default\n")
        make_os(self.tops["node1.test"], "partial")  # missing on two nodes: invalid
        self.assertEqual(self.diagnose(["name", "variants"]),
                         [["busybox", ["default"]], ["debian", ["lenny", "squeeze"]]])
        rows = self.diagnose(["name", "valid", "variants", "parameters", "api_versions",
                              "trusted"])
        self.assertEqual(rows[2], ["partial", False, ["default", "other"],
                                   [["marker", "A line to print"], ["size-mb", "The size"]],
                                   [20], True])

    def test_variants_parameters_and_apis_are_those_all_nodes_agree_on(self):
        make_os(self.tops["node1.test"], "x", api="20\n15\n", variants="a\nb\nc\n")
        make_os(self.tops["node2.test"], "x", api="20\n", variants="b\nc\n",
                parameters="marker A line to print\n")
        make_os(self.tops["node3.test"], "x", api="20\n10\n", variants="c\nb\n")
        [row] = self.diagnose(["name", "valid", "variants", "parameters", "api_versions"])
        self.assertEqual(row, ["x", True, ["b", "c"], [["marker", "A line to print"]], [20]])

    def test_node_status_is_keyed_by_node_uuid(self):
        self.everywhere("debian")
        second = self.net.paths("node2.test").os_search_path[1]
        make_os(second, "debian", api="15\n")
        [[name, status]] = self.diagnose(["name", "node_status"])
        self.assertEqual(name, "debian")
        self.assertEqual(sorted(status), sorted(self.uuid.values()))
        first, shadowed = status[self.uuid["node2.test"]]
        self.assertEqual(first, [os.path.join(self.tops["node2.test"], "debian"), True, "",
                                 ["default", "other"],
                                 [["marker", "A line to print"], ["size-mb", "The size"]],
                                 [20], True])
        self.assertEqual(shadowed[:3], [os.path.join(second, "debian"), True, ""])

    def test_offline_or_failing_nodes_do_not_count(self):
        self.everywhere("debian")
        make_os(self.tops["node1.test"], "only1")
        make_os(self.tops["node2.test"], "only1")
        self.net.down.add("node3.test")
        rows = self.diagnose(["name", "valid", "node_status"])
        self.assertEqual([(r[0], r[1], sorted(r[2])) for r in rows], [
            ("debian", True, sorted([self.uuid["node1.test"], self.uuid["node2.test"]])),
            ("only1", True, sorted([self.uuid["node1.test"], self.uuid["node2.test"]]))])
        self.net.down.clear()
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                     "offline": True})
        self.net.contacted.clear()
        self.diagnose(["name"])
        self.assertNotIn("node3.test", [n for n, call in self.net.contacted
                                        if call == "os_diagnose"])

    def test_hidden_blacklisted_and_invalid_are_left_out_unless_asked(self):
        for name in ("a", "hid", "blk"):
            self.everywhere(name)
        make_os(self.tops["node1.test"], "bad", api="5\n")
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "hidden_os": [["add", "hid"]],
                     "blacklisted_os": [["add", "blk"]]})
        self.assertEqual(self.diagnose(["name"]), [["a"]])
        self.assertEqual(self.diagnose(["name", "hidden", "blacklisted", "valid"]), [
            ["a", False, False, True], ["bad", False, False, False],
            ["blk", False, True, True], ["hid", True, False, True]])
        self.assertEqual(self.diagnose(["name", "hidden"]), [["a", False], ["hid", True]])
        # names: only those, in the order asked when every status field is shown
        self.assertEqual(self.diagnose(["name", "hidden", "blacklisted", "valid"],
                                       ["hid", "nope", "a"]),
                         [["hid", True, False, True], ["a", False, False, True]])
        self.assertEqual(self.diagnose(["name"], ["hid", "a"]), [["a"]])

    def test_unknown_field_is_refused(self):
        status, results, _ = self.job({"OP_ID": "OP_OS_DIAGNOSE", "output_fields": ["nope"]})
        self.assertEqual(status, "error")
        self.assertIn("Unknown output fields selected: nope", str(results))

    def test_query_and_op_query(self):
        self.everywhere("debian")
        client = self.master.client()
        answer = client.call("Query", constants.QR_OS, ["name", "valid", "variants"], None)
        self.assertEqual([f["name"] for f in answer["fields"]], ["name", "valid", "variants"])
        self.assertEqual(answer["data"], [[[0, "debian"], [0, True], [0, ["default", "other"]]]])
        fields = client.call("QueryFields", constants.QR_OS, None)["fields"]
        self.assertEqual(sorted(f["name"] for f in fields), sorted(osqueries.OS_FIELDS))
        [result] = self.run_ok({"OP_ID": "OP_QUERY", "what": "os", "fields": ["name", "hidden"],
                                "qfilter": ["=", "name", "debian"]})
        self.assertEqual(result["data"], [[[0, "debian"], [0, False]]])

    def test_per_os_parameters(self):
        # API 15: nothing to run (the in-process nodes start no programs)
        self.everywhere("debian", api="15\n", variants="squeeze\nlenny\n",
                        parameters="dhcp Use DHCP\nmirror The mirror\n", skip=("verify",))
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                     "os_hvp": {"debian+lenny": {"fake": {"migration_mode": "live"}}},
                     "osparams": {"debian+lenny": {"dhcp": "yes"}}})
        cluster = self.master.config.cluster
        self.assertEqual(cluster.os_hvp, {"debian+lenny": {"fake": {"migration_mode": "live"}}})
        self.assertEqual(cluster.osparams, {"debian+lenny": {"dhcp": "yes"}})
        [row] = self.diagnose(["name", "os_hvp", "osparams"])
        self.assertEqual(row, ["debian", {"debian+lenny": {"fake": {"migration_mode": "live"}}},
                               {"debian+lenny": {"dhcp": "yes"}}])
        # null removes: a key of osparams, a hypervisor of os_hvp; empty entries go away
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                     "os_hvp": {"debian+lenny": {"fake": None}},
                     "osparams": {"debian+lenny": {"dhcp": None}},
                     "osparams_private_cluster": {"debian+lenny": {"mirror": "m1"}}})
        cluster = self.master.config.cluster
        self.assertEqual((cluster.os_hvp, cluster.osparams, cluster.osparams_private_cluster),
                         ({}, {}, {"debian+lenny": {"mirror": "m1"}}))

    def test_bad_per_os_parameters_change_nothing(self):
        self.everywhere("debian", variants="squeeze\n", parameters="dhcp Use DHCP\n")
        before = self.master.config.cluster.serial_no
        cases = [
            ({"osparams": {"debian+squeeze": {"nope": "1"}}},
             "OS Parameters validation failed on node node1.test: The following parameters "
             "are not supported by the OS debian: nope"),
            ({"osparams": {"debian+sid": {"dhcp": "1"}}},
             "OS 'debian' does not support variant 'sid'"),
            ({"os_hvp": {"debian": {"fake": {"no_such": 1}}}},
             "Unknown parameter 'no_such'"),
        ]
        for params, message in cases:
            status, results, _ = self.job({"OP_ID": "OP_CLUSTER_SET_PARAMS", **params})
            self.assertEqual(status, "error", params)
            self.assertIn(message, str(results))
        self.assertEqual(self.master.config.cluster.serial_no, before)
        # an OS that is not on the master is not checked (Ganeti's: not required)
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "osparams": {"other": {"x": "1"}}})
        self.assertEqual(self.master.config.cluster.osparams, {"other": {"x": "1"}})
