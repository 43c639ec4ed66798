"""A console stack for browser tests, in a process of its own (selenium blocks):
a fake guest on a unix socket (QEMU's serial chardev), noded's console endpoint
on mutual TLS, and a RAPI app (plain HTTP on 127.0.0.1, the dashboard's files)
whose fake masterd knows one running kvm instance, ``vm1.test``.

``python -m tests.integration.consolestack DIR`` prints ``READY <port>``; a line
``stop`` on stdin stops the guest (its socket closes, as when QEMU exits).
"""

from __future__ import annotations

import json
import os
import sys

from twisted.internet import defer, protocol, reactor, stdio
from twisted.internet.endpoints import SSL4ServerEndpoint, TCP4ServerEndpoint, UNIXServerEndpoint
from twisted.protocols.basic import LineReceiver

from ganeti.core import consoles, crypto
from ganeti.core.paths import Paths
from ganeti.luxi.wire import RawJson
from ganeti.noded.backend.context import NodeContext
from ganeti.noded.console import PATH_PREFIX, console_resource
from ganeti.noded.server import make_site as node_site
from ganeti.noded.tls import ClusterServerContextFactory
from ganeti.rapi.accesslog import AccessLog
from ganeti.rapi.auth import UsersFile
from ganeti.rapi.console import ConsoleRelay
from ganeti.rapi.server import RapiApp
from ganeti.rapi.tap import STATIC_DIR
from ganeti.rapi.web import make_site as rapi_site
from ganeti.rpc.tls import ClusterCertificate

NAME = "vm1.test"
USERS = "admin adminpw write\nreader readerpw read\n"
INSTANCE = {"name": NAME, "status": "running", "oper_state": True, "pnode": "node1.test",
            "snodes": [], "os": "busybox", "beparams": {"maxmem": 128}, "oper_ram": 128,
            "disk.sizes": [256], "disk_template": "file", "nic.ips": [None],
            "hvparams": {"serial_console": True}}


class Guest(protocol.Protocol):
    """A guest's shell on its serial port: echoes keys, answers each line."""

    def connectionMade(self) -> None:
        self.line = b""
        self.transport.write(f"GANETI-GUEST-READY {NAME}\r\n# ".encode())

    def dataReceived(self, data: bytes) -> None:
        for byte in data:
            char = bytes([byte])
            if char == b"\r":
                self.transport.write(b"\r\nyou typed: " + self.line + b"\r\n# ")
                self.line = b""
            else:
                self.line += char
                self.transport.write(char)


class FakeLuxi:
    """masterd, as far as the dashboard and the console relay ask."""

    def call(self, method: str, *args: object) -> defer.Deferred[object]:
        if method == "QueryInstances" and args[1] == ["pnode", "oper_state", "console"]:
            return defer.succeed([["node1.test", True, {"kind": "ssh", "instance": NAME}]])
        if method == "QueryNodes" and args[1] == ["pip"]:
            return defer.succeed([["127.0.0.1"]])
        return defer.fail(RuntimeError(f"{method} is not faked"))

    def call_raw(self, method: str, *args: object) -> defer.Deferred[RawJson]:
        if method == "QueryInstancesBulk":
            return defer.succeed(RawJson(json.dumps([INSTANCE]).encode()))
        return defer.fail(RuntimeError(f"{method} is not faked"))


class Commands(LineReceiver):
    delimiter = b"\n"

    def __init__(self, guest_port: object) -> None:
        self.guest_port = guest_port

    def lineReceived(self, line: bytes) -> None:
        if line.strip() == b"stop":
            port, self.guest_port = self.guest_port, None
            if port is not None:
                port.stopListening()
            for guest in list(GUESTS):
                guest.transport.loseConnection()

    def connectionLost(self, reason: object = None) -> None:
        if reactor.running:
            reactor.stop()


GUESTS: list[Guest] = []


class GuestFactory(protocol.Factory):
    def buildProtocol(self, addr: object) -> Guest:
        guest = Guest()
        GUESTS.append(guest)
        return guest


async def main(base: str) -> None:
    root = os.path.join(base, "node1.test")
    paths = Paths.for_node(root, "node1.test")
    serial = consoles.serial_socket_path(paths.run_dir, NAME)
    os.makedirs(os.path.dirname(serial), exist_ok=True)
    guest_port = await UNIXServerEndpoint(reactor, serial).listen(GuestFactory())
    cluster = ClusterCertificate.from_pem(crypto.generate_self_signed("cluster"))
    ctx = NodeContext(paths=paths, clock=reactor, run=defer.maybeDeferred)
    site = node_site(ctx, {}, reactor=reactor,
                     streams={PATH_PREFIX: console_resource(reactor, paths.run_dir)})
    node = await SSL4ServerEndpoint(reactor, 0, ClusterServerContextFactory(cluster),
                                    interface="127.0.0.1").listen(site)
    users = os.path.join(base, "users")
    with open(users, "w") as f:
        f.write(USERS)
    luxi = FakeLuxi()
    relay = ConsoleRelay(reactor, luxi, cluster, noded_port=node.getHost().port)
    app = RapiApp(None, luxi, reactor, UsersFile(users, reactor), static_dir=STATIC_DIR,
                  console=relay.resource)
    rapi = await TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(
        rapi_site(app, AccessLog(os.path.join(base, "access.log"), reactor), reactor))
    stdio.StandardIO(Commands(guest_port))
    print(f"READY {rapi.getHost().port}", flush=True)


if __name__ == "__main__":
    reactor.callWhenRunning(lambda: defer.Deferred.fromCoroutine(main(sys.argv[1])))
    reactor.run()
