"""The real side from a transcript: what real Ganeti answered, kept between runs.

The real cluster is the slowest part of the oracle (its daemons and Debian's
clients take most of the oracle's CPU and four fifths of its time), and what it
answers does not change while nothing it depends on changes.  So a live run can
write a *transcript* (``ORACLE_RECORD=1``: ``transcript.json.gz`` beside this
file): every case's normalised results on the real side, and every exchange the
runner had with the real side to keep the job ids aligned (its newest job id,
the padding jobs it was given, the archivings), in order.

A run whose key (:func:`key`) is the transcript's replays it instead of starting
the real cluster: our side runs every case live, as always, and is compared with
the real side's recorded results.  The key covers everything the real side's
answers depend on: the oracle's own code and cases, the real-cluster scripts,
the versions of Debian's Ganeti packages, and the host facts that show in them
(CPU count, the size of the file system, the kernel).  The alignment exchanges
depend on our side too (a case where ours made more jobs pads the real side):
each one is checked against the transcript as it happens, and the first that
differs (:class:`Diverged`) makes the oracle start over with both sides live.
``ORACLE_LIVE=1`` always runs live.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import subprocess
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
TRANSCRIPT = os.path.join(HERE, "transcript.json.gz")
# The oracle's files whose content shapes what the real side is asked and how its
# answers are normalised (test_oracle.py, expected.py, recorded.py and record.py only
# judge the differences).
KEYED_FILES = ("cases.py", "cases_cluster.py", "cases_group.py", "cases_instance.py",
               "cases_jobs.py", "cases_node.py", "cases_rapi.py", "model.py", "normalise.py",
               "runner.py", "sides.py", "forkserver.py", "replay.py",
               os.path.join("realcluster", "real_cluster_up.sh"),
               os.path.join("realcluster", "real_cluster_down.sh"))
PACKAGES = ("ganeti", "ganeti-3.0", "ganeti-haskell-3.0", "ganeti-htools-3.0",
            "python3-ganeti-rapi")


class Diverged(Exception):
    """An exchange with the real side is not the transcript's next one."""


def key(tmp: str) -> str:
    """The transcript key of this checkout on this host (``tmp``: where the sides run)."""
    h = hashlib.sha256()
    for name in KEYED_FILES:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    versions = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n",
                               *PACKAGES], capture_output=True, text=True, check=False)
    h.update(versions.stdout.encode())
    st = os.statvfs(tmp)
    host = (os.cpu_count(), st.f_blocks * st.f_frsize >> 30, platform.release())
    h.update(repr(host).encode())
    return h.hexdigest()


# The checkout's directory shows in the clients' tracebacks (the fork server's file):
# the transcript holds this placeholder instead, the checkout of the run replaces it.
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PLACEHOLDER = "<checkout>"


def load(expected_key: str) -> dict | None:
    """The transcript if its key is ``expected_key``, else None."""
    try:
        with gzip.open(TRANSCRIPT, "rt", encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text.replace(PLACEHOLDER, json.dumps(CHECKOUT)[1:-1]))
    except (OSError, ValueError):
        return None
    return data if data.get("key") == expected_key else None


def save(data: dict) -> None:
    tmp = TRANSCRIPT + ".tmp"
    text = json.dumps(data, indent=0, sort_keys=True).replace(json.dumps(CHECKOUT)[1:-1],
                                                                PLACEHOLDER)
    # mtime=0: the same transcript gives the same bytes
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text.encode())
    os.replace(tmp, TRANSCRIPT)


class Recorder:
    """Wraps the live real side: passes every call through and notes the exchanges."""

    def __init__(self, side: Any, transcript_key: str) -> None:
        self.side = side
        self.data: dict[str, Any] = {"key": transcript_key, "exchanges": [], "cases": {}}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.side, name)

    def _note(self, op: str, args: list, result: Any) -> Any:
        self.data["exchanges"].append([op, args, result])
        return result

    def query_max_job(self) -> int:
        return self._note("query_max_job", [], self.side.query_max_job())

    def pad_jobs(self, target: int) -> int:
        return self._note("pad_jobs", [target], self.side.pad_jobs(target))

    def archive(self, first: int, last: int) -> None:
        self._note("archive", [first, last], self.side.archive(first, last))

    def archive_all(self) -> None:
        self._note("archive_all", [], self.side.archive_all())

    def case_done(self, case_id: str, results: list[dict]) -> None:
        self.data["cases"][case_id] = results


class ReplaySide:
    """The real side as the transcript has it (no cluster runs)."""

    name = "real"

    def __init__(self, data: dict) -> None:
        self.data = data
        self.next = 0

    def recorded_results(self, case_id: str) -> list[dict]:
        results = self.data["cases"].get(case_id)
        if results is None:
            raise Diverged(f"the transcript has no case {case_id}")
        return results

    def _exchange(self, op: str, args: list) -> Any:
        exchanges = self.data["exchanges"]
        if self.next >= len(exchanges):
            raise Diverged(f"{op}{tuple(args)} after the transcript's last exchange")
        want_op, want_args, result = exchanges[self.next]
        if (want_op, want_args) != (op, args):
            raise Diverged(f"exchange {self.next}: {op}{tuple(args)}, the transcript has "
                           f"{want_op}{tuple(want_args)}")
        self.next += 1
        return result

    def query_max_job(self) -> int:
        return self._exchange("query_max_job", [])

    def pad_jobs(self, target: int) -> int:
        return self._exchange("pad_jobs", [target])

    def archive(self, first: int, last: int) -> None:
        self._exchange("archive", [first, last])

    def archive_all(self) -> None:
        self._exchange("archive_all", [])

    def finished(self) -> None:
        """Every exchange of the transcript took place (else Diverged)."""
        if self.next != len(self.data["exchanges"]):
            raise Diverged(f"only {self.next} of the transcript's "
                           f"{len(self.data['exchanges'])} exchanges took place")

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass
