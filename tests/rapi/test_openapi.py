"""The OpenAPI document: generated from the route table, kept current in docs/, valid."""

from __future__ import annotations

import json
import os
import re

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.opcodes import Kind, kinds
from ganeti.core.opcodes import table as optable
from ganeti.rapi import openapi
from ganeti.rapi.routes import ROUTES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC_FILE = os.path.join(ROOT, "docs", "rapi-openapi.json")
RAPI_MD = os.path.join(ROOT, "docs", "rapi.md")


def document() -> dict:
    return openapi.build_document(ROUTES)


class DocumentTest(SynchronousTestCase):
    def test_checked_in_file_is_current(self):
        with open(DOC_FILE, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text, openapi.render(document()),
                         "docs/rapi-openapi.json is stale: run "
                         "'python -m ganeti.rapi.openapi > docs/rapi-openapi.json'")

    def test_every_route_and_method(self):
        paths = document()["paths"]
        for route in ROUTES:
            self.assertIn(route.pattern, paths)
            for http_method, method in route.methods.items():
                op = paths[route.pattern][http_method.lower()]
                self.assertEqual(op["summary"], method.summary)
                self.assertEqual(op["x-ganeti-access"], sorted(method.access))
                names = [p["name"] for p in op.get("parameters", [])]
                self.assertEqual(names, [*route.placeholders, *method.query])
        self.assertEqual(len(paths), len(ROUTES))

    def test_valid_openapi(self):
        try:
            from openapi_spec_validator import validate
        except ImportError:  # pragma: no cover - a test extra
            raise self.skipTest("openapi-spec-validator is not installed") from None
        validate(json.loads(json.dumps(document())))

    def test_operation_ids_are_unique(self):
        ids = [op["operationId"] for item in document()["paths"].values()
               for key, op in item.items() if isinstance(op, dict) and "operationId" in op]
        self.assertEqual(len(ids), len(set(ids)))

    def test_access_and_security(self):
        paths = document()["paths"]
        wait = paths["/2/jobs/{job_id}/wait"]["get"]
        self.assertEqual((wait["x-ganeti-access"], wait["security"]),
                         (["write"], [{"basicAuth": []}]))
        self.assertEqual(paths["/2/query/{resource}"]["put"]["x-ganeti-access"],
                         ["read", "write"])
        info = paths["/2/info"]["get"]
        self.assertEqual(info["security"], [{}, {"basicAuth": []}])
        self.assertNotIn("requestBody", info)
        self.assertNotIn("415", info["responses"])
        self.assertEqual(paths["/2/modify"]["put"]["responses"]["403"],
                         {"$ref": "#/components/responses/Forbidden"})
        error = document()["components"]["schemas"]["Error"]
        self.assertEqual(error["required"], ["code", "message", "explain"])

    def test_opcode_bodies(self):
        paths = document()["paths"]

        def body(path, method):
            return paths[path][method]["requestBody"]["content"]["application/json"]["schema"]

        create = body("/2/groups", "post")
        self.assertFalse(create["additionalProperties"])
        self.assertIn("name", create["properties"])
        self.assertIn("group_name", create["properties"])
        self.assertNotIn("dry_run", create["properties"])  # from ?dry-run
        self.assertNotIn("reason", create["properties"])  # from ?reason
        self.assertNotIn("required", create)  # group_name may come as name
        self.assertEqual(create["properties"]["alloc_policy"]["enum"],
                         ["last_resort", "preferred", "unallocable"])
        self.assertEqual(create["properties"]["depends"],
                         {"$ref": "#/components/schemas/opcode.depends"})
        modify = body("/2/modify", "put")
        self.assertNotIn("compression_tools", modify["properties"])
        self.assertEqual(modify["properties"]["max_running_jobs"]["minimum"], 1)
        rename = body("/2/groups/{group_name}/rename", "put")
        self.assertEqual(rename["required"], ["new_name"])
        self.assertNotIn("group_name", rename["properties"])
        tag_list, tag_object = body("/2/tags", "put")["oneOf"]
        self.assertEqual(tag_list["items"], {"type": "string"})
        self.assertEqual(set(tag_object["properties"]), {"depends"})
        self.assertFalse(paths["/2/tags"]["put"]["requestBody"]["required"])
        role = body("/2/nodes/{node_name}/role", "put")
        self.assertEqual(role["enum"], ["drained", "master-candidate", "offline", "regular"])
        self.assertEqual(body("/2/jobs/{job_id}/wait", "get")["required"], ["fields"])

    def test_path_parameters(self):
        op = document()["paths"]["/2/jobs/{job_id}"]["get"]
        (param,) = op["parameters"]
        self.assertEqual((param["name"], param["in"], param["required"]),
                         ("job_id", "path", True))
        self.assertTrue(re.fullmatch(param["schema"]["pattern"].strip("^$"), "123"))


class KindSchemaTest(SynchronousTestCase):
    def test_simple_kinds(self):
        self.assertEqual(openapi.kind_schema(kinds.BOOL), {"type": "boolean"})
        self.assertEqual(openapi.kind_schema(kinds.ANY), {})
        self.assertEqual(openapi.kind_schema(kinds.float_kind(0.0)),
                         {"type": "number", "minimum": 0.0})
        self.assertEqual(openapi.kind_schema(kinds.int_range(1, 5)),
                         {"type": "integer", "minimum": 1, "maximum": 5})

    def test_nested_kinds(self):
        self.assertEqual(openapi.kind_schema(kinds.maybe(kinds.list_of(kinds.STRING))),
                         {"type": "array", "items": {"type": "string"}, "nullable": True})
        self.assertEqual(openapi.kind_schema(kinds.one_of(["a", "b"])),
                         {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(openapi.kind_schema(kinds.dict_of(kinds.STRING, kinds.INT)),
                         {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(
            openapi.kind_schema(kinds.dict_of(kinds.one_of(["x"]), kinds.BOOL)),
            {"type": "object", "properties": {"x": {"type": "boolean"}},
             "additionalProperties": False})
        pair = openapi.kind_schema(kinds.tuple_of(kinds.INT, kinds.INT))
        self.assertEqual(pair, {"type": "array", "minItems": 2, "maxItems": 2,
                                "items": {"type": "integer"}})

    def test_opaque_kinds_are_probed(self):
        self.assertEqual(openapi.kind_schema(optable.IP_ADDRESS),
                         {"type": "string", "description": "an IP address"})
        nothing = Kind("a unicorn", lambda v: (_ for _ in ()).throw(
            kinds.KindMismatch("a unicorn", v)))
        self.assertEqual(openapi.kind_schema(nothing), {"description": "a unicorn"})


class RapiMarkdownTest(SynchronousTestCase):
    def test_every_route_is_documented(self):
        with open(RAPI_MD, encoding="utf-8") as f:
            text = f.read()
        for route in ROUTES:
            self.assertIn(f"`{route.pattern}`", text, route.pattern)
            for http_method in route.methods:
                self.assertRegex(text, rf"\| `{re.escape(route.pattern)}` \|[^\n]*"
                                       rf"\b{http_method}\b", route.pattern)
