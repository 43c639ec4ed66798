"""Instance creation under faults on a real 3-node virtual cluster: an OS create
script that fails, one that hangs (the job is cancelled), and a node daemon killed
while the script runs.  Each time the job ends with the reason, the script is gone
and nothing of the instance is left in the config or on the node.  And the
output of a script that works (our busybox OS) reaches the job's log while it
runs, as gnt-instance add and Debian's gnt-job info show it."""

import os
import signal
import subprocess
import sys
import time

from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.jobtools import wait_for_job, wait_for_status

DEBIAN_GNT_JOB = "/usr/share/ganeti/3.0/gnt-job"

SCRIPTS = {
    # exits 1 after some output on both streams
    "failing": 'echo "formatting the root disk of $INSTANCE_NAME"\n'
               'echo "mkfs: no space left on device" >&2\nexit 1\n',
    # runs until killed; its odd duration finds it in the process list
    "hanging": 'echo "copying the image"\nexec sleep 613\n',
}


def _write_os(top, name, create):
    d = os.path.join(top, name)
    os.makedirs(d, exist_ok=True)
    files = {"ganeti_api_version": "20\n", "variants.list": "default\n",
             "parameters.list": "", "create": "#!/bin/sh\n" + create}
    for script in ("export", "import", "rename", "verify"):
        files[script] = "#!/bin/sh\nexit 0\n"
    for fname, text in files.items():
        path = os.path.join(d, fname)
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
        if fname in ("create", "export", "import", "rename", "verify"):
            os.chmod(path, 0o755)


def _sleepers():
    out = subprocess.run(["pgrep", "-f", "^sleep 613$"], capture_output=True,
                         text=True, check=False).stdout
    return [int(p) for p in out.split()]


class InstanceFaultsTest(ClusterCase):

    PREFIX = "ganeti-instance-faults-"
    NODES = 3

    @classmethod
    def setUpCluster(cls):
        for node in cls.cluster.nodes:
            paths = Paths.for_node(cls.cluster.node_root(node), node)
            for name, script in SCRIPTS.items():
                _write_os(paths.os_search_path[0], name, script)

    @classmethod
    def tearDownClass(cls):
        for pid in _sleepers():
            os.kill(pid, signal.SIGKILL)
        super().tearDownClass()

    def create_op(self, name, os_type, node=2):
        return {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
                "disk_template": "diskless", "disks": [], "nics": [{}],
                "pnode": self.cluster.nodes[node - 1], "os_type": os_type,
                "name_check": False, "ip_check": False, "start": False,
                "beparams": {"maxmem": 128, "minmem": 128}}

    def instances(self, client):
        return client.call("Query", "instance", ["name"], None)["data"]

    def wait_running_script(self, client, job):
        """Until the job logs that the OS script runs and the script is a process."""
        wait_for_status(client, job, {"running"}, timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            (log,) = client.call("QueryJobs", [job], ["oplog"])[0]
            text = " ".join(str(entry[3]) for entries in log for entry in entries)
            if "OS create scripts" in text and _sleepers():
                return
            time.sleep(0.1)
        self.fail("the OS create script did not start")

    def wait_streamed(self, client, job, line):
        """Until ``line`` is in the job's log, which must still run then (the
        script's output streamed while it runs)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            (status, log), = client.call("QueryJobs", [job], ["status", "oplog"])
            if line in [str(entry[3]) for entries in log for entry in entries]:
                self.assertEqual(status, "running")
                return
            time.sleep(0.1)
        self.fail(f"{line!r} did not reach the job's log")

    def test_a_failing_script_fails_the_job_with_its_log(self):
        with self.cluster.client() as client:
            job = int(client.call("SubmitJob", [self.create_op("fail1.vcluster.test",
                                                               "failing")]))
            self.assertEqual(wait_for_job(client, job, timeout=120), "error")
            (result,) = client.call("QueryJobs", [job], ["opresult"])[0]
            cls, args = result[0]
            self.assertEqual(cls, "OpExecError")
            self.assertIn("Could not add os for instance fail1.vcluster.test", args[0])
            self.assertIn("mkfs: no space left on device", args[0])
            self.assertEqual(self.instances(client), [])

    def test_a_hanging_script_ends_with_the_cancelled_job(self):
        with self.cluster.client() as client:
            job = int(client.call("SubmitJob", [self.create_op("hang1.vcluster.test",
                                                               "hanging")]))
            self.wait_running_script(client, job)
            self.wait_streamed(client, job, "OS create: copying the image")
            client.call("CancelJob", job, True)
            self.assertIn(wait_for_job(client, job, timeout=120), ("canceled", "error"))
            deadline = time.monotonic() + 30
            while _sleepers() and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertEqual(_sleepers(), [])
            self.assertEqual(self.instances(client), [])

    def test_a_node_daemon_killed_during_the_install(self):
        node = self.cluster.nodes[2]
        paths = Paths.for_node(self.cluster.node_root(node), node)
        with self.cluster.client() as client:
            job = int(client.call("SubmitJob", [self.create_op("kill1.vcluster.test",
                                                               "hanging", node=3)]))
            self.wait_running_script(client, job)
            with open(paths.pid_file("ganeti-noded"), encoding="ascii") as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
            self.assertEqual(wait_for_job(client, job, timeout=180), "error")
            (result,) = client.call("QueryJobs", [job], ["opresult"])[0]
            self.assertIn("Could not add os for instance kill1.vcluster.test", result[0][1][0])
            self.assertEqual(self.instances(client), [])
        for pid in _sleepers():  # the orphaned script of the killed daemon
            os.kill(pid, signal.SIGKILL)
        self.cluster.start()  # the node daemon again, for the other tests

    def test_b_the_os_script_output_is_in_the_job_log(self):
        env = node_env(self.cluster.dir, self.cluster.master)
        name = "stream1.vcluster.test"
        added = run([sys.executable, os.path.join(ROOT, "bin", "gnt-instance"), "add",
                     "-t", "file", "--disk", "0:size=1G", "-n", self.cluster.nodes[1],
                     "-o", "busybox", "--no-name-check", "--no-ip-check", "--no-start",
                     "-B", "maxmem=128M,minmem=128M", name], env=env, check=False)
        self.assertEqual(added.returncode, 0, added.stdout + added.stderr)
        line = f"OS create: busybox-os: installed {name} on "
        self.assertIn(line, added.stdout)
        self.assertLess(added.stdout.index("running the instance OS create scripts"),
                        added.stdout.index(line))
        with self.cluster.client() as client:
            jobs = client.call("QueryJobs", None, ["id", "summary"])
            (job,) = [j for j, summary in jobs if summary == [f"INSTANCE_CREATE({name})"]]
        tool = DEBIAN_GNT_JOB if os.path.exists(DEBIAN_GNT_JOB) else \
            os.path.join(ROOT, "bin", "gnt-job")
        info = run([tool, "info", str(job)] if tool == DEBIAN_GNT_JOB
                   else [sys.executable, tool, "info", str(job)], env=env)
        self.assertIn(line, info.stdout)
        run([sys.executable, os.path.join(ROOT, "bin", "gnt-instance"), "remove", "-f",
             name], env=env)
