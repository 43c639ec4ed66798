"""The RAPI request core (RapiApp) on a fake clock and a scripted LUXI client, and the
twisted.web adapter over an in-memory transport: dispatch, statuses, auth order, bodies,
error mapping, the access log, static files and the WebSocket hand-over."""

import base64
import inspect
import json
import os

from twisted.internet import defer
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from twisted.web import resource, server

from ganeti.core import crypto
from ganeti.core import errors as gerrors
from ganeti.luxi.twclient import AsyncLuxiClient
from ganeti.rapi import errors, routing
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import LoginThrottle, UsersFile
from ganeti.rapi.routing import READ, WRITE, Method, Route
from ganeti.rapi.server import BUILTIN_ROUTES, RapiApp, _RouteIndex
from ganeti.rapi.web import make_site

USERS = (
    "# test users\n"
    "\n"
    "admin {CLEARTEXT}adminpw write\n"
    "reader readerpw read\n"
    f"hashed {{HA1}}{crypto.rapi_ha1('hashed', 'hashedpw')} read,write\n"
    "plain plainpw\n"
)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class ScriptedLuxi:
    """The async LUXI client's interface: answers (or errors) set per method.

    Returns a pending Deferred for methods listed in ``pending``."""

    def __init__(self):
        self.answers = {"QueryClusterInfo": {"name": "c.test", "master": "n1.test"}}
        self.calls = []
        self.pending = {}

    def call(self, method, *args):
        self.calls.append((method, args))
        if method in self.pending:
            d = defer.Deferred(lambda d: self.calls.append(("cancelled", method)))
            self.pending[method] = d
            return d
        answer = self.answers.get(method)
        if isinstance(answer, BaseException):
            return defer.fail(answer)
        return defer.succeed(answer)


async def get_info(request):
    return await request.luxi.call("QueryClusterInfo")


def get_thing(request):
    return {"name": request.params["name"], "bulk": request.flag("bulk"),
            "user": request.user.name if request.user else None}


def put_thing(request):
    return defer.succeed({"body": request.body, "method": request.method})


def raise_it(request):
    raise request.body_error


def routes():
    """A small route table covering every kind of method declaration."""
    return [
        Route("/version", {"GET": Method(lambda r: 2, "version")}),
        Route("/2/info", {"GET": Method(get_info, "info")}),
        Route("/2/things/{name}", {
            "GET": Method(get_thing, "get", query=("bulk", "lock")),
            "PUT": Method(put_thing, "put", access=routing.default_access("PUT"),
                          body="json", query=("dry-run",)),
            "DELETE": Method(put_thing, "delete", access=frozenset({WRITE}))}),
        Route("/2/things/{name}/op", {
            "POST": Method(put_thing, "op", access=frozenset({WRITE}), body="opcode")}),
        Route("/2/query/{resource}", {
            "GET": Method(lambda r: r.params, "query", access=frozenset({READ, WRITE}))}),
        Route("/2/jobs/{job_id}", {"GET": Method(get_info, "job")}),
        Route("/2/readers", {"GET": Method(lambda r: "ok", "readers",
                                           access=frozenset({READ}))}),
    ]


class AppCase(SynchronousTestCase):
    require_auth = False

    def setUp(self):
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)
        self.users_path = os.path.join(self.dir, "users")
        with open(self.users_path, "w") as f:
            f.write(USERS)
        self.users = UsersFile(self.users_path, self.clock)
        self.luxi = ScriptedLuxi()
        self.app = self.make_app()

    def make_app(self, **kw):
        kw.setdefault("require_auth", self.require_auth)
        return RapiApp(kw.pop("routes", routes()), self.luxi, self.clock, self.users, **kw)

    def process(self, method, path, query="", headers=None, body=b"", ip="192.0.2.9",
                app=None):
        d = (app or self.app).process(method, path, query, headers or {}, body, ip)
        self.clock.advance(0)  # identical GETs of one reactor turn run together at its end
        return self.successResultOf(d)

    def json(self, *args, **kw):
        response = self.process(*args, **kw)
        return response.status, json.loads(response.body)

    def assertError(self, response, code, message=None):
        self.assertEqual(response.status, code, response.body)
        body = json.loads(response.body)
        self.assertEqual(sorted(body), ["code", "explain", "message"])
        self.assertEqual(body["code"], code)
        if message is not None:
            self.assertEqual(body["message"], message)
        return body


