"""The master's hooks runner: environment, target nodes, pre-hook aborts, post-hook
warnings and cluster verify's hooks report, through the real processor and units.

The master runs on a fake clock with in-process node daemons
(tests/fakes/nodes.py); their ``hooks_runner`` is replaced by a recorder whose
answers each test scripts (the real runner is tested with real scripts in
tests/noded/test_hooks.py and on a virtual cluster in
tests/integration/test_hooks.py).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import errors
from ganeti.core import hooks as hookdefs
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.hooks import HooksRunner
from ganeti.rpc.client import RpcResult
from tests.fakes.configs import small_config
from tests.fakes.nodes import master_with_nodes

FAIL, OK, SKIP = hookdefs.HKR_FAIL, hookdefs.HKR_SUCCESS, hookdefs.HKR_SKIP


class RecordingHooks:
    """Stands in for noded's hooks_runner: records each run, answers as scripted."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str, str, dict[str, str]]] = []
        #: (node, hpath, phase) -> the answer
        self.answers: dict[tuple[str, str, str], list[list[Any]]] = {}

    def __call__(self, ctx: Any, hpath: str, phase: str, env: dict[str, str]) -> Any:
        node = ctx.paths.hostname
        self.runs.append((node, hpath, phase, env))
        return self.answers.get((node, hpath, phase), [])

    def where(self, hpath: str, phase: str) -> list[str]:
        return [node for node, h, p, _ in self.runs if (h, p) == (hpath, phase)]

    def env(self, node: str, hpath: str, phase: str) -> dict[str, str]:
        (env,) = [e for n, h, p, e in self.runs if (n, h, p) == (node, hpath, phase)]
        return env


class MasterHooksTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 3)
        self.hooks = RecordingHooks()
        self.net.handlers["hooks_runner"] = self.hooks
        for k in (2, 3):
            self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": f"node{k}.test",
                         "primary_ip": f"127.0.1.{k}", "readd": False})
        self.hooks.runs.clear()
        cfg = self.master.config
        self.uuid = {n.name: u for u, n in cfg.nodes.items()}
        self.data_dir = self.master.paths.data_dir

    def job(self, *ops: dict[str, Any]) -> tuple[str, list[Any], list[str]]:
        return self.master.finish(self.master.submit(*ops))

    def run_ok(self, *ops: dict[str, Any]) -> list[str]:
        status, results, log = self.job(*ops)
        self.assertEqual(status, "success", (results, log))
        return log

    def fixed(self, hpath: str, phase: str, opcode: str, htype: str | None) -> dict[str, str]:
        env = {"PATH": hookdefs.HOOKS_PATH, "GANETI_HOOKS_VERSION": "2",
               "GANETI_OP_CODE": opcode, "GANETI_DATA_DIR": self.data_dir,
               "GANETI_HOOKS_PHASE": phase, "GANETI_HOOKS_PATH": hpath,
               "GANETI_CLUSTER": self.master.config.cluster.cluster_name,
               "GANETI_MASTER": "node1.test"}
        if htype:
            env["GANETI_OBJECT_TYPE"] = htype
        return env

    # -- pre hooks ---------------------------------------------------------------

    def test_failing_pre_hook_aborts_and_changes_nothing(self):
        self.hooks.answers[("node1.test", "group-add", "pre")] = [
            ["group-add-pre.d/10-ok", OK, ""],
            ["group-add-pre.d/50-deny", FAIL, "no groups today\\nerr"],
            ["group-add-pre.d/60-deny", FAIL, ""]]
        serial = self.master.config.serial_no
        status, results, _ = self.job({"OP_ID": "OP_GROUP_ADD", "group_name": "g1"})
        self.assertEqual(status, "error")
        master = self.uuid["node1.test"]
        self.assertEqual(results, [["HooksAbort", [[
            [master, "group-add-pre.d/50-deny", "no groups today\\nerr"],
            [master, "group-add-pre.d/60-deny", ""]]]]])
        self.assertIsNone(self.master.config.group_by_name("g1"))
        self.assertEqual(self.master.config.serial_no, serial)
        self.assertEqual(self.hooks.where("group-add", "pre"), ["node1.test"])
        self.assertEqual(self.hooks.where("group-add", "post"), [])

    def test_pre_hook_communication_failure_is_a_warning(self):
        self.net.down.add("node3.test")
        log = self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                           "drained": True})
        self.assertTrue(any(line.startswith(
            f" - WARNING: Communication failure to node {self.uuid['node3.test']}: ")
            for line in log), log)

    # -- environment and nodes ---------------------------------------------------

    def test_group_add_environment(self):
        self.run_ok({"OP_ID": "OP_GROUP_ADD", "group_name": "g1"})
        self.assertEqual(self.hooks.where("group-add", "pre"), ["node1.test"])
        self.assertEqual(self.hooks.where("group-add", "post"), ["node1.test"])
        pre = self.fixed("group-add", "pre", "OP_GROUP_ADD", "GROUP")
        self.assertEqual(self.hooks.env("node1.test", "group-add", "pre"),
                         {**pre, "GANETI_GROUP_NAME": "g1"})
        post = self.fixed("group-add", "post", "OP_GROUP_ADD", "GROUP")
        self.assertEqual(self.hooks.env("node1.test", "group-add", "post"),
                         {**post, "GANETI_GROUP_NAME": "g1", "GANETI_POST_GROUP_NAME": "g1"})

    def test_node_modify_runs_on_master_and_node_with_flags(self):
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node2", "drained": True})
        for phase in ("pre", "post"):
            self.assertEqual(sorted(self.hooks.where("node-modify", phase)),
                             ["node1.test", "node2.test"])
        env = self.hooks.env("node2.test", "node-modify", "post")
        self.assertEqual(env, {
            **self.fixed("node-modify", "post", "OP_NODE_SET_PARAMS", "NODE"),
            **{f"GANETI_{p}{k}": v for p in ("", "POST_") for k, v in (
                ("OP_TARGET", "node2.test"), ("MASTER_CANDIDATE", "None"),
                ("OFFLINE", "None"), ("DRAINED", "True"), ("MASTER_CAPABLE", "None"),
                ("VM_CAPABLE", "None"))}})

    def test_offline_nodes_are_never_contacted(self):
        self.run_ok({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": "node3.test",
                     "offline": True})
        self.net.contacted.clear()
        self.hooks.runs.clear()
        self.run_ok({"OP_ID": "OP_GROUP_RENAME", "group_name": "default", "new_name": "main"})
        self.assertEqual(self.hooks.where("group-rename", "pre"), ["node1.test", "node2.test"])
        _, results, _ = self.job({"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": "main"})
        self.assertEqual(self.hooks.where("cluster-verify", "post"),
                         ["node1.test", "node2.test"])
        self.assertNotIn(("node3.test", "hooks_runner"), self.net.contacted)
        env = self.hooks.env("node2.test", "group-rename", "post")
        self.assertEqual((env["GANETI_OLD_NAME"], env["GANETI_NEW_NAME"],
                          env["GANETI_POST_NEW_NAME"]), ("default", "main", "main"))

    def test_node_add_and_remove_nodes(self):
        self.run_ok({"OP_ID": "OP_NODE_REMOVE", "node_name": "node3.test"})
        # not on the node removed, so that a broken node can still be removed
        self.assertEqual(sorted(self.hooks.where("node-remove", "pre")),
                         ["node1.test", "node2.test"])
        self.assertEqual(self.hooks.env("node1.test", "node-remove", "pre")["GANETI_NODE_NAME"],
                         "node3.test")
        self.hooks.runs.clear()
        self.net.wipe("node3.test")
        self.net.add("node3.test", "127.0.1.3")
        self.net.down.discard("node3.test")
        self.run_ok({"OP_ID": "OP_NODE_ADD", "node_name": "node3.test",
                     "primary_ip": "127.0.1.3", "readd": False})
        self.assertEqual(sorted(self.hooks.where("node-add", "pre")),
                         ["node1.test", "node2.test"])
        # the new node too, after it was added
        self.assertEqual(sorted(self.hooks.where("node-add", "post")),
                         ["node1.test", "node2.test", "node3.test"])
        env = self.hooks.env("node3.test", "node-add", "post")
        self.assertEqual({k: env[k] for k in ("GANETI_OBJECT_TYPE", "GANETI_NODE_NAME",
                                              "GANETI_NODE_PIP", "GANETI_NODE_SIP",
                                              "GANETI_MASTER_CAPABLE", "GANETI_POST_NODE_PIP")},
                         {"GANETI_OBJECT_TYPE": "NODE", "GANETI_NODE_NAME": "node3.test",
                          "GANETI_NODE_PIP": "127.0.1.3", "GANETI_NODE_SIP": "127.0.1.3",
                          "GANETI_MASTER_CAPABLE": "True", "GANETI_POST_NODE_PIP": "127.0.1.3"})

    def test_units_without_hooks_path_run_only_config_update(self):
        self.run_ok({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["a"]},
                    {"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "default",
                     "nodes": ["node2.test"]})
        self.assertEqual([(n, h, p) for n, h, p, _ in self.hooks.runs],
                         [("node1.test", "config-update", "post")] * 2)
        self.assertEqual([e["GANETI_OP_CODE"] for *_, e in self.hooks.runs],
                         ["OP_TAGS_SET", "OP_GROUP_ASSIGN_NODES"])
        self.assertEqual(self.hooks.runs[0][3],
                         self.fixed("config-update", "post", "OP_TAGS_SET", None))

    def test_units_that_change_nothing_run_no_hooks(self):
        self.run_ok({"OP_ID": "OP_TAGS_GET", "kind": "cluster"},
                    {"OP_ID": "OP_CLUSTER_QUERY"})
        self.assertEqual(self.hooks.runs, [])

    # -- the config-update hook (Ganeti's, after a unit that wrote the config) ----

    def test_config_update_runs_on_the_master_with_the_pre_environment(self):
        self.run_ok({"OP_ID": "OP_GROUP_ADD", "group_name": "g1"})
        self.assertEqual(self.hooks.where("config-update", "post"), ["node1.test"])
        self.assertEqual(self.hooks.env("node1.test", "config-update", "post"),
                         {**self.fixed("config-update", "post", "OP_GROUP_ADD", "GROUP"),
                          "GANETI_GROUP_NAME": "g1"})
        order = [(h, p) for _, h, p, _ in self.hooks.runs]
        self.assertEqual(order, [("group-add", "pre"), ("group-add", "post"),
                                 ("config-update", "post")])

    def test_config_update_failure_stays_out_of_the_job(self):
        self.hooks.answers[("node1.test", "config-update", "post")] = [
            ["config-update-post.d/10-fail", FAIL, "cannot back up"]]
        log = self.run_ok({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["a"]})
        self.assertEqual([line for line in log if "WARNING" in line or "config-update" in line],
                         [])
        self.assertEqual(self.master.config.cluster.tags, ["a"])

    def test_a_unit_aborted_before_writing_runs_no_config_update(self):
        self.hooks.answers[("node1.test", "group-add", "pre")] = [
            ["group-add-pre.d/50-deny", FAIL, "no"]]
        self.job({"OP_ID": "OP_GROUP_ADD", "group_name": "g1"})
        self.assertEqual(self.hooks.where("config-update", "post"), [],
                         "nothing was written: no config-update hook")

    def test_cluster_modify(self):
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "candidate_pool_size": 5})
        self.assertEqual(self.hooks.where("cluster-modify", "pre"), ["node1.test"])
        env = self.hooks.env("node1.test", "cluster-modify", "post")
        self.assertEqual((env["GANETI_OBJECT_TYPE"], env["GANETI_OP_TARGET"],
                          env["GANETI_NEW_VG_NAME"], env["GANETI_POST_OP_TARGET"]),
                         ("CLUSTER", self.master.config.cluster.cluster_name, "None",
                          self.master.config.cluster.cluster_name))

    def test_cluster_modify_vg_name(self):
        self.run_ok({"OP_ID": "OP_CLUSTER_SET_PARAMS", "vg_name": "fastvg"})
        for phase in ("pre", "post"):
            env = self.hooks.env("node1.test", "cluster-modify", phase)
            self.assertEqual(env["GANETI_NEW_VG_NAME"], "fastvg")

    # -- post hooks --------------------------------------------------------------

    def test_failing_post_hook_is_reported_not_fatal(self):
        self.hooks.answers[("node1.test", "group-add", "post")] = [
            ["group-add-post.d/10-log", FAIL, "disk full"],
            ["group-add-post.d/20-silent", FAIL, ""],
            ["group-add-post.d/30-ok", OK, "fine"],
            ["group-add-post.d/40-skip", SKIP, ""]]
        log = self.run_ok({"OP_ID": "OP_GROUP_ADD", "group_name": "g1"})
        master = self.uuid["node1.test"]
        self.assertEqual([line for line in log if "WARNING" in line], [
            f" - WARNING: On {master} script group-add-post.d/10-log failed, output: disk full",
            f" - WARNING: On {master} script group-add-post.d/20-silent failed, output: "
            "(no output)"])
        self.assertIsNotNone(self.master.config.group_by_name("g1"))

    def test_cluster_verify_reports_hook_failures(self):
        self.hooks.answers[("node2.test", "cluster-verify", "post")] = [
            ["cluster-verify-post.d/10-fail", FAIL, "line one\\nline two"]]
        self.hooks.answers[("node3.test", "cluster-verify", "post")] = [
            ["cluster-verify-post.d/10-silent", FAIL, ""]]
        self.run_ok({"OP_ID": "OP_TAGS_SET", "kind": "cluster", "tags": ["t2", "t1"]},
                    {"OP_ID": "OP_TAGS_SET", "kind": "node", "name": "node1.test",
                     "tags": ["ntag"]})
        self.hooks.runs.clear()
        status, results, log = self.job({"OP_ID": "OP_CLUSTER_VERIFY_GROUP",
                                         "group_name": "default"})
        self.assertEqual(status, "success")
        self.assertEqual(results, [False])
        self.assertEqual(self.hooks.where("cluster-verify", "pre"), [])
        self.assertEqual(self.hooks.where("cluster-verify", "post"),
                         ["node1.test", "node2.test", "node3.test"])
        env = self.hooks.env("node1.test", "cluster-verify", "post")
        self.assertEqual({k: v for k, v in env.items() if "TAGS" in k}, {
            "GANETI_CLUSTER_TAGS": "t1 t2", "GANETI_POST_CLUSTER_TAGS": "t1 t2",
            **{f"GANETI_{p}NODE_TAGS_{n}": t for p in ("", "POST_")
               for n, t in (("node1.test", "ntag"), ("node2.test", ""), ("node3.test", ""))}})
        n2, n3 = self.uuid["node2.test"], self.uuid["node3.test"]
        tail = log[log.index("* Hooks Results") - 2:]
        self.assertEqual(tail, [
            f" - WARNING: On {n2} script cluster-verify-post.d/10-fail failed, output: "
            "line one\\nline two",
            f" - WARNING: On {n3} script cluster-verify-post.d/10-silent failed, output: "
            "(no output)",
            "* Hooks Results",
            f"  - ERROR: node {n2}: Script cluster-verify-post.d/10-fail failed, output:",
            "      line one\\nline two",
            f"  - ERROR: node {n3}: Script cluster-verify-post.d/10-silent failed, output:",
            "      "])

    def test_cluster_verify_with_good_hooks(self):
        status, results, log = self.job({"OP_ID": "OP_CLUSTER_VERIFY_GROUP",
                                         "group_name": "default"})
        self.assertEqual(log[-1], "* Hooks Results")
        self.assertNotIn("ENODEHOOKS", "".join(log))

    def test_cluster_verify_hooks_communication_failure(self):
        self.net.down.add("node3.test")
        _, results, log = self.job({"OP_ID": "OP_CLUSTER_VERIFY_GROUP",
                                    "group_name": "default", "error_codes": True})
        self.assertEqual(results, [False])
        self.assertTrue(any(line.startswith(
            f"  - ERROR:ENODEHOOKS:node:{self.uuid['node3.test']}:Communication failure in "
            "hooks execution: ") for line in log), log)


