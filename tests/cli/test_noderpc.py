"""The tools' node RPC runner, built from a node's own files, against a real noded site.

The node daemon is the real noded site over real TLS on 127.0.0.1
(tests/noded/tlshelpers.py); the runner reads ``server.pem`` and the ssconf
files of a node's data directory, as ``gnt-cluster master-failover`` will with
masterd down, and runs in a thread while the reactor serves the node.
"""

import os

from twisted.internet import threads
from twisted.trial.unittest import TestCase

from ganeti.cli.noderpc import NodeRunner
from ganeti.core import constants, rpcdefs
from ganeti.core.errors import ConfigurationError
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import RealNode, cert
from tests.rpc.test_client_contract import CLUSTER, write_pem


def write_ssconf(paths, key, lines):
    with open(paths.ssconf_file(key), "w", encoding="utf-8") as f:
        f.write("".join(f"{line}\n" for line in lines))


class NodeRunnerTest(TestCase):
    async def setUp(self):
        self.node = RealNode(self, node_paths(self, "node2.example.com"), cert(CLUSTER))
        self.port = await self.node.start()
        # the node the tool runs on: its certificate and ssconf files
        self.paths = node_paths(self, "node1.example.com")
        write_pem(self.paths.server_pem, cert(CLUSTER))
        # both node names reach the one test node daemon
        write_ssconf(self.paths, "node_primary_ips", ["node1.example.com 127.0.0.1",
                                                      "node2.example.com 127.0.0.1"])
        write_ssconf(self.paths, "node_list", ["node1.example.com", "node2.example.com",
                                               "node3.example.com"])
        write_ssconf(self.paths, "online_nodes", ["node1.example.com", "node2.example.com"])
        self.resolved = []

    def resolve(self, name):
        self.resolved.append(name)
        if name == "node3.example.com":
            return "127.0.0.1"
        raise OSError(f"[Errno -2] Name or service not known: {name}")

    def runner(self):
        return NodeRunner.from_node(self.paths, port=self.port, resolve=self.resolve)

    async def test_every_node_answers(self):
        runner = self.runner()
        results = await threads.deferToThread(runner.call, runner.node_names(), "version")
        self.assertEqual(list(results), ["node1.example.com", "node2.example.com",
                                         "node3.example.com"])
        self.assertEqual({r.payload for r in results.values()}, {constants.PROTOCOL_VERSION})
        self.assertTrue(all(r.success for r in results.values()))
        # only the name ssconf does not list was resolved
        self.assertEqual(self.resolved, ["node3.example.com"])
        self.assertEqual(self.node.connections, 3)

    async def test_call_one(self):
        runner = self.runner()
        result = await threads.deferToThread(runner.call_one, "node2.example.com", "version")
        self.assertEqual((result.node, result.success, result.payload),
                         ("node2.example.com", True, constants.PROTOCOL_VERSION))

    async def test_an_unknown_name_fails_alone(self):
        runner = self.runner()
        results = await threads.deferToThread(
            runner.call, ["node2.example.com", "nowhere.example.com"], "version")
        self.assertTrue(results["node2.example.com"].success)
        bad = results["nowhere.example.com"]
        self.assertFalse(bad.success)
        self.assertEqual(bad.fail_msg, "cannot resolve node nowhere.example.com: [Errno -2] "
                                       "Name or service not known: nowhere.example.com")
        self.assertEqual(self.node.connections, 1)

    async def test_bad_arguments_contact_nobody(self):
        runner = self.runner()
        with self.assertRaises(rpcdefs.RpcArgumentError):
            await threads.deferToThread(runner.call, ["node2.example.com"], "test_delay", ["x"])
        self.assertEqual(self.node.connections, 0)

    def test_node_names_from_ssconf(self):
        runner = self.runner()
        self.assertEqual(runner.node_names(), ["node1.example.com", "node2.example.com",
                                               "node3.example.com"])
        self.assertEqual(runner.node_names(online_only=True),
                         ["node1.example.com", "node2.example.com"])

    def test_a_node_without_the_certificate(self):
        os.unlink(self.paths.server_pem)
        with self.assertRaisesRegex(ConfigurationError, "Cannot load the cluster certificate"):
            self.runner()

    async def test_a_node_with_another_certificate_gets_no_answer(self):
        write_pem(self.paths.server_pem, cert("stranger.example.com"))
        runner = self.runner()
        result = await threads.deferToThread(runner.call_one, "node2.example.com", "version")
        self.assertFalse(result.success)
        self.assertTrue(result.fail_msg.startswith("version on node2.example.com: "))
