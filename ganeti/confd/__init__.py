"""ganeti-confd: HMAC-signed read-only config queries over UDP, and its wire format."""
