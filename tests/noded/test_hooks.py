"""noded's hooks_runner: real scripts in a temporary hooks directory.

The scripts are real processes (so these tests use the real reactor); the
script timeout and the kill grace period run on a fake clock, so nothing
waits for a timeout.
"""

import json
import os
import time

import pytest
from twisted.internet import defer, reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core import hooks, rpcdefs
from ganeti.core.textutil import safe_encode
from ganeti.noded.backend import hooks as hooksmod
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.procs import ChildProcesses
from tests.noded.helpers import MemoryNode, node_paths

ENV = {"GANETI_HOOKS_VERSION": "2", "GANETI_OP_CODE": "OP_GROUP_ADD",
       "GANETI_NODE_TAGS_node1.example.com": "a b", "GANETI_MSG": "x y\tz"}


def write_script(directory, name, body, mode=0o755, shebang="#!/bin/sh"):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(shebang + "\n" + body)
    os.chmod(path, mode)
    return path


def process_gone(pid):
    """Whether ``pid`` has ended (absent, or a zombie waiting for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.subprocess
class RunnerTest(TestCase):
    timeout = 60

    def setUp(self):
        self.base = os.path.abspath(self.mktemp())
        self.pre = os.path.join(self.base, "group-add-pre.d")
        self.clock = Clock()
        self.children = ChildProcesses(reactor, self.clock)
        os.makedirs(self.pre)

    def run_phase(self, hpath="group-add", phase="pre", env=ENV, timeout=30.0):
        return defer.Deferred.fromCoroutine(hooksmod.run_hooks(
            self.base, hpath, phase, env, children=self.children, run=inline_runner,
            timeout=timeout))

    @defer.inlineCallbacks
    def test_order_env_and_skips(self):
        log = os.path.join(self.base, "order")
        envfile = os.path.join(self.base, "env.json")
        write_script(self.pre, "20-b", f"echo b >> {log}\n")
        # python, not sh: dash drops names with dots (node names) from what it exports
        write_script(self.pre, "10-a", "import json, os\n"
                     f"json.dump(dict(os.environ), open({envfile!r}, 'w'))\n"
                     f"open({log!r}, 'a').write('a\\n' + os.getcwd() + '\\n')\n",
                     shebang="#!/usr/bin/python3")
        write_script(self.pre, "30_C", f"echo c >> {log}\necho done\n")
        write_script(self.pre, "15-notexec", f"echo bad >> {log}\n", mode=0o644)
        write_script(self.pre, "bad.name", f"echo bad >> {log}\n")
        write_script(self.pre, ".hidden", f"echo bad >> {log}\n")
        os.makedirs(os.path.join(self.pre, "25-dir"))
        results = yield self.run_phase()
        self.assertEqual(results, [
            ["group-add-pre.d/10-a", hooks.HKR_SUCCESS, ""],
            ["group-add-pre.d/15-notexec", hooks.HKR_SKIP, ""],
            ["group-add-pre.d/20-b", hooks.HKR_SUCCESS, ""],
            ["group-add-pre.d/25-dir", hooks.HKR_SKIP, ""],
            ["group-add-pre.d/30_C", hooks.HKR_SUCCESS, "done"],
            ["group-add-pre.d/bad.name", hooks.HKR_SKIP, ""],
        ])
        with open(log) as f:
            self.assertEqual(f.read().split(), ["a", "/", "b", "c"])
        with open(envfile) as f:
            env = json.load(f)
        env.pop("LC_CTYPE", None)  # python3 itself adds it (PEP 538)
        self.assertEqual(env, {**ENV, "PATH": hooks.HOOKS_PATH})

    @defer.inlineCallbacks
    def test_failure_output_is_stdout_then_stderr_escaped(self):
        write_script(self.pre, "50-deny", "echo 'no groups today'\necho err >&2\n"
                     "printf 'caf\\303\\251\\t!\\n'\nexit 3\n")
        write_script(self.pre, "60-silent", "exit 1\n")
        write_script(self.pre, "70-after", "echo still runs\n")
        results = yield self.run_phase()
        self.assertEqual(results, [
            ["group-add-pre.d/50-deny", hooks.HKR_FAIL,
             "no groups today\\ncaf\\xe9\\t!\\nerr"],
            ["group-add-pre.d/60-silent", hooks.HKR_FAIL, ""],
            ["group-add-pre.d/70-after", hooks.HKR_SUCCESS, "still runs"],
        ])

    @defer.inlineCallbacks
    def test_missing_directory_has_no_scripts(self):
        self.assertEqual((yield self.run_phase(phase="post")), [])
        self.assertEqual((yield self.run_phase(hpath="node-add")), [])

    @defer.inlineCallbacks
    def test_timeout_ends_the_script_and_its_children(self):
        pidfile = os.path.join(self.base, "child.pid")
        write_script(self.pre, "10-slow", f"echo started\nsleep 60 &\necho $! > {pidfile}\n"
                     "wait\n")
        write_script(self.pre, "20-next", "echo next\n")
        d = self.run_phase(timeout=2.0)
        deadline = time.monotonic() + 20
        while not os.path.exists(pidfile) or not os.path.getsize(pidfile):
            self.assertLess(time.monotonic(), deadline, "the script did not start")
            yield deferLater(0.02)
        self.assertFalse(d.called)
        self.clock.advance(2.0)  # the timeout: SIGTERM to the script's session
        results = yield d
        self.assertEqual(results[0][:2], ["group-add-pre.d/10-slow", hooks.HKR_FAIL])
        self.assertEqual(results[0][2],
                         "started\\nterminated after timeout of 2.00 seconds")
        self.assertEqual(results[1], ["group-add-pre.d/20-next", hooks.HKR_SUCCESS, "next"])
        with open(pidfile) as f:
            child = int(f.read())
        while not process_gone(child):
            self.assertLess(time.monotonic(), deadline, "the script's child still runs")
            yield deferLater(0.02)

    @defer.inlineCallbacks
    def start_slow_script(self):
        """Run a phase whose script sleeps; (its Deferred, the script's pid, a deadline)."""
        pidfile = os.path.join(self.base, "script.pid")
        write_script(self.pre, "10-slow", f"echo $$ > {pidfile}\nexec sleep 60\n")
        d = self.run_phase()
        deadline = time.monotonic() + 20
        while not os.path.exists(pidfile) or not os.path.getsize(pidfile):
            self.assertLess(time.monotonic(), deadline, "the script did not start")
            yield deferLater(0.02)
        with open(pidfile) as f:
            pid = int(f.read())
        return d, pid, deadline

    @defer.inlineCallbacks
    def test_cancel_ends_the_running_script(self):
        d, pid, deadline = yield self.start_slow_script()
        d.cancel()
        yield self.assertFailure(d, defer.CancelledError)
        while not process_gone(pid):
            self.assertLess(time.monotonic(), deadline, "the script still runs")
            yield deferLater(0.02)

    @defer.inlineCallbacks
    def test_stopping_the_daemon_ends_the_running_script(self):
        d, pid, _ = yield self.start_slow_script()
        yield self.children.stop_all()  # what noded does when it stops
        self.assertTrue(process_gone(pid))
        results = yield d
        self.assertEqual(results[0][:2], ["group-add-pre.d/10-slow", hooks.HKR_FAIL])
        self.assertEqual(self.children.running, {})


def deferLater(seconds):
    from twisted.internet import task
    return task.deferLater(reactor, seconds, lambda: None)


@pytest.mark.subprocess
class CallTest(TestCase):
    timeout = 60

    def test_table_checks_the_arguments(self):
        call = rpcdefs.get_call("hooks_runner")
        call.check_args(["group-add", "pre", ENV])
        call.check_args(["config-update", "post", {"PATH": "/bin"}])
        for bad in (["../etc", "pre", {}], ["group-add", "during", {}],
                    ["Group-Add", "pre", {}], ["group-add", "pre", {"LD_PRELOAD": "x"}],
                    ["group-add", "pre", {"GANETI_": "x"}],
                    ["group-add", "pre", {"GANETI_A=B": "x"}],
                    ["group-add", "pre", {"GANETI_A": 1}],
                    ["group-add", "pre", {"GANETI_A": "a\0b"}],
                    ["group-add", "pre", []]):
            self.assertRaises(rpcdefs.RpcArgumentError, call.check_args, bad)
        self.assertEqual(call.timeout_for(["group-add", "pre", {}]), rpcdefs.RPC_TMO_NORMAL)

    def test_results_decoder(self):
        call = rpcdefs.get_call("hooks_runner")
        self.assertEqual(call.decode_payload([["a-pre.d/x", 2, "out"]]),
                         [("a-pre.d/x", 2, "out")])
        for bad in ({}, [["x", 3, ""]], [["x", True, ""]], [["x", 1]], [[1, 1, ""]]):
            self.assertRaises(rpcdefs.RpcReplyError, call.decode_payload, bad)

    @defer.inlineCallbacks
    def test_handler_runs_the_node_hooks_directory(self):
        paths = node_paths(self)
        write_script(os.path.join(paths.hooks_base_dir, "node-modify-post.d"), "00-env",
                     "echo $GANETI_OP_CODE on $PATH\n")
        ctx = NodeContext(paths=paths, clock=Clock(), run=inline_runner, processes=reactor)
        results = yield hooksmod.hooks_runner(ctx, "node-modify", "post",
                                              {"GANETI_OP_CODE": "OP_NODE_SET_PARAMS"})
        self.assertEqual(results, [["node-modify-post.d/00-env", hooks.HKR_SUCCESS,
                                    f"OP_NODE_SET_PARAMS on {hooks.HOOKS_PATH}"]])
        self.assertEqual(paths.hooks_base_dir, os.path.join(paths.conf_dir, "hooks"))

    def test_handler_without_process_reactor(self):
        paths = node_paths(self)
        ctx = NodeContext(paths=paths, clock=Clock(), run=inline_runner)
        self.assertEqual(self.successResultOf(
            hooksmod.hooks_runner(ctx, "group-add", "pre", {})), [])
        write_script(os.path.join(paths.hooks_base_dir, "group-add-pre.d"), "00-x", "true\n")
        self.failureResultOf(hooksmod.hooks_runner(ctx, "group-add", "pre", {}), RPCFail)

    def test_bad_request_is_refused_by_the_daemon(self):
        node = MemoryNode(node_paths(self))
        status, _ = node.exchange("PUT", "/hooks_runner",
                                  json.dumps(["group-add", "pre", {"HOME": "/"}]).encode())
        self.assertEqual(status, 400)


class EncodingTest(TestCase):
    def test_safe_encode_as_ganeti(self):
        self.assertEqual(safe_encode("a\nb\tc\rd\x01é"), "a\\nb\\tc\\'rd\\x01\\xe9")
