"""ganeti-vcluster: arguments, node preparation, daemon order and node joining against a fake
daemons module and a scripted master; the pure helpers of ganeti.cli.daemons.

Starting real daemons is the integration tests' business (tests/integration).
"""

import io
import json
import os
import socket
import ssl
import subprocess
import sys

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import (
    daemons,
    vcluster,
    vcluster_demo,
    vcluster_lvm,
    vcluster_nodes,
    vcluster_tool,
)
from ganeti.cli.framework import build_parser
from ganeti.core import config as configmod
from ganeti.core import constants, errors
from ganeti.core.paths import Paths
from ganeti.luxi.methods import METHODS

NODED, MASTERD, RAPI = constants.NODED, constants.MASTERD, constants.RAPI
CONFD = constants.CONFD


class FakeDaemons:
    """Stands in for ganeti.cli.daemons: records starts and stops, runs nothing.

    The pure parts (the daemon lists and the start/stop order) are the real ones.
    """

    RUNNING, STOPPED = daemons.RUNNING, daemons.STOPPED
    NODE_DAEMONS, MASTER_DAEMONS = daemons.NODE_DAEMONS, daemons.MASTER_DAEMONS
    CANDIDATE_DAEMONS = daemons.CANDIDATE_DAEMONS
    AddressInUse = daemons.AddressInUse
    DaemonState = daemons.DaemonState
    daemons_of = staticmethod(daemons.daemons_of)
    start_order = staticmethod(daemons.start_order)
    stop_order = staticmethod(daemons.stop_order)

    def __init__(self):
        self.running = {}  # (host, daemon) -> pid
        self.events = []  # ("start"|"stop", host, daemon)
        self.checked = []  # addresses given to check_address_free
        self.taken = set()  # addresses check_address_free refuses
        self.fail_start = {}  # (host, daemon) -> exception start_on_node raises
        self.next_pid = 100

    def state(self, paths, daemon):
        pid = self.running.get((paths.hostname, daemon))
        return daemons.DaemonState(daemon, pid, daemons.RUNNING if pid else daemons.STOPPED)

    def start_on_node(self, paths, daemon, ip, port=constants.DEFAULT_NODED_PORT, timeout=0):
        key = (paths.hostname, daemon)
        if key in self.fail_start:
            raise self.fail_start[key]
        self.events.append(("start", paths.hostname, daemon))
        self.next_pid += 1
        self.running[key] = self.next_pid
        return self.next_pid

    def stop(self, paths, daemon, timeout=30.0):
        if self.running.pop((paths.hostname, daemon), None) is None:
            return False
        self.events.append(("stop", paths.hostname, daemon))
        return True

    def check_address_free(self, ip, port, udp=False):
        self.checked.append((ip, port))
        if ip in self.taken:
            raise daemons.AddressInUse(f"{ip}:{port} is already in use by another process",
                                       ip, port)

    def wait_for(self, check, timeout, interval=0.05):
        return check()

    def log_size(self, path):
        return 0

    def wait_answering(self, paths, daemon, answers, log_offset, timeout=0):
        if not answers():
            raise errors.CommandError(f"{daemon} on {paths.hostname} did not answer")


class JobMaster:
    """A master that runs every submitted job at once: success, or the error the test sets
    for a node name.  Arguments are checked against the LUXI method table."""

    def __init__(self):
        self.ops = []
        self.fail = {}  # node name -> encoded error
        self.jobs = {}  # id -> (status, opstatus, opresult, log)
        self.closed = 0

    def call(self, method, *args):
        METHODS[method].check_args(list(args))
        if method == "SubmitJob":
            (op,) = args[0]
            self.ops.append(op)
            jid = len(self.jobs) + 1
            log = [[1, [0, 0], "message", f"adding {op['node_name']}"]]
            error = self.fail.get(op["node_name"])
            if error is None:
                self.jobs[jid] = ("success", ["success"], [None], log)
            else:
                self.jobs[jid] = ("error", ["error"], [error], log)
            return jid
        if method == "WaitForJobChange":
            jid, _fields, prev_info, prev_serial, _timeout = args
            status, _, _, log = self.jobs[jid]
            new = [e for e in log if prev_serial is None or e[0] > prev_serial]
            return [[status], new]
        if method == "QueryJobs":
            (jid,) = args[0]
            status, opstatus, opresult, _ = self.jobs[jid]
            return [[status, opstatus, opresult]]
        raise AssertionError(f"unexpected call {method}")

    def close(self):
        self.closed += 1


