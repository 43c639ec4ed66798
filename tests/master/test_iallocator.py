"""ganeti.master.iallocator: the version-2 input built from a config and live node data, and
external allocators run as child processes -- Debian's hail among them.

The programs are real (the reactor spawns them); the run's timeout is on a Clock, so a
hanging allocator is ended by advancing it, not by waiting.
"""

from __future__ import annotations

import json
import os
import stat
import unittest

import pytest
from twisted.internet import defer, reactor
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase, TestCase

from ganeti.core import constants as c
from ganeti.core.errors import OpExecError, OpPrereqError
from ganeti.core.objects import ConfigData, Node
from ganeti.core.placement import model, requests, wire
from ganeti.master.iallocator import build, runner
from tests.fakes.configs import small_config
from tests.fakes.instances import add_instance

#: Debian's hail (package ganeti-htools-3.0).
HAIL_DIR = "/usr/lib/ganeti/iallocators"


def three_node_config() -> ConfigData:
    """node1 (master) .. node3 in one group; node3 drained; instances on node1 and node2:
    ``web`` (file, 512 MiB, up), ``db`` (drbd node1 -> node2, 1024 MiB, up), ``idle``
    (diskless on node2, down)."""
    cfg = small_config()
    group = next(iter(cfg.nodegroups.values()))
    for i in (2, 3):
        node = Node(uuid=f"uuid-node{i}", name=f"node{i}.test", primary_ip=f"127.0.1.{i}",
                    secondary_ip=f"127.0.1.{i}", group=group.uuid, master_candidate=True,
                    drained=i == 3)
        cfg.nodes[node.uuid] = node
        group.members.append(node.uuid)
    cfg.cluster.tags = ["ctag"]
    # every instance within the policy: hail's capacity check fails every allocation
    # (FailN1) while an existing instance breaks it (a 1000 MiB disk, say)
    cfg.cluster.ipolicy["disk-templates"].append(c.DT_DRBD8)
    add_instance(cfg, "web.test", "node1.test", c.DT_FILE, disks=(1024,),
                 beparams={"maxmem": 512, "minmem": 512, "vcpus": 2})
    add_instance(cfg, "db.test", "node1.test", c.DT_DRBD8, disks=(2048,), snode="node2.test",
                 beparams={"maxmem": 1024, "minmem": 1024})
    add_instance(cfg, "idle.test", "node2.test", admin_state=c.ADMINST_DOWN)
    return cfg


def live(cfg: ConfigData, free_memory: int = 6000) -> dict[str, build.LiveNode]:
    """The same figures for every node: 8 GiB, 4 CPUs, file and LVM storage."""
    return {uuid: build.LiveNode(
        memory_total=8192, memory_free=free_memory, memory_dom0=1024, cpu_total=4, cpu_dom0=1,
        storage={"file": (100_000, 90_000), "lvm-vg": (200_000, 150_000), "lvm-pv": (2, 2)})
        for uuid in cfg.nodes}


def allocate(template: str = c.DT_FILE, memory: int = 256) -> requests.Allocate:
    return requests.Allocate(name="new.test", memory=memory, vcpus=1, disk_template=template,
                             disks=(model.Disk(1024),), nics=({"mac": "aa:00:00:00:00:01"},),
                             os="busybox", hypervisor=c.HT_FAKE)


class BuildTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = three_node_config()

    def test_nodes_and_memory_as_ganeti_computes_them(self):
        # db runs using 600 of its 1024 MiB: the rest may still be claimed
        running = {self.cfg.node_by_name("node1.test").uuid: {"db.test": 600, "web.test": 512}}
        cluster = build.build_cluster(self.cfg, live(self.cfg), running, c.DT_FILE)
        node1 = cluster.nodes["node1.test"]
        self.assertEqual(node1.resources, model.NodeResources(
            total_memory=8192, reserved_memory=1024, free_memory=6000 - 424, total_disk=100_000,
            free_disk=90_000, total_spindles=0, free_spindles=0, total_cpus=4, reserved_cpus=1,
            i_pri_memory=1536, i_pri_up_memory=1536))
        node2 = cluster.nodes["node2.test"].resources
        self.assertEqual((node2.i_pri_memory, node2.i_pri_up_memory, node2.free_memory),
                         (128, 0, 6000))  # idle is down: it claims nothing
        self.assertTrue(cluster.nodes["node3.test"].drained)
        self.assertFalse(cluster.nodes["node3.test"].usable)
        self.assertEqual(node1.ndparams["spindle_count"], 1)  # filled from the cluster

    def test_instances(self):
        cluster = build.build_cluster(self.cfg, live(self.cfg), {}, c.DT_FILE)
        db = cluster.instances["db.test"]
        self.assertEqual((db.nodes, db.memory, db.disk_template, db.disk_space_total),
                         (("node1.test", "node2.test"), 1024, "drbd", 2048 + 128))
        web = cluster.instances["web.test"]
        self.assertEqual((web.vcpus, web.running, web.disks[0].size), (2, True, 1024))
        self.assertEqual(web.nics[0].mode, "bridged")
        self.assertEqual(web.nics[0].bridge, web.nics[0].link)
        self.assertEqual(cluster.instances["idle.test"].disk_template, "diskless")
        self.assertEqual(cluster.check(), [])

    def test_storage_follows_the_template(self):
        lvm = build.build_cluster(self.cfg, live(self.cfg), {}, c.DT_DRBD8)
        res = lvm.nodes["node2.test"].resources
        self.assertEqual((res.total_disk, res.free_disk, res.total_spindles), (200_000, 150_000, 2))
        none = build.build_cluster(self.cfg, live(self.cfg), {}, c.DT_DISKLESS)
        self.assertEqual(none.nodes["node2.test"].resources.total_disk, 0)
        figures = live(self.cfg)
        for uuid, f in figures.items():
            figures[uuid] = build.LiveNode(**{**f.__dict__, "storage": {}})
        err = self.assertRaises(OpExecError, build.build_cluster, self.cfg, figures, {},
                                c.DT_PLAIN)
        self.assertIn("didn't return space info for disk template 'plain'", str(err))

    def test_missing_live_data_fails_but_offline_nodes_need_none(self):
        figures = live(self.cfg)
        node2 = self.cfg.node_by_name("node2.test")
        figures[node2.uuid] = None
        err = self.assertRaises(OpExecError, build.build_cluster, self.cfg, figures, {})
        self.assertEqual(str(err), "Can't get data for node node2.test")
        node2.offline = True
        cluster = build.build_cluster(self.cfg, figures, {})
        self.assertIsNone(cluster.nodes["node2.test"].resources)

    def test_input_round_trips_through_the_wire(self):
        ialloc = build.build_input(self.cfg, allocate(), live(self.cfg))
        data = json.loads(json.dumps(wire.render_input(ialloc)))
        self.assertEqual(data["request"]["type"], "allocate")
        self.assertEqual(sorted(data["nodes"]), ["node1.test", "node2.test", "node3.test"])
        self.assertEqual(wire.render_input(wire.parse_input(data)), data)

    def test_same_keys_as_real_ganeti(self):
        """Every part carries the keys Debian's Ganeti 3.0 puts there (its input is kept
        in tests/data/iallocator/allocate.in.json)."""
        with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                               "iallocator", "allocate.in.json")) as f:
            real = json.load(f)
        ours = wire.render_input(build.build_input(self.cfg, allocate(), live(self.cfg)))

        def keys(data, part):
            return set(next(iter(data[part].values())))

        self.assertEqual(set(ours), set(real))
        for part in ("nodes", "instances", "nodegroups"):
            self.assertEqual(keys(ours, part), keys(real, part), part)
        self.assertEqual(set(ours["request"]), set(real["request"]))
        self.assertEqual(set(ours["nodes"]["node1.test"]["ndparams"]),
                         set(real["nodes"]["node1.example.com"]["ndparams"]))

    def test_live_from_node_info(self):
        payload = {"memory_total": 8000, "memory_free": 5000, "memory_dom0": 700,
                   "cpu_total": 4, "cpu_dom0": 4, "disk_total": 50, "disk_free": 20,
                   "bootid": "x"}
        figures = build.LiveNode.from_node_info(payload)
        self.assertEqual((figures.memory_free, figures.storage), (5000, {"file": (50, 20)}))
        self.assertRaises(OpExecError, build.LiveNode.from_node_info,
                          {**payload, "memory_free": None})

    def test_relocate_request(self):
        db = self.cfg.instance_by_name("db.test")
        request = build.relocate_request(self.cfg, db, [db.disks and
                                                        self.cfg.node_by_name("node2.test").uuid])
        self.assertEqual(request, requests.Relocate("db.test", ("node2.test",), 2176))
        self.assertEqual(build.request_template(self.cfg, request), "drbd")
        err = self.assertRaises(OpPrereqError, build.relocate_request, self.cfg,
                                self.cfg.instance_by_name("web.test"), [])
        self.assertEqual(err.args, ("Can't relocate non-mirrored instances", "wrong_input"))


class FindTest(SynchronousTestCase):
    def test_search_path_semantics(self):
        first, second = self.mktemp(), self.mktemp()
        for d in (first, second):
            os.makedirs(d)
        open(os.path.join(second, "alloc"), "w").close()
        self.assertEqual(runner.find_allocator("alloc", [first, second]),
                         os.path.join(second, "alloc"))
        open(os.path.join(first, "alloc"), "w").close()
        self.assertEqual(runner.find_allocator("alloc", [first, second]),
                         os.path.join(first, "alloc"))
        os.makedirs(os.path.join(first, "dir"))
        self.assertIsNone(runner.find_allocator("dir", [first]))  # files only
        for name in ("../alloc", "a/b", "", "al loc", "alloc.sh"):
            self.assertIsNone(runner.find_allocator(name, [first]), name)
        self.assertEqual(runner.allocator_arguments({"a": "1", "b": None}), ["--a=1", "--b"])


