"""ganeti-noded for real: twistd on a random loopback address, the RPC client, real TLS."""

import hashlib
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

from twisted.internet import reactor
from twisted.trial.unittest import TestCase

from ganeti.core import constants, crypto
from ganeti.rpc.client import NodeTarget, RpcClient
from ganeti.rpc.tls import ClusterCertificate
from tests.integration.helpers import BIN

HOST = "node1.noded-it.test"
CLUSTER = "cluster.noded-it.test"
START_TIMEOUT = 15.0
_PEMS = {}


def pem(name):
    """A cached key + self-signed certificate (RSA key generation is slow)."""
    if name not in _PEMS:
        _PEMS[name] = crypto.generate_self_signed(name)
    return _PEMS[name]


def random_address():
    """A loopback address away from the virtual clusters' 127.0.0.x."""
    return f"127.{random.randint(100, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def free_port(address):
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def write(path, data, mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.chmod(path, mode)


class NodedTest(TestCase):
    """One daemon per test: each test may change the node (or stop the daemon)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ganeti-noded-it-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, HOST)
        self.data = os.path.join(self.root, "var/lib/ganeti")
        write(os.path.join(self.data, "server.pem"), pem(CLUSTER), 0o440)
        write(os.path.join(self.data, "ssconf_cluster_name"), CLUSTER + "\n", 0o444)
        write(os.path.join(self.data, "ssconf_master_node"), HOST + "\n", 0o444)
        write(os.path.join(self.data, "queue/lock"), "")
        self.pidfile = os.path.join(self.tmp, "ganeti-noded.pid")
        self.out_path = os.path.join(self.tmp, "noded.out")
        self.proc = None
        for _ in range(3):  # another process may take the port between probe and bind
            self.address = random_address()
            self.port = free_port(self.address)
            if self.start_daemon():
                break
        else:
            self.fail(f"ganeti-noded did not start:\n{self.output()}")
        self.client = RpcClient(reactor, ClusterCertificate.from_pem(pem(CLUSTER)), self.port)
        self.addCleanup(self.client.close)
        self.node = NodeTarget(HOST, self.address)

    def start_daemon(self):
        """Start twistd and wait until the port accepts connections; False if it exited."""
        env = dict(os.environ, GANETI_ROOTDIR=self.root, GANETI_HOSTNAME=HOST)
        with open(self.out_path, "ab") as out:
            self.proc = subprocess.Popen(
                [os.path.join(BIN, "twistd"), "--pidfile", self.pidfile, "-n", "ganeti-noded",
                 "--bind", self.address, "--port", str(self.port)],
                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=self.tmp)
        self.addCleanup(self.kill_daemon, self.proc)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)  # polling a real process, with a deadline
        return False

    @staticmethod
    def kill_daemon(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)

    def output(self):
        with open(self.out_path, errors="replace") as f:
            return f.read()[-4000:]

    async def call(self, name, args=()):
        results = await self.client.call([self.node], name, list(args))
        return results[HOST]

    async def test_version_and_uploads(self):
        r = await self.call("version")
        self.assertEqual((r.success, r.payload), (True, constants.PROTOCOL_VERSION), r.fail_msg)
        if os.geteuid() == 0:  # as root the daemon tries mlockall (failure is only logged)
            self.assertRegex(self.output(), "locked into memory|Cannot lock the node daemon")

        config = '{"version": 3000000, "cluster": {}}'
        r = await self.call("upload_file", ["/var/lib/ganeti/config.data", config, 0o640,
                                            None, None, None, None])
        self.assertTrue(r.success, r.fail_msg)
        with open(os.path.join(self.data, "config.data")) as f:
            self.assertEqual(f.read(), config)
        self.assertEqual(os.stat(os.path.join(self.data, "config.data")).st_mode & 0o777, 0o640)

        with open("/etc/passwd", "rb") as f:
            before = f.read()
        r = await self.call("upload_file", ["/etc/passwd", "evil::0:0::/:/bin/sh\n", 0o644,
                                            0, 0, None, None])
        self.assertFalse(r.success)
        self.assertIn("is not a file the master may upload", r.fail_msg)
        self.assertFalse(os.path.exists(os.path.join(self.root, "etc/passwd")))
        with open("/etc/passwd", "rb") as f:
            self.assertEqual(f.read(), before)

    def tls_exchange(self, certfile):
        """One request over stdlib TLS, presenting ``certfile`` (or no certificate)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if certfile:
            ctx.load_cert_chain(certfile)
        with socket.create_connection((self.address, self.port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as tls:
                # with TLS 1.3 the refusal only arrives with the first read
                tls.sendall(b"PUT /version HTTP/1.1\r\nHost: n\r\nContent-Length: 2\r\n\r\n[]")
                return tls.recv(4096)

    async def test_foreign_certificate_refused_in_handshake(self):
        foreign = os.path.join(self.tmp, "foreign.pem")
        write(foreign, pem("intruder.example.com"))
        self.assertRaises(ssl.SSLError, self.tls_exchange, foreign)
        self.assertRaises(ssl.SSLError, self.tls_exchange, None)
        # the cluster certificate itself gets an answer over the same stdlib client
        cluster = os.path.join(self.tmp, "cluster.pem")
        write(cluster, pem(CLUSTER))
        reply = self.tls_exchange(cluster)
        self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), reply)
        self.assertIn(f"[true, {constants.PROTOCOL_VERSION}]".encode(), reply)
        r = await self.call("version")
        self.assertTrue(r.success, r.fail_msg)

    async def test_node_verify(self):
        write(os.path.join(self.data, "config.data"), "{}")
        before = time.time()
        r = await self.call("node_verify", [
            {"version": True, "hostname": True, "time": True, "ssconf": True,
             "filelist": ["/var/lib/ganeti/config.data", "/var/lib/ganeti/hmac.key"]},
            CLUSTER])
        after = time.time()
        self.assertTrue(r.success, r.fail_msg)
        result = r.payload
        self.assertEqual(result["version"], [constants.PROTOCOL_VERSION,
                                             constants.RELEASE_VERSION])
        self.assertEqual(result["hostname"], HOST)
        self.assertTrue(before - 1 <= result["time"] <= after + 1, (before, result["time"]))
        self.assertEqual(result["filelist"], {
            "/var/lib/ganeti/config.data": hashlib.sha1(b"{}").hexdigest(),
            "/var/lib/ganeti/hmac.key": None})
        self.assertEqual(result["ssconf"], {"cluster_name": CLUSTER + "\n",
                                            "master_node": HOST + "\n"})
        r = await self.call("node_verify", [{"version": True}, "other.example.com"])
        self.assertFalse(r.success)
        self.assertIn(f"belongs to cluster {CLUSTER!r}", r.fail_msg)

    async def test_leave_cluster_removes_files_and_stops_the_daemon(self):
        for name in ("config.data", "queue/job-1", "queue/serial", "queue/archive/0/job-0",
                     "rapi.pem", "rapi/users", "hmac.key", "cluster-domain-secret"):
            write(os.path.join(self.data, name), "x")
        r = await self.call("node_leave_cluster")
        self.assertTrue(r.success, r.fail_msg)
        self.assertEqual(r.payload, [
            "/var/lib/ganeti/config.data", "/var/lib/ganeti/ssconf_cluster_name",
            "/var/lib/ganeti/ssconf_master_node", "/var/lib/ganeti/queue/archive",
            "/var/lib/ganeti/queue/job-1", "/var/lib/ganeti/queue/serial",
            "/var/lib/ganeti/rapi.pem", "/var/lib/ganeti/rapi/users",
            "/var/lib/ganeti/hmac.key", "/var/lib/ganeti/cluster-domain-secret",
            "/var/lib/ganeti/server.pem"])
        self.assertEqual(sorted(os.listdir(self.data)), ["queue", "rapi"])
        self.assertEqual(os.listdir(os.path.join(self.data, "queue")), ["lock"])
        # the daemon stops by itself, cleanly, shortly after answering
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.fail(f"ganeti-noded still runs after node_leave_cluster:\n{self.output()}")
        self.assertEqual(code, 0, self.output())
        self.assertFalse(os.path.exists(self.pidfile))
        self.assertIn("Left the cluster", self.output())