class DispatchTest(AppCase):
    def test_json_answer_is_compact_with_content_type(self):
        response = self.process("GET", "/2/info")
        self.assertEqual(response.status, 200)
        self.assertEqual(response.body, b'{"name":"c.test","master":"n1.test"}')
        self.assertIn(("Content-Type", "application/json"), response.headers)
        self.assertEqual(self.process("GET", "/version").body, b"2")

    def test_handler_kinds(self):
        # plain value, Deferred and coroutine results
        self.assertEqual(self.json("GET", "/2/things/x1")[1],
                         {"name": "x1", "bulk": False, "user": None})
        status, body = self.json("PUT", "/2/things/x1", headers=self.auth("admin"),
                                 body=b'{"a": 1}')
        self.assertEqual(status, 200)
        self.assertEqual(body, {"body": {"a": 1}, "method": "PUT"})

    def auth(self, user, password=None, **extra):
        headers = {"Authorization": basic(user, password or f"{user}pw"),
                   "Content-Type": "application/json"}
        headers.update(extra)
        return headers

    def test_unknown_path_is_404(self):
        body = self.assertError(self.process("GET", "/2/nothing"), 404, "Not Found")
        self.assertEqual(body["explain"], "Nothing matches the given URI")
        self.assertError(self.process("GET", "/2/things/bad name"), 404)

    def test_undeclared_method_is_501_as_ganeti(self):
        response = self.process("DELETE", "/2/info")
        self.assertError(response, 501, "Method DELETE is unsupported for path /2/info")
        self.assertError(self.process("POST", "/2/things/a"), 501,
                         "Method POST is unsupported for path /2/things/a")

    def test_other_verbs_are_501_with_allow(self):
        # as Ganeti (checked on a real cluster): every verb a resource lacks is 501
        for verb in ("PATCH", "OPTIONS", "TRACE", "FOO"):
            response = self.process(verb, "/2/things/a")
            self.assertError(response, 501, f"Method {verb} is unsupported for path "
                                             "/2/things/a")
            self.assertIn(("Allow", "DELETE, GET, PUT, HEAD"), response.headers)

    def test_undeclared_method_is_501_whatever_the_body(self):
        headers = self.auth("admin")
        for verb in ("PUT", "POST", "DELETE", "PATCH"):
            for body in (b"", b"{}", b"null", b"[1]", b'"x"', b"{bad"):
                self.assertError(self.process(verb, "/version", headers=headers, body=body),
                                 501, f"Method {verb} is unsupported for path /version")
        # before authentication, as Ganeti looks the handler up first
        self.assertError(self.process("PUT", "/version", body=b"{}",
                                      headers={"Authorization": basic("admin", "nope")}),
                         501)

    def test_head_is_get(self):
        response = self.process("HEAD", "/2/info")
        self.assertEqual(response.status, 200)
        self.assertEqual(response.body, self.process("GET", "/2/info").body)
        self.assertError(self.process("HEAD", "/2/things/a/op"), 501)

    def test_percent_encoded_path(self):
        self.assertEqual(self.json("GET", "/2/things/x%2Dy")[1]["name"], "x-y")
        self.assertError(self.process("GET", b"/2/things/%ff"), 400,
                         "The URL path is not valid UTF-8")

    def test_unknown_query_parameters(self):
        response = self.process("GET", "/2/things/a", "bulk=1&foo=2&bar")
        self.assertError(response, 400, "Unknown query parameter(s): bar, foo; this "
                                        "resource accepts: bulk, lock")
        self.assertError(self.process("GET", "/2/info", "x=1"), 400,
                         "Unknown query parameter(s): x; this resource accepts: none")
        self.assertEqual(self.json("GET", "/2/things/a", b"bulk=1&bulk=0")[1]["bulk"], True)
        self.assertError(self.process("GET", "/2/things/a", "bulk=yes"), 400)
        self.assertError(self.process("GET", "/2/things/a", "bulk=%ff"), 400,
                         "The query string is not valid UTF-8")
        many = "&".join(f"bulk={i}" for i in range(200))
        self.assertError(self.process("GET", "/2/things/a", many), 400)

    def test_body_on_a_resource_without_one_is_ignored(self):
        # as Ganeti: ganeti.rapi.client sends {} or null on GETs (QA's _DoGetPutTests)
        json_type = {"content-type": "application/json"}
        for body in (b"{}", b"null", b"[1, 2]", b'{"name": "other"}'):
            self.assertEqual(self.json("GET", "/2/things/a", body=body, headers=json_type),
                             (200, {"name": "a", "bulk": False, "user": None}))
            self.assertEqual(self.json("GET", "/2/info", body=body, headers=json_type)[0],
                             200)
        delete = self.auth("admin")
        self.assertEqual(self.json("DELETE", "/2/things/a", body=b'{"a": 1}',
                                   headers=delete), (200, {"body": None, "method": "DELETE"}))
        # the body is still checked as any other: media type, then JSON
        self.assertError(self.process("GET", "/2/info", body=b"{}",
                                      headers={"content-type": "text/plain"}), 415)
        self.assertError(self.process("GET", "/2/info", body=b"{}"), 415)
        message = self.assertError(self.process("GET", "/2/info", body=b"{", headers=json_type),
                                   400)["message"]
        self.assertTrue(message.startswith("Unable to parse JSON data"), message)

    def test_get_with_an_ignored_body_is_coalesced(self):
        self.luxi.pending["QueryClusterInfo"] = None
        json_type = {"content-type": "application/json"}
        first = self.app.process("GET", "/2/info", "", json_type, b"{}", "192.0.2.9")
        second = self.app.process("GET", "/2/info", "", {}, b"", "192.0.2.9")
        self.clock.advance(0)
        self.assertEqual([c for c in self.luxi.calls if c[0] == "QueryClusterInfo"],
                         [("QueryClusterInfo", ())])
        self.luxi.pending["QueryClusterInfo"].callback({"name": "c.test"})
        self.assertEqual(self.successResultOf(first).body, self.successResultOf(second).body)

    def test_content_type(self):
        headers = self.auth("admin")
        for ctype in ("text/plain", "application/x-www-form-urlencoded", ""):
            headers["Content-Type"] = ctype
            self.assertError(self.process("PUT", "/2/things/a", headers=headers, body=b"{}"),
                             415)
        del headers["Content-Type"]
        self.assertError(self.process("PUT", "/2/things/a", headers=headers, body=b"{}"), 415)
        for ctype in ("APPLICATION/JSON", "application/json; charset=utf-8"):
            headers = {"AUTHORIZATION": basic("admin", "adminpw"), "content-TYPE": ctype}
            self.assertEqual(self.process("PUT", "/2/things/a", headers=headers,
                                          body=b"[1]").status, 200)

    def test_bad_json(self):
        headers = self.auth("admin")
        for body in (b"{", b"\xff\xfe", b"[NaN]", b"[1] x", b"[" * 100000):
            response = self.process("PUT", "/2/things/a", headers=headers, body=body)
            message = self.assertError(response, 400)["message"]
            self.assertTrue(message.startswith("Unable to parse JSON data: "), message)

    def test_empty_body_is_none(self):
        status, body = self.json("PUT", "/2/things/a", headers=self.auth("admin"))
        self.assertEqual((status, body["body"]), (200, None))

    def test_opcode_body_must_be_an_object(self):
        self.assertError(self.process("POST", "/2/things/a/op", headers=self.auth("admin"),
                                      body=b"[]"), 400, "The request body must be a JSON object")

    def test_body_over_the_limit(self):
        app = self.make_app(max_body=1024)
        response = self.process("PUT", "/2/things/a", headers=self.auth("admin"),
                                body=b"[" + b"1," * 600 + b"1]", app=app)
        self.assertError(response, 413)

    def test_error_message_is_html_escaped(self):
        self.luxi.answers["QueryClusterInfo"] = gerrors.OpExecError("<b>&bad</b> 'x'")
        self.assertError(self.process("GET", "/2/info"), 500,
                         "&lt;b&gt;&amp;bad&lt;/b&gt; &#x27;x&#x27;")  # as Ganeti: quotes too

    def test_client_gone_cancels_the_luxi_call(self):
        self.luxi.pending["QueryClusterInfo"] = None
        d = self.app.process("GET", "/2/info", "", {}, b"", "192.0.2.1")
        self.clock.advance(0)
        self.assertNoResult(d)
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        self.assertIn(("cancelled", "QueryClusterInfo"), self.luxi.calls)


