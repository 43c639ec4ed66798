"""OS definitions on a node: reading the search path, the script environment (API 20
and 10), logs, failures with the log's tail, timeout and cancellation, hidden secrets.

The OS directories are real (under the node's root, where its search path is)
and the scripts are real processes (so these tests use the real reactor); the
script timeout and the kill grace period run on a fake clock.
"""

from __future__ import annotations

import glob
import os
import re
import tarfile
import time

import pytest
from twisted.internet import defer, reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from ganeti.core import constants
from ganeti.noded import osdir, osrun
from ganeti.noded.backend import osdefs
from ganeti.noded.backend.context import NodeContext, RPCFail, inline_runner
from ganeti.noded.bdev import files, lvm
from ganeti.noded.procs import ChildProcesses
from tests.noded.helpers import MemoryNode, node_paths

API_FILE = "ganeti_api_version"


def write(path: str, text: str, mode: int = 0o644) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def make_os(top: str, name: str, api: str = "20\n", scripts: dict[str, str] | None = None,
            variants: str | None = "default\nother\n",
            parameters: str | None = "marker A line to print\nsize-mb The size\n",
            skip: tuple[str, ...] = ()) -> str:
    """An OS definition ``top/name``; every script is ``exit 0`` unless given."""
    path = os.path.join(top, name)
    os.makedirs(path)
    if api is not None:
        write(os.path.join(path, API_FILE), api)
    for script in ("create", "import", "export", "rename", "verify"):
        if script in skip:
            continue
        body = (scripts or {}).get(script, "exit 0\n")
        write(os.path.join(path, script), "#!/bin/sh\n" + body, 0o755)
    if variants is not None:
        write(os.path.join(path, "variants.list"), variants)
    if parameters is not None:
        write(os.path.join(path, "parameters.list"), parameters)
    return path


