"""The live serial console through RAPI (/2/instances/<name>/console/websocket):
browser -> RAPI (TLS, basic auth) -> noded (mutual TLS) -> fake serial chardev, all
real sockets on 127.0.0.1: bytes both ways, refusals, busy, close."""

import os

from twisted.internet import defer, reactor
from twisted.internet.endpoints import SSL4ServerEndpoint
from twisted.trial.unittest import TestCase

from ganeti.core import crypto, errors
from ganeti.noded import console as nc
from ganeti.rapi import console as rc
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.server import RapiApp
from ganeti.rapi.service import RapiContextFactory
from ganeti.rapi.web import make_site
from tests.noded.consolehelpers import (
    CHUNK,
    ConsoleClient,
    Counter,
    FakeSerial,
    NodeConsole,
    pattern,
    plateau,
    quiesce,
    short_paths,
)
from tests.noded.tlshelpers import cert

USERS = "admin adminpw write\nreader readerpw read\n"
PATH = "/2/instances/vm1.test/console/websocket"
_RAPI_PEM = []


def rapi_pem():
    if not _RAPI_PEM:
        _RAPI_PEM.append(crypto.generate_self_signed("rapi.test"))
    return _RAPI_PEM[0]


class FakeLuxi:
    """masterd's answers about vm1.test and its node."""

    def __init__(self):
        self.running = True
        self.console = {"instance": "vm1.test", "kind": "ssh", "host": "node1.test"}
        self.calls = []

    def call(self, method, *args):
        self.calls.append(method)
        if method == "QueryInstances":
            if args[0] != ["vm1.test"]:
                return defer.fail(errors.OpPrereqError(
                    f"Instance '{args[0][0]}' not known", errors.ECODE_NOENT))
            return defer.succeed([["node1.test", self.running, self.console]])
        if method == "QueryNodes":
            return defer.succeed([["127.0.0.1"]])
        return defer.fail(NotImplementedError(method))


