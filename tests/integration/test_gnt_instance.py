"""gnt-instance on real daemons, driven by our tool and by Debian's Ganeti 3.0
gnt-instance side by side: the same commands must give the same output (job
ids and log timestamps aside), the same exit codes and the same effects.

Instances are diskless and not installed (the virtual cluster has no file
storage paths and the busybox OS needs a disk), on the fake hypervisor.
"""

import os
import re
import sys

from tests.integration.clustercase import ClusterCase
from tests.integration.helpers import ROOT, node_env, run

DEBIAN = "/usr/share/ganeti/3.0/gnt-instance"
OURS = os.path.join(ROOT, "bin", "gnt-instance")

_LOG_LINE = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} ", re.M)
_JOB_ID = re.compile(r"\b[jJ]obs? [\d, ]*\d\b|^\d+: ", re.M)


def normalized(text):
    """Output without the log lines' timestamps and the job ids."""
    return _JOB_ID.sub(lambda m: "job N" if m.group(0)[0] in "jJ" else "N: ",
                       _LOG_LINE.sub("<time> ", text))


_PREREQ = re.compile(r"^Failure: prerequisites not met for this operation:\n"
                     r"error type: (\w+), error details:\n(.*)$", re.M)


def one_line_refusal(text):
    """Ganeti's three-line OpPrereqError message as our framework writes it."""
    return _PREREQ.sub(r"Failure: prerequisites not met for this operation: \2 "
                       r"(error type: \1)", text)


