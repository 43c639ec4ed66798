"""Which log lines about outside input get written: bounded whatever the input.

Every daemon logs what clients do wrong (bad frames, bad datagrams, failed
logins, refused connections), and clients decide how often that happens.
:class:`LineBudget` decides, per key (a reason, a kind, an address and
reason), whether a line may be written now: at most ``burst`` lines per key
per ``interval`` seconds, and at most ``max_lines`` lines per interval in
all if given.  Suppressed lines are counted, and the count is handed to the
next line of the same key.  Its memory is bounded too: once ``max_keys``
keys are tracked, keys whose interval is over are forgotten; if none is,
a new key shares the ``overflow`` key's line (if given), or is suppressed
uncounted unless ``max_lines`` already bounds how fast new keys arrive.

Pure code: the caller passes the time (its clock's ``seconds()``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass


@dataclass
class _Window:
    start: float
    used: int = 0
    suppressed: int = 0


class LineBudget:
    """The decision (see the module doc); the caller writes the line."""

    def __init__(self, interval: float = 60.0, burst: int = 1, max_keys: int = 4096,
                 max_lines: int | None = None, overflow: Hashable | None = None) -> None:
        self.interval = interval
        self.burst = burst
        self.max_keys = max_keys
        self.max_lines = max_lines
        self.overflow = overflow
        # oldest window first: expired keys are found from the front
        self.windows: OrderedDict[Hashable, _Window] = OrderedDict()
        self._overflow_window: _Window | None = None
        self._lines_start = float("-inf")
        self._lines = 0
        #: Lines suppressed in all (for tests and statistics).
        self.suppressed = 0

    def allow(self, key: Hashable, now: float) -> tuple[Hashable, int] | None:
        """None if the line is suppressed; else the key it is written under (the
        overflow key when too many are tracked) and the lines suppressed since
        that key's last line."""
        if now - self._lines_start >= self.interval:
            self._lines_start, self._lines = now, 0
        window = self.windows.get(key)
        if window is None:
            key, window = self._new_window(key, now)
            if window is None:
                self.suppressed += 1
                return None
        elif now - window.start >= self.interval:
            window.start, window.used = now, 0
            self.windows.move_to_end(key)
        if window.used >= self.burst or (self.max_lines is not None
                                         and self._lines >= self.max_lines):
            window.suppressed += 1
            self.suppressed += 1
            return None
        window.used += 1
        self._lines += 1
        suppressed, window.suppressed = window.suppressed, 0
        return key, suppressed

    def _new_window(self, key: Hashable, now: float) -> tuple[Hashable, _Window | None]:
        if len(self.windows) >= self.max_keys:
            while self.windows:
                oldest = next(iter(self.windows.values()))
                if now - oldest.start < self.interval:
                    break
                self.windows.popitem(last=False)
        if len(self.windows) >= self.max_keys:
            if self.overflow is not None:
                window = self._overflow_window
                if window is None:
                    window = self._overflow_window = _Window(now)
                elif now - window.start >= self.interval:
                    window.start, window.used = now, 0
                return self.overflow, window
            if self.max_lines is None:
                return key, None
        if self.max_lines is not None and self._lines >= self.max_lines:
            return key, None  # not tracked: the count of lines per interval bounds keys
        window = self.windows[key] = _Window(now)
        return key, window

    @property
    def tracked(self) -> int:
        """How many keys are tracked now (the overflow key not included)."""
        return len(self.windows)
