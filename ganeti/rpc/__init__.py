"""The caller's side of node RPC, built from ganeti.core.rpcdefs: the master's
asynchronous client, the tools' blocking one, and what they share."""

__all__ = [
    "blocking",
    "client",
    "exchange",
    "noderpc",
    "result",
    "tls",
]
