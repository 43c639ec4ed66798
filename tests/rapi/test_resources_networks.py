"""RAPI network resources against a real master daemon on a fake clock: Ganeti's
bodies (rlib2's R_2_networks*), list shapes and errors."""

from __future__ import annotations

from ganeti.rapi import errors as http
from ganeti.rapi.resources.networks import NET_FIELDS
from tests.fakes.rapi import RapiTestCase

BODY = {"network_name": "net1", "network": "10.1.0.0/28", "gateway": "10.1.0.1",
        "network6": None, "gateway6": None, "mac_prefix": None, "add_reserved_ips": None,
        "tags": ["t"]}


class NetworksTest(RapiTestCase):
    def test_create_list_and_one(self):
        (op,) = self.succeeds(self.call("POST", "/2/networks", "", BODY))["ops"]
        self.assertEqual((op["OP_ID"], op["network_name"], op["dry_run"]),
                         ("OP_NETWORK_ADD", "net1", False))
        self.assertEqual(op["reason"][0][0], "gnt:library:rlib2:networks")
        self.succeeds(self.call("POST", "/2/networks", "", {"name": "net2",
                                                           "network": "10.2.0.0/30"}))
        self.assertEqual(self.get("/2/networks"), [
            {"name": "net1", "uri": "/2/networks/net1"},
            {"name": "net2", "uri": "/2/networks/net2"}])
        bulk = self.get("/2/networks", "bulk=1")
        self.assertEqual([list(n) for n in bulk], [list(NET_FIELDS)] * 2)
        one = self.get("/2/networks/net1")
        self.assertEqual(one, bulk[0])
        self.assertEqual({k: one[k] for k in ("network", "gateway", "free_count",
                                              "reserved_count", "map",
                                              "external_reservations", "tags",
                                              "group_list", "inst_list")},
                         {"network": "10.1.0.0/28", "gateway": "10.1.0.1", "free_count": 13,
                          "reserved_count": 3, "map": "XX.............X",
                          "external_reservations": "10.1.0.0, 10.1.0.1, 10.1.0.15",
                          "tags": ["t"], "group_list": [], "inst_list": []})
        self.assertIsNone(bulk[1]["gateway"])
        self.refused(http.HttpNotFound, "GET", "/2/networks/nope")

    def test_bad_bodies_submit_nothing(self):
        err = self.refused(http.HttpBadRequest, "POST", "/2/networks", "",
                           {"name": "a", "network_name": "b", "network": "10.1.0.0/24"})
        self.assertEqual(err.message, "Parameter 'name' was renamed to 'network_name', but "
                                      "both are specified")
        self.refused(http.HttpBadRequest, "POST", "/2/networks", "", {"name": "a"})
        self.refused(http.HttpBadRequest, "POST", "/2/networks", "",
                     {"name": "a", "network": "10.1.0.0/99"})
        self.refused(http.HttpBadRequest, "PUT", "/2/networks/a/connect", "",
                     {"group_name": "default", "network_mode": "bridge",
                      "network_link": "br0"})

    def test_connect_modify_disconnect_delete(self):
        self.succeeds(self.call("POST", "/2/networks", "", BODY))
        (op,) = self.succeeds(self.call("PUT", "/2/networks/net1/connect", "", {
            "group_name": "default", "network_mode": "routed", "network_link": "rt0",
            "network_vlan": ""}))["ops"]
        self.assertEqual((op["OP_ID"], op["network_name"], op["conflicts_check"]),
                         ("OP_NETWORK_CONNECT", "net1", True))
        self.assertEqual(self.get("/2/networks/net1")["group_list"],
                         [["default", "routed", "rt0", ""]])
        job = self.call("DELETE", "/2/networks/net1")
        self.assertEqual(self.wait_job(job)["status"], "error")
        self.succeeds(self.call("PUT", "/2/networks/net1/modify", "",
                                {"gateway": "10.1.0.14", "mac_prefix": "aa:00:02"}))
        net = self.get("/2/networks/net1")
        self.assertEqual((net["gateway"], net["mac_prefix"]), ("10.1.0.14", "aa:00:02"))
        self.succeeds(self.call("PUT", "/2/networks/net1/disconnect", "",
                                {"group_name": "default"}))
        self.succeeds(self.call("PUT", "/2/networks/net1/tags", "tag=x&tag=y"))
        self.assertEqual(self.get("/2/networks/net1/tags"), ["t", "x", "y"])
        (op,) = self.succeeds(self.call("DELETE", "/2/networks/net1", "dry-run=1"))["ops"]
        self.assertTrue(op["dry_run"])
        self.assertEqual(len(self.get("/2/networks")), 1)
        self.succeeds(self.call("DELETE", "/2/networks/net1"))
        self.assertEqual(self.get("/2/networks"), [])
