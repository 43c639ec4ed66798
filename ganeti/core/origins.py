"""Which web origins may open a WebSocket to our daemons (the feeds, the console)."""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit


def origin_allowed(origin: str, host: str, allowed: Collection[str]) -> bool:
    """Whether a browser's WebSocket from ``origin`` may connect to ``host``: the same
    origin (the Origin's host:port is the Host header), or one of ``allowed`` (``*``:
    any)."""
    origin = origin.strip().rstrip("/").lower()
    if "*" in allowed or origin in allowed:
        return True
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        return False
    return bool(netloc) and netloc == host.strip().lower()