@pytest.mark.subprocess
class VClusterTest(SynchronousTestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        self.fake = FakeDaemons()
        self.patch(vcluster, "daemons", self.fake)
        self.patch(vcluster, "_answers", lambda paths: True)
        # volume groups (as root): tests/cli/test_vcluster_lvm.py
        self.patch(vcluster_lvm, "unavailable_reason", lambda: "not in unit tests")
        self.master = JobMaster()
        self.luxi_paths = []

    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()

        def factory(paths):
            self.luxi_paths.append(paths)
            return self.master

        code = vcluster_tool.main(list(argv), stdout=out, stderr=err, environ={},
                             luxi_factory=factory)
        return code, out.getvalue(), err.getvalue()

    def create3(self, *extra):
        return self.run_cli("create", self.dir, "--nodes", "3", "--domain", "x.test",
                            "--ip-base", "127.0.9.", "--name", "vc.x.test", *extra)

    def test_create_three_nodes(self):
        code, out, err = self.create3()
        self.assertEqual(code, 0, err)
        with open(os.path.join(self.dir, "vcluster.json")) as f:
            state = json.load(f)
        self.assertEqual([n["name"] for n in state["nodes"]],
                         ["node1.x.test", "node2.x.test", "node3.x.test"])
        self.assertEqual([n["ip"] for n in state["nodes"]],
                         ["127.0.9.1", "127.0.9.2", "127.0.9.3"])
        root1 = os.path.join(self.dir, "node1.x.test")
        cfg = configmod.load_file(os.path.join(root1, "var/lib/ganeti/config.data"))
        self.assertEqual(cfg.cluster.cluster_name, "vc.x.test")
        self.assertEqual(cfg.master.name, "node1.x.test")
        self.assertEqual(cfg.master.primary_ip, "127.0.9.1")
        self.assertEqual(cfg.cluster.enabled_hypervisors, [constants.HT_FAKE])
        self.assertEqual(os.stat(os.path.join(self.dir, "rapi-credentials")).st_mode & 0o777,
                         0o600)

    def test_create_prepares_the_other_nodes(self):
        self.assertEqual(self.create3()[0], 0)
        with open(os.path.join(self.dir, "node1.x.test/var/lib/ganeti/server.pem"), "rb") as f:
            pem = f.read()
        for name in ("node2.x.test", "node3.x.test"):
            paths = Paths.for_node(os.path.join(self.dir, name), name)
            with open(paths.server_pem, "rb") as f:
                self.assertEqual(f.read(), pem, name)
            self.assertEqual(os.stat(paths.server_pem).st_mode & 0o777, 0o600)
            for d in (paths.data_dir, paths.run_dir, paths.log_dir, paths.queue_dir):
                self.assertTrue(os.path.isdir(d), d)
            # the node is not initialised by us: the master pushes config and ssconf
            self.assertFalse(os.path.exists(paths.config_file))

    def test_create_adds_nodes_through_the_master_and_stops_again(self):
        code, out, err = self.create3()
        self.assertEqual(code, 0, err)
        starts = [(h, d) for ev, h, d in self.fake.events if ev == "start"]
        stops = [(h, d) for ev, h, d in self.fake.events if ev == "stop"]
        # the config has only the master as a candidate while the nodes join
        self.assertEqual(starts, [("node1.x.test", NODED), ("node2.x.test", NODED),
                                  ("node3.x.test", NODED), ("node1.x.test", CONFD),
                                  ("node1.x.test", MASTERD), ("node1.x.test", RAPI)])
        self.assertEqual(stops, [("node1.x.test", RAPI), ("node1.x.test", MASTERD),
                                 ("node3.x.test", NODED), ("node2.x.test", NODED),
                                 ("node1.x.test", NODED), ("node1.x.test", CONFD)])
        self.assertEqual(self.fake.running, {})
        # all addresses were checked before anything was created (RAPI: the master's)
        self.assertEqual(self.fake.checked, [("127.0.9.1", 1811), ("127.0.9.1", 5080),
                                             ("127.0.9.2", 1811), ("127.0.9.3", 1811)])
        self.assertEqual([(op["OP_ID"], op["node_name"], op["primary_ip"], op["readd"])
                          for op in self.master.ops],
                         [("OP_NODE_ADD", "node2.x.test", "127.0.9.2", False),
                          ("OP_NODE_ADD", "node3.x.test", "127.0.9.3", False)])
        self.assertEqual(self.master.ops[0]["reason"][-1][:2],
                         ["gnt:client:ganeti-vcluster", "create"])
        self.assertEqual({p.hostname for p in self.luxi_paths}, {"node1.x.test"})
        self.assertEqual(self.master.closed, 2)
        self.assertIn("Started ganeti-noded@node2.x.test\n", out)
        self.assertIn("Adding node2.x.test (127.0.9.2): job 1\n    adding node2.x.test\n"
                      "  node2.x.test joined the cluster\n", out)
        self.assertIn("Adding node3.x.test (127.0.9.3): job 2\n", out)
        self.assertIn("All 3 nodes are in the cluster.", out)
        self.assertIn("daemons are stopped again", out)

    def test_create_with_start_leaves_the_daemons_running(self):
        code, out, err = self.create3("--start")
        self.assertEqual(code, 0, err)
        self.assertEqual([e for e in self.fake.events if e[0] == "stop"], [])
        self.assertEqual(set(self.fake.running), {
            ("node1.x.test", NODED), ("node2.x.test", NODED), ("node3.x.test", NODED),
            ("node1.x.test", CONFD), ("node1.x.test", MASTERD), ("node1.x.test", RAPI)}
            | {(n, CONFD) for n in ("node2.x.test", "node3.x.test")
               if (n, CONFD) in self.fake.running})
        self.assertIn("All 3 nodes are in the cluster.", out)
        self.assertNotIn("daemons are stopped again", out)

    def test_create_one_node_starts_nothing(self):
        code, out, err = self.run_cli("create", self.dir)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.fake.events, [])
        self.assertEqual(self.fake.checked, [])
        self.assertEqual(self.master.ops, [])

    def test_failed_node_add_is_reported_and_stops_everything(self):
        self.master.fail["node3.x.test"] = ["OpPrereqError",
                                            ["node3 does not answer", "environment_error"]]
        code, out, err = self.create3()
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("node2.x.test joined the cluster", out)
        self.assertIn("Adding node3.x.test failed (job 2): Failure: prerequisites not met for "
                      "this operation: node3 does not answer (error type: environment_error)",
                      err)
        self.assertIn("node3.x.test/var/log/ganeti/node-daemon.log", err)
        self.assertIn("daemons stopped", err)
        self.assertIn(f"ganeti-vcluster destroy {self.dir}", err)
        self.assertEqual(self.fake.running, {})
        self.assertTrue(os.path.exists(os.path.join(self.dir, "vcluster.json")))

    def test_create_refuses_addresses_in_use_before_creating_anything(self):
        self.fake.taken.add("127.0.9.2")
        code, _, err = self.create3()
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("127.0.9.2:1811 is already in use", err)
        self.assertIn("another virtual cluster with --ip-base 127.0.9. is running", err)
        self.assertIn("create the cluster with another --ip-base (for example --ip-base 127.0.",
                      err)
        self.assertFalse(os.path.exists(self.dir))
        self.assertEqual(self.fake.events, [])

    def make_candidate(self, *names):
        """Add nodes to the master's config.data as master candidates (the fake master
        does not run OP_NODE_ADD)."""
        path = os.path.join(self.dir, "node1.x.test/var/lib/ganeti/config.data")
        with open(path) as f:
            raw = json.load(f)
        for name in names:
            raw["nodes"][f"uuid-{name}"] = {"name": name, "master_candidate": True}
        with open(path, "w") as f:
            json.dump(raw, f)

    def test_daemons_of(self):
        self.assertEqual(self.create3()[0], 0)
        vc = vcluster.VCluster.load(self.dir)
        self.assertEqual(vc.candidates(), {"node1.x.test"})
        self.assertEqual(vc.daemons_of(vc.node("node1")), [NODED, CONFD, MASTERD, RAPI])
        self.assertEqual(vc.daemons_of(vc.node("node2")), [NODED])
        self.make_candidate("node3.x.test")
        self.assertEqual(vc.candidates(), {"node1.x.test", "node3.x.test"})
        self.assertEqual(vc.daemons_of(vc.node("node3")), [NODED, CONFD])
        self.assertEqual([(n.name, d) for n, d in vc.start_order()],
                         [("node1.x.test", NODED), ("node2.x.test", NODED),
                          ("node3.x.test", NODED), ("node1.x.test", CONFD),
                          ("node3.x.test", CONFD), ("node1.x.test", MASTERD),
                          ("node1.x.test", RAPI)])
        # confd is stopped on every node (a role may have changed), after the node daemons
        self.assertEqual([(n.name, d) for n, d in vc.stop_order()],
                         [("node1.x.test", RAPI), ("node1.x.test", MASTERD),
                          ("node3.x.test", NODED), ("node2.x.test", NODED),
                          ("node1.x.test", NODED), ("node3.x.test", CONFD),
                          ("node2.x.test", CONFD), ("node1.x.test", CONFD)])

    def test_candidates_without_a_readable_config(self):
        self.assertEqual(self.create3()[0], 0)
        vc = vcluster.VCluster.load(self.dir)
        with open(vc.node(None).paths.config_file, "w") as f:
            f.write("{not json")
        self.assertEqual(vc.candidates(), {"node1.x.test"})

    def test_start_stop_status_cover_every_daemon_in_order(self):
        self.assertEqual(self.create3()[0], 0)
        self.make_candidate("node2.x.test")
        self.fake.events.clear()
        code, out, _ = self.run_cli("status", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        rows = [line.split(None, 4) for line in out.splitlines()[1:]]
        self.assertEqual([(r[0], r[1], r[2], r[-1]) for r in rows],
                         [("node1.x.test", "127.0.9.1", NODED, "stopped"),
                          ("node1.x.test", "127.0.9.1", CONFD, "stopped"),
                          ("node1.x.test", "127.0.9.1", MASTERD, "stopped"),
                          ("node1.x.test", "127.0.9.1", RAPI, "stopped"),
                          ("node2.x.test", "127.0.9.2", NODED, "stopped"),
                          ("node2.x.test", "127.0.9.2", CONFD, "stopped"),
                          ("node3.x.test", "127.0.9.3", NODED, "stopped"),
                          ("node3.x.test", "127.0.9.3", CONFD,
                           "stopped (not a candidate)")])
        # a daemon already running is left alone
        self.fake.running[("node2.x.test", NODED)] = 7
        code, out, err = self.run_cli("start", self.dir)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.fake.events, [("start", "node1.x.test", NODED),
                                            ("start", "node3.x.test", NODED),
                                            ("start", "node1.x.test", CONFD),
                                            ("start", "node2.x.test", CONFD),
                                            ("start", "node1.x.test", MASTERD),
                                            ("start", "node1.x.test", RAPI)])
        self.assertEqual(out, "Started ganeti-noded@node1.x.test\n"
                              "Started ganeti-noded@node3.x.test\n"
                              "Started ganeti-confd@node1.x.test\n"
                              "Started ganeti-confd@node2.x.test\n"
                              "Started ganeti-masterd@node1.x.test\n"
                              "Started ganeti-rapi@node1.x.test\n")
        code, out, _ = self.run_cli("status", self.dir)
        self.assertEqual(code, 0)
        self.assertEqual(out.count(" running"), 7)
        self.assertEqual(self.run_cli("start", self.dir)[1], "All daemons already running.\n")
        # a confd where none should run is shown, but is no failure
        self.fake.running[("node3.x.test", CONFD)] = 9
        code, out, _ = self.run_cli("status", self.dir)
        self.assertEqual(code, 0)
        self.assertIn("running (not a candidate)", out)
        # a candidate's confd that does not run is a failure
        del self.fake.running[("node2.x.test", CONFD)]
        self.assertEqual(self.run_cli("status", self.dir)[0], constants.EXIT_FAILURE)
        self.fake.running[("node2.x.test", CONFD)] = 8
        self.fake.events.clear()
        code, out, _ = self.run_cli("stop", self.dir)
        self.assertEqual(code, 0)
        self.assertEqual(self.fake.events, [("stop", "node1.x.test", RAPI),
                                            ("stop", "node1.x.test", MASTERD),
                                            ("stop", "node3.x.test", NODED),
                                            ("stop", "node2.x.test", NODED),
                                            ("stop", "node1.x.test", NODED),
                                            ("stop", "node3.x.test", CONFD),
                                            ("stop", "node2.x.test", CONFD),
                                            ("stop", "node1.x.test", CONFD)])
        self.assertEqual(self.run_cli("stop", self.dir)[1], "No daemon was running.\n")

    def test_confd_started_meanwhile_by_the_node_daemon_is_no_failure(self):
        self.assertEqual(self.create3()[0], 0)
        self.make_candidate("node2.x.test")
        err = errors.CommandError("ganeti-confd on node2.x.test failed to start: Another "
                                  "twistd server is running")
        self.fake.fail_start[("node2.x.test", CONFD)] = err
        self.fake.running[("node2.x.test", CONFD)] = 5  # ... because its noded started it
        self.fake.running[("node2.x.test", NODED)] = 4
        real_state = self.fake.state
        calls = []

        def state(paths, daemon):  # not running when first looked at, running after
            if (paths.hostname, daemon) == ("node2.x.test", CONFD) and not calls:
                calls.append(1)
                return daemons.DaemonState(daemon, None, daemons.STOPPED)
            return real_state(paths, daemon)

        self.fake.state = state
        code, out, err_text = self.run_cli("start", self.dir)
        self.assertEqual(code, 0, err_text)
        self.assertNotIn("ganeti-confd@node2", out)
        # any other failure still rolls back
        self.fake.running.clear()
        self.fake.fail_start[("node2.x.test", CONFD)] = err
        self.fake.state = real_state
        code, _, err_text = self.run_cli("start", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("Another twistd server is running", err_text)
        self.assertEqual(self.fake.running, {})

    def test_settle_confd_reports_what_the_node_daemons_started(self):
        self.assertEqual(self.create3()[0], 0)
        self.make_candidate("node2.x.test", "node3.x.test")
        vc = vcluster.VCluster.load(self.dir)
        self.fake.running.update({("node1.x.test", NODED): 1, ("node2.x.test", NODED): 2,
                                  ("node3.x.test", NODED): 3, ("node1.x.test", CONFD): 4,
                                  ("node2.x.test", CONFD): 5, ("node1.x.test", MASTERD): 6,
                                  ("node1.x.test", RAPI): 7})
        self.fake.events.clear()
        out = io.StringIO()
        ctx = vcluster.Context(tool="t", stdout=out, stderr=out, environ={},
                               luxi_factory=lambda paths: None)
        vcluster.settle_confd(vc, ctx, timeout=0)
        self.assertEqual(out.getvalue(),
                         "Started ganeti-confd@node2.x.test (by its node daemon: the node "
                         "became a master candidate)\n"
                         "Started ganeti-confd@node3.x.test\n")  # not by noded in time
        self.assertEqual(self.fake.events, [("start", "node3.x.test", CONFD)])

    def test_start_failure_names_the_address_and_rolls_back(self):
        self.assertEqual(self.create3()[0], 0)
        self.fake.events.clear()
        self.fake.fail_start[("node2.x.test", NODED)] = daemons.AddressInUse(
            "ganeti-noded on node2.x.test cannot listen on 127.0.9.2:1811: the address is "
            "already in use by another process", "127.0.9.2", 1811)
        code, out, err = self.run_cli("start", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("cannot listen on 127.0.9.2:1811", err)
        self.assertIn("another virtual cluster with --ip-base 127.0.9. is running", err)
        self.assertIn(f"ganeti-vcluster destroy {self.dir}') and create it again with another "
                      "--ip-base", err)
        self.assertIn("Stopped again: ganeti-noded@node1.x.test", err)
        self.assertEqual(self.fake.running, {})
        self.assertNotIn(("start", "node1.x.test", MASTERD), self.fake.events)

    def test_destroy_stops_in_reverse_order(self):
        self.assertEqual(self.create3()[0], 0)
        self.assertEqual(self.run_cli("start", self.dir)[0], 0)
        self.fake.events.clear()
        code, _, _ = self.run_cli("destroy", self.dir)
        self.assertEqual(code, 0)
        self.assertEqual([e[1:] for e in self.fake.events],
                         [("node1.x.test", RAPI), ("node1.x.test", MASTERD),
                          ("node3.x.test", NODED), ("node2.x.test", NODED),
                          ("node1.x.test", NODED), ("node1.x.test", CONFD)])
        self.assertFalse(os.path.exists(self.dir))

    def test_demo_creates_three_nodes_keeps_them_running_and_lists_nodes(self):
        shown = []
        rapi_shown = []
        self.patch(vcluster_demo, "_run_shown",
                   lambda ctx, vc, argv, max_lines=0: shown.append(argv) or 0)
        self.patch(vcluster_demo, "_show_rapi", lambda ctx, vc: rapi_shown.append(vc.master) or 0)
        code, out, err = self.run_cli("demo", self.dir, "--ip-base", "127.0.9.")
        self.assertEqual(code, 0, err)
        self.assertEqual(len(self.master.ops), 2)
        self.assertEqual(len(self.fake.running), 6)  # left running (confd on the master)
        self.assertEqual(rapi_shown, [vcluster.VCluster.load(self.dir).master])
        self.assertNotIn("stop", [e[0] for e in self.fake.events])
        self.assertIn(["gnt-node", "list"], shown)
        self.assertIn(["gnt-group", "list"], shown)
        self.assertIn(["gnt-node", "list", "-o", "name,role,pip,master_candidate"], shown)
        self.assertIn(["gnt-cluster", "getmaster"], shown)
        self.assertIn(["ganeti-confd-query", "cluster-master"], shown)
        self.assertIn(["gnt-instance", "list"], shown)
        adds = [argv[-1] for argv in shown if argv[:2] == ["gnt-instance", "add"]]
        self.assertEqual(adds, ["web1.vcluster.test", "web2.vcluster.test"])
        self.assertIn("Nodes:   node1.vcluster.test (master), node2.vcluster.test, "
                      "node3.vcluster.test;", out)
        # the second run finds it running and changes nothing
        shown.clear()
        self.fake.events.clear()
        code, out, _ = self.run_cli("demo", self.dir)
        self.assertEqual(code, 0)
        self.assertIn("already running; leaving it as it is", out)
        self.assertEqual((shown, self.fake.events), ([], []))

    def test_demo_adds_only_missing_instances(self):
        self.run_cli("create", self.dir, "--nodes", "3", "--ip-base", "127.0.9.")
        vc = vcluster.VCluster.load(self.dir)
        commands = vcluster_demo.instance_commands(vc, {"web1.vcluster.test"})
        adds = [argv for argv, _ in commands if argv[:2] == ["gnt-instance", "add"]]
        self.assertEqual([argv[-1] for argv in adds], ["web2.vcluster.test"])
        # web2 is placed by the built-in allocator, not on a named node
        self.assertEqual(adds[0][adds[0].index("-I") + 1], "ganeti-place")
        self.assertNotIn("-n", adds[0])
        commands = vcluster_demo.instance_commands(vc, set())
        adds = [argv for argv, _ in commands if argv[:2] == ["gnt-instance", "add"]]
        self.assertEqual(adds[0][adds[0].index("-n") + 1], "node2.vcluster.test")

    def test_demo_reports_failed_commands(self):
        self.patch(vcluster_demo, "_run_shown",
                   lambda ctx, vc, argv, max_lines=0: int(argv[0] == "gnt-group"))
        self.patch(vcluster_demo, "_show_rapi", lambda ctx, vc: 1)
        code, _, err = self.run_cli("demo", self.dir, "--nodes", "1", "--ip-base", "127.0.9.")
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("2 demonstration command(s) failed", err)

    def test_demo_rapi_request(self):
        self.run_cli("create", self.dir, "--ip-base", "127.0.9.")
        vc = vcluster.VCluster.load(self.dir)
        sent = []

        def request(address, port, method, path, **kw):
            sent.append((address, port, method, path, kw["server_hostname"],
                         kw["credentials"][0], kw["context"].verify_mode))
            return 200, {"name": vc.cluster_name, "master": vc.master,
                         "software_version": "3.0.2"}

        self.patch(vcluster_demo.rapicall, "request", request)
        out = io.StringIO()
        ctx = vcluster.Context(tool="t", stdout=out, stderr=out, environ={},
                               luxi_factory=lambda paths: None)
        self.assertEqual(vcluster_demo._show_rapi(ctx, vc), 0)
        self.assertEqual(sent, [("127.0.9.1", 5080, "GET", "/2/info", "cluster.vcluster.test",
                                 "gnt-admin", ssl.CERT_REQUIRED)])
        self.assertIn("$ GET https://127.0.9.1:5080/2/info", out.getvalue())
        self.assertIn("HTTP 200: cluster cluster.vcluster.test, master node1.vcluster.test",
                      out.getvalue())
        self.patch(vcluster_demo.rapicall, "request", lambda *a, **kw: (401, {"code": 401}))
        self.assertEqual(vcluster_demo._show_rapi(ctx, vc), 1)

        def refused(*a, **kw):
            raise ConnectionRefusedError(111, "Connection refused")

        self.patch(vcluster_demo.rapicall, "request", refused)
        self.assertEqual(vcluster_demo._show_rapi(ctx, vc), 1)
        self.assertIn("failed: [Errno 111] Connection refused", out.getvalue())

    def test_env_lines(self):
        self.run_cli("create", self.dir)
        code, out, _ = self.run_cli("env", self.dir)
        self.assertEqual(code, 0)
        root = os.path.join(self.dir, "node1.vcluster.test")
        self.assertIn(f"export GANETI_ROOTDIR={root}\n", out)
        self.assertIn("export GANETI_HOSTNAME=node1.vcluster.test\n", out)
        code, _, err = self.run_cli("env", self.dir, "node7")
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("No node 'node7'", err)

    def test_status_of_stopped_cluster(self):
        self.run_cli("create", self.dir)
        code, out, _ = self.run_cli("status", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("ganeti-masterd", out)
        self.assertIn("ganeti-noded", out)
        self.assertIn("stopped", out)

    def test_create_twice_refused(self):
        self.assertEqual(self.run_cli("create", self.dir)[0], 0)
        code, _, err = self.run_cli("create", self.dir)
        self.assertEqual(code, constants.EXIT_FAILURE)
        self.assertIn("already holds a virtual cluster", err)

    def test_bad_arguments(self):
        for argv, needle in ((["create", self.dir, "--nodes", "0"], "--nodes"),
                             (["create", self.dir, "--nodes", "251"], "--nodes"),
                             (["create", self.dir, "--nodes", "two"], "--nodes"),
                             (["create", self.dir, "--ip-base", "300.0.0."], "--ip-base"),
                             (["demo", self.dir, "--nodes", "0"], "--nodes"),
                             (["create"], "DIR")):
            code, _, err = self.run_cli(*argv)
            self.assertEqual(code, constants.EXIT_FAILURE, argv)
            self.assertIn(needle, err, argv)
            self.assertFalse(os.path.exists(self.dir))

    def test_defaults(self):
        parser = build_parser("ganeti-vcluster", "", vcluster_tool.COMMANDS, io.StringIO())
        create = parser.parse_args(["create", "d"])
        self.assertEqual((create.nodes, create.ip_base, create.domain), (1, "127.0.1.",
                                                                         "vcluster.test"))
        demo = parser.parse_args(["demo", "d"])
        self.assertEqual((demo.nodes, demo.ip_base), (3, "127.0.1."))

    def test_not_a_vcluster(self):
        os.makedirs(self.dir)
        for cmd in ("start", "stop", "status", "env", "destroy"):
            code, _, err = self.run_cli(cmd, self.dir)
            self.assertEqual(code, constants.EXIT_FAILURE, cmd)
            self.assertIn("is not a virtual cluster", err)
        self.assertTrue(os.path.isdir(self.dir))  # destroy refused to remove it

    def test_destroy(self):
        self.run_cli("create", self.dir)
        code, _, _ = self.run_cli("destroy", self.dir)
        self.assertEqual(code, 0)
        self.assertFalse(os.path.exists(self.dir))


@pytest.mark.subprocess
class DaemonsTest(SynchronousTestCase):
    """The parts of ganeti.cli.daemons that need no twistd."""

    def setUp(self):
        root = os.path.abspath(os.path.join(self.mktemp(), "n1.test"))
        self.paths = Paths.for_node(root, "n1.test")
        os.makedirs(self.paths.run_dir)
        os.makedirs(self.paths.log_dir)

    def listener(self):
        s = socket.socket()
        self.addCleanup(s.close)
        s.bind(("127.0.0.1", 0))
        s.listen()
        return s.getsockname()[1]

    def write_pid(self, pid):
        with open(self.paths.pid_file(NODED), "w") as f:
            f.write(f"{pid}\n")

    def write_log(self, text):
        with open(self.paths.log_file(NODED), "a") as f:
            f.write(text)

    def dead_pid(self):
        proc = subprocess.Popen([sys.executable, "-c", ""])
        proc.wait()
        return proc.pid

    def test_twistd_args(self):
        self.assertEqual(daemons.twistd_args(NODED, "127.0.3.2"),
                         ["--bind", "127.0.3.2", "--port", "1811", "--no-mlock",
                          "--manage-confd"])
        self.assertEqual(daemons.twistd_args(CONFD, "127.0.3.2"),
                         ["--bind", "127.0.3.2", "--port", "1814"])
        self.assertEqual(daemons.twistd_args(MASTERD, "127.0.3.1"), [])
        self.assertEqual(daemons.twistd_args(RAPI, "127.0.3.1"),
                         ["--bind", "127.0.3.1", "--port", "5080"])
        self.assertEqual(daemons.twistd_args(RAPI, "127.0.3.1", 8080),
                         ["--bind", "127.0.3.1", "--port", "8080"])

    def test_daemon_lists_and_order(self):
        self.assertEqual(daemons.daemons_of(True), [NODED, CONFD, MASTERD, RAPI])
        self.assertEqual(daemons.daemons_of(False), [NODED])
        self.assertEqual(daemons.daemons_of(False, True), [NODED, CONFD])
        nodes = [("a", True), ("b", False), ("c", False)]
        self.assertEqual(daemons.start_order(nodes, ["c"]),
                         [("a", NODED), ("b", NODED), ("c", NODED), ("a", CONFD),
                          ("c", CONFD), ("a", MASTERD), ("a", RAPI)])
        self.assertEqual(daemons.stop_order(nodes),
                         [("a", RAPI), ("a", MASTERD), ("c", NODED), ("b", NODED),
                          ("a", NODED), ("c", CONFD), ("b", CONFD), ("a", CONFD)])

    def test_check_address_free(self):
        port = self.listener()
        with self.assertRaises(daemons.AddressInUse) as cm:
            daemons.check_address_free("127.0.0.1", port)
        self.assertEqual((cm.exception.address, cm.exception.port), ("127.0.0.1", port))
        self.assertEqual(str(cm.exception), f"127.0.0.1:{port} is already in use by another "
                                            "process")
        daemons.check_address_free("127.0.0.2", port)  # another loopback address is free
        with self.assertRaises(errors.CommandError) as cm2:
            daemons.check_address_free("192.0.2.254", port)
        self.assertIn("not an address of this machine", str(cm2.exception))

    def test_udp_address_checks(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with self.assertRaises(daemons.AddressInUse):
            daemons.check_address_free("127.0.0.1", port, udp=True)
        daemons.check_address_free("127.0.0.2", port, udp=True)
        self.assertTrue(daemons.pid_listens_on(os.getpid(), "127.0.0.1", port, udp=True))
        self.assertFalse(daemons.pid_listens_on(os.getpid(), "127.0.0.1", port))  # not TCP
        self.assertFalse(daemons.pid_listens_on(self.dead_pid(), "127.0.0.1", port, udp=True))

    def test_pid_listens_on(self):
        port = self.listener()
        self.assertTrue(daemons.pid_listens_on(os.getpid(), "127.0.0.1", port))
        self.assertFalse(daemons.pid_listens_on(os.getpid(), "127.0.0.2", port))
        # someone else's listener is not ours
        self.assertFalse(daemons.pid_listens_on(self.dead_pid(), "127.0.0.1", port))

    def test_wait_listening_returns_once_the_daemon_listens(self):
        port = self.listener()
        self.write_pid(os.getpid())
        daemons.wait_listening(self.paths, NODED, "127.0.0.1", port, timeout=5)

    def test_daemon_that_died_on_a_taken_address(self):
        self.write_log("old line: Couldn't listen on 127.0.0.1:1: [Errno 13] denied\n")
        offset = os.path.getsize(self.paths.log_file(NODED))
        self.write_log(
            "2026 [ganeti.noded.service#critical] ganeti-noded cannot listen on "
            "127.0.0.1:1811\n\tTraceback (most recent call last):\n"
            "\ttwisted.internet.error.CannotListenError: Couldn't listen on 127.0.0.1:1811: "
            "[Errno 98] Address already in use.\n")
        self.write_pid(self.dead_pid())
        with self.assertRaises(daemons.AddressInUse) as cm:
            daemons.wait_listening(self.paths, NODED, "127.0.0.1", 1811, offset, timeout=5)
        self.assertIn("ganeti-noded on n1.test cannot listen on 127.0.0.1:1811: the address "
                      "is already in use by another process", str(cm.exception))
        self.assertIn(self.paths.log_file(NODED), str(cm.exception))

    def test_daemon_alive_without_its_port_is_stopped(self):
        # noded logs the failure but its process keeps running: stop it, report why
        stopped = []
        self.patch(daemons, "stop", lambda paths, daemon: stopped.append(daemon))
        self.write_pid(os.getpid())
        self.write_log("\ttwisted.internet.error.CannotListenError: Couldn't listen on "
                       "127.0.0.9:1811: [Errno 99] Cannot assign requested address.\n")
        with self.assertRaises(errors.CommandError) as cm:
            daemons.wait_listening(self.paths, NODED, "127.0.0.9", 1811, timeout=5)
        self.assertNotIsInstance(cm.exception, daemons.AddressInUse)
        self.assertIn("did not start listening on 127.0.0.9:1811: Couldn't listen on "
                      "127.0.0.9:1811: [Errno 99] Cannot assign requested address.",
                      str(cm.exception))
        self.assertEqual(stopped, [NODED])

    def test_daemon_that_died_without_a_word(self):
        self.write_pid(self.dead_pid())
        with self.assertRaises(errors.CommandError) as cm:
            daemons.wait_listening(self.paths, NODED, "127.0.0.1", 1811, timeout=5)
        self.assertIn("exited without a message", str(cm.exception))


class SharedFileStorageTest(SynchronousTestCase):
    """The cluster's shared file storage directory is one directory of the machine on
    every node (a cluster file system): a file one node writes there, another reads
    at its own path; the plain file storage directory stays each node's own."""

    def test_shared_directory_is_one_directory_for_all_nodes(self):
        top = os.path.abspath(self.mktemp())
        master_root = os.path.join(top, "node1")
        storage = os.path.join(master_root, "srv", "ganeti")
        files, shared = os.path.join(storage, "file-storage"), os.path.join(
            storage, "shared-file-storage")
        common = os.path.join(top, vcluster.SHARED_FILE_DIR)
        roots = [master_root, os.path.join(top, "node2")]
        for root in roots:
            vcluster_nodes.allow_file_storage(Paths(root, "n"), [files, shared], master_root,
                                        {shared: common})
            vcluster_nodes.allow_file_storage(Paths(root, "n"), [files, shared], master_root,
                                        {shared: common})  # twice: no change, no error
        with open(os.path.join(roots[0], "srv", "ganeti", "shared-file-storage", "d"),
                  "w", encoding="ascii") as f:
            f.write("x")
        with open(os.path.join(roots[1], "srv", "ganeti", "shared-file-storage", "d"),
                  encoding="ascii") as f:
            self.assertEqual(f.read(), "x")
        self.assertNotEqual(os.path.realpath(os.path.join(roots[0], "srv/ganeti/file-storage")),
                            os.path.realpath(os.path.join(roots[1], "srv/ganeti/file-storage")))
        with open(Paths(roots[1], "n").conf_dir + "/file-storage-paths", encoding="utf-8") as f:
            self.assertEqual(f.read().split(), [files, shared])
