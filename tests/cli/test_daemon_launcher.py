"""The daemons' program names (bin/ganeti-noded, ..., ganeti-luxid, ganeti-wconfd):
``--version`` for every program Ganeti ships that this project replaces (Ganeti's QA
runs each), ``--help``, and what they start."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import daemon_launcher, daemons
from ganeti.core.paths import Paths

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Ganeti 3.0's programs that QA asks --version (qa_env.TestGanetiCommands), all ours.
PROGRAMS = ["gnt-backup", "gnt-cluster", "gnt-debug", "gnt-instance", "gnt-job",
            "gnt-network", "gnt-node", "gnt-os", "gnt-storage", "gnt-filter", "gnt-group",
            "ganeti-noded", "ganeti-rapi", "ganeti-watcher", "ganeti-confd", "ganeti-luxid",
            "ganeti-wconfd", "ganeti-masterd"]


@pytest.mark.subprocess
class VersionTest(SynchronousTestCase):
    def test_every_program_answers_version(self):
        for program in PROGRAMS:
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "bin", program),
                                   "--version"], capture_output=True, text=True, timeout=60,
                                  check=False)
            self.assertEqual((proc.returncode, proc.stderr), (0, ""), program)
            self.assertRegex(proc.stdout, rf"^{program} \(ganeti-twisted [^)]+\) 3\.0\.\d+\n$")

    def test_help_names_the_daemon_holding_the_role(self):
        out = io.StringIO()
        self.assertEqual(daemon_launcher.main("ganeti-luxid", ["--help"], out), 0)
        self.assertIn("here ganeti-masterd holds its role", out.getvalue())
        out = io.StringIO()
        self.assertEqual(daemon_launcher.main("ganeti-noded", ["-h"], out), 0)
        self.assertNotIn("role", out.getvalue())


class StartTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.root = os.path.join(os.path.abspath(self.mktemp()), "node1.test")
        self.env = {"GANETI_ROOTDIR": self.root, "GANETI_HOSTNAME": "node1.test"}
        self.paths = Paths.from_env(self.env)
        self.execs: list[list[str]] = []
        self.patch(os, "execv", lambda path, argv: self.execs.append(argv))
        self.patch(daemons, "twistd_path", lambda: "/x/twistd")

    def test_starts_the_plugin_with_the_nodes_files(self):
        daemon_launcher.main("ganeti-noded", ["-f", "--no-mlock"], io.StringIO(), self.env)
        self.assertEqual(self.execs, [[
            "/x/twistd", "--pidfile", self.paths.pid_file("ganeti-noded"), "--logfile",
            self.paths.log_file("ganeti-noded"), "--umask", "0027", "--nodaemon",
            "ganeti-noded", "--no-mlock"]])

    def test_luxid_and_wconfd_start_masterd_unless_it_runs(self):
        daemon_launcher.main("ganeti-wconfd", [], io.StringIO(), self.env)
        self.assertEqual(self.execs[0][-1], "ganeti-masterd")
        self.patch(daemons, "state", lambda paths, daemon: daemons.DaemonState(
            daemon, 1, daemons.RUNNING))
        out = io.StringIO()
        self.assertEqual(daemon_launcher.main("ganeti-luxid", [], out, self.env), 0)
        self.assertEqual(out.getvalue(),
                         "ganeti-luxid: ganeti-masterd, which holds this role, is running\n")
        self.assertEqual(len(self.execs), 1)