class EnvTest(SynchronousTestCase):
    """The environment rules, on a bare unit."""

    def setUp(self) -> None:
        self.cfg = small_config()
        self.calls: list[tuple[list[Any], str, list[Any]]] = []
        self.log: list[str] = []

        class Rpc:
            def call(rpc, nodes, call_name, args=(), timeout=None):  # noqa: N805
                self.calls.append((list(nodes), call_name, list(args)))
                return defer.succeed({n.name: RpcResult(n.name, True, payload=[])
                                      for n in nodes})

        self.runner = HooksRunner(lambda: Rpc(), "/var/lib/ganeti")
        master = self.cfg.cluster.master_node
        self.ctx = SimpleNamespace(config=SimpleNamespace(config=self.cfg),
                                   feedback=lambda kind, msg: self.log.append(msg))

        class LU(LogicalUnit):
            OP_ID = "OP_TEST_ONE"
            HPATH = "test-one"
            value = "before"

            def build_hooks_env(lu):  # noqa: N805
                return {"VALUE": lu.value, "FLAG": True, "NONE": None, "N": 3}

            def build_hooks_nodes(lu):  # noqa: N805
                return [master, master], [master]

        self.lu = LU(self.ctx, {"OP_ID": "OP_TEST_ONE"})

    def test_pre_and_post_environment(self):
        self.successResultOf(defer.Deferred.fromCoroutine(self.runner.run_pre(self.lu)))
        self.lu.value = "after"
        self.successResultOf(defer.Deferred.fromCoroutine(self.runner.run_post(self.lu)))
        (pre_nodes, _, pre_args), (post_nodes, _, post_args) = self.calls
        self.assertEqual([n.name for n in pre_nodes], ["node1.test"])  # once
        base = {"PATH": hookdefs.HOOKS_PATH, "GANETI_HOOKS_VERSION": "2",
                "GANETI_OP_CODE": "OP_TEST_ONE", "GANETI_DATA_DIR": "/var/lib/ganeti",
                "GANETI_HOOKS_PATH": "test-one",
                "GANETI_CLUSTER": self.cfg.cluster.cluster_name, "GANETI_MASTER": "node1.test"}
        mine = {"GANETI_VALUE": "before", "GANETI_FLAG": "True", "GANETI_NONE": "None",
                "GANETI_N": "3"}
        self.assertEqual(pre_args, ["test-one", "pre",
                                    {**base, "GANETI_HOOKS_PHASE": "pre", **mine}])
        # the post phase: the pre values, and the unit's values again under GANETI_POST_
        self.assertEqual(post_args, ["test-one", "post", {
            **base, "GANETI_HOOKS_PHASE": "post", **mine, "GANETI_POST_VALUE": "after",
            "GANETI_POST_FLAG": "True", "GANETI_POST_NONE": "None", "GANETI_POST_N": "3"}])
        self.assertNotIn("GANETI_OBJECT_TYPE", post_args[2])

    def test_no_hooks_path_no_call(self):
        self.lu.HPATH = None
        self.successResultOf(defer.Deferred.fromCoroutine(self.runner.run_pre(self.lu)))
        self.assertEqual(self.successResultOf(defer.Deferred.fromCoroutine(
            self.runner.run_post(self.lu, "result"))), "result")
        self.assertEqual(self.calls, [])

    def test_variables_must_not_clash(self):
        self.lu.build_hooks_env = lambda: {"HOOKS_PATH": "x"}
        self.failureResultOf(defer.Deferred.fromCoroutine(self.runner.run_pre(self.lu)),
                             errors.ProgrammerError)
        self.lu.build_hooks_env = lambda: {"GANETI_X": "x"}
        self.failureResultOf(defer.Deferred.fromCoroutine(self.runner.run_pre(self.lu)),
                             errors.ProgrammerError)


class ClientMessageTest(SynchronousTestCase):
    """How the clients print the hooks errors (Ganeti's FormatError)."""

    def test_hooks_abort_and_failure(self):
        from ganeti.cli.framework import format_error

        err = errors.decode_exception(["HooksAbort", [[["u1", "a-pre.d/x", "out\\nmore"],
                                                       ["u2", "a-pre.d/y", ""]]]])
        self.assertEqual(format_error(err), (1, "Failure: hooks execution failed:\n"
                                                "  node: u1, script: a-pre.d/x, output: "
                                                "out\\nmore\n"
                                                "  node: u2, script: a-pre.d/y (no output)"))
        self.assertEqual(format_error(errors.HooksFailure("Communication Failure")),
                         (1, "Failure: hooks general failure: Communication Failure"))
