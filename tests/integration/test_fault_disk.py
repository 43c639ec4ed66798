"""Fault test: the job queue's filesystem fills up under a SubmitManyJobs load, then frees.

The queue directory of a real ganeti-masterd is a small tmpfs (root needed to
mount it).  A client submits batches of OP_TEST_DELAY jobs without pause while
another watches every acknowledged job; the filesystem is filled with a file
until writes fail, kept full for a while, then freed.  What must hold (issue
13): no acknowledged job is lost, every acknowledged job reaches a final state
(without a restart, or after one that happened while the disk was full), and
no final state that was reported is later taken back.  Meanwhile new jobs are
refused with a clear JobQueueError.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from ganeti.core import errors
from ganeti.luxi.client import LuxiClient
from tests.integration.clustercase import ClusterCase
from tests.integration.jobtools import FINAL, delay, wait_for_jobs
from tests.integration.test_masterd_crash import wait_until_reaped

TMPFS_SIZE = "24m"
BATCH = 20


def mount_tmpfs(directory: str) -> None:
    """Put ``directory`` (its current content kept) on a tmpfs of TMPFS_SIZE."""
    keep = tempfile.mkdtemp(prefix="ganeti-queue-copy-")
    shutil.copytree(directory, keep, dirs_exist_ok=True, symlinks=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs",
                    directory], check=True, capture_output=True)
    shutil.copytree(keep, directory, dirs_exist_ok=True, symlinks=True)
    shutil.rmtree(keep)


def fill(directory: str) -> str:
    """Write a file in ``directory`` until the filesystem is full; returns its path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 4096, 1):
            block = b"\0" * chunk
            while True:
                try:
                    if f.write(block) < chunk:
                        break
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break
    return path


class Load(threading.Thread):
    """Submits batches of short jobs without pause; records what was acknowledged."""

    def __init__(self, socket_path: str) -> None:
        super().__init__(daemon=True)
        self.socket_path = socket_path
        self.acked: list[int] = []
        self.refusals: list[str] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        client = LuxiClient(self.socket_path, timeout=30, connect_timeout=5)
        try:
            while not self.stop.is_set():
                batch = [[delay(0.02)] for _ in range(BATCH)]
                try:
                    answer = client.call("SubmitManyJobs", batch)
                except errors.JobQueueError as err:
                    self.refusals.append(str(err))  # and submits again at once
                    continue
                self.acked.extend(value for ok, value in answer if ok)
                self.refusals.extend(value for ok, value in answer if not ok)
        except (errors.ProtocolError, OSError) as err:  # the daemon went away
            self.error = err
        finally:
            client.close()


class Watcher(threading.Thread):
    """Polls the acknowledged jobs and remembers every final state it was shown."""

    def __init__(self, socket_path: str, load: Load) -> None:
        super().__init__(daemon=True)
        self.socket_path = socket_path
        self.load = load
        self.reported: dict[int, str] = {}
        self.taken_back: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        client = LuxiClient(self.socket_path, timeout=30, connect_timeout=5)
        try:
            while not self.stop.is_set():
                ids = [j for j in list(self.load.acked) if j not in self.reported]
                if not ids:
                    time.sleep(0.01)
                    continue
                for chunk in range(0, len(ids), 500):
                    part = ids[chunk:chunk + 500]
                    rows = client.call("QueryJobs", part, ["id", "status"])
                    for jid, row in zip(part, rows, strict=True):
                        if row is None:
                            self.taken_back.append(f"job {jid} acknowledged but unknown")
                        elif row[1] in FINAL:
                            self.reported[jid] = row[1]
        except (errors.ProtocolError, OSError):
            pass
        finally:
            client.close()


def _not_root() -> str | None:
    if os.geteuid() != 0:
        return "mounting a small tmpfs for the job queue needs root"
    return None


