"""ganeti-noded: the node daemon, serving the calls of ganeti.core.rpcdefs over mutual TLS."""

__all__ = [
    "backend",
    "procs",
    "server",
    "service",
    "tap",
    "tls",
]
