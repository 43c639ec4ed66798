"""Real mutual TLS on 127.0.0.1: only the cluster certificate is served."""

from twisted.trial.unittest import TestCase
from twisted.web import client as webclient

from ganeti.core import constants, rpcdefs
from ganeti.rpc.client import _BytesProducer
from tests.noded.helpers import node_paths
from tests.noded.tlshelpers import CustomPolicy, RealNode, agent, cert


class MutualTLSTest(TestCase):
    async def _node(self):
        self.node = RealNode(self, node_paths(self), cert("cluster.example.com"))
        return await self.node.start()

    async def test_cluster_certificate_is_served(self):
        port = await self._node()
        client = agent(self, CustomPolicy(cert("cluster.example.com")))
        response = await client.request(b"PUT", f"https://127.0.0.1:{port}/version".encode(),
                                       bodyProducer=_BytesProducer(b"[]"))
        body = await webclient.readBody(response)
        self.assertEqual(response.code, 200)
        self.assertEqual(rpcdefs.decode_reply(body), (True, constants.PROTOCOL_VERSION))

    async def _refused(self, policy):
        port = await self._node()
        client = agent(self, policy)
        d = client.request(b"PUT", f"https://127.0.0.1:{port}/version".encode(),
                                       bodyProducer=_BytesProducer(b"[]"))
        failure = await self.assertFailure(d, webclient.ResponseNeverReceived,
                                           webclient.RequestTransmissionFailed)
        self.assertEqual(self.node.connections, 1)
        return failure

    async def test_other_certificate_is_refused(self):
        err = await self._refused(CustomPolicy(cert("stranger.example.com")))
        self.assertIn("SSL", repr(err.reasons))

    async def test_no_certificate_is_refused(self):
        err = await self._refused(CustomPolicy(None))
        self.assertIn("SSL", repr(err.reasons))
