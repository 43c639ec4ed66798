"""node_verify and node_leave_cluster in memory: results, refusals, scheduled shutdown."""

import hashlib
import os

from twisted.internet.error import ReactorNotRunning
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, rpcdefs
from ganeti.noded import tap
from ganeti.noded.backend import cluster
from ganeti.noded.backend.context import inline_runner
from tests.noded.helpers import MemoryNode, node_paths

CLUSTER = "cluster.example.com"


def write(path, data="x", mode=0o600):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data)
    os.chmod(path, mode)


def sha1(data):
    return hashlib.sha1(data.encode()).hexdigest()


class RecordingRunner:
    """Runs blocking work inline and remembers which functions went through it."""

    def __init__(self):
        self.functions = []

    def __call__(self, f, *args):
        self.functions.append(f.__name__)
        return inline_runner(f, *args)


class VerifyTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.runner = RecordingRunner()
        self.node = MemoryNode(self.paths, run=self.runner)
        write(self.paths.ssconf_file("cluster_name"), CLUSTER + "\n", 0o444)
        write(self.paths.ssconf_file("master_node"), "node1.example.com\n", 0o444)
        write(self.paths.config_file, '{"cluster": {}}', 0o640)

    def verify(self, checks, cluster_name=CLUSTER):
        return self.node.put("node_verify", [checks, cluster_name])

    def test_all_checks(self):
        self.node.clock.advance(1700000000.25)
        status, (ok, result) = self.verify({
            "version": True, "hostname": True, "time": True, "ssconf": True,
            "filelist": ["/var/lib/ganeti/config.data", "/var/lib/ganeti/rapi.pem"]})
        self.assertEqual((status, ok), (200, True))
        self.assertEqual(result, {
            "version": [constants.PROTOCOL_VERSION, constants.RELEASE_VERSION],
            "hostname": "node1.example.com",
            "time": 1700000000.25,
            "ssconf": {"cluster_name": CLUSTER + "\n", "master_node": "node1.example.com\n"},
            "filelist": {"/var/lib/ganeti/config.data": sha1('{"cluster": {}}'),
                         "/var/lib/ganeti/rapi.pem": None},
        })
        # files are read and hashed through the thread runner, not in the reactor
        self.assertEqual(self.runner.functions, ["collect"])

    def test_only_what_is_asked(self):
        self.assertEqual(self.verify({}), (200, [True, {}]))
        self.assertEqual(self.verify({"version": False, "ssconf": False, "time": False}),
                         (200, [True, {}]))
        self.assertEqual(self.verify({"filelist": []}), (200, [True, {"filelist": {}}]))
        self.assertEqual(self.verify({"hostname": True}),
                         (200, [True, {"hostname": "node1.example.com"}]))

    def test_filelist_stays_under_the_node_root(self):
        # /etc/passwd exists on the machine, but not under this node's root
        self.assertTrue(os.path.exists("/etc/passwd"))
        write(os.path.join(self.paths.root, "etc/hosts"), "127.0.0.1 localhost\n")
        _, (ok, result) = self.verify({"filelist": ["/etc/passwd", "/etc/hosts"]})
        self.assertTrue(ok)
        self.assertEqual(result["filelist"], {"/etc/passwd": None,
                                              "/etc/hosts": sha1("127.0.0.1 localhost\n")})

    def test_filelist_non_regular_files_are_null(self):
        os.mkfifo(os.path.join(self.paths.data_dir, "fifo"))  # must not block the reader
        os.symlink("nowhere", os.path.join(self.paths.data_dir, "dangling"))
        names = ["/var/lib/ganeti/fifo", "/var/lib/ganeti/dangling", "/var/lib/ganeti/queue",
                 "/var/lib/ganeti/config.data/below"]
        _, (ok, result) = self.verify({"filelist": names})
        self.assertTrue(ok)
        self.assertEqual(result["filelist"], dict.fromkeys(names))

    def test_large_file_hash(self):
        data = "0123456789abcdef" * 200000  # several read chunks
        write(self.paths.hmac_key, data)
        _, (_, result) = self.verify({"filelist": ["/var/lib/ganeti/hmac.key"]})
        self.assertEqual(result["filelist"]["/var/lib/ganeti/hmac.key"], sha1(data))

    def test_other_cluster_refused(self):
        status, (ok, message) = self.verify({"version": True}, "other.example.com")
        self.assertEqual((status, ok), (200, False))
        self.assertIn("belongs to cluster 'cluster.example.com'", message)
        self.assertIn("'other.example.com'", message)

    def test_ssconf_keys_with_dashes(self):
        write(self.paths.ssconf_file("hvparams_xen-pvm"), "root_path=/dev/xvda1\n", 0o444)
        write(os.path.join(self.paths.data_dir, "ssconf_master_node.bak~"), "old\n")
        _, (ok, result) = self.verify({"ssconf": True})
        self.assertTrue(ok)
        self.assertEqual(sorted(result["ssconf"]),
                         ["cluster_name", "hvparams_xen-pvm", "master_node"])

    def test_no_cluster_name_file_accepts_any(self):
        os.unlink(self.paths.ssconf_file("cluster_name"))
        self.assertEqual(self.verify({"ssconf": True}, "whatever.example.com"),
                         (200, [True, {"ssconf": {"master_node": "node1.example.com\n"}}]))

    def test_ssconf_without_data_dir(self):
        paths = node_paths(self, "node2.example.com")
        os.rmdir(paths.queue_dir)
        os.rmdir(paths.data_dir)
        node = MemoryNode(paths)
        self.assertEqual(node.put("node_verify", [{"ssconf": True}, CLUSTER]),
                         (200, [True, {"ssconf": {}}]))

    def test_bad_arguments(self):
        cases = [
            [{"hvparams": True}, CLUSTER],          # unknown check
            [{"version": 1}, CLUSTER],              # not a flag
            [{"time": None}, CLUSTER],
            [{"filelist": "/var/lib/ganeti/config.data"}, CLUSTER],
            [{"filelist": ["var/lib/ganeti/config.data"]}, CLUSTER],   # relative
            [{"filelist": ["/var/lib/ganeti/../../../etc/shadow"]}, CLUSTER],
            [{"filelist": ["//etc/shadow"]}, CLUSTER],
            [{"filelist": ["/var/lib/ganeti/"]}, CLUSTER],
            [{"filelist": [3]}, CLUSTER],
            [["version"], CLUSTER],
        ]
        for args in cases:
            status, (ok, message) = self.node.put("node_verify", args)
            self.assertEqual((status, ok), (400, False), args)
            self.assertIn("argument checks must be an object with the optional keys", message)
        for name in ("", 5, None):
            status, (ok, message) = self.node.put("node_verify", [{}, name])
            self.assertEqual((status, ok), (400, False), name)
            self.assertIn("argument cluster_name", message)
        status, (ok, message) = self.node.put("node_verify", [{}])
        self.assertEqual((status, ok), (400, False))
        self.assertIn("takes 2 argument(s) (checks, cluster_name), 1 given", message)
        self.assertEqual(self.runner.functions, [])  # nothing ran

    def test_table_declaration(self):
        call = rpcdefs.get_call("node_verify")
        self.assertEqual([a.name for a in call.args], ["checks", "cluster_name"])
        self.assertEqual(set(rpcdefs.VERIFY_CHECKS),
                         {"version", "filelist", "hostname", "time", "ssconf", "nodesetup",
                          "client_cert", "hvinfo", "accepted_storage_paths", "userscripts",
                          "oob_paths", "file_storage_path", "shared_file_storage_path",
                          "node_net_test", "lvlist", "vglist", "file_storage_files"})
        self.assertEqual(rpcdefs.get_call("node_leave_cluster").args, ())


