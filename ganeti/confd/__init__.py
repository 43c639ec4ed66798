"""ganeti-confd: HMAC-signed read-only config queries over UDP, and its wire format."""

__all__ = [
    "client",
    "protocol",
    "server",
    "service",
    "tap",
]
