"""The master's RPC client against a broken or hostile node daemon (real TLS on 127.0.0.1):
deep JSON and oversized replies give failed results, never an exception (issue 13, item 9)."""

from twisted.internet import reactor
from twisted.trial.unittest import TestCase
from twisted.web import resource

from ganeti.rpc.client import RpcClient
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import RealNode, cert

DEEP = b"[" * 20_000 + b"]" * 20_000  # under the 64 KiB limit of these tests


class Answer(resource.Resource):
    """Answers every request with a fixed body."""

    isLeaf = True

    def __init__(self, body, code=200):
        super().__init__()
        self.body = body
        self.code = code

    def render(self, request):
        request.setResponseCode(self.code)
        return self.body


class HostileNodeTest(TestCase):
    async def setUp(self):
        self.node = RealNode(self, node_paths(self), cert("cluster.example.com"))
        port = await self.node.start()
        self.client = RpcClient(reactor, cert("cluster.example.com"), port, max_reply=64 * 1024)
        self.addCleanup(self.client.close)

    async def call(self, body, code=200):
        self.node.site.resource = Answer(body, code)
        results = await self.client.call([("n1", "127.0.0.1", False)], "version")
        return results["n1"]

    async def test_deep_reply_is_a_failed_result(self):
        for body in (DEEP, b"[true, " + DEEP + b"]", b"[" * 60_000):
            r = await self.call(body)
            self.assertFalse(r.success)
            self.assertIn("HTTP 200: reply is not JSON: JSON nested", r.fail_msg)
        r = await self.call(DEEP, code=500)
        self.assertIn("HTTP 500: reply is not JSON", r.fail_msg)
        self.assertEqual(self.flushLoggedErrors(), [])

    async def test_oversized_reply_is_cut_off(self):
        r = await self.call(b'[true, "' + b"x" * 200_000 + b'"]')
        self.assertFalse(r.success)
        self.assertEqual(r.fail_msg, "HTTP 200: reply body larger than 65536 bytes")
        # the node is still usable afterwards (a new connection)
        r = await self.call(b"[true, 1]")
        self.assertEqual((r.success, r.payload), (True, 1))

    async def test_reply_just_under_the_limit(self):
        body = b'[true, "' + b"y" * (64 * 1024 - 10) + b'"]'
        self.assertEqual(len(body), 64 * 1024)
        r = await self.call(body)
        self.assertTrue(r.success, r.fail_msg)
        self.assertEqual(len(r.payload), 64 * 1024 - 10)