def process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_for(predicate, what: str, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        d: defer.Deferred[None] = defer.Deferred()
        reactor.callLater(0.02, d.callback, None)
        await d


def instance(name: str = "inst1.example.com", os_name: str = "testos+default",
             disk_file: str = "/srv/disk0", **extra) -> dict:
    """An instance dict as the master's encoder sends it (filled parameters)."""
    inst = {
        "name": name, "os": os_name, "uuid": "inst-uuid-1", "ctime": 1700000000.5,
        "mtime": 1700000100.25, "primary_node": "node-uuid-1", "secondary_nodes": [],
        "hypervisor": "fake",
        "hvparams": {"disk_type": "paravirtual", "nic_type": "e1000", "kernel_path": ""},
        "beparams": {"maxmem": 128, "minmem": 128, "vcpus": 1, "auto_balance": True},
        "osparams": {"marker": "hello world", "size-mb": 5},
        "osparams_private": {},
        "nics": [
            {"mac": "aa:00:00:11:22:33", "uuid": "nic-uuid-0", "name": "eth0",
             "ip": "10.1.2.3", "nicparams": {"mode": "bridged", "link": "br0", "vlan": ""},
             "netinfo": {"name": "net1", "uuid": "net-uuid", "network": "10.1.2.0/24",
                         "gateway": "10.1.2.1", "mac_prefix": "aa:00:00",
                         "tags": ["b", "a"]}},
            {"mac": "aa:00:00:44:55:66", "uuid": "nic-uuid-1", "name": None, "ip": None,
             "nicparams": {"mode": "routed", "link": "rt1", "vlan": ""}},
        ],
        "disks_info": [
            {"dev_type": "file", "logical_id": ["loop", disk_file], "mode": "rw",
             "uuid": "disk-uuid-0", "size": 1024, "name": "root"},
            {"dev_type": "plain", "logical_id": ["xenvg", "lv1"], "mode": "ro",
             "uuid": "disk-uuid-1", "size": 512, "name": None},
        ],
    }
    inst.update(extra)
    return inst


#: The environment a script sees for instance() with API 20, variant default.
EXPECTED_API20 = {
    "OS_API_VERSION": "20", "OS_NAME": "testos", "OS_VARIANT": "default",
    "DEBUG_LEVEL": "1", "PATH": "/sbin:/bin:/usr/sbin:/usr/bin",
    "OSP_MARKER": "hello world", "OSP_SIZE_MB": "5",
    "INSTANCE_NAME": "inst1.example.com", "INSTANCE_OS": "testos+default",
    "INSTANCE_UUID": "inst-uuid-1", "INSTANCE_CTIME": "1700000000.5",
    "INSTANCE_MTIME": "1700000100.25", "INSTANCE_PRIMARY_NODE": "node-uuid-1",
    "INSTANCE_SECONDARY_NODES": "", "HYPERVISOR": "fake",
    "DISK_COUNT": "2", "NIC_COUNT": "2",
    "DISK_0_ACCESS": "rw", "DISK_0_UUID": "disk-uuid-0", "DISK_0_SIZE": "1024",
    "DISK_0_PATH": "/srv/disk0", "DISK_0_NAME": "root", "DISK_0_FRONTEND_TYPE": "paravirtual",
    "DISK_0_BACKEND_TYPE": "file:loop",
    "DISK_1_ACCESS": "ro", "DISK_1_UUID": "disk-uuid-1", "DISK_1_SIZE": "512",
    "DISK_1_PATH": "/dev/xenvg/lv1", "DISK_1_FRONTEND_TYPE": "paravirtual",
    "DISK_1_BACKEND_TYPE": "block",
    "NIC_0_MAC": "aa:00:00:11:22:33", "NIC_0_UUID": "nic-uuid-0", "NIC_0_NAME": "eth0",
    "NIC_0_IP": "10.1.2.3", "NIC_0_MODE": "bridged", "NIC_0_BRIDGE": "br0",
    "NIC_0_LINK": "br0", "NIC_0_FRONTEND_TYPE": "e1000",
    "NIC_0_NETWORK_NAME": "net1", "NIC_0_NETWORK_UUID": "net-uuid",
    "NIC_0_NETWORK_TAGS": "a b", "NIC_0_NETWORK_SUBNET": "10.1.2.0/24",
    "NIC_0_NETWORK_GATEWAY": "10.1.2.1", "NIC_0_NETWORK_MAC_PREFIX": "aa:00:00",
    "NIC_1_MAC": "aa:00:00:44:55:66", "NIC_1_UUID": "nic-uuid-1", "NIC_1_MODE": "routed",
    "NIC_1_LINK": "rt1", "NIC_1_FRONTEND_TYPE": "e1000",
    "INSTANCE_BE_maxmem": "128", "INSTANCE_BE_minmem": "128", "INSTANCE_BE_vcpus": "1",
    "INSTANCE_BE_auto_balance": "True",
    "INSTANCE_HV_disk_type": "paravirtual", "INSTANCE_HV_nic_type": "e1000",
    "INSTANCE_HV_kernel_path": "",
}

#: A script body that writes its whole environment, one NAME=value a line, to $1's file.
DUMP_ENV = 'env > "{out}"\n'


def read_env(path: str) -> dict[str, str]:
    with open(path) as f:
        lines = f.read().splitlines()
    env = dict(line.split("=", 1) for line in lines)
    env.pop("PWD", None)  # the shell's own
    env.pop("SHLVL", None)
    env.pop("_", None)
    return env


class OsTestCase(TestCase):
    timeout = 60

    def setUp(self) -> None:
        self.paths = node_paths(self)
        self.top = self.paths.os_search_path[0]
        os.makedirs(self.top)
        self.clock = Clock()
        self.clock.advance(1700000000)
        self.children = ChildProcesses(reactor, self.clock, grace=5.0)
        self.ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner,
                               children=self.children)
        # volumes have their device-mapper path here; without: tests/noded/test_lvloops.py
        self.patch(lvm, "dm_available", lambda: True)
        self.out = os.path.join(os.path.abspath(self.mktemp()))
        os.makedirs(self.out)
        self.addCleanup(self._reap)

    async def _reap(self) -> None:
        for pid in list(self.children.running):
            self.children.kill(pid, 9)
        await wait_for(lambda: not self.children.running, "children to be reaped")

    def logs(self, pattern: str = "*") -> list[str]:
        return sorted(glob.glob(os.path.join(self.paths.os_log_dir, pattern)))


