"""The job store on a failing disk: short writes, ENOSPC, failed syncs, rollback, retries.

A :class:`Disk` stands in for the journal's ``write``/``fdatasync`` and for
the job files' writer: it takes bytes until its free space is used up,
writing short counts as a nearly full filesystem does, then raises ENOSPC.
"""

import errno
import json
import os

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import fileutil
from ganeti.master.jobs import jobstore
from ganeti.master.jobs.jobstore import JobStore, JobStoreError
from tests.fakes.configs import node_paths
from tests.master.test_jobstore import ControlledRunner, job

REAL_ATOMIC_WRITE = fileutil.atomic_write


class Disk:
    """A filesystem with ``free`` bytes left (None: unlimited)."""

    def __init__(self):
        self.free = None
        self.sync_error = None
        self.writes = []  # the counts each write returned

    def write(self, fd, data):
        data = bytes(data)
        if self.free is None:
            count = os.write(fd, data)
        elif self.free <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        else:
            count = os.write(fd, data[:self.free])  # short, without an error
            self.free -= count
        self.writes.append(count)
        return count

    def fdatasync(self, fd):
        if self.sync_error is not None:
            raise OSError(self.sync_error, os.strerror(self.sync_error))
        os.fdatasync(fd)

    def atomic_write(self, path, data, mode=0o600, durable=True):
        if self.free is not None and self.free < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        REAL_ATOMIC_WRITE(path, data, mode, durable)


class FaultTestCase(SynchronousTestCase):
    checkpoint_bytes = jobstore.DEFAULT_CHECKPOINT_BYTES

    def setUp(self):
        self.paths = node_paths(self.mktemp())
        self.runner = ControlledRunner()
        self.clock = Clock()
        self.disk = Disk()
        self.patch(fileutil, "atomic_write", self.disk.atomic_write)
        self.store = self.new_store()

    def new_store(self):
        store = JobStore(self.paths, self.runner, self.clock, durable=True,
                         checkpoint_bytes=self.checkpoint_bytes)
        self.recovered = store.recover()
        store._os_write = self.disk.write
        store._os_fdatasync = self.disk.fdatasync
        self.addCleanup(store.close)
        return store

    def restart(self):
        self.store.close()
        self.disk.free = None
        self.store = self.new_store()
        return self.recovered

    def settle(self, seconds=5.0, step=0.05):
        """Run the thread work and let retry timers fire, for ``seconds`` of fake time."""
        self.runner.run_all()
        for _ in range(int(seconds / step)):
            self.clock.advance(step)
            self.runner.run_all()

    def journal_path(self):
        return os.path.join(self.paths.queue_dir, f"journal.{self.store._generation}")

    def journal_size(self):
        return os.path.getsize(self.journal_path())


class ShortWriteTest(FaultTestCase):
    def test_short_writes_are_continued(self):
        counts = []

        def dribble(fd, data):  # a write that takes at most 7 bytes at a time
            count = os.write(fd, bytes(data[:7]))
            counts.append(count)
            return count

        self.store._os_write = dribble
        ids = self.store.allocate_ids(2)
        d = self.store.save_new([(i, job(i)) for i in ids])
        self.runner.run_all()
        self.successResultOf(d)
        self.assertGreater(len(counts), 10)
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), ids)
        self.assertEqual(rec.problems, [])

    def test_a_write_that_cannot_finish_leaves_no_trace(self):
        (first,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(first))
        committed = self.journal_size()
        self.disk.free = 100  # the next batch is far bigger: short write, then ENOSPC
        ids = self.store.allocate_ids(5)
        d = self.store.save_new([(i, job(i)) for i in ids])
        self.runner.run_all()
        err = self.failureResultOf(d, JobStoreError)
        self.assertIn("No space left on device", str(err.value))
        self.assertEqual(self.disk.writes[-1], 100)  # it was a short write first
        self.assertEqual(self.journal_size(), committed)  # cut back to the last commit
        self.flushLoggedErrors()
        # space comes back: the next batch lands on a clean line
        self.disk.free = None
        (later,) = self.store.allocate_ids(1)
        d = self.store.save_new([(later, job(later))])
        self.settle(0.2)  # after the pause between attempts
        self.successResultOf(d)
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [first, later])
        self.assertEqual(rec.problems, [])

    def test_failed_sync_is_rolled_back(self):
        (jid,) = self.store.allocate_ids(1)
        committed = self.journal_size()
        self.disk.sync_error = errno.EIO
        d = self._save_new(jid)
        self.failureResultOf(d, JobStoreError)
        self.assertEqual(self.journal_size(), committed)
        self.disk.sync_error = None
        rec = self.restart()
        self.assertEqual(rec.jobs, {})
        self.assertEqual(rec.problems, [])

    def test_failed_rollback_is_done_before_the_next_write(self):
        (jid,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(jid))
        committed = self.journal_size()
        real_truncate = os.ftruncate
        calls = []

        def refuse_once(fd, size):
            calls.append(size)
            if len(calls) == 1:
                raise OSError(errno.EIO, "Input/output error")
            real_truncate(fd, size)

        self.patch(os, "ftruncate", refuse_once)
        self.disk.free = 10
        (other,) = self.store.allocate_ids(1)
        self.failureResultOf(self._save_new(other), JobStoreError)
        self.assertGreater(self.journal_size(), committed)  # the torn bytes are still there
        self.disk.free = None
        self.store.save(jid, job(jid, "success"))
        self.settle(0.2)
        self.assertEqual(calls, [committed, committed])
        rec = self.restart()
        self.assertEqual(rec.jobs[jid]["ops"][0]["status"], "success")
        self.assertEqual(rec.problems, [])
        self.flushLoggedErrors()

    def _save_new(self, jid):
        d = self.store.save_new([(jid, job(jid))])
        self.runner.run_all()
        return d


