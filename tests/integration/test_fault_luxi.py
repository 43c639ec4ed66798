"""Fault test (issue 13, items 5, 6 and 9): hostile LUXI clients against a real masterd.

- a client pipelines 4 MiB of ``{}\\x03`` behind a pending call without reading, then
  closes;
- a client sends many requests with large answers (QueryJobs on every job) and never
  reads them;
- 400 clients connect at once (a listen backlog overflows: the client retries EAGAIN).

In the first two, masterd's RSS must grow by less than 64 MiB and a normal client
(QueryClusterInfo, a new connection each time, as the gnt-* tools do) must be answered in
less than 2 s, while the hostile client is connected and just after it leaves.  In the
third, every client must succeed.  Each test prints its figures (``-s`` shows them).
"""

import socket
import sys
import threading
import time

from ganeti.core import errors
from ganeti.luxi import wire
from ganeti.luxi.client import LuxiClient
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import rss
from tests.integration.jobtools import delay, wait_for_jobs, wait_for_status

RSS_GROWTH_LIMIT = 64 * 1024 * 1024
LATENCY_LIMIT = 2.0
JOBS = 300
JOB_FIELDS = ["id", "status", "ops", "opresult", "opstatus", "oplog", "summary",
              "received_ts", "start_ts", "end_ts", "priority"]


class RssSampler(threading.Thread):
    """Samples a process's RSS every 20 ms until stopped; keeps the largest value."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.baseline = rss(pid)
        self.peak = self.baseline
        self._halt = threading.Event()

    def run(self):
        while not self._halt.wait(0.02):
            self.peak = max(self.peak, rss(self.pid))

    def stop(self):
        self._halt.set()
        self.join()
        self.peak = max(self.peak, rss(self.pid))
        return self.peak - self.baseline


class Figures:
    """What one hostile phase did to masterd and to a normal client."""

    def __init__(self, name):
        self.name = name
        self.latencies = []
        self.sent = 0
        self.growth = 0

    def normal_call(self, socket_path):
        started = time.monotonic()
        with LuxiClient(socket_path, timeout=60) as client:
            info = client.query_cluster_info()
        self.latencies.append(time.monotonic() - started)
        return info

    def report(self):
        worst = max(self.latencies)
        line = (f"{self.name}: hostile client sent {self.sent / 2**20:.1f} MiB; masterd RSS "
                f"+{self.growth / 2**20:.1f} MiB; normal client {len(self.latencies)} calls, "
                f"slowest {worst:.3f} s")
        print(line, file=sys.stderr)
        return line


def send_some(sock, data, offset):
    """Send what the socket takes now (non-blocking); the new offset."""
    try:
        return offset + sock.send(data[offset:offset + 65536])
    except BlockingIOError:
        return offset


class LuxiFaultTest(ClusterCase):
    PREFIX = "ganeti-fault-luxi-"

    @classmethod
    def setUpCluster(cls):
        cls.socket = cls.cluster.socket
        with cls.cluster.client() as c:
            ids = [ok_id[1] for ok_id in c.call("SubmitManyJobs",
                                                [[delay(0.01)] for _ in range(JOBS)])]
            wait_for_jobs(c, ids, timeout=120)

    def setUp(self):
        self.pid = self.cluster.pid()

    def hostile(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.socket)
        self.addCleanup(sock.close)
        return sock

    def check(self, figures):
        line = figures.report()
        self.assertLess(figures.growth, RSS_GROWTH_LIMIT, line)
        self.assertLess(max(figures.latencies), LATENCY_LIMIT, line)
        # and masterd is still fine
        self.assertEqual(figures.normal_call(self.socket)["master"], self.cluster.master)

    def test_pipelined_flood_behind_a_pending_call_then_close(self):
        figures = Figures("4 MiB of {}\\x03 behind a pending call, then close")
        with self.cluster.client() as c:
            job = c.call("SubmitJob", [delay(6)])
            wait_for_status(c, job, {"running"})
        sampler = RssSampler(self.pid)
        sampler.start()
        sock = self.hostile()
        # a call that stays pending for 3 s, with the flood pipelined behind it
        sock.sendall(wire.encode_request("WaitForJobChange", [job, ["status"], ["running"],
                                                              None, 3]))
        sock.setblocking(False)
        flood = b"{}\x03" * (4 * 1024 * 1024 // 3)
        deadline = time.monotonic() + 2.0
        while figures.sent < len(flood) and time.monotonic() < deadline:
            figures.sent = send_some(sock, flood, figures.sent)
            figures.normal_call(self.socket)
        sock.close()
        # the pending call ends about now: what is queued behind it must not stall masterd
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            figures.normal_call(self.socket)
        figures.growth = sampler.stop()
        self.check(figures)

    def test_large_answers_never_read(self):
        figures = Figures(f"QueryJobs on {JOBS} jobs, answers never read")
        with self.cluster.client() as c:
            answer_size = len(wire.encode_response(True, c.call("QueryJobs", None, JOB_FIELDS)))
        sampler = RssSampler(self.pid)
        sampler.start()
        sock = self.hostile()
        sock.setblocking(False)
        requests = wire.encode_request("QueryJobs", [None, JOB_FIELDS]) * 5000
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            figures.sent = send_some(sock, requests, figures.sent)
            figures.normal_call(self.socket)
        figures.growth = sampler.stop()
        sock.close()
        figures.name += (f" ({answer_size / 1024:.0f} KiB each, "
                         f"{figures.sent // (len(requests) // 5000)} requests sent)")
        self.check(figures)

    def test_400_simultaneous_clients(self):
        count = 400
        barrier = threading.Barrier(count)
        failures = []
        answers = []

        def one():
            client = LuxiClient(self.socket, timeout=60)
            try:
                barrier.wait(timeout=60)
                answers.append(client.call("QueryConfigValues", ["master_node"]))
            except (errors.GenericError, OSError, threading.BrokenBarrierError) as err:
                failures.append(err)
            finally:
                client.close()

        threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        took = time.monotonic() - started
        print(f"{count} simultaneous LUXI clients: {len(answers)} answered, "
              f"{len(failures)} failed, {took:.2f} s", file=sys.stderr)
        self.assertEqual(failures, [])
        self.assertEqual(answers, [[self.cluster.master]] * count)

