"""OP_CLUSTER_ACTIVATE_MASTER_IP / OP_CLUSTER_DEACTIVATE_MASTER_IP on a whole master with
in-process node daemons, and masterd's activation at start (MasterIpActivation)."""

from __future__ import annotations

import io
import os
import socket
import stat
from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.cli import gnt_cluster, jobs
from ganeti.core.errors import OpExecError, RequestError
from ganeti.master.lu.masterip import master_params
from ganeti.master.masteripsvc import MasterIpActivation
from ganeti.noded.backend import masterip as nodemip
from ganeti.rpc.client import RpcResult
from ganeti.rpc.noderpc import OneNodeCalls
from tests.fakes.configs import small_config
from tests.fakes.nodes import master_with_nodes

MASTER = "node1.test"


def write_script(path: str, body: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, stat.S_IRWXU)


@pytest.mark.subprocess
class OpcodeTest(TestCase):
    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, nodes=1)

    def run_op(self, op_id: str) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit({"OP_ID": op_id}))

    def external(self, body: str) -> str:
        """Turn on use_external_mip_script with the master's script doing ``body``."""
        job = self.master.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                  "use_external_mip_script": True})
        self.assertEqual(self.master.finish(job)[0], "success")
        out = os.path.join(os.path.abspath(self.mktemp()))
        write_script(nodemip.external_script(self.net._context(self.master.paths)),
                     f'echo "$1 $MASTER_IP/$MASTER_NETMASK $MASTER_NETDEV" >> {out}\n' + body)
        return out

    def test_parameters_are_the_clusters(self):
        cl = self.master.config.cluster
        self.assertEqual(master_params(self.master.config),
                         {"uuid": cl.master_node, "ip": "127.0.1.254", "netmask": 32,
                          "netdev": "lo", "ip_family": socket.AF_INET})

    def test_loopback_range_master_ip_activates_and_deactivates_as_a_noop(self):
        # our own script runs for real: 127.0.1.254 is already local, nothing changes
        self.assertEqual(self.run_op("OP_CLUSTER_ACTIVATE_MASTER_IP")[:2], ("success", [None]))
        self.assertEqual(self.run_op("OP_CLUSTER_DEACTIVATE_MASTER_IP")[:2],
                         ("success", [None]))
        self.assertEqual([c for c in self.net.contacted if "master_ip" in c[1]],
                         [(MASTER, "node_activate_master_ip"),
                          (MASTER, "node_deactivate_master_ip")])

    def test_external_script(self):
        out = self.external("true\n")
        self.assertEqual(self.run_op("OP_CLUSTER_ACTIVATE_MASTER_IP")[0], "success")
        self.assertEqual(self.run_op("OP_CLUSTER_DEACTIVATE_MASTER_IP")[0], "success")
        with open(out) as f:
            self.assertEqual(f.read(), "start 127.0.1.254/32 lo\nstop 127.0.1.254/32 lo\n")

    def test_script_failure_fails_the_job(self):
        self.external("echo 'RTNETLINK answers: Operation not permitted' >&2; exit 1\n")
        status, results, _ = self.run_op("OP_CLUSTER_ACTIVATE_MASTER_IP")
        self.assertEqual(status, "error")
        self.assertEqual(results[0][0], "OpExecError")
        self.assertEqual(results[0][1][0],
                         "Could not activate the master IP: Failed to start the master IP. "
                         "Script return value: exited with exit code 1, output: "
                         "'RTNETLINK answers: Operation not permitted'")
        status, results, _ = self.run_op("OP_CLUSTER_DEACTIVATE_MASTER_IP")
        self.assertEqual(status, "error")
        self.assertIn("Could not deactivate the master IP: Failed to stop", results[0][1][0])

    def test_master_daemon_down(self):
        self.net.down.add(MASTER)
        status, results, _ = self.run_op("OP_CLUSTER_ACTIVATE_MASTER_IP")
        self.assertEqual(status, "error")
        self.assertIn("Could not activate the master IP: node_activate_master_ip on "
                      "node1.test: connection refused", results[0][1][0])

    def test_opcodes_take_no_parameters(self):
        # as Ganeti's (luxid's message): only the common parameters
        with self.assertRaisesRegex(RequestError, 'Superfluous dictionary keys: \\["netdev"\\]'):
            self.master.submit({"OP_ID": "OP_CLUSTER_ACTIVATE_MASTER_IP", "netdev": "x"})


