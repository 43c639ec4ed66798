"""A namespaced virtual cluster for real (root and iproute2 required, else skipped):
``ganeti-vcluster create --namespaces`` builds the switch, node and client namespaces,
``start`` runs each node's daemons (and libvirtd, when installed) inside its own
namespace on its 10.x address, nodes reach and resolve each other, and ``destroy``
leaves no namespace, process or mount behind.  No guest boots here."""

import json
import os
import shutil
import subprocess
import tempfile

from ganeti.cli import daemons, netns, vcluster_ns
from ganeti.core import constants
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import VCLUSTER, run

REASON = vcluster_ns.unavailable_reason()


def busybox():
    return shutil.which("busybox")


def _impossible():
    return f"namespaced cluster impossible here: {REASON}" if REASON else None


class NamespacedClusterTest(ClusterCase):
    """One 3-node namespaced cluster for the class, destroyed whatever happens."""

    PREFIX = "ganeti-netns-"
    NODES = 3
    NAMESPACES = True
    START_TIMEOUT = 120
    REQUIRES = (_impossible,)

    @classmethod
    def setUpCluster(cls):
        cls.tmp, cls.dir = cls.cluster.tmp, cls.cluster.dir
        cls.created, cls.started = cls.cluster.created, cls.cluster.started
        cls.state = cls.cluster.state
        cls.plan = netns.NetPlan.from_dict(cls.state["netns"])

    def exec_in(self, *argv, check=True):
        return run([VCLUSTER, "exec", self.dir, *argv], check=check, timeout=60)

    def paths(self, k):
        node = self.state["nodes"][k - 1]
        return Paths.for_node(node["root"], node["name"])

    def test_namespaces_and_addresses(self):
        for ns in self.plan.namespaces():
            self.assertTrue(os.path.exists(os.path.join(netns.NETNS_DIR, ns)), ns)
        self.assertEqual([n["ip"] for n in self.state["nodes"]],
                         [self.plan.node_ip(k) for k in (1, 2, 3)])
        self.assertTrue(self.plan.subnet.startswith("10."))
        out = subprocess.run(["ip", "-n", self.plan.node_ns(2), "-o", "-4", "address", "show",
                              "dev", "br0"], capture_output=True, text=True, check=True).stdout
        self.assertIn(f"{self.plan.node_ip(2)}/24", out)

    def test_daemons_listen_on_the_node_addresses_inside_the_namespaces(self):
        for k in (1, 2, 3):
            paths, ip = self.paths(k), self.plan.node_ip(k)
            pid = daemons.read_pid(paths.pid_file(constants.NODED))
            self.assertTrue(daemons.pid_listens_on(pid, ip, constants.DEFAULT_NODED_PORT))
            confd = daemons.read_pid(paths.pid_file(constants.CONFD))
            net = os.readlink(f"/proc/{pid}/ns/net")
            self.assertEqual(os.readlink(f"/proc/{confd}/ns/net"), net)
            self.assertNotEqual(os.readlink("/proc/self/ns/net"), net)
            self.assertTrue(daemons.pid_listens_on(confd, ip, constants.DEFAULT_CONFD_PORT,
                                                   udp=True))
        # ganeti-rapi on every address of the master's namespace: the node's and the
        # master IP
        rapi = daemons.read_pid(self.paths(1).pid_file(constants.RAPI))
        self.assertTrue(daemons.pid_listens_on(rapi, "0.0.0.0", constants.DEFAULT_RAPI_PORT))

    def test_rapi_from_the_client_namespace(self):
        if not shutil.which("curl"):
            self.skipTest("curl not installed")
        for ip in (self.plan.node_ip(1), self.plan.master_ip):
            def answers(ip=ip):
                r = self.exec_in("--client", "--", "curl", "-sk", "-o", "/dev/null", "-w",
                                 "%{http_code}", f"https://{ip}:5080/2/info", check=False)
                return r.stdout == "200"
            # the master IP comes up when masterd activates it, just after it starts
            self.assertTrue(daemons.wait_for(answers, 15.0, interval=0.5), ip)

    def test_nodes_reach_and_resolve_each_other(self):
        out = self.exec_in("--node", "node1", "--", "getent", "hosts", "node3.vcluster.test",
                           "cluster.vcluster.test").stdout
        self.assertIn(f"{self.plan.node_ip(3)}", out)
        self.assertIn(f"{self.plan.master_ip}", out)
        if not busybox():
            self.skipTest("busybox (for ping) not installed")
        self.exec_in("--node", "node2", "--", "busybox", "ping", "-c", "1", "-W", "5",
                     "node3.vcluster.test")
        self.exec_in("--client", "--", "busybox", "ping", "-c", "1", "-W", "5",
                     self.plan.node_ip(1))

    def test_status(self):
        out = run([VCLUSTER, "status", self.dir]).stdout
        self.assertIn(f"node2.vcluster.test          {self.plan.node_ip(2)}", out)
        if self.state.get("libvirt"):
            self.assertEqual(out.count(" libvirtd "), 3)

    def test_gnt_tools_in_the_master_namespace(self):
        out = self.exec_in("--", "gnt-node", "list", "--no-headers", "-o", "name,pip").stdout
        self.assertEqual(len(out.splitlines()), 3)
        self.assertIn(self.plan.node_ip(2), out)

    def test_libvirtd_per_node(self):
        if not self.state.get("libvirt"):
            self.skipTest(f"libvirt not installed: {', '.join(vcluster_ns.libvirt_missing())}")
        for k in (1, 2, 3):
            root = self.state["nodes"][k - 1]["root"]
            self.assertTrue(vcluster_ns.libvirt_running(root))
            proc = subprocess.run(["virsh", "-c", vcluster_ns.libvirt_uri(root), "uri"],
                                  capture_output=True, text=True, check=False, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            noded = daemons.read_pid(self.paths(k).pid_file(constants.NODED))
            with open(f"/proc/{noded}/environ", "rb") as f:
                env = f.read().split(b"\0")
            self.assertIn(f"GANETI_LIBVIRT_URI={vcluster_ns.libvirt_uri(root)}".encode(), env)


class DestroyLeavesNothingTest(ClusterCase):
    CLUSTER = False  # destroy is what is tested: the test runs the commands itself
    REQUIRES = (_impossible,)

    def test_destroy(self):
        tmp = tempfile.mkdtemp(prefix="ganeti-netns-")
        self.addCleanup(shutil.rmtree, tmp, True)
        directory = os.path.join(tmp, "vc")
        try:
            run([VCLUSTER, "create", directory, "--namespaces"], timeout=300)
            run([VCLUSTER, "start", directory], timeout=120)
            with open(os.path.join(directory, "vcluster.json")) as f:
                plan = netns.NetPlan.from_dict(json.load(f)["netns"])
            pids = [pid for ns in plan.namespaces() for pid in netns.pids_in(ns)]
            self.assertTrue(pids)
        finally:
            run([VCLUSTER, "destroy", directory], check=False, timeout=120)
        self.assertEqual(netns.existing(plan), [])
        self.assertEqual([p for p in pids if daemons.pid_alive(p)], [])
        with open("/proc/self/mounts") as f:
            self.assertNotIn(tmp, f.read())
        self.assertFalse(os.path.exists(directory))
