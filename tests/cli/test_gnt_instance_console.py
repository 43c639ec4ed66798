"""gnt-instance console for kvm serial consoles: run here, through ssh, or shown."""

import io
import unittest

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_instance_info as info
from ganeti.cli.framework import Context
from ganeti.core import consoles, errors

SOCKET = "/srv/vc/node1.test/var/run/ganeti/kvm-hypervisor/ctrl/vm1.serial"
CONSOLE = {"instance": "vm1", "kind": "ssh", "host": "node1.test", "user": "root",
           "port": 22, "command": consoles.socat_command(SOCKET)}


class ConsoleTest(SynchronousTestCase):
    def setUp(self):
        self.out, self.err = io.StringIO(), io.StringIO()
        env = {"GANETI_ROOTDIR": "/srv/vc/node3.test", "GANETI_HOSTNAME": "node3.test"}
        self.ctx = Context("gnt-instance", self.out, self.err, env, lambda p: None)
        self.ran: list[list[str]] = []

    def show(self, console=CONSOLE, show_command=False, exists=False, which="/usr/bin/socat",
             code=0):
        def run(argv):
            self.ran.append(argv)
            return code
        return info.show_console(self.ctx, console, show_command, "cluster.test", run=run,
                                 which=lambda prog: which, exists=lambda p: exists)

    def test_socket_reachable_here_runs_socat_locally(self):
        self.show(exists=True)
        self.assertEqual(self.ran, [["socat", "STDIO,raw,echo=0,escape=0x1d",
                                     "UNIX-CONNECT:" + SOCKET]])
        self.assertIn("^] (Ctrl-]) to detach", self.err.getvalue())

    def test_node_is_this_machine_runs_locally(self):
        self.show(console=dict(CONSOLE, host="node3.test"))
        self.assertEqual(self.ran[0][0], "socat")

    def test_elsewhere_goes_through_ssh(self):
        self.show()
        self.assertEqual(self.ran[0][0], "ssh")
        self.assertEqual(self.ran[0][-2:], ["root@node1.test",
                                            f"socat STDIO,raw,echo=0,escape=0x1d "
                                            f"UNIX-CONNECT:{SOCKET}"])

    def test_show_cmd_prints_ssh_even_when_local(self):
        self.show(show_command=True, exists=True)
        self.assertEqual(self.ran, [])
        self.assertTrue(self.out.getvalue().startswith("ssh -oEscapeChar=none "))
        self.assertIn("-t -t root@node1.test 'socat STDIO,raw,echo=0,escape=0x1d "
                      f"UNIX-CONNECT:{SOCKET}'", self.out.getvalue())

    def test_missing_socat_is_a_clear_error(self):
        with self.assertRaises(errors.OpExecError) as caught:
            self.show(exists=True, which=None)
        self.assertIn("'socat' is not installed on this machine", str(caught.exception))
        self.assertIn("apt-get install socat", str(caught.exception))
        self.assertEqual(self.ran, [])

    def test_socat_failure(self):
        with self.assertRaises(errors.OpExecError) as caught:
            self.show(exists=True, code=1)
        self.assertIn("Connection to console of instance vm1 failed", str(caught.exception))


DEBIAN_TREE = "/usr/share/ganeti/3.0"
DEBIAN_DO_CONSOLE = """
import json, sys
sys.path.insert(0, sys.argv[2])
from ganeti import objects
from ganeti.client import gnt_instance
out = []
console = objects.InstanceConsole.FromDict(json.loads(sys.argv[1]))
gnt_instance._DoConsole(console, True, "cluster.test",
                        feedback_fn=lambda fmt, *args: out.append(fmt % args))
print(out[0])
"""


@pytest.mark.subprocess
class DebianToolTest(SynchronousTestCase):
    """Debian's gnt-instance accepts our console object and prints its ssh command."""

    def test_show_cmd(self):
        import json
        import os
        import subprocess
        if not os.path.isdir(os.path.join(DEBIAN_TREE, "ganeti")):
            raise unittest.SkipTest(f"Debian's Ganeti is not installed in {DEBIAN_TREE}")
        console = consoles.kvm_console("vm1", None, {"serial_console": True}, "node1.test",
                                       22, environ={})
        proc = subprocess.run(["/usr/bin/python3", "-c", DEBIAN_DO_CONSOLE,
                               json.dumps(console), DEBIAN_TREE], capture_output=True, text=True,
                              timeout=60, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("-t -t root@node1.test 'socat STDIO,raw,echo=0,escape=0x1d "
                      "UNIX-CONNECT:/var/run/ganeti/kvm-hypervisor/ctrl/vm1.serial'",
                      proc.stdout)


@pytest.mark.subprocess
class SocatTest(SynchronousTestCase):
    """The console command itself, on a terminal, against a stand-in for QEMU's
    chardev: bytes both ways, and Ctrl-] detaches."""

    def test_bytes_and_detach_key(self):
        import os
        import pty
        import select
        import shutil
        import socket
        import subprocess
        import tempfile
        if shutil.which("socat") is None:
            raise unittest.SkipTest("socat is not installed")
        base = tempfile.mkdtemp(prefix="gcon", dir="/tmp")
        self.addCleanup(shutil.rmtree, base, True)
        path = os.path.join(base, "vm1.serial")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(server.close)
        server.bind(path)
        server.listen(1)
        server.settimeout(10)
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        proc = subprocess.Popen(consoles.socat_command(path), stdin=slave, stdout=slave,
                                stderr=subprocess.PIPE, start_new_session=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        os.close(slave)
        conn, _ = server.accept()
        self.addCleanup(conn.close)
        conn.settimeout(10)
        conn.sendall(b"GANETI-GUEST-READY vm1\r\n# ")
        seen = b""
        while b"# " not in seen:
            ready, _, _ = select.select([master], [], [], 10)
            self.assertTrue(ready, f"no output from socat (so far {seen!r})")
            seen += os.read(master, 4096)
        self.assertIn(b"GANETI-GUEST-READY vm1", seen)
        os.write(master, b"uname\r")
        got = b""
        while len(got) < 6:
            got += conn.recv(64)
        self.assertEqual(got, b"uname\r")  # raw: no echo, no translation
        os.write(master, b"\x1d")  # ^] detaches
        self.assertEqual(proc.wait(timeout=10), 0, proc.stderr.read())
        proc.stderr.close()
