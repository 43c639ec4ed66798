"""The watcher on a real two-node virtual cluster: gnt-cluster watcher (Debian's and
ours), our ganeti-watcher on the master and on another node, masterd's watcher
service, and Debian's own ganeti-watcher against our master daemon."""

import json
import os
import signal
import sys
import time

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, DEBIAN_GNT_CLUSTER, ROOT, node_env, run

WATCHER = [sys.executable, os.path.join(ROOT, "bin", "ganeti-watcher")]
DEBIAN_WATCHER = "/usr/sbin/ganeti-watcher"
#: Debian's watcher with daemon-util replaced by a log line: it would start Debian's own
#: noded, confd, mond and kvmd inside our virtual nodes' trees.
DEBIAN_WATCHER_NO_DAEMONS = """
import sys
sys.path.insert(0, "/usr/share/ganeti/3.0")
from ganeti import utils
def ensure(name):
    sys.stderr.write("daemon-util check-and-start %s\\n" % name)
    return True
def stop(name):
    sys.stderr.write("daemon-util stop %s\\n" % name)
    return True
utils.EnsureDaemon = ensure
utils.StopDaemon = stop
import ganeti.watcher
# Our masterd has no WConfD socket: the real probe retries its connection for minutes.
ganeti.watcher.IsWconfdResponding = lambda: sys.stderr.write("wconfd probe skipped\\n") or True
sys.argv[0] = "ganeti-watcher"
sys.exit(ganeti.watcher.Main())
"""