class RelayTest(TestCase):
    async def setUp(self):
        self.addCleanup(quiesce)  # runs last
        paths = short_paths(self)
        self.cluster = cert("cluster")
        self.node = NodeConsole(self, paths, self.cluster)
        node_port = await self.node.start()
        self.serial = FakeSerial(self, paths.run_dir, "vm1.test")
        await self.serial.start()
        users_path = os.path.join(paths.root, "users")
        with open(users_path, "w") as f:
            f.write(USERS)
        self.luxi = FakeLuxi()
        self.relay = rc.ConsoleRelay(reactor, self.luxi, self.cluster, noded_port=node_port)
        app = RapiApp([], self.luxi, reactor, UsersFile(users_path, reactor),
                      console=self.relay.resource)
        self.site = make_site(app, AccessLog(os.path.join(paths.root, "access.log"), reactor),
                              reactor)
        endpoint = SSL4ServerEndpoint(reactor, 0, RapiContextFactory(rapi_pem()),
                                      interface="127.0.0.1")
        self.port = await endpoint.listen(self.site)
        self.addCleanup(self.port.stopListening)

    async def client(self, user="admin", password="adminpw", path=PATH, origin=None):
        client = ConsoleClient(self, self.port.getHost().port, path, user=user,
                               password=password, origin=origin)
        return await client.connect()

    async def test_bytes_both_ways_then_instance_stops(self):
        client = await self.client()
        await client.opened()
        client.send(b"early\r")  # typed before the node end is attached: kept
        await self.serial.connected.until(b"x")
        self.serial.write(b"GANETI-GUEST-READY vm1.test\r\n# ")
        await client.until(b"# ")
        client.send(b"uname\r")
        await self.serial.received.until(b"early\runame\r")
        self.serial.write(b"Linux\r\n")
        await client.until(b"Linux\r\n")
        await self.serial.stop()
        code, reason = await client.closed()
        self.assertEqual(code, nc.CLOSE_NORMAL)
        self.assertIn("console closed", reason)

    async def test_flow_control_through_the_relay(self):
        """A browser that does not read holds the guest's output back at the serial
        socket, not in the relay's memory; then everything arrives in order."""
        client = await self.client()
        client.factory.counter = Counter()
        await client.opened()
        await self.serial.connected.until(b"x")
        client.proto.transport.pauseProducing()
        total = 32 * 1024 * 1024
        fake = self.serial.clients[-1]
        fake.flood(total)
        self.assertLess(await plateau(fake), total // 2)
        client.proto.transport.resumeProducing()
        await client.factory.counter.until(total)
        self.assertIsNone(client.factory.counter.bad)

    async def test_input_while_the_guest_does_not_read(self):
        """Typed input waits while the serial port takes none, then arrives in order."""
        client = await self.client()
        await client.opened()
        await self.serial.connected.until(b"x")
        fake = self.serial.clients[-1]
        fake.transport.pauseProducing()  # QEMU reads no input
        total = 8 * 1024 * 1024
        for start in range(0, total, CHUNK):
            client.send(pattern(start, CHUNK))
        counter = Counter()
        self.serial.received = counter
        fake.transport.resumeProducing()
        await counter.until(total)
        self.assertIsNone(counter.bad)
        self.assertEqual(counter.count, total)

    async def test_read_only_user_is_refused_with_a_reason(self):
        client = await self.client("reader", "readerpw")
        code, reason = await client.closed()
        self.assertEqual(code, rc.CLOSE_FORBIDDEN)
        self.assertIn("lacks the 'write' permission", reason)
        self.assertEqual(self.luxi.calls, [])
        self.assertEqual(self.serial.clients, [])

    async def test_anonymous_is_refused_with_a_reason(self):
        client = await self.client(user=None)
        code, reason = await client.closed()
        self.assertEqual(code, rc.CLOSE_UNAUTHENTICATED)
        self.assertIn("authentication required", reason)

    async def test_wrong_password_gets_401(self):
        client = await self.client(password="nope")
        with self.assertRaises(ConnectionError):
            await client.opened()

    async def test_second_client_is_busy_and_the_first_leaving_frees_it(self):
        first = await self.client()
        await first.opened()
        await self.serial.connected.until(b"x")
        second = await self.client()
        code, reason = await second.closed()
        self.assertEqual(code, nc.CLOSE_BUSY)
        self.assertIn("console busy", reason)
        first.proto.sendClose(1000)
        await first.closed()
        await self.serial.lost.until(b"x")
        third = await self.client()
        await third.opened()
        third.send(b"z")
        await self.serial.received.until(b"z")

    async def test_instance_not_running(self):
        self.luxi.running = False
        client = await self.client()
        code, reason = await client.closed()
        self.assertEqual(code, rc.CLOSE_UNAVAILABLE)
        self.assertIn("not running", reason)

    async def test_no_serial_console(self):
        self.luxi.console = {"instance": "vm1.test", "kind": "vnc"}
        code, reason = await (await self.client()).closed()
        self.assertEqual(code, rc.CLOSE_UNAVAILABLE)
        self.assertIn("has no serial console", reason)

    async def test_unknown_instance(self):
        client = await self.client(path="/2/instances/nope.test/console/websocket")
        code, reason = await client.closed()
        self.assertEqual((code, reason), (rc.CLOSE_NOT_FOUND, "Instance 'nope.test' not known"))

    async def test_node_unreachable(self):
        import socket
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            self.relay.noded_port = probe.getsockname()[1]
        code, reason = await (await self.client()).closed()
        self.assertEqual(code, rc.CLOSE_NODE_FAILED)
        self.assertIn("cannot reach the instance's node", reason)

    async def test_master_unreachable(self):
        self.luxi.call = lambda *args: defer.fail(ConnectionRefusedError("no masterd"))
        code, reason = await (await self.client()).closed()
        self.assertEqual(code, rc.CLOSE_UNAVAILABLE)
        self.assertIn("cannot ask the master", reason)

    async def test_other_origin_is_refused(self):
        client = await self.client(origin="https://evil.example")
        with self.assertRaises(ConnectionError):
            await client.opened()


class RouteTest(TestCase):
    """The app hands the console route to the relay with the user and its access."""

    def test_route(self):
        from tests.rapi.test_server import AppCase

        case = AppCase("run")
        case.setUp()
        asked = []

        def factory(name, user, write):
            asked.append((name, user, write))
            return "resource"
        app = case.make_app(console=factory)
        path = "/2/instances/vm1.test/console/websocket"
        from tests.rapi.test_server import basic
        for user, password in (("admin", "adminpw"), ("reader", "readerpw")):
            response = case.process("GET", path, app=app,
                                    headers={"Authorization": basic(user, password)})
            self.assertEqual((response.status, response.resource), (101, "resource"))
        response = case.process("GET", path, app=app)
        self.assertEqual(response.status, 101)
        self.assertEqual(asked, [("vm1.test", "admin", True), ("vm1.test", "reader", False),
                                 ("vm1.test", None, False)])
        self.assertEqual(case.process("GET", "/2/instances/vm1.test/console/x",
                                      app=app).status, 404)
