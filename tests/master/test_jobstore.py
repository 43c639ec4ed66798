"""The journalled job store: durability, group commit, recovery, archive, checkpoints."""

import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.master.jobs.jobstore import JobStore, QueueLockedError
from tests.fakes.configs import node_paths


class ControlledRunner:
    """Runs blocking calls only when the test says so (stands in for the thread pool)."""

    def __init__(self):
        self.calls = []

    def __call__(self, fn, *args):
        d = defer.Deferred()
        self.calls.append((fn, args, d))
        return d

    def run_all(self):
        while self.calls:
            fn, args, d = self.calls.pop(0)
            try:
                result = fn(*args)
            except Exception as err:
                d.errback(err)
            else:
                d.callback(result)


def job(job_id, status="queued"):
    return {"id": job_id, "ops": [{"input": {"OP_ID": "OP_TEST_DELAY", "duration": 0},
                                   "status": status, "result": None, "log": [],
                                   "priority": 0}],
            "received_timestamp": [1, 0], "start_timestamp": None, "end_timestamp": None}


class JobStoreTestCase(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self.mktemp())
        self.runner = ControlledRunner()
        self.clock = Clock()
        self.store = self.new_store()

    def new_store(self, **kwargs):
        store = JobStore(self.paths, self.runner, self.clock, durable=False, **kwargs)
        self.recovered = store.recover()
        self.addCleanup(store.close)
        return store

    def restart(self, **kwargs):
        """A crash: no checkpoint, no flush of anything pending; then recovery."""
        self.store.close()
        self.store = self.new_store(**kwargs)
        return self.recovered

    def job_file(self, job_id):
        with open(os.path.join(self.paths.queue_dir, f"job-{job_id}")) as f:
            return json.load(f)

    def journals(self):
        return sorted(n for n in os.listdir(self.paths.queue_dir) if n.startswith("journal."))


class SaveTest(JobStoreTestCase):
    def test_save_is_acknowledged_after_the_write(self):
        (jid,) = self.store.allocate_ids(1)
        d = self.store.save(jid, job(jid))
        self.assertNoResult(d)
        self.assertFalse(os.path.exists(os.path.join(self.paths.queue_dir, f"job-{jid}")))
        self.runner.run_all()
        self.successResultOf(d)
        self.assertEqual(self.job_file(jid), job(jid))

    def test_group_commit(self):
        ids = self.store.allocate_ids(3)
        first = self.store.save(ids[0], job(ids[0]))
        rest = [self.store.save(i, job(i)) for i in ids[1:]]
        rest.append(self.store.save(ids[1], job(ids[1], "running")))
        self.runner.run_all()
        for d in [first, *rest]:
            self.successResultOf(d)
        self.assertEqual(self.store.commits, 2)  # the first batch, then everything queued
        self.assertEqual(self.job_file(ids[1])["ops"][0]["status"], "running")

    def test_write_failure_is_retried_and_the_store_goes_on(self):
        (jid,) = self.store.allocate_ids(1)
        journal = self.store._journal
        self.store._journal = None  # writing now raises
        d = self.store.save(jid, job(jid))
        self.runner.run_all()
        self.assertNoResult(d)  # kept, not failed: it is tried again
        self.assertIsNotNone(self.store.failure)
        self.store._journal = journal
        self.clock.advance(1)
        self.runner.run_all()
        self.successResultOf(d)
        self.assertIsNone(self.store.failure)
        self.assertEqual(self.job_file(jid), job(jid))


class RecoveryTest(JobStoreTestCase):
    def test_journal_restores_what_the_files_lack(self):
        ids = self.store.allocate_ids(2)
        for i in ids:
            self.store.save(i, job(i, "success"))
        self.runner.run_all()
        # the job files were never fsynced: pretend the crash lost one entirely
        os.unlink(os.path.join(self.paths.queue_dir, f"job-{ids[0]}"))
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), ids)
        self.assertEqual(rec.jobs[ids[0]]["ops"][0]["status"], "success")
        self.assertEqual(self.job_file(ids[0]), job(ids[0], "success"))
        self.assertEqual(rec.serial, 2)
        self.assertEqual(self.journals(), ["journal.2"])  # replayed and consolidated
        self.assertEqual(rec.problems, [])

    def test_serial_never_goes_backwards(self):
        ids = self.store.allocate_ids(5)
        self.store.save(ids[-1], job(ids[-1]))
        self.runner.run_all()
        with open(self.paths.queue_serial, "w") as f:
            f.write("1\n")
        self.assertEqual(self.restart().serial, 5)
        # an archived job with a larger id counts too
        os.makedirs(os.path.join(self.paths.queue_archive_dir, "1"))
        with open(os.path.join(self.paths.queue_archive_dir, "1", "job-12345"), "w") as f:
            json.dump(job(12345), f)
        rec = self.restart()
        self.assertEqual(rec.serial, 12345)
        self.assertEqual(self.store.allocate_ids(1), [12346])

    def test_allocated_ids_are_durable_with_their_jobs(self):
        ids = self.store.allocate_ids(3)
        self.store.save(ids[0], job(ids[0]))
        self.runner.run_all()
        self.assertEqual(self.restart().serial, 3)

    def test_torn_last_line_is_ignored(self):
        (jid,) = self.store.allocate_ids(1)
        self.store.save(jid, job(jid))
        self.runner.run_all()
        self.store._journal.write(b'{"t":"job","id":2,"da')  # the crash hit mid-write
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [jid])
        self.assertEqual(rec.problems, [])

    def test_corrupt_journal_line_is_reported(self):
        (jid,) = self.store.allocate_ids(1)
        self.store._journal.write(b"garbage\n")
        self.store.save(jid, job(jid))
        self.runner.run_all()
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), [jid])
        self.assertEqual(len(rec.problems), 1)
        self.assertIn("line 1 is unreadable", rec.problems[0])
        self.flushLoggedErrors()

    def test_corrupt_job_file_moved_aside_and_reported(self):
        for name, content in (("job-7", "{not json"), ("job-8", json.dumps(job(9))),
                              ("job-10", json.dumps({"id": 10}))):
            with open(os.path.join(self.paths.queue_dir, name), "w") as f:
                f.write(content)
        rec = self.restart()
        self.assertEqual(rec.jobs, {})
        self.assertEqual(len(rec.problems), 3)
        corrupt = sorted(os.listdir(os.path.join(self.paths.queue_dir, "corrupt")))
        self.assertEqual(corrupt, ["job-10", "job-7", "job-8"])
        self.assertIn("differs from the file name", " ".join(rec.problems))
        self.assertEqual(rec.serial, 10)  # ids of files moved aside are never reused

    def test_queue_is_locked(self):
        other = JobStore(self.paths, self.runner, self.clock, durable=False)
        with self.assertRaises(QueueLockedError):
            other.recover()


