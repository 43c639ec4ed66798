"""A blocking feed client on the standard library (socket, ssl, RFC 6455 framing).

For integration tests and benchmarks that run outside the reactor; docs/feeds.md
shows the same approach.  It answers pings, collects every message, and can
stop reading to play a slow consumer.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import time

from tests.feeds import wsframes


class FeedClosed(Exception):
    """The server closed the connection."""


class BlockingFeedClient:
    """One ``/2/feed`` connection; ``messages`` holds everything received, in order."""

    def __init__(self, host, port, user=None, password=None, cafile=None,
                 server_hostname=None, path="/2/feed", timeout=30.0, use_tls=True,
                 rcvbuf=None):
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.cafile = cafile
        self.server_hostname = server_hostname or host
        self.path = path
        self.timeout = timeout
        self.use_tls = use_tls
        self.rcvbuf = rcvbuf
        self.sock = None
        self.buffer = b""
        self.messages = []
        self.received_at = []  # (time.time(), message) for latency measurements
        self.close_code = None

    def connect(self):
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.rcvbuf:
            # Before connecting, so that the TCP window is small from the start.
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        raw.settimeout(self.timeout)
        raw.connect((self.host, self.port))
        if self.use_tls:
            context = ssl.create_default_context(cafile=self.cafile)
            if self.cafile is None:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            raw = context.wrap_socket(raw, server_hostname=self.server_hostname)
        self.sock = raw
        headers = {}
        if self.user is not None:
            token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        request, _ = wsframes.handshake_request(self.path, f"{self.host}:{self.port}",
                                                headers)
        self.sock.sendall(request)
        while True:
            head, rest = wsframes.split_handshake(self.buffer)
            if head is not None:
                break
            self._fill(self.timeout)
        if not head.startswith(b"HTTP/1.1 101"):
            raise FeedClosed(f"handshake refused: {head.splitlines()[0].decode()}")
        self.buffer = rest
        return self

    def send(self, message):
        self.sock.sendall(wsframes.client_frame(json.dumps(message)))

    def subscribe(self, jobs="all", **fields):
        """Subscribe and read until the ``subscribed`` answer; returns it."""
        self.send(dict({"type": "subscribe", "jobs": jobs}, **fields))
        self.read_until(lambda c: c.of_type("subscribed"))
        return self.of_type("subscribed")[-1]

    def _fill(self, timeout):
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(262144)
        except TimeoutError:
            return False
        except ssl.SSLWantReadError:
            return False
        if not chunk:
            raise FeedClosed(f"connection closed by the server (code {self.close_code})")
        self.buffer += chunk
        return True

    def _process(self):
        frames, self.buffer = wsframes.parse_frames(self.buffer)
        now = time.time()
        for opcode, payload in frames:
            if opcode == wsframes.OP_TEXT:
                for message in json.loads(payload):
                    self.messages.append(message)
                    self.received_at.append((now, message))
            elif opcode == wsframes.OP_PING:
                self.sock.sendall(wsframes.client_frame(payload, wsframes.OP_PONG))
            elif opcode == wsframes.OP_CLOSE:
                self.close_code = int.from_bytes(payload[:2], "big") if payload else None
                try:
                    self.sock.sendall(wsframes.client_frame(payload, wsframes.OP_CLOSE))
                except OSError:
                    pass
                raise FeedClosed(f"closed by the server (code {self.close_code})")

    def read_for(self, seconds):
        """Read whatever arrives within ``seconds`` (0: only what is already there)."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            if not self._fill(remaining if remaining > 0 else 0.001):
                self._process()
                if time.monotonic() >= deadline:
                    return
                continue
            self._process()
            if remaining <= 0:
                return

    def read_until(self, condition, timeout=None):
        """Read until ``condition(self)`` is true; AssertionError after ``timeout``."""
        deadline = time.monotonic() + (timeout or self.timeout)
        self._process()
        while not condition(self):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"feed condition not met within the timeout; last "
                                     f"messages: {self.messages[-3:]}")
            self._fill(min(remaining, 1.0))
            self._process()
        return self

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None

    # Views

    def of_type(self, kind):
        return [m for m in self.messages if m["type"] == kind]

    def events(self):
        return [m for m in self.messages if m["type"] in ("job", "archive")]

    def serials(self):
        return [m["serial"] for m in self.events()]

    def check_no_silent_gap(self):
        """For a subscription to every event: serials are consecutive, except right after
        a ``resync``, where they continue from the resync's serial."""
        previous = None
        for message in self.messages:
            if message["type"] == "resync":
                previous = message["serial"]
            elif message["type"] in ("job", "archive"):
                if previous is not None and message["serial"] != previous + 1:
                    raise AssertionError(f"serial {message['serial']} after {previous}")
                previous = message["serial"]

    def has_final(self, job_ids):
        """Whether a success/error/canceled event was received for each of ``job_ids``."""
        done = {m["id"] for m in self.events()
                if m["type"] == "job" and m["status"] in ("success", "error", "canceled")}
        return set(job_ids) <= done
