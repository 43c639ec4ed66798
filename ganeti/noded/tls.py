"""The TLS context of ganeti-noded: mutual TLS on the cluster certificate."""

from __future__ import annotations

from OpenSSL import SSL
from twisted.internet.ssl import ContextFactory

from ganeti.rpc.tls import ClusterCertificate


class ClusterServerContextFactory(ContextFactory):
    """Serve with ``server.pem`` and refuse, in the handshake, any peer not presenting it.

    A client without a certificate fails ``VERIFY_FAIL_IF_NO_PEER_CERT``; a
    client with any other certificate fails the equality check of
    :meth:`ClusterCertificate.verify_peer`.
    """

    isClient = 0

    def __init__(self, cluster: ClusterCertificate) -> None:
        self.cluster = cluster
        self._ctx = cluster.make_context(server=True)

    def getContext(self) -> SSL.Context:
        """The one shared server context."""
        return self._ctx
