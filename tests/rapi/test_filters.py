"""The job filter rule resources (/2/filters, /2/filters/{filter_uuid}) and
/2/query/filter against a real master daemon on a fake clock: the handlers, and
the whole request core (statuses, access, error bodies) through RapiApp."""

from __future__ import annotations

import json
import uuid as uuidmod
from typing import Any

from ganeti.core import constants as c
from ganeti.core import errors, opcodes
from ganeti.rapi import errors as http
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.resources import filters
from ganeti.rapi.routes import ROUTES
from ganeti.rapi.routing import WRITE, match
from ganeti.rapi.server import RapiApp
from tests.fakes.clirun import delay_op
from tests.fakes.rapi import RapiTestCase
from tests.rapi.test_resources_http import ADMIN, JSON, READER, USERS

FIELDS = ["uuid", "watermark", "priority", "predicates", "action", "reason_trail"]
DRAIN = [["jobid", [">", "id", "watermark"]]]
NEW_UUID = "5f0c8a52-9a43-4c1e-b0a4-1d2b3c4d5e6f"


class FilterTestCase(RapiTestCase):
    """Helpers: the rules as the master has them, a job to set the watermark."""

    def rules(self) -> list[dict[str, Any]]:
        """Every rule's fields, straight from the master (evaluation order)."""
        rows = self.master.client().call("QueryFilters", None, FIELDS)
        return [dict(zip(FIELDS, row, strict=True)) for row in rows]

    def now_ns(self) -> int:
        return int(self.master.reactor.seconds() * 1_000_000_000)

    def finished_job(self) -> int:
        """Run a job to the end (the watermark is the highest job id); its id."""
        job_id = self.master.submit(delay_op(0.5))
        self.succeeds(job_id)
        return job_id

    def add(self, **body: Any) -> str:
        value = self.call("POST", "/2/filters", "", body)
        self.assertIsInstance(value, str)
        return value


class ResourceTest(FilterTestCase):
    def test_no_rules(self):
        self.assertEqual(self.get("/2/filters"), [])
        self.assertEqual(self.get("/2/filters", "bulk=1"), [])
        self.assertEqual(self.luxi.calls, [("QueryFilters", (None, ["uuid"])),
                                           ("QueryFilters", (None, list(
                                               filters.FILTER_RULE_FIELDS)))])

    def test_add_show_list_delete(self):
        job_id = self.finished_job()
        now = self.now_ns()
        uid = self.add(priority=2, predicates=DRAIN, action="REJECT",
                       reason=[["gnt:user", "maintenance", 5]])
        self.assertEqual(str(uuidmod.UUID(uid)), uid.lower())
        rule = self.get(f"/2/filters/{uid}")
        self.assertEqual(rule, {
            "uuid": uid, "watermark": job_id, "priority": 2, "predicates": DRAIN,
            "action": "REJECT",
            "reason_trail": [["gnt:user", "maintenance", 5], ["luxid", "", now]]})
        self.assertEqual(self.get("/2/filters"), [{"uuid": uid, "uri": f"/2/filters/{uid}"}])
        self.assertEqual(self.get("/2/filters", "bulk=1"), [rule])
        self.assertEqual(self.rules(), [rule])
        self.assertIsNone(self.call("DELETE", f"/2/filters/{uid}"))
        self.assertEqual(self.rules(), [])
        self.refused(http.HttpNotFound, "GET", f"/2/filters/{uid}")
        self.assertIn("ReplaceFilter", self.luxi.methods())
        self.assertNotIn("SubmitJob", self.luxi.methods())  # at once, not a job

    def test_defaults(self):
        uid = self.add()
        (rule,) = self.rules()
        self.assertEqual((rule["uuid"], rule["priority"], rule["predicates"], rule["action"]),
                         (uid, 0, [], "CONTINUE"))
        self.assertEqual(rule["reason_trail"], [["luxid", "", self.now_ns()]])

    def test_rate_limit_action(self):
        uid = self.add(action=["RATE_LIMIT", 3],
                       predicates=[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]])
        self.assertEqual(self.get(f"/2/filters/{uid}")["action"], ["RATE_LIMIT", 3])

    def test_put_adds_then_replaces(self):
        self.assertEqual(self.call("PUT", f"/2/filters/{NEW_UUID}", "",
                                   {"priority": 4, "action": "CONTINUE"}), NEW_UUID)
        self.assertEqual([(r["uuid"], r["priority"], r["action"]) for r in self.rules()],
                         [(NEW_UUID, 4, "CONTINUE")])
        job_id = self.finished_job()
        self.assertEqual(self.call("PUT", f"/2/filters/{NEW_UUID}", "",
                                   {"predicates": DRAIN, "action": "ACCEPT",
                                    "reason": [["gnt:user", "again", 1]]}), NEW_UUID)
        (rule,) = self.rules()
        self.assertEqual({k: rule[k] for k in ("uuid", "priority", "predicates", "action")},
                         {"uuid": NEW_UUID, "priority": 0, "predicates": DRAIN,
                          "action": "ACCEPT"})
        self.assertEqual(rule["watermark"], job_id)
        self.assertEqual(rule["reason_trail"][0], ["gnt:user", "again", 1])

    def test_list_order(self):
        uids = [self.add(priority=p) for p in (5, 1, 3)]
        listed = self.get("/2/filters")
        self.assertEqual([item["uuid"] for item in listed], sorted(uids))
        bulk = self.get("/2/filters", "bulk=1")
        self.assertEqual([rule["uuid"] for rule in bulk], sorted(uids))  # as Ganeti: by uuid
        self.assertEqual(set(bulk[0]), set(FIELDS))

    def test_unknown_rule_is_404(self):
        for method in ("GET", "DELETE"):
            err = self.refused(http.HttpNotFound, method, f"/2/filters/{NEW_UUID}")
            self.assertIn(NEW_UUID, err.message)

    def test_delete_takes_an_empty_body_as_ganetis_client_sends(self):
        uid = self.add()
        err = self.refused(http.HttpBadRequest, "DELETE", f"/2/filters/{uid}", "", {"x": 1})
        self.assertIn("'x'", err.message)
        self.refused(http.HttpBadRequest, "DELETE", f"/2/filters/{uid}", "", [])
        self.assertEqual(len(self.rules()), 1)
        self.assertIsNone(self.call("DELETE", f"/2/filters/{uid}", "", {}))
        self.assertEqual(self.rules(), [])

    def test_bad_bodies_are_refused_before_the_master_is_asked(self):
        uid = self.add(priority=1, action="PAUSE")
        before = self.rules()
        self.luxi.calls.clear()
        for body in ({"priority": 1, "uuid": uid}, {"watermark": 3}, {"reason_trail": []},
                     {"priority": "1"}, {"priority": True}, {"priority": 1.5},
                     {"predicates": {"jobid": 1}}, {"predicates": "jobid"},
                     {"action": 5}, {"action": None}, {"reason": "because"},
                     [], "PAUSE", None):
            for method, path in (("POST", "/2/filters"), ("PUT", f"/2/filters/{uid}")):
                self.refused(http.HttpBadRequest, method, path, "", body)
        self.assertEqual(self.luxi.calls, [])
        self.assertEqual(self.rules(), before)

    def test_messages(self):
        err = self.refused(http.HttpBadRequest, "POST", "/2/filters", "",
                           {"priority": 1, "colour": "red"})
        self.assertEqual(err.message, "Invalid body parameters: unknown parameter(s) "
                                      "'colour'")
        err = self.refused(http.HttpBadRequest, "POST", "/2/filters", "", {"priority": "1"})
        self.assertEqual(err.message, "'priority' parameter: expected an integer, got a "
                                      "string")