class LeaveTest(SynchronousTestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.stops = []
        self.node = MemoryNode(self.paths, shutdown=lambda: self.stops.append(True))
        p = self.paths
        self.cluster_files = [
            p.config_file, p.ssconf_file("cluster_name"), p.ssconf_file("hvparams_xen-pvm"),
            p.ssconf_file("master_node"),
            os.path.join(p.queue_dir, "job-1"), p.queue_serial,
            os.path.join(p.queue_archive_dir, "0", "job-0"),
            p.rapi_pem, p.rapi_users, p.hmac_key, p.cluster_domain_secret, p.known_hosts,
            p.ssh_pub_keys, p.server_pem]
        for path in self.cluster_files:
            write(path)
        self.kept = [p.queue_lock, os.path.join(p.conf_dir, "upload-allowed-files"),
                     os.path.join(p.data_dir, "ssconf_tmp.bak"), p.watcher_pause_file]
        for path in self.kept:
            write(path)

    def test_removes_cluster_files_and_schedules_stop(self):
        status, (ok, removed) = self.node.put("node_leave_cluster", [])
        self.assertEqual((status, ok), (200, True))
        self.assertEqual(removed, [
            "/var/lib/ganeti/config.data",
            "/var/lib/ganeti/ssconf_cluster_name",
            "/var/lib/ganeti/ssconf_hvparams_xen-pvm",
            "/var/lib/ganeti/ssconf_master_node",
            "/var/lib/ganeti/queue/archive",
            "/var/lib/ganeti/queue/job-1",
            "/var/lib/ganeti/queue/serial",
            "/var/lib/ganeti/rapi.pem",
            "/var/lib/ganeti/rapi/users",
            "/var/lib/ganeti/hmac.key",
            "/var/lib/ganeti/cluster-domain-secret",
            "/var/lib/ganeti/known_hosts",
            "/var/lib/ganeti/ganeti_pub_keys",
            "/var/lib/ganeti/server.pem",
        ])
        self.assertEqual([p for p in self.cluster_files if os.path.lexists(p)], [])
        self.assertEqual([p for p in self.kept if not os.path.exists(p)], [])
        self.assertEqual(os.listdir(self.paths.queue_dir), ["lock"])
        # the daemon stops after the reply, not before
        self.assertEqual(self.stops, [])
        self.node.clock.advance(cluster.SHUTDOWN_DELAY - 0.01)
        self.assertEqual(self.stops, [])
        self.node.clock.advance(0.01)
        self.assertEqual(self.stops, [True])

    def test_nothing_to_remove(self):
        paths = node_paths(self, "node2.example.com")
        stops = []
        node = MemoryNode(paths, shutdown=lambda: stops.append(True))
        self.assertEqual(node.put("node_leave_cluster", []), (200, [True, []]))
        node.clock.advance(cluster.SHUTDOWN_DELAY)
        self.assertEqual(stops, [True])

    def test_without_shutdown_action(self):
        node = MemoryNode(self.paths)
        status, (ok, removed) = node.put("node_leave_cluster", [])
        self.assertTrue(ok)
        self.assertEqual(len(removed), len(self.cluster_files))
        self.assertEqual(node.clock.getDelayedCalls(), [])

    def test_failure_keeps_server_pem_and_daemon(self):
        real_remove = cluster._remove

        def failing(path):
            if path == self.paths.hmac_key:
                raise PermissionError(13, "Permission denied")
            return real_remove(path)
        self.patch(cluster, "_remove", failing)
        status, (ok, message) = self.node.put("node_leave_cluster", [])
        self.assertEqual((status, ok), (200, False))
        self.assertIn("cannot remove /var/lib/ganeti/hmac.key: Permission denied", message)
        self.assertIn("server.pem kept", message)
        self.assertTrue(os.path.exists(self.paths.server_pem))
        self.assertTrue(os.path.exists(self.paths.hmac_key))
        self.assertFalse(os.path.exists(self.paths.config_file))
        self.assertEqual(self.node.clock.getDelayedCalls(), [])
        self.assertEqual(self.stops, [])

    def test_bad_arguments(self):
        for args in ([1], [None], {"a": 1}):
            status, (ok, _) = self.node.put("node_leave_cluster", args)
            self.assertEqual((status, ok), (400, False), args)
        self.assertTrue(all(os.path.exists(p) for p in self.cluster_files))
        self.assertEqual(self.node.clock.getDelayedCalls(), [])


class FakeReactor:
    def __init__(self):
        self.stopped = 0

    def callWhenRunning(self, f, *args):  # a running reactor calls at once
        f(*args)

    def stop(self):
        if self.stopped:
            raise ReactorNotRunning("Can't stop reactor that isn't running.")
        self.stopped += 1


class StopperTest(SynchronousTestCase):
    def test_stops_once_and_tolerates_a_stopping_reactor(self):
        reactor = FakeReactor()
        stop = tap.reactor_stopper(reactor)
        stop()
        stop()
        self.assertEqual(reactor.stopped, 1)
