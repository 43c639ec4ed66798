"""gnt-instance add -I / --dry-run, gnt-instance batch-create and gnt-debug iallocator end
to end against a whole master daemon with in-process nodes and allocators."""

from __future__ import annotations

import io
import json
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_debug, gnt_instance, jobs
from ganeti.cli.gnt_cluster import default_iallocator
from ganeti.core.errors import OpPrereqError
from tests.fakes.allocators import answer
from tests.fakes.clirun import Run
from tests.master.test_lu_allocate import AllocatorCase


def place_some(data):
    names = [i["name"] for i in data["request"]["instances"]]
    return answer([[[n, ["node2.test"]] for n in names[:-1]], names[-1:]])


class AllocatorCliTest(AllocatorCase):
    programs = {"two": lambda _d: answer(["node2.test"]), "some": place_some}

    def setUp(self):
        super().setUp()
        self.patch(jobs, "ask_user", lambda question: True)

    def tool(self, module, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = module.main(list(argv), stdout=out, stderr=err,
                           environ=self.master.paths.env(),
                           luxi_factory=lambda paths: self.master.client())
        return Run(code, out.getvalue(), err.getvalue())

    def add(self, *argv: str) -> Run:
        return self.tool(gnt_instance, "add", "-t", "diskless", "-o", "busybox",
                         "--no-install", "--no-name-check", "--no-ip-check", "-B",
                         "maxmem=128M,minmem=128M", *argv)

    def test_add_with_an_allocator(self):
        r = self.add("-I", "two", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Selected nodes for instance inst1.test via iallocator two: "
                      "node2.test", r.out)
        self.assertEqual(self.node_of(), "node2.test")

    def test_add_dry_run_prints_the_nodes(self):
        r = self.add("-I", "two", "--dry-run", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Dry run: instance inst1.test would be created on node2.test", r.out)
        self.assertIsNone(self.instance())

    def test_add_with_an_unknown_allocator_names_it(self):
        r = self.add("-I", "nosuch", "inst1.test")
        self.assertEqual(r.code, 1)
        self.assertIn("iallocator module 'nosuch' not found in the search path", r.err)

    def test_batch_create(self):
        spec = [{"instance_name": f"b{i}.test", "disk_template": "diskless", "disks": [],
                 "nics": [{}], "os_type": "busybox", "no_install": True, "start": False,
                 "name_check": False, "ip_check": False, "mode": "create",
                 "beparams": {"maxmem": 128, "minmem": 128}} for i in range(3)]
        path = os.path.join(self.mktemp())
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        r = self.tool(gnt_instance, "batch-create", "-I", "some", path)
        self.assertEqual(r.code, 1, r.err)
        self.assertIn("Not placed by the allocator: b2.test", r.out)
        self.assertIn("There were 1 errors during the creation.", r.out)
        self.assertEqual((self.node_of("b0.test"), self.node_of("b1.test")),
                         ("node2.test", "node2.test"))
        with open(path, "w", encoding="utf-8") as f:
            json.dump([{"instance_name": "x.test", "colour": "blue"}], f)
        r = self.tool(gnt_instance, "batch-create", path)
        self.assertEqual(r.code, 1)
        self.assertIn("Unknown fields in definition 0: colour", r.err)

    def test_debug_iallocator_in_and_out(self):
        r = self.tool(gnt_debug, "iallocator", "--dir", "in", "-m", "allocate", "-o",
                      "busybox", "-t", "file", "new.test")
        self.assertEqual(r.code, 0, r.err)
        data = json.loads(r.out)
        self.assertEqual(data["request"]["disks"],
                         [{"size": 4096, "mode": "rw", "dev_type": "file"}] * 2)
        # gnt-debug sends {"mac", "ip": None, "bridge": None}; as luxid, the opcode keeps
        # no null values, so the request has the MAC only (as the job's opcode shows)
        self.assertEqual(data["request"]["nics"], [{"mac": "00:11:22:33:44:55"}])
        r = self.tool(gnt_debug, "allocator", "--dir", "out", "-I", "two", "-m",
                      "allocate", "-o", "busybox", "-t", "file", "new.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(json.loads(r.out), answer(["node2.test"]))


class InitDefaultTest(SynchronousTestCase):
    """gnt-cluster init's default allocator, as Ganeti's bootstrap chooses it."""

    def test_hail_when_installed_else_none_and_a_given_one_must_exist(self):
        with_hail = self.mktemp()
        os.makedirs(with_hail)
        open(os.path.join(with_hail, "hail"), "w").close()
        empty = self.mktemp()
        os.makedirs(empty)
        self.assertEqual(default_iallocator(None, (empty, with_hail)), "hail")
        self.assertEqual(default_iallocator(None, (empty,)), "")
        self.assertEqual(default_iallocator("", (with_hail,)), "")  # -I '': none
        self.assertEqual(default_iallocator("ganeti-place", (empty,)), "ganeti-place")
        self.assertEqual(default_iallocator("hail,ganeti-place", (with_hail,)),
                         "hail,ganeti-place")
        with self.assertRaises(OpPrereqError) as caught:
            default_iallocator("nosuch", (with_hail,))
        self.assertEqual(caught.exception.args[0],
                         "Invalid default iallocator script 'nosuch' specified")
