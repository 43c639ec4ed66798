"""Real twistd processes of all four daemons that cannot listen: exit status 1, the
address (or path) and the reason in the log and on stderr, under ``--nodaemon`` and
daemonised; and ``ganeti-vcluster start`` naming the daemon that failed and why.

One stopped single-node virtual cluster serves every case: its node's ports are
taken by this test (noded, confd, rapi), or its master's root is copied to a
directory so deep that the LUXI socket path does not fit in a UNIX socket
address (masterd).
"""

import json
import os
import shutil
import socket
import subprocess
import time

from ganeti.cli import daemons
from ganeti.core import constants
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import VCLUSTER, run

#: Seconds one twistd run may take (it exits at once; this bounds a hang).
RUN_TIMEOUT = 60


def wait_until_gone(pid_file, timeout=RUN_TIMEOUT):
    """Wait for the daemonised child named in ``pid_file`` to end.

    twistd's child reports the failure through its status pipe and only then
    removes its pid file, so the parent may exit first; once the child is
    gone, the pid file must be too.
    """
    try:
        with open(pid_file, encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                state = f.read().rsplit(")", 1)[-1].split()[0]
        except OSError:
            return  # gone
        if state == "Z":
            return  # a zombie: it has run its last line
        time.sleep(0.02)


class DaemonStartupFailureTest(ClusterCase):
    PREFIX = "ganeti-startup-"
    START = False

    @classmethod
    def setUpCluster(cls):
        cls.ip = cls.cluster.ips[0]
        cls.logs = os.path.join(cls.cluster.tmp, "logs")
        os.makedirs(cls.logs)
        # the master's root copied so deep that RUN_DIR/socket/ganeti-query is too long
        cls.deep_root = os.path.join(cls.cluster.tmp, "d" * 80, cls.cluster.master)
        shutil.copytree(cls.cluster.root, cls.deep_root, symlinks=True)

    def twistd(self, daemon, args, nodaemon, root=None):
        """Run ``twistd [-n] daemon args`` on the master node; (status, stderr, log)."""
        root = root or self.cluster.root
        mode = "n" if nodaemon else "d"
        log_file = os.path.join(self.logs, f"{daemon}-{mode}.log")
        pid_file = os.path.join(self.logs, f"{daemon}-{mode}.pid")
        env = dict(os.environ, GANETI_ROOTDIR=root, GANETI_HOSTNAME=self.cluster.master)
        cmd = [daemons.twistd_path(), "--pidfile", pid_file, "--logfile", log_file]
        cmd += (["--nodaemon"] if nodaemon else []) + [daemon] + list(args)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, check=False)
        if not nodaemon:
            wait_until_gone(pid_file)
        self.assertFalse(os.path.exists(pid_file), "twistd left its pid file")
        with open(log_file, encoding="utf-8") as f:
            log = f.read()
        return proc.returncode, proc.stderr, log

    def check_both_modes(self, daemon, args, message, root=None):
        for nodaemon in (True, False):
            status, stderr, log = self.twistd(daemon, args, nodaemon, root)
            with self.subTest(nodaemon=nodaemon):
                self.assertEqual(status, 1, stderr)
                self.assertIn(message, log)
                self.assertEqual(log.count(message), 1, log)
                if nodaemon:  # the reason itself, one line, not a traceback
                    self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                    self.assertTrue(stderr.startswith(message), stderr)
                else:  # twistd's parent: the first 100 bytes of the reason
                    self.assertIn("An error has occurred: ", stderr)
                    self.assertIn(message[:60], stderr)

    def occupied(self, port, udp=False):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.bind((self.ip, port))
        if not udp:
            sock.listen(1)

    def test_noded_port_in_use(self):
        port = constants.DEFAULT_NODED_PORT
        self.occupied(port)
        self.check_both_modes(
            constants.NODED, ["--bind", self.ip, "--port", str(port), "--no-mlock"],
            f"ganeti-noded: cannot listen on {self.ip}:{port} (TCP, TLS): "
            "Address already in use")

    def test_confd_port_in_use(self):
        port = constants.DEFAULT_CONFD_PORT
        self.occupied(port, udp=True)
        self.check_both_modes(
            constants.CONFD, ["--bind", self.ip, "--port", str(port)],
            f"ganeti-confd: cannot listen on {self.ip}:{port} (UDP): Address already in use")

    def test_rapi_port_in_use(self):
        port = constants.DEFAULT_RAPI_PORT
        self.occupied(port)
        self.check_both_modes(
            constants.RAPI, ["--bind", self.ip, "--port", str(port)],
            f"ganeti-rapi: cannot listen on {self.ip}:{port} (TCP, TLS): "
            "Address already in use")

    def test_masterd_socket_path_too_long(self):
        path = os.path.join(self.deep_root, "var/run/ganeti/socket/ganeti-query")
        size = len(path.encode())
        self.assertGreater(size, 107)
        self.check_both_modes(
            constants.MASTERD, [],
            f"ganeti-masterd: cannot listen on the LUXI socket {path}: AF_UNIX path too "
            f"long: the path is {size} bytes long, a UNIX socket path at most 107",
            root=self.deep_root)

    def test_vcluster_start_names_the_daemon_and_the_reason(self):
        state_file = os.path.join(self.cluster.dir, "vcluster.json")
        with open(state_file, encoding="utf-8") as f:
            original = f.read()
        state = json.loads(original)
        state["nodes"][0]["root"] = self.deep_root
        with open(state_file, "w", encoding="utf-8") as f:
            json.dump(state, f)

        def restore():
            run([VCLUSTER, "stop", self.cluster.dir], check=False)
            with open(state_file, "w", encoding="utf-8") as f:
                f.write(original)
        self.addCleanup(restore)
        proc = run([VCLUSTER, "start", self.cluster.dir], check=False, timeout=120)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        text = proc.stdout + proc.stderr
        self.assertIn(f"ganeti-masterd on {self.cluster.master} failed to start: ganeti-masterd: "
                      "cannot listen on the LUXI socket", text)
        self.assertIn("AF_UNIX path too long", text)
        self.assertIn("Stopped again: ", text)  # what it had started is stopped
