"""The serial console of kvm instances on noded's mutual-TLS port (our extension).

``GET /console/<instance>`` with a WebSocket upgrade attaches the connection
to the instance's serial socket, as its hypervisor names it
(:meth:`ganeti.noded.hypervisors.base.Hypervisor.serial_console`; kvm's is
``RUN_DIR/kvm-hypervisor/ctrl/<name>.serial``, QEMU's chardev server): every
binary (or text, taken as UTF-8) message is written to the guest's serial port,
and whatever the guest writes comes back as binary messages.  Only holders of
the cluster certificate get here (the TLS handshake refuses anyone else): in
practice the RAPI daemon's console relay (:mod:`ganeti.rapi.console`), which
checks the user.

One client per instance at a time: a second one is closed at once with
:data:`CLOSE_BUSY` "console busy".  A missing socket (the instance does not
run here, or has no serial console) closes with :data:`CLOSE_NOT_FOUND`.
When QEMU closes the socket (the instance stopped) the WebSocket is closed
normally with the reason "console closed".

Flow control both ways, so that no buffer grows without bound: while the
WebSocket's transport cannot take more, the serial socket is not read (QEMU
then holds the guest's output); while the serial socket cannot take more,
the WebSocket is not read.  Messages are at most :data:`MAX_MESSAGE` bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from autobahn.twisted.resource import WebSocketResource
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from autobahn.websocket.types import ConnectionRequest
from twisted.internet import protocol
from twisted.internet.endpoints import UNIXClientEndpoint
from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.resource import IResource
from zope.interface import implementer

from ganeti.core import consoles

PATH_PREFIX = "/console/"
MAX_MESSAGE = 64 * 1024
CONNECT_TIMEOUT = 5.0
CLOSE_TIMEOUT = 5.0
#: WebSocket close codes of the console (RFC 6455 leaves 4000-4999 to applications).
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
CLOSE_BUSY = 4409
CLOSE_UNAVAILABLE = 4503
#: What an instance name may look like in the path (a DNS name).
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,253})$")

log = Logger()


def instance_from_path(path: str) -> str | None:
    """The instance named by ``/console/<name>``; None for anything else."""
    if not path.startswith(PATH_PREFIX):
        return None
    name = path[len(PATH_PREFIX):]
    return name if _NAME.match(name) and ".." not in name else None


class _SerialSide(protocol.Protocol):
    """The unix socket side: bytes to and from QEMU's chardev."""

    def __init__(self, console: NodeConsoleProtocol) -> None:
        self.console = console

    def connectionMade(self) -> None:
        transport: Any = self.transport
        transport.registerProducer(_Pauser(self.console), True)

    def dataReceived(self, data: bytes) -> None:
        self.console.from_serial(data)

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self.console.serial_lost()


@implementer(IPushProducer)
class _Pauser:
    """Registered on the serial transport: when QEMU does not read, stop reading
    the WebSocket (its TCP window then pushes back on the relay)."""

    def __init__(self, console: NodeConsoleProtocol) -> None:
        self.console = console

    def pauseProducing(self) -> None:
        self.console.pause_reading()

    def resumeProducing(self) -> None:
        self.console.resume_reading()

    def stopProducing(self) -> None:
        pass  # the socket is lost: _SerialSide.connectionLost closes the console


