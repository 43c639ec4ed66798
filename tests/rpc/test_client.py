"""The RPC client against a real noded site over TLS on 127.0.0.1."""

import socket

from twisted.internet import reactor
from twisted.trial.unittest import TestCase

from ganeti.core import constants, rpcdefs
from ganeti.rpc.client import OFFLINE_MSG, NodeTarget, RpcClient
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import RealNode, cert


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ClientTest(TestCase):
    async def setUp(self):
        self.node = RealNode(self, node_paths(self), cert("cluster.example.com"))
        port = await self.node.start()
        self.client = self.make_client(port)

    def make_client(self, port):
        client = RpcClient(reactor, cert("cluster.example.com"), port)
        self.addCleanup(client.close)
        return client

    async def test_success(self):
        results = await self.client.call([("n1", "127.0.0.1", False)], "version")
        r = results["n1"]
        self.assertEqual((r.success, r.payload, r.offline), (True, constants.PROTOCOL_VERSION,
                                                             False))

    async def test_node_failure_message(self):
        results = await self.client.call([NodeTarget("n1", "127.0.0.1")], "jobqueue_update",
                                         ["../../etc/passwd", "x"])
        self.assertFalse(results["n1"].success)
        self.assertIn("invalid job queue file name", results["n1"].fail_msg)

    async def test_bad_arguments_never_sent(self):
        self.assertRaises(rpcdefs.RpcArgumentError, self.client.call,
                          [("n1", "127.0.0.1", False)], "test_delay", ["x"])
        self.assertEqual(self.node.connections, 0)

    async def test_closed_port(self):
        client = self.make_client(closed_port())
        results = await client.call([("n2", "127.0.0.1", False)], "version")
        self.assertFalse(results["n2"].success)
        self.assertIn("connection refused", results["n2"].fail_msg)

    async def test_offline_not_contacted(self):
        results = await self.client.call([("n1", "127.0.0.1", False),
                                          ("n3", "127.0.0.1", True)], "version")
        self.assertTrue(results["n1"].success)
        self.assertTrue(results["n3"].offline)
        self.assertEqual(results["n3"].fail_msg, OFFLINE_MSG)
        self.assertEqual(self.node.connections, 1)

    def test_offline_answered_at_once(self):
        d = self.client.call([("n3", "127.0.0.1", True)], "version")
        self.assertTrue(self.successResultOf(d)["n3"].offline)
        self.assertEqual(self.node.connections, 0)

    async def test_timeout(self):
        results = await self.client.call([("n1", "127.0.0.1", False)], "test_delay", [30],
                                         timeout=0.2)
        self.assertFalse(results["n1"].success)
        self.assertIn("timed out after 0.2 s", results["n1"].fail_msg)

    async def test_connection_reused(self):
        for _ in range(3):
            results = await self.client.call([("n1", "127.0.0.1", False)], "version")
            self.assertTrue(results["n1"].success)
        self.assertEqual(self.node.connections, 1)

    async def test_many_nodes_concurrently(self):
        nodes = [(f"n{i}", "127.0.0.1", False) for i in range(4)]
        results = await self.client.call(nodes, "test_delay", [0.1])
        self.assertEqual(sorted(results), ["n0", "n1", "n2", "n3"])
        self.assertTrue(all(r.success for r in results.values()))
