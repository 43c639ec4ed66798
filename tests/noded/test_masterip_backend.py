"""node_activate_master_ip / node_deactivate_master_ip / node_change_master_netmask on the
node: argument checks, the script's environment, the external script, the local hooks,
and the default script on a loopback-range address (a no-op, as on virtual clusters)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat

import pytest
from twisted.internet import reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core import hooks
from ganeti.noded.backend import masterip
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from tests.noded.helpers import MemoryNode, node_paths

PARAMS = {"uuid": "u-1", "ip": "10.9.0.254", "netmask": 24, "netdev": "br0",
          "ip_family": socket.AF_INET}
LOOPBACK = {"uuid": "u-1", "ip": "127.0.1.254", "netmask": 32, "netdev": "lo",
            "ip_family": socket.AF_INET}


def write_script(path: str, body: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, stat.S_IRWXU)


class ParseTest(TestCase):
    def test_valid_parameters(self):
        p = masterip.parse_master_params(PARAMS)
        self.assertEqual(p.env(), {"MASTER_NETDEV": "br0", "MASTER_IP": "10.9.0.254",
                                   "MASTER_NETMASK": "24", "CLUSTER_IP_VERSION": "4"})
        v6 = masterip.parse_master_params({**PARAMS, "ip": "FD09::FE", "netmask": 64,
                                           "ip_family": socket.AF_INET6})
        self.assertEqual((v6.address.ip, v6.address.version), ("fd09::fe", 6))

    def test_invalid_parameters(self):
        for bad, words in (
                ("x", "must be an object"),
                ({**PARAMS, "extra": 1}, "unknown keys"),
                ({**PARAMS, "uuid": 5}, "uuid"),
                ({**PARAMS, "ip_family": 3}, "ip_family"),
                ({**PARAMS, "ip_family": True}, "ip_family"),
                ({**PARAMS, "netdev": "br0 && reboot"}, "device"),
                ({**PARAMS, "netdev": None}, "device"),
                ({**PARAMS, "ip": "fd09::fe"}, "master IP"),
                ({**PARAMS, "netmask": 40}, "netmask"),
                ({**PARAMS, "netmask": "24"}, None)):
            if words is None:  # a string netmask is what the environment carries: accepted
                masterip.parse_master_params(bad)
                continue
            with self.assertRaisesRegex(RPCFail, words):
                masterip.parse_master_params(bad)

    def test_the_daemon_refuses_a_malformed_request(self):
        node = MemoryNode(node_paths(self))
        for args in ([PARAMS], [PARAMS, "yes"], [{"ip": "10.0.0.1"}, False],
                     [{**PARAMS, "netmask": "24"}, False]):
            status, _ = node.put("node_activate_master_ip", args)
            self.assertEqual(status, 400, args)
        status, _ = node.put("node_change_master_netmask", [24, 16, "10.0.0.1", 7])
        self.assertEqual(status, 400)


@pytest.mark.subprocess
class ScriptTest(TestCase):
    def setUp(self):
        self.paths = node_paths(self)
        self.ctx = NodeContext(paths=self.paths, clock=Clock(), run=inline_runner,
                               processes=reactor)
        self.out = os.path.join(os.path.abspath(self.mktemp()))
        self.external = masterip.external_script(self.ctx)

    def recording_script(self, extra: str = "") -> None:
        write_script(self.external, f'echo "$@" >> {self.out}\n'
                     f"env | sort >> {self.out}\n{extra}")

    def recorded(self) -> str:
        with open(self.out) as f:
            return f.read()

    async def test_external_script_gets_the_action_and_a_reset_environment(self):
        self.recording_script()
        self.assertEqual(os.path.relpath(self.external, self.paths.conf_dir),
                         "scripts/master-ip-setup")
        await masterip.node_activate_master_ip(self.ctx, PARAMS, True)
        await masterip.node_deactivate_master_ip(self.ctx, PARAMS, True)
        lines = self.recorded().splitlines()
        self.assertEqual([line for line in lines if "=" not in line], ["start", "stop"])
        env = dict(line.split("=", 1) for line in lines[1:lines.index("stop")])
        env.pop("PWD", None)
        env.pop("SHLVL", None)
        env.pop("_", None)
        self.assertEqual(set(env), {"MASTER_NETDEV", "MASTER_IP", "MASTER_NETMASK",
                                    "CLUSTER_IP_VERSION", "PATH", "LC_ALL", "PYTHONPATH"})
        self.assertEqual((env["MASTER_IP"], env["MASTER_NETMASK"], env["PATH"]),
                         ("10.9.0.254", "24", hooks.HOOKS_PATH))

    async def test_script_failure_is_the_calls_error(self):
        self.recording_script("echo boom >&2; exit 3\n")
        with self.assertRaises(RPCFail) as caught:
            await masterip.node_activate_master_ip(self.ctx, PARAMS, True)
        self.assertEqual(str(caught.exception),
                         "Failed to start the master IP. Script return value: exited with "
                         "exit code 3, output: 'boom'")

    async def test_missing_external_script(self):
        with self.assertRaisesRegex(RPCFail, "does not exist or is not executable"):
            await masterip.node_deactivate_master_ip(self.ctx, PARAMS, True)

    async def test_bad_arguments_run_nothing(self):
        self.recording_script()
        with self.assertRaisesRegex(RPCFail, "true or false"):
            await masterip.node_activate_master_ip(self.ctx, PARAMS, "yes")
        with self.assertRaisesRegex(RPCFail, "device"):
            await masterip.node_activate_master_ip(self.ctx, {**PARAMS, "netdev": "a/b"}, True)
        self.assertFalse(os.path.exists(self.out))

    async def test_local_hooks_around_the_script(self):
        self.recording_script()
        base = self.paths.hooks_base_dir
        with open(self.paths.ssconf_file("cluster_name"), "w") as f:
            f.write("cluster.test\n")
        write_script(os.path.join(base, "master-ip-turnup-post.d", "10-env"),
                     f"env | grep ^GANETI_ | sort > {self.out}.post\n")
        await masterip.node_activate_master_ip(self.ctx, PARAMS, True)
        with open(self.out + ".post") as f:
            env = dict(line.split("=", 1) for line in f.read().splitlines())
        self.assertEqual(env["GANETI_OP_CODE"], "OP_CLUSTER_IP_TURNUP")
        self.assertEqual(env["GANETI_HOOKS_PHASE"], "post")
        self.assertEqual(env["GANETI_HOOKS_PATH"], "master-ip-turnup")
        self.assertEqual(env["GANETI_CLUSTER"], "cluster.test")
        self.assertEqual(env["GANETI_MASTER_IP"], "10.9.0.254")
        self.assertEqual(env["GANETI_POST_MASTER_NETDEV"], "br0")
        # a failing pre hook stops the script
        os.remove(self.out)
        write_script(os.path.join(base, "master-ip-turndown-pre.d", "10-no"),
                     "echo not now; exit 1\n")
        with self.assertRaisesRegex(RPCFail, "master-ip-turndown-pre.d/10-no: not now"):
            await masterip.node_deactivate_master_ip(self.ctx, PARAMS, True)
        self.assertFalse(os.path.exists(self.out))


@pytest.mark.subprocess
class DefaultScriptTest(TestCase):
    """Our own script, run for real on an address of the loopback range: nothing changes."""

    def setUp(self):
        if shutil.which("ip", path="/sbin:/usr/sbin:/bin:/usr/bin") is None:
            self.skipTest("iproute2 (ip) is not installed")
        self.ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner,
                               processes=reactor)

    async def test_activate_and_deactivate_a_loopback_range_address(self):
        self.assertIsNone(await masterip.node_activate_master_ip(self.ctx, LOOPBACK, False))
        self.assertIsNone(await masterip.node_deactivate_master_ip(self.ctx, LOOPBACK, False))
        # no device: still fine while the address is local
        no_dev = {**LOOPBACK, "netdev": ""}
        self.assertIsNone(await masterip.node_activate_master_ip(self.ctx, no_dev, False))

    def test_without_a_process_reactor_the_script_runs_in_the_runner(self):
        ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)
        self.assertIsNone(self.successResultOf(
            masterip.node_activate_master_ip(ctx, LOOPBACK, False)))

    def test_netmask_change_of_a_loopback_range_address_changes_nothing(self):
        ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)
        self.assertIsNone(self.successResultOf(
            masterip.node_change_master_netmask(ctx, 32, 24, "127.0.1.254", "lo")))

    def test_netmask_arguments(self):
        ctx = NodeContext(paths=node_paths(self), clock=Clock(), run=inline_runner)
        # the same netmask: nothing to do, nothing run (the address need not be up)
        self.assertIsNone(self.successResultOf(
            masterip.node_change_master_netmask(ctx, 24, 24, "10.9.0.254", "br0")))
        for args in ((24, 16, "10.9.0.254", "br 0"), (24, 40, "10.9.0.254", "br0"),
                     (24, 16, "not-an-ip", "br0")):
            self.failureResultOf(masterip.node_change_master_netmask(ctx, *args), RPCFail)
        # an address that is not up here
        failure = self.failureResultOf(
            masterip.node_change_master_netmask(ctx, 24, 16, "10.9.0.254", "lo"), RPCFail)
        self.assertIn("not up", str(failure.value))


def test_rpc_table_declares_the_calls():
    from ganeti.core import rpcdefs
    call = rpcdefs.get_call("node_activate_master_ip")
    call.check_args([PARAMS, False])
    json.dumps(PARAMS)
    for name in ("node_deactivate_master_ip", "node_change_master_netmask"):
        rpcdefs.get_call(name)