class ErrorMappingTest(AppCase):
    CASES = [
        (gerrors.OpPrereqError("Node 'x' not known", gerrors.ECODE_NOENT), 404,
         "Node &#x27;x&#x27; not known"),
        (gerrors.OpPrereqError("Bad value", gerrors.ECODE_INVAL), 400,
         "Bad value (wrong_input)"),
        (gerrors.OpPrereqError("No code"), 400, "No code"),
        (gerrors.ParameterError("Unknown field 'zz'"), 400, "Unknown field &#x27;zz&#x27;"),
        (gerrors.OpCodeUnknown("OP_NOPE"), 400, "OP_NOPE"),
        (gerrors.JobQueueFull(), 503, "Job queue is full, needs archiving"),
        (gerrors.JobQueueDrainError("drained"), 503, "Job queue is drained, cannot submit"),
        (gerrors.NoMasterError("gone"), 502, "Cannot talk to the master daemon: gone"),
        (gerrors.ConnectionClosedError("closed"), 502,
         "Cannot talk to the master daemon: closed"),
        (gerrors.ProtocolError("junk"), 502, "Cannot talk to the master daemon: junk"),
        (gerrors.TimeoutError("slow"), 504, "Timeout while talking to the master daemon: slow"),
        (gerrors.JobLost("Job 7 lost"), 404, "Job 7 lost"),
        (gerrors.OpExecError("it broke"), 500, "it broke"),
        (gerrors.GenericError(), 500, "GenericError"),
        (errors.HttpForbidden("no"), 403, "no"),
    ]

    def test_ganeti_errors(self):
        for err, code, message in self.CASES:
            self.luxi.answers["QueryClusterInfo"] = err
            self.assertError(self.process("GET", "/2/info"), code, message)

    def test_http_error_headers_are_kept(self):
        self.luxi.answers["QueryClusterInfo"] = errors.HttpServiceUnavailable(
            "later", headers={"Retry-After": "5"})
        response = self.process("GET", "/2/info")
        self.assertError(response, 503, "later")
        self.assertIn(("Retry-After", "5"), response.headers)

    def test_bugs_are_500_without_details_and_logged(self):
        self.luxi.answers["QueryClusterInfo"] = KeyError("secret internals")
        body = self.assertError(self.process("GET", "/2/info"), 500, "Internal error")
        self.assertNotIn("secret", json.dumps(body))
        self.assertEqual(len(self.flushLoggedErrors(KeyError)), 1)

    def test_unserialisable_result_is_500(self):
        app = self.make_app(routes=[Route("/x", {"GET": Method(lambda r: object(), "x")})])
        self.assertError(self.process("GET", "/x", app=app), 500, "Internal error")
        self.assertEqual(len(self.flushLoggedErrors(TypeError)), 1)


