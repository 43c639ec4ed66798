"""Instances leaving their node, driven by Debian's Ganeti 3.0 tools against our
three-node virtual cluster (fake hypervisor): ``hbal -L -X`` executing its moves,
Debian's ``gnt-node evacuate`` (``-p``, and without ``-p``/``-s``, which Ganeti's
master refuses and ours accepts), Debian's RAPI client's ``EvacuateNode``
(``node-evac-res1``), Debian's ``gnt-instance move`` of a file instance, our
``gnt-cluster balance``, Debian's ``gnt-instance change-group`` and ``gnt-group
evacuate`` (which real Ganeti 3.0.2 fails with an assertion).

The cluster starts unbalanced: four running sharedfile instances on the first node
(written into the config before it starts; the fake hypervisor migrates them without
touching their files).  Expected outputs are those of a real Ganeti 3.0.2 cluster
(``real_cluster_up.sh``, diskless instances, hail): ``gnt-node evacuate -f -p NODE``
prints " - INFO: Evacuating instances from node 'NODE': ...", " - INFO: Instances to
be moved: ...", "Submitted jobs N, M", "Waiting for job N ...", each job's log and
"All instances evacuated successfully."; with no instance to move "No instances to
evacuate on node(s) NODE, exiting." on stderr, exit 0.  Tests run in name order on
one cluster.
"""

from __future__ import annotations

import os
import re
import sys

from tests.integration.clustercase import needs_debian_tool, needs_files
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.test_htools_luxi import DOMAIN, HTOOLS, UNBALANCED, write_unbalanced
from tests.integration.test_migration_clients import without_dates
from tests.integration.test_rapi_compat import RapiClientCase, call

DEBIAN = "/usr/share/ganeti/3.0"


def score_of(text: str) -> tuple[float, float]:
    """hbal's "Cluster score improved from A to B"."""
    found = re.search(r"Cluster score improved from ([\d.]+) to ([\d.]+)", text)
    assert found is not None, text
    return float(found.group(1)), float(found.group(2))