class FakeRpc(OneNodeCalls):
    def __init__(self, result: RpcResult | None = None, error: Exception | None = None):
        self.result = result
        self.error = error
        self.calls: list[tuple[list[Any], str, Any]] = []
        self.pending: defer.Deferred[Any] | None = None

    def __call__(self) -> FakeRpc:
        if self.error is not None:
            raise self.error
        return self

    def call(self, nodes, call_name, args=(), timeout=None):
        self.calls.append((list(nodes), call_name, args))
        if self.result is None:
            self.pending = defer.Deferred()
            return self.pending
        return defer.succeed({MASTER: self.result})


class ActivationAtStartTest(TestCase):
    def start(self, rpc: FakeRpc) -> tuple[MasterIpActivation, Clock]:
        clock = Clock()
        cfg = small_config()
        svc = MasterIpActivation(clock, lambda: cfg, rpc)
        svc.startService()
        self.assertEqual(rpc.calls, [])  # not before the reactor runs
        clock.advance(0)
        return svc, clock

    def test_activates_once_started(self):
        rpc = FakeRpc(RpcResult(MASTER, True, None))
        svc, _ = self.start(rpc)
        self.assertTrue(self.successResultOf(svc.done))
        ((targets, name, args),) = rpc.calls
        self.assertEqual((targets[0].name, name), (MASTER, "node_activate_master_ip"))
        self.assertEqual(args[0]["ip"], "127.0.1.254")
        self.assertIs(args[1], False)
        svc.stopService()

    def test_failures_are_logged_not_fatal(self):
        rpc = FakeRpc(RpcResult(MASTER, False, fail_msg="Failed to start the master IP."))
        svc, _ = self.start(rpc)
        self.assertFalse(self.successResultOf(svc.done))
        svc, _ = self.start(FakeRpc(error=OpExecError("Cannot load the cluster certificate")))
        self.assertFalse(self.successResultOf(svc.done))

    def test_stop_cancels_a_pending_activation(self):
        rpc = FakeRpc()
        clock = Clock()
        cfg = small_config()
        svc = MasterIpActivation(clock, lambda: cfg, rpc)
        svc.startService()
        svc.stopService()  # before the reactor ran: nothing is asked
        clock.advance(1)
        self.assertEqual(rpc.calls, [])
        svc, _ = self.start(rpc)
        self.assertEqual(len(rpc.calls), 1)
        svc.stopService()  # the call in flight is cancelled
        self.assertFalse(self.successResultOf(svc.done))