class QueryTest(FilterTestCase):
    def test_query_filter_resource(self):
        first = self.add(priority=3, action="REJECT")
        second = self.add(priority=1, predicates=DRAIN, action=["RATE_LIMIT", 2])
        result = self.get("/2/query/filter", "fields=uuid,priority,action")
        self.assertEqual([f["name"] for f in result["fields"]], ["uuid", "priority", "action"])
        rows = {second: [[0, second], [0, 1], [0, ["RATE_LIMIT", 2]]],
                first: [[0, first], [0, 3], [0, "REJECT"]]}
        self.assertEqual(result["data"], [rows[u] for u in sorted(rows)])  # by uuid
        filtered = self.call("PUT", "/2/query/filter", "",
                             {"fields": ["uuid"], "qfilter": ["=", "priority", 3]})
        self.assertEqual(filtered["data"], [[[0, first]]])
        by_uuid = self.call("PUT", "/2/query/filter", "",
                            {"fields": ["predicates"], "qfilter": ["=", "uuid", second]})
        self.assertEqual(by_uuid["data"], [[[0, DRAIN]]])

    def test_fields(self):
        every = self.get("/2/query/filter/fields")["fields"]
        self.assertEqual({f["name"]: (f["title"], f["kind"]) for f in every}, {
            "uuid": ("UUID", c.QFT_OTHER), "watermark": ("Watermark", c.QFT_OTHER),
            "priority": ("Priority", c.QFT_OTHER), "predicates": ("Predicates", c.QFT_OTHER),
            "action": ("Action", c.QFT_OTHER), "reason_trail": ("ReasonTrail", c.QFT_OTHER)})
        some = self.get("/2/query/filter/fields", "fields=uuid,watermark")["fields"]
        self.assertEqual([f["name"] for f in some], ["uuid", "watermark"])

    def test_op_query_still_refuses_filter(self):
        # The RAPI query resource answers "filter"; the opcode does not take it (our
        # OP_QUERY answers what QR_VIA_OPCODE lists).
        self.assertNotIn(c.QR_FILTER, c.QR_VIA_OPCODE)
        with self.assertRaises(errors.OpPrereqError):
            opcodes.validate({"OP_ID": "OP_QUERY", "what": c.QR_FILTER, "fields": ["uuid"]})


