"""ganeti-confd-query: argument validation and output, with an injected query function."""

import io
import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import confd_query as query
from ganeti.confd import client
from tests.confd.test_client import KEY, make_node


def reply(server, answer, serial, status=0):
    return client.ConfdReply(server, 1814, status, answer, serial)


class FakeQuery:
    """Records the call and returns a result summarised from canned replies."""

    def __init__(self, replies, timed_out=False, sent=None):
        self.replies = replies
        self.timed_out = timed_out
        self.sent = sent
        self.calls = []

    def __call__(self, peers, key, req_type, q, **kwargs):
        self.calls.append((peers, key, req_type, q, kwargs))
        sent = self.sent if self.sent is not None else len(peers)
        return client.summarise(self.replies, sent, self.timed_out)


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err


class ConfdQueryTestCase(SynchronousTestCase):
    def setUp(self):
        self.paths = make_node(self, ["192.0.2.1", "192.0.2.2", "192.0.2.3"])
        self.fake = FakeQuery([reply("192.0.2.1", "node1.example.com", 5),
                               reply("192.0.2.2", "node1.example.com", 5)])

    def run_tool(self, *argv, environ=None):
        out, err = io.StringIO(), io.StringIO()
        code = query.main(list(argv), stdout=out, stderr=err,
                          environ=self.paths.env() if environ is None else environ,
                          query_fn=self.fake)
        return Result(code, out.getvalue(), err.getvalue())


class ArgumentTest(ConfdQueryTestCase):
    def test_help_lists_types_and_options(self):
        r = self.run_tool("--help")
        self.assertEqual(r.code, 0)
        for word in ("--peer", "--port", "--coverage", "--timeout", "--json", "--hmac-key-file",
                     "node-pip-by-instance-ip", "data-collectors", "Exit codes"):
            self.assertIn(word, r.out)

    def test_version(self):
        r = self.run_tool("--version")
        self.assertEqual(r.code, 0)
        self.assertIn("ganeti-confd-query", r.out)

    def assertUsage(self, r, text):
        self.assertEqual(r.code, 2, r.err)
        self.assertIn(text, r.err)
        self.assertEqual(self.fake.calls, [])

    def test_invalid_input(self):
        self.assertUsage(self.run_tool(), "required: TYPE")
        self.assertUsage(self.run_tool("pong"), "unknown request type 'pong'")
        self.assertUsage(self.run_tool("42"), "unknown request type number 42")
        self.assertUsage(self.run_tool("--port", "0", "ping"), "port out of range")
        self.assertUsage(self.run_tool("--port", "x", "ping"), "not a port number")
        self.assertUsage(self.run_tool("--coverage", "-3", "ping"), "must be -1")
        self.assertUsage(self.run_tool("--coverage", "4", "ping"),
                         "--coverage 4 is more than the 3 peers")
        self.assertUsage(self.run_tool("--timeout", "0", "ping"), "positive number")
        self.assertUsage(self.run_tool("--timeout", "nan", "ping"), "positive number")
        self.assertUsage(self.run_tool("--peer", "not-an-ip", "ping"), "not an IP address")
        self.assertUsage(self.run_tool("cluster-master", "{bad json"), "not valid JSON")
        self.assertUsage(self.run_tool("cluster-master", "[1, 2]"), "object or a string")
        self.assertUsage(self.run_tool("ping", "a", "b"), "unrecognized arguments")

    def test_not_a_cluster_node(self):
        env = {"GANETI_ROOTDIR": "/nonexistent/node9", "GANETI_HOSTNAME": "node9"}
        r = self.run_tool("ping", environ=env)
        self.assertEqual(r.code, 1)
        self.assertIn("master_candidates_ips is missing", r.err)
        r = self.run_tool("--peer", "192.0.2.9", "ping", environ=env)
        self.assertEqual(r.code, 1)
        self.assertIn("cannot read the confd HMAC key", r.err)


