"""Mutual TLS on the cluster certificate (``server.pem``), shared by noded and the client.

Every node holds the same ``server.pem`` (key and self-signed certificate).
A peer is trusted if and only if the certificate it presents is exactly the
cluster certificate (same DER bytes); the self-signed certificate is its own
CA, so no chain building and no host-name check is involved.  The comparison
runs in OpenSSL's verify callback, so a stranger is refused in the handshake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from OpenSSL import SSL, crypto
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.web.iweb import IPolicyForHTTPS
from zope.interface import implementer

SESSION_ID_CONTEXT = b"ganeti-noded"


@dataclass(frozen=True)
class ClusterCertificate:
    """The cluster key and certificate, loaded once."""

    key: PrivateKeyTypes
    cert: x509.Certificate

    @classmethod
    def from_pem(cls, pem: bytes) -> ClusterCertificate:
        """Load a PEM blob holding the key and the certificate (``server.pem``)."""
        key = serialization.load_pem_private_key(pem, password=None)
        return cls(key=key, cert=x509.load_pem_x509_certificate(pem))

    @classmethod
    def from_file(cls, path: str) -> ClusterCertificate:
        """Load ``server.pem`` from disk (blocking: call before the reactor runs)."""
        with open(path, "rb") as f:
            return cls.from_pem(f.read())

    @property
    def der(self) -> bytes:
        """The certificate's DER bytes, the identity every peer must present."""
        return self.cert.public_bytes(serialization.Encoding.DER)

    @property
    def fingerprint(self) -> str:
        """SHA-256 fingerprint (hex), for log messages."""
        return self.cert.fingerprint(hashes.SHA256()).hex()

    def verify_peer(self, conn: SSL.Connection, peer: crypto.X509, errnum: int,
                    depth: int, ok: int) -> bool:
        """OpenSSL verify callback: accept exactly the cluster certificate as the leaf."""
        if depth != 0:
            return False
        der = peer.to_cryptography().public_bytes(serialization.Encoding.DER)
        return der == self.der

    def make_context(self, server: bool) -> SSL.Context:
        """An OpenSSL context presenting the cluster certificate and requiring it back."""
        ctx = SSL.Context(SSL.TLS_METHOD)
        ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
        ctx.set_options(SSL.OP_NO_COMPRESSION)
        ctx.use_certificate(self.cert)
        ctx.use_privatekey(self.key)  # type: ignore[arg-type]
        ctx.check_privatekey()
        mode = SSL.VERIFY_PEER
        if server:
            mode |= SSL.VERIFY_FAIL_IF_NO_PEER_CERT
            ctx.set_session_id(SESSION_ID_CONTEXT)
        ctx.set_verify(mode, self.verify_peer)
        return ctx


@implementer(IOpenSSLClientConnectionCreator)
class _ClientCreator:
    def __init__(self, ctx: SSL.Context) -> None:
        self._ctx = ctx

    def clientConnectionForTLS(self, tls_protocol: Any) -> SSL.Connection:
        conn = SSL.Connection(self._ctx, None)
        conn.set_app_data(tls_protocol)
        conn.set_connect_state()
        return conn


@implementer(IPolicyForHTTPS)
class ClusterTLSPolicy:
    """Agent TLS policy: present the cluster certificate, accept only it from the node.

    The node's host name is not checked: certificate equality replaces it,
    because every node presents the same cluster certificate.
    """

    def __init__(self, cluster: ClusterCertificate) -> None:
        self._creator = _ClientCreator(cluster.make_context(server=False))

    def creatorForNetloc(self, hostname: bytes, port: int) -> _ClientCreator:
        """The same connection creator for every node."""
        return self._creator
