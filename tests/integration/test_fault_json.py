"""Fault test, issue 13 items 9 and 11, on real daemons of a one-node virtual cluster:

- 2,000 deeply nested datagrams to ganeti-confd (unsigned, forged and correctly signed):
  no reply, a normal client served in < 2 s meanwhile, a log that grows by a few lines,
  bounded memory;
- ganeti-noded over mutual TLS: a deeply nested body is a 400 with a message; names
  that only match in part (``job-77\\n``, ``serial\\n``, ``ssconf_evil\\n``) are refused
  and nothing is written;
- ganeti-masterd started on a config.data nested too deep exits non-zero with a one-line
  reason and no traceback.
"""

import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

from ganeti.confd import client, protocol
from ganeti.core import serializer
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, ROOT, node_env, rss

FLOOD = 2000
DEPTH = 10_000  # 20 KB a datagram: well under confd's size limit, far over the depth bound
RSS_LIMIT = 64 * 1024 * 1024
LOG_GROWTH_LIMIT = 4096


def free_udp_port(address):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def deep_datagrams(key, now):
    """The three kinds of hostile datagram, each nested ``DEPTH`` levels."""
    deep = "[" * DEPTH + "]" * DEPTH
    salt = str(int(now))
    unsigned = b"plj0" + deep.encode()
    forged = b"plj0" + json.dumps({"msg": deep, "salt": salt, "hmac": "0" * 40}).encode()
    signed = protocol.sign(key, deep, salt)  # a key holder's broken client
    return unsigned, forged, signed


