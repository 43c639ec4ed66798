"""RAPI node and node group resources against a real master daemon on a fake clock,
with in-process node daemons (node1.test the master, node2.test added)."""

from __future__ import annotations

from ganeti.rapi import errors as http
from ganeti.rapi.resources.groups import G_FIELDS
from ganeti.rapi.resources.nodes import N_FIELDS
from tests.fakes.rapi import RapiTestCase

#: What htools read of each node (src/Ganeti/HTools/Backend/Rapi.hs).
HTOOLS_NODE_FIELDS = ("name", "offline", "drained", "vm_capable", "ndparams", "group.uuid",
                      "sptotal", "spfree", "mtotal", "mnode", "mfree", "dtotal", "dfree",
                      "ctotal", "cnos", "tags")


class NodesTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.add_node()

    def test_list(self):
        self.assertEqual(self.get("/2/nodes"), [
            {"id": "node1.test", "uri": "/2/nodes/node1.test"},
            {"id": "node2.test", "uri": "/2/nodes/node2.test"}])
        self.assertEqual(self.luxi.calls, [("QueryNodes", ([], ["name"], False))])

    def test_bulk(self):
        nodes = self.get("/2/nodes", "bulk=1&reason=htools")
        self.assertEqual([n["name"] for n in nodes], ["node1.test", "node2.test"])
        for node in nodes:
            self.assertEqual(list(node), list(N_FIELDS))
            for name in HTOOLS_NODE_FIELDS:
                self.assertIn(name, node)
            for name in ("mtotal", "mfree", "dtotal", "dfree", "ctotal", "cnos"):
                self.assertIsInstance(node[name], int, name)
            # no LVM template: no spindle report, null as in Ganeti (htools take 0)
            self.assertEqual((node["sptotal"], node["spfree"]), (None, None))
            self.assertIn("exclusive_storage", node["ndparams"])
            self.assertIn("spindle_count", node["ndparams"])
        self.assertEqual([n["role"] for n in nodes], ["M", "C"])
        self.assertEqual(nodes[1]["pip"], "127.0.1.2")

    def test_offline_node_has_null_live_values(self):
        self.succeeds(self.call("PUT", "/2/nodes/node2.test/role", "", "offline"))
        node = self.get("/2/nodes/node2.test")
        self.assertTrue(node["offline"])
        self.assertIsNone(node["mfree"])
        self.assertEqual(node["role"], "O")

    def test_one_node(self):
        node = self.get("/2/nodes/node2.test", "lock=1")
        self.assertEqual(set(node), {*N_FIELDS, "secondary_ip"})
        self.assertEqual(node["secondary_ip"], node["sip"])
        self.assertEqual(self.luxi.calls, [("QueryNodes", (["node2.test"], list(N_FIELDS),
                                                           True))])

    def test_unknown_node_is_404(self):
        err = self.refused(http.HttpNotFound, "GET", "/2/nodes/nope")
        # as Ganeti's RAPI: QueryNodes skips unknown names, a plain 404
        self.assertEqual(err.message, "Not Found")
        self.refused(http.HttpNotFound, "GET", "/2/nodes/nope/role")
        self.refused(http.HttpNotFound, "GET", "/2/nodes/nope/tags")
        self.refused(http.HttpBadRequest, "GET", "/2/nodes/node1.test", "lock=yes")

    def test_role(self):
        self.assertEqual(self.get("/2/nodes/node1.test/role"), "master")
        self.assertEqual(self.get("/2/nodes/node2.test/role"), "master-candidate")
        job = self.succeeds(self.call("PUT", "/2/nodes/node2.test/role",
                                      "force=1&auto-promote=1&reason=repair", "drained"))
        (op,) = job["ops"]
        self.assertEqual(
            (op["OP_ID"], op["node_name"], op["drained"], op.get("offline"),
             op.get("master_candidate"), op["force"], op["auto_promote"]),
            ("OP_NODE_SET_PARAMS", "node2.test", True, None, None, True, True))
        self.assertEqual(op["reason"][1][0], "gnt:library:rlib2:nodes_name_role")
        self.assertEqual(self.get("/2/nodes/node2.test/role"), "drained")
        (op,) = self.succeeds(self.call("PUT", "/2/nodes/node2.test/role", "",
                                        "regular"))["ops"]
        # the opcode as Ganeti's unit leaves it: "offline" (already unset) dropped, and
        # master_candidate True when the node promoted itself (see below)
        self.assertEqual((op["master_candidate"], op.get("offline"), op["drained"],
                          op["force"]), (True, None, False, False))
        # as Ganeti's: a node leaving "drained" promotes itself while the pool wants it
        self.assertEqual(self.get("/2/nodes/node2.test/role"), "master-candidate")
        self.succeeds(self.call("PUT", "/2/nodes/node2.test/role", "", "master-candidate"))
        self.assertEqual(self.get("/2/nodes/node2.test/role"), "master-candidate")

    def test_bad_roles_submit_nothing(self):
        err = self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node2.test/role", "",
                           "master")
        self.assertIn("Can't set 'master' role", err.message)
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node2.test/role", "", "boss")
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node2.test/role", "",
                     {"role": "drained"})
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node2.test/role", "", None)
        self.refused(http.HttpBadRequest, "PUT", "/2/nodes/node2.test/role", "force=yes",
                     "drained")

    def test_modify(self):
        job = self.succeeds(self.call("POST", "/2/nodes/node2.test/modify", "",
                                      {"ndparams": {"ssh_port": 2222}}))
        (op,) = job["ops"]
        self.assertEqual((op["node_name"], op["ndparams"]), ("node2.test", {"ssh_port": 2222}))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:nodes_name_modify")
        self.assertEqual(self.get("/2/nodes/node2.test")["ndparams"]["ssh_port"], 2222)

    def test_modify_bad_bodies(self):
        url = "/2/nodes/node2.test/modify"
        err = self.refused(http.HttpBadRequest, "POST", url, "", {"node_name": "node1.test"})
        self.assertEqual(err.message, "Can't overwrite static parameters 'node_name'")
        self.refused(http.HttpBadRequest, "POST", url, "", {"offline": "yes"})
        self.refused(http.HttpBadRequest, "POST", url, "", {"colour": "blue"})
        self.refused(http.HttpBadRequest, "POST", url, "", {"ndparams": {"bogus": 1}})
        self.refused(http.HttpBadRequest, "POST", url, "", ["offline"])

    def test_tags(self):
        self.assertEqual(self.get("/2/nodes/node2.test/tags"), [])
        (op,) = self.succeeds(self.call("PUT", "/2/nodes/node2.test/tags",
                                        "tag=rack:1&tag=ssd"))["ops"]
        self.assertEqual((op["kind"], op["name"]), ("node", "node2.test"))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:nodes_name_tags")
        self.assertEqual(self.get("/2/nodes/node2.test/tags"), ["rack:1", "ssd"])
        self.assertIn("ssd", self.get("/2/nodes/node2.test")["tags"])
        self.succeeds(self.call("DELETE", "/2/nodes/node2.test/tags", "tag=ssd"))
        self.assertEqual(self.get("/2/nodes/node2.test/tags"), ["rack:1"])


class GroupsTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.add_node()

    def test_list_and_one(self):
        self.assertEqual(self.get("/2/groups"),
                         [{"name": "default", "uri": "/2/groups/default"}])
        (bulk,) = self.get("/2/groups", "bulk=1")
        self.assertEqual(list(bulk), list(G_FIELDS))
        self.assertEqual((bulk["name"], bulk["node_cnt"], bulk["node_list"]),
                         ("default", 2, ["node1.test", "node2.test"]))
        for key in ("uuid", "alloc_policy", "ipolicy", "tags"):  # what htools reads
            self.assertIn(key, bulk)
        self.assertEqual(self.get("/2/groups/default", "lock=0"), bulk)
        self.refused(http.HttpNotFound, "GET", "/2/groups/nope")

    def test_create(self):
        (op,) = self.succeeds(self.call("POST", "/2/groups", "",
                                        {"name": "rack2", "alloc_policy": None}))["ops"]
        self.assertEqual((op["OP_ID"], op["group_name"], op["dry_run"]),
                         ("OP_GROUP_ADD", "rack2", False))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:groups")
        self.assertEqual(self.get("/2/groups/rack2")["alloc_policy"], "preferred")
        self.succeeds(self.call("POST", "/2/groups", "", {"group_name": "rack3",
                                                         "alloc_policy": "last_resort"}))
        self.assertEqual([g["name"] for g in self.get("/2/groups")],
                         ["default", "rack2", "rack3"])

    def test_create_dry_run(self):
        (op,) = self.succeeds(self.call("POST", "/2/groups", "dry-run=1",
                                        {"name": "rack9"}))["ops"]
        self.assertTrue(op["dry_run"])
        self.refused(http.HttpNotFound, "GET", "/2/groups/rack9")

    def test_create_bad_bodies(self):
        err = self.refused(http.HttpBadRequest, "POST", "/2/groups", "",
                           {"name": "a", "group_name": "b"})
        self.assertEqual(err.message,
                         "Parameter 'name' was renamed to 'group_name', but both are specified")
        self.refused(http.HttpBadRequest, "POST", "/2/groups", "", {"name": "a",
                                                                    "dry_run": True})
        self.refused(http.HttpBadRequest, "POST", "/2/groups", "", {})
        self.refused(http.HttpBadRequest, "POST", "/2/groups", "", {"name": 3})
        self.refused(http.HttpBadRequest, "POST", "/2/groups", "",
                     {"name": "a", "alloc_policy": "sometimes"})
        self.refused(http.HttpBadRequest, "POST", "/2/groups", "dry-run=x", {"name": "a"})

    def test_modify_rename_assign_remove(self):
        self.succeeds(self.call("POST", "/2/groups", "", {"name": "rack2"}))
        (op,) = self.succeeds(self.call("PUT", "/2/groups/rack2/modify", "", {
            "custom_ndparams": {"ssh_port": 2200}, "alloc_policy": "last_resort"}))["ops"]
        self.assertEqual((op["group_name"], op["ndparams"]), ("rack2", {"ssh_port": 2200}))
        group = self.get("/2/groups/rack2")
        self.assertEqual((group["alloc_policy"], group["custom_ndparams"]),
                         ("last_resort", {"ssh_port": 2200}))

        self.succeeds(self.call("PUT", "/2/groups/rack2/rename", "", {"new_name": "rack3"}))
        self.refused(http.HttpNotFound, "GET", "/2/groups/rack2")

        (op,) = self.succeeds(self.call("PUT", "/2/groups/rack3/assign-nodes", "force=1",
                                        {"nodes": ["node2.test"]}))["ops"]
        self.assertEqual((op["group_name"], op["nodes"], op["force"], op["dry_run"]),
                         ("rack3", ["node2.test"], True, False))
        self.assertEqual(self.get("/2/groups/rack3")["node_list"], ["node2.test"])
        self.assertEqual(self.get("/2/nodes/node2.test")["group.uuid"],
                         self.get("/2/groups/rack3")["uuid"])

        failed = self.wait_job(self.call("DELETE", "/2/groups/rack3"))
        self.assertEqual(failed["status"], "error")
        self.succeeds(self.call("PUT", "/2/groups/default/assign-nodes", "",
                                {"nodes": ["node2.test"]}))
        (op,) = self.succeeds(self.call("DELETE", "/2/groups/rack3", "reason=gone"))["ops"]
        self.assertEqual((op["OP_ID"], op["group_name"]), ("OP_GROUP_REMOVE", "rack3"))
        self.assertEqual([g["name"] for g in self.get("/2/groups")], ["default"])

    def test_bad_modify_rename_assign_remove(self):
        url = "/2/groups/default"
        self.refused(http.HttpBadRequest, "PUT", url + "/modify", "",
                     {"custom_ndparams": {}, "ndparams": {}})
        self.refused(http.HttpBadRequest, "PUT", url + "/modify", "", {"group_name": "x"})
        self.refused(http.HttpBadRequest, "PUT", url + "/modify", "", {"ipolicy": "big"})
        self.refused(http.HttpBadRequest, "PUT", url + "/rename", "", {})
        self.refused(http.HttpBadRequest, "PUT", url + "/rename", "", {"new_name": ""})
        self.refused(http.HttpBadRequest, "PUT", url + "/assign-nodes", "", {})
        self.refused(http.HttpBadRequest, "PUT", url + "/assign-nodes", "",
                     {"nodes": "node2.test"})
        self.refused(http.HttpBadRequest, "PUT", url + "/assign-nodes", "force=2x",
                     {"nodes": ["node2.test"]})
        self.refused(http.HttpBadRequest, "DELETE", url, "", {"force": True})

    def test_tags(self):
        self.succeeds(self.call("PUT", "/2/groups/default/tags", "tag=blue"))
        self.assertEqual(self.get("/2/groups/default/tags"), ["blue"])
        (op,) = self.succeeds(self.call("DELETE", "/2/groups/default/tags",
                                        "tag=blue&dry-run=0"))["ops"]
        self.assertEqual((op["kind"], op["name"]), ("nodegroup", "default"))
        self.assertEqual(self.get("/2/groups/default/tags"), [])
        self.refused(http.HttpNotFound, "GET", "/2/groups/nope/tags")
