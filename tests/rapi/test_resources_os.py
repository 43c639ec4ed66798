"""RAPI /2/os: an OP_OS_DIAGNOSE job submitted and waited for, Ganeti's answer (names
with their variants), ?bulk=1 objects, and the OpenAPI declaration."""

from __future__ import annotations

import os

from ganeti.noded.backend.context import RPCFail
from ganeti.rapi import errors as http
from ganeti.rapi.resources import os as osres
from ganeti.rapi.routes import ROUTES
from tests.fakes.rapi import RapiTestCase
from tests.noded.test_osdefs import make_os


class OsResourceTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.top = self.net.paths("node1.test").os_search_path[0]
        os.makedirs(self.top)
        make_os(self.top, "debian", variants="squeeze\nlenny\n")
        make_os(self.top, "plainos", api="10\n", variants=None, parameters=None,
                skip=("verify",))
        make_os(self.top, "broken", api="5\n")

    def test_names_with_variants(self):
        self.assertEqual(self.get("/2/os"), ["debian+lenny", "debian+squeeze", "plainos"])
        [job_id] = self.luxi.job_ids
        status, results, _ = self.master.finish(job_id)
        self.assertEqual(status, "success")
        op = self.master.daemon.queue.visible[job_id].ops[0].input
        # as Ganeti's rlib2: no "gnt:library:rlib2:os" entry, only the queue's own
        self.assertEqual((op["OP_ID"], op["output_fields"], [r[0] for r in op["reason"]]),
                         ("OP_OS_DIAGNOSE", ["name", "variants"], ["gnt:opcode:os_diagnose"]))

    def test_bulk(self):
        self.master.finish(self.master.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                               "hidden_os": [["add", "plainos"]]}))
        rows = self.get("/2/os", "bulk=1")
        # every OS: its status is in the answer
        self.assertEqual([(r["name"], r["valid"], r["hidden"]) for r in rows],
                         [("broken", False, False), ("debian", True, False),
                          ("plainos", True, True)])
        self.assertEqual(rows[1], {
            "name": "debian", "valid": True, "variants": ["lenny", "squeeze"],
            "parameters": [["marker", "A line to print"], ["size-mb", "The size"]],
            "api_versions": [20], "blacklisted": False, "hidden": False, "trusted": True})

    def test_bad_query_and_failed_job(self):
        self.refused(http.HttpBadRequest, "GET", "/2/os", "bulk=x")
        def fail(ctx):
            raise RPCFail("no way")
        self.net.handlers["os_diagnose"] = fail
        # the nodes fail: no OS is valid anywhere, the list is empty (not an error)
        self.assertEqual(self.get("/2/os"), [])

    def test_declared_in_the_route_table(self):
        [route] = [r for r in ROUTES if r.pattern == "/2/os"]
        self.assertEqual(sorted(route.methods), ["GET"])
        self.assertIs(route.methods["GET"].handler, osres.get_os)