class AuthTest(AppCase):
    def test_anonymous_read_allowed(self):
        self.assertEqual(self.process("GET", "/2/things/a").status, 200)

    def test_anonymous_write_is_401_with_challenge(self):
        response = self.process("PUT", "/2/things/a")
        self.assertError(response, 401, "Authentication required")
        self.assertIn(("WWW-Authenticate", 'Basic realm="Ganeti Remote API"'),
                      response.headers)

    def test_auth_comes_before_the_body(self):
        # a bad body from an anonymous client is refused for the missing credentials
        for method, path in (("PUT", "/2/things/a"), ("POST", "/2/things/a/op")):
            response = self.process(method, path, body=b"{not json",
                                    headers={"content-type": "text/plain"})
            self.assertError(response, 401)

    def test_bad_credentials_always_checked(self):
        for header in (basic("admin", "wrong"), basic("nobody", "x"), "Basic !!!",
                       "Basic " + base64.b64encode(b"no-colon").decode(), "Digest x=1",
                       "Bearer abc", basic("admin", "")):
            # (from one address each: repeated failures would be slowed down)
            response = self.process("GET", "/2/things/a", headers={"Authorization": header},
                                    ip=f"192.0.2.{len(header)}")
            self.assertError(response, 401)
            self.assertIn(("WWW-Authenticate", 'Basic realm="Ganeti Remote API"'),
                          response.headers)

    def test_password_schemes(self):
        for user, password in (("admin", "adminpw"), ("hashed", "hashedpw"),
                               ("reader", "readerpw"), ("plain", "plainpw")):
            status, body = self.json("GET", "/2/things/a",
                                     headers={"authorization": basic(user, password)})
            self.assertEqual((status, body["user"]), (200, user))
        # the {HA1} value itself is not a password
        ha1 = crypto.rapi_ha1("hashed", "hashedpw")
        self.assertError(self.process("GET", "/2/things/a",
                                      headers={"authorization": basic("hashed", ha1)}), 401)

    def test_write_access(self):
        headers = {"Authorization": basic("reader", "readerpw")}
        response = self.process("PUT", "/2/things/a", headers=headers)
        self.assertError(response, 403,
                         "User &#x27;reader&#x27; lacks the &#x27;write&#x27; permission this "
                         "resource needs")
        self.assertError(self.process("PUT", "/2/things/a",
                                      headers={"Authorization": basic("plain", "plainpw")}),
                         403)
        for user in ("admin", "hashed"):
            headers = {"Authorization": basic(user, f"{user}pw")}
            self.assertEqual(self.process("DELETE", "/2/things/a", headers=headers).status,
                             200)

    def test_read_or_write_access(self):
        self.assertError(self.process("GET", "/2/query/node"), 401)
        self.assertError(self.process("GET", "/2/query/node",
                                      headers={"Authorization": basic("plain", "plainpw")}),
                         403)
        for user in ("reader", "admin"):
            headers = {"Authorization": basic(user, f"{user}pw")}
            self.assertEqual(self.process("GET", "/2/query/node", headers=headers).status,
                             200)
        # read only: a write-only user is refused
        headers = {"Authorization": basic("admin", "adminpw")}
        self.assertError(self.process("GET", "/2/readers", headers=headers), 403)

    def test_users_file_change_is_seen(self):
        headers = {"Authorization": basic("newbie", "newpw")}
        self.assertError(self.process("GET", "/2/things/a", headers=headers), 401)
        with open(self.users_path, "a") as f:
            f.write("newbie newpw\n")
        self.clock.advance(1)
        self.assertEqual(self.process("GET", "/2/things/a", headers=headers).status, 200)

    def test_failed_logins_slow_down(self):
        app = self.make_app(throttle=LoginThrottle(self.clock, threshold=3, base_delay=0.5,
                                                   max_delay=2.0))
        bad = {"Authorization": basic("admin", "guess")}

        def attempt(ip="192.0.2.66"):
            return app.process("GET", "/2/things/a", "", bad, b"", ip)

        for _ in range(3):
            self.assertEqual(self.successResultOf(attempt()).status, 401)
        for delay in (0.5, 1.0, 2.0, 2.0):
            d = attempt()
            self.assertNoResult(d)
            self.clock.advance(delay - 0.01)
            self.assertNoResult(d)
            self.clock.advance(0.01)
            self.assertEqual(self.successResultOf(d).status, 401)
        # other clients, good credentials and anonymous requests are not slowed down
        self.assertEqual(self.successResultOf(attempt("192.0.2.67")).status, 401)
        good = {"Authorization": basic("admin", "adminpw")}
        ok = app.process("GET", "/2/things/a", "", good, b"", "192.0.2.66")
        self.clock.advance(0)
        self.assertEqual(self.successResultOf(ok).status, 200)
        anonymous = app.process("PUT", "/2/things/a", "", {}, b"", "192.0.2.66")
        self.assertEqual(self.successResultOf(anonymous).status, 401)
        # the window passes: full speed again
        self.clock.advance(61)
        self.assertEqual(self.successResultOf(attempt()).status, 401)


