"""ganeti-masterd for real: twistd, a virtual cluster, LUXI over its UNIX socket."""

import json
import os
import shutil
import stat

from ganeti.core import constants
from ganeti.luxi import wire
from ganeti.luxi.client import LuxiClient
from tests.integration.clustercase import ClusterCase, needs_files
from tests.integration.helpers import (
    BIN,
    DEBIAN_GNT_CLUSTER,
    VCLUSTER,
    free_ip_base,
    node_env,
    raw_luxi,
    run,
)


class _OneNodeCase(ClusterCase):
    """One virtual cluster for the class (starting twistd takes a second): ``cls.tmp``,
    ``cls.dir``, and ``cls.socket`` (the master's LUXI socket) at hand."""

    @classmethod
    def setUpCluster(cls):
        cls.tmp, cls.dir, cls.socket = cls.cluster.tmp, cls.cluster.dir, cls.cluster.socket


class MasterdTest(_OneNodeCase):
    """One virtual cluster for the whole class (starting twistd takes a second)."""

    PREFIX = "ganeti-it-"

    def gnt(self, *argv):
        return run([os.path.join(BIN, "gnt-cluster"), *argv], env=self.env, check=False)

    def test_twistd_lists_the_plugin(self):
        out = run([os.path.join(BIN, "twistd"), "--help"]).stdout
        self.assertIn("ganeti-masterd", out)

    def test_gnt_cluster_commands(self):
        r = self.gnt("getmaster")
        self.assertEqual((r.returncode, r.stdout), (0, "node1.vcluster.test\n"), r.stderr)
        r = self.gnt("version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"Configuration format: {constants.CONFIG_VERSION}", r.stdout)
        r = self.gnt("info")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Cluster name: cluster.vcluster.test", r.stdout)
        self.assertIn("Master node: node1.vcluster.test", r.stdout)
        r = self.gnt("list-tags")
        self.assertEqual((r.returncode, r.stdout), (0, ""))

    def test_env_lines_point_tools_at_the_cluster(self):
        lines = run([VCLUSTER, "env", self.dir]).stdout
        script = lines + "\ngnt-cluster getmaster\n"
        r = run(["bash", "-c", script])
        self.assertEqual(r.stdout, "node1.vcluster.test\n")

    def test_socket_mode(self):
        self.assertEqual(stat.S_IMODE(os.stat(self.socket).st_mode), 0o660)

    def test_several_requests_on_one_connection(self):
        with LuxiClient(self.socket) as c:
            self.assertEqual(c.query_config_values(["cluster_name"]), ["cluster.vcluster.test"])
            self.assertEqual(c.query_tags("cluster", ""), [])
            self.assertEqual(c.query_cluster_info()["master"], "node1.vcluster.test")

    def test_bad_input_gets_errors_and_daemon_keeps_serving(self):
        cases = [
            (b"{this is not json\x03", str),
            (b'{"method": "NoSuchMethod", "args": []}\x03', str),
            # wrong argument shapes: luxid's plain-text parse failure
            (b'{"method": "QueryTags", "args": ["cluster"]}\x03', str),
            (b'{"method": "QueryConfigValues", "args": [42]}\x03', str),
            (b'{"args": []}\x03', str),
            (b"\xff\xfe\x03", str),
        ]
        for payload, kind in cases:
            data, closed = raw_luxi(self.socket, payload)
            resp = json.loads(data.split(b"\x03")[0])
            self.assertFalse(resp["success"], payload)
            self.assertIsInstance(resp["result"], kind, payload)
            self.assertFalse(closed, payload)
        # an oversized frame gets an error and the connection is closed
        data, closed = raw_luxi(self.socket, b"[" * (constants.LUXI_MAX_FRAME + 10),
                                until_eof=True)
        self.assertIn(b"exceeds the limit", data)
        self.assertTrue(closed)
        # ... and the daemon still answers
        with LuxiClient(self.socket) as c:
            self.assertEqual(c.query_config_values(["master_node"]), ["node1.vcluster.test"])

    def test_pipelined_raw_requests(self):
        payload = b"".join(wire.encode_request("QueryConfigValues", [[f]])
                           for f in ("cluster_name", "master_node", "drain_flag"))
        data, _ = raw_luxi(self.socket, payload)
        results = [json.loads(f)["result"] for f in data.split(b"\x03") if f]
        self.assertEqual(results, [["cluster.vcluster.test"], ["node1.vcluster.test"], [False]])

    def test_start_again_is_a_no_op(self):
        out = run([VCLUSTER, "start", self.dir]).stdout
        self.assertIn("already running", out)
        self.assertIn("running", run([VCLUSTER, "status", self.dir]).stdout)

    def test_masterd_refuses_to_start_off_the_master(self):
        # node2 holds a copy of the config in which node1 is the master
        node2 = os.path.join(self.tmp, "other", "node2.vcluster.test")
        data_dir = os.path.join(node2, "var/lib/ganeti")
        os.makedirs(data_dir)
        shutil.copy(os.path.join(self.env["GANETI_ROOTDIR"], "var/lib/ganeti/config.data"),
                    data_dir)
        env = {"GANETI_ROOTDIR": node2, "GANETI_HOSTNAME": "node2.vcluster.test"}
        r = run([os.path.join(BIN, "twistd"), "-n", "ganeti-masterd"], env=env, check=False,
                timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not the master", r.stderr + r.stdout)
        self.assertIn("node1.vcluster.test", r.stderr + r.stdout)
        self.assertFalse(os.path.exists(os.path.join(node2, "var/run/ganeti/socket")))

    def test_masterd_refuses_to_start_uninitialised(self):
        node3 = os.path.join(self.tmp, "empty", "node3.vcluster.test")
        os.makedirs(node3)
        env = {"GANETI_ROOTDIR": node3, "GANETI_HOSTNAME": "node3.vcluster.test"}
        r = run([os.path.join(BIN, "twistd"), "-n", "ganeti-masterd"], env=env, check=False,
                timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("gnt-cluster init", r.stderr + r.stdout)


class DebianClientTest(_OneNodeCase):
    """Real Ganeti 3.0 clients (Debian's packages, installed by `make test`) against us."""

    PREFIX = "ganeti-compat-"
    REQUIRES = (needs_files(DEBIAN_GNT_CLUSTER),)

    def real(self, *argv):
        env = node_env(self.dir)
        env["PYTHONHASHSEED"] = "0"
        return run([DEBIAN_GNT_CLUSTER, *argv], env=env, check=False, timeout=60)

    def test_version(self):
        r = self.real("version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Software version: 3.0.2\n", r.stdout)
        self.assertIn("Internode protocol: 3000000\n", r.stdout)
        self.assertIn("Configuration format: 3000000\n", r.stdout)

    def test_info(self):
        r = self.real("info")
        self.assertEqual(r.returncode, 0, r.stderr)
        for needle in ("Cluster name: cluster.vcluster.test", "Master node: node1.vcluster.test",
                       "Default hypervisor: fake", "candidate pool size: 10",
                       "vcpu-ratio: 4\n", "allowed disk templates: file, diskless"):
            self.assertIn(needle, r.stdout)

    def test_getmaster_and_tags(self):
        r = self.real("getmaster")
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "node1.vcluster.test"), r.stderr)
        r = self.real("list-tags")
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)

    def test_queue_and_watcher_info(self):
        r = self.real("queue", "info")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("The drain flag is unset", r.stdout)
        r = self.real("watcher", "info")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("The watcher is not paused", r.stdout)


