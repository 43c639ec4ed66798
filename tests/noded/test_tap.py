"""ganeti-noded options, bind address, memory lock and log-file fallback."""

import os

from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded import service, tap
from tests.noded.helpers import node_paths


class OptionsTest(SynchronousTestCase):
    def test_defaults(self):
        opts = tap.Options()
        opts.parseOptions([])
        self.assertEqual((opts["port"], opts["bind"], opts["no-mlock"]), (1811, None, 0))
        opts.parseOptions(["-b", "10.0.0.1", "-p", "0", "--no-mlock"])
        self.assertEqual((opts["port"], opts["bind"], opts["no-mlock"]), (0, "10.0.0.1", 1))
        self.assertRaises(usage.UsageError, tap.Options().parseOptions, ["-p", "70000"])

    def test_primary_ip_from_ssconf(self):
        paths = node_paths(self)
        self.assertIsNone(tap.primary_ip(paths))
        with open(paths.ssconf_file("node_primary_ips"), "w") as f:
            f.write("other 127.0.0.9\nnode1.example.com 127.0.0.2\n")
        self.assertEqual(tap.primary_ip(paths), "127.0.0.2")


class FakeLibc:
    def __init__(self, rc):
        self.rc, self.calls = rc, []

    def mlockall(self, flags):
        self.calls.append(flags)
        return self.rc


class MlockTest(SynchronousTestCase):
    def test_flags(self):
        libc = FakeLibc(0)
        self.assertTrue(service.lock_memory(libc))
        self.assertEqual(libc.calls, [service.MCL_CURRENT | service.MCL_FUTURE])

    def test_failure_is_logged_not_fatal(self):
        self.assertFalse(service.lock_memory(FakeLibc(-1)))


class LogFileTest(SynchronousTestCase):
    def test_unwritable_log_file_keeps_console(self):
        path = os.path.join(os.path.abspath(self.mktemp()), "missing", "node-daemon.log")
        self.assertIsNone(service.open_log_file(path))

    def test_log_file(self):
        from twisted.logger import globalLogPublisher
        path = os.path.join(os.path.abspath(self.mktemp()))
        os.makedirs(path)
        observer = service.open_log_file(os.path.join(path, "node-daemon.log"))
        self.addCleanup(globalLogPublisher.removeObserver, observer)
        self.assertIsNotNone(observer)
