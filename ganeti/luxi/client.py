"""A blocking LUXI client for command-line tools and scripts.

Tools are short-lived processes without a reactor, so a plain socket is the
simplest correct client.  Daemons use the Twisted client instead.
"""

from __future__ import annotations

import errno
import socket
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


class LuxiClient(LuxiMethods):
    """Calls methods on the master daemon over its UNIX socket."""

    def __init__(self, address: str, timeout: float = constants.LUXI_DEF_RWTO,
                 connect_timeout: float = constants.LUXI_DEF_CTMO) -> None:
        self.address = address
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._splitter = wire.FrameSplitter(max_size=64 * 1024 * 1024)
        self._frames: list[bytes] = []

    def _connect(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(self.address)
        except OSError as err:
            sock.close()
            if err.errno in (errno.EACCES, errno.EPERM):
                raise errors.PermissionError(
                    f"Permission denied on the master socket {self.address}; "
                    "run this command as root or as a member of the daemons' group") from None
            raise errors.NoMasterError(
                f"Cannot communicate with the master daemon at {self.address} "
                f"({err.strerror}); is ganeti-masterd running on this node?") from None
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