class EvacuateClientsTest(RapiClientCase):
    PREFIX = "ganeti-evac-clients-"
    NODES = 3
    REQUIRES = (*RapiClientCase.REQUIRES, needs_debian_tool("gnt-node", "gnt-instance"),
                needs_files(os.path.join(HTOOLS, "hbal"), package="ganeti-htools-3.0"))

    @classmethod
    def prepareCluster(cls, cluster):
        write_unbalanced(cluster)

    # --- helpers --------------------------------------------------------------------

    def tool_env(self):
        return node_env(self.cluster.dir, self.cluster.master)

    def debian(self, tool, *argv):
        return run([os.path.join(DEBIAN, tool), *argv], env=self.tool_env(), check=False,
                   timeout=300)

    def ours(self, tool, *argv):
        return run([sys.executable, os.path.join(ROOT, "bin", tool), *argv], env=self.tool_env(),
                   check=False, timeout=300)

    def ok(self, tool, *argv):
        r = self.debian(tool, *argv)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def placement(self):
        """{instance: (primary node, status)} as Debian's gnt-instance lists them."""
        out = self.ok("gnt-instance", "list", "--no-headers", "-o", "name,pnode,status")
        return {name: (node, status) for name, node, status in
                (line.split() for line in out.splitlines())}

    def on(self, node):
        return sorted(n for n, (p, _s) in self.placement().items() if p == node)

    def finished(self, job_id):
        status, job = self.rapi(call("wait_job", job_id, 120.0), call("GetJobStatus", job_id))
        return status, job["opresult"][0]

    # --- hbal -L -X ------------------------------------------------------------------

    def test_1_hbal_executes_its_moves(self):
        node0 = self.cluster.nodes[0]
        self.assertEqual(self.on(node0), sorted(UNBALANCED))
        hbal = run([os.path.join(HTOOLS, "hbal"), f"-L{self.cluster.socket}", "-X"],
                   env=self.tool_env(), check=False, timeout=600)
        self.assertEqual(hbal.returncode, 0, hbal.stderr + hbal.stdout)
        before, after = score_of(hbal.stdout)
        self.assertLess(after, before)
        placed = self.placement()
        self.assertLess(len(self.on(node0)), len(UNBALANCED), placed)
        self.assertEqual({s for _n, s in placed.values()}, {"running"}, placed)
        # the cluster as it is now scores what hbal promised (no move left worth doing)
        again = run([os.path.join(HTOOLS, "hbal"), f"-L{self.cluster.socket}"],
                    env=self.tool_env(), check=False, timeout=300)
        self.assertEqual(again.returncode, 0, again.stderr + again.stdout)
        initial = re.search(r"Initial score: ([\d.]+)", again.stdout)
        assert initial is not None, again.stdout
        self.assertAlmostEqual(float(initial.group(1)), after, delta=0.05)

    # --- Debian's gnt-node evacuate --------------------------------------------------

    def test_2_node_evacuate_primaries(self):
        node = max(self.cluster.nodes, key=lambda n: len(self.on(n)))
        moving = self.on(node)
        self.assertTrue(moving)
        lines = without_dates(self.ok("gnt-node", "evacuate", "-f", "-p", node))
        self.assertIn(f" - INFO: Evacuating instances from node '{node}': "
                      f"{', '.join(moving)}", lines)
        self.assertTrue(any(line.startswith(" - INFO: Instances to be moved: ")
                            for line in lines), lines)
        self.assertRegex("\n".join(lines), r"Submitted jobs \d+(, \d+)*\n")
        self.assertEqual(lines[-1], "All instances evacuated successfully.")
        self.assertEqual(self.on(node), [])
        self.assertEqual({s for _n, s in self.placement().values()}, {"running"})
        # nothing left there: Ganeti's words on stderr, exit 0, from both tools
        for r in (self.debian("gnt-node", "evacuate", "-f", "-p", node),
                  self.ours("gnt-node", "evacuate", "-f", "-p", node)):
            self.assertEqual((r.returncode, r.stdout, r.stderr),
                             (0, "", f"No instances to evacuate on node(s) {node}, "
                                     "exiting.\n"))

    def test_3_node_evacuate_all_is_accepted(self):
        """Ganeti's master refuses mode all ("Due to an issue with the iallocator
        interface it is not possible to evacuate all instances at once ..."); ours
        moves the primaries (there are no secondaries here)."""
        node = max(self.cluster.nodes, key=lambda n: len(self.on(n)))
        self.assertTrue(self.on(node))
        lines = without_dates(self.ok("gnt-node", "evacuate", "-f", node))
        self.assertEqual(lines[-1], "All instances evacuated successfully.")
        self.assertEqual(self.on(node), [])

    def test_4_rapi_evacuate_node(self):
        node = max(self.cluster.nodes, key=lambda n: len(self.on(n)))
        moving = self.on(node)
        features, job = self.rapi(call("GetFeatures"),
                                  call("EvacuateNode", node, mode="primary-only"))
        self.assertIn("node-evac-res1", features)
        status, result = self.finished(job)
        self.assertEqual(status, "success", result)
        self.assertEqual(len(result["jobs"]), len(moving))
        for submitted, child in result["jobs"]:
            self.assertTrue(submitted)
            self.assertEqual(self.finished(child)[0], "success")
        self.assertEqual(self.on(node), [])
        # an instance that cannot move: Ganeti's error in the job, nothing submitted
        self.ok("gnt-instance", "add", "-t", "file", "-s", "1G", "-o", "busybox", "-n", node,
                "--no-install", "--no-name-check", "--no-ip-check", f"file1.{DOMAIN}")
        (job,) = self.rapi(call("EvacuateNode", node, mode="primary-only"))
        status, result = self.finished(job)
        self.assertEqual((status, result[0]), ("error", "OpExecError"), result)
        self.assertEqual(result[1][0], f"Unable to evacuate instances file1.{DOMAIN} "
                                       "(Instances of type file cannot be relocated)")

    # --- Debian's gnt-instance move ----------------------------------------------------

    def test_5_instance_move(self):
        name = f"file1.{DOMAIN}"
        source = self.placement()[name][0]
        target = next(n for n in self.cluster.nodes if n != source)
        self.ok("gnt-instance", "startup", name)
        lines = without_dates(self.ok("gnt-instance", "move", "-f", "-n", target, name))
        self.assertIn(f" - INFO: Copying disk/0 (1024 MiB) from {source} to {target}", lines)
        self.assertEqual(self.placement()[name], (target, "running"))
        r = self.debian("gnt-instance", "move", "-f", "-n", target, name)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"Instance {name} is already on the node {target}", r.stdout + r.stderr)

    # --- our balance ---------------------------------------------------------------------

    def test_6_our_balance_executes_its_moves(self):
        node0 = self.cluster.nodes[0]
        for name, (node, _status) in sorted(self.placement().items()):
            if name in UNBALANCED and node != node0:
                self.ok("gnt-instance", "migrate", "-f", "-n", node0, name)
        self.assertEqual([n for n in self.on(node0) if n in UNBALANCED], sorted(UNBALANCED))
        r = self.ours("gnt-cluster", "balance", "-f")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        before, after = score_of(r.stdout)
        self.assertLess(after, before)
        self.assertTrue(r.stdout.endswith("All moves executed successfully.\n"), r.stdout)
        self.assertLess(len([n for n in self.on(node0) if n in UNBALANCED]),
                        len(UNBALANCED))
        self.assertEqual({s for _n, s in self.placement().values()}, {"running"})
        # what is left to gain is below a minimum (free memory is read live: some noise)
        r = self.ours("gnt-cluster", "balance", "--print-only", "--min-gain", "0.05")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Cluster is already well balanced", r.stdout)

    # --- Debian's gnt-instance change-group and gnt-group evacuate --------------------

    def test_7_change_group_and_group_evacuate(self):
        node0, others = self.cluster.nodes[0], self.cluster.nodes[1:]
        shared = sorted(UNBALANCED)
        for name in shared[:2]:
            if self.placement()[name][0] != node0:
                self.ok("gnt-instance", "migrate", "-f", "-n", node0, name)
        # (a move to another group meets its policy: sharedfile must be allowed there)
        self.ok("gnt-cluster", "modify", "--ipolicy-disk-templates",
                "file,diskless,sharedfile")
        self.ok("gnt-group", "add", "rack2")
        self.ok("gnt-group", "assign-nodes", "rack2", *others)
        lines = without_dates(self.ok("gnt-instance", "change-group", "--to", "rack2",
                                      shared[0]))
        self.assertEqual(lines[-1], f"Instance '{shared[0]}' changed group successfully.")
        self.assertIn(self.placement()[shared[0]][0], others)
        # the rest of the default group (node0 alone now) moves to rack2
        lines = without_dates(self.ok("gnt-group", "evacuate", "default"))
        self.assertTrue(any(line.startswith(" - INFO: Iallocator returned ")
                            for line in lines), lines)
        self.assertEqual(lines[-1], "All instances evacuated successfully.")
        self.assertEqual(self.on(node0), [])
        self.assertEqual({s for n, (_p, s) in self.placement().items() if n in UNBALANCED},
                         {"running"})