class RequireAuthTest(AppCase):
    require_auth = True

    def test_anonymous_is_refused_everywhere(self):
        for path in ("/version", "/2/info", "/2/things/a"):
            self.assertError(self.process("GET", path), 401)
        headers = {"Authorization": basic("plain", "plainpw")}
        self.assertEqual(self.process("GET", "/2/info", headers=headers).status, 200)


class FakeWebSocketResource(resource.Resource):
    isLeaf = True

    def __init__(self):
        super().__init__()
        self.rendered = []

    def render(self, request):
        self.rendered.append(request)
        return server.NOT_DONE_YET


class BuiltinRoutesTest(AppCase):
    def setUp(self):
        super().setUp()
        self.static = os.path.join(self.dir, "static")
        os.makedirs(os.path.join(self.static, "sub"))
        for name, content in (("index.html", "<html>"), ("app.js", "x()"),
                              ("style.css", "a{}"), (".secret", "s"), ("sub/index.html", "s"),
                              ("data.bin", "b")):
            with open(os.path.join(self.static, name), "w") as f:
                f.write(content)
        with open(os.path.join(self.dir, "outside.html"), "w") as f:
            f.write("outside")
        os.symlink(os.path.join(self.dir, "outside.html"), os.path.join(self.static, "link.html"))
        self.ws = FakeWebSocketResource()
        self.app = self.make_app(websocket=lambda: self.ws, static_dir=self.static)

    def test_builtin_routes_only_when_served(self):
        self.assertEqual([r.pattern for r in BUILTIN_ROUTES],
                         ["/2/feed", "/2/instances/{instance_name}/console/websocket",
                          "/dashboard", "/dashboard/access", "/dashboard/{static_path}"])
        bare = self.make_app()
        for path in ("/2/feed", "/2/instances/i1/console/websocket", "/dashboard",
                     "/dashboard/", "/dashboard/access"):
            self.assertError(self.process("GET", path, app=bare), 404)

    def test_feed_is_handed_to_the_websocket_resource(self):
        response = self.process("GET", "/2/feed")
        self.assertIs(response.resource, self.ws)
        self.assertEqual(response.status, 101)
        self.assertError(self.process("PUT", "/2/feed"), 501)
        self.assertError(self.process("HEAD", "/2/feed"), 501)
        bad = {"Authorization": basic("admin", "nope")}
        self.assertError(self.process("GET", "/2/feed", headers=bad), 401)
        strict = self.make_app(websocket=lambda: self.ws, require_auth=True)
        self.assertError(self.process("GET", "/2/feed", app=strict), 401)
        headers = {"Authorization": basic("reader", "readerpw")}
        response = self.process("GET", "/2/feed", headers=headers, app=strict)
        self.assertEqual((response.resource, response.user), (self.ws, "reader"))

    def test_dashboard_files(self):
        response = self.process("GET", "/dashboard")
        self.assertEqual(response.status, 301)
        self.assertIn(("Location", "/dashboard/"), response.headers)
        for path, body, ctype in (("/dashboard/", b"<html>", "text/html; charset=utf-8"),
                                  ("/dashboard/index.html", b"<html>",
                                   "text/html; charset=utf-8"),
                                  ("/dashboard/app.js", b"x()",
                                   "text/javascript; charset=utf-8"),
                                  ("/dashboard/style.css", b"a{}", "text/css; charset=utf-8"),
                                  ("/dashboard/sub/", b"s", "text/html; charset=utf-8"),
                                  ("/dashboard/data.bin", b"b", "application/octet-stream")):
            response = self.process("GET", path, query="v=3")
            self.assertEqual((response.status, response.body), (200, body), path)
            self.assertIn(("Content-Type", ctype), response.headers)
        response = self.process("GET", "/dashboard/sub")
        self.assertEqual(response.status, 301)
        self.assertIn(("Location", "/dashboard/sub/"), response.headers)

    def test_dashboard_refuses_escapes_and_hidden_files(self):
        for path in ("/dashboard/../users", "/dashboard/sub/../../outside.html",
                     "/dashboard/.secret", "/dashboard/link.html", "/dashboard/missing.js",
                     "/dashboard//app.js", "/dashboard/app.js/", "/dashboard/./app.js",
                     "/dashboard/%2e%2e/outside.html"):
            self.assertError(self.process("GET", path), 404)
        self.assertError(self.process("PUT", "/dashboard/app.js"), 501)

    def test_changed_file_is_served_fresh(self):
        self.assertEqual(self.process("GET", "/dashboard/app.js").body, b"x()")
        path = os.path.join(self.static, "app.js")
        with open(path, "w") as f:
            f.write("y(1)")
        self.assertEqual(self.process("GET", "/dashboard/app.js").body, b"y(1)")

    def test_dashboard_needs_auth_when_required(self):
        strict = self.make_app(static_dir=self.static, require_auth=True)
        self.assertError(self.process("GET", "/dashboard/", app=strict), 401)

    def test_dashboard_access_says_who_may_write(self):
        self.assertEqual(self.json("GET", "/dashboard/access"),
                         (200, {"user": None, "write": False}))
        for user, password, write in (("admin", "adminpw", True), ("reader", "readerpw", False),
                                      ("hashed", "hashedpw", True), ("plain", "plainpw", False)):
            headers = {"Authorization": basic(user, password)}
            self.assertEqual(self.json("GET", "/dashboard/access", headers=headers),
                             (200, {"user": user, "write": write}))
            self.assertEqual(self.json("GET", "/dashboard/access", "login=1", headers=headers),
                             (200, {"user": user, "write": write}))
        # ?login=1 makes an anonymous browser ask for credentials
        response = self.process("GET", "/dashboard/access", "login=1")
        self.assertError(response, 401)
        self.assertIn("WWW-Authenticate", dict(response.headers))
        self.assertError(self.process("GET", "/dashboard/access", "login=x"), 400)
        self.assertError(self.process("GET", "/dashboard/access", "other=1"), 400)
        self.assertError(self.process("PUT", "/dashboard/access"), 501)
        strict = self.make_app(static_dir=self.static, require_auth=True)
        self.assertError(self.process("GET", "/dashboard/access", app=strict), 401)