class FaultJsonTest(ClusterCase):
    """One virtual cluster (noded and masterd) and one ganeti-confd for the class."""

    PREFIX = "ganeti-fault-json-"
    confd: subprocess.Popen | None = None

    @classmethod
    def setUpCluster(cls):
        cls.ip = cls.cluster.ips[0]
        cls.paths = Paths.for_node(cls.cluster.root, cls.cluster.master)
        with open(cls.paths.hmac_key, "rb") as f:
            cls.key = f.read()
        cls.port = free_udp_port(cls.ip)
        cls.confd_log = os.path.join(cls.cluster.tmp, "confd.out")
        with open(cls.confd_log, "wb") as out:
            cls.confd = subprocess.Popen(
                [os.path.join(BIN, "twistd"), "-n", "--pidfile=", "ganeti-confd", "-b",
                 cls.ip, "-p", str(cls.port)],
                env={**os.environ, **cls.cluster.env}, stdout=out, stderr=subprocess.STDOUT,
                cwd=ROOT)
        deadline = time.monotonic() + 20
        while not cls.ask(timeout=0.5).answered:
            if time.monotonic() > deadline or cls.confd.poll() is not None:
                raise AssertionError("ganeti-confd does not answer:\n" + cls.confd_output())

    @classmethod
    def tearDownClass(cls):
        if cls.confd is not None and cls.confd.poll() is None:
            cls.confd.terminate()
            try:
                cls.confd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                cls.confd.kill()
                cls.confd.wait()
        super().tearDownClass()

    @classmethod
    def ask(cls, timeout=5.0):
        return client.query_blocking([cls.ip], cls.key, "cluster-master", port=cls.port,
                                     timeout=timeout)

    @classmethod
    def confd_output(cls):
        with open(cls.confd_log, encoding="utf-8", errors="replace") as f:
            return f.read()

    # -- confd --------------------------------------------------------------

    def test_confd_flood_of_deep_datagrams(self):
        log_before = os.path.getsize(self.confd_log)
        rss_before = rss(self.confd.pid)
        sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(sender.close)
        sender.bind((self.ip, 0))
        unsigned, forged, signed = deep_datagrams(self.key, time.time())
        # mostly unauthenticated input; every tenth one signed with the cluster's key
        mix = [unsigned, forged] * 4 + [unsigned, signed]
        sent = []

        def flood():
            # in bursts of 100 over about two seconds, so that good queries overlap it
            for i in range(FLOOD):
                sender.sendto(mix[i % len(mix)], (self.ip, self.port))
                sent.append(i)
                if i % 100 == 99:
                    time.sleep(0.1)

        thread = threading.Thread(target=flood)
        thread.start()
        served = []
        try:
            while thread.is_alive() or not served:
                start = time.monotonic()
                result = self.ask(timeout=5.0)
                served.append((time.monotonic() - start, result))
        finally:
            thread.join()
        self.assertEqual(len(sent), FLOOD)
        for elapsed, result in served:
            self.assertTrue(result.answered, self.confd_output()[-2000:])
            self.assertEqual(result.answer, self.cluster.master)
            self.assertLess(elapsed, 2.0)
        # after the flood, again at once
        start = time.monotonic()
        self.assertEqual(self.ask().answer, self.cluster.master)
        self.assertLess(time.monotonic() - start, 2.0)
        # not one reply to the hostile sender
        sender.settimeout(0.5)
        self.assertRaises(socket.timeout, sender.recv, 65536)
        grown = os.path.getsize(self.confd_log) - log_before
        new_text = self.confd_output()[log_before:]
        self.assertNotIn("Traceback", new_text)
        self.assertNotIn("RecursionError", new_text)
        self.assertLess(grown, LOG_GROWTH_LIMIT, new_text)
        self.assertIn("envelope is not a flat object", new_text)
        self.assertIn("bad hmac", new_text)
        self.assertIn("message nested too deep", new_text)
        growth = rss(self.confd.pid) - rss_before
        self.assertLess(growth, RSS_LIMIT)
        print(f"\nconfd: {FLOOD} deep datagrams, {len(served)} good queries served "
              f"meanwhile (slowest {max(e for e, _ in served) * 1000:.0f} ms), log +{grown} "
              f"bytes, RSS {growth / 2**20:+.1f} MiB")

    # -- noded --------------------------------------------------------------

    def noded_put(self, call, body):
        """One PUT over mutual TLS with the cluster certificate; (status, JSON reply)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(self.paths.server_pem)
        ctx.load_cert_chain(self.paths.server_pem)
        raw = socket.create_connection((self.ip, 1811), timeout=10)
        conn = http.client.HTTPConnection(self.ip, 1811, timeout=10)
        conn.sock = ctx.wrap_socket(raw)
        try:
            if not isinstance(body, bytes):
                body = json.dumps(body).encode()
            conn.request("PUT", "/" + call, body=body,
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def listing(self):
        out = set()
        for base, dirs, names in os.walk(self.paths.data_dir):
            out.update(os.path.relpath(os.path.join(base, n), self.paths.data_dir)
                       for n in dirs + names)
        return out

    def test_noded_deep_body_is_a_400(self):
        for call in ("version", "jobqueue_update", "upload_file"):
            status, reply = self.noded_put(call, b"[" * 100_000 + b"]" * 100_000)
            self.assertEqual(status, 400, reply)
            self.assertEqual(reply[0], False)
            self.assertIn(f"nested more than {serializer.MAX_JSON_DEPTH} levels", reply[1])
        # the daemon is fine afterwards
        status, reply = self.noded_put("version", [])
        self.assertEqual((status, reply[0]), (200, True))

    def test_noded_refuses_names_that_only_match_in_part(self):
        before = self.listing()
        queue = "/var/lib/ganeti/queue/"
        for name in ("job-77\n", "serial\n", queue + "job-77\n", "archive/1/job-77\n"):
            status, reply = self.noded_put("jobqueue_update", [name, "x"])
            self.assertEqual(reply[0], False, (name, status))
            self.assertIn("invalid job queue file name", reply[1])
            status, reply = self.noded_put("jobqueue_rename", [[["job-1", name]]])
            self.assertIn("invalid job queue file name", reply[1])
        status, reply = self.noded_put("upload_file", [
            "/var/lib/ganeti/ssconf_evil\n", "x", 0o444, None, None, None, None])
        self.assertEqual(reply[0], False)
        self.assertIn("is not a file the master may upload", reply[1])
        status, reply = self.noded_put("write_ssconf_files", [{"evil\n": "x"}])
        self.assertEqual((status, reply[0]), (400, False))
        after = self.listing()
        self.assertEqual(sorted(after - before), [])
        self.assertFalse([n for n in after if "\n" in n])

    # -- masterd ------------------------------------------------------------

    def test_masterd_on_a_config_nested_too_deep(self):
        # a copy of the master's state, with config.data replaced by deeply nested JSON
        root = os.path.join(self.cluster.tmp, "deep", self.cluster.master)
        paths = Paths.for_node(root, self.cluster.master)
        shutil.copytree(self.paths.data_dir, paths.data_dir)
        os.makedirs(paths.log_dir)
        with open(paths.config_file, "w", encoding="utf-8") as f:
            f.write('{"version": 3000000, "cluster": ' + '{"a": ' * 5000 + "1" + "}" * 5000
                    + "}")
        env = {**os.environ, **node_env(os.path.dirname(root), self.cluster.master)}
        proc = subprocess.run([os.path.join(BIN, "twistd"), "-n", "--pidfile=",
                               "ganeti-masterd"], env=env, cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=False)
        output = (proc.stdout + proc.stderr).strip()
        self.assertNotEqual(proc.returncode, 0, output)
        self.assertNotIn("Traceback", output)
        self.assertEqual(output.splitlines(), [
            "ganeti-masterd: cannot start: config: not valid JSON: "
            f"JSON nested more than {serializer.MAX_JSON_DEPTH} levels deep"])
