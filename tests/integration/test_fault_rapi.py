"""Hostile RAPI clients against a real ganeti-rapi and masterd on a virtual cluster.

- 1,000 idle TCP connections from one address: a normal client from another
  address is served in < 2 s; the daemon keeps at most its per-address share of
  them and closes the rest after the request deadline;
- 20 parallel ``GET /2/jobs?bulk=N`` (N = 1..20), repeated for a few seconds, on a
  queue of 3,000 jobs: a normal client is served in < 2 s meanwhile, and neither
  ganeti-rapi nor masterd grows by 64 MiB;
- 200 parallel wrong-password attempts from one address: the number answered 401
  (credentials checked) is bounded by the throttle's cap, the rest get 429;
- a deeply nested JSON body gets 400 with Ganeti's error body.

Clients bind distinct loopback source addresses (the cluster's own 127.0.x. range),
so that the hostile one and the normal one are different addresses to the daemon.
"""

import base64
import http.client
import json
import os
import socket
import threading
import time

from ganeti.cli import rapicall
from ganeti.core import constants
from ganeti.core.paths import Paths
from ganeti.rapi import limits
from ganeti.rapi.auth import LoginThrottle
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import rss
from tests.integration.jobtools import delay, wait_for_jobs

PORT = constants.DEFAULT_RAPI_PORT
CLUSTER = "cluster.vcluster.test"
MIB = 1024 * 1024
JOBS = 3000
#: What the acceptance allows: a normal client's answer time, growth of each daemon.
SERVED_WITHIN = 2.0
MAX_GROWTH = 64 * MIB


def read_pid(path):
    with open(path, encoding="ascii") as f:
        return int(f.read().strip())


