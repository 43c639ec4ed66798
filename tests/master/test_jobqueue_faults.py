"""The job queue when the disk fills: refusals, jobs that wait and finish, no state taken back."""

import dataclasses

from twisted.internet import defer

from ganeti.core import errors
from ganeti.master.jobs.jobstore import StoreFailure
from ganeti.master.jobs.processor import JobHandle
from ganeti.master.lu.verify_group import LUClusterVerifyGroup
from tests.master.test_jobqueue import QueueTestCase, delay
from tests.master.test_jobstore_faults import Disk


class DiskFullQueueTest(QueueTestCase):
    def start(self):
        super().start()
        self.disk = Disk()
        self.daemon.store._os_write = self.disk.write
        self.daemon.store._os_fdatasync = self.disk.fdatasync

    def try_submit(self, *ops):
        return defer.Deferred.fromCoroutine(self.queue.submit(list(ops)))

    def seen(self, job_id):
        """Every status published for the job, in order."""
        return [e.data["status"] for e in self.events
                if e.kind == "job" and e.data["id"] == job_id]

    def test_running_job_waits_for_space_then_finishes(self):
        jid = self.submit(delay(10))
        self.assertEqual(self.status(jid), "running")
        self.disk.free = 0
        self.reactor.advance(10)  # it ends, but its end cannot be stored
        self.assertEqual(self.status(jid), "running")  # nothing shown that is not durable
        self.assertEqual(self.queue.jobs[jid].status, "success")
        # meanwhile new jobs are refused, clearly
        err = self.failureResultOf(self.try_submit(delay()), errors.JobQueueError)
        self.assertIn("cannot store new jobs", str(err.value))
        self.assertIn("No space left on device", str(err.value))
        many = defer.Deferred.fromCoroutine(self.queue.submit_many([[delay()]]))
        self.failureResultOf(many, errors.JobQueueError)
        # space returns: the job's end is stored and shown, new jobs are welcome again
        self.disk.free = None
        self.reactor.advance(2)
        self.assertEqual(self.status(jid), "success")
        self.assertEqual(self.seen(jid), ["queued", "running", "success"])
        later = self.finished(delay())
        self.assertEqual(self.status(later), "success")
        self.flushLoggedErrors()

    def test_submission_that_hits_the_full_disk_is_refused_and_never_appears(self):
        first = self.finished(delay())
        self.disk.free = 50  # the next batch tears after 50 bytes
        err = self.failureResultOf(self.try_submit(delay(), delay()), errors.JobQueueError)
        self.assertIn("Could not store the job(s)", str(err.value))
        refused = first + 1
        self.assertNotIn(refused, self.queue.jobs)
        self.assertNotIn(refused, self.queue.visible)
        self.assertEqual(self.seen(refused), [])
        self.disk.free = None
        self.reactor.advance(1)
        self.crash_and_restart()
        self.assertNotIn(refused, self.queue.jobs)
        self.assertEqual(self.status(first), "success")
        self.flushLoggedErrors()

    def test_whole_submit_many_is_one_batch(self):
        self.disk.free = 0
        # the failure is not known yet: the batch is tried, and all of it is refused
        many = defer.Deferred.fromCoroutine(
            self.queue.submit_many([[delay()], [delay()], [delay()]]))
        self.failureResultOf(many, errors.JobQueueError)
        self.assertEqual(self.queue.jobs, {})
        self.disk.free = None
        self.reactor.advance(1)
        self.crash_and_restart()
        self.assertEqual(self.queue.jobs, {})
        self.flushLoggedErrors()

    def test_restart_while_full_loses_nothing_acknowledged(self):
        done = self.finished(delay())
        running = self.submit(delay(30))
        self.disk.free = 0
        self.reactor.advance(30)  # finished in memory only
        self.assertEqual(self.status(running), "running")
        self.crash_and_restart()  # the daemon dies before space returns
        self.assertEqual(self.status(done), "success")
        # it was never reported finished, so ending in error takes nothing back
        self.assertEqual(self.status(running), "error")
        self.flushLoggedErrors()

    def queue_findings(self, error_codes=False):
        """What the group verify says about the job queue (the master's ENODESETUP)."""
        op = {"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": "default",
              "error_codes": error_codes}
        verifier = LUClusterVerifyGroup(self.daemon._lu_context(JobHandle(0), None), op)
        verifier.check_prereq()
        lines = []
        verifier.ctx = dataclasses.replace(verifier.ctx,
                                           feedback=lambda kind, msg: lines.append(msg))
        cfg = verifier.ctx.config.config
        master = cfg.nodes[cfg.cluster.master_node]
        self.successResultOf(defer.Deferred.fromCoroutine(verifier._verify_queue(master, True)))
        return verifier, lines

    def test_cluster_verify_reports_the_episode(self):
        jid = self.submit(delay(5))
        self.disk.free = 0
        self.reactor.advance(5)
        self.disk.free = None
        self.reactor.advance(2)
        self.assertEqual(self.status(jid), "success")
        verifier, lines = self.queue_findings(error_codes=True)
        (line,) = [x for x in lines if "ENODESETUP" in x]
        self.assertTrue(line.startswith("  - WARNING:ENODESETUP:node:"), line)
        self.assertIn("could not write for a while", line)
        self.assertIn("No space left on device", line)
        self.assertFalse(verifier.bad)  # a past episode is a warning only
        self.flushLoggedErrors()

    def test_cluster_verify_errors_while_writes_fail(self):
        self.daemon.store._failures["journal"] = StoreFailure(
            "writing the job queue journal failed: No space left on device (errno 28)",
            self.reactor.seconds())
        verifier, lines = self.queue_findings()
        self.assertTrue(verifier.bad)
        self.assertIn("cannot write", "\n".join(x for x in lines if "ERROR" in x))


class CrashedJobTest(QueueTestCase):
    def test_a_job_whose_runner_raises_ends_in_error(self):
        def broken(op):
            raise RuntimeError("bug in the runner")

        self.patch(self.queue, "_dependency_verdict", broken)
        jid = self.submit(delay())
        self.assertEqual(self.status(jid), "error")
        self.assertIn("bug in the runner", str(self.field(jid, "opresult")))
        self.assertNotIn(jid, self.queue.running)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)
