"""The node's libvirt connection, owned by one thread, seen from the reactor as Deferreds.

libvirt-python calls block, so one dedicated thread opens the connection and runs
every call from a queue; each answer reaches the reactor through
``reactor.callFromThread`` as the result of the Deferred :meth:`VirtConnection.call`
returned.  The same thread runs libvirt's default event loop between calls
(``virEventRegisterDefaultImpl`` before the first connection, then
``virEventRunDefaultImpl``; a pipe registered in that loop wakes it when a call is
queued), so domain lifecycle events arrive in that thread and are forwarded to the
reactor (``on_event(name, event, detail)``).

A connection that cannot be opened or is lost (libvirtd stopped or restarted) fails
the calls with :class:`LibvirtUnavailable`, whose message names libvirtd and the URI;
the thread reopens it with a bounded back-off and tells the reactor
(``on_connect()``) so that the hypervisor can find its running domains again.

libvirt-python is imported in the thread, lazily: without it the node daemon still
starts and serves the fake hypervisor, and every call fails with a clear error.
"""

from __future__ import annotations

import importlib
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.logger import Logger

#: noded's default connection when neither ``--libvirt-uri`` nor the env var says one.
DEFAULT_URI = "qemu:///system"
#: The environment variable naming the URI (the virtual cluster sets it per node).
URI_ENV = "GANETI_LIBVIRT_URI"
#: Reconnect back-off: first wait, cap (seconds).
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
#: The longest a stop waits for the libvirt thread to end (seconds).
STOP_WAIT = 5.0
#: The longest the event loop waits when idle (the back-off is checked this often).
IDLE_TICK = 1.0

log = Logger()

_impl_lock = threading.Lock()
_impl_registered = False


def default_uri(environ: dict[str, str] | None = None) -> str:
    """The URI from ``GANETI_LIBVIRT_URI``, else :data:`DEFAULT_URI`."""
    env = os.environ if environ is None else environ
    return env.get(URI_ENV) or DEFAULT_URI


class LibvirtUnavailable(Exception):
    """libvirt cannot be reached (not installed, libvirtd down, connection lost)."""