class Client:
    """HTTPS requests from one loopback source address, verified against rapi.pem."""

    def __init__(self, testcase, source, credentials=None):
        self.tc = testcase
        self.source = source
        self.credentials = credentials

    def connect(self, timeout=10.0):
        sock = socket.create_connection((self.tc.ip, PORT), timeout=timeout,
                                        source_address=(self.source, 0))
        try:
            return self.tc.context.wrap_socket(sock, server_hostname=CLUSTER)
        except BaseException:
            sock.close()
            raise

    def request(self, method, path, body=None, credentials=None, timeout=10.0):
        """(status, decoded body, seconds) of one request on a new connection."""
        start = time.monotonic()
        sock = self.connect(timeout)
        conn = http.client.HTTPConnection(self.tc.ip, PORT, timeout=timeout)
        conn.sock = sock
        headers = {}
        credentials = credentials or self.credentials
        if credentials:
            token = base64.b64encode(":".join(credentials).encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            value = json.loads(raw) if raw else None
            return response.status, value, time.monotonic() - start
        finally:
            conn.close()


def closed_by_peer(sock):
    """Whether the server has closed (or reset) a connection we never wrote to."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class RapiFaultTest(ClusterCase):
    """One virtual cluster (noded, masterd, ganeti-rapi) for the three hostile cases."""

    PREFIX = "ganeti-fault-rapi-"

    @classmethod
    def setUpCluster(cls):
        cls.ip = cls.cluster.ips[0]
        cls.paths = Paths.for_node(cls.cluster.root, cls.cluster.master)
        cls.context = rapicall.tls_context(cls.paths.rapi_pem)
        cls.admin = rapicall.read_credentials(os.path.join(cls.cluster.dir, "rapi-credentials"))
        cls.rapi_pid = read_pid(cls.paths.pid_file(constants.RAPI))
        cls.masterd_pid = cls.cluster.pid()
        base = cls.cluster.ip_base
        cls.normal = Client(cls, f"{base}201", cls.admin)

    def hostile(self, host):
        return Client(self, f"{self.cluster.ip_base}{host}")

    def test_idle_connections_do_not_lock_others_out(self):
        attacker = f"{self.cluster.ip_base}210"
        opened, refused = [], 0
        start = time.monotonic()
        for _ in range(1000):
            try:
                opened.append(socket.create_connection((self.ip, PORT), timeout=5,
                                                       source_address=(attacker, 0)))
            except OSError:
                refused += 1
        self.addCleanup(lambda: [s.close() for s in opened])
        took = time.monotonic() - start
        status, info, elapsed = self.normal.request("GET", "/2/info")
        self.assertEqual(status, 200, info)
        self.assertEqual(info["name"], CLUSTER)
        self.assertLess(elapsed, SERVED_WITHIN)
        # the daemon keeps the attacker's share and drops the rest at once
        time.sleep(0.5)
        alive = [s for s in opened if not closed_by_peer(s)]
        self.assertLessEqual(len(alive), limits.DEFAULT_PER_ADDRESS)
        # ... and closes the share it kept once the request deadline has passed
        deadline = start + 10.0 + 3.0
        while alive and time.monotonic() < deadline:
            time.sleep(0.25)
            alive = [s for s in alive if not closed_by_peer(s)]
        self.assertEqual(alive, [])
        status, _, elapsed_after = self.normal.request("GET", "/2/info")
        self.assertEqual(status, 200)
        print(f"\nidle: 1000 connects in {took:.2f}s ({refused} refused by the kernel); "
              f"normal client served in {elapsed:.3f}s; kept {len(opened) - refused} "
              f"opened, at most {limits.DEFAULT_PER_ADDRESS} held, all closed within "
              f"{time.monotonic() - start:.1f}s")

    def submit_jobs(self):
        start = time.monotonic()
        ids = []
        with self.cluster.client(timeout=120) as client:
            for _ in range(JOBS // 500):
                answer = client.call("SubmitManyJobs", [[delay(0.01)] for _ in range(500)])
                ids += [job_id for ok, job_id in answer if ok]
            self.assertEqual(len(ids), JOBS)
            statuses = wait_for_jobs(client, ids, timeout=120)
        self.assertEqual(set(statuses.values()), {"success"})
        return time.monotonic() - start

    def test_bulk_queries_do_not_starve_others_nor_grow_the_daemons(self):
        submit_s = self.submit_jobs()
        rss0 = {"rapi": rss(self.rapi_pid), "masterd": rss(self.masterd_pid)}
        peak = dict(rss0)
        attacker = self.hostile(220)
        stop = time.monotonic() + 6.0
        results = []
        lock = threading.Lock()

        def attack(n):
            while time.monotonic() < stop:
                try:
                    status, body, took = attacker.request("GET", f"/2/jobs?bulk={n}",
                                                          timeout=30)
                except OSError as err:
                    status, body, took = type(err).__name__, None, 0.0
                with lock:
                    results.append((status, len(body) if isinstance(body, list) else None,
                                    took))

        threads = [threading.Thread(target=attack, args=(n,)) for n in range(1, 21)]
        for thread in threads:
            thread.start()
        normal = []
        while time.monotonic() < stop:
            status, info, elapsed = self.normal.request("GET", "/2/info", timeout=30)
            self.assertEqual(status, 200, info)
            normal.append(elapsed)
            peak["rapi"] = max(peak["rapi"], rss(self.rapi_pid))
            peak["masterd"] = max(peak["masterd"], rss(self.masterd_pid))
            time.sleep(0.1)
        status, jobs, own_bulk = self.normal.request("GET", "/2/jobs?bulk=1", timeout=30)
        for thread in threads:
            thread.join(60)
        for name in peak:
            peak[name] = max(peak[name], rss(self.rapi_pid if name == "rapi"
                                                else self.masterd_pid))
        self.assertEqual((status, len(jobs)), (200, JOBS))
        self.assertLess(max(normal), SERVED_WITHIN)
        ok = [r for r in results if r[0] == 200]
        self.assertTrue(ok)
        self.assertEqual({r[1] for r in ok}, {JOBS})
        self.assertLessEqual({r[0] for r in results}, {200, 429})
        growth = {name: peak[name] - rss0[name] for name in peak}
        for name, grown in growth.items():
            self.assertLess(grown, MAX_GROWTH, name)
        print(f"\nbulk: {JOBS} jobs submitted and run in {submit_s:.1f}s; 20 clients, "
              f"{len(results)} requests in 6 s: {len(ok)} x 200, "
              f"{sum(1 for r in results if r[0] == 429)} x 429; normal /2/info max "
              f"{max(normal):.3f}s of {len(normal)}, own bulk {own_bulk:.3f}s; RSS growth "
              f"rapi {growth['rapi'] / MIB:.1f} MiB, masterd {growth['masterd'] / MIB:.1f} MiB")

    def test_parallel_password_guesses_are_capped(self):
        attacker = self.hostile(230)
        throttle = LoginThrottle(clock=None)  # the daemon's defaults
        barrier = threading.Barrier(200)
        statuses = []
        lock = threading.Lock()

        def guess(index):
            barrier.wait()
            give_up = time.monotonic() + 30
            while True:
                try:
                    status, _, _ = attacker.request(
                        "GET", "/2/info", credentials=("gnt-admin", f"guess{index}"))
                    break
                except OSError:  # over the address's connection share: try again
                    if time.monotonic() > give_up:
                        status = "gave up"
                        break
                    time.sleep(0.05)
            with lock:
                statuses.append(status)

        start = time.monotonic()
        threads = [threading.Thread(target=guess, args=(i,)) for i in range(200)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        window = time.monotonic() - start
        checked = statuses.count(401)
        self.assertEqual(checked + statuses.count(429), 200, statuses)
        # threshold answered at once, then at most max_in_flight per base delay
        bound = throttle.threshold + throttle.max_in_flight * (
            int(window / throttle.base_delay) + 1)
        self.assertLessEqual(checked, bound)
        self.assertGreater(statuses.count(429), 0)
        # the right password from another address is not affected
        status, _, elapsed = self.normal.request("GET", "/2/info")
        self.assertEqual(status, 200)
        print(f"\nlogin: 200 parallel wrong passwords in {window:.2f}s: {checked} x 401 "
              f"(bound {bound}), {statuses.count(429)} x 429; another address served in "
              f"{elapsed:.3f}s")

    def test_deeply_nested_body_gets_ganeti_error_body(self):
        body = b"[" * 50_000 + b"]" * 50_000
        status, error, _ = self.normal.request("PUT", "/2/query/job", body=body)
        self.assertEqual(status, 400, error)
        self.assertEqual(sorted(error), ["code", "explain", "message"])
        self.assertIn("nested more than 100 levels", error["message"])
        status, _, _ = self.normal.request("GET", "/version")
        self.assertEqual(status, 200)
