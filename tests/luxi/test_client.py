"""The blocking LUXI client: retries on a full listen backlog, errors for a missing master,
and clean errors for answers it cannot read."""

import os
import socket
import tempfile

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.core.serializer import MAX_JSON_DEPTH
from ganeti.luxi import wire
from ganeti.luxi.client import BacklogRetry, LuxiClient


class FakeTime:
    """monotonic() and sleep() for the client: sleeping only moves the clock."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []
        self.on_sleep = None

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


def full_backlog(path):
    """A listening UNIX socket with backlog 0 that is never accept()ed, plus the one
    connection that fills its backlog: the next connect gets EAGAIN."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(0)
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    filler.connect(path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(path)
    except BlockingIOError:
        pass
    else:  # pragma: no cover - the kernel queued more than asked
        raise AssertionError("the backlog is not full")
    finally:
        probe.close()
    return server, filler


class BacklogRetryTest(SynchronousTestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="luxi-client-", dir="/tmp")
        self.path = os.path.join(self.dir, "sock")
        self.time = FakeTime()
        self.addCleanup(self._cleanup)
        self.sockets = []

    def _cleanup(self):
        for s in self.sockets:
            s.close()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def client(self, **kw):
        return LuxiClient(self.path, sleep=self.time.sleep, monotonic=self.time.monotonic,
                          retry=BacklogRetry(rng=lambda: 1.0), **kw)

    def test_full_backlog_is_retried_for_the_connect_timeout_then_no_master(self):
        self.sockets.extend(full_backlog(self.path))
        client = self.client(connect_timeout=5.0)
        with self.assertRaises(errors.NoMasterError) as cm:
            client.call("QueryClusterInfo")
        message = str(cm.exception)
        self.assertIn("Resource temporarily unavailable", message)
        self.assertIn("backlog stayed full for 5.0s", message)
        # growing delays from 10 ms up to 1 s, together exactly the connect timeout
        self.assertEqual(self.time.sleeps[:4], [0.01, 0.02, 0.04, 0.08])
        self.assertEqual(max(self.time.sleeps), 1.0)
        self.assertAlmostEqual(sum(self.time.sleeps), 5.0)

    def test_connects_once_the_backlog_drains(self):
        server, filler = full_backlog(self.path)
        self.sockets.extend([server, filler])

        def drain(count):
            if count == 3:  # masterd accepts the waiting connection
                accepted, _ = server.accept()
                self.sockets.append(accepted)

        self.time.on_sleep = drain
        client = self.client(connect_timeout=5.0)
        sock = client._connect()
        self.assertEqual(len(self.time.sleeps), 3)
        sock.sendall(b"ping")
        accepted, _ = server.accept()
        self.sockets.append(accepted)
        self.assertEqual(accepted.recv(4), b"ping")
        client.close()

    def test_missing_socket_fails_at_once(self):
        client = self.client()
        with self.assertRaises(errors.NoMasterError) as cm:
            client.call("QueryClusterInfo")
        self.assertIn("No such file or directory", str(cm.exception))
        self.assertEqual(self.time.sleeps, [])

    def test_refused_connection_fails_at_once(self):
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.path)  # a socket file nobody listens on (a dead masterd)
        self.sockets.append(stale)
        with self.assertRaises(errors.NoMasterError) as cm:
            self.client().call("QueryClusterInfo")
        self.assertIn("Connection refused", str(cm.exception))
        self.assertEqual(self.time.sleeps, [])


class AnswerTest(SynchronousTestCase):
    def connected(self, answer):
        mine, theirs = socket.socketpair()
        self.addCleanup(theirs.close)
        theirs.sendall(answer)
        client = LuxiClient("/nonexistent")
        client._sock = mine
        self.addCleanup(client.close)
        return client

    def test_too_deep_answer_is_a_protocol_error(self):
        depth = MAX_JSON_DEPTH + 1
        deep = b'{"success": true, "result": ' + b"[" * depth + b"]" * depth + b"}\x03"
        with self.assertRaises(errors.ProtocolError) as cm:
            self.connected(deep).call("QueryClusterInfo")
        self.assertIn("nested more than", str(cm.exception))

    def test_absurdly_deep_answer_is_a_protocol_error_too(self):
        deep = b"[" * 20000 + b"]" * 20000 + b"\x03"  # far beyond the stack
        with self.assertRaises(errors.ProtocolError):
            self.connected(deep).call("QueryClusterInfo")

    def test_normal_answer(self):
        client = self.connected(wire.encode_response(True, {"name": "c"}))
        self.assertEqual(client.call("QueryClusterInfo"), {"name": "c"})
