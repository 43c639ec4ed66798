"""Debian's htools 3.0.2 over LUXI (``-L SOCKET``) against our master daemon.

The second cluster is unbalanced (four sharedfile instances on one node): ``hbal -L``
and our balance through the master make the same moves to the same score.

A three-node virtual cluster gets four instances written into its config before it
starts (two running on the fake hypervisor, two stopped; file and diskless).  Then:

* ``hbal -L`` saves the cluster it loaded (``-S``, htools' text format): every node
  and instance is there with the figures our LUXI answers and our config hold;
* ``hinfo``, ``hcheck`` and ``hspace -L`` run without errors and count the same;
* ``hspace -L``'s standard allocation of a spec that the vCPU ratio limits (so the
  host's changing free memory cannot move the count) gives the same count and
  failure reason as our capacity answer on the iallocator input our master builds
  from the same cluster.
"""

from __future__ import annotations

import json
import os
import re
import sys

from ganeti.core import config as configmod
from ganeti.core import configjournal, fileutil
from ganeti.core import constants as c
from ganeti.core.placement import model
from ganeti.core.placement.allocate import Options
from ganeti.core.placement.capacity import capacity
from ganeti.core.placement.requests import Capacity
from ganeti.core.placement.state import ClusterState
from ganeti.master.iallocator.build import LiveNode, build_input
from ganeti.noded.hypervisors import fake
from tests.fakes.instances import add_instance
from tests.integration.clustercase import ClusterCase, VirtualCluster, needs_files
from tests.integration.helpers import node_env, run

HTOOLS = "/usr/lib/ganeti/3.0/usr/bin"
DOMAIN = "vcluster.test"
#: name -> (node index, template, disk sizes, memory, vcpus, running); every disk within
#: the default policy (htools cannot recreate one below its minimum size elsewhere, and
#: hspace then finds the cluster not N+1 redundant: 0 instances, FailN1)
INSTANCES = {
    f"web1.{DOMAIN}": (0, c.DT_FILE, (1024, 2048), 512, 2, True),
    f"db1.{DOMAIN}": (1, c.DT_FILE, (2048,), 1024, 1, False),
    f"cache1.{DOMAIN}": (2, c.DT_DISKLESS, (), 256, 4, True),
    f"spare1.{DOMAIN}": (0, c.DT_DISKLESS, (), 128, 1, False),
}


def write_instances(cluster: VirtualCluster) -> None:
    """Add the instances to the master's config; mark the running ones running."""
    path = os.path.join(cluster.root, "var/lib/ganeti/config.data")
    cfg = configmod.load_file(path)
    for name, (k, template, disks, memory, vcpus, up) in INSTANCES.items():
        add_instance(cfg, name, cluster.nodes[k], template, disks,
                     admin_state=c.ADMINST_UP if up else c.ADMINST_DOWN,
                     beparams={"maxmem": memory, "minmem": memory, "vcpus": vcpus})
        if up:
            run_dir = os.path.join(cluster.node_root(cluster.nodes[k]), "var/run/ganeti")
            fake.mark_running(run_dir, name, memory, vcpus)
    assert configmod.verify(cfg) == []
    cfg.serial_no += 1000
    fileutil.atomic_write(path, configmod.dump(cfg).encode(), mode=0o640)
    journal = configjournal.journal_path(path)
    if os.path.exists(journal):
        os.unlink(journal)


