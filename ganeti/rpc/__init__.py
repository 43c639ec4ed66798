"""The master's side of node RPC: a concurrent HTTPS client built from ganeti.core.rpcdefs."""

__all__ = [
    "client",
    "noderpc",
    "result",
    "tls",
]
