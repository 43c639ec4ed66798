"""RAPI placement resources against a real master daemon on a fake clock, with
in-process nodes and allocators: /2/instances-multi-alloc (Ganeti's), and our
/2/placement/capacity and /2/placement/balance."""

from __future__ import annotations

import json

from ganeti.rapi import errors as http
from tests.fakes.allocators import InlineAllocators, answer
from tests.fakes.rapi import RapiTestCase


def place_some(data):
    names = [i["name"] for i in data["request"]["instances"]]
    return answer([[[n, ["node2.test"]] for n in names[:-1]], names[-1:]])


def capacity(data):
    return answer({"count": 2, "allocations": [["node1.test"], ["node2.test"]],
                   "limit": "FailMem"})


def instance_body(name):
    return {"name": name, "os": "busybox", "disk_template": "diskless", "disks": [],
            "nics": [{}], "mode": "create", "no_install": True, "start": False,
            "name_check": False, "ip_check": False,
            "beparams": {"maxmem": 128, "minmem": 128}}


class PlacementTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.add_node()
        self.allocators = InlineAllocators({"some": place_some, "ganeti-place": capacity})
        self.master.daemon.allocators = self.allocators

    def test_features_are_ganetis(self):
        # Ganeti 3.0 serves the resource but has no feature string for it
        # (rlib2.ALL_FEATURES); its client does not ask
        self.assertNotIn("instances-multi-alloc", self.get("/2/features"))

    def test_multi_alloc_places_what_fits(self):
        job_id = self.call("POST", "/2/instances-multi-alloc", body={
            "iallocator": "some",
            "instances": [instance_body(f"m{i}.test") for i in range(3)]})
        job = self.succeeds(job_id)
        result = job["opresult"][0]
        self.assertEqual((result["allocatable"], result["failed"]),
                         (["m0.test", "m1.test"], ["m2.test"]))
        for _ok, created in result["jobs"]:
            self.succeeds(created)
        cfg = self.master.config
        self.assertEqual(cfg.nodes[cfg.instance_by_name("m0.test").primary_node].name,
                         "node2.test")
        self.assertIsNone(cfg.instance_by_name("m2.test"))

    def test_multi_alloc_refusals(self):
        err = self.refused(http.HttpBadRequest, "POST", "/2/instances-multi-alloc",
                           body={"iallocator": "some"})
        self.assertEqual(str(err.args[0]) if err.args else str(err),
                         "Request is missing required 'instances' field in body")

    def test_capacity_runs_the_built_in_by_default(self):
        job = self.succeeds(self.call("POST", "/2/placement/capacity", body={
            "disk_template": "diskless", "memory": 512, "vcpus": 1, "disks": []}))
        self.assertEqual(json.loads(job["opresult"][0])["result"]["count"], 2)
        request = self.allocators.inputs("ganeti-place")[0]["request"]
        self.assertEqual((request["type"], request["memory"]), ("capacity", 512))

    def test_balance_takes_max_moves(self):
        self.allocators.programs["bal"] = lambda _d: answer(
            {"initial_score": 2.0, "final_score": 1.0, "moves": []})
        job = self.succeeds(self.call("POST", "/2/placement/balance", body={
            "iallocator": "bal", "max_moves": 3, "min_gain": 0.1}))
        self.assertEqual(json.loads(job["opresult"][0])["result"]["final_score"], 1.0)
        self.assertEqual(self.allocators.inputs("bal")[0]["request"],
                         {"type": "balance", "max_moves": 3, "group": None,
                          "min_gain": 0.1})
