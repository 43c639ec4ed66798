"""One contract for both node RPC clients, against a real noded site over TLS.

The master's asynchronous :class:`RpcClient` and the tools' blocking
:class:`BlockingRpcClient` must answer the same calls with the same results and
the same failure texts; each assertion below runs on both.  The node is the
real noded site with its real handlers and real TLS on 127.0.0.1
(tests/noded/tlshelpers.py); the blocking client runs in a thread, as the
reactor serves the node.
"""

import os
import socket

from cryptography.hazmat.primitives import serialization
from twisted.internet import reactor, threads
from twisted.trial.unittest import TestCase

from ganeti.core import constants, rpcdefs
from ganeti.rpc.blocking import BlockingRpcClient
from ganeti.rpc.client import OFFLINE_MSG, RpcClient
from ganeti.rpc.noderpc import NodeTarget
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import RealNode, cert

CLUSTER = "cluster.example.com"


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_pem(path, cluster):
    """``cluster`` (a ClusterCertificate) as a server.pem file: key, then certificate."""
    key = cluster.key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.TraditionalOpenSSL,
                                    serialization.NoEncryption())
    with open(path, "wb") as f:
        f.write(key + cluster.cert.public_bytes(serialization.Encoding.PEM))
    return path


class ContractMixin:
    """The assertions; subclasses say how to make a client and how to call it."""

    async def setUp(self):
        self.node = RealNode(self, node_paths(self), cert(CLUSTER))
        self.port = await self.node.start()
        self.client = self.make_client(self.port)

    def make_client(self, port, cluster=None, **options):
        raise NotImplementedError

    async def call(self, client, nodes, name, args=(), timeout=None):
        raise NotImplementedError

    async def call_one(self, client, node, name, args=(), timeout=None):
        raise NotImplementedError

    async def test_success(self):
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1")], "version")
        r = results["n1"]
        self.assertEqual((r.success, r.payload, r.offline, r.call),
                         (True, constants.PROTOCOL_VERSION, False, "version"))

    async def test_call_one(self):
        r = await self.call_one(self.client, NodeTarget("n1", "127.0.0.1"), "version")
        self.assertEqual((r.node, r.success, r.payload), ("n1", True,
                                                           constants.PROTOCOL_VERSION))

    async def test_many_nodes(self):
        nodes = [NodeTarget(f"n{i}", "127.0.0.1") for i in range(3)]
        results = await self.call(self.client, nodes, "test_delay", [0.05])
        self.assertEqual(sorted(results), ["n0", "n1", "n2"])
        self.assertTrue(all(r.success for r in results.values()))

    async def test_node_failure_message(self):
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1")],
                                  "jobqueue_update", ["../../etc/passwd", "x"])
        self.assertFalse(results["n1"].success)
        self.assertIn("invalid job queue file name", results["n1"].fail_msg)

    async def test_bad_arguments_never_sent(self):
        with self.assertRaises(rpcdefs.RpcArgumentError):
            await self.call(self.client, [NodeTarget("n1", "127.0.0.1")], "test_delay", ["x"])
        with self.assertRaises(rpcdefs.RpcArgumentError):
            await self.call(self.client, [NodeTarget("n1", "127.0.0.1")], "no_such_call")
        self.assertEqual(self.node.connections, 0)

    async def test_offline_not_contacted(self):
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1"),
                                                NodeTarget("n3", "127.0.0.1", True)], "version")
        self.assertTrue(results["n1"].success)
        self.assertEqual((results["n3"].offline, results["n3"].fail_msg), (True, OFFLINE_MSG))
        self.assertEqual(self.node.connections, 1)

    async def test_closed_port(self):
        client = self.make_client(closed_port())
        results = await self.call(client, [NodeTarget("n2", "127.0.0.1")], "version")
        self.assertFalse(results["n2"].success)
        self.assertEqual(results["n2"].fail_msg, "version on n2: connection refused")

    async def test_timeout(self):
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1")], "test_delay",
                                  [30], timeout=0.2)
        self.assertFalse(results["n1"].success)
        self.assertEqual(results["n1"].fail_msg, "test_delay on n1: timed out after 0.2 s")

    async def test_a_stranger_is_refused(self):
        """A client with another certificate gets no answer from the node."""
        client = self.make_client(self.port, cluster=cert("stranger.example.com"))
        results = await self.call(client, [NodeTarget("n1", "127.0.0.1")],
                                  "jobqueue_update", ["job-1", "x"])
        self.assertFalse(results["n1"].success)
        self.assertTrue(results["n1"].fail_msg.startswith("jobqueue_update on n1: "))
        self.assertFalse(os.path.exists(os.path.join(self.node.ctx.paths.queue_dir, "job-1")))
        # the same call from the cluster does write it (so the check above can fail)
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1")],
                                  "jobqueue_update", ["job-1", "x"])
        self.assertTrue(results["n1"].success)
        self.assertTrue(os.path.exists(os.path.join(self.node.ctx.paths.queue_dir, "job-1")))

    async def test_reply_too_large(self):
        client = self.make_client(self.port, max_reply=64 * 1024)
        # about 300 KB of answer: cut off while it is being read
        files = [f"/var/lib/ganeti/{'x' * 80}/{i}" for i in range(3000)]
        results = await self.call(client, [NodeTarget("n1", "127.0.0.1")], "node_verify",
                                  [{"filelist": files}, CLUSTER])
        self.assertEqual(results["n1"].fail_msg,
                         "HTTP 200: reply body larger than 65536 bytes")
        results = await self.call(self.client, [NodeTarget("n1", "127.0.0.1")], "node_verify",
                                  [{"filelist": files}, CLUSTER])
        self.assertEqual(len(results["n1"].payload["filelist"]), 3000)


class AsyncClientContractTest(ContractMixin, TestCase):
    """The master's client, on the reactor."""

    def make_client(self, port, cluster=None, **options):
        client = RpcClient(reactor, cluster or cert(CLUSTER), port, **options)
        self.addCleanup(client.close)
        return client

    async def call(self, client, nodes, name, args=(), timeout=None):
        return await client.call(nodes, name, args, timeout)

    async def call_one(self, client, node, name, args=(), timeout=None):
        return await client.call_one(node, name, args, timeout)


class BlockingClientContractTest(ContractMixin, TestCase):
    """The tools' client, in a thread while the reactor serves the node."""

    def make_client(self, port, cluster=None, **options):
        path = os.path.join(self.mktemp() + "-server.pem")
        return BlockingRpcClient(write_pem(path, cluster or cert(CLUSTER)), port, **options)

    async def call(self, client, nodes, name, args=(), timeout=None):
        return await threads.deferToThread(client.call, nodes, name, args, timeout)

    async def call_one(self, client, node, name, args=(), timeout=None):
        return await threads.deferToThread(client.call_one, node, name, args, timeout)