class DiskFullTest(ClusterCase):
    """A real masterd whose job queue lives on a small tmpfs."""

    CLUSTER = False  # a fresh one per test
    REQUIRES = (_not_root,)

    def setUp(self) -> None:
        self.cluster = self.new_cluster(start=False, prefix="ganeti-diskfull-")
        mount_tmpfs(self.cluster.queue_dir)
        self.addCleanup(self._unmount)
        self.cluster.start()
        self.addCleanup(self.cluster.stop)

    def _unmount(self) -> None:
        subprocess.run(["umount", "-l", self.cluster.queue_dir], check=False,
                       capture_output=True)

    def start_load(self) -> tuple[Load, Watcher]:
        load = Load(self.cluster.socket)
        watcher = Watcher(self.cluster.socket, load)
        load.start()
        watcher.start()
        self.addCleanup(self._stop_threads, load, watcher)
        self._wait(lambda: len(load.acked) >= 200, "200 jobs acknowledged before the fill")
        return load, watcher

    @staticmethod
    def _stop_threads(*threads: threading.Thread) -> None:
        for thread in threads:
            thread.stop.set()  # type: ignore[attr-defined]
        for thread in threads:
            thread.join(30)

    def _wait(self, check, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting: {what}\n{self.cluster.log_tail()}")
            time.sleep(0.02)

    def fill_and_wait_for_refusals(self, load: Load) -> str:
        filler = fill(self.cluster.queue_dir)
        before = len(load.refusals)
        # a while of full disk under load: many submissions refused
        self._wait(lambda: len(load.refusals) > before + 50, "refusals while the disk is full")
        return filler

    def test_fill_then_free_without_restart(self) -> None:
        load, watcher = self.start_load()
        filler = self.fill_and_wait_for_refusals(load)
        acked_when_full = len(load.acked)
        os.unlink(filler)
        self._wait(lambda: len(load.acked) > acked_when_full + 100,
                   "new jobs accepted again once space returned")
        self._stop_threads(load)
        self.assertIsNone(load.error)
        self.assertTrue(any("cannot store new jobs" in r or "Could not store" in r
                            for r in load.refusals), load.refusals[:3])
        self.assertTrue(all("No space left on device" in r for r in load.refusals),
                        load.refusals[:3])
        with self.cluster.client() as client:
            final = wait_for_jobs(client, load.acked, timeout=120)
        self._stop_threads(watcher)
        self.assertEqual(len(final), len(load.acked))  # 0 acknowledged jobs lost
        self.assertEqual(set(final.values()), {"success"})
        self.assertEqual(watcher.taken_back, [])
        changed = {j: (s, final[j]) for j, s in watcher.reported.items() if final[j] != s}
        self.assertEqual(changed, {})
        with open(self.cluster.log_file, encoding="utf-8") as f:
            log = f.read()
        self.assertIn("No space left on device", log)
        self.assertIn("writes work again", log)
        self.assertNotIn("corrupt", os.listdir(self.cluster.queue_dir))

    def test_fill_kill_free_restart(self) -> None:
        load, watcher = self.start_load()
        self.fill_and_wait_for_refusals(load)
        watcher.stop.set()
        watcher.join(30)
        reported = dict(watcher.reported)
        acked = list(load.acked)
        pid = self.cluster.pid()
        os.kill(pid, signal.SIGKILL)
        self._stop_threads(load)
        acked = list(load.acked)  # what it had when the daemon went away
        wait_until_reaped(pid)
        os.unlink(os.path.join(self.cluster.queue_dir, "filler"))
        self.cluster.start()
        with LuxiClient(self.cluster.socket, timeout=60) as client:
            final = wait_for_jobs(client, acked, timeout=120)
            rows = client.call("QueryJobs", acked, ["id", "status", "opresult"])
        self.assertEqual(len(final), len(acked))  # 0 acknowledged jobs lost
        changed = {j: (s, final[j]) for j, s in reported.items() if final[j] != s}
        self.assertEqual(changed, {})  # nothing reported was taken back
        for jid, status, result in rows:
            if status != "success":  # running at the kill: ended by the restart
                self.assertEqual(status, "error", (jid, result))
                self.assertNotIn(jid, reported)
                self.assertIn("master daemon stopped", str(result))
        corrupt = os.path.join(self.cluster.queue_dir, "corrupt")
        self.assertFalse(os.path.exists(corrupt) and os.listdir(corrupt))
