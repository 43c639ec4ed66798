"""The RAPI access log, ``LOG_DIR/rapi-access.log``, in Common Log Format.

One line per request::

    127.0.0.1 - jane [05/Mar/2025:10:01:02 +0000] "GET /2/info HTTP/1.1" 200 1234

The time comes from the injected clock (UTC), the user is ``-`` for anonymous
requests, and the size is the number of body bytes sent (``-`` for none).
Lines go to a buffered file opened for appending (so ``copytruncate``
rotation is safe), flushed to the kernel once a second and on close; nothing
is fsynced: the access log is not worth a disk flush per request.
"""

from __future__ import annotations

import time
from typing import IO

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

log = Logger()

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Bytes that would break a log line or a shell viewing it: escaped as \xNN.
_ESCAPES = {c: f"\\x{c:02x}" for c in range(0x20)}
_ESCAPES.update({0x7F: "\\x7f", ord('"'): '\\"', ord("\\"): "\\\\"})


def clf_time(seconds: float) -> str:
    """``dd/Mon/yyyy:HH:MM:SS +0000`` for a UTC timestamp (locale-independent)."""
    t = time.gmtime(seconds)
    return (f"{t.tm_mday:02d}/{_MONTHS[t.tm_mon - 1]}/{t.tm_year:04d}:"
            f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} +0000")


def escape(text: str) -> str:
    """``text`` with quotes, backslashes and control characters escaped."""
    return text.translate(_ESCAPES)


def format_line(seconds: float, host: str, user: str | None, request_line: str,
                status: int, size: int) -> str:
    """One Common Log Format line (with its newline)."""
    return _format(clf_time(seconds), host, user, request_line, status, size)


def _format(stamp: str, host: str, user: str | None, request_line: str, status: int,
            size: int) -> str:
    who = escape(user) if user else "-"
    return (f"{escape(host)} - {who} [{stamp}] \"{escape(request_line)}\" {status} "
            f"{size if size else '-'}\n")


class AccessLog:
    """Appends CLF lines to a file; :meth:`open` and :meth:`close` belong to the service."""

    def __init__(self, path: str | None, clock: IReactorTime, flush_interval: float = 1.0,
                 buffer_size: int = 64 * 1024) -> None:
        self.path = path
        self.clock = clock
        self.flush_interval = flush_interval
        self.buffer_size = buffer_size
        self._file: IO[str] | None = None
        self._flusher: LoopingCall | None = None
        self._dirty = False
        self._stamp_second = -1
        self._stamp = ""

    def open(self) -> None:
        """Open (append) the file and start the periodic flush; logs if it cannot."""
        if self.path is None:
            return
        try:
            self._file = open(self.path, "a", encoding="utf-8", errors="backslashreplace",
                              buffering=self.buffer_size)
        except OSError as err:
            log.error("Cannot open the RAPI access log {path} ({error}); requests are not "
                      "logged", path=self.path, error=err.strerror)
            return
        if self._flusher is None:
            self._flusher = LoopingCall(self.flush)
            self._flusher.clock = self.clock
            self._flusher.start(self.flush_interval, now=False)

    def reopen(self) -> None:
        """Flush, close and open the file again (after it was moved away)."""
        self._close_file()
        self.open()

    def close(self) -> None:
        """Flush and close the file; stop the periodic flush."""
        if self._flusher is not None:
            if self._flusher.running:
                self._flusher.stop()
            self._flusher = None
        self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as err:
                log.error("Cannot write the RAPI access log: {error}", error=err.strerror)
            self._file = None

    def flush(self) -> None:
        """Hand buffered lines to the kernel (no fsync)."""
        if self._file is not None and self._dirty:
            self._dirty = False
            try:
                self._file.flush()
            except OSError as err:
                log.error("Cannot write the RAPI access log: {error}", error=err.strerror)

    def log(self, host: str, user: str | None, request_line: str, status: int,
            size: int) -> None:
        """Append one request's line."""
        if self._file is None:
            return
        now = self.clock.seconds()
        second = int(now)
        if second != self._stamp_second:  # one strftime per second, not per request
            self._stamp_second, self._stamp = second, clf_time(second)
        try:
            self._file.write(_format(self._stamp, host, user, request_line, status, size))
        except OSError as err:  # a full disk must not fail the request
            log.error("Cannot write the RAPI access log: {error}", error=err.strerror)
        self._dirty = True
