"""JSON as Ganeti writes it: UTF-8, deterministic key order."""

from __future__ import annotations

import json
from typing import Any


def dump_json(data: Any, pretty: bool = False) -> str:
    """Serialise ``data``; keys sorted so equal data gives equal text."""
    if pretty:
        return json.dumps(data, sort_keys=True, indent=2) + "\n"
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def load_json(text: str | bytes) -> Any:
    """Parse JSON text (bytes are decoded as UTF-8)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(text)
