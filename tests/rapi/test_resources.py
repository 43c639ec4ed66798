"""RAPI resources against a real master daemon on a fake clock: the cluster, job and
query resources (nodes and groups: test_resources_nodes.py)."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from ganeti.core import constants as c
from ganeti.core import errors as gerrors
from ganeti.rapi import errors as http
from ganeti.rapi.resources import jobs
from ganeti.rapi.resources.cluster import FEATURE_RESOURCES, features
from ganeti.rapi.routes import ROUTES
from ganeti.rapi.routing import READ, WRITE, Route, default_access, match
from ganeti.rapi.server import http_error_for
from tests.fakes.clirun import delay_op
from tests.fakes.rapi import RapiTestCase, make_request, run_handler


class RootTest(RapiTestCase):
    def test_root_version_features(self):
        self.assertIsNone(self.get("/"))
        self.assertIsNone(self.get("/2"))
        self.assertEqual(self.get("/version"), 2)
        self.assertEqual(self.get("/2/features"),
                         ["instance-create-reqv1", "instance-reinstall-reqv1",
                          "node-migrate-reqv1", "node-evac-res1"])
        self.assertEqual(self.luxi.calls, [])

    def test_features_only_where_their_resource_exists(self):
        """Ganeti's four features, each advertised only where its resource is served (a
        client, ganeti.rapi.client, picks its request format by them)."""
        self.assertEqual(sorted(FEATURE_RESOURCES), ["instance-create-reqv1",
                                                     "instance-reinstall-reqv1",
                                                     "node-evac-res1", "node-migrate-reqv1"])
        served = set(features(ROUTES))
        for name, (pattern, method) in FEATURE_RESOURCES.items():
            found = [r for r in ROUTES if r.pattern == pattern and method in r.methods]
            self.assertEqual(bool(found), name in served, name)
        migrate = Route("/2/nodes/{node_name}/migrate", {"POST": ROUTES[0].methods["GET"]})
        self.assertIn("node-migrate-reqv1", features([*ROUTES, migrate]))
        without = [r for r in ROUTES if r.pattern != "/2/nodes/{node_name}/evacuate"]
        self.assertNotIn("node-evac-res1", features(without))

    def test_info_with_aliases(self):
        info = self.get("/2/info", "reason=looking")
        self.assertEqual((info["name"], info["master"]), ("cluster.test", "node1.test"))
        self.assertEqual(info["vg_name"], info["volume_group_name"])
        self.assertEqual(info["drbd_helper"], info["drbd_usermode_helper"])
        for key in ("software_version", "protocol_version", "ipolicy", "default_hypervisor",
                    "tags", "enabled_hypervisors", "ctime", "mtime", "uuid"):
            self.assertIn(key, info)
        self.assertEqual(self.luxi.methods(), ["QueryClusterInfo"])

    def test_instances_are_an_empty_list(self):
        self.assertEqual(self.get("/2/instances"), [])
        self.assertEqual(self.get("/2/instances", "bulk=1"), [])
        self.refused(http.HttpBadRequest, "GET", "/2/instances", "bulk=yes")

    def test_openapi_route(self):
        doc = self.get("/2/openapi.json")
        self.assertEqual(doc["openapi"], "3.0.3")
        self.assertIn("/2/nodes/{node_name}/role", doc["paths"])
        self.assertIs(self.get("/2/openapi.json"), doc)  # built once


class ClusterModifyTest(RapiTestCase):
    def test_modify_submits_set_params(self):
        job = self.succeeds(self.call("PUT", "/2/modify", "", {"max_running_jobs": 7}))
        (op,) = job["ops"]
        self.assertEqual((op["OP_ID"], op["max_running_jobs"]), ("OP_CLUSTER_SET_PARAMS", 7))
        self.assertEqual(self.get("/2/info")["max_running_jobs"], 7)

    def test_modify_vg_name(self):
        # no lvm-based template enabled on this cluster: no node is asked
        (op,) = self.succeeds(self.call("PUT", "/2/modify", "", {"vg_name": "fastvg"}))["ops"]
        self.assertEqual(op["vg_name"], "fastvg")
        info = self.get("/2/info")
        self.assertEqual((info["vg_name"], info["volume_group_name"]), ("fastvg", "fastvg"))
        self.succeeds(self.call("PUT", "/2/modify", "", {"vg_name": ""}))
        self.assertIsNone(self.get("/2/info")["vg_name"])
        err = self.refused(http.HttpBadRequest, "PUT", "/2/modify", "", {"vg_name": 5})
        self.assertIn("vg_name", err.message)

    def test_reason_trail(self):
        now = int(self.master.reactor.seconds() * 1e9)
        job_id = self.call("PUT", "/2/modify", "reason=maintenance+window",
                           {"max_tracked_jobs": 30})
        (op,) = self.succeeds(job_id)["ops"]
        self.assertEqual(op["reason"][:2], [["gnt:user", "maintenance window", now],
                                            ["gnt:library:rlib2:cluster_modify", "", now]])
        self.assertEqual(op["reason"][2][0], "gnt:opcode:cluster_set_params")

    def test_reason_trail_without_user_reason(self):
        (op,) = self.succeeds(self.call("PUT", "/2/redistribute-config"))["ops"]
        self.assertEqual(op["OP_ID"], "OP_CLUSTER_REDIST_CONF")
        self.assertEqual([entry[0] for entry in op["reason"]],
                         ["gnt:library:rlib2:redist_config", "gnt:opcode:cluster_redist_conf"])

    def test_depends_is_kept(self):
        first = self.succeeds(self.call("PUT", "/2/redistribute-config"))
        second = self.call("PUT", "/2/modify", "", {"max_running_jobs": 9,
                                                    "depends": [[first["id"], ["success"]]]})
        (op,) = self.succeeds(second)["ops"]
        self.assertEqual(op["depends"], [[first["id"], ["success"]]])

    def test_compression_tools_is_forbidden(self):
        err = self.refused(http.HttpForbidden, "PUT", "/2/modify", "",
                           {"compression_tools": ["gzip"]})
        self.assertIn("compression_tools", err.message)
        self.refused(http.HttpForbidden, "PUT", "/2/modify", "compression_tools=gzip")

    def test_bad_bodies_submit_nothing(self):
        err = self.refused(http.HttpBadRequest, "PUT", "/2/modify", "", {"bogus": 1})
        self.assertTrue(err.message.startswith("Invalid body parameters: "), err.message)
        self.assertIn("'bogus'", err.message)
        err = self.refused(http.HttpBadRequest, "PUT", "/2/modify", "",
                           {"max_running_jobs": "many"})
        self.assertIn("max_running_jobs", err.message)
        self.refused(http.HttpBadRequest, "PUT", "/2/modify", "", {"max_running_jobs": 0})
        err = self.refused(http.HttpBadRequest, "PUT", "/2/modify", "", [1, 2])
        self.assertIn("expected a JSON object", err.message)
        self.refused(http.HttpBadRequest, "PUT", "/2/modify", "", "text")
        self.refused(http.HttpBadRequest, "PUT", "/2/modify", "",
                     {"OP_ID": "OP_NODE_REMOVE"})
        self.refused(http.HttpBadRequest, "PUT", "/2/modify", "",
                     {"depends": [["x", ["success"]]]})

    def test_reason_in_body_is_a_static_parameter(self):
        err = self.refused(http.HttpBadRequest, "PUT", "/2/modify", "",
                           {"reason": [["me", "because", 1]]})
        self.assertEqual(err.message, "Can't overwrite static parameters 'reason'")

    def test_queue_drained_is_500_as_ganeti(self):
        # Ganeti's luxid refuses with GenericError("Queue drained"); its RAPI answers 500.
        self.master.client().call("SetDrainFlag", True)
        err = self.refused(gerrors.GenericError, "PUT", "/2/redistribute-config")
        mapped = http_error_for(err)
        assert mapped is not None
        self.assertEqual((mapped.code, mapped.message), (500, "Queue drained"))
        self.assertEqual(self.luxi.methods(), ["SubmitJob"])  # tried, refused by the queue


class ClusterTagsTest(RapiTestCase):
    def test_add_list_remove(self):
        self.assertEqual(self.get("/2/tags"), [])
        self.succeeds(self.call("PUT", "/2/tags", "tag=b&tag=a"))
        self.assertEqual(self.get("/2/tags"), ["a", "b"])
        job = self.succeeds(self.call("DELETE", "/2/tags", "tag=a&reason=old"))
        (op,) = job["ops"]
        # (luxid's echo leaves the unset name out, as Ganeti's /2/jobs shows it)
        self.assertEqual((op["OP_ID"], op["kind"], "name" in op, op["tags"]),
                         ("OP_TAGS_DEL", "cluster", False, ["a"]))
        self.assertEqual(op["reason"][0][:2], ["gnt:user", "old"])
        self.assertEqual(op["reason"][1][0], "gnt:library:rlib2:tags")
        self.assertEqual(self.get("/2/tags"), ["b"])

    def test_dry_run(self):
        (op,) = self.succeeds(self.call("PUT", "/2/tags", "tag=x&dry-run=1"))["ops"]
        self.assertTrue(op["dry_run"])
        (op,) = self.succeeds(self.call("PUT", "/2/tags", "tag=x"))["ops"]
        self.assertFalse(op["dry_run"])

    def test_bad_input_submits_nothing(self):
        self.refused(http.HttpBadRequest, "PUT", "/2/tags", "tag=x&dry-run=true")
        self.refused(http.HttpBadRequest, "PUT", "/2/tags", "tag=x", {"tags": ["y"]})
        self.refused(http.HttpBadRequest, "PUT", "/2/tags", "tag=x", ["y"])
        self.refused(http.HttpBadRequest, "DELETE", "/2/tags", "tag=x",
                     {"depends": "soon"})

    def test_list_body_as_ganetis_client_sends(self):
        (op,) = self.succeeds(self.call("PUT", "/2/tags", "tag=a&tag=b", ["b", "a"]))["ops"]
        self.assertEqual(op["tags"], ["a", "b"])
        (op,) = self.succeeds(self.call("PUT", "/2/tags", "", ["c"]))["ops"]
        self.assertEqual(op["tags"], ["c"])
        self.assertEqual(self.get("/2/tags"), ["a", "b", "c"])
        self.refused(http.HttpBadRequest, "PUT", "/2/tags", "", ["c", 1])
        self.refused(http.HttpBadRequest, "DELETE", "/2/tags", "tag=a", ["b"])

    def test_depends_in_body(self):
        first = self.succeeds(self.call("PUT", "/2/tags", "tag=a"))["id"]
        (op,) = self.succeeds(self.call("PUT", "/2/tags", "tag=b",
                                        {"depends": [[first, []]]}))["ops"]
        self.assertEqual(op["depends"], [[first, []]])


class JobsTest(RapiTestCase):
    def test_lists(self):
        self.assertEqual(self.get("/2/jobs"), [])
        ids = [self.master.submit(delay_op(0.5)) for _ in range(3)]
        for job_id in ids:
            self.wait_job(job_id)
        self.assertEqual(self.get("/2/jobs"),
                         [{"id": i, "uri": f"/2/jobs/{i}"} for i in ids])
        bulk = self.get("/2/jobs", "bulk=1")
        self.assertEqual([set(job) for job in bulk], [set(jobs.J_FIELDS_BULK)] * 3)
        self.assertEqual([job["id"] for job in bulk], ids)
        self.assertEqual(bulk[0]["summary"], ["TEST_DELAY(0.5)"])
        self.assertEqual(bulk[0]["status"], "success")

    def test_bulk_is_read_in_chunks_of_jobs(self):
        self.patch(jobs, "BULK_CHUNK", 2)
        ids = [self.master.submit(delay_op(0.5)) for _ in range(5)]
        for job_id in ids:
            self.wait_job(job_id)
        self.luxi.calls.clear()
        bulk = self.get("/2/jobs", "bulk=1")
        self.assertEqual([job["id"] for job in bulk], ids)
        self.assertEqual(self.luxi.methods(), ["QueryJobs"] * 4)  # the ids, then 3 chunks
        self.assertEqual([call[1][0] for call in self.luxi.calls[1:]],
                         [ids[0:2], ids[2:4], ids[4:5]])

    def test_one_job(self):
        job_id = self.master.submit(delay_op(1.0, repeat=2))
        job = self.wait_job(job_id)
        self.assertEqual(set(job), set(jobs.J_FIELDS))
        self.assertEqual((job["id"], job["status"], job["opstatus"], job["opresult"]),
                         (job_id, "success", ["success"], [None]))
        self.assertEqual([entry[3] for entry in job["oplog"][0]],
                         [" - INFO: Test delay iteration 0/1", " - INFO: Test delay iteration 1/1"])
        self.assertEqual(len(job["received_ts"]), 2)

    def test_unknown_job_is_its_id_and_nulls_as_ganeti(self):
        job = self.get("/2/jobs/77")
        self.assertEqual(job, {name: 77 if name == "id" else None for name in jobs.J_FIELDS})

    def test_cancel(self):
        blocker = self.master.submit(delay_op(100.0))
        waiting = self.master.submit(delay_op(1, depends=[[blocker, ["success"]]]))
        result = self.call("DELETE", f"/2/jobs/{waiting}")
        self.assertEqual(result, [True, f"Dequeued job {waiting}"])
        self.assertEqual(self.wait_job(waiting)["status"], "canceled")
        self.assertEqual(self.call("DELETE", f"/2/jobs/{waiting}"),
                         [False, f"Job {waiting} not found in queue"])
        self.assertEqual(self.call("DELETE", "/2/jobs/999"),
                         [False, "Job 999 not found in queue"])
        self.assertEqual(self.luxi.calls[0], ("CancelJob", (waiting, False)))


class WaitTest(RapiTestCase):
    def wait(self, job_id: int, body: Any) -> Any:
        return self.call("GET", f"/2/jobs/{job_id}/wait", "", body)

    def test_finished_job_answers_at_once(self):
        job_id = self.master.submit(delay_op(0.5))
        self.wait_job(job_id)
        start = self.master.reactor.seconds()
        result = self.wait(job_id, {"fields": ["status", "id"], "previous_job_info": None,
                                    "previous_log_serial": None})
        self.assertEqual(result, {"job_info": ["success", job_id], "log_entries": []})
        self.assertEqual(self.master.reactor.seconds(), start)

    def test_change_and_log_entries(self):
        job_id = self.master.submit(delay_op(5.0, repeat=3))
        seen: list[str] = []
        prev, serial = None, None
        for _ in range(20):
            result = self.wait(job_id, {"fields": ["status"], "previous_job_info": prev,
                                        "previous_log_serial": serial})
            prev = result["job_info"]
            for entry in result["log_entries"]:
                serial = entry[0]
                seen.append(entry[3])
            if prev == ["success"]:
                break
        self.assertEqual(prev, ["success"])
        self.assertEqual(seen, [f" - INFO: Test delay iteration {i}/2" for i in (0, 1, 2)])

    def test_timeout_is_ten_seconds_and_answers_unchanged(self):
        job_id = self.master.submit(delay_op(100.0))
        result = self.wait(job_id, {"fields": ["status"]})
        info = result["job_info"]
        start = self.master.reactor.seconds()
        result = self.wait(job_id, {"fields": ["status"], "previous_job_info": info,
                                    "previous_log_serial": 99})
        self.assertEqual(result, {"job_info": info, "log_entries": []})
        self.assertAlmostEqual(self.master.reactor.seconds() - start, jobs.WAIT_TIMEOUT)
        self.assertEqual(self.luxi.calls[-1][1][-1], 10)

    def test_unknown_job_is_500_as_ganeti(self):
        err = self.refused(http.HttpInternalServerError, "GET", "/2/jobs/42/wait", "",
                           {"fields": ["status"]})
        self.assertEqual(err.message, "Can't load job file")

    def test_other_body_keys_are_ignored_as_ganeti(self):
        job_id = self.master.submit(delay_op(1))
        self.wait_job(job_id)
        result = self.wait(job_id, {"fields": ["status"], "other": 1})
        self.assertEqual(result, {"job_info": ["success"], "log_entries": []})

    def test_bad_bodies(self):
        job_id = self.master.submit(delay_op(0))
        for body in (None, [], "status", {}, {"fields": "status"}, {"fields": [1]},
                     {"fields": ["status"], "previous_job_info": "x"},
                     {"fields": ["status"], "previous_log_serial": "1"},
                     {"fields": ["status"], "previous_log_serial": True}):
            self.refused(http.HttpBadRequest, "GET", f"/2/jobs/{job_id}/wait", "", body)
        self.assertNotIn("WaitForJobChange", self.luxi.methods())

    def test_nochange_answer_is_null(self):
        class Legacy:
            def call(self, method: str, *args: Any) -> defer.Deferred[Any]:
                return defer.succeed("nochange" if method == "WaitForJobChange" else None)

        request = make_request(self.luxi, "GET", "/2/jobs/1/wait", body={"fields": ["id"]})
        request.luxi = Legacy()
        result: list[Any] = []
        run_handler(jobs.wait_job, request).addBoth(result.append)
        self.assertEqual(result, [None])


class QueryTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.add_node()

    def test_get(self):
        result = self.get("/2/query/node", "fields=name,%20role")
        self.assertEqual([f["name"] for f in result["fields"]], ["name", "role"])
        self.assertEqual(result["data"], [[[0, "node1.test"], [0, "M"]],
                                          [[0, "node2.test"], [0, "C"]]])
        self.assertEqual(self.luxi.calls[-1], ("Query", ("node", ["name", "role"], None)))

    def test_get_needs_fields(self):
        err = self.refused(http.HttpBadRequest, "GET", "/2/query/node")
        self.assertEqual(err.message, "Missing 'fields' query argument")

    def test_put_with_filter(self):
        result = self.call("PUT", "/2/query/node", "",
                           {"fields": ["name"], "qfilter": ["=", "name", "node2.test"]})
        self.assertEqual(result["data"], [[[0, "node2.test"]]])
        legacy = self.call("PUT", "/2/query/node", "fields=name",
                           {"filter": ["=", "name", "node1.test"]})
        self.assertEqual(legacy["data"], [[[0, "node1.test"]]])
        everything = self.call("PUT", "/2/query/group", "", {"fields": ["name", "node_cnt"]})
        self.assertEqual(everything["data"], [[[0, "default"], [0, 2]]])

    def test_jobs_and_locks(self):
        job_id = self.master.submit(delay_op(0))
        result = self.call("PUT", "/2/query/job", "", {"fields": ["id", "status"],
                                                     "qfilter": ["=", "id", job_id]})
        self.assertEqual(result["data"][0][0], [0, job_id])
        locks = self.get("/2/query/lock", "fields=name,mode")
        self.assertEqual([f["name"] for f in locks["fields"]], ["name", "mode"])

    def test_bad_put_bodies(self):
        for body in ([], "x", {"fields": "name"}, {"fields": ["name"], "what": "node"},
                     {"qfilter": ["=", "name", "x"]}):
            self.refused(http.HttpBadRequest, "PUT", "/2/query/node", "", body)
        self.assertNotIn("Query", self.luxi.methods())

    def test_bad_filter_comes_back_as_an_error(self):
        err = self.refused(Exception, "PUT", "/2/query/node", "",
                           {"fields": ["name"], "qfilter": ["~", "name"]})
        self.assertEqual(type(err).__name__, "OpPrereqError")  # the server makes it a 400

    def test_unsupported_resources(self):
        err = self.refused(http.HttpNotFound, "PUT", "/2/query/bogus", "", {"fields": []})
        self.assertIn("Unknown query resource 'bogus'", err.message)
        self.refused(http.HttpNotFound, "GET", "/2/query/bogus/fields")
        self.assertFalse({"Query", "QueryFields"} & set(self.luxi.methods()))

    def test_exports_are_queryable(self):
        fields = self.get("/2/query/export/fields")["fields"]
        self.assertEqual([f["name"] for f in fields], ["export", "node"])

    def test_fields(self):
        every = self.get("/2/query/group/fields")["fields"]
        self.assertIn("node_cnt", [f["name"] for f in every])
        self.assertEqual(self.get("/2/query/node/fields", "fields=name,pip")["fields"],
                         [{"name": "name", "title": "Node", "kind": "text",
                           "doc": "Node name"},
                          {"name": "pip", "title": "PrimaryIP", "kind": "text",
                           "doc": "Primary IP address"}])


class RouteTableTest(RapiTestCase):
    """The declarations the server relies on (access, query parameters, bodies)."""

    def method(self, path: str, http_method: str):
        found = match(ROUTES, path)
        assert found is not None, path
        return found[0].methods[http_method]

    def test_access_follows_ganeti(self):
        self.assertEqual(self.method("/2/jobs/1/wait", "GET").access, {WRITE})
        self.assertEqual(self.method("/2/query/node", "GET").access, {READ, WRITE})
        self.assertEqual(self.method("/2/query/node", "PUT").access, {READ, WRITE})
        self.assertEqual(self.method("/2/query/node/fields", "GET").access, frozenset())
        exceptions = {("/2/jobs/{job_id}/wait", "GET"), ("/2/query/{resource}", "GET"),
                      ("/2/query/{resource}", "PUT"),
                      ("/2/instances/{instance_name}/console", "GET"),
                      ("/2/nodes/{node_name}/storage", "GET")}
        for route in ROUTES:
            for http_method, method in route.methods.items():
                if (route.pattern, http_method) not in exceptions:
                    self.assertEqual(method.access, default_access(http_method),
                                     (route.pattern, http_method))

    def test_every_opcode_method_takes_reason(self):
        for route in ROUTES:
            for method in route.methods.values():
                if method.result == "job":
                    self.assertIn("reason", method.query, route.pattern)
                    self.assertIsNotNone(method.opcode, route.pattern)
                self.assertTrue(method.summary, route.pattern)
                self.assertIn(method.body, ("none", "json", "opcode"))
                self.assertEqual(len(set(method.query)), len(method.query))

    def test_patterns_are_unique_and_match_themselves(self):
        patterns = [r.pattern for r in ROUTES]
        self.assertEqual(len(patterns), len(set(patterns)))
        for route in ROUTES:
            path = route.pattern.replace("{job_id}", "12").replace("{node_name}", "n1") \
                .replace("{group_name}", "g1").replace("{resource}", "node") \
                .replace("{instance_name}", "i1").replace("{disk_index}", "0") \
                .replace("{network_name}", "net1") \
                .replace("{filter_uuid}", "6d3f6bd4-0c4a-4bd3-8c57-5a8e1f1f3c1b")
            found = match(ROUTES, path)
            self.assertIsNotNone(found, path)
            self.assertIs(found[0], route)

    def test_tag_kinds(self):
        kinds = {}
        for route in ROUTES:
            if route.pattern.endswith("/tags"):
                spec = route.methods["PUT"].handler.opcode_body
                kinds[route.pattern] = spec.static["kind"].value
        self.assertEqual(kinds, {"/2/tags": c.TAG_CLUSTER,
                                 "/2/nodes/{node_name}/tags": c.TAG_NODE,
                                 "/2/groups/{group_name}/tags": c.TAG_NODEGROUP,
                                 "/2/networks/{network_name}/tags": c.TAG_NETWORK,
                                 "/2/instances/{instance_name}/tags": c.TAG_INSTANCE})
