"""gnt-cluster watcher pause|continue|info and LUXI SetWatcherPause, against an
in-process masterd whose node RPC reaches in-process node daemons."""

import os
import time

from ganeti.cli import gnt_cluster, gnt_cluster_watcher, gnt_node
from ganeti.core import errors
from ganeti.core import watcher as watchermod
from tests.fakes.clirun import MasterCliTestCase
from tests.fakes.masterd import START_TIME
from tests.fakes.nodes import master_with_nodes


class WatcherPauseTest(MasterCliTestCase):
    def setUp(self):
        self.master, self.net = master_with_nodes(self, 3)
        self.environ = self.master.paths.env()
        self.clients = []
        self.patch(gnt_cluster_watcher, "clock", self.master.reactor.seconds)
        for k in (2, 3):
            r = self.run_tool(gnt_node, "add", "--primary-ip", f"127.0.1.{k}", f"node{k}.test")
            self.assertEqual(r.code, 0, r.err)

    def cluster(self, *argv):
        return self.run_tool(gnt_cluster, *argv)

    def pause_files(self):
        out = {}
        for name in ("node1.test", "node2.test", "node3.test"):
            path = self.net.paths(name).watcher_pause_file
            out[name] = open(path).read() if os.path.exists(path) else None
        return out

    def test_info_when_not_paused(self):
        r = self.cluster("watcher", "info")
        self.assertEqual((r.code, r.out, r.err), (0, "The watcher is not paused.\n", ""))

    def test_pause_writes_the_file_on_master_and_candidates(self):
        r = self.cluster("watcher", "pause", "1h")
        until = START_TIME + 3600
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, f"The watcher is paused until {time.ctime(until)}.\n")
        self.assertEqual(self.pause_files(), {n: f"{int(until)}\n" for n in
                                              ("node1.test", "node2.test", "node3.test")})
        mode = os.stat(self.master.paths.watcher_pause_file).st_mode & 0o777
        self.assertEqual(mode, 0o644)
        r = self.cluster("watcher", "info")
        self.assertEqual(r.out, f"The watcher is paused until {time.ctime(until)}.\n")
        r = self.cluster("watcher", "continue")
        self.assertEqual((r.code, r.out), (0, "The watcher is no longer paused.\n"))
        self.assertEqual(set(self.pause_files().values()), {None})
        self.assertEqual(self.cluster("watcher", "info").out, "The watcher is not paused.\n")

    def test_a_non_candidate_gets_no_file(self):
        r = self.run_tool(gnt_node, "modify", "-C", "no", "--auto-promote", "node3.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.cluster("watcher", "pause", "30m").code, 0)
        files = self.pause_files()
        self.assertIsNone(files["node3.test"])
        self.assertEqual(files["node2.test"], f"{int(START_TIME) + 1800}\n")

    def test_a_candidate_that_is_down_does_not_stop_the_pause(self):
        self.net.down.add("node2.test")
        r = self.cluster("watcher", "pause", "60")
        self.assertEqual(r.code, 0, r.err)
        files = self.pause_files()
        self.assertEqual((files["node1.test"], files["node2.test"]),
                         (f"{int(START_TIME) + 60}\n", None))

    def test_usage_errors(self):
        r = self.cluster("watcher", "pause")
        self.assertEqual(r.code, 1)
        self.assertIn("Missing pause duration", r.err)
        self.assertIn("wrong_input", r.err)
        r = self.cluster("watcher", "pause", "xx")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid time specification 'xx'", r.err)
        r = self.cluster("watcher", "foo")
        self.assertEqual(r.code, 1)
        r = self.cluster("watcher")
        self.assertEqual(r.code, 1)
        self.assertEqual(set(self.pause_files().values()), {None})

    def test_luxi_answers_the_new_value_and_refuses_non_numbers(self):
        client = self.master.client()
        self.assertEqual(client.call("SetWatcherPause", START_TIME + 100.5), START_TIME + 100.5)
        self.assertEqual(client.query_config_values(["watcher_pause"]), [START_TIME + 100])
        for bad in ["x", True, [1]]:
            with self.assertRaises(errors.OpPrereqError):
                client.call("SetWatcherPause", bad)
        # refused: nothing changed
        self.assertEqual(self.pause_files()["node2.test"], f"{int(START_TIME) + 100}\n")
        self.assertIsNone(client.call("SetWatcherPause", None))
        self.assertEqual(set(self.pause_files().values()), {None})


class PauseFileTest(MasterCliTestCase):
    """The pause file as Ganeti's ReadWatcherPauseFile reads it."""

    def test_read_rules(self):
        path = os.path.join(self.mktemp() + "-pause")
        self.assertIsNone(watchermod.read_pause_file(path, 1000))
        watchermod.write_pause_file(path, 2000.7, durable=False)
        self.assertEqual(open(path).read(), "2000\n")
        self.assertEqual(watchermod.read_pause_file(path, 1000), 2000)
        self.assertIsNone(watchermod.read_pause_file(path, 2001))  # ended, kept
        self.assertTrue(os.path.exists(path))
        self.assertIsNone(watchermod.read_pause_file(path, 2000 + 3601))  # stale: removed
        self.assertFalse(os.path.exists(path))
        with open(path, "w") as f:
            f.write("garbage")
        self.assertIsNone(watchermod.read_pause_file(path, 1000))
        self.assertFalse(os.path.exists(path))