class DiagnoseTest(OsTestCase):
    def test_valid_and_invalid_definitions(self):
        make_os(self.top, "good")
        make_os(self.top, "old", api="10\n", variants=None, parameters=None, skip=("verify",))
        make_os(self.top, "noapi", api=None)
        make_os(self.top, "api5", api="5\n")
        make_os(self.top, "noparams", parameters=None)
        bad = make_os(self.top, "notexec")
        os.chmod(os.path.join(bad, "rename"), 0o644)
        untrusted = make_os(self.top, "untrusted", skip=("create",))
        write(os.path.join(untrusted, "create_untrusted"), "#!/bin/sh\n", 0o755)
        make_os(self.top, "nocreate", skip=("create",))
        write(os.path.join(self.top, "afile"), "x")
        os.makedirs(os.path.join(self.top, ".hidden"))
        second = self.paths.os_search_path[3]
        make_os(second, "good", api="15\n")
        result = self.successResultOf(osdefs.os_diagnose(self.ctx))
        by_name: dict[str, list] = {}
        for row in result:
            by_name.setdefault(row[0], []).append(row)
        self.assertNotIn(".hidden", by_name)
        good = os.path.join(self.top, "good")
        self.assertEqual(by_name["good"][0], [
            "good", good, True, "", ["default", "other"],
            [["marker", "A line to print"], ["size-mb", "The size"]], [20], True])
        # the same name later on the search path is listed too (gnt-os diagnose: hidden)
        self.assertEqual(by_name["good"][1][1], os.path.join(second, "good"))
        self.assertEqual(by_name["good"][1][2:], [True, "", ["default", "other"], [], [15],
                                                  True])
        self.assertEqual(by_name["old"][0][2:], [True, "", [], [], [10], True])
        self.assertEqual(by_name["untrusted"][0][2], True)
        self.assertIs(by_name["untrusted"][0][7], False)
        path = os.path.join(self.top, "noapi")
        self.assertEqual(by_name["noapi"][0][2:4], [
            False, f"Required file 'ganeti_api_version' not found under path {path}: "
                   "No such file or directory"])
        self.assertEqual(by_name["api5"][0][3],
                         f"API version mismatch for path '{self.top}/api5': found [5], want "
                         "[10, 15, 20].")
        self.assertEqual(by_name["noparams"][0][3],
                         f"File 'parameters.list' under path '{self.top}/noparams' is missing "
                         "(No such file or directory)")
        self.assertEqual(by_name["notexec"][0][3],
                         f"File 'rename' under path '{self.top}/notexec' is not executable")
        self.assertEqual(by_name["nocreate"][0][3],
                         f"A create script (trusted or untrusted) under path "
                         f"'{self.top}/nocreate' must exist")
        self.assertEqual(by_name["afile"][0][2:4],
                         [False, "Directory for OS afile not found in search path"])
        for row in result:
            if not row[2]:
                self.assertEqual(row[4:], [[], [], [], True])

    def test_served_through_the_node_site(self):
        make_os(self.top, "good")
        node = MemoryNode(self.paths)
        status, body = node.put("os_diagnose", [])
        self.assertEqual(status, 200)
        self.assertEqual(body[0], True)
        self.assertEqual([row[0] for row in body[1]], ["good"])
        status, body = node.put("os_get", ["../etc"])
        self.assertEqual(status, 400)

    def test_os_get(self):
        path = make_os(self.top, "good")
        got = self.successResultOf(osdefs.os_get(self.ctx, "good+other"))
        self.assertEqual((got["name"], got["path"], got["api_versions"],
                          got["supported_variants"], got["create_script"],
                          got["create_untrusted_script"], got["trusted"]),
                         ("good", path, [20], ["default", "other"],
                          os.path.join(path, "create"), None, True))
        err = self.failureResultOf(osdefs.os_get(self.ctx, "missing"), RPCFail)
        self.assertEqual(str(err.value), "Directory for OS missing not found in search path")


