"""The console WebSocket of noded (/console/<name>) with a fake serial chardev, over
real mutual TLS on 127.0.0.1: bytes both ways, busy, missing socket, close when the
instance stops, strangers refused in the TLS handshake."""

from twisted.trial.unittest import TestCase

from ganeti.noded import console as nc
from tests.noded.consolehelpers import (
    ConsoleClient,
    Counter,
    FakeSerial,
    NodeConsole,
    plateau,
    quiesce,
    short_paths,
)
from tests.noded.tlshelpers import cert


class NodeConsoleTest(TestCase):
    async def setUp(self):
        self.addCleanup(quiesce)  # runs last
        self.paths = short_paths(self)
        self.cluster = cert("cluster")
        self.node = NodeConsole(self, self.paths, self.cluster)
        self.port = await self.node.start()
        self.serial = FakeSerial(self, self.paths.run_dir, "vm1.test")
        await self.serial.start()

    async def client(self, name="vm1.test", cert_=None):
        client = ConsoleClient(self, self.port, f"/console/{name}",
                               cert=cert_ or self.cluster)
        return await client.connect()

    async def test_bytes_both_ways_then_instance_stops(self):
        client = await self.client()
        await client.opened()
        await self.serial.connected.until(b"x")
        self.serial.write(b"GANETI-GUEST-READY vm1.test\r\n# ")
        await client.until(b"# ")
        self.assertTrue(all(client.factory.binary))
        client.send(b"echo hi\r")
        client.send("ü\r".encode(), binary=False)
        await self.serial.received.until("echo hi\rü\r".encode())
        await self.serial.stop()
        code, reason = await client.closed()
        self.assertEqual(code, nc.CLOSE_NORMAL)
        self.assertIn("console closed", reason)
        self.assertEqual(self.node.site.resource.streams[nc.PATH_PREFIX]._factory.active,
                         set())

    async def test_flow_control_guest_output(self):
        """A client that does not read stops noded reading the serial socket (QEMU's
        writes back up); once it reads again, every byte arrives in order."""
        client = await self.client()
        client.factory.counter = Counter()
        await client.opened()
        await self.serial.connected.until(b"x")
        client.proto.transport.pauseProducing()  # the client stops reading
        total = 32 * 1024 * 1024
        fake = self.serial.clients[-1]
        fake.flood(total)
        written = await plateau(fake)
        self.assertLess(written, total // 2)  # held back, not buffered without bound
        client.proto.transport.resumeProducing()
        await client.factory.counter.until(total)
        self.assertIsNone(client.factory.counter.bad)
        self.assertEqual(client.factory.counter.count, total)

    async def test_second_client_is_busy(self):
        first = await self.client()
        await first.opened()
        second = await self.client()
        code, reason = await second.closed()
        self.assertEqual(code, nc.CLOSE_BUSY)
        self.assertIn("console busy", reason)
        # the first still works, and once it leaves the console is free again
        await self.serial.connected.until(b"x")
        first.send(b"a")
        await self.serial.received.until(b"a")
        first.proto.sendClose(1000)
        await first.closed()
        await self.serial.lost.until(b"x")
        third = await self.client()
        await third.opened()
        third.send(b"b")
        await self.serial.received.until(b"ab")

    async def test_instance_without_socket(self):
        client = await self.client("other.test")
        code, reason = await client.closed()
        self.assertEqual(code, nc.CLOSE_NOT_FOUND)
        self.assertIn("no serial console on this node", reason)

    async def test_bad_name(self):
        client = await self.client("..%2Fetc")
        code, _ = await client.closed()
        self.assertEqual(code, nc.CLOSE_BAD_REQUEST)

    async def test_other_certificate_is_refused(self):
        client = ConsoleClient(self, self.port, "/console/vm1.test", cert=cert("stranger"))
        try:
            await client.connect()
            await client.opened()
        except Exception:  # refused in the TLS handshake, whichever way it shows
            return
        self.fail("a stranger's certificate was accepted")

    def test_path(self):
        self.assertEqual(nc.instance_from_path("/console/vm1.test"), "vm1.test")
        for bad in ("/console/", "/console/a/b", "/console/..", "/other/vm1", "/console/-x"):
            self.assertIsNone(nc.instance_from_path(bad), bad)