@implementer(IPushProducer)
class NodeConsoleProtocol(WebSocketServerProtocol):
    """One console client: its WebSocket and the instance's serial socket."""

    factory: NodeConsoleFactory

    def __init__(self) -> None:
        super().__init__()
        self.instance: str | None = None
        self.refusal: tuple[int, str] | None = None
        self.serial: _SerialSide | None = None
        self.holds = False  # this client owns the instance's console slot
        self.closing = False
        self._deadline: Any = None  # drops the connection if the close is not answered

    def onConnect(self, request: ConnectionRequest) -> None:
        name = instance_from_path(request.path)
        if name is None:
            self.refusal = (CLOSE_BAD_REQUEST, "bad console path; use /console/<instance>")
            return
        self.instance = name
        if name in self.factory.active:
            self.refusal = (CLOSE_BUSY, f"console busy: another client is attached to the "
                                        f"console of {name}")
            return
        self.factory.active.add(name)
        self.holds = True

    def onOpen(self) -> None:
        if self.refusal is not None:
            self.close_console(*self.refusal)
            return
        assert self.instance is not None
        transport: Any = self.transport
        try:
            transport.registerProducer(self, True)
        except RuntimeError:  # twisted.web's channel registered itself for the request
            transport.unregisterProducer()
            transport.registerProducer(self, True)
        path = self.factory.locate(self.instance)
        if path is None or not os.path.exists(path):
            self.close_console(CLOSE_NOT_FOUND, f"instance {self.instance} has no serial "
                                                "console on this node (not running here?)")
            return
        endpoint = UNIXClientEndpoint(self.factory.reactor, path, timeout=CONNECT_TIMEOUT)
        d = endpoint.connect(protocol.Factory.forProtocol(lambda: _SerialSide(self)))
        d.addCallbacks(self._attached, self._attach_failed)

    def _attached(self, serial: _SerialSide) -> None:
        if self.closing or self.state != self.STATE_OPEN:
            serial.transport.loseConnection()  # type: ignore[union-attr]
            return
        self.serial = serial

    def _attach_failed(self, failure: Failure) -> None:
        self.close_console(CLOSE_UNAVAILABLE, f"cannot attach to the serial console of "
                                              f"{self.instance}: {failure.getErrorMessage()}")

    def onMessage(self, payload: bytes, is_binary: bool) -> None:
        if self.serial is None or self.serial.transport is None:
            return  # not attached yet: nothing to type into
        self.serial.transport.write(payload)

    def from_serial(self, data: bytes) -> None:
        """Guest output: one binary message per read."""
        if self.state == self.STATE_OPEN:
            self.sendMessage(data, isBinary=True)

    def serial_lost(self) -> None:
        self.serial = None
        self.close_console(CLOSE_NORMAL, "console closed (the instance stopped or its "
                                         "console was detached)")

    def close_console(self, code: int, reason: str) -> None:
        """Close politely with ``code`` and ``reason`` (once)."""
        if self.closing:
            return
        self.closing = True
        if self.state == self.STATE_OPEN:
            self.sendClose(code, reason[:120])
            self._deadline = self.factory.reactor.callLater(
                CLOSE_TIMEOUT, self.dropConnection, True)
        if self.serial is not None and self.serial.transport is not None:
            self.serial.transport.loseConnection()

    def onClose(self, was_clean: bool, code: int | None, reason: str | None) -> None:
        self.closing = True
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None
        if self.holds and self.instance is not None:
            self.factory.active.discard(self.instance)
            self.holds = False
        if self.serial is not None and self.serial.transport is not None:
            self.serial.transport.loseConnection()
        self.serial = None

    # Reading the WebSocket, paused while QEMU does not read

    def pause_reading(self) -> None:
        transport: Any = self.transport
        if transport is not None:
            transport.pauseProducing()

    def resume_reading(self) -> None:
        transport: Any = self.transport
        if transport is not None:
            transport.resumeProducing()

    # IPushProducer on the WebSocket's transport: the serial socket is not read
    # while the client does not read

    def pauseProducing(self) -> None:
        if self.serial is not None and self.serial.transport is not None:
            self.serial.transport.pauseProducing()  # type: ignore[attr-defined]

    def resumeProducing(self) -> None:
        if self.serial is not None and self.serial.transport is not None:
            self.serial.transport.resumeProducing()  # type: ignore[attr-defined]

    def stopProducing(self) -> None:
        if self.serial is not None and self.serial.transport is not None:
            self.serial.transport.loseConnection()


class NodeConsoleFactory(WebSocketServerFactory):
    """The consoles of one node: where an instance's serial socket is (``locate``:
    None if it has none; by default kvm's path under ``run_dir``), its reactor, who
    is attached."""

    protocol = NodeConsoleProtocol  # type: ignore[assignment]

    def __init__(self, reactor: Any, run_dir: str,
                 locate: Callable[[str], str | None] | None = None) -> None:
        super().__init__(server="ganeti-noded")
        self.reactor = reactor
        self.run_dir = run_dir
        self.locate = locate or (lambda name: consoles.serial_socket_path(run_dir, name))
        self.active: set[str] = set()
        self.setProtocolOptions(maxFramePayloadSize=MAX_MESSAGE,
                                maxMessagePayloadSize=MAX_MESSAGE,
                                openHandshakeTimeout=0, closeHandshakeTimeout=0,
                                autoPingInterval=0, failByDrop=False)


def console_resource(reactor: Any, run_dir: str,
                     locate: Callable[[str], str | None] | None = None) -> IResource:
    """The resource noded serves under :data:`PATH_PREFIX`."""
    return WebSocketResource(  # type: ignore[no-any-return]
        NodeConsoleFactory(reactor, run_dir, locate))