class ArchiveTest(JobStoreTestCase):
    def test_final_state_goes_into_the_archive(self):
        (jid,) = self.store.allocate_ids(1)
        self.store.save(jid, job(jid))
        self.runner.run_all()
        self.store.save(jid, job(jid, "success"))
        d = self.store.archive(jid)
        self.runner.run_all()
        self.successResultOf(d)
        self.assertFalse(os.path.exists(os.path.join(self.paths.queue_dir, f"job-{jid}")))
        with open(os.path.join(self.paths.queue_archive_dir, "0", f"job-{jid}")) as f:
            self.assertEqual(json.load(f)["ops"][0]["status"], "success")
        rec = self.restart()
        self.assertEqual(rec.jobs, {})
        self.assertEqual(rec.archived_max, jid)

    def test_archive_is_answered_after_the_file_moved(self):
        (jid,) = self.store.allocate_ids(1)
        self.store.save(jid, job(jid, "success"))
        self.runner.run_all()
        d = self.store.archive(jid)
        fn, args, commit = self.runner.calls.pop(0)  # the journal commit only
        commit.callback(fn(*args))
        self.assertNoResult(d)  # durable, but the file has not moved yet
        self.runner.run_all()  # the file loop
        self.successResultOf(d)
        self.assertTrue(os.path.exists(os.path.join(self.paths.queue_archive_dir, "0",
                                                    f"job-{jid}")))

    def test_archive_replayed_after_crash(self):
        (jid,) = self.store.allocate_ids(1)
        self.store.save(jid, job(jid, "success"))
        self.runner.run_all()
        # the archive record is journalled but the rename did not happen
        self.store._journal.write(json.dumps({"t": "archive", "id": jid}).encode() + b"\n")
        rec = self.restart()
        self.assertEqual(rec.jobs, {})
        self.assertTrue(os.path.exists(os.path.join(self.paths.queue_archive_dir, "0",
                                                    f"job-{jid}")))


class CheckpointTest(JobStoreTestCase):
    def test_generations_rotate_and_old_journals_go(self):
        self.store.close()
        self.store = self.new_store(checkpoint_bytes=500)
        ids = self.store.allocate_ids(20)
        for i in ids:
            self.store.save(i, job(i))
            self.runner.run_all()
        self.successResultOf(self.store.wait_idle())
        gens = self.journals()
        self.assertEqual(len(gens), 1)
        self.assertGreater(int(gens[0].split(".")[1]), 2)
        with open(self.paths.queue_serial) as f:
            self.assertGreaterEqual(int(f.read()), 15)
        self.assertGreaterEqual(self.store.checkpoints, 1)
        # states journalled in generations whose journals are gone live in the files
        for i in ids:
            self.store.save(i, job(i, "success"))
        self.runner.run_all()
        rec = self.restart()
        self.assertEqual(sorted(rec.jobs), ids)
        self.assertEqual({j["ops"][0]["status"] for j in rec.jobs.values()}, {"success"})
        self.assertEqual(rec.serial, 20)

    def test_file_loop_coalesces(self):
        (jid,) = self.store.allocate_ids(1)
        self.store.save(jid, job(jid, "queued"))
        self.runner.run_all()
        writes = []
        real = self.store._write_files
        self.store._write_files = lambda u, *a: (writes.append(dict(u)), real(u, *a))[1]
        for status in ("waiting", "running", "success"):
            self.store._unwritten[jid] = json.dumps(job(jid, status))  # three states, one pass
        self.store._kick_files()
        self.runner.run_all()
        self.assertEqual(len(writes), 1)
        self.assertEqual(self.job_file(jid)["ops"][0]["status"], "success")


class DrainTest(JobStoreTestCase):
    def test_drain_flag(self):
        self.assertFalse(self.store.is_drained())
        d = self.store.set_drain(True)
        self.runner.run_all()
        self.successResultOf(d)
        self.assertTrue(self.store.is_drained())
        self.store.set_drain(False)
        self.runner.run_all()
        self.assertFalse(self.store.is_drained())
