"""A log budget for what clients cause: bad input must not write unbounded logs.

A LUXI client can send any number of frames, and open any number of
connections; without a budget each bad frame could add a log line (or a
traceback) and fill the disk.  :class:`LogBudget` lets through at most
``burst`` messages of one kind per ``interval`` seconds, counts the others,
and reports that count with the next message of that kind it lets through.
Kinds are fixed strings chosen by the caller (never text from the client),
so the budget's memory is bounded too.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core.loglimit import LineBudget


class LogBudget:
    """Rate-limited warnings and failures, per kind (see the module doc)."""

    def __init__(self, clock: IReactorTime, logger: Logger, burst: int = 10,
                 interval: float = 60.0) -> None:
        self.clock = clock
        self.logger = logger
        self.budget = LineBudget(interval, burst=burst)

    def _take(self, kind: str) -> int | None:
        """None if the budget of ``kind`` is spent; else the count suppressed before."""
        allowed = self.budget.allow(kind, self.clock.seconds())
        return None if allowed is None else allowed[1]

    def warn(self, kind: str, fmt: str, **fields: Any) -> bool:
        """Log a warning unless the budget of ``kind`` is spent; True if logged."""
        suppressed = self._take(kind)
        if suppressed is None:
            return False
        self.logger.warn(fmt + self._suffix(suppressed), suppressed=suppressed, **fields)
        return True

    def failure(self, kind: str, fmt: str, failure: Failure, **fields: Any) -> bool:
        """Log a failure with its traceback unless the budget of ``kind`` is spent."""
        suppressed = self._take(kind)
        if suppressed is None:
            return False
        self.logger.failure(fmt + self._suffix(suppressed), failure, suppressed=suppressed,
                            **fields)
        return True

    @staticmethod
    def _suffix(suppressed: int) -> str:
        return (" ({suppressed} similar messages were suppressed before this one)"
                if suppressed else "")