class GntInstanceCompatTest(ClusterCase):
    """Tests run in name order on one 2-node cluster."""

    PREFIX = "ganeti-gnt-instance-"
    NODES = 2

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(DEBIAN):
            raise AssertionError(f"{DEBIAN} is missing: run 'make install-compat'")
        super().setUpClass()

    @classmethod
    def setUpCluster(cls):
        cls.node2 = cls.cluster.nodes[1]

    def gnt(self, *argv, debian=False):
        env = node_env(self.cluster.dir, self.cluster.master)
        cmd = [DEBIAN] if debian else [sys.executable, OURS]
        return run([*cmd, *argv], env=env, check=False, timeout=120)

    def both(self, *argv):
        """The same command with Debian's tool and ours: (code, stdout, stderr) each,
        normalized."""
        return [(r.returncode, normalized(r.stdout), normalized(r.stderr))
                for r in (self.gnt(*argv, debian=True), self.gnt(*argv))]

    def ok(self, *argv, debian=False):
        r = self.gnt(*argv, debian=debian)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def add_args(self, name):
        return ["add", "-t", "diskless", "-n", self.node2, "-o", "busybox", "--no-install",
                "--no-name-check", "--no-ip-check", "-B", "maxmem=128M,minmem=128M",
                "--tags", "web", name]

    def test_1_add(self):
        ours = self.ok(*self.add_args("i1.vcluster.test"))
        debian = self.ok(*self.add_args("i2.vcluster.test"), debian=True)
        self.assertEqual(normalized(ours).replace("i1.", "i2."), normalized(debian))

    def test_2_list_and_fields(self):
        for argv in (["list"], ["list", "--no-headers", "-o", "+tags,be/maxmem,nic.macs",
                                "--separator", "|"],
                     ["list", "-o", "name,pnode,admin_state", 'admin_state == "down"'],
                     ["list", "--units", "g", "i1"], ["list-fields", "name", "oper_ram"]):
            debian, ours = self.both(*argv)
            self.assertEqual(debian[0], 0, debian)
            self.assertEqual(ours, debian, argv)
            if argv[0] == "list":
                self.assertIn("i1.vcluster.test", ours[1])

    def test_3_info(self):
        for argv in (["info", "-s", "i1.vcluster.test"], ["info", "i2.vcluster.test"],
                     ["info", "--all"]):
            debian, ours = self.both(*argv)
            self.assertEqual(debian[0], 0, debian)
            self.assertEqual(ours, debian, argv)
        self.assertIn("Instance name: i1.vcluster.test", ours[1])

    def test_4_start_stop_console(self):
        ours = self.ok("startup", "i1")
        debian = self.ok("startup", "i2", debian=True)
        self.assertEqual(normalized(ours).replace("i1.", "i2."), normalized(debian))
        out = self.ok("list", "--no-headers", "-o", "name,status")
        self.assertEqual(out.split(), ["i1.vcluster.test", "running", "i2.vcluster.test",
                                       "running"])
        debian, ours = self.both("console", "i1")
        self.assertEqual(debian[0], 0, debian)
        self.assertEqual(ours, debian)
        ours = self.ok("reboot", "-t", "hard", "i1")
        debian = self.ok("reboot", "-t", "hard", "i2", debian=True)
        self.assertEqual(normalized(ours).replace("i1.", "i2."), normalized(debian))
        ours = self.ok("shutdown", "--timeout", "0", "--force-multiple", "--node", self.node2)
        self.assertEqual(normalized(ours), "Submitted job N\n"
                                           "Waiting for job N for i1.vcluster.test ...\n"
                                           "Waiting for job N for i2.vcluster.test ...\n")
        out = self.ok("list", "--no-headers", "-o", "status")
        self.assertEqual(out.split(), ["ADMIN_down", "ADMIN_down"])

    def test_5_modify_and_tags(self):
        ours = self.ok("modify", "-B", "vcpus=2", "i1.vcluster.test")
        debian = self.ok("modify", "-B", "vcpus=2", "i2.vcluster.test", debian=True)
        self.assertEqual(ours.replace("i1", "i2"), debian)
        self.assertIn(" - be/vcpus -> 2\n", ours)
        debian, ours = self.both("list-tags", "i1.vcluster.test")
        self.assertEqual(ours, debian)
        self.assertEqual(ours[1], "web\n")

    def test_6_errors(self):
        """Refusals by the client and by the master: the same messages and exit codes
        (Ganeti writes a refusal's code on a line of its own, we at its end)."""
        for case in ("startup nosuch", "info nosuch", "modify nosuch", "remove nosuch",
                     "rename nosuch x", "console nosuch", "list-tags nosuch",
                     "deactivate-disks nosuch", "modify -B colour=red i1.vcluster.test",
                     "add -s 1G i3", "add -t diskless -s 1G -n n1 i3",
                     "add -t file -n n1 i3", "add --disk 0:size=1G,adopt=x -n n1 i3",
                     "add --disk x:size=1G -n n1 i3", "add --disk 0:size=1Q -n n1 i3",
                     "add -s 1G -O a=1,a=2 -n n1 i3", "add -s 1G -B vcpus=many -n n1 i3",
                     "add -s 1G --net 0:colour=red -n n1 i3", "add -H no_fake -s 1G i3",
                     "add --disk 0:mode=rw -n n1 i3", "modify i1.vcluster.test",
                     "modify --disk add:mode=rw i1", "modify --net 0:add,remove i1",
                     "modify -t plain --file-driver loop i1", "grow-disk i1 x 1G",
                     "grow-disk i1 0 1X", "recreate-disks -n a -I b i1", "info",
                     "info --all i1", "startup", "startup --all x", "startup --node",
                     "startup --tags", "startup --tags nosuchtag"):
            debian, ours = self.both(*case.split())
            self.assertNotEqual(ours[0], 0, case)
            self.assertEqual(ours, (debian[0], debian[1], one_line_refusal(debian[2])),
                             case)

    def test_7_rename_and_remove(self):
        ours = self.ok("rename", "--no-name-check", "--no-ip-check", "-f", "i1.vcluster.test",
                       "i3.vcluster.test")
        self.assertTrue(ours.endswith("Instance 'i1.vcluster.test' renamed to "
                                      "'i3.vcluster.test'\n"), ours)
        self.ok("remove", "-f", "i3.vcluster.test")
        self.ok("remove", "-f", "i2.vcluster.test", debian=True)
        debian, ours = self.both("list", "--no-headers")
        self.assertEqual(ours, debian)
        self.assertEqual(ours, (0, "", ""))
