"""gnt-instance replace-disks against a scripted master: the opcode for each mode
(checked against its declaration), Ganeti 3.0's checks of the options and their
messages, the master's refusal, --submit."""

from __future__ import annotations

from ganeti.core import constants as c
from ganeti.core import errors
from tests.cli.test_gnt_migration import MigrationCliCase


class ReplaceDisksTest(MigrationCliCase):
    def _op(self, *argv: str):
        r = self.inst("replace-disks", *argv)
        self.assertEqual(r.code, 0, r.err)
        return self.op()

    def test_each_mode(self):
        base = {"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": "web1",
                "disks": [], "early_release": False, "ignore_ipolicy": False}
        self.assertEqual(self._op("-p", "web1"), {**base, "mode": "replace_on_primary"})
        self.assertEqual(self._op("-s", "web1"), {**base, "mode": "replace_on_secondary"})
        self.assertEqual(self._op("-a", "web1"), {**base, "mode": "replace_auto"})
        self.assertEqual(self._op("-n", "node3", "web1"),
                         {**base, "mode": "replace_new_secondary", "remote_node": "node3"})
        self.assertEqual(self._op("--new-secondary", "node3", "web1")["remote_node"], "node3")
        self.assertEqual(self._op("-I", "hail", "web1"),
                         {**base, "mode": "replace_new_secondary", "iallocator": "hail"})
        self.assertEqual(self.questions, [])  # (Ganeti's asks nothing)

    def test_options(self):
        op = self._op("--on-secondary", "--disks", "0,2", "--early-release",
                      "--ignore-ipolicy", "web1")
        self.assertEqual((op["disks"], op["early_release"], op["ignore_ipolicy"]),
                         ([0, 2], True, True))
        r = self.inst("replace-disks", "-p", "--dry-run", "--priority", "low", "web1")
        self.assertEqual(r.code, 0, r.err)
        sent = self.fake.ops()[-1]
        self.assertEqual((sent["dry_run"], sent["priority"]), (True, c.OP_PRIO_LOW))

    def test_exactly_one_mode(self):
        for argv in ([], ["-p", "-s"], ["-a", "-n", "node3"], ["-n", "node3", "-I", "hail"]):
            r = self.inst("replace-disks", *argv, "web1")
            self.assertEqual(r.code, 1, argv)
            self.assertIn("One and only one of the -p, -s, -a, -n and -I options must be "
                          "passed", r.err)
        self.assertEqual(self.fake.ops(), [])

    def test_disk_list_checks(self):
        r = self.inst("replace-disks", "-a", "--disks", "0", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Cannot specify disks when using automatic mode", r.err)
        r = self.inst("replace-disks", "-p", "--disks", "0,x", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Invalid disk index passed: invalid literal for int() with base 10: "
                      "'x'", r.err)
        self.assertEqual(self.fake.ops(), [])

    def test_master_refusal_and_submit(self):
        self.refuse("OP_INSTANCE_REPLACE_DISKS", errors.OpPrereqError(
            "Can only run replace disks for DRBD8-based instances", errors.ECODE_INVAL))
        r = self.inst("replace-disks", "-s", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("Can only run replace disks for DRBD8-based instances (error type: "
                      "wrong_input)", r.err)
        r = self.inst("replace-disks", "-s", "--submit", "web1")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 2\n"))

    def test_help(self):
        r = self.inst("replace-disks", "--help")
        self.assertEqual(r.code, 0)
        for option in ("--on-primary", "--on-secondary", "--auto", "--new-secondary",
                       "--iallocator", "--disks", "--early-release", "--ignore-ipolicy"):
            self.assertIn(option, r.out)
