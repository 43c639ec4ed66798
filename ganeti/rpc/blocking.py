"""Node RPC for command-line tools: blocking calls, many nodes at once in threads.

The master's :class:`~ganeti.rpc.client.RpcClient` runs on its reactor.  A tool
(``gnt-cluster master-failover`` asking every node for its vote while masterd
is down) has no reactor: it waits for its answers.  This client makes the same
calls with the same checks (:mod:`ganeti.rpc.exchange`: the call table, the
encoders, the reply's meaning, the same :class:`RpcResult` texts), over HTTPS
with the standard library, one thread per node contacted (at most
``max_workers`` at once).  Never use it inside a daemon: it blocks.

Trust is the node daemons' (:mod:`ganeti.rpc.tls`): the client presents the
cluster certificate and accepts a node only if it presents exactly the same
certificate (the self-signed certificate is the only trust anchor; the DER
bytes are compared after the handshake).

The timeout bounds the whole exchange: before each wait on the socket (send,
reply headers, each part of the body) the socket's timeout is set to what is
left of it.
"""

from __future__ import annotations

import http.client
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ganeti.core import rpcdefs
from ganeti.rpc import exchange
from ganeti.rpc.exchange import ConfigSource
from ganeti.rpc.noderpc import NodeTarget, OneNode, as_target
from ganeti.rpc.result import RpcResult
from ganeti.rpc.tls import ClusterCertificate

__all__ = ["CONNECT_TIMEOUT", "MAX_REPLY_BODY", "BlockingRpcClient", "NotTheCluster"]

CONNECT_TIMEOUT = 10.0
#: The largest reply body read from a node (the master's client reads as much).
MAX_REPLY_BODY = 64 * 1024 * 1024
_CHUNK = 256 * 1024


class NotTheCluster(ssl.SSLError):
    """The node presented a certificate other than the cluster's."""


def tls_context(pem_path: str) -> ssl.SSLContext:
    """A client context presenting ``server.pem`` and trusting only its certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False  # certificate equality replaces it (every node has the same)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_cert_chain(pem_path)
    ctx.load_verify_locations(cafile=pem_path)
    return ctx


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timed out after {self.seconds:g} s")
        return left


class _ClusterConnection(http.client.HTTPSConnection):
    """HTTPS to one node daemon; refuses a node without the cluster certificate."""

    def __init__(self, ip: str, port: int, context: ssl.SSLContext, der: bytes,
                 connect_timeout: float) -> None:
        super().__init__(ip, port, timeout=connect_timeout, context=context)
        self._der = der
        #: kept: the connection hands its socket to a response that closes it
        self._raw: Any = None

    def connect(self) -> None:
        super().connect()
        self._raw = self.sock
        if self._raw.getpeercert(binary_form=True) != self._der:
            self._raw.close()
            raise NotTheCluster("the node's certificate is not the cluster certificate")

    def wait(self, deadline: _Deadline) -> None:
        """Give the next wait on the socket what is left of the deadline."""
        self._raw.settimeout(deadline.left())


def _describe(err: BaseException, timeout: float, connect_timeout: float) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, _ConnectTimeout):
        return f"could not connect within {connect_timeout:g} s"
    if isinstance(err, TimeoutError):
        return f"timed out after {timeout:g} s"
    if isinstance(err, (http.client.RemoteDisconnected, ConnectionResetError)):
        return f"no response ({err})"
    return f"{type(err).__name__}: {err}"


class _ConnectTimeout(Exception):
    """No TCP connection or TLS handshake within the connect timeout."""


class BlockingRpcClient:
    """Make node RPC calls from a tool, waiting for the answers.

    ``pem_path`` is the cluster certificate with its key (``server.pem``);
    ``config`` gives the config for the calls' master-side encoders (none:
    they see ``config=None``); ``calls`` replaces the table.  Each call opens
    its own connections and closes them.
    """

    def __init__(self, pem_path: str, port: int, connect_timeout: float = CONNECT_TIMEOUT,
                 max_reply: int = MAX_REPLY_BODY, config: ConfigSource | None = None,
                 calls: Mapping[str, rpcdefs.RpcCall] | None = None,
                 max_workers: int = 16) -> None:
        self.port = port
        self.connect_timeout = connect_timeout
        self.max_reply = max_reply
        self.config = config
        self.calls = rpcdefs.CALLS if calls is None else calls
        self.max_workers = max_workers
        self._context = tls_context(pem_path)
        self._der = ClusterCertificate.from_file(pem_path).der

    def call(self, nodes: Iterable[NodeTarget | Sequence[Any]], call_name: str,
             args: Sequence[Any] = (), timeout: float | None = None) -> dict[str, RpcResult]:
        """Run ``call_name`` on every node at once; one RpcResult per node name.

        As :meth:`ganeti.rpc.client.RpcClient.call`: bad arguments raise
        RpcArgumentError before anything is sent, offline nodes are answered
        at once, every node problem is a failed result.
        """
        prepared = exchange.prepare(self.calls, call_name, nodes, args, timeout, self.config)
        call = prepared.call
        out = {t.name: exchange.offline(t, call) for t in prepared.targets if t.offline}
        online = [t for t in prepared.targets if not t.offline]
        if online:
            with ThreadPoolExecutor(max_workers=min(len(online), self.max_workers),
                                    thread_name_prefix="node-rpc") as pool:
                futures = {t.name: pool.submit(self._one, t, call, prepared.bodies[t.name],
                                               prepared.timeout) for t in online}
                out.update({name: f.result() for name, f in futures.items()})
        return {t.name: out[t.name] for t in prepared.targets}

    def call_one(self, node: OneNode, call_name: str, args: Sequence[Any] = (),
                 timeout: float | None = None) -> RpcResult:
        """Run ``call_name`` on one node; its result."""
        target = as_target(node)
        return self.call([target], call_name, args, timeout)[target.name]

    def _one(self, node: NodeTarget, call: rpcdefs.RpcCall, body: bytes,
             timeout: float) -> RpcResult:
        try:
            status, data, too_large = self._request(node, call, body, timeout)
        except Exception as err:  # every node problem becomes its result
            return exchange.failed(node, call, f"{call.name} on {node.name}: "
                                               f"{_describe(err, timeout, self.connect_timeout)}")
        return exchange.interpret(node, call, status, data, too_large)

    def _request(self, node: NodeTarget, call: rpcdefs.RpcCall, body: bytes,
                 timeout: float) -> tuple[int, bytes, str | None]:
        host = node.ip.strip("[]")
        conn = _ClusterConnection(host, self.port, self._context, self._der,
                                  self.connect_timeout)
        try:
            try:
                conn.connect()
            except TimeoutError as err:
                raise _ConnectTimeout() from err
            deadline = _Deadline(timeout)
            conn.wait(deadline)
            conn.request("PUT", f"/{call.name}", body=body,
                         headers={"Content-Type": "application/json"})
            conn.wait(deadline)
            response = conn.getresponse()
            parts: list[bytes] = []
            size = 0
            while True:
                conn.wait(deadline)
                part = response.read1(_CHUNK)
                if not part:
                    break
                size += len(part)
                if size > self.max_reply:
                    return response.status, b"", f"reply body larger than {self.max_reply} bytes"
                parts.append(part)
            return response.status, b"".join(parts), None
        finally:
            conn.close()
