"""A fake LUXI client with the real client's method signatures (checked by a test)."""

from __future__ import annotations

from typing import Any

from ganeti.core import errors
from ganeti.core.objects import ConfigData
from ganeti.luxi.client import LuxiMethods
from ganeti.master.query.queries import ClusterQueries


class FakeLuxiClient(LuxiMethods):
    """Answers from an in-memory config through the real query code."""

    def __init__(self, cfg: ConfigData, paths, clock) -> None:
        self.queries = ClusterQueries(lambda: cfg, paths, clock)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.closed = False

    def call(self, method: str, *args: Any) -> Any:
        self.calls.append((method, args))
        impl = self.queries.implementations().get(method)
        if impl is None:
            raise errors.RequestError(f"unknown method {method}")
        return impl(*args)

    def close(self) -> None:
        self.closed = True

