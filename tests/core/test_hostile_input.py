"""Input from outside in core: nesting bounded at every JSON edge, names matched whole
(issue 13, items 9 and 11)."""

import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import bootstrap, opcodes, rpcdefs, serializer
from ganeti.core import config as configmod
from ganeti.core.errors import ConfigurationError, OpPrereqError
from ganeti.core.jobs import CorruptJobError, QueuedJob
from ganeti.core.opcodes import kinds
from ganeti.core.paths import Paths
from ganeti.core.query import Field
from tests.fakes.configs import init_options, small_config

DEEP = "[" * 50_000 + "]" * 50_000
DEEP_IN_OBJECT = '{"version": 3000000, "cluster": ' + '{"a":' * 5000 + "1" + "}" * 5000 + "}"


class ConfigLoaderTest(SynchronousTestCase):
    def assertOneLine(self, err):
        text = str(err)
        self.assertNotIn("\n", text)
        self.assertLess(len(text), 300)
        return text

    def test_deep_config_is_a_one_line_configuration_error(self):
        for text in (DEEP, DEEP_IN_OBJECT, "[" * 100_000):
            err = self.assertRaises(ConfigurationError, configmod.load, text)
            self.assertIn("config: not valid JSON: JSON nested",
                          self.assertOneLine(err))

    def test_deep_config_file(self):
        path = self.mktemp()
        with open(path, "w") as f:
            f.write(DEEP_IN_OBJECT)
        err = self.assertRaises(ConfigurationError, configmod.load_file, path)
        self.assertIn(f"nested more than {serializer.MAX_JSON_DEPTH} levels",
                      self.assertOneLine(err))

    def test_other_unreadable_configs_are_one_line_errors(self):
        for text in (b"\xff\xfe", b"", b"{", b"[]", b'{"version": "x"}', b"null"):
            err = self.assertRaises(ConfigurationError, configmod.load, text)
            self.assertOneLine(err)
        err = self.assertRaises(ConfigurationError, configmod.load_file,
                                os.path.join(self.mktemp(), "missing"))
        self.assertOneLine(err)


class JobFileTest(SynchronousTestCase):
    def test_deep_job_file_is_corrupt_not_a_crash(self):
        for text in (DEEP, '{"id": 1, "ops": ' + DEEP + "}"):
            err = self.assertRaises(CorruptJobError, QueuedJob.from_json, text, "job-1")
            self.assertIn("JSON nested", str(err))


class NodeRpcBodiesTest(SynchronousTestCase):
    def test_deep_reply_from_a_node(self):
        for body in (DEEP.encode(), b"[true, " + DEEP.encode() + b"]", b"[" * 100_000):
            err = self.assertRaises(rpcdefs.RpcReplyError, rpcdefs.decode_reply, body)
            self.assertIn("reply is not JSON: JSON nested", str(err))

    def test_reply_nesting_within_the_bound(self):
        payload = "[" * 90 + "]" * 90
        self.assertEqual(rpcdefs.decode_reply(f"[true, {payload}]".encode())[0], True)

    def test_deep_request_body(self):
        call = rpcdefs.get_call("upload_file")
        err = self.assertRaises(rpcdefs.RpcArgumentError, rpcdefs.decode_request, call,
                                DEEP.encode())
        self.assertIn("upload_file: the body is not acceptable JSON: JSON nested", str(err))
        for body in (b"\xff", b"{", b""):
            self.assertRaises(rpcdefs.RpcArgumentError, rpcdefs.decode_request, call, body)
        self.assertEqual(rpcdefs.decode_request(rpcdefs.get_call("version"), b"[]"), [])

    def test_ssconf_keys_matched_whole(self):
        call = rpcdefs.get_call("write_ssconf_files")
        for key in ("evil\n", "evil\r\n", "\nevil", "ev il", "Evil", "", "a/b", "x\x00"):
            self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, [{key: "v"}])
        self.assertEqual(call.check_args([{"cluster_name": "v"}]), [{"cluster_name": "v"}])


class OpcodeNamesTest(SynchronousTestCase):
    def test_job_ids_in_depends_matched_whole(self):
        for bad in ("7\n", "\u0661", "7 ", " 7", "7x", "", "+7"):
            op = {"OP_ID": "OP_TEST_DELAY", "duration": 0, "depends": [[bad, ["success"]]]}
            self.assertRaises(OpPrereqError, opcodes.validate, op)
        op = {"OP_ID": "OP_TEST_DELAY", "duration": 0, "depends": [["7", ["success"]]]}
        self.assertEqual(opcodes.validate(op)["depends"], [["7", ["success"]]])

    def test_op_id_declarations_matched_whole(self):
        for bad in ("OP_X\n", "OP_X ", "op_x"):
            self.assertRaises(ValueError, opcodes.OpCode, bad, "doc")

    def test_hostname_and_printable_name_kinds(self):
        for good in ("node1", "node1.example.com", "a-b.c0", "1.2.3.4", "x" * 63):
            self.assertTrue(kinds.is_hostname(good), good)
            self.assertEqual(kinds.HOSTNAME(good), good)
        for bad in ("node1\n", "node1.example.com\n", "\nnode1", "node 1", "-a", "a-", "a..b",
                    "a_b", "n\u00f6de", "", "x" * 256, None, 5):
            self.assertFalse(kinds.is_hostname(bad), bad)
            self.assertRaises(kinds.KindMismatch, kinds.HOSTNAME, bad)
        for good in ("rack2", "rack 2", "Rack-2 (east)", "r\u00e4ck"):
            self.assertTrue(kinds.is_printable_name(good), good)
        for bad in ("rack2\n", "rack\n2", " rack2", "rack2 ", "rack\t2", "rack\u20282",
                    "rack\x85", "", None):
            self.assertFalse(kinds.is_printable_name(bad), bad)
            self.assertRaises(kinds.KindMismatch, kinds.PRINTABLE_NAME, bad)


class BootstrapNamesTest(SynchronousTestCase):
    def test_cluster_and_node_names_matched_whole(self):
        self.assertEqual(small_config().cluster.cluster_name, init_options().cluster_name)
        for bad in ("cluster.example.com\n", "cluster\n.example.com", "cluster example"):
            err = self.assertRaises(OpPrereqError, small_config, cluster_name=bad)
            self.assertIn("not a valid host name", err.args[0])
        paths = Paths.for_node("/nonexistent/node1.test\n", "node1.test\n")
        err = self.assertRaises(OpPrereqError, bootstrap.build_config, init_options(), paths,
                                1700000000.0)
        self.assertIn("Invalid node name", err.args[0])

    def test_mac_prefix_matched_whole(self):
        for bad in ("aa:00:00\n", "aa:00:00:", "aa:00:00 "):
            err = self.assertRaises(OpPrereqError, small_config, mac_prefix=bad)
            self.assertIn("--mac-prefix", err.args[0])


class QueryFieldNamesTest(SynchronousTestCase):
    def test_field_names_and_titles_matched_whole(self):
        def make(name, title):
            return Field(name, title, "text", "A field.", lambda item: None)

        make("name", "Name")
        self.assertRaises(ValueError, make, "name\n", "Name")
        self.assertRaises(ValueError, make, "name", "Name\n")