class RouteTest(FilterTestCase):
    def test_declarations(self):
        for path, method in (("/2/filters", "POST"), (f"/2/filters/{NEW_UUID}", "PUT"),
                             (f"/2/filters/{NEW_UUID}", "DELETE")):
            found = match(ROUTES, path)
            assert found is not None
            spec = found[0].methods[method]
            self.assertEqual(spec.access, {WRITE})
            self.assertEqual(spec.body, "json")
            self.assertIsNone(spec.opcode)
        found = match(ROUTES, "/2/filters")
        assert found is not None
        self.assertEqual(found[0].methods["GET"].access, frozenset())


class HttpTest(FilterTestCase):
    """Through the real request core: statuses, access and Ganeti's error bodies."""

    def setUp(self) -> None:
        super().setUp()
        users = self.mktemp()
        with open(users, "w", encoding="utf-8") as f:
            f.write(USERS)
        self.app = RapiApp(None, self.luxi, self.master.reactor,
                           UsersFile(users, self.master.reactor))

    def request(self, method: str, path: str, body: Any = None, query: str = "",
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        hdrs = dict(ADMIN if headers is None else headers)
        if data:
            hdrs.update(JSON)
        response = self.master.run_until(
            self.app.process(method, path, query, hdrs, data, "192.0.2.7"))
        return response.status, json.loads(response.body) if response.body else None

    def assertError(self, outcome: tuple[int, Any], status: int) -> str:
        code, body = outcome
        self.assertEqual(code, status, body)
        self.assertEqual(set(body), {"code", "message", "explain"})
        self.assertEqual(body["code"], status)
        return str(body["message"])

    def test_round_trip(self):
        status, uid = self.request("POST", "/2/filters", {"action": "PAUSE",
                                                          "predicates": DRAIN})
        self.assertEqual(status, 200, uid)
        self.assertEqual(self.request("GET", f"/2/filters/{uid}", headers={})[1]["action"],
                         "PAUSE")
        self.assertEqual(self.request("PUT", f"/2/filters/{uid}", {"priority": 7}), (200, uid))
        self.assertEqual(self.request("DELETE", f"/2/filters/{uid}", {}), (200, None))
        self.assertError(self.request("DELETE", f"/2/filters/{uid}", {}), 404)
        self.assertError(self.request("GET", f"/2/filters/{uid}"), 404)

    def test_access(self):
        uid = self.add()
        before = self.rules()
        for method, path, body in (("POST", "/2/filters", {}),
                                   ("PUT", f"/2/filters/{uid}", {"priority": 3}),
                                   ("DELETE", f"/2/filters/{uid}", None)):
            self.assertError(self.request(method, path, body, headers={}), 401)
            self.assertError(self.request(method, path, body, headers=READER), 403)
        self.assertEqual(self.rules(), before)
        self.assertEqual(self.request("GET", "/2/filters", headers=READER)[0], 200)
        self.assertEqual(self.request("GET", f"/2/filters/{uid}", headers={})[0], 200)
        self.assertEqual(self.request("GET", "/2/query/filter", query="fields=uuid",
                                      headers={})[0], 401)
        status, result = self.request("GET", "/2/query/filter", query="fields=uuid",
                                      headers=READER)
        self.assertEqual((status, result["data"]), (200, [[[0, uid]]]))

    def test_invalid_values_are_400_and_change_nothing(self):
        uid = self.add(priority=1, action="PAUSE")
        before = self.rules()
        cases = [
            {"priority": -1},
            {"action": "DROP"},
            {"action": "pause"},
            {"action": ["RATE_LIMIT", 0]},
            {"action": ["RATE_LIMIT", "3"]},
            {"predicates": [["nonsense", ["=", "id", 1]]]},
            {"predicates": [["jobid"]]},
            {"predicates": [["jobid", ["~", "id"]]]},
            {"reason": [["gnt:user", "x"]]},
            {"reason": ["text"]},
            {"priority": 1, "uuid": uid},
            {"priority": "high"},
        ]
        for body in cases:
            for method, path in (("POST", "/2/filters"), ("PUT", f"/2/filters/{uid}"),
                                 ("PUT", f"/2/filters/{NEW_UUID}")):
                self.assertError(self.request(method, path, body), 400)
        self.assertEqual(self.rules(), before)

    def test_invalid_uuid_in_the_url(self):
        message = self.assertError(self.request("PUT", "/2/filters/not-a-uuid",
                                                {"priority": 1}), 400)
        self.assertIn("Unable to parse UUID", message)
        # GET and DELETE ask the master, for which no rule has such a uuid
        self.assertError(self.request("GET", "/2/filters/not-a-uuid"), 404)
        self.assertError(self.request("DELETE", "/2/filters/not-a-uuid"), 404)
        # a path that is no name at all does not reach the resource
        self.assertError(self.request("GET", "/2/filters/a b"), 404)
        self.assertEqual(self.rules(), [])

    def test_bad_json_and_media_type(self):
        status, _ = self.request("POST", "/2/filters", "x")
        self.assertEqual(status, 400)
        response = self.master.run_until(self.app.process(
            "POST", "/2/filters", "", dict(ADMIN), b"{}", "192.0.2.7"))
        self.assertEqual(response.status, 415)
        self.assertEqual(self.rules(), [])

