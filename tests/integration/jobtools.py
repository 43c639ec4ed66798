"""Helpers for the job-queue integration tests: opcodes, and waiting for jobs through
WaitForJobChange (never by sleeping).  The clusters themselves: clustercase.py."""

from __future__ import annotations

import time

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