def text_sections(path: str) -> list[list[list[str]]]:
    """htools' text file: sections (groups, nodes, instances, ...) of '|' rows."""
    with open(path, encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    return [[line.split("|") for line in block.splitlines() if line] for block in blocks]


class HtoolsOverLuxiTest(ClusterCase):
    PREFIX = "ganeti-htools-"
    NODES = 3
    REQUIRES = (needs_files(os.path.join(HTOOLS, "hbal"), package="ganeti-htools-3.0"),)

    @classmethod
    def prepareCluster(cls, cluster):
        write_instances(cluster)

    def htool(self, *argv: str, codes=(0,)) -> str:
        env = node_env(self.cluster.dir, self.cluster.master)
        result = run([os.path.join(HTOOLS, argv[0]), *argv[1:]], env=env, check=False,
                     timeout=300)
        self.assertIn(result.returncode, codes, result.stderr + result.stdout)
        return result.stdout

    def query(self, what: str, fields: list[str]) -> dict[str, dict[str, object]]:
        rows = self.cluster.client().call("Query", what, fields, None)["data"]
        return {row[0][1]: {f: v for f, (_, v) in zip(fields, row, strict=True)}
                for row in rows}

    def test_hbal_loads_every_node_and_instance_as_we_report_them(self):
        saved = os.path.join(self.mktemp())
        self.htool("hbal", f"-L{self.cluster.socket}", "-S", saved, "-l", "0")
        sections = text_sections(saved + ".original")
        groups, nodes, instances = sections[0], sections[1], sections[2]
        ours = self.query("node", ["name", "mtotal", "mfree", "dtotal", "ctotal", "cnos",
                                   "group.uuid", "master"])
        self.assertEqual([g[1] for g in groups],
                         sorted({str(n["group.uuid"]) for n in ours.values()}))
        self.assertEqual(sorted(n[0] for n in nodes), sorted(ours))
        for row in nodes:
            node = ours[row[0]]
            self.assertEqual(int(row[1]), node["mtotal"], row)
            self.assertEqual(int(row[4]), node["dtotal"], row)
            self.assertEqual(int(row[6]), node["ctotal"], row)
            self.assertEqual(row[7], "M" if node["master"] else "N", row)
            self.assertEqual(row[8], node["group.uuid"], row)
            # as on real Ganeti: no LVM report, so no free spindles; cnos as reported
            self.assertEqual((row[9], row[12], int(row[13])), ("1", "0", node["cnos"]), row)
            # free memory is the host's, read twice: close, not equal
            self.assertLess(abs(int(row[3]) - int(str(node["mfree"]))), 256, row)
        listed = {row[0]: row for row in instances}
        self.assertEqual(sorted(listed), sorted(INSTANCES))
        status = self.query("instance", ["name", "status"])
        for name, (k, template, disks, memory, vcpus, _up) in INSTANCES.items():
            row = listed[name]
            self.assertEqual(row[1:5], [str(memory), str(sum(disks)), str(vcpus),
                                        status[name]["status"]], row)
            self.assertEqual((row[6], row[7], row[8]), (self.cluster.nodes[k], "", template))

    def test_hinfo_hcheck_hspace_see_the_cluster(self):
        info = self.htool("hinfo", f"-L{self.cluster.socket}")
        self.assertIn(f"Loaded 3 nodes, {len(INSTANCES)} instances, 1 node group", info)
        check = self.htool("hcheck", f"-L{self.cluster.socket}", codes=(0, 1))
        self.assertIn("Instances having the primary node offline: 0", check)
        space = self.htool("hspace", f"-L{self.cluster.socket}")
        self.assertIn("The cluster has 3 nodes", space)
        self.assertIn(f"There are {len(INSTANCES)} initial instances on the cluster", space)

    def test_hspace_count_is_our_capacity(self):
        memory, vcpus, disk = 128, 2, 1024
        spec = f"{disk},{memory},{vcpus}"
        out = self.htool("hspace", f"-L{self.cluster.socket}", "--disk-template=file",
                         f"--standard-alloc={spec}", f"--tiered-alloc={spec}")
        normal = out[out.index("Normal (fixed-size)"):]
        count = re.search(r"-\s+(\d+) instances allocated", normal)
        reason = re.search(r"most likely failure reason: (\w+)", normal)
        assert count is not None and reason is not None, out
        theirs = (int(count.group(1)), reason.group(1))

        cfg = configmod.load_file(os.path.join(self.cluster.root,
                                               "var/lib/ganeti/config.data"))
        figures = self.query("node", ["name", "mtotal", "mfree", "mnode", "ctotal", "cnos",
                                      "dtotal", "dfree"])
        live = {}
        for uuid, node in cfg.nodes.items():
            f = figures[node.name]
            live[uuid] = LiveNode.from_node_info({
                "memory_total": f["mtotal"], "memory_free": f["mfree"],
                "memory_dom0": f["mnode"], "cpu_total": f["ctotal"], "cpu_dom0": f["cnos"],
                "disk_total": f["dtotal"], "disk_free": f["dfree"]})
        req = Capacity(disk_template=c.DT_FILE, memory=memory, vcpus=vcpus,
                       disks=(model.Disk(disk),))
        ialloc = build_input(cfg, req, live)
        result = capacity(ClusterState(ialloc.cluster), req, Options())
        # each node holds vcpu-ratio x CPUs: cnos, the instances' and the new ones' vCPUs
        self.assertEqual(theirs, (result.count, result.limit))
        self.assertEqual(result.limit, "FailCPU")
        ratio = ialloc.cluster.ipolicy.vcpu_ratio
        expected = 0
        for k, node in enumerate(self.cluster.nodes):
            used = int(str(figures[node]["cnos"])) + sum(
                v for (i, _t, _d, _m, v, _u) in INSTANCES.values() if i == k)
            expected += int((ratio * int(str(figures[node]["ctotal"])) - used) // vcpus)
        self.assertEqual(result.count, expected)


#: An unbalanced cluster for hbal: every sharedfile instance on the first node (hbal
#: moves sharedfile instances, not file or diskless ones).
UNBALANCED = {f"shared{k}.{DOMAIN}": (0, c.DT_SHARED_FILE, (1024,), 512, 1, True)
              for k in range(4)}


def write_unbalanced(cluster: VirtualCluster) -> None:
    """Enable sharedfile and put the :data:`UNBALANCED` instances into the config."""
    path = os.path.join(cluster.root, "var/lib/ganeti/config.data")
    cfg = configmod.load_file(path)
    cfg.cluster.enabled_disk_templates = [c.DT_FILE, c.DT_DISKLESS, c.DT_SHARED_FILE]
    fileutil.atomic_write(path, configmod.dump(cfg).encode(), mode=0o640)
    global INSTANCES
    saved, INSTANCES = INSTANCES, UNBALANCED
    try:
        write_instances(cluster)
    finally:
        INSTANCES = saved


class HbalOverLuxiTest(ClusterCase):
    """``hbal -L`` and our balance (``gnt-debug iallocator -m balance --dir out -I
    ganeti-place``, through the master with its live node data) on the same cluster."""

    PREFIX = "ganeti-hbal-"
    NODES = 3
    REQUIRES = (needs_files(os.path.join(HTOOLS, "hbal"), package="ganeti-htools-3.0"),)

    @classmethod
    def prepareCluster(cls, cluster):
        write_unbalanced(cluster)

    def test_hbal_and_our_balance_make_the_same_moves(self):
        env = node_env(self.cluster.dir, self.cluster.master)
        hbal = run([os.path.join(HTOOLS, "hbal"), f"-L{self.cluster.socket}", "-C"],
                   env=env, check=False, timeout=300)
        self.assertEqual(hbal.returncode, 0, hbal.stderr + hbal.stdout)
        improved = re.search(r"Cluster score improved from ([\d.]+) to ([\d.]+)", hbal.stdout)
        length = re.search(r"Solution length=(\d+)", hbal.stdout)
        assert improved is not None and length is not None, hbal.stdout
        # hbal's moves with their scores ("  1. shared0 node1 => node2  5.639 a=fa:node2");
        # free memory is the host's, read by each node at slightly different times, so a
        # move that gains less than 0.01 only trades that noise: count the others
        steps = [float(s) for s in re.findall(r"^\s+\d+\. \S+ .*?=>.*?([\d.]+) a=", hbal.stdout,
                                               re.M)]
        scores = [float(improved.group(1)), *steps]
        real = sum(1 for a, b in zip(scores, scores[1:], strict=False) if a - b >= 0.01)
        self.assertEqual(len(steps), int(length.group(1)), hbal.stdout)

        gnt_debug = os.path.join(os.path.dirname(os.path.abspath(sys.executable)),
                                 "gnt-debug")
        ours = run([gnt_debug, "iallocator", "--dir", "out", "-m", "balance",
                    "--min-gain", "0.01", "-I", "ganeti-place", "any"], env=env,
                   check=False, timeout=300)
        self.assertEqual(ours.returncode, 0, ours.stderr + ours.stdout)
        answer = json.loads(ours.stdout)
        self.assertTrue(answer["success"], answer)
        result = answer["result"]
        self.assertEqual(len(result["moves"]), real, (hbal.stdout, result))
        self.assertTrue(all(m[2] == "failover-to-any" and m[0].startswith("shared")
                            for m in result["moves"]), result)
        self.assertAlmostEqual(result["initial_score"], float(improved.group(1)), places=2)
        self.assertAlmostEqual(result["final_score"], float(improved.group(2)), places=2)
        self.assertGreater(len(result["moves"]), 0)