class DemoTest(ClusterCase):
    """What `make demo` runs: the first run creates, starts and demonstrates; the second
    finds the cluster running and leaves it alone."""

    CLUSTER = False  # the demo command makes it: that is what is tested

    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="ganeti-demo-")
        self.dir = os.path.join(self.tmp, "demo")
        self.ip_base = free_ip_base(3)

    def tearDown(self):
        run([VCLUSTER, "destroy", self.dir], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_demo_twice(self):
        first = run([VCLUSTER, "demo", self.dir, "--ip-base", self.ip_base]).stdout
        self.assertIn("Started ganeti-masterd@node1.vcluster.test", first)
        self.assertIn("$ gnt-cluster getmaster\n  node1.vcluster.test\n", first)
        self.assertIn("Cluster name: cluster.vcluster.test", first)
        self.assertIn("export GANETI_HOSTNAME=node1.vcluster.test", first)
        self.assertIn(f"destroy {self.dir}", first)
        pid_file = os.path.join(self.dir, "node1.vcluster.test/var/run/ganeti/ganeti-masterd.pid")
        with open(pid_file) as f:
            pid = f.read()
        second = run([VCLUSTER, "demo", self.dir, "--ip-base", self.ip_base]).stdout
        self.assertIn("already running; leaving it as it is", second)
        self.assertNotIn("Started", second)
        self.assertIn("export GANETI_ROOTDIR=", second)
        with open(pid_file) as f:
            self.assertEqual(f.read(), pid)  # the same daemon still runs
        # stopped clusters are started again by the demo
        run([VCLUSTER, "stop", self.dir])
        third = run([VCLUSTER, "demo", self.dir, "--ip-base", self.ip_base]).stdout
        self.assertIn("Started ganeti-masterd", third)


class EventStreamTest(_OneNodeCase):
    """SubscribeEvents over the real socket (events themselves come with the job queue)."""

    PREFIX = "ganeti-ev-"

    def test_subscribe_answers_with_the_stream_position(self):
        payload = wire.encode_request("SubscribeEvents", [None])
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(self.socket)
        try:
            s.sendall(payload)
            data = b""
            while not data.endswith(b"\x03"):
                data += s.recv(65536)
            reply = json.loads(data.split(b"\x03")[0])
            self.assertTrue(reply["success"])
            self.assertLessEqual(reply["result"]["oldest_serial"],
                                 reply["result"]["last_serial"] + 1)
        finally:
            s.close()
        with LuxiClient(self.socket) as c:  # the daemon is fine afterwards
            self.assertEqual(c.query_config_values(["master_node"]), ["node1.vcluster.test"])
