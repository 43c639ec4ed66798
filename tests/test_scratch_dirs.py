"""Tests write under the system's temporary directory, whatever the working directory.

A test class defined in a script (module ``__main__``) once left
``__main__/X/test_x/<random>/temp/node1.test/...`` in the checkout: trial's
``mktemp()`` is relative to the working directory, and the job-queue harness
(``QueueTestCase``, which most master tests build on) used it for the node's root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

from twisted.trial.unittest import SynchronousTestCase

from tests.master.test_jobqueue import QueueTestCase, delay

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ScratchDirTest(SynchronousTestCase):
    def test_queue_harness_leaves_the_working_directory_alone(self):
        here = tempfile.mkdtemp(prefix="ganeti-cwd-")
        self.addCleanup(shutil.rmtree, here, True)
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(here)

        class X(QueueTestCase):  # as an ad-hoc script defines one (run by unittest)
            def test_x(self):
                self.assertEqual(self.status(self.submit(delay(0.01))), "running")

        result = unittest.TestResult()
        X("test_x").run(result)
        self.assertEqual(result.errors + result.failures, [])
        self.assertEqual(result.testsRun, 1)
        self.assertEqual(os.listdir(here), [])

    def test_no_debris_in_the_checkout(self):
        self.assertFalse(os.path.exists(os.path.join(ROOT, "__main__")))