def wait_until(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class WatcherClusterTest(ClusterCase):
    PREFIX = "ganeti-watcher-"
    NODES = 2

    @classmethod
    def setUpCluster(cls):
        cls.env2 = node_env(cls.cluster.dir, cls.cluster.nodes[1])

    def tearDown(self):
        run([os.path.join(BIN, "gnt-cluster"), "watcher", "continue"], env=self.env,
            check=False)

    def data(self, node, name):
        return os.path.join(self.cluster.node_root(node), "var/lib/ganeti", name)

    def pause_file(self, node):
        path = self.data(node, "watcher.pause")
        return open(path).read() if os.path.exists(path) else None

    def group_uuid(self):
        with open(self.data(self.cluster.master, "ssconf_nodegroups")) as f:
            return f.read().split()[0]

    def watcher(self, *argv, env=None):
        return run([*WATCHER, *argv], env=env or self.env, check=False, timeout=120)

    def test_debian_and_our_gnt_cluster_watcher(self):
        for tool in (DEBIAN_GNT_CLUSTER, os.path.join(BIN, "gnt-cluster")):
            r = run([tool, "watcher", "info"], env=self.env, check=False)
            self.assertEqual((r.returncode, r.stdout), (0, "The watcher is not paused.\n"),
                             tool + r.stderr)
            before = time.time()
            r = run([tool, "watcher", "pause", "1h"], env=self.env, check=False)
            self.assertEqual(r.returncode, 0, tool + r.stderr)
            self.assertTrue(r.stdout.startswith("The watcher is paused until "), r.stdout)
            until = int(self.pause_file(self.cluster.master))
            self.assertLessEqual(abs(until - (before + 3600)), 5)
            self.assertEqual(self.pause_file(self.cluster.nodes[1]), f"{until}\n")  # a candidate
            self.assertEqual(run([tool, "watcher", "info"], env=self.env).stdout,
                             f"The watcher is paused until {time.ctime(until)}.\n")
            r = run([tool, "watcher", "continue"], env=self.env, check=False)
            self.assertEqual((r.returncode, r.stdout), (0, "The watcher is no longer paused.\n"))
            self.assertEqual([self.pause_file(n) for n in self.cluster.nodes], [None, None])
            r = run([tool, "watcher", "pause"], env=self.env, check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("Missing pause duration", r.stdout + r.stderr)

    def test_our_watcher_on_the_master(self):
        r = self.watcher("-d")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Archived", r.stderr)
        uuid = self.group_uuid()
        with open(self.data(self.cluster.master, f"watcher.{uuid}.data")) as f:
            state = json.load(f)
        self.assertEqual(sorted(state["node"]), sorted(self.cluster.nodes))  # live boot ids
        self.assertTrue(all(v["bootid"] for v in state["node"].values()))
        self.assertTrue(os.path.exists(os.path.join(self.cluster.root,
                                                    "var/log/ganeti/watcher.log")))

    def test_paused_watcher_does_nothing(self):
        run([os.path.join(BIN, "gnt-cluster"), "watcher", "pause", "10m"], env=self.env)
        r = self.watcher("-d")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Pause has been set, exiting", r.stderr)
        self.assertNotIn("Archived", r.stderr)

    def test_restarts_a_stopped_rapi_and_noded(self):
        rapi_pid = os.path.join(self.cluster.root, "var/run/ganeti/ganeti-rapi.pid")
        old = int(open(rapi_pid).read())
        os.kill(old, signal.SIGTERM)
        self.assertTrue(wait_until(lambda: not os.path.exists(f"/proc/{old}")
                                   or open(f"/proc/{old}/stat").read().split()[2] == "Z"))
        node2_pid = os.path.join(self.cluster.node_root(self.cluster.nodes[1]),
                                 "var/run/ganeti/ganeti-noded.pid")
        old2 = int(open(node2_pid).read())
        os.kill(old2, signal.SIGTERM)
        self.assertTrue(wait_until(lambda: not os.path.exists(f"/proc/{old2}")
                                   or open(f"/proc/{old2}/stat").read().split()[2] == "Z"))
        r = self.watcher("-d", env=self.env2)  # not the master: node-local work only
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ganeti-noded is not running, starting it", r.stderr)
        self.assertNotEqual(int(open(node2_pid).read()), old2)
        self.assertNotIn("Archived", r.stderr)
        r = self.watcher("-d")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ganeti-rapi is not running, starting it", r.stderr)
        self.assertNotEqual(int(open(rapi_pid).read()), old)
        self.assertIn("Successfully talked to remote API", r.stderr)

    def test_state_file_locked_by_another_watcher(self):
        import fcntl
        uuid = self.group_uuid()
        path = self.data(self.cluster.master, f"watcher.{uuid}.data")
        with open(path, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            r = self.watcher("-d", "--node-group", uuid)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Can't acquire lock on state file", r.stderr)

    def test_debian_watcher_against_our_master(self):
        """What Ganeti 3.0's own watcher does against our master daemon (daemon-util
        replaced, and the WConfD probe too: we have no WConfD socket, masterd is both,
        and the real probe retries for minutes): it talks to our RAPI, archives jobs
        through our LUXI, spawns its group child, which queries the group's instances
        and nodes and writes the instance status files (no instances here); the parent
        exits 0."""
        if not os.path.exists(DEBIAN_WATCHER):
            self.skipTest("Debian's ganeti-watcher is not installed")
        ip = self.cluster.ips[0]
        # Ganeti's ensure-dirs creates LOCK_DIR; our nodes get it from our watcher's first run
        os.makedirs(os.path.join(self.cluster.root, "var/lock"), exist_ok=True)
        r = run(["/usr/bin/python3", "-c", DEBIAN_WATCHER_NO_DAEMONS, "-d", "--rapi-ip", ip],
                env=self.env, check=False, timeout=120)
        log = r.stderr
        self.assertEqual(r.returncode, 0, log)
        self.assertIn("daemon-util check-and-start ganeti-noded", log)
        self.assertIn("Reported RAPI version 2", log)
        self.assertIn("Archived 0 jobs", log)
        self.assertIn("Spawning child for group", log)
        self.assertIn("Updating instance status file", log)
        self.assertIn("with 0 instances", log)