class RetryTest(FaultTestCase):
    def test_states_of_existing_jobs_wait_for_space_and_are_kept(self):
        (jid,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(jid))
        self.disk.free = 0
        running = self.store.save(jid, job(jid, "running"))
        done = self.store.save(jid, job(jid, "success"))
        self.settle(3)
        self.assertNoResult(running)
        self.assertNoResult(done)
        failure = self.store.failure
        self.assertIsNotNone(failure)
        self.assertIn("No space left on device", failure.describe())
        self.assertGreater(failure.attempts, 3)
        self.disk.free = None
        self.settle(2)
        self.successResultOf(running)
        self.successResultOf(done)
        self.assertIsNone(self.store.failure)
        self.assertIsNotNone(self.store.last_failure.until)
        rec = self.restart()
        self.assertEqual(rec.jobs[jid]["ops"][0]["status"], "success")
        self.flushLoggedErrors()

    def test_a_failed_batch_refuses_new_jobs_and_keeps_the_rest(self):
        (old,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(old))
        self.disk.free = 0
        (new,) = self.store.allocate_ids(1)
        state = self.store.save(old, job(old, "success"))
        fresh = self.store.save_new([(new, job(new))])
        self.settle(0.2)  # the first batch fails, then the retry with the new job in it
        self.failureResultOf(fresh, JobStoreError)
        self.assertNoResult(state)
        self.disk.free = None
        self.settle(1)
        self.successResultOf(state)
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [old])  # the refused job never existed
        self.assertEqual(rec.jobs[old]["ops"][0]["status"], "success")

    def test_retries_back_off(self):
        (jid,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(jid))
        self.disk.free = 0
        self.store.save(jid, job(jid, "success"))
        self.settle(10)
        # 0.05, 0.1, 0.2, 0.4, 0.8, then every second: about 15 attempts in 10 s
        self.assertLess(self.store.failure.attempts, 20)
        self.assertGreater(self.store.failure.attempts, 8)
        self.disk.free = None
        self.settle(2)
        self.flushLoggedErrors()

    def test_job_files_wait_for_space_and_journals_stay_until_they_are_written(self):
        (jid,) = self.store.allocate_ids(1)
        self.successResultOf(self._save_new(jid))
        self.settle(0.1)
        self.store._checkpoint_bytes = 1  # the next batch closes the generation
        old_journal = self.journal_path()
        self.disk.free = 10**6
        self.patch(self.disk, "atomic_write", self._refuse_files)
        self.patch(fileutil, "atomic_write", self._refuse_files)
        self.store.save(jid, job(jid, "success"))
        self.settle(3)
        self.assertTrue(os.path.exists(old_journal))  # no checkpoint without the files
        self.assertEqual(self.job_status(jid), "queued")
        self.assertIn("writing job files failed", self.store.failure.describe())
        self.patch(fileutil, "atomic_write", REAL_ATOMIC_WRITE)
        self.settle(2)
        self.assertFalse(os.path.exists(old_journal))
        self.assertEqual(self.job_status(jid), "success")
        self.assertIsNone(self.store.failure)
        self.flushLoggedErrors()

    @staticmethod
    def _refuse_files(path, data, mode=0o600, durable=True):
        raise OSError(errno.ENOSPC, "No space left on device")

    def job_status(self, jid):
        with open(os.path.join(self.paths.queue_dir, f"job-{jid}")) as f:
            return json.load(f)["ops"][0]["status"]

    def _save_new(self, jid):
        d = self.store.save_new([(jid, job(jid))])
        self.runner.run_all()
        return d


class RotationFailureTest(FaultTestCase):
    checkpoint_bytes = 1

    def test_a_journal_that_cannot_rotate_keeps_the_committed_batch(self):
        real_open = self.store._open_journal

        def refuse():
            raise OSError(errno.ENOSPC, "No space left on device")

        self.store._open_journal = refuse
        (jid,) = self.store.allocate_ids(1)
        d = self.store.save_new([(jid, job(jid))])
        self.runner.run_all()
        self.successResultOf(d)  # durable: rotation is not part of the commit
        self.store._open_journal = real_open
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [jid])
        self.flushLoggedErrors()


class SalvageTest(FaultTestCase):
    def test_record_appended_to_a_torn_line_is_recovered_and_the_journal_kept(self):
        # The shape an unchecked short write left behind: a torn record, then the
        # next batch's record on the same line.
        (a, b, c) = self.store.allocate_ids(3)
        self.successResultOf(self._save(a))
        torn = json.dumps({"t": "job", "id": b, "data": job(b)})[:25]
        whole = json.dumps({"t": "job", "id": c, "data": job(c, "success")})
        with open(self.journal_path(), "ab") as f:
            f.write(torn.encode() + whole.encode() + b"\n")
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [a, c])
        self.assertEqual(rec.jobs[c]["ops"][0]["status"], "success")
        self.assertEqual(len(rec.problems), 1)
        self.assertIn("record after it recovered", rec.problems[0])
        kept = os.listdir(os.path.join(self.paths.queue_dir, "corrupt"))
        self.assertEqual([n for n in kept if n.startswith("journal.")], ["journal.1"])
        self.flushLoggedErrors()

    def _save(self, jid):
        d = self.store.save_new([(jid, job(jid))])
        self.runner.run_all()
        return d
