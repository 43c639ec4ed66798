"""gnt-instance end to end against a whole master daemon (real queue, processor,
logical units and queries) with an in-process node on the fake hypervisor:
add, list, info, stop, start, reboot, modify, rename, tags, remove, and the
master's refusals as the tool shows them."""

from __future__ import annotations

import io

from ganeti.cli import gnt_instance, jobs
from tests.fakes.clirun import Run
from tests.master.test_lu_instance import InstanceCase


class EndToEndTest(InstanceCase):
    def setUp(self):
        super().setUp()
        self.patch(jobs, "ask_user", lambda question: True)

    def inst(self, *argv: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_instance.main(list(argv), stdout=out, stderr=err,
                                 environ=self.master.paths.env(),
                                 luxi_factory=lambda paths: self.master.client())
        return Run(code, out.getvalue(), err.getvalue())

    def add(self, name: str, *argv: str) -> Run:
        r = self.inst("add", "-t", "diskless", "-n", "node1.test", "-o", "busybox",
                      "--no-install", "--no-name-check", "--no-ip-check", "-B",
                      "maxmem=128M,minmem=128M", *argv, name)
        self.assertEqual(r.code, 0, r.err)
        return r

    def test_lifecycle(self):
        self.add("inst1.test")
        r = self.inst("list", "--no-headers", "-o", "name,pnode,admin_state,be/maxmem")
        self.assertEqual((r.code, r.out.split()), (0, ["inst1.test", "node1.test", "down",
                                                       "128M"]))
        r = self.inst("startup", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Waiting for job", r.out)
        self.assertTrue(self.running("inst1.test"))
        r = self.inst("reboot", "-t", "full", "inst1")
        self.assertEqual(r.code, 0, r.err)
        self.assertTrue(self.running("inst1.test"))
        r = self.inst("shutdown", "--timeout", "0", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertFalse(self.running("inst1.test"))
        r = self.inst("add-tags", "inst1.test", "web")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.inst("list-tags", "inst1.test").out, "web\n")
        r = self.inst("remove", "-f", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIsNone(self.instance("inst1.test"))
        self.assertEqual(self.inst("list", "--no-headers").out, "")

    def test_info_modify_rename(self):
        self.add("inst1.test")
        r = self.inst("info", "-s", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("- Instance name: inst1.test\n", r.out)
        self.assertIn("  State: configured to be down\n", r.out)
        self.assertIn("  Hypervisor: fake\n", r.out)
        self.assertIn("  Disk template: diskless\n", r.out)
        r = self.inst("modify", "-B", "vcpus=2", "inst1.test")
        self.assertEqual(r.code, 0, r.err)
        self.assertIn("Modified instance inst1.test\n - be/vcpus -> 2\n", r.out)
        self.assertEqual(self.instance("inst1.test").beparams["vcpus"],
                         2)
        r = self.inst("rename", "--no-name-check", "--no-ip-check", "inst1.test",
                      "inst2.test")
        self.assertEqual(r.code, 0, r.err)
        # (the job's warnings come first: our test node has no busybox OS to rename with)
        self.assertTrue(r.out.endswith("Instance 'inst1.test' renamed to 'inst2.test'\n"),
                        r.out)

    def test_refusals(self):
        self.add("inst1.test")
        r = self.inst("add", "-t", "diskless", "-n", "node1.test", "-o", "busybox",
                      "--no-install", "--no-name-check", "--no-ip-check", "inst1.test")
        self.assertEqual((r.code, r.err), (1, "Failure: prerequisites not met for this "
                                              "operation: Instance 'inst1.test' is already "
                                              "in the cluster (error type: already_exists)\n"))
        r = self.inst("startup", "nosuch.test")
        self.assertEqual(r.code, 1)
        self.assertIn("nosuch.test", r.err)
        self.assertIn("(error type: unknown_entity)", r.err)