@pytest.mark.subprocess
class ValidateTest(OsTestCase):
    def validate(self, name, params, required=True, force_variant=False,
                 checks=("parameters",)):
        return osdefs.os_validate(self.ctx, required, name, list(checks), params,
                                  force_variant)

    async def test_verify_script_sees_the_core_environment(self):
        out = os.path.join(self.out, "verify.env")
        make_os(self.top, "testos", scripts={"verify": f'echo "$@" > {out}.args\n' +
                                             DUMP_ENV.format(out=out)})
        ok = await self.validate("testos+other", {"marker": "m", "size-mb": 3})
        self.assertIs(ok, True)
        with open(out + ".args") as f:
            self.assertEqual(f.read(), "parameters\n")
        self.assertEqual(read_env(out), {
            "OS_API_VERSION": "20", "OS_NAME": "testos", "OS_VARIANT": "other",
            "DEBUG_LEVEL": "0", "PATH": "/sbin:/bin:/usr/sbin:/usr/bin",
            "OSP_MARKER": "m", "OSP_SIZE_MB": "3"})
        self.assertEqual(self.logs(), [])  # validation writes no log file

    async def test_refusals_in_ganeti_words(self):
        make_os(self.top, "testos")
        make_os(self.top, "novar", variants=None)
        cases = [
            ("testos", {}, "OS name 'testos' must include a variant"),
            ("testos+nope", {}, "OS 'testos' does not support variant 'nope'"),
            ("novar+x", {}, "OS 'novar' does not support variants ('x' passed)"),
            ("testos+default", {"zzz": 1, "aaa": 2},
             "The following parameters are not supported by the OS testos: aaa, zzz"),
            ("missing", {}, "Directory for OS missing not found in search path"),
        ]
        for name, params, message in cases:
            try:
                await self.validate(name, params)
            except RPCFail as err:
                self.assertEqual(str(err), message)
            else:
                self.fail(f"{name} accepted")
        with self.assertRaisesRegex(RPCFail, "Unknown checks required for OS testos"):
            await self.validate("testos+default", {}, checks=["nope"])
        # forced variant: not checked; missing and not required: false
        self.assertIs(await self.validate("testos+nope", {}, force_variant=True), True)
        self.assertIs(await self.validate("missing", {}, required=False), False)

    async def test_failing_verify_answers_its_output(self):
        make_os(self.top, "testos", scripts={"verify": 'echo "bad marker: $OSP_MARKER"\n'
                                                       'exit 2\n'})
        with self.assertRaises(RPCFail) as cm:
            await self.validate("testos+default", {"marker": "s3cret-value"})
        self.assertEqual(str(cm.exception), "OS validation script failed (exited with exit "
                                            "code 2), output: bad marker: <redacted>")

    async def test_api10_has_no_verify_script(self):
        make_os(self.top, "old", api="10\n", variants=None, parameters=None,
                skip=("verify",))
        self.assertIs(await self.validate("old", {"anything": 1}), True)