@pytest.mark.subprocess
class CliTest(TestCase):
    """gnt-cluster activate-master-ip / deactivate-master-ip against the whole master."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, nodes=1)
        self.questions: list[str] = []
        self.answer = False
        self.patch(jobs, "ask_user", lambda q: self.questions.append(q) or self.answer)

    def cli(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_cluster.main(list(argv), stdout=out, stderr=err,
                                environ=self.master.paths.env(),
                                luxi_factory=lambda paths: self.master.client())
        return code, out.getvalue(), err.getvalue()

    def submitted(self) -> list[str]:
        return [op["OP_ID"] for method, args in self.master.calls if method == "SubmitJob"
                for op in args[0]]

    def test_activate(self):
        code, _, err = self.cli("activate-master-ip")
        self.assertEqual(code, 0, err)
        self.assertEqual(self.submitted(), ["OP_CLUSTER_ACTIVATE_MASTER_IP"])
        self.assertEqual(self.questions, [])

    def test_deactivate_asks_first(self):
        code, _, _ = self.cli("deactivate-master-ip")
        self.assertEqual(code, 1)
        self.assertEqual(len(self.questions), 1)
        self.assertIn("This will disable the master IP.", self.questions[0])
        self.assertEqual(self.submitted(), [])
        self.answer = True
        self.assertEqual(self.cli("deactivate-master-ip")[0], 0)
        self.assertEqual(self.cli("deactivate-master-ip", "--yes", "--reason", "r")[0], 0)
        self.assertEqual(len(self.questions), 2)  # --yes asks nothing
        self.assertEqual(self.submitted(), ["OP_CLUSTER_DEACTIVATE_MASTER_IP"] * 2)

    def test_failure_is_exit_status_1(self):
        self.net.down.add(MASTER)
        code, _, err = self.cli("activate-master-ip")
        self.assertEqual(code, 1)
        self.assertIn("Could not activate the master IP", err)


@pytest.mark.subprocess
class MasterNetmaskTest(TestCase):
    """OP_CLUSTER_SET_PARAMS master_netmask: node_change_master_netmask on the master, its
    failure a warning; the config changes either way (Ganeti's)."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, nodes=1)

    def modify(self, netmask: int) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                                      "master_netmask": netmask}))

    def test_change_on_a_loopback_range_address(self):
        status, _, log = self.modify(24)
        self.assertEqual(status, "success", log)
        self.assertIn("Changing master IP netmask to 24", log)
        self.assertEqual(self.master.config.cluster.master_netmask, 24)
        self.assertIn((MASTER, "node_change_master_netmask"), self.net.contacted)

    def test_node_failure_is_a_warning(self):
        self.net.down.add(MASTER)
        status, _, log = self.modify(24)
        self.assertEqual(status, "success", log)
        self.assertTrue(any(line.startswith("Could not change the master IP netmask: ")
                            for line in log), log)
        self.assertEqual(self.master.config.cluster.master_netmask, 24)

    def test_invalid_netmask(self):
        for netmask in (0, 33, -1):
            status, results, _ = self.modify(netmask)
            self.assertEqual(status, "error")
            self.assertEqual(results[0][0], "OpPrereqError")
            self.assertEqual(results[0][1], [f"CIDR netmask ({netmask}) not valid",
                                             "wrong_input"])
        self.assertEqual(self.master.config.cluster.master_netmask, 32)
        self.assertNotIn((MASTER, "node_change_master_netmask"), self.net.contacted)


@pytest.mark.subprocess
class MasterNetdevTest(TestCase):
    """OP_CLUSTER_SET_PARAMS master_netdev (issue 34: GetInfo's value can be sent back):
    as Ganeti's, the master IP goes down on the current device, the device changes, and
    the IP comes up on the new one; the same device does it all too."""

    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, nodes=1)

    def modify(self, **params: Any) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit({"OP_ID": "OP_CLUSTER_SET_PARAMS",
                                                      **params}))

    def master_ip_calls(self) -> list[tuple[str, str]]:
        return [c for c in self.net.contacted if "master_ip" in c[1]]

    def test_the_current_device_is_accepted(self):
        status, _, log = self.modify(master_netdev="lo")
        self.assertEqual(status, "success", log)
        self.assertEqual(log, ["Shutting down master ip on the current netdev (lo)",
                               "Changing master_netdev from lo to lo",
                               "Starting the master ip on the new master netdev (lo)"])
        self.assertEqual(self.master_ip_calls(), [(MASTER, "node_deactivate_master_ip"),
                                                  (MASTER, "node_activate_master_ip")])

    def test_a_new_device_is_recorded(self):
        self.net.down.add(MASTER)
        status, results, log = self.modify(master_netdev="eth9")
        self.assertEqual(status, "error")  # the IP could not go down: nothing changes
        self.assertEqual(results[0][0], "OpExecError")
        self.assertTrue(results[0][1][0].startswith("Could not disable the master ip: "))
        self.assertEqual(self.master.config.cluster.master_netdev, "lo")
        status, _, log = self.modify(master_netdev="eth9", force=True)
        self.assertEqual(status, "success", log)
        log = [line for line in log if "hooks_runner" not in line]  # the hooks' warnings
        self.assertEqual(log[0], "Shutting down master ip on the current netdev (lo)")
        self.assertTrue(log[1].startswith("Could not disable the master ip (continuing "
                                          "anyway): "), log)
        self.assertEqual(log[2], "Changing master_netdev from lo to eth9")
        self.assertEqual(log[3], "Starting the master ip on the new master netdev (eth9)")
        self.assertTrue(log[4].startswith(" - WARNING: Could not re-enable the master ip on "
                                          "the master, please restart manually: "), log)
        self.assertEqual(self.master.config.cluster.master_netdev, "eth9")
