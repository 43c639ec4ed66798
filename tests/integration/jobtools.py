"""Helpers for the job-queue integration tests: a virtual cluster per test class, opcodes,
and waiting for jobs through WaitForJobChange (never by sleeping)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from ganeti.luxi.client import LuxiClient
from tests.integration.helpers import VCLUSTER, free_ip_base, node_env, release_ip_base, run

FINAL = frozenset({"success", "error", "canceled"})
NODE = "node1.vcluster.test"


def delay(duration, **params):
    """An OP_TEST_DELAY opcode in wire form."""
    op = {"OP_ID": "OP_TEST_DELAY", "duration": duration}
    op.update(params)
    return op


def wait_for_status(client, job_id, wanted, timeout=30.0, fields=("status",)):
    """Wait (WaitForJobChange, bounded) until the job's status is in ``wanted``.

    Returns the last field values (status first).  A job that ends in a status
    not wanted fails at once instead of timing out.
    """
    wanted = frozenset(wanted)
    fields = list(fields)
    deadline = time.monotonic() + timeout
    prev = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"job {job_id} did not reach {sorted(wanted)} within "
                                 f"{timeout}s (last seen: {prev})")
        answer = client.call("WaitForJobChange", job_id, fields, prev, None,
                             min(remaining, 10.0))
        if answer == "nochange":  # the legacy answer of older servers
            continue
        prev = answer[0]
        if prev[0] in wanted:
            return prev
        if prev[0] in FINAL:
            raise AssertionError(f"job {job_id} ended {prev[0]}, wanted {sorted(wanted)}")


def wait_for_job(client, job_id, timeout=30.0):
    """Wait until the job is finished; returns its final status."""
    return wait_for_status(client, job_id, FINAL, timeout)[0]


def wait_for_jobs(client, job_ids, timeout=60.0):
    """Wait until every job is finished; returns {id: status}.

    Asks QueryJobs for all of them, then blocks in WaitForJobChange on the
    first unfinished one; repeats until none is left or the deadline passes.
    """
    deadline = time.monotonic() + timeout
    pending = sorted(set(job_ids))
    result = {}
    while pending:
        rows = client.call("QueryJobs", pending, ["id", "status"])
        for jid, row in zip(pending, rows, strict=True):
            if row is None:
                raise AssertionError(f"job {jid} does not exist")
            if row[1] in FINAL:
                result[jid] = row[1]
        pending = [j for j in pending if j not in result]
        if not pending:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{len(pending)} jobs not finished within {timeout}s: "
                                 f"{pending[:20]}")
        status = [r[1] for r in rows if r is not None and r[0] == pending[0]]
        client.call("WaitForJobChange", pending[0], ["status"], status, None,
                    min(remaining, 5.0))
    return result


def poll_until(client, check, timeout=10.0):
    """Call ``check`` until it is true, with a cheap LUXI round trip between tries.

    For effects that follow a job change off the request path (the job files
    are written by the store's file loop); bounded by ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        client.call("QueryConfigValues", ["drain_flag"])
    return True


class VirtualCluster:
    """A virtual cluster in a temporary directory: ``nodes`` nodes (node 1 the master,
    the others added by ``ganeti-vcluster create``) on a random free ``--ip-base``
    unless one is given.  ``start`` runs every node's ganeti-noded and the master's
    ganeti-masterd."""

    def __init__(self, prefix="ganeti-jobs-", nodes=1, ip_base=None, domain="vcluster.test"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.dir = os.path.join(self.tmp, "vc")
        self.nodes = [f"node{k}.{domain}" for k in range(1, nodes + 1)]
        self.domain = domain
        self.ip_base = ip_base or free_ip_base(nodes)
        self.ips = [f"{self.ip_base}{k}" for k in range(1, nodes + 1)]
        self.master = self.nodes[0]
        self.env = node_env(self.dir, self.master)
        self.root = self.env["GANETI_ROOTDIR"]
        self.socket = os.path.join(self.root, "var/run/ganeti/socket/ganeti-query")
        self.queue_dir = os.path.join(self.root, "var/lib/ganeti/queue")
        self.pid_file = os.path.join(self.root, "var/run/ganeti/ganeti-masterd.pid")
        self.log_file = os.path.join(self.root, "var/log/ganeti/master-daemon.log")

    def node_root(self, node):
        """The root directory of a node (full name)."""
        return os.path.join(self.dir, node)

    def create(self, start=True):
        run([VCLUSTER, "create", self.dir, "--nodes", str(len(self.nodes)), "--ip-base",
             self.ip_base, "--domain", self.domain], timeout=300)
        if start:
            self.start()
        return self

    def start(self):
        return run([VCLUSTER, "start", self.dir], timeout=60)

    def stop(self):
        return run([VCLUSTER, "stop", self.dir], timeout=60)

    def destroy(self):
        if os.path.exists(os.path.join(self.dir, "vcluster.json")):
            run([VCLUSTER, "destroy", self.dir], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)
        release_ip_base(self.ip_base)

    def client(self, timeout=60.0):
        return LuxiClient(self.socket, timeout=timeout)

    def pid(self):
        with open(self.pid_file, encoding="ascii") as f:
            return int(f.read().strip())

    def log_tail(self, lines=40):
        try:
            with open(self.log_file, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"
