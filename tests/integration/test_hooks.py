"""Hooks on a real 3-node virtual cluster: real hook scripts in every node's
CONF_DIR/hooks, run by the real node daemons for the real master.

- a failing pre hook aborts the opcode with Ganeti's error (our client and
  Debian's print the same) and nothing changes;
- post hooks get the environment Ganeti documents, values included (each
  script writes its environment to a file);
- a failing post hook is a warning, and gnt-cluster verify reports failing
  cluster-verify hooks as Ganeti's ``ENODEHOOKS`` findings.
"""

import json
import os
import re
import stat

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import BIN, node_env, run

DEBIAN_GNT_GROUP = "/usr/share/ganeti/3.0/gnt-group"
_STAMP = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} ")

# A hook that writes its environment (python: dash drops names with dots, node names)
ENV_DUMP = """#!/usr/bin/python3
import json, os
name = "{out}/" + os.environ["GANETI_HOOKS_PATH"] + "-" + os.environ["GANETI_HOOKS_PHASE"]
with open(name + "-{node}.json", "w") as f:
    json.dump(dict(os.environ), f)
"""


class HooksTest(ClusterCase):
    """One cluster for all tests; each test cleans up its scripts."""

    PREFIX = "ganeti-hooks-"
    NODES = 3

    @classmethod
    def setUpCluster(cls):
        cls.out = os.path.join(cls.cluster.tmp, "hook-output")
        os.makedirs(cls.out)

    def setUp(self):
        self.scripts = []
        self.addCleanup(self._remove_scripts)

    def _remove_scripts(self):
        for path in self.scripts:
            os.unlink(path)
        for name in os.listdir(self.out):
            os.unlink(os.path.join(self.out, name))

    def hook(self, node, directory, name, text):
        path = os.path.join(self.cluster.node_root(node), "etc/ganeti/hooks", directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, stat.S_IRWXU)
        self.scripts.append(path)

    def dump_env(self, directory):
        for node in self.cluster.nodes:
            self.hook(node, directory, "00-env", ENV_DUMP.format(out=self.out, node=node))

    def env_of(self, hpath, phase, node):
        with open(os.path.join(self.out, f"{hpath}-{phase}-{node}.json")) as f:
            env = json.load(f)
        env.pop("LC_CTYPE", None)  # python itself adds it (PEP 538)
        return env

    def ran(self, hpath, phase):
        return sorted(n for n in self.cluster.nodes
                      if os.path.exists(os.path.join(self.out, f"{hpath}-{phase}-{n}.json")))

    def gnt(self, tool, *argv, check=True):
        env = node_env(self.cluster.dir, self.cluster.master)
        return run([os.path.join(BIN, tool), *argv], env=env, check=check, timeout=120)

    def uuid(self, node):
        out = self.gnt("gnt-node", "list", "--no-headers", "-o", "name,uuid").stdout
        return dict(line.split() for line in out.splitlines())[node]

    def fixed(self, hpath, phase, opcode, htype):
        return {"PATH": "/sbin:/bin:/usr/sbin:/usr/bin", "GANETI_HOOKS_VERSION": "2",
                "GANETI_OP_CODE": opcode, "GANETI_HOOKS_PHASE": phase,
                "GANETI_HOOKS_PATH": hpath, "GANETI_OBJECT_TYPE": htype,
                "GANETI_DATA_DIR": os.path.join(self.cluster.root, "var/lib/ganeti"),
                "GANETI_CLUSTER": self.cluster_name, "GANETI_MASTER": self.cluster.master}

    @property
    def cluster_name(self):
        for line in self.gnt("gnt-cluster", "info").stdout.splitlines():
            if line.startswith("Cluster name:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError("no cluster name in gnt-cluster info")

    # -- the tests -------------------------------------------------------------

    def test_failing_pre_hook_aborts_group_add(self):
        master = self.cluster.master
        self.hook(master, "group-add-pre.d", "10-ok", "#!/bin/sh\nexit 0\n")
        self.hook(master, "group-add-pre.d", "50-deny",
                  "#!/bin/sh\necho 'no groups today'\necho err >&2\nexit 3\n")
        self.hook(master, "group-add-pre.d", "60-deny", "#!/bin/sh\nexit 1\n")
        self.dump_env("group-add-post.d")
        r = self.gnt("gnt-group", "add", "g1", check=False)
        uuid = self.uuid(master)
        expected = ("Failure: hooks execution failed:\n"
                    f"  node: {uuid}, script: group-add-pre.d/50-deny, "
                    "output: no groups today\\nerr\n"
                    f"  node: {uuid}, script: group-add-pre.d/60-deny (no output)\n")
        self.assertEqual((r.returncode, r.stderr), (1, expected))
        groups = self.gnt("gnt-group", "list", "--no-headers", "-o", "name").stdout.split()
        self.assertEqual(groups, ["default"])
        self.assertEqual(self.ran("group-add", "post"), [])
        if os.path.exists(DEBIAN_GNT_GROUP):  # Ganeti's own client reads our error alike
            env = node_env(self.cluster.dir, master)
            r = run([DEBIAN_GNT_GROUP, "add", "g1"], env=env, check=False)
            self.assertEqual((r.returncode, r.stderr), (1, expected))

    def test_post_hook_environment_of_group_add(self):
        self.dump_env("group-add-pre.d")
        self.dump_env("group-add-post.d")
        self.gnt("gnt-group", "add", "g2")
        self.addCleanup(self.gnt, "gnt-group", "remove", "g2")
        master = self.cluster.master
        self.assertEqual(self.ran("group-add", "pre"), [master])
        self.assertEqual(self.ran("group-add", "post"), [master])
        fixed = self.fixed("group-add", "post", "OP_GROUP_ADD", "GROUP")
        self.assertEqual(self.env_of("group-add", "post", master),
                         {**fixed, "GANETI_GROUP_NAME": "g2", "GANETI_POST_GROUP_NAME": "g2"})
        self.assertEqual(self.env_of("group-add", "pre", master),
                         {**self.fixed("group-add", "pre", "OP_GROUP_ADD", "GROUP"),
                          "GANETI_GROUP_NAME": "g2"})

    def test_config_update_hook_after_a_config_change(self):
        self.dump_env("config-update-post.d")
        self.gnt("gnt-cluster", "add-tags", "hooked")
        self.addCleanup(self.gnt, "gnt-cluster", "remove-tags", "hooked")
        master = self.cluster.master
        self.assertEqual(self.ran("config-update", "post"), [master])
        fixed = self.fixed("config-update", "post", "OP_TAGS_SET", None)
        del fixed["GANETI_OBJECT_TYPE"]  # tag units have no hooks path of their own
        self.assertEqual(self.env_of("config-update", "post", master), fixed)
        os.unlink(os.path.join(self.out, f"config-update-post-{master}.json"))
        self.gnt("gnt-cluster", "list-tags")  # a query writes nothing: no hook
        self.assertEqual(self.ran("config-update", "post"), [])

    def test_node_modify_hooks_on_master_and_node(self):
        node2 = self.cluster.nodes[1]
        self.dump_env("node-modify-post.d")
        self.hook(self.cluster.master, "node-modify-post.d", "50-fail",
                  "#!/bin/sh\necho post failed\nexit 1\n")
        r = self.gnt("gnt-node", "modify", "--drained", "yes", node2)
        self.addCleanup(self.gnt, "gnt-node", "modify", "--drained", "no", node2)
        self.assertIn(f" - WARNING: On {self.uuid(self.cluster.master)} script "
                      "node-modify-post.d/50-fail failed, output: post failed", r.stdout)
        self.assertEqual(self.ran("node-modify", "post"), sorted([self.cluster.master, node2]))
        env = self.env_of("node-modify", "post", node2)
        values = {"OP_TARGET": node2, "MASTER_CANDIDATE": "None", "OFFLINE": "None",
                  "DRAINED": "True", "MASTER_CAPABLE": "None", "VM_CAPABLE": "None"}
        self.assertEqual(env, {**self.fixed("node-modify", "post", "OP_NODE_SET_PARAMS",
                                            "NODE"),
                               **{f"GANETI_{k}": v for k, v in values.items()},
                               **{f"GANETI_POST_{k}": v for k, v in values.items()}})
        drained = self.gnt("gnt-node", "list", "--no-headers", "-o", "drained", node2)
        self.assertEqual(drained.stdout.strip(), "Y")

    def test_cluster_verify_reports_hook_failures(self):
        node2, node3 = self.cluster.nodes[1:]
        self.dump_env("cluster-verify-post.d")
        self.hook(node2, "cluster-verify-post.d", "10-fail",
                  "#!/bin/sh\necho 'line one'\necho 'line two'\nexit 1\n")
        r = self.gnt("gnt-cluster", "verify", check=False)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = [_STAMP.sub("", line) for line in r.stdout.splitlines()]
        uuid2 = self.uuid(node2)
        start = lines.index("* Hooks Results")
        self.assertEqual(lines[start - 1],
                         f" - WARNING: On {uuid2} script cluster-verify-post.d/10-fail "
                         "failed, output: line one\\nline two")
        self.assertEqual(lines[start + 1:start + 3], [
            f"  - ERROR: node {uuid2}: Script cluster-verify-post.d/10-fail failed, output:",
            "      line one\\nline two"])
        self.assertEqual(self.ran("cluster-verify", "post"), sorted(self.cluster.nodes))
        env = self.env_of("cluster-verify", "post", node3)
        self.assertEqual(env["GANETI_OP_CODE"], "OP_CLUSTER_VERIFY_GROUP")
        self.assertEqual(env["GANETI_OBJECT_TYPE"], "CLUSTER")
        self.assertEqual(env[f"GANETI_NODE_TAGS_{node3}"], "")
        self.assertEqual(env["GANETI_POST_CLUSTER_TAGS"], "")
