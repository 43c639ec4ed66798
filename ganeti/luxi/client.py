"""A blocking LUXI client for command-line tools and scripts.

Tools are short-lived processes without a reactor, so a plain socket is the
simplest correct client.  Daemons use the Twisted client instead.

Connecting retries while the socket's listen backlog is full (``EAGAIN``:
many clients at once, masterd busy for a moment), as Ganeti's client does,
for at most the connect timeout; only then is the master called unreachable.
A missing socket or a refused connection fails at once, so tools can tell
the user quickly that the master daemon is down.
"""

from __future__ import annotations

import errno
import os
import random
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from ganeti.core import constants, errors
from ganeti.luxi import wire
from ganeti.luxi.methods import METHODS


class LuxiMethods:
    """Typed wrappers over ``call`` for the methods tools use; shared with test fakes."""

    def call(self, method: str, *args: Any) -> Any:
        """Call ``method`` with positional ``args``."""
        raise NotImplementedError

    def query_cluster_info(self) -> dict[str, Any]:
        """``QueryClusterInfo``."""
        result: dict[str, Any] = self.call("QueryClusterInfo")
        return result

    def query_config_values(self, fields: list[str]) -> list[Any]:
        """``QueryConfigValues``."""
        result: list[Any] = self.call("QueryConfigValues", list(fields))
        return result

    def query_tags(self, kind: str, name: str | None) -> list[str]:
        """``QueryTags``."""
        result: list[str] = self.call("QueryTags", kind, name)
        return result


class BacklogRetry:
    """Delays between connection attempts while the listen backlog is full.

    Short at first (the backlog usually drains within milliseconds), growing
    to Ganeti's one-second interval, with jitter so that a crowd of clients
    refused together does not come back together.
    """

    def __init__(self, first: float = 0.01, factor: float = 2.0, longest: float = 1.0,
                 rng: Callable[[], float] = random.random) -> None:
        self.first = first
        self.factor = factor
        self.longest = longest
        self.rng = rng

    def delays(self) -> Iterator[float]:
        """An endless iterator of delays in seconds."""
        delay = self.first
        while True:
            yield delay * (0.5 + self.rng() / 2)
            delay = min(delay * self.factor, self.longest)


def unreachable(address: str, reason: str) -> errors.NoMasterError:
    """The error for a master daemon that cannot be reached."""
    return errors.NoMasterError(
        f"Cannot communicate with the master daemon at {address} "
        f"({reason}); is ganeti-masterd running on this node?")


def backlog_full(address: str, waited: float) -> errors.NoMasterError:
    """The error once the listen backlog stayed full for the whole connect timeout."""
    return unreachable(address, f"{os.strerror(errno.EAGAIN)}: its connection backlog "
                                f"stayed full for {waited:.1f}s")


class LuxiClient(LuxiMethods):
    """Calls methods on the master daemon over its UNIX socket.

    ``sleep``, ``monotonic`` and ``retry`` pace the retries on a full listen
    backlog (tests replace them; see the module doc).
    """

    def __init__(self, address: str, timeout: float = constants.LUXI_DEF_RWTO,
                 connect_timeout: float = constants.LUXI_DEF_CTMO,
                 sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic,
                 retry: BacklogRetry | None = None) -> None:
        self.address = address
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._sleep = sleep
        self._monotonic = monotonic
        self._retry = retry if retry is not None else BacklogRetry()
        self._sock: socket.socket | None = None
        self._splitter = wire.FrameSplitter(max_size=64 * 1024 * 1024)
        self._frames: list[bytes] = []

    def _connect(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        start = self._monotonic()
        delays = self._retry.delays()
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.connect_timeout)
            try:
                sock.connect(self.address)
                break
            except OSError as err:
                sock.close()
                if err.errno in (errno.EACCES, errno.EPERM):
                    raise errors.PermissionError(
                        f"Permission denied on the master socket {self.address}; run this "
                        "command as root or as a member of the daemons' group") from None
                if err.errno != errno.EAGAIN:
                    raise unreachable(self.address, str(err.strerror or err)) from None
            # EAGAIN: the backlog is full; masterd is there, just busy for a moment.
            waited = self._monotonic() - start
            if waited >= self.connect_timeout:
                raise backlog_full(self.address, waited)
            self._sleep(min(next(delays), self.connect_timeout - waited))
        sock.settimeout(self.timeout)
        self._sock = sock
        return sock

    def close(self) -> None:
        """Close the connection (a later call reconnects)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._frames.clear()
        self._splitter = wire.FrameSplitter(max_size=self._splitter.max_size)

    def __enter__(self) -> LuxiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, *args: Any) -> Any:
        """Call ``method`` with positional ``args``; returns the result or raises."""
        spec = METHODS.get(method)
        if spec is not None:
            spec.check_args(list(args))
        sock = self._connect()
        try:
            sock.sendall(wire.encode_request(method, args))
            while not self._frames:
                data = sock.recv(65536)
                if not data:
                    raise errors.ConnectionClosedError(
                        "The master daemon closed the connection without answering")
                self._frames.extend(self._splitter.feed(data))
        except TimeoutError:
            self.close()
            raise errors.TimeoutError(
                f"The master daemon did not answer {method} within {self.timeout}s") from None
        except OSError as err:
            self.close()
            raise errors.ConnectionClosedError(f"LUXI connection failed: {err}") from None
        return wire.parse_response(self._frames.pop(0))
