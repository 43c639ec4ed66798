"""The node daemon keeps ganeti-confd running exactly on the master and the candidates
(ganeti.noded.backend.confd_role, called after write_ssconf_files and after uploads of
config.data and hmac.key when noded runs with --manage-confd)."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
from twisted.internet.task import Clock
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded import tap
from ganeti.noded.backend import confd_role, files, ssconf
from ganeti.noded.backend.context import NodeContext, inline_runner

ME = "node2.example.test"


@pytest.mark.subprocess
class RoleTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="h7-role-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)
        self.paths = Paths.for_node(os.path.join(self.tmp, ME), ME)
        os.makedirs(self.paths.data_dir)
        os.makedirs(self.paths.run_dir)
        self.calls = []
        self.patch(confd_role, "start_confd", lambda p: self.calls.append("start") or "started")
        self.patch(confd_role, "stop_confd",
                   lambda p, pid: self.calls.append(("stop", pid)) or "stopped")

    def write_ssconf(self, candidates, master="node1.example.test"):
        for key, value in (("master_candidates", "\n".join(candidates)),
                           ("master_node", master)):
            with open(self.paths.ssconf_file(key), "w") as f:
                f.write(value + "\n")

    def write_config(self, candidate, key=True):
        raw = {"cluster": {"master_node": "u1"},
               "nodes": {"u1": {"name": "node1.example.test", "master_candidate": True},
                         "u2": {"name": ME, "master_candidate": candidate}}}
        with open(self.paths.config_file, "w") as f:
            json.dump(raw, f)
        if key:
            with open(self.paths.hmac_key, "w") as f:
                f.write("k\n")

    def fake_running(self, pid=None):
        """Write confd's pid file: ``pid``, else a live process that names the file on
        its command line, as twistd's --pidfile does (a pid alone may be anyone's)."""
        pid_file = self.paths.pid_file(constants.CONFD)
        if pid is None:
            proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                     "--pidfile", pid_file])
            self.addCleanup(proc.wait)
            self.addCleanup(proc.kill)
            pid = proc.pid
        with open(pid_file, "w") as f:
            f.write(f"{pid}\n")
        return pid

    def test_role_sources(self):
        self.assertFalse(confd_role.ssconf_says_candidate(self.paths))
        self.write_ssconf(["node1.example.test", ME])
        self.assertTrue(confd_role.ssconf_says_candidate(self.paths))
        self.write_ssconf(["node1.example.test"], master=ME)  # the master is one
        self.assertTrue(confd_role.ssconf_says_candidate(self.paths))
        self.assertFalse(confd_role.config_says_candidate(self.paths))
        self.write_config(True, key=False)
        self.assertFalse(confd_role.config_says_candidate(self.paths))  # no hmac.key
        self.write_config(True)
        self.assertTrue(confd_role.config_says_candidate(self.paths))
        self.write_config(False)
        self.assertFalse(confd_role.config_says_candidate(self.paths))
        with open(self.paths.config_file, "w") as f:
            f.write("[1, 2")
        self.assertFalse(confd_role.config_says_candidate(self.paths))

    def test_promotion_starts_once_ssconf_and_config_agree(self):
        self.write_ssconf(["node1.example.test", ME])
        self.write_config(False)  # config.data not here yet: wait for it
        self.assertIsNone(confd_role.sync_confd(self.paths))
        self.write_config(True)
        self.assertEqual(confd_role.sync_confd(self.paths), "started")
        self.fake_running()
        self.assertIsNone(confd_role.sync_confd(self.paths))  # already running
        self.assertEqual(self.calls, ["start"])

    def test_demotion_stops_a_running_confd(self):
        self.write_ssconf(["node1.example.test"])
        self.write_config(True)  # a stale copy: demotion leaves config.data behind
        self.assertIsNone(confd_role.sync_confd(self.paths))  # not running: nothing
        pid = self.fake_running()
        self.assertEqual(confd_role.sync_confd(self.paths), "stopped")
        self.assertEqual(self.calls, [("stop", pid)])

    def test_stale_pid_file_is_not_running(self):
        proc = subprocess.Popen([sys.executable, "-c", ""])
        proc.wait()
        self.fake_running(proc.pid)
        self.assertIsNone(confd_role.confd_pid(self.paths))

    def test_a_pid_another_process_got_is_not_confd(self):
        # confd died without removing its pid file and its number went to another
        # process (this one): demotion must not signal it
        self.fake_running(os.getpid())
        self.assertIsNone(confd_role.confd_pid(self.paths))
        self.write_ssconf(["node1.example.test"])
        self.assertIsNone(confd_role.sync_confd(self.paths))
        self.assertEqual(self.calls, [])


@pytest.mark.subprocess
class StartStopTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="h7-role-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)
        self.paths = Paths.for_node(os.path.join(self.tmp, ME), ME)

    def test_start_command(self):
        cmd = confd_role.start_command(self.paths)
        self.assertTrue(cmd[0].endswith("twistd"))
        self.assertEqual(cmd[1:], ["--pidfile", self.paths.pid_file(constants.CONFD),
                                   "--logfile", self.paths.log_file(constants.CONFD),
                                   "--umask", "0027", constants.CONFD, "--port", "1814"])

    def test_start_failure_is_reported(self):
        self.patch(confd_role, "start_command", lambda paths: [
            sys.executable, "-c", "import sys; sys.exit('ganeti-confd: not starting: why')"])
        self.assertEqual(confd_role.start_confd(self.paths),
                         "cannot start ganeti-confd: ganeti-confd: not starting: why")

    def test_start_removes_a_stale_pid_file(self):
        os.makedirs(self.paths.run_dir)
        proc = subprocess.Popen([sys.executable, "-c", ""])
        proc.wait()
        with open(self.paths.pid_file(constants.CONFD), "w") as f:
            f.write(f"{proc.pid}\n")
        self.patch(confd_role, "start_command", lambda paths: [sys.executable, "-c", ""])
        self.assertIn("started", confd_role.start_confd(self.paths))
        self.assertFalse(os.path.exists(self.paths.pid_file(constants.CONFD)))

    def test_stop_terminates_the_process(self):
        os.makedirs(self.paths.run_dir)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                 "--pidfile", self.paths.pid_file(constants.CONFD)])
        self.addCleanup(proc.kill)
        with open(self.paths.pid_file(constants.CONFD), "w") as f:
            f.write(f"{proc.pid}\n")
        start = time.monotonic()
        self.assertIn("stopped", confd_role.stop_confd(self.paths, proc.pid))
        self.assertEqual(proc.wait(timeout=10), -15)
        self.assertLess(time.monotonic() - start, confd_role.STOP_TIMEOUT)


@pytest.mark.subprocess
class HookTest(SynchronousTestCase):
    """write_ssconf_files and uploads of config.data/hmac.key end with a sync."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="h7-role-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.tmp], check=False)
        self.paths = Paths.for_node(os.path.join(self.tmp, ME), ME)
        os.makedirs(self.paths.data_dir)
        self.synced = []
        self.patch(confd_role, "sync_confd", lambda paths: self.synced.append(paths) or None)

    def ctx(self, manage):
        return NodeContext(paths=self.paths, clock=Clock(), run=inline_runner,
                           manage_confd=manage)

    def upload(self, ctx, path):
        wire = path[len(self.paths.root):]
        return files.upload_file(ctx, wire, rpcdefs.encode_content(b"{}"), 0o640, None, None,
                                 None, None)

    def test_only_with_manage_confd(self):
        d = ssconf.write_ssconf_files(self.ctx(False), {"master_node": "n1"})
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.synced, [])
        d = ssconf.write_ssconf_files(self.ctx(True), {"master_node": "n1"})
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(self.synced, [self.paths])

    def test_config_and_key_uploads_sync_others_do_not(self):
        ctx = self.ctx(True)
        self.successResultOf(self.upload(ctx, self.paths.config_file))
        self.successResultOf(self.upload(ctx, self.paths.hmac_key))
        self.assertEqual(len(self.synced), 2)
        self.successResultOf(self.upload(ctx, self.paths.rapi_pem))
        self.assertEqual(len(self.synced), 2)

    def test_a_failing_sync_does_not_fail_the_call(self):
        def boom(paths):
            raise OSError("no twistd")
        self.patch(confd_role, "sync_confd", boom)
        d = ssconf.write_ssconf_files(self.ctx(True), {"master_node": "n1"})
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(len(self.flushLoggedErrors(OSError)), 1)

    def test_noded_option(self):
        opts = tap.Options()
        opts.parseOptions(["--manage-confd"])
        self.assertTrue(opts["manage-confd"])
        opts = tap.Options()
        opts.parseOptions([])
        self.assertFalse(opts["manage-confd"])
        self.assertRaises(usage.UsageError, tap.Options().parseOptions, ["--manage-confd=x"])
