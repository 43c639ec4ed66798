"""ganeti-confd for real on a 3-node virtual cluster: the confd daemons ganeti-vcluster
starts on every master candidate, a role change stopping and starting one (through the
node daemon), Ganeti's own Python confd client, our client and ganeti-confd-query, a
stopped candidate, and config changes."""

import json
import os
import subprocess
import sys
import time

from twisted.trial.unittest import SkipTest

from ganeti.cli import daemons
from ganeti.confd import client
from ganeti.core import constants
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, ROOT, VCLUSTER, run

PLUGIN = os.path.join(ROOT, "twisted", "plugins", "ganeti_confd.py")
DEBIAN_PYTHON = "/usr/bin/python3"
DEBIAN_GANETI = "/usr/share/ganeti/3.0"

#: Runs under Debian's python3 with Ganeti 3.0 on PYTHONPATH.  Reads
#: {"key_file", "peers", "port", "requests": [[type constant name, query], ...]}
#: on stdin and prints one [status, answer, serial, consistent] (or null) per request.
GANETI_CLIENT_SCRIPT = r"""
import json, sys
from ganeti import constants
from ganeti.confd import client as cc

spec = json.load(sys.stdin)
with open(spec["key_file"]) as f:
    key = f.read()  # the whole file as text, as Ganeti's utils.ReadFile gives it
store = cc.StoreResultCallback()
filt = cc.ConfdFilterCallback(store)
confd = cc.ConfdClient(key, spec["peers"], filt, port=spec["port"])
out = []
for name, query in spec["requests"]:
    req = cc.ConfdClientRequest(type=getattr(constants, "CONFD_REQ_" + name), query=query)
    confd.SendRequest(req, coverage=-1, async_=False)  # send now, then wait
    confd.WaitForReply(req.rsalt, timeout=10)
    ok, upcall = store.GetResponse(req.rsalt)
    if not ok:
        out.append(None)
        continue
    reply = upcall.server_reply
    out.append([reply.status, reply.answer, reply.serial, filt.consistent.get(req.rsalt, True)])
print(json.dumps(out))
"""


