"""gnt-os end to end: a whole master daemon on a fake clock whose nodes are in-process
node daemons with real OS directories; Ganeti's output and exit codes."""

from __future__ import annotations

import io
import os
import shutil
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_os
from tests.fakes.clirun import Run
from tests.fakes.nodes import master_with_nodes
from tests.noded.test_osdefs import make_os


class GntOsTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.master, self.net = master_with_nodes(self, 2)
        job = self.master.submit({"OP_ID": "OP_NODE_ADD", "node_name": "node2.test",
                                  "primary_ip": "127.0.1.2", "readd": False})
        self.assertEqual(self.master.finish(job)[0], "success")
        self.tops = {}
        for name in ("node1.test", "node2.test"):
            self.tops[name] = self.net.paths(name).os_search_path[0]
            os.makedirs(self.tops[name])
            make_os(self.tops[name], "debian", variants="squeeze\nlenny\n",
                    parameters="dhcp Use DHCP\nmirror The mirror\n")
            make_os(self.tops[name], "plainos", api="10\n", variants=None, parameters=None,
                    skip=("verify",))
            # API 15: no verify script to run (the in-process nodes start no programs)
            make_os(self.tops[name], "deb15", api="15\n", variants="lenny\n",
                    parameters=None, skip=("verify",))
        self.environ = self.master.paths.env()

    def tool(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_os.main(list(argv), stdout=out, stderr=err, environ=self.environ,
                           luxi_factory=lambda paths: self.master.client())
        return Run(code, out.getvalue(), err.getvalue())

    def ops(self) -> list[dict[str, Any]]:
        """The opcodes of every job so far."""
        queue = self.master.daemon.queue
        return [op.input for job_id in sorted(queue.visible)
                for op in queue.visible[job_id].ops]

    def test_list(self):
        make_os(self.tops["node1.test"], "only-on-1")  # not on node2: invalid, not listed
        run = self.tool("list")
        self.assertEqual((run.code, run.out), (0, "Name          \ndeb15+lenny\ndebian+lenny\n"
                                                  "debian+squeeze\nplainos\n"))
        self.assertEqual(self.tool("list", "--no-headers").out,
                         "deb15+lenny\ndebian+lenny\ndebian+squeeze\nplainos\n")
        self.tool("modify", "--hidden", "yes", "plainos")
        self.assertEqual(self.tool("list", "--no-headers").out,
                         "deb15+lenny\ndebian+lenny\ndebian+squeeze\n")

    def test_info(self):
        run = self.tool("info", "debian")
        self.assertEqual(run.code, 0)
        self.assertEqual(run.out, "\n".join([
            "debian:", "  - valid: True", "  - hidden: False", "  - blacklisted: False",
            "  - API versions:", "    - 20", "  - variants:", "    - lenny", "    - squeeze",
            "  - parameters:", "    - dhcp: Use DHCP", "    - mirror: The mirror",
            "  - trusted: True", "", ""]))
        self.assertEqual(self.tool("modify", "-O", "dhcp=no", "-H",
                                   "fake:migration_mode=non-live", "deb15+lenny").code, 0)
        run = self.tool("info", "deb15+lenny", "nothing")
        self.assertEqual(run.out, "\n".join([
            "deb15+lenny: ",
            "  OS-specific hypervisor parameters: ",
            "    fake: ",
            "      migration_mode: non-live",
            "  OS parameters: ",
            "    dhcp: no",
            "",
            "nothing: ",
            "", ""]))

    def test_diagnose(self):
        make_os(self.tops["node1.test"], "broken", api="5\n")
        second = self.net.paths("node2.test").os_search_path[2]
        make_os(second, "plainos", api="10\n", variants=None, parameters=None,
                skip=("verify",))
        run = self.tool("diagnose")
        self.assertEqual(run.code, 1)  # broken is not valid everywhere
        broken = os.path.join(self.tops["node1.test"], "broken")
        deb1 = os.path.join(self.tops["node1.test"], "debian")
        deb2 = os.path.join(self.tops["node2.test"], "debian")
        deb15_1 = os.path.join(self.tops["node1.test"], "deb15")
        deb15_2 = os.path.join(self.tops["node2.test"], "deb15")
        plain1 = os.path.join(self.tops["node1.test"], "plainos")
        plain2 = os.path.join(self.tops["node2.test"], "plainos")
        debian_rest = ("[API versions: 20] [variants: squeeze, lenny] "
                       "[parameters: dhcp, mirror] [trusted]")
        self.assertEqual(run.out.split("\n"), [
            "OS: broken [global status: invalid]",
            f"  Node: node1.test, status: invalid - API version mismatch for path "
            f"'{broken}': found [5], want [10, 15, 20]. (path: {broken}) "
            "[no API versions declared] [trusted]",
            "  Node: node2.test, status: OS not found",
            "",
            "OS: deb15 [global status: valid]",
            "  Variants: [lenny]",
            f"  Node: node1.test, status: valid (path: {deb15_1}) [API versions: 15] "
            "[variants: lenny] [trusted]",
            f"  Node: node2.test, status: valid (path: {deb15_2}) [API versions: 15] "
            "[variants: lenny] [trusted]",
            "",
            "OS: debian [global status: valid]",
            "  Variants: [lenny, squeeze]",
            f"  Node: node1.test, status: valid (path: {deb1}) {debian_rest}",
            f"  Node: node2.test, status: valid (path: {deb2}) {debian_rest}",
            "",
            "OS: plainos [global status: valid]",
            f"  Node: node1.test, status: valid (path: {plain1}) [API versions: 10] [trusted]",
            f"  Node: node2.test, status: valid (path: {plain2}) [API versions: 10] [trusted]",
            f"    [hidden] path: {os.path.join(second, 'plainos')}, status: valid",
            "",
            ""])
        shutil.rmtree(broken)
        self.assertEqual(self.tool("diagnose").code, 0)

    def test_modify(self):
        run = self.tool("modify", "-O", "dhcp=yes,-mirror", "--os-parameters-private",
                        "mirror=secret", "--hidden", "yes", "--blacklisted", "no",
                        "deb15+lenny")
        self.assertEqual((run.code, run.err), (0, ""))
        op = self.ops()[-1]
        self.assertEqual((op["OP_ID"], op["osparams"], list(op["osparams_private_cluster"]),
                          op["hidden_os"], op["blacklisted_os"], op["os_hvp"]),
                         ("OP_CLUSTER_SET_PARAMS", {"deb15+lenny": {"dhcp": "yes",
                                                                    "mirror": None}},
                          ["deb15+lenny"], [["add", "deb15+lenny"]],
                          [["remove", "deb15+lenny"]], None))
        cluster = self.master.config.cluster
        self.assertEqual((cluster.osparams, cluster.osparams_private_cluster,
                          cluster.hidden_os),
                         ({"deb15+lenny": {"dhcp": "yes"}},
                          {"deb15+lenny": {"mirror": "secret"}}, ["deb15+lenny"]))

    def test_modify_needs_something_and_refuses_bad_values(self):
        run = self.tool("modify", "debian")
        self.assertEqual((run.code, run.err),
                         (1, "At least one of OS parameters or hypervisor parameters must "
                             "be passed\n"))
        self.assertEqual(self.ops()[-1]["OP_ID"], "OP_NODE_ADD")  # nothing submitted
        run = self.tool("modify", "-O", "nope=1", "debian+lenny")
        self.assertNotEqual(run.code, 0)
        self.assertIn("The following parameters are not supported by the OS debian: nope",
                      run.err)
        self.assertEqual(self.master.config.cluster.osparams, {})
        run = self.tool("modify", "-O", "dhcp=1", "deb15+sid")
        self.assertNotEqual(run.code, 0)
        self.assertIn("OS 'deb15' does not support variant 'sid'", run.err)
        self.assertEqual(self.master.config.cluster.osparams, {})
        run = self.tool("modify", "--hidden", "maybe", "debian")
        self.assertNotEqual(run.code, 0)
        self.assertIn("expected yes or no, not 'maybe'", run.err)

    def test_submit(self):
        run = self.tool("modify", "--submit", "--print-jobid", "--hidden", "yes", "plainos")
        self.assertEqual(run.code, 0)
        job_id = int(run.out.strip())
        self.assertEqual(run.err, f"JobID: {job_id}\n")
        self.assertEqual(self.master.finish(job_id)[0], "success")
        self.assertEqual(self.master.config.cluster.hidden_os, ["plainos"])