class CoalesceTest(AppCase):
    """Identical GETs read in one reactor turn share one handler run (one LUXI call)."""

    def start(self, path="/2/info", query="", headers=None, method="GET", body=b""):
        return self.app.process(method, path, query, headers or {}, body, "192.0.2.5")

    def calls(self, method="QueryClusterInfo"):
        return [c for c in self.luxi.calls if c[0] == method]

    def test_same_turn_requests_share_one_call(self):
        first, second = self.start(), self.start()
        self.assertNoResult(first)  # nothing runs before the turn ends
        self.assertEqual(self.calls(), [])
        self.clock.advance(0)
        self.assertEqual(len(self.calls()), 1)
        self.assertEqual(self.successResultOf(first).body, self.successResultOf(second).body)
        third = self.start()  # a later turn: a new call
        self.clock.advance(0)
        self.assertEqual(self.successResultOf(third).status, 200)
        self.assertEqual(len(self.calls()), 2)
        self.assertEqual((self.app.coalescer.calls, self.app.coalescer.runs), (3, 2))

    def test_request_after_the_call_started_is_not_joined(self):
        self.luxi.pending["QueryClusterInfo"] = None
        first = self.start()
        self.clock.advance(0)
        late = self.start()
        self.clock.advance(0)
        self.assertEqual(len(self.calls()), 2)
        self.assertNoResult(first)
        self.assertNoResult(late)

    def test_keys(self):
        admin = {"Authorization": basic("admin", "adminpw")}
        reader = {"Authorization": basic("reader", "readerpw")}
        answers = [self.start("/2/things/a"), self.start("/2/things/b"),
                   self.start("/2/things/a", "bulk=1"), self.start("/2/things/a", "bulk=1"),
                   self.start("/2/things/a", headers=admin),
                   self.start("/2/things/a", headers=reader)]
        self.clock.advance(0)
        bodies = [json.loads(self.successResultOf(d).body) for d in answers]
        self.assertEqual([(b["name"], b["bulk"], b["user"]) for b in bodies],
                         [("a", False, None), ("b", False, None), ("a", True, None),
                          ("a", True, None), ("a", False, "admin"), ("a", False, "reader")])
        self.assertEqual(self.app.coalescer.runs, 5)

    def test_jobs_bodies_and_writes_are_never_coalesced(self):
        submitted = []

        def submit(request):
            submitted.append(request.path)
            return len(submitted)

        app = self.make_app(routes=[
            Route("/2/os", {"GET": Method(submit, "job", result="job")}),
            Route("/2/wait", {"GET": Method(lambda r: r.body, "wait", body="json")})])
        first = app.process("GET", "/2/os", "", {}, b"", "192.0.2.1")
        second = app.process("GET", "/2/os", "", {}, b"", "192.0.2.1")
        self.assertEqual([self.successResultOf(d).body for d in (first, second)],
                         [b"1", b"2"])
        json_headers = {"content-type": "application/json"}
        waits = [app.process("GET", "/2/wait", "", json_headers, body, "192.0.2.1")
                 for body in (b"[1]", b"[2]")]
        self.assertEqual([self.successResultOf(d).body for d in waits], [b"[1]", b"[2]"])
        self.assertEqual(app.coalescer.runs, 0)

    def test_errors_are_shared(self):
        self.luxi.answers["QueryClusterInfo"] = gerrors.NoMasterError("down")
        answers = [self.start(), self.start()]
        self.clock.advance(0)
        for d in answers:
            self.assertError(self.successResultOf(d), 502)
        self.assertEqual(len(self.calls()), 1)

    def test_cancelled_waiters(self):
        self.luxi.pending["QueryClusterInfo"] = None
        first, second = self.start(), self.start()
        self.clock.advance(0)
        first.cancel()
        self.failureResultOf(first, defer.CancelledError)
        self.assertNotIn(("cancelled", "QueryClusterInfo"), self.luxi.calls)
        second.cancel()  # the last one: the call itself is cancelled
        self.failureResultOf(second, defer.CancelledError)
        self.assertIn(("cancelled", "QueryClusterInfo"), self.luxi.calls)
        # cancelled before the turn ended: nothing runs
        gone = self.start("/version")
        gone.cancel()
        self.clock.advance(0)
        self.failureResultOf(gone, defer.CancelledError)
        self.assertEqual(self.app.coalescer.runs, 1)

    def test_sync_handler_answers_at_once_without_coalescing(self):
        app = self.make_app(coalesce=False)
        self.assertIsNone(app.coalescer)
        response = app.handle("GET", "/version", "", {}, b"", "192.0.2.1")
        self.assertEqual((response.status, response.body), (200, b"2"))

    def test_awaitable_results(self):
        class Later:
            def __await__(self):
                return (yield from defer.succeed(7).__await__())

        app = self.make_app(coalesce=False,
                            routes=[Route("/x", {"GET": Method(lambda r: Later(), "x")})])
        self.assertEqual(self.successResultOf(
            app.process("GET", "/x", "", {}, b"", "192.0.2.1")).body, b"7")


