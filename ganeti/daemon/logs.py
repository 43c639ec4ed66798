"""A daemon's log: the level filter, the append-only log file, twistd's log options.

twistd's own ``--logfile`` observer logs every level, debug included, and
rotates the file itself every megabyte, keeping the old files forever.
:func:`daemon_log` builds a replacement from twistd's options: the same
destination (``--logfile`` path, stdout under ``--nodaemon``, ``--syslog``),
events below ``info`` dropped unless the daemon runs with ``--debug``, and a
file opened with ``O_APPEND`` that never rotates itself and is reopened on
SIGHUP, so that logrotate can move it away (or use ``copytruncate``).
:class:`ganeti.daemon.service.DaemonService` hands it to twistd as the
application's ``ILogObserver`` component, which twistd's ``AppLogger``
prefers over its own.  Under ``twist`` (no application) or an explicit
``--logger``, the runner keeps its own observer.  A daemon logs to that one
destination only: no daemon has a log file option of its own.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any, cast

from twisted.application import service
from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LegacyLogObserverWrapper,
    LogEvent,
    Logger,
    LogLevel,
    LogLevelFilterPredicate,
    globalLogPublisher,
    textFileLogObserver,
)
from txaio import tx as txaio_twisted
from zope.interface import implementer

log = Logger()

#: Mode of a log file this module creates (the umask applies too).
LOG_FILE_MODE = 0o640

#: The ``--debug`` flag, for each daemon's ``Options.optFlags``.
DEBUG_FLAG = ["debug", "d", "Log debug messages too (default: info and above)"]


def level_predicate(debug: bool) -> LogLevelFilterPredicate:
    """Lets events through from ``info`` up, or from ``debug`` up with ``debug``."""
    return LogLevelFilterPredicate(defaultLogLevel=LogLevel.debug if debug else LogLevel.info)


def set_library_log_level(debug: bool) -> None:
    """Make txaio's loggers (autobahn's) emit debug events only with ``--debug``.

    Their debug methods are then no-ops, which also saves formatting the
    per-frame messages that the level filter would drop anyway.
    """
    txaio_twisted.set_global_log_level("debug" if debug else "info")


class AppendLogFile:
    """A text log file opened with ``O_APPEND`` that never rotates itself.

    Every write lands at the current end of the file, also after another
    program truncated it (logrotate's ``copytruncate``); :meth:`reopen`
    opens the path again after the file was renamed away (logrotate's
    default).  Write errors (a full disk) are counted, not raised: a log
    observer that raises would only produce more log events.
    """

    def __init__(self, path: str, mode: int = LOG_FILE_MODE) -> None:
        """Opens (creates) ``path``; raises OSError if it cannot."""
        self.path = os.path.abspath(path)
        self.mode = mode
        self.write_errors = 0
        self._file = self._open()

    def _open(self) -> IO[str]:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                     self.mode)
        return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")

    def identity(self) -> tuple[int, int]:
        """(device, inode) of the open file: tells two names of one file apart."""
        st = os.fstat(self._file.fileno())
        return st.st_dev, st.st_ino

    def write(self, text: str) -> None:
        """Append ``text`` (buffered until :meth:`flush`)."""
        try:
            self._file.write(text)
        except (OSError, ValueError):
            self.write_errors += 1

    def flush(self) -> None:
        """Hand what was written to the kernel (no fsync: logs are not worth one)."""
        try:
            self._file.flush()
        except (OSError, ValueError):
            self.write_errors += 1

    def reopen(self) -> None:
        """Open the path again; raises OSError (keeping the old file) if it cannot."""
        new = self._open()
        old, self._file = self._file, new
        try:
            old.close()
        except OSError:
            self.write_errors += 1

    def close(self) -> None:
        """Flush and close."""
        try:
            self._file.close()
        except OSError:
            self.write_errors += 1


@implementer(ILogObserver)
class _FanOut:
    """Hands each event to every sink."""

    def __init__(self) -> None:
        self.sinks: list[ILogObserver] = []

    def __call__(self, event: LogEvent) -> None:
        for sink in self.sinks:
            sink(event)


class DaemonLog:
    """Where a daemon logs: sinks (files, a stream, syslog) behind one level filter.

    :attr:`observer` is the filtered observer; :attr:`replaces_twistd` says
    that it should stand in for twistd's own (see :func:`daemon_log`).
    """

    def __init__(self, debug: bool = False) -> None:
        self.debug = debug
        self.files: list[AppendLogFile] = []
        self.replaces_twistd = False
        #: Whether a sink is the console (stdout): a message also raised as
        #: SystemExit would then be shown twice.
        self.on_console = False
        #: Whether twistd took :attr:`observer` as the application's observer.
        self.attached = False
        self._fanout = _FanOut()
        self.observer: ILogObserver = FilteringLogObserver(self._fanout,
                                                           [level_predicate(debug)])

    @property
    def has_sinks(self) -> bool:
        """Whether anything would be written at all."""
        return bool(self._fanout.sinks)

    def add_observer(self, observer: ILogObserver) -> None:
        """Send the events that pass the level filter to ``observer`` too."""
        self._fanout.sinks.append(observer)

    def add_stream(self, stream: IO[str]) -> None:
        """Log text lines to an open stream (stdout)."""
        self.on_console = True
        self.add_observer(textFileLogObserver(stream))

    def add_file(self, path: str) -> AppendLogFile:
        """Log text lines to the file ``path`` too (raises OSError if it cannot be opened).

        A file already logged to under another name is not added twice: its
        lines would appear twice.
        """
        new = AppendLogFile(path)
        for known in self.files:
            if known.identity() == new.identity():
                new.close()
                return known
        self.files.append(new)
        self.add_observer(textFileLogObserver(cast(IO[str], new)))
        return new

    def reopen(self) -> None:
        """Reopen every log file (after logrotate moved it); errors are logged."""
        for logfile in self.files:
            try:
                logfile.reopen()
            except OSError as err:
                log.error("Cannot reopen the log file {path} ({error}); still writing "
                          "to the old one", path=logfile.path, error=err.strerror)
        if self.files:
            log.info("Reopened the log file(s) {paths}",
                     paths=", ".join(f.path for f in self.files))

    def close(self) -> None:
        """Close the files (at exit; events after this are dropped)."""
        for logfile in self.files:
            logfile.close()


def daemon_log(options: Any, stdout: IO[str] | None = None) -> DaemonLog:
    """The :class:`DaemonLog` for a daemon's parsed ``options``.

    ``options["debug"]`` chooses the level.  When ``options.parent`` is
    twistd's ServerOptions and no ``--logger`` was given, the log goes where
    twistd would have sent it: syslog with ``--syslog``, ``stdout`` with
    ``--nodaemon`` and no ``--logfile`` (or ``--logfile -``), else the
    ``--logfile`` path (twistd's default ``twistd.log``) as an
    :class:`AppendLogFile`.  Otherwise (``twist``, tests) nothing is added
    and the runner keeps its own observer.  Raises OSError if the file
    cannot be opened.
    """
    debug = bool(options.get("debug"))
    set_library_log_level(debug)
    result = DaemonLog(debug)
    server = getattr(options, "parent", None)
    if server is None or "logfile" not in server or server.get("logger"):
        return result
    logfile = server.get("logfile") or ""
    nodaemon = bool(server.get("nodaemon"))
    if server.get("syslog"):
        from twisted.python import syslog
        emit = syslog.SyslogObserver(server.get("prefix") or "twisted").emit
        result.add_observer(LegacyLogObserverWrapper(emit))  # type: ignore[arg-type]
    elif logfile == "-" and not nodaemon:
        return result  # twistd itself refuses this ("Daemons cannot log to stdout")
    elif logfile == "-" or (nodaemon and not logfile):
        result.add_stream(stdout if stdout is not None else sys.stdout)
    else:
        result.add_file(logfile or "twistd.log")
    result.replaces_twistd = True
    return result


def setup_log(options: Any, program: str) -> DaemonLog:
    """:func:`daemon_log` for ``makeService``; exits with a message if twistd's log
    file cannot be opened."""
    try:
        return daemon_log(options)
    except OSError as err:
        raise SystemExit(f"{program}: cannot open the log file {err.filename}: "
                         f"{err.strerror}") from None


class LogService(service.Service):
    """Publishes a :class:`DaemonLog` that twistd did not take, while running.

    Under twistd the log is the application's observer already; under
    ``twist`` or in tests a log given files or streams still needs an
    observer on the global publisher.  The files are closed at the end.
    """

    def __init__(self, daemon_log: DaemonLog) -> None:
        self.daemon_log = daemon_log
        self._published = False

    def startService(self) -> None:
        super().startService()
        if not self.daemon_log.attached and self.daemon_log.has_sinks:
            globalLogPublisher.addObserver(self.daemon_log.observer)
            self._published = True

    def stopService(self) -> None:
        super().stopService()
        if self._published:
            globalLogPublisher.removeObserver(self.daemon_log.observer)
            self._published = False
            self.daemon_log.close()

