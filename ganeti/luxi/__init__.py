"""LUXI: the JSON-over-UNIX-socket protocol between clients and the master daemon."""

__all__ = [
    "client",
    "loglimit",
    "methods",
    "server",
    "stream",
    "twclient",
    "wire",
]