@pytest.mark.subprocess
class InstanceScriptsTest(OsTestCase):
    def local_disk0(self):
        return files.local(self.ctx.paths, "/srv/disk0")

    async def test_create_environment_api20(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", scripts={"create": DUMP_ENV.format(out=out)})
        result = await osdefs.instance_os_add(self.ctx, instance(), False, 1)
        self.assertIsNone(result)
        # a file disk's path as this node opens it (below the node's root)
        self.assertEqual(read_env(out), dict(EXPECTED_API20, DISK_0_PATH=self.local_disk0()))
        stamp = time.strftime("%Y-%m-%d_%H_%M_%S", time.localtime(self.clock.seconds()))
        self.assertEqual(self.logs(), [os.path.join(
            self.paths.os_log_dir, f"add-testos+default-inst1.example.com-{stamp}.log")])

    async def test_reinstall_flag_and_variant_default(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", scripts={"create": DUMP_ENV.format(out=out)})
        await osdefs.instance_os_add(self.ctx, instance(os_name="testos"), True, 0)
        env = read_env(out)
        self.assertEqual((env["INSTANCE_REINSTALL"], env["OS_VARIANT"], env["DEBUG_LEVEL"],
                          env["INSTANCE_OS"]), ("1", "default", "0", "testos"))

    async def test_create_environment_api10(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "old", api="10\n", variants="ignored\n", parameters=None,
                scripts={"create": DUMP_ENV.format(out=out)}, skip=("verify",))
        await osdefs.instance_os_add(self.ctx, instance(os_name="old"), False, 1)
        expected = dict(EXPECTED_API20, OS_API_VERSION="10", OS_NAME="old", OS_VARIANT="",
                        INSTANCE_OS="old", DISK_0_PATH=self.local_disk0())
        self.assertEqual(read_env(out), expected)

    async def test_highest_common_version_is_used(self):
        out = os.path.join(self.out, "create.env")
        make_os(self.top, "testos", api="25\n15\n10\n",
                scripts={"create": DUMP_ENV.format(out=out)})
        await osdefs.instance_os_add(self.ctx, instance(), False, 0)
        self.assertEqual(read_env(out)["OS_API_VERSION"], "15")

    async def test_failure_answers_the_tail_of_the_log(self):
        body = "i=1\nwhile [ $i -le 30 ]; do echo \"line $i\"; i=$((i+1)); done\n" \
               "echo 'to stderr' >&2\nprintf 'tab\\there'\nexit 3\n"
        make_os(self.top, "testos", scripts={"create": body})
        with self.assertRaises(RPCFail) as cm:
            await osdefs.instance_os_add(self.ctx, instance(), False, 0)
        lines = [f"line {i}" for i in range(13, 31)] + ["to stderr", "tab\\there"]
        self.assertEqual(str(cm.exception),
                         "OS create script failed (exited with exit code 3), last lines in "
                         "the log file:\n" + "\n".join(lines))
        [log] = self.logs("add-testos+default-inst1.example.com-*.log")
        with open(log) as f:
            text = f.read()
        self.assertEqual(text.splitlines()[:2], ["line 1", "line 2"])
        self.assertTrue(text.endswith("to stderr\ntab\there"))

    async def test_secret_and_private_parameters_are_passed_but_never_logged(self):
        seen = os.path.join(self.out, "seen")
        body = (f'echo "token=$OSP_TOKEN pw=$OSP_PW marker=$OSP_MARKER"\n'
                f'echo "$OSP_TOKEN $OSP_PW" > {seen}\n'
                'echo "$OSP_TOKEN" >&2\nexit 1\n')
        make_os(self.top, "testos", scripts={"create": body},
                parameters="marker m\nsize-mb s\ntoken t\npw p\n")
        inst = instance(osparams={"marker": "visible", "size-mb": 5,
                                  "token": "tok-123456789"},
                        osparams_private={"pw": "hunter22"}, osparams_secret=["token"])
        with self.assertRaises(RPCFail) as cm:
            await osdefs.instance_os_add(self.ctx, inst, False, 0)
        with open(seen) as f:
            self.assertEqual(f.read(), "tok-123456789 hunter22\n")
        [log] = self.logs()
        with open(log) as f:
            text = f.read()
        for where in (text, str(cm.exception)):
            self.assertNotIn("tok-123456789", where)
            self.assertNotIn("hunter22", where)
            self.assertIn("token=<redacted> pw=<redacted> marker=visible", where)

    def test_secret_split_across_chunks_is_hidden(self):
        log = osrun.ScriptLog(None, ["abcdefgh"])
        for chunk in (b"x abcd", b"efgh y\n", b"tail abc", b"defgh"):
            log.feed(chunk)
        log.close()
        self.assertEqual(log.last_lines(), "x <redacted> y\ntail <redacted>")

    async def start_sleeper(self) -> tuple[defer.Deferred[None], int, int]:
        """A create script that starts a long sleep in its group and waits for it:
        the call's Deferred, the shell's and the sleep's pids."""
        pids = os.path.join(self.out, "pids")
        make_os(self.top, "testos", scripts={
            "create": f"sleep 600 & echo $$ $! > {pids}\necho started\nwait\n"})
        d = osdefs.instance_os_add(self.ctx, instance(), False, 0)
        await wait_for(lambda: os.path.exists(pids) and os.path.getsize(pids) > 0, "pids")
        with open(pids) as f:
            shell, child = (int(x) for x in f.read().split())
        return d, shell, child

    async def test_timeout_kills_the_process_group(self):
        d, shell, child = await self.start_sleeper()
        self.clock.advance(osdefs.CREATE_TIMEOUT)
        with self.assertRaises(RPCFail) as cm:
            await d
        self.assertEqual(str(cm.exception),
                         f"OS create script failed (timeout after {osdefs.CREATE_TIMEOUT:g}s), "
                         "last lines in the log file:\nstarted")
        # the group got SIGKILL; under load the kernel may take a moment to end it
        await wait_for(lambda: process_gone(shell) and process_gone(child), "the group to end")

    async def test_cancel_kills_the_process_group(self):
        d, shell, child = await self.start_sleeper()
        d.cancel()
        self.failureResultOf(d, defer.CancelledError)
        await wait_for(lambda: process_gone(shell) and process_gone(child), "the group to end")

    async def test_rename_environment_and_log_name(self):
        out = os.path.join(self.out, "rename.env")
        make_os(self.top, "testos", scripts={"rename": DUMP_ENV.format(out=out)})
        inst = instance(name="new.example.com")
        await osdefs.instance_run_rename(self.ctx, inst, "old.example.com", 0)
        env = read_env(out)
        self.assertEqual((env["OLD_INSTANCE_NAME"], env["INSTANCE_NAME"]),
                         ("old.example.com", "new.example.com"))
        [log] = self.logs()
        self.assertTrue(re.fullmatch(r"rename-testos\+default-old\.example\.com-"
                                     r"new\.example\.com-[0-9_-]+\.log", os.path.basename(log)))

    async def test_rename_failure(self):
        make_os(self.top, "testos", scripts={"rename": "echo no way\nexit 4\n"})
        with self.assertRaises(RPCFail) as cm:
            await osdefs.instance_run_rename(self.ctx, instance(), "old.example.com", 0)
        self.assertEqual(str(cm.exception), "OS rename script failed (exited with exit code "
                                            "4), last lines in the log file:\nno way")

    async def test_bad_names_change_nothing(self):
        make_os(self.top, "testos")
        for inst, old in ((instance(name="../../etc/x"), "a"), (instance(os_name="../x"), "a"),
                          (instance(), "bad/name")):
            with self.assertRaises(RPCFail):
                await osdefs.instance_run_rename(self.ctx, inst, old, 0)
        with self.assertRaises(RPCFail):
            await osdefs.instance_os_add(self.ctx, instance(name="a/b"), False, 0)
        self.assertFalse(os.path.exists(self.paths.os_log_dir))

    async def test_untrusted_create_is_refused(self):
        untrusted = make_os(self.top, "untr", skip=("create",))
        write(os.path.join(untrusted, "create_untrusted"), "#!/bin/sh\n", 0o755)
        with self.assertRaisesRegex(RPCFail, "only an untrusted create script"):
            await osdefs.instance_os_add(self.ctx, instance(os_name="untr+default"), False, 0)

    def test_no_process_reactor(self):
        make_os(self.top, "testos")
        ctx = NodeContext(paths=self.paths, clock=self.clock, run=inline_runner)
        err = self.failureResultOf(osdefs.instance_os_add(ctx, instance(), False, 0), RPCFail)
        self.assertEqual(str(err.value), "This node daemon cannot start programs")

    async def test_os_export_packs_definition_and_environment(self):
        make_os(self.top, "testos")
        package = await osdefs.os_export(self.ctx, instance(), {"EXTRA": "1",
                                                                "DISK_0_PATH": "/x"})
        self.addCleanup(os.unlink, package)
        with tarfile.open(package) as tar:
            names = set(tar.getnames())
            env_text = tar.extractfile("./environment").read().decode()
        self.assertTrue({"./os/create", "./os/ganeti_api_version", "./environment"} <= names)
        env = dict(line.split("=", 1) for line in env_text.splitlines())
        self.assertEqual((env["EXTRA"], env["DISK_0_PATH"], env["INSTANCE_NAME"]),
                         ("1", "/x", "inst1.example.com"))


class ReadingTest(TestCase):
    def test_variants_skip_comments_and_blank_lines(self):
        top = os.path.abspath(self.mktemp())
        make_os(top, "v", variants="# comment\n\n  one \ntwo\n")
        self.assertEqual(osdir.find_definition("v", [top]).variants, ["one", "two"])

    def test_search_path_order(self):
        first, second = (os.path.abspath(self.mktemp()) for _ in range(2))
        make_os(second, "x")
        make_os(first, "x", api="15\n")
        self.assertEqual(osdir.find_definition("x+default", [first, second]).path,
                         os.path.join(first, "x"))
        self.assertIsNone(osdir.find_dir("..", [first]))

    def test_node_search_path_is_under_the_root(self):
        paths = node_paths(self)
        self.assertEqual(paths.os_search_path, tuple(
            paths.root + p for p in ("/srv/ganeti/os", "/usr/local/lib/ganeti/os",
                                     "/usr/lib/ganeti/os", "/usr/share/ganeti/os")))
        self.assertEqual(paths.os_log_dir, paths.root + "/var/log/ganeti/os")
        self.assertEqual(osdir.API_VERSIONS, frozenset(constants.OS_API_VERSIONS))


@pytest.mark.subprocess
class ChildProcessOptionsTest(TestCase):
    """What the OS scripts need of ganeti/noded/procs.py: the exact environment, one
    ordered output stream, and all of it to a sink."""

    timeout = 30

    async def test_environment_is_exactly_the_given_one(self):
        children = ChildProcesses(reactor, Clock())
        out = await children.run(["/usr/bin/env"], env={"A": "1"})
        self.assertEqual(out.stdout, b"A=1\n")  # no LC_CTYPE from Python's locale coercion
        out = await children.run(["/usr/bin/env"], env={"LC_CTYPE": "C.UTF-8"})
        self.assertEqual(out.stdout, b"LC_CTYPE=C.UTF-8\n")

    async def test_merged_output_to_a_sink(self):
        seen: list[bytes] = []
        script = "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done"
        children = ChildProcesses(reactor, Clock(), max_output=8)
        out = await children.run(["/bin/sh", "-c", script], env={}, merge_stderr=True,
                                 on_output=seen.append)
        self.assertEqual(b"".join(seen), b"".join(b"out%d\nerr%d\n" % (i, i)
                                                  for i in range(1, 6)))
        self.assertEqual((out.stdout, out.stderr, out.truncated), (b"out1\nerr", b"", True))