class QueryTest(ConfdQueryTestCase):
    def test_defaults_come_from_the_node(self):
        r = self.run_tool("cluster-master")
        self.assertEqual(r.code, 0, r.err)
        ((peers, key, req_type, q, kwargs),) = self.fake.calls
        self.assertEqual((peers, key, req_type, q),
                         (["192.0.2.1", "192.0.2.2", "192.0.2.3"], KEY, 3, None))
        self.assertEqual(kwargs, {"port": 1814, "coverage": 0, "timeout": 10.0})
        self.assertEqual(r.out.splitlines(), [
            "node1.example.com", "serial: 5",
            "answered by: 192.0.2.1, 192.0.2.2 (2 of 3 asked)"])
        self.assertEqual(r.err, "")

    def test_options_are_passed_on(self):
        r = self.run_tool("--peer", "192.0.2.7", "--peer", "2001:db8::1", "--port", "1900",
                          "--coverage", "-1", "--timeout", "2.5", "NODE_ROLE_BYNAME", "node2")
        self.assertEqual(r.code, 0, r.err)
        ((peers, _, req_type, q, kwargs),) = self.fake.calls
        self.assertEqual((peers, req_type, q), (["192.0.2.7", "2001:db8::1"], 1, "node2"))
        self.assertEqual(kwargs, {"port": 1900, "coverage": -1, "timeout": 2.5})

    def test_json_query(self):
        self.run_tool("node-pip-by-instance-ip", '{"1": "198.51.100.4"}')
        self.assertEqual(self.fake.calls[0][3], {"1": "198.51.100.4"})
        self.run_tool("4")
        self.assertEqual(self.fake.calls[1][2:4], (4, None))

    def test_role_and_list_answers(self):
        self.fake.replies = [reply("192.0.2.1", 1, 5)]
        r = self.run_tool("node-role", "node2")
        self.assertEqual(r.out.splitlines()[0], "candidate (1)")
        self.fake.replies = [reply("192.0.2.1", ["192.0.2.1", "192.0.2.2"], 5)]
        r = self.run_tool("mc-pip-list")
        self.assertEqual(r.out.splitlines()[:2], ["192.0.2.1", "192.0.2.2"])
        self.fake.replies = [reply("192.0.2.1", [], 5)]
        self.assertEqual(self.run_tool("instances-ips-list").out.splitlines()[0], "(none)")

    def test_error_status(self):
        self.fake.replies = [reply("192.0.2.1", 0, 0, status=1)]
        r = self.run_tool("node-role", "nosuchnode")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.out.splitlines()[0], "error: unknown entry (0)")

    def test_no_answer(self):
        self.fake.replies = []
        self.fake.timed_out = True
        r = self.run_tool("--timeout", "3", "ping")
        self.assertEqual(r.code, 1)
        self.assertIn("no confd server answered within 3 s (asked 3 on port 1814)", r.err)

    def test_disagreement_is_a_warning(self):
        self.fake.replies = [reply("192.0.2.1", 1, 5), reply("192.0.2.2", 4, 5)]
        r = self.run_tool("node-role", "node2")
        self.assertEqual(r.code, 0)
        self.assertIn("WARNING: servers with the same serial gave different answers: "
                      "192.0.2.1: 1; 192.0.2.2: 4", r.err)

    def test_timed_out_with_some_answers(self):
        self.fake.replies = [reply("192.0.2.1", 2, 0)]
        self.fake.timed_out = True
        r = self.run_tool("ping")
        self.assertEqual(r.code, 0)
        self.assertIn("(1 of 3 asked) (timed out waiting for the others)", r.out)

    def test_json_output(self):
        self.fake.replies = [reply("192.0.2.1", "a", 4), reply("192.0.2.2", "b", 5)]
        r = self.run_tool("--json", "config-query", "/cluster/cluster_name")
        self.assertEqual(r.code, 0)
        data = json.loads(r.out)
        self.assertEqual(
            {k: data[k] for k in ("type", "status", "answer", "serial", "server", "servers",
                                  "asked", "consistent", "timed_out")},
            {"type": "config-query", "status": 0, "answer": "b", "serial": 5,
             "server": "192.0.2.2", "servers": ["192.0.2.1", "192.0.2.2"], "asked": 3,
             "consistent": True, "timed_out": False})
        self.assertEqual(len(data["replies"]), 2)
