"""gnt-instance add --forthcoming / --commit: the opcodes sent (checked against the
opcode declarations), Ganeti 3.0's help texts and refusal, what is printed, and the
forthcoming field in list (as real Ganeti 3.0.2 shows it)."""

from __future__ import annotations

from typing import Any

from tests.cli.test_gnt_instance import GntInstanceTestCase

_UUID = "0f6b3a52-3c35-4c1c-9f0e-4d2b8f1a7e11"


class ForthcomingAddTest(GntInstanceTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake.results["OP_INSTANCE_CREATE"] = self._create

    def _create(self, op: dict[str, Any]) -> Any:
        if op.get("forthcoming"):
            return {"uuid": _UUID, "nodes": ["node1.example.com", "node2.example.com"]}
        return ["node1.example.com"]

    def test_help_has_ganetis_texts(self):
        r = self.inst("add", "--help")
        text = " ".join(r.out.split())
        self.assertIn("--forthcoming Only reserve resources, but do not create the "
                      "instance yet", text)
        self.assertIn("--commit The instance is already reserved and should be "
                      "committed now", text)

    def test_reservation_with_name_and_options(self):
        r = self.inst("add", "--forthcoming", "-t", "drbd", "-s", "1G", "-o", "busybox",
                      "-I", "hail", "-B", "maxmem=512", "web9.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        op = self.op()
        self.assertEqual((op["forthcoming"], op["instance_name"], op["disks"],
                          op["disk_template"], op["iallocator"], op["beparams"]),
                         (True, "web9.example.com", [{"size": 1024}], "drbd",
                          "hail", {"maxmem": 512}))
        self.assertNotIn("commit", op)
        self.assertNotIn("nics", op)  # the master gives a reservation one default NIC
        self.assertEqual(r.out, f"Forthcoming instance web9.example.com reserved with UUID "
                                f"{_UUID} on node1.example.com, node2.example.com\n")

    def test_reservation_without_name_disks_or_nics(self):
        r = self.inst("add", "--forthcoming", "-n", "node1.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        op = self.op()
        self.assertTrue(op["forthcoming"])
        for absent in ("instance_name", "disks", "nics", "commit"):
            self.assertNotIn(absent, op)
        self.assertEqual(op["pnode"], "node1.example.com")
        self.assertEqual(r.out, f"Forthcoming instance reserved with UUID {_UUID} on "
                                "node1.example.com, node2.example.com\n")

    def test_reservation_submitted_prints_only_the_job(self):
        r = self.inst("add", "--forthcoming", "--submit", "--print-jobid")
        self.assertEqual((r.code, r.out, r.err), (0, "1\n", "JobID: 1\n"))

    def test_dry_run_says_where_it_would_be_reserved(self):
        self.fake.results["OP_INSTANCE_CREATE"] = lambda op: ["node1.example.com"]
        r = self.inst("add", "--forthcoming", "--dry-run", "-t", "diskless")
        self.assertEqual((r.code, r.out), (0, "Dry run: an instance would be reserved on "
                                              "node1.example.com\n"))
        self.assertTrue(self.fake.ops()[-1]["dry_run"])
        r = self.inst("add", "--forthcoming", "--dry-run", "-t", "diskless", "web9")
        self.assertEqual(r.out, "Dry run: instance web9 would be reserved on "
                                "node1.example.com\n")

    def test_disk_errors_still_apply(self):
        r = self.inst("add", "--forthcoming", "-t", "diskless", "-s", "1G", "i1")
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                "Diskless instance but disk information passed (error "
                                "type: wrong_input)\n")
        self.assertEqual(self.fake.ops(), [])

    def test_commit_needs_only_the_name(self):
        r = self.inst("add", "--commit", "web9.example.com")
        self.assertEqual((r.code, r.out, r.err), (0, "", ""))
        op = self.op()
        self.assertEqual((op["commit"], op["instance_name"], op["start"]),
                         (True, "web9.example.com", True))
        for absent in ("disks", "nics", "forthcoming", "os_type", "disk_template"):
            self.assertNotIn(absent, op)

    def test_commit_passes_given_options_through(self):
        r = self.inst("add", "--commit", "-o", "debian+bookworm", "--no-start", "--net",
                      "0:ip=192.0.2.9", "-s", "1G", "web9.example.com")
        self.assertEqual(r.code, 0, r.err)
        op = self.op()
        self.assertEqual((op["os_type"], op["start"], op["nics"], op["disks"]),
                         ("debian+bookworm", False, [{"ip": "192.0.2.9"}], [{"size": 1024}]))

    def test_commit_without_name_is_a_usage_error(self):
        r = self.inst("add", "--commit")
        self.assertEqual((r.code, r.err), (1, "Usage error: gnt-instance add: the "
                                              "following arguments are required: INSTANCE "
                                              "(see 'gnt-instance add --help')\n"))

    def test_plain_add_still_needs_a_name_and_disks(self):
        r = self.inst("add", "-s", "1G")
        self.assertIn("the following arguments are required: INSTANCE", r.err)
        r = self.inst("add", "-t", "plain", "i1")
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: No disk "
                                "information specified (error type: wrong_input)\n")
        self.assertEqual(self.fake.ops(), [])

    def test_both_flags_refused_before_anything_as_ganeti(self):
        r = self.inst("add", "--forthcoming", "--commit", "-t", "diskless", "-o", "noop",
                      "-n", "node2.example.com", "inst4.example.com")
        self.assertEqual((r.code, r.err), (1, (
            "Failure: prerequisites not met for this operation: Creating an instance only "
            "forthcoming and commiting it are mutally exclusive (error type: "
            "wrong_input)\n")))
        self.assertEqual(self.fake.ops(), [])

    def test_plain_add_sends_neither_flag(self):
        r = self.inst("add", "-s", "1G", "-n", "node1.example.com", "i1")
        self.assertEqual((r.code, r.out), (0, ""))
        self.assertNotIn("forthcoming", self.op())
        self.assertNotIn("commit", self.op())

    def test_master_refusal_of_a_commit_is_shown(self):
        from ganeti.core import errors
        self.refuse("OP_INSTANCE_CREATE", errors.OpPrereqError(
            "No guest OS or OS image specified", errors.ECODE_INVAL))
        r = self.inst("add", "--commit", "web9.example.com")
        self.assertEqual((r.code, r.err), (1, "Failure: prerequisites not met for this "
                                              "operation: No guest OS or OS image "
                                              "specified (error type: wrong_input)\n"))


class ForthcomingListTest(GntInstanceTestCase):
    def test_forthcoming_field_as_ganeti_shows_it(self):
        items = self.fake.items["instance"]
        items[0]["forthcoming"] = False
        items[1]["forthcoming"] = True
        items[2]["forthcoming"] = False
        r = self.inst("list", "-o", "name,forthcoming,status", "web1.example.com",
                      "web2.example.com")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out.splitlines(), [
            "Instance         Forthcoming Status",
            "web1.example.com N           running",
            "web2.example.com Y           ADMIN_down",
        ])
