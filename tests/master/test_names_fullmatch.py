"""Names from the wire must match in full: a trailing newline is not a harmless suffix."""

import json
import os

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.luxi.methods import METHODS
from ganeti.master.jobs.jobstore import JobStore
from ganeti.master.lu.tags import check_tag
from tests.fakes.configs import node_paths
from tests.master.test_jobstore import ControlledRunner, job


class TagTest(SynchronousTestCase):
    def test_tag_with_newline_refused(self):
        self.assertEqual(check_tag("web:prod"), "web:prod")
        for bad in ("x\n", "x\ny", "\nx"):
            with self.assertRaises(errors.TagError):
                check_tag(bad)


class JobFileNameTest(SynchronousTestCase):
    def test_only_exact_job_file_names_are_jobs(self):
        paths = node_paths(self.mktemp())
        store = JobStore(paths, ControlledRunner(), Clock(), durable=False)
        store.recover()
        store.close()
        for name in ("job-7\n", "job- 8", "job-\u0669", "job-9"):
            with open(os.path.join(paths.queue_dir, name), "w") as f:
                json.dump(job(9), f)
        store = JobStore(paths, ControlledRunner(), Clock(), durable=False)
        rec = store.recover()
        store.close()
        self.assertEqual(sorted(rec.jobs), [9])
        self.assertEqual(rec.serial, 9)


class LuxiJobIdTest(SynchronousTestCase):
    def test_non_ascii_digits_are_not_job_ids(self):
        arg = METHODS["CancelJob"].args[0]
        self.assertTrue(arg.accepts("12"))
        self.assertFalse(arg.accepts("\u00b2"))
        self.assertFalse(arg.accepts("\u0661"))