class RouteIndexTest(SynchronousTestCase):
    def test_same_answers_as_routing_match(self):
        from ganeti.rapi.routes import ROUTES
        table = list(ROUTES) + BUILTIN_ROUTES + [
            Route("/{a}/{b}", {}), Route("/2/nodes/special", {}), Route("/x", {})]
        index = _RouteIndex(table)
        paths = {"/", "/2", "/x", "/y/z", "/2/nodes/special", "/2/feed", "/dashboard/a/b.js",
                 "/2/nodes/n1/role", "/2/jobs/12", "/2/jobs/abc", "/nope/a/b/c", ""}
        for route in table:
            sample = route.pattern
            for name in route.placeholders:
                sample = sample.replace("{" + name + "}", "17" if "id" in name else "n-1.x")
            paths.add(sample)
        for path in sorted(paths):
            self.assertEqual(index.match(path), routing.match(table, path), path)


class FakeSignatureTest(SynchronousTestCase):
    def test_scripted_luxi_matches_the_real_client(self):
        self.assertEqual(inspect.signature(ScriptedLuxi.call).parameters.keys(),
                         inspect.signature(AsyncLuxiClient.call).parameters.keys())


class WebTest(AppCase):
    """The twisted.web adapter: raw HTTP in, raw HTTP out, access log written."""

    def setUp(self):
        super().setUp()
        self.log_path = os.path.join(self.dir, "access.log")
        self.access = AccessLog(self.log_path, self.clock)
        self.access.open()
        self.addCleanup(self.access.close)
        self.ws = FakeWebSocketResource()
        self.app = self.make_app(max_body=2048, websocket=lambda: self.ws)
        self.site = make_site(self.app, self.access, self.clock)

    def connect(self):
        proto = self.site.buildProtocol(None)
        transport = StringTransport(peerAddress=_Peer("198.51.100.7"))
        proto.makeConnection(transport)
        self.addCleanup(proto.connectionLost, Failure(ConnectionDone()))
        return proto, transport

    def send(self, proto, method, path, body=b"", headers=()):
        lines = [f"{method} {path} HTTP/1.1", "Host: rapi"]
        lines += [f"{k}: {v}" for k, v in headers]
        if body is not None and not any(k.lower() == "transfer-encoding" for k, _ in headers):
            lines.append(f"Content-Length: {len(body)}")
        proto.dataReceived(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
        self.clock.advance(0)

    def responses(self, raw):
        """Split raw output into (status, headers, body) triples (Content-Length framed)."""
        out = []
        while raw:
            head, _, rest = raw.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            status = int(lines[0].split(b" ")[1])
            headers = {k.lower(): v for k, _, v in (ln.partition(b": ") for ln in lines[1:])}
            length = int(headers.get(b"content-length", b"0"))
            out.append((status, headers, rest[:length]))
            raw = rest[length:]
        return out

    def access_lines(self):
        self.access.flush()
        with open(self.log_path) as f:
            return f.read().splitlines()

    def test_request_answer_and_access_log(self):
        proto, transport = self.connect()
        self.send(proto, "GET", "/2/info?")
        [(status, headers, body)] = self.responses(transport.value())
        self.assertEqual(status, 200)
        self.assertEqual(headers[b"content-type"], b"application/json")
        self.assertEqual(json.loads(body)["name"], "c.test")
        self.assertEqual(self.access_lines(),
                         ['198.51.100.7 - - [14/Nov/2023:22:13:20 +0000] "GET /2/info? '
                          f'HTTP/1.1" 200 {len(body)}'])

    def test_keep_alive_and_user_in_the_log(self):
        proto, transport = self.connect()
        auth = ("Authorization", basic("admin", "adminpw"))
        self.send(proto, "GET", "/version", headers=[auth])
        self.clock.advance(1)
        self.send(proto, "PUT", "/2/things/a", b'{"x": 1}',
                  headers=[auth, ("Content-Type", "application/json")])
        self.send(proto, "HEAD", "/version")
        answers = self.responses(transport.value())
        self.assertEqual([a[0] for a in answers], [200, 200, 200])
        self.assertEqual(answers[0][2], b"2")
        self.assertEqual(answers[2][1][b"content-length"], b"1")
        self.assertFalse(transport.disconnecting)
        lines = self.access_lines()
        self.assertEqual(lines[0], '198.51.100.7 - admin [14/Nov/2023:22:13:20 +0000] '
                                   '"GET /version HTTP/1.1" 200 1')
        self.assertTrue(lines[1].startswith('198.51.100.7 - admin [14/Nov/2023:22:13:21 '
                                            '+0000] "PUT /2/things/a HTTP/1.1" 200 '))
        self.assertEqual(lines[2], '198.51.100.7 - - [14/Nov/2023:22:13:21 +0000] '
                                   '"HEAD /version HTTP/1.1" 200 -')

    def test_error_statuses_on_the_wire(self):
        proto, transport = self.connect()
        self.send(proto, "PUT", "/2/things/a")
        self.send(proto, "DELETE", "/2/info")
        self.send(proto, "GET", "/missing")
        answers = self.responses(transport.value())
        self.assertEqual([a[0] for a in answers], [401, 501, 404])
        self.assertEqual(answers[0][1][b"www-authenticate"], b'Basic realm="Ganeti Remote API"')
        self.assertEqual(json.loads(answers[1][2])["message"],
                         "Method DELETE is unsupported for path /2/info")

    def test_announced_large_body_is_refused_before_it_is_read(self):
        proto, transport = self.connect()
        head = ("PUT /2/things/a HTTP/1.1\r\nHost: r\r\nContent-Length: 100000\r\n"
                "Expect: 100-continue\r\nContent-Type: application/json\r\n\r\n")
        proto.dataReceived(head.encode())
        [(status, headers, body)] = self.responses(transport.value())
        self.assertEqual(status, 413)
        self.assertNotIn(b"100 Continue", transport.value())
        self.assertEqual(headers[b"connection"], b"close")
        self.assertEqual(json.loads(body)["code"], 413)
        self.assertTrue(transport.disconnecting)
        proto.dataReceived(b"x" * 100000)  # whatever still arrives is dropped
        self.assertEqual(len(self.responses(transport.value())), 1)
        self.assertEqual(self.luxi.calls, [])
        self.assertEqual(self.access_lines(), ['198.51.100.7 - - [14/Nov/2023:22:13:20 +0000] '
                                               '"PUT /2/things/a HTTP/1.1" 413 '
                                               f'{len(body)}'])

    def test_chunked_body_over_the_limit_is_cut_off(self):
        proto, transport = self.connect()
        self.send(proto, "PUT", "/2/things/a", body=None,
                  headers=[("Transfer-Encoding", "chunked"),
                           ("Content-Type", "application/json")])
        chunk = b"x" * 1000
        for _ in range(3):
            proto.dataReceived(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        [(status, _, _)] = self.responses(transport.value())
        self.assertEqual(status, 413)
        self.assertTrue(transport.disconnecting)

    def test_body_within_the_limit(self):
        proto, transport = self.connect()
        body = json.dumps(["y" * 1500]).encode()
        self.send(proto, "PUT", "/2/things/a", body,
                  headers=[("Authorization", basic("admin", "adminpw")),
                           ("Content-Type", "application/json")])
        [(status, _, answer)] = self.responses(transport.value())
        self.assertEqual((status, json.loads(answer)["body"]), (200, ["y" * 1500]))

    def test_websocket_route_renders_the_feed_resource(self):
        proto, transport = self.connect()
        self.send(proto, "GET", "/2/feed", headers=[("Upgrade", "websocket")])
        [request] = self.ws.rendered
        self.assertEqual(request.uri, b"/2/feed")
        self.assertEqual(transport.value(), b"")  # the resource owns the connection now
        self.assertEqual(self.access_lines()[-1],
                         '198.51.100.7 - - [14/Nov/2023:22:13:20 +0000] "GET /2/feed '
                         'HTTP/1.1" 101 -')

    def test_disconnect_cancels_the_pending_call(self):
        self.luxi.pending["QueryClusterInfo"] = None
        proto, transport = self.connect()
        self.send(proto, "GET", "/2/info")
        self.assertEqual(transport.value(), b"")
        proto.connectionLost(Failure(ConnectionDone()))
        self.assertIn(("cancelled", "QueryClusterInfo"), self.luxi.calls)

    def test_delayed_answer_arrives(self):
        self.luxi.pending["QueryClusterInfo"] = None
        proto, transport = self.connect()
        self.send(proto, "GET", "/2/info")
        self.luxi.pending["QueryClusterInfo"].callback({"late": True})
        [(status, _, body)] = self.responses(transport.value())
        self.assertEqual((status, json.loads(body)), (200, {"late": True}))


class _Peer:
    type = "TCP"
    port = 40000

    def __init__(self, host):
        self.host = host
