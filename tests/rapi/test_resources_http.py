"""The route table served by the real request core (RapiApp.process) against a real
master daemon on a fake clock: statuses, access and bodies end to end."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from ganeti.rapi.auth import UsersFile
from ganeti.rapi.server import RapiApp
from tests.fakes.rapi import RapiTestCase

USERS = "admin adminpw write\nreader readerpw read\n"
JSON = {"content-type": "application/json"}


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"authorization": f"Basic {token}"}


ADMIN = basic("admin", "adminpw")
READER = basic("reader", "readerpw")


class RapiAppTest(RapiTestCase):
    def setUp(self) -> None:
        super().setUp()
        users = os.path.join(self.mktemp())
        with open(users, "w", encoding="utf-8") as f:
            f.write(USERS)
        self.app = RapiApp(None, self.luxi, self.master.reactor,
                           UsersFile(users, self.master.reactor))

    def request(self, method: str, path: str, query: str = "",
                headers: dict[str, str] | None = None, body: Any = None,
                raw: bytes | None = None) -> tuple[int, Any]:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        hdrs = dict(headers or {})
        if data and raw is None:
            hdrs.update(JSON)
        response = self.master.run_until(
            self.app.process(method, path, query, hdrs, data, "192.0.2.7"))
        return response.status, json.loads(response.body) if response.body else None

    def test_anonymous_reads_and_authenticated_writes(self):
        status, info = self.request("GET", "/2/info")
        self.assertEqual((status, info["name"]), (200, "cluster.test"))
        self.assertEqual(self.request("GET", "/version"), (200, 2))
        status, err = self.request("PUT", "/2/tags", "tag=x")
        self.assertEqual((status, set(err)), (401, {"code", "message", "explain"}))
        self.assertEqual(self.request("PUT", "/2/tags", "tag=x", READER)[0], 403)
        self.assertEqual(self.luxi.submitted(), 0)
        status, job_id = self.request("PUT", "/2/tags", "tag=x", ADMIN)
        self.assertEqual((status, job_id), (200, 1))
        self.succeeds(job_id)

    def test_ganeti_access_exceptions(self):
        job_id = self.master.submit({"OP_ID": "OP_TEST_DELAY", "duration": 0})
        body = {"fields": ["status"]}
        self.assertEqual(self.request("GET", f"/2/jobs/{job_id}/wait", "", READER, body)[0],
                         403)
        status, result = self.request("GET", f"/2/jobs/{job_id}/wait", "", ADMIN, body)
        self.assertEqual(status, 200, result)
        self.assertEqual(self.request("GET", "/2/query/node", "fields=name")[0], 401)
        status, result = self.request("PUT", "/2/query/node", "", READER,
                                      {"fields": ["name"]})
        self.assertEqual((status, result["data"]), (200, [[[0, "node1.test"]]]))

    def test_errors(self):
        status, err = self.request("GET", "/2/nodes/nope")
        self.assertEqual((status, err["code"]), (404, 404))
        self.assertEqual(self.request("GET", "/2/nodes", "bulk=1&colour=red")[0], 400)
        self.assertEqual(self.request("GET", "/2/nodes", "bulk=yes")[0], 400)
        status, err = self.request("PUT", "/2/modify", "", ADMIN, {"nonsense": 1})
        self.assertEqual(status, 400)
        self.assertTrue(err["message"].startswith("Invalid body parameters"), err)
        self.assertEqual(self.request("PUT", "/2/modify", "", ADMIN, raw=b"{}")[0], 415)
        status, _ = self.request("PUT", "/2/query/node", "", ADMIN,
                                 {"fields": ["name"], "qfilter": ["~", "name"]})
        self.assertEqual(status, 400)
        self.assertEqual(self.request("POST", "/2/info", "", ADMIN)[0], 501)
        self.assertEqual(self.luxi.submitted(), 0)

    def test_bare_json_bodies(self):
        self.add_node()
        status, job_id = self.request("PUT", "/2/nodes/node2.test/role", "", ADMIN, "drained")
        self.assertEqual(status, 200)
        self.succeeds(job_id)
        self.assertEqual(self.request("GET", "/2/nodes/node2.test/role"), (200, "drained"))
        status, job_id = self.request("PUT", "/2/nodes/node2.test/tags", "tag=a", ADMIN, ["a"])
        self.assertEqual(status, 200)
        self.succeeds(job_id)


def _example_path(pattern: str) -> str:
    """A concrete path for a route pattern (names that exist in the test cluster)."""
    values = {"job_id": "1", "node_name": "node1.test", "group_name": "default",
              "resource": "node", "disk_index": "0", "instance_name": "inst1.test",
              "filter_uuid": "6d3f6bd4-0c4a-4bd3-8c57-5a8e1f1f3c1b", "network_name": "net1"}
    out = pattern
    for name, value in values.items():
        out = out.replace("{" + name + "}", value)
    return out


class AccessMatrixTest(RapiAppTest):
    """Every method that changes something refuses anonymous (401) and read-only (403)
    users before looking at its input, and nothing is submitted."""

    def write_methods(self):
        from ganeti.rapi.routes import ROUTES
        found = []
        for route in ROUTES:
            for http_method, spec in route.methods.items():
                if http_method == "GET":
                    continue
                if "read" in spec.access:
                    # Ganeti's one exception: a read-only user may PUT a query
                    self.assertEqual(route.pattern, "/2/query/{resource}")
                    continue
                self.assertEqual(set(spec.access), {"write"}, route.pattern)
                found.append((http_method, _example_path(route.pattern)))
        return found

    def test_every_write_resource_refuses_anonymous_and_read_only_users(self):
        methods = self.write_methods()
        # the table really has write resources of every kind
        self.assertGreaterEqual(len(methods), 15)
        self.assertEqual({m for m, _ in methods}, {"PUT", "POST", "DELETE"})
        for http_method, path in methods:
            status, err = self.request(http_method, path, "", None, {})
            self.assertEqual(status, 401, (http_method, path, err))
            status, err = self.request(http_method, path, "", READER, {})
            self.assertEqual(status, 403, (http_method, path, err))
        self.assertEqual(self.luxi.submitted(), 0)
        self.assertEqual(self.luxi.methods().count("SubmitJob"), 0)

    def test_bad_credentials_are_401_with_a_challenge(self):
        for headers in (basic("admin", "wrong"), basic("nobody", "x"),
                        {"authorization": "Basic !!notbase64"},
                        {"authorization": "Digest x"}):
            status, err = self.request("GET", "/2/info", "", headers)
            self.assertEqual(status, 401, (headers, err))