def wait_until(check, timeout):
    """Call ``check`` until it returns something true or ``timeout`` passes; each call
    blocks on the network, so this needs no sleeping."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value


def _plugin_missing():
    if not os.path.exists(PLUGIN):
        return "twisted/plugins/ganeti_confd.py (the confd server) is absent"
    return None


class ConfdClusterTest(ClusterCase):
    """One cluster for the classes of the module (each test leaves it as it found it);
    ``ganeti-vcluster start`` runs ganeti-confd on every master candidate (all three
    nodes), which each class checks first."""

    PREFIX = "ganeti-confd-"
    NODES = 3
    SHARED = "confd"
    REQUIRES = (_plugin_missing,)
    port = constants.DEFAULT_CONFD_PORT

    @classmethod
    def setUpCluster(cls):
        cls._make_all_candidates()
        for ip in cls.cluster.ips:
            if not wait_until(lambda ip=ip: cls.ask([ip], "ping", timeout=0.5).answered, 20):
                raise AssertionError(f"ganeti-confd on {ip} does not answer:\n"
                                     + cls.confd_logs())

    @classmethod
    def _make_all_candidates(cls):
        roles = cls.gnt("gnt-node", "list", "--no-headers", "-o", "name,role").stdout.split()
        if dict(zip(roles[::2], roles[1::2], strict=True)) == dict(
                zip(cls.cluster.nodes, ["M", "C", "C"], strict=True)):
            return
        cls.gnt("gnt-cluster", "modify", "--candidate-pool-size", "10")
        for node in cls.cluster.nodes[1:]:
            cls.gnt("gnt-node", "modify", "--master-candidate", "yes", node)

    @classmethod
    def gnt(cls, tool, *argv, check=True):
        return run([os.path.join(BIN, tool), *argv], env=cls.cluster.env, check=check)

    @classmethod
    def confd_state(cls, node):
        return daemons.state(cls.paths(node), constants.CONFD).state

    @classmethod
    def confd_logs(cls):
        parts = []
        for node in cls.cluster.nodes:
            path = cls.paths(node).log_file(constants.CONFD)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    parts.append(f"--- {node}\n" + "".join(f.readlines()[-15:]))
        return "\n".join(parts)

    @classmethod
    def paths(cls, node=None):
        node = node or cls.cluster.master
        return Paths.for_node(cls.cluster.node_root(node), node)

    @classmethod
    def key(cls):
        with open(cls.paths().hmac_key, "rb") as f:
            return f.read()

    @classmethod
    def ask(cls, peers, req_type, query=None, timeout=5.0, coverage=-1):
        return client.query_blocking(peers, cls.key(), req_type, query, port=cls.port,
                                     coverage=coverage, timeout=timeout)

    def cluster_config(self):
        with open(self.paths().config_file, encoding="utf-8") as f:
            return json.load(f)

    def ssconf(self, key):
        with open(self.paths().ssconf_file(key), encoding="utf-8") as f:
            return f.read().split()


class GanetiClientTest(ConfdClusterTest):
    def test_ganeti_python_client_gets_correct_answers(self):
        if not os.path.exists(os.path.join(DEBIAN_GANETI, "ganeti", "confd", "client.py")):
            raise SkipTest("Debian's ganeti-3.0 (Ganeti's Python confd client) is not installed")
        vc = self.cluster
        requests = [
            ["PING", None],
            ["NODE_ROLE_BYNAME", vc.nodes[0]],
            ["NODE_ROLE_BYNAME", vc.nodes[1]],
            ["NODE_PIP_BY_INSTANCE_IP", {"1": "198.51.100.77"}],
            ["CLUSTER_MASTER", None],
            ["CLUSTER_MASTER", {"3": ["0", "1", "2"]}],
            ["NODE_PIP_LIST", None],
            ["MC_PIP_LIST", None],
            ["INSTANCES_IPS_LIST", None],
            ["NODE_DRBD", vc.nodes[0]],
            ["INSTANCE_DISKS", "instance1.vcluster.test"],
            ["CONFIG_QUERY", "/cluster/cluster_name"],
            ["DATA_COLLECTORS", None],
        ]
        spec = {"key_file": self.paths().hmac_key, "peers": vc.ips, "port": self.port,
                "requests": requests}
        env = {k: v for k, v in os.environ.items() if not k.startswith("GANETI_")}
        env["PYTHONPATH"] = DEBIAN_GANETI
        proc = subprocess.run([DEBIAN_PYTHON, "-c", GANETI_CLIENT_SCRIPT],
                              input=json.dumps(spec), capture_output=True, text=True,
                              env=env, cwd="/", timeout=180, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        results = json.loads(proc.stdout)
        self.assertNotIn(None, results,
                         f"unanswered requests: {results}\n{self.confd_logs()}")
        config = self.cluster_config()
        serial = config["cluster"]["serial_no"]
        master_ip = self.ssconf("master_ip")[0]
        expected = [
            (0, config["version"], 0),
            (0, 0, serial),
            (0, 1, serial),
            (1, 0, None),  # UNKNOWN_ENTRY: no instance has that IP
            (0, vc.nodes[0], serial),
            (0, [vc.nodes[0], master_ip, vc.ips[0]], serial),
            (0, sorted(vc.ips), serial),
            (0, sorted(vc.ips), serial),
            (0, [], serial),
            (0, [], None),  # node serial
            (1, 0, None),  # UNKNOWN_ENTRY, no such instance
            (0, "cluster.vcluster.test", serial),
            (0, "dict", serial),
        ]
        for (name, query), got, (status, answer, want_serial) in zip(
                requests, results, expected, strict=True):
            what = f"{name} {query!r}: {got}"
            got_status, got_answer, got_serial, consistent = got
            self.assertEqual(got_status, status, what)
            self.assertTrue(consistent, what)
            if name in ("NODE_PIP_LIST", "MC_PIP_LIST"):
                got_answer = sorted(got_answer)
            if answer == "dict":
                self.assertIsInstance(got_answer, dict, what)
                self.assertTrue(all(set(v) == {"active", "interval"}
                                    for v in got_answer.values()), what)
            else:
                self.assertEqual(got_answer, answer, what)
            if want_serial is not None:
                self.assertEqual(got_serial, want_serial, what)
        self.assertEqual(results[0][2], 0)  # PING is serial 0


class OurClientTest(ConfdClusterTest):
    def test_cli_against_the_cluster(self):
        env = dict(os.environ)
        env.update(self.cluster.env)
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "bin", "ganeti-confd-query"), "--port",
             str(self.port), "--json", "cluster-master"],
            env=env, capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr + self.confd_logs())
        data = json.loads(proc.stdout)
        self.assertEqual((data["status"], data["answer"], data["consistent"]),
                         (0, self.cluster.master, True))
        self.assertEqual(data["serial"], self.cluster_config()["cluster"]["serial_no"])
        self.assertGreaterEqual(len(data["servers"]), 2)

    def test_answers_with_one_candidate_stopped(self):
        node3 = self.cluster.nodes[2]
        self.assertTrue(daemons.stop(self.paths(node3), constants.CONFD))
        try:
            r = client.query_node(self.paths(), "node-role", self.cluster.nodes[1], port=self.port,
                                  coverage=-1, timeout=5)
            self.assertEqual((r.status, r.answer, r.timed_out), (0, 1, False))
            self.assertNotIn(self.cluster.ips[2], r.servers)
            self.assertEqual(len(r.servers), 2)  # 3 asked: 2 replies are enough
        finally:
            run([VCLUSTER, "start", self.cluster.dir], timeout=60)  # starts what is missing
            self.assertTrue(wait_until(
                lambda: self.ask([self.cluster.ips[2]], "ping", timeout=0.5).answered, 20))

    def test_config_change_reaches_every_candidate_within_a_second(self):
        before = self.cluster_config()["cluster"]["serial_no"]
        self.gnt("gnt-cluster", "add-tags", f"confd-test-{before}")
        changed = time.monotonic()
        serial = self.cluster_config()["cluster"]["serial_no"]
        self.assertGreater(serial, before)

        def all_new():
            return all(self.ask([ip], "config-query", "/cluster/serial_no",
                                timeout=0.5).serial == serial for ip in self.cluster.ips)

        self.assertTrue(wait_until(all_new, 1.0 - (time.monotonic() - changed)),
                        f"not every candidate answers with serial {serial}")
        tags = self.ask(self.cluster.ips, "config-query", "/cluster/tags")
        self.assertIn(f"confd-test-{before}", tags.answer)
        self.assertTrue(tags.consistent)


class RoleChangeTest(ConfdClusterTest):
    """A role change starts or stops confd through the node daemon (--manage-confd)."""

    def status(self):
        proc = run([VCLUSTER, "status", self.cluster.dir], check=False)
        return proc.returncode, {(r[0], r[2]): " ".join(r[4:]) for r in
                                 (line.split() for line in proc.stdout.splitlines()[1:])}

    def test_vcluster_runs_confd_on_every_candidate_and_status_shows_it(self):
        code, rows = self.status()
        self.assertEqual(code, 0)
        for node in self.cluster.nodes:
            self.assertEqual(rows[(node, constants.CONFD)], "running")
            self.assertEqual(self.confd_state(node), daemons.RUNNING)

    def test_demotion_stops_confd_and_promotion_starts_it(self):
        node3, ip3 = self.cluster.nodes[2], self.cluster.ips[2]
        old_pid = daemons.state(self.paths(node3), constants.CONFD).pid
        self.gnt("gnt-node", "modify", "--master-candidate", "no", "--auto-promote", node3)
        try:
            self.assertTrue(wait_until(
                lambda: self.confd_state(node3) == daemons.STOPPED, 20), self.confd_logs())
            self.assertFalse(self.ask([ip3], "ping", timeout=0.5).answered)
            code, rows = self.status()
            self.assertEqual(code, 0)  # confd should not run there: nothing is missing
            self.assertEqual(rows[(node3, constants.CONFD)], "stopped (not a candidate)")
            with open(self.paths(node3).log_file(constants.NODED), encoding="utf-8") as f:
                self.assertIn("Role change: stopped ganeti-confd", f.read())
            # the candidates' confd no longer lists node3's IP
            r = self.ask(self.cluster.ips[:2], "mc-pip-list")
            self.assertEqual(sorted(r.answer), sorted(self.cluster.ips[:2]))
        finally:
            self.gnt("gnt-node", "modify", "--master-candidate", "yes", node3)
        self.assertTrue(wait_until(
            lambda: self.ask([ip3], "node-role", node3, timeout=0.5).answer == 1, 30),
            self.confd_logs())
        self.assertNotEqual(daemons.state(self.paths(node3), constants.CONFD).pid, old_pid)
        self.assertEqual(self.status()[0], 0)
