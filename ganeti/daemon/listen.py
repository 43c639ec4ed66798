"""Listening sockets as services: they listen in ``startService`` or fail loudly.

Every daemon listens while :meth:`ListenService.startService` runs, that is
while twistd starts the application and before the reactor runs.  A socket
that cannot be made raises :class:`StartupError` naming the address (or
path) and the reason; :class:`ganeti.daemon.service.DaemonService` turns
that into exit status 1 (see there).  Listening later, from a callback,
would let twistd report a successful start (its daemonised parent has exited
with 0 by then) of a daemon that answers nothing.

A listener may be given ``ready``: the socket is made at once (so that its
errors are start-up errors) but accepts no connection until ``ready()``
fires; clients that connect meanwhile wait in the kernel's backlog.  If
``ready()`` fails, the daemon fails (:meth:`DaemonService.fail`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from twisted.application import service
from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()

#: Backlog of every listening stream socket (LUXI, noded's and RAPI's HTTPS).
#: Twisted's default is 50: a burst of a few hundred connecting clients then
#: loses SYNs and waits for retransmits.  The kernel caps it at
#: ``net.core.somaxconn``.
LISTEN_BACKLOG = 1024

#: Longest path a UNIX socket address holds (Linux: ``sun_path`` is 108 bytes,
#: the terminating NUL included).
UNIX_PATH_MAX = 107


class StartupError(Exception):
    """A daemon cannot start; the message says what and why."""


def reason_of(err: BaseException) -> str:
    """The reason in a CannotListenError or OSError, without Twisted's wording."""
    cause = getattr(err, "socketError", None) or err
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return str(cause) or type(cause).__name__


def unix_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a UNIX socket address (it is too long), or None; the
    kernel's own reason only says "AF_UNIX path too long"."""
    size = len(os.fsencode(path))
    if size <= UNIX_PATH_MAX:
        return None
    return (f"the path is {size} bytes long, a UNIX socket path at most {UNIX_PATH_MAX} "
            "(choose a shorter GANETI_ROOTDIR)")


def _pausable(port: Any) -> bool:
    return callable(getattr(port, "stopReading", None)) and callable(
        getattr(port, "startReading", None))


class ListenService(service.Service):
    """Listens on ``where`` (for messages: ``127.0.0.1:1811 (TCP)``, a path, ...)
    while running.

    ``listen()`` makes the socket and returns the listening port (raising
    CannotListenError or OSError if it cannot); ``announce(port)`` logs that
    the daemon listens; ``ready`` holds back accepting (see the module
    docstring); ``unix_path``, the path of a UNIX socket, explains a path too
    long for one.
    """

    def __init__(self, where: str, listen: Callable[[], IListeningPort],
                 announce: Callable[[IListeningPort], None] | None = None,
                 ready: Callable[[], defer.Deferred[Any]] | None = None,
                 unix_path: str | None = None) -> None:
        self.where = where
        self.unix_path = unix_path
        self.listen = listen
        self.announce = announce
        self.ready = ready
        self.port: IListeningPort | None = None
        self.accepting = False

    def startService(self) -> None:
        try:
            port = self.listen()
        except (CannotListenError, OSError) as err:
            reason = reason_of(err)
            problem = unix_path_problem(self.unix_path) if self.unix_path else None
            if problem is not None:
                reason = f"{reason}: {problem}"
            raise StartupError(f"cannot listen on {self.where}: {reason}") from err
        super().startService()
        self.port = port
        if self.ready is None:
            self._accept()
            return
        waiting = self.ready()
        if not waiting.called and _pausable(port):
            port.stopReading()  # type: ignore[attr-defined]
        waiting.addCallbacks(lambda _: self._accept(), self._not_ready)

    def _accept(self) -> None:
        if not self.running or self.port is None:
            return
        if _pausable(self.port):
            self.port.startReading()  # type: ignore[attr-defined]
        self.accepting = True
        if self.announce is not None:
            self.announce(self.port)

    def _not_ready(self, failure: Failure) -> None:
        log.failure("Start-up failed before {where} accepted connections", failure,
                    where=self.where)
        kind = getattr(failure.type, "__name__", "error")
        reason = f"cannot start: {failure.getErrorMessage() or kind}"
        parent = self.parent
        while parent is not None and not callable(getattr(parent, "fail", None)):
            parent = getattr(parent, "parent", None)
        if parent is not None:
            parent.fail(reason)

    def stopService(self) -> Any:
        super().stopService()
        self.accepting = False
        if self.port is not None:
            port, self.port = self.port, None
            return port.stopListening()
        return None