@pytest.mark.subprocess
class RunnerTest(TestCase):
    def setUp(self):
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)
        self.clock = Clock()
        self.runner = runner.AllocatorRunner(reactor, self.clock, search_path=[self.dir],
                                             tmp_dir=self.dir)
        cfg = three_node_config()
        self.ialloc = build.build_input(cfg, allocate(), live(cfg))

    def script(self, name: str, body: str) -> None:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    async def test_answer_arguments_and_input_file(self):
        self.script("echo", 'cp "$1" "$(dirname "$1")/seen.json"\n'
                            'printf \'{"success": true, "info": "%s", "result": ["node2.test"]}\''
                            ' "$*"\n')
        answer = await self.runner.run("echo", self.ialloc, {"opt": "v", "flag": None})
        self.assertEqual(answer.result, ("node2.test",))
        path, *options = answer.info.split()
        self.assertEqual(options, ["--opt=v", "--flag"])
        self.assertTrue(os.path.basename(path).startswith("ganeti-iallocator."))
        self.assertFalse(os.path.exists(path))  # removed after the run
        with open(os.path.join(self.dir, "seen.json")) as f:
            self.assertEqual(json.load(f), wire.render_input(self.ialloc))

    async def test_failures_in_ganetis_words(self):
        err = await self.assertFailure(defer.ensureDeferred(self.runner.run("nope", self.ialloc)),
                                       OpExecError)
        self.assertEqual(str(err), "Failure while running the iallocator script: iallocator "
                                   "module 'nope' not found in the search path")
        self.script("bad", "echo cannot parse; exit 3\n")
        err = await self.assertFailure(defer.ensureDeferred(self.runner.run("bad", self.ialloc)),
                                       OpExecError)
        self.assertEqual(str(err), "Failure while running the iallocator script: iallocator "
                                   "module 'bad' failed: exited with exit code 3, output "
                                   "'cannot parse\n'")
        self.script("wrong", 'echo \'{"success": true, "info": "", "result": ["ghost"]}\'\n')
        await self.assertFailure(defer.ensureDeferred(self.runner.run("wrong", self.ialloc)),
                                 Exception)
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith("ganeti-")], [])

    async def test_hanging_allocator_is_killed(self):
        self.script("hang", "sleep 600 & sleep 600\n")  # a child of its own, too
        d = defer.ensureDeferred(self.runner.run_text("hang", "{}"))
        self.clock.advance(runner.DEFAULT_TIMEOUT)
        err = await self.assertFailure(d, OpExecError)
        self.assertIn("failed: terminated after timeout of 300.00 seconds", str(err))

    async def test_flooding_allocator_is_killed(self):
        self.runner.max_output = 10_000
        self.script("flood", "yes\n")
        err = await self.assertFailure(defer.ensureDeferred(self.runner.run_text("flood", "{}")),
                                       OpExecError)
        self.assertIn("failed: killed: its output exceeded 10000 bytes", str(err))


@pytest.mark.subprocess
class HailTest(TestCase):
    """Debian's hail, unchanged, on inputs built from a small config."""

    def setUp(self):
        if runner.find_allocator("hail", [HAIL_DIR]) is None:
            raise unittest.SkipTest("Debian's hail is not installed (package ganeti-htools-3.0)")
        self.cfg = three_node_config()
        self.runner = runner.AllocatorRunner(reactor, reactor, search_path=[HAIL_DIR])

    async def test_allocate_file_goes_to_the_emptier_node(self):
        # node1 holds web and db, node3 is drained: node2 is the only good choice
        ialloc = build.build_input(self.cfg, allocate(), live(self.cfg))
        answer = await self.runner.run("hail", ialloc)
        self.assertTrue(answer.success, answer.info)
        self.assertEqual(answer.result, ("node2.test",))

    async def test_allocate_drbd_gets_two_nodes(self):
        ialloc = build.build_input(self.cfg, allocate(c.DT_DRBD8), live(self.cfg))
        answer = await self.runner.run("hail", ialloc)
        self.assertTrue(answer.success, answer.info)
        self.assertEqual(sorted(answer.result), ["node1.test", "node2.test"])

    async def test_too_big_fails_with_hails_reason(self):
        ialloc = build.build_input(self.cfg, allocate(memory=7000), live(self.cfg))
        answer = await self.runner.run("hail", ialloc)
        self.assertFalse(answer.success)
        self.assertIn("FailMem", answer.info)

    async def test_node_evacuate(self):
        request = requests.NodeEvacuate(("web.test",), "primary-only")
        answer = await self.runner.run("hail", build.build_input(self.cfg, request,
                                                                 live(self.cfg)))
        self.assertTrue(answer.success, answer.info)
        self.assertIsInstance(answer.result, requests.EvacuationResult)
        moved_or_failed = [m.instance for m in answer.result.moved] + \
            [name for name, _ in answer.result.failed]
        self.assertEqual(moved_or_failed, ["web.test"])
