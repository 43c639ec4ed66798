"""ganeti-rapi for real: twistd on a virtual cluster's master, HTTPS checked against
rapi.pem, the users file, SIGHUP, plain HTTP refused, --no-ssl, masterd restarts, and
Debian's own RAPI client against it."""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

from ganeti.cli import daemons, rapicall
from ganeti.core import constants, crypto
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN
from tests.integration.jobtools import wait_for_job

PORT = constants.DEFAULT_RAPI_PORT
CLUSTER = "cluster.vcluster.test"
DEADLINE = 15.0
DEBIAN_PYTHON = "/usr/bin/python3"


def poll(check, timeout=DEADLINE, interval=0.05):
    """Poll a real process's effect until ``check()`` is true (bounded by a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            return result
        time.sleep(interval)


def free_port(address):
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class RapiDaemonTest(ClusterCase):
    """One virtual cluster (noded, masterd and ganeti-rapi on the master) for the class."""

    PREFIX = "ganeti-rapi-it-"

    @classmethod
    def setUpCluster(cls):
        cls.ip = cls.cluster.ips[0]
        cls.paths = Paths.for_node(cls.cluster.root, cls.cluster.master)
        cls.context = rapicall.tls_context(cls.paths.rapi_pem)
        cls.admin = rapicall.read_credentials(os.path.join(cls.cluster.dir, "rapi-credentials"))
        with open(cls.paths.rapi_users, encoding="utf-8") as f:
            cls.original_users = f.read()

    def tearDown(self):
        with open(self.paths.rapi_users, "w", encoding="utf-8") as f:
            f.write(self.original_users)

    def request(self, method, path, credentials=None, body=None, port=PORT, tls=True):
        """(status, headers, decoded body) of one request on a new connection."""
        sock = socket.create_connection((self.ip, port), timeout=10)
        if tls:
            sock = self.context.wrap_socket(sock, server_hostname=CLUSTER)
        conn = http.client.HTTPConnection(self.ip, port, timeout=10)
        conn.sock = sock
        headers = {}
        if credentials:
            token = base64.b64encode(":".join(credentials).encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            return response.status, response, json.loads(raw) if raw else None
        finally:
            conn.close()

    def add_user(self, line):
        with open(self.paths.rapi_users, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def test_https_answers_verified_against_rapi_pem(self):
        status, response, info = self.request("GET", "/2/info")
        self.assertEqual(status, 200)
        self.assertEqual(response.getheader("Content-Type"), "application/json")
        self.assertEqual((info["name"], info["master"]), (CLUSTER, self.cluster.master))
        self.assertEqual(self.request("GET", "/version")[2], 2)
        # the server really is checked: another trust anchor fails the handshake
        other = tempfile.NamedTemporaryFile(suffix=".pem")
        self.addCleanup(other.close)
        other.write(crypto.generate_self_signed(CLUSTER))
        other.flush()
        with self.assertRaises(ssl.SSLCertVerificationError):
            rapicall.request(self.ip, PORT, "GET", "/version",
                             context=rapicall.tls_context(other.name), server_hostname=CLUSTER)

    def test_keep_alive(self):
        sock = self.context.wrap_socket(socket.create_connection((self.ip, PORT), timeout=10),
                                        server_hostname=CLUSTER)
        conn = http.client.HTTPConnection(self.ip, PORT, timeout=10)
        conn.sock = sock
        self.addCleanup(conn.close)
        for _ in range(3):
            conn.request("GET", "/version")
            response = conn.getresponse()
            self.assertEqual((response.status, response.read()), (200, b"2"))
        self.assertIs(conn.sock, sock)  # one connection for all three

    def test_feed_and_dashboard(self):
        status, response, _ = self.raw_get("/dashboard")
        self.assertEqual((status, response.getheader("Location")), (301, "/dashboard/"))
        status, response, body = self.raw_get("/dashboard/")
        self.assertEqual(status, 200)
        self.assertEqual(response.getheader("Content-Type"), "text/html; charset=utf-8")
        self.assertIn(b"<html", body.lower())
        sock = self.context.wrap_socket(socket.create_connection((self.ip, PORT), timeout=10),
                                        server_hostname=CLUSTER)
        with sock:
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall((f"GET /2/feed HTTP/1.1\r\nHost: {CLUSTER}\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          f"Sec-WebSocket-Key: {key}\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                head += chunk
        self.assertTrue(head.startswith(b"HTTP/1.1 101 "), head)
        self.assertIn(b"sec-websocket-accept:", head.lower())

    def raw_get(self, path):
        """(status, response, raw body) of a GET over verified HTTPS."""
        sock = self.context.wrap_socket(socket.create_connection((self.ip, PORT), timeout=10),
                                        server_hostname=CLUSTER)
        conn = http.client.HTTPConnection(self.ip, PORT, timeout=10)
        conn.sock = sock
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response, response.read()
        finally:
            conn.close()

    def test_plain_http_to_the_https_port_gets_no_http_answer(self):
        with socket.create_connection((self.ip, PORT), timeout=10) as s:
            s.sendall(b"GET /2/info HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                try:
                    chunk = s.recv(4096)
                except (ConnectionResetError, TimeoutError):
                    break
                if not chunk:
                    break
                data += chunk
        self.assertFalse(data.startswith(b"HTTP/"), data)
        self.assertNotIn(b"cluster.vcluster.test", data)

    def test_write_resource_needs_a_user_with_write(self):
        status, response, body = self.request("PUT", "/2/tags?tag=it:anon")
        self.assertEqual(status, 401)
        self.assertEqual(response.getheader("WWW-Authenticate"),
                         'Basic realm="Ganeti Remote API"')
        self.assertEqual(sorted(body), ["code", "explain", "message"])
        status, _, _ = self.request("PUT", "/2/tags?tag=it:bad", ("gnt-admin", "wrong"))
        self.assertEqual(status, 401)
        self.add_user("viewer {CLEARTEXT}viewerpw read")
        status, _, body = poll(lambda: self.accepted(("viewer", "viewerpw")))
        self.assertEqual(status, 403, body)
        self.assertIn("lacks the &#x27;write&#x27; permission", body["message"])
        status, _, job_id = self.request("PUT", "/2/tags?tag=it:admin", self.admin)
        self.assertEqual(status, 200, job_id)
        with self.cluster.client() as client:
            self.assertEqual(wait_for_job(client, job_id), "success")
            self.assertIn("it:admin", client.call("QueryTags", "cluster", ""))

    def accepted(self, credentials):
        """The answer to a tag PUT once the credentials are known (not 401)."""
        answer = self.request("PUT", "/2/tags?tag=it:x", credentials)
        return answer if answer[0] != 401 else None

    def test_sighup_reloads_the_users_file(self):
        # rewrite the file in place with the same size and modification time: the
        # change check cannot see it, so only SIGHUP makes the daemon read it
        admin_line = next(line for line in self.original_users.splitlines()
                          if line and not line.startswith("#"))
        self.add_user("sighup1 pw1 read")
        st = os.stat(self.paths.rapi_users)
        poll(lambda: self.request("GET", "/version", ("sighup1", "pw1"))[0] == 200)
        with open(self.paths.rapi_users, "r+", encoding="utf-8") as f:
            content = f.read().replace("sighup1 pw1", "sighup2 pw2")
            f.seek(0)
            f.write(content)
        os.utime(self.paths.rapi_users, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.assertEqual(os.stat(self.paths.rapi_users).st_size, st.st_size)
        self.assertIn(admin_line, content)
        pid = daemons.read_pid(self.paths.pid_file(constants.RAPI))
        os.kill(pid, signal.SIGHUP)
        status = poll(lambda: self.request("GET", "/version", ("sighup2", "pw2"))[0] == 200)
        self.assertTrue(status, "the new user was not accepted after SIGHUP")
        self.assertEqual(self.request("GET", "/version", ("sighup1", "pw1"))[0], 401)
        self.assertTrue(daemons.pid_alive(pid))

    def test_users_file_replacement_is_picked_up(self):
        tmp = self.paths.rapi_users + ".tmp"
        ha1 = crypto.rapi_ha1("hashed", "hashedpw")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.original_users + f"hashed {{HA1}}{ha1} write\n")
        os.rename(tmp, self.paths.rapi_users)
        self.assertTrue(poll(lambda: self.request("GET", "/version",
                                                  ("hashed", "hashedpw"))[0] == 200))

    def test_access_log(self):
        self.request("GET", "/2/features?x=1", self.admin)
        log = os.path.join(self.paths.log_dir, constants.RAPI_ACCESS_LOG)

        def logged():
            try:
                with open(log, encoding="utf-8") as f:
                    return [line for line in f if "/2/features?x=1" in line]
            except OSError:
                return []

        [line] = poll(logged)
        self.assertRegex(line, r'^127\.0\.0\.1 - gnt-admin \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d '
                               r'\+0000\] "GET /2/features\?x=1 HTTP/1\.1" 400 \d+\n$')

    def test_no_ssl_serves_plain_http(self):
        port = free_port(self.ip)
        tmp = tempfile.mkdtemp(prefix="rapi-nossl-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out_path = os.path.join(tmp, "out.log")
        env = dict(os.environ, **self.paths.env())
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                [os.path.join(BIN, "twistd"), "--pidfile", os.path.join(tmp, "pid"), "-n",
                 "ganeti-rapi", "--no-ssl", "-b", self.ip, "-p", str(port)],
                env=env, stdout=out, stderr=subprocess.STDOUT, cwd=tmp)
        self.addCleanup(self.stop_process, proc)

        def answers():
            try:
                return self.request("GET", "/version", port=port, tls=False)
            except OSError:
                return None

        answer = poll(answers)
        with open(out_path, encoding="utf-8", errors="replace") as f:
            output = f.read()
        self.assertEqual(answer and answer[::2], (200, 2), output)
        self.assertIn("WITHOUT TLS (--no-ssl)", output)
        status, _, _ = self.request("PUT", "/2/tags?tag=x", port=port, tls=False)
        self.assertEqual(status, 401)

    @staticmethod
    def stop_process(proc):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def test_refuses_to_start_off_the_master(self):
        tmp = tempfile.mkdtemp(prefix="rapi-notmaster-")
        self.addCleanup(shutil.rmtree, tmp, True)
        paths = Paths.for_node(os.path.join(tmp, "node9.vcluster.test"), "node9.vcluster.test")
        os.makedirs(paths.data_dir)
        with open(paths.ssconf_file("master_node"), "w") as f:
            f.write(self.cluster.master + "\n")
        proc = subprocess.run([os.path.join(BIN, "twistd"), "--pidfile=", "-n", "ganeti-rapi",
                               "-b", "127.0.0.1", "-p", "0"],
                              env=dict(os.environ, **paths.env()), cwd=tmp,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("ganeti-rapi: cannot start: this node (node9.vcluster.test) is not the "
                      "master node; ganeti-rapi runs on the master, node1.vcluster.test",
                      proc.stdout + proc.stderr)

    def test_debian_rapi_client(self):
        if not os.path.exists("/usr/lib/python3/dist-packages/ganeti/rapi/client.py"):
            self.skipTest("Debian's python3-ganeti-rapi is not installed")
        user, password = self.admin
        script = (
            "import json, sys\n"
            "from ganeti.rapi import client\n"
            "ip, user, password = sys.argv[1:]\n"
            "c = client.GanetiRapiClient(ip, username=user, password=password)\n"
            "out = {'version': c.GetVersion(), 'master': c.GetInfo()['master'],\n"
            "       'features': sorted(c.GetFeatures())}\n"
            "bad = client.GanetiRapiClient(ip, username=user, password='wrong')\n"
            "try:\n"
            "    bad.AddClusterTags(['x'])\n"
            "except client.GanetiApiError as err:\n"
            "    out['error'] = [err.code, str(err)]\n"
            "print(json.dumps(out))\n")
        proc = subprocess.run([DEBIAN_PYTHON, "-I", "-c", script, self.ip, user, password],
                              capture_output=True, text=True, timeout=60, cwd="/")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        self.assertEqual((out["version"], out["master"]), (2, self.cluster.master))
        self.assertIn("instance-create-reqv1", out["features"])
        self.assertEqual(out["error"][0], 401)
        self.assertIn("401 Authentication failed", out["error"][1])

    def test_zz_masterd_restart(self):
        """Without masterd RAPI answers 502; after masterd is back it answers again."""
        self.assertEqual(self.request("GET", "/2/info")[0], 200)
        self.assertTrue(daemons.stop(self.paths, constants.MASTERD))
        try:
            status, _, body = self.request("GET", "/2/info")
            self.assertEqual(status, 502, body)
            self.assertIn("master daemon", body["message"])
        finally:
            self.cluster.start()
        self.assertTrue(poll(lambda: self.request("GET", "/2/info")[0] == 200))
