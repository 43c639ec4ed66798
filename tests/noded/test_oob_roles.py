"""run_oob and node_demote_from_mc on the node: the program run with its timeout, its answer
decoded; the config copy backed up and removed, never on the master."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend import oob, roles
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner


@pytest.mark.subprocess
class RunOobTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.tmp = os.path.abspath(self.mktemp())
        os.makedirs(self.tmp)
        root = os.path.join(self.tmp, "node1.test")
        self.ctx = NodeContext(paths=Paths.for_node(root, "node1.test"), clock=Clock(),
                               run=inline_runner)

    def script(self, body: str) -> str:
        path = os.path.join(self.tmp, "oob")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, stat.S_IRWXU)
        return path

    def answer(self, program: str, command: str = "health", timeout: int = 10):
        return self.successResultOf(oob.run_oob(self.ctx, program, command, "node2.test",
                                                timeout))

    def failure(self, program: str, timeout: int = 10) -> str:
        failure = self.failureResultOf(oob.run_oob(self.ctx, program, "power-on",
                                                   "node2.test", timeout), RPCFail)
        return str(failure.value)

    def test_answers(self):
        self.assertEqual(self.answer(self.script('echo "[[\\"$1\\", \\"$2\\"]]"')),
                         [["health", "node2.test"]])
        self.assertIsNone(self.answer(self.script("true")))

    def test_failures(self):
        program = self.script("echo out; exit 2")
        self.assertEqual(self.failure(program),
                         f"'{program} power-on node2.test' failed with reason 'exited with "
                         "exit code 2'; output: out\n")
        self.assertIn("not JSON", self.failure(self.script("echo '{'")))
        self.assertIn("timeout after 1s", self.failure(self.script("sleep 5"), timeout=1))
        self.assertIn("No such file", self.failure(os.path.join(self.tmp, "missing")))
        self.assertIn("absolute path", self.failure("oob"))

    def test_wire_arguments_checked(self):
        call = rpcdefs.get_call("run_oob")
        call.check_args(["/bin/oob", "power-status", "n1", 60])
        for bad in (["oob", "health", "n1", 60], ["/bin/oob", "reboot", "n1", 60],
                    ["/bin/oob", "health", "", 60], ["/bin/oob", "health", "n1", 0],
                    ["/bin/oob", "health", "n1", 901], ["/bin/oob", "health", "n1", "60"]):
            with self.assertRaises(rpcdefs.RpcArgumentError):
                call.check_args(bad)


@pytest.mark.subprocess
class DemoteTest(SynchronousTestCase):
    def setUp(self) -> None:
        tmp = os.path.abspath(self.mktemp())
        self.paths = Paths.for_node(os.path.join(tmp, "node2.test"), "node2.test")
        os.makedirs(os.path.dirname(self.paths.config_file))
        os.makedirs(os.path.dirname(self.paths.ssconf_file("master_node")), exist_ok=True)
        with open(self.paths.config_file, "w") as f:
            f.write("{}")
        self.ctx = NodeContext(paths=self.paths, clock=Clock(), run=inline_runner)

    def master_is(self, name: str) -> None:
        with open(self.paths.ssconf_file("master_node"), "w") as f:
            f.write(name + "\n")

    def test_backup_and_remove(self):
        self.master_is("node1.test")
        self.successResultOf(roles.node_demote_from_mc(self.ctx))
        self.assertFalse(os.path.exists(self.paths.config_file))
        folder = os.path.dirname(self.paths.config_file)
        (backup,) = [n for n in os.listdir(folder) if n.startswith("config.data.backup-")]
        with open(os.path.join(folder, backup)) as f:
            self.assertEqual(f.read(), "{}")
        # again: nothing left to remove, still fine
        self.successResultOf(roles.node_demote_from_mc(self.ctx))

    def test_refused_on_the_master(self):
        self.master_is("node2.test")
        failure = self.failureResultOf(roles.node_demote_from_mc(self.ctx), RPCFail)
        self.assertIn("I'm the master node, will not demote", str(failure.value))
        self.assertTrue(os.path.exists(self.paths.config_file))

    def test_refused_while_masterd_runs(self):
        self.master_is("node1.test")
        pid_file = self.paths.pid_file("ganeti-masterd")
        os.makedirs(os.path.dirname(pid_file), exist_ok=True)
        # a live process that names the pid file, as twistd --pidfile does
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                                 "--pidfile", pid_file])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        with open(pid_file, "w") as f:
            f.write(f"{proc.pid}\n")
        failure = self.failureResultOf(roles.node_demote_from_mc(self.ctx), RPCFail)
        self.assertIn("The master daemon is running", str(failure.value))

    def test_a_stale_masterd_pid_taken_by_another_process_does_not_refuse(self):
        self.master_is("node1.test")
        pid_file = self.paths.pid_file("ganeti-masterd")
        os.makedirs(os.path.dirname(pid_file), exist_ok=True)
        with open(pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")  # alive, but not masterd
        self.assertFalse(roles._masterd_running(self.paths))