class VirtError(Exception):
    """A libvirt call failed; the message is libvirt's.  ``code`` is libvirt's
    error number (``VIR_ERR_*``), None if unknown."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _load_libvirt() -> Any:
    return importlib.import_module("libvirt")


class VirtConnection:
    """The libvirt connection at ``uri``, run by a thread of its own.

    ``reactor`` needs ``callFromThread``; ``on_event(name, event, detail)`` and
    ``on_connect()`` run in the reactor thread.  ``loader`` returns the libvirt
    module (tests inject a failing one).
    """

    def __init__(self, uri: str, reactor: Any,
                 on_event: Callable[[str, int, int], object] | None = None,
                 on_connect: Callable[[], object] | None = None,
                 loader: Callable[[], Any] = _load_libvirt,
                 backoff_first: float = BACKOFF_FIRST,
                 backoff_max: float = BACKOFF_MAX) -> None:
        self.uri = uri
        self.reactor = reactor
        self.on_event = on_event
        self.on_connect = on_connect
        self._loader = loader
        self._backoff_first = backoff_first
        self._backoff_max = backoff_max
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._wake_r, self._wake_w = -1, -1
        self._libvirt: Any = None
        self._conn: Any = None
        self._callback_id: int | None = None
        self._watch: int | None = None
        self._timer: int | None = None
        self._load_error: str | None = None
        self._connect_error: str | None = None
        self._next_try = 0.0
        self._delay = backoff_first
        self.stopped: defer.Deferred[None] = defer.Deferred()

    # --- reactor side -----------------------------------------------------------------

    def start(self) -> None:
        """Start the thread (it opens the connection at once)."""
        if self._thread is not None:
            return
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._thread = threading.Thread(target=self._main, name="libvirt", daemon=True)
        self._thread.start()

    def stop(self) -> defer.Deferred[None]:
        """Close the connection and end the thread; fires when it has ended."""
        if self._thread is None:
            return defer.succeed(None)
        self._stopping = True
        self._wake()
        done: defer.Deferred[None] = defer.Deferred()
        timer = None
        call_later = getattr(self.reactor, "callLater", None)
        if call_later is not None:
            # a libvirt call that hangs must not hang the daemon's stop (the thread is a
            # daemon thread: it does not keep the process alive)
            timer = call_later(STOP_WAIT, lambda: None if done.called else done.callback(None))

        def ended(_: object) -> None:
            if timer is not None and timer.active():
                timer.cancel()
            if not done.called:
                done.callback(None)

        self.stopped.addBoth(ended)
        return done

    def call(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
        """Run ``fn(conn, *args)`` in the libvirt thread; its result on the reactor.

        libvirt errors become :class:`VirtError` (libvirt's message), a missing or
        lost connection :class:`LibvirtUnavailable`.
        """
        d: defer.Deferred[Any] = defer.Deferred()
        if self._thread is None or self._stopping:
            d.errback(LibvirtUnavailable(self._unavailable("the node daemon's libvirt "
                                                           "connection is not running")))
            return d
        self._queue.put((fn, args, d))
        self._wake()
        return d

    def call_aside(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred[Any]:
        """Run ``fn(conn, *args)`` in a thread of its own, on the same connection (a
        libvirt connection may be used from several threads): for a call that lasts,
        such as a migration, which must not hold up the calls queued behind it.
        Errors as :meth:`call`'s; a missing connection fails at once."""
        d: defer.Deferred[Any] = defer.Deferred()
        conn, lv = self._conn, self._libvirt
        if self._thread is None or self._stopping or conn is None or lv is None:
            d.errback(LibvirtUnavailable(self._unavailable(
                self._load_error or self._connect_error or "not connected")))
            return d

        def work() -> None:
            try:
                value = fn(conn, *args)
            except lv.libvirtError as err:
                self._deliver(d, False, VirtError(str(err.get_error_message() or err),
                                                  err.get_error_code()))
            except Exception as err:
                self._deliver(d, False, err)
            else:
                self._deliver(d, True, value)

        threading.Thread(target=work, name="libvirt-aside", daemon=True).start()
        return d

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _unavailable(self, why: str) -> str:
        return f"libvirtd is not available at {self.uri}: {why}"

    # --- libvirt thread ---------------------------------------------------------------

    def _deliver(self, d: defer.Deferred[Any], ok: bool, value: Any) -> None:
        if ok:
            self.reactor.callFromThread(d.callback, value)
        else:
            self.reactor.callFromThread(d.errback, value)

    def _main(self) -> None:
        try:
            self._libvirt = self._loader()
            self._register_loop()
        except Exception as err:  # ImportError, or a broken libvirt
            self._load_error = f"libvirt-python cannot be used: {err}"
        try:
            while not self._stopping:
                try:
                    if self._libvirt is not None:
                        self._ensure_connection()
                    self._run_queue()
                    if self._stopping:
                        break
                    self._wait()
                except Exception:  # never let the thread die: every call would hang
                    log.failure("libvirt thread error")
                    self._lost()
        finally:
            self._close()
            try:
                self._unregister_loop()
            except Exception:  # a broken libvirt: the fds are closed anyway
                pass
            self._fail_queue(LibvirtUnavailable(self._unavailable("the node daemon is "
                                                                  "stopping")))
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.reactor.callFromThread(self.stopped.callback, None)

    def _register_loop(self) -> None:
        global _impl_registered
        lv = self._libvirt
        with _impl_lock:
            if not _impl_registered:
                # libvirt's errors reach us as exceptions; do not print them too
                lv.registerErrorHandler(lambda *_: None, None)
                lv.virEventRegisterDefaultImpl()
                _impl_registered = True
        self._watch = lv.virEventAddHandle(self._wake_r, lv.VIR_EVENT_HANDLE_READABLE,
                                           lambda *_: self._drain(), None)
        # an idle tick, so that the loop returns to check the back-off and stop flag
        self._timer = lv.virEventAddTimeout(int(IDLE_TICK * 1000), lambda *_: None, None)

    def _unregister_loop(self) -> None:
        lv = self._libvirt
        if lv is None:
            return
        if self._watch is not None:
            lv.virEventRemoveHandle(self._watch)
            self._watch = None
        if self._timer is not None:
            lv.virEventRemoveTimeout(self._timer)
            self._timer = None

    def _drain(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except OSError:
            pass

    def _wait(self) -> None:
        if self._libvirt is not None:
            if self._queue.empty():
                self._libvirt.virEventRunDefaultImpl()
        else:
            # no libvirt: only queued calls (failed at once) and the stop flag matter
            import select
            select.select([self._wake_r], [], [], IDLE_TICK)
            self._drain()

    def _ensure_connection(self) -> None:
        if self._conn is not None or time.monotonic() < self._next_try:
            return
        lv = self._libvirt
        try:
            conn = lv.open(self.uri)
        except lv.libvirtError as err:
            self._connect_error = str(err.get_error_message() or err)
            self._next_try = time.monotonic() + self._delay
            if self._delay == self._backoff_first:
                log.warn("Cannot connect to libvirtd at {uri}: {error}", uri=self.uri,
                         error=self._connect_error)
            self._delay = min(self._delay * 2, self._backoff_max)
            return
        try:
            conn.setKeepAlive(5, 3)
        except lv.libvirtError:
            pass  # drivers without keepalive (test:///)
        try:
            conn.registerCloseCallback(lambda *_: self._lost(), None)
        except lv.libvirtError:
            pass
        self._callback_id = conn.domainEventRegisterAny(
            None, lv.VIR_DOMAIN_EVENT_ID_LIFECYCLE, self._lifecycle, None)
        self._conn = conn
        self._connect_error = None
        self._delay = self._backoff_first
        log.info("Connected to libvirtd at {uri}", uri=self.uri)
        if self.on_connect is not None:
            self.reactor.callFromThread(self.on_connect)

    def _lifecycle(self, conn: Any, dom: Any, event: int, detail: int, opaque: Any) -> None:
        if self.on_event is not None:
            self.reactor.callFromThread(self.on_event, dom.name(), event, detail)

    def _lost(self) -> None:
        """The connection closed under us (libvirtd went away)."""
        if self._conn is not None:
            log.warn("Lost the connection to libvirtd at {uri}", uri=self.uri)
        self._conn = None
        self._callback_id = None
        self._connect_error = "the connection was lost"
        self._next_try = time.monotonic() + self._delay

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if self._callback_id is not None:
                conn.domainEventDeregisterAny(self._callback_id)
            conn.close()
        except Exception:  # closing a dead connection
            pass

    def _fail_queue(self, err: Exception) -> None:
        while True:
            try:
                _fn, _args, d = self._queue.get_nowait()
            except queue.Empty:
                return
            self._deliver(d, False, err)

    def _run_queue(self) -> None:
        while not self._stopping:
            try:
                fn, args, d = self._queue.get_nowait()
            except queue.Empty:
                return
            self._run_one(fn, args, d)

    def _run_one(self, fn: Callable[..., Any], args: tuple[Any, ...],
                 d: defer.Deferred[Any]) -> None:
        if self._libvirt is None:
            self._deliver(d, False, LibvirtUnavailable(self._unavailable(
                self._load_error or "libvirt-python is missing")))
            return
        if self._conn is None:
            self._ensure_connection()
        if self._conn is None:
            self._deliver(d, False, LibvirtUnavailable(self._unavailable(
                self._connect_error or "not connected")))
            return
        lv = self._libvirt
        conn = self._conn
        try:
            value = fn(conn, *args)
        except lv.libvirtError as err:
            # the close callback may have run during the call (self._conn is None)
            try:
                alive = conn is self._conn and conn.isAlive() == 1
            except lv.libvirtError:
                alive = False
            if not alive:
                self._close()
                self._lost()
                self._deliver(d, False, LibvirtUnavailable(self._unavailable(
                    str(err.get_error_message() or err))))
            else:
                self._deliver(d, False, VirtError(str(err.get_error_message() or err),
                                                  err.get_error_code()))
            return
        except Exception as err:
            self._deliver(d, False, err)
            return
        self._deliver(d, True, value)
