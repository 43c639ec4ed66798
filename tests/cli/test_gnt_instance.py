"""gnt-instance: the opcodes each command submits (checked against the opcode
declarations), its output, errors, exit codes, confirmations and the
multi-instance selection, against a scripted master."""

from __future__ import annotations

import io
import json
import os
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_instance, gnt_instance_info, gnt_instance_opts, jobs, table
from ganeti.core import constants as c
from ganeti.core import errors, opcodes
from tests.cli.test_gnt_node import NODE_FIELDS, ScriptedMaster
from tests.fakes.clirun import Run

_FIELDS_FILE = os.path.join(os.path.dirname(__file__), "..", "data",
                            "instance-fields-3.0.json")
with open(_FIELDS_FILE, encoding="utf-8") as _f:
    #: Ganeti 3.0's instance field definitions (as Debian's luxid answers them).
    INSTANCE_FIELDS = {f["name"]: f for f in json.load(_f)["fields"]}


class InstanceMaster(ScriptedMaster):
    """The scripted master with what gnt-instance also calls: SubmitManyJobs,
    QueryConfigValues, and luxid's refusal of unknown names in a name filter.
    Every submitted opcode is checked against the declarations."""

    def _submit(self, ops: list[dict[str, Any]]) -> int:
        for op in ops:
            opcodes.validate(op)
        return super()._submit(ops)

    def _SubmitManyJobs(self, jobs_ops: list[list[dict[str, Any]]]) -> list[list[Any]]:
        return [[True, self._submit(ops)] for ops in jobs_ops]

    def _QueryConfigValues(self, fields: list[str]) -> list[Any]:
        return [{"cluster_name": "cluster.example.com"}[f] for f in fields]

    def _Query(self, what: str, fields: list[str], qfilter: Any) -> dict[str, Any]:
        if (what == c.QR_INSTANCE and isinstance(qfilter, list) and qfilter[:1] == ["|"]
                and all(term[:2] == ["==", "name"] for term in qfilter[1:])):
            known = [item["name"] for item in self.items[what]]
            for term in qfilter[1:]:
                if not any(n == term[2] or n.startswith(term[2] + ".") for n in known):
                    raise errors.OpPrereqError(f"Instance name '{term[2]}' not found",
                                               errors.ECODE_NOENT)
        return super()._Query(what, fields, qfilter)


def cluster() -> InstanceMaster:
    master = InstanceMaster()
    master.fielddefs["instance"] = INSTANCE_FIELDS
    master.fielddefs["node"] = NODE_FIELDS
    master.items["instance"] = [
        {"name": "web1.example.com", "hypervisor": "fake", "os": "busybox",
         "pnode": "node1.example.com", "status": "running", "oper_ram": 512,
         "tags": ["web", "prod"], "snodes": [], "disk.sizes": [1024, 512],
         "console": {"instance": "web1.example.com", "kind": "msg",
                     "message": "Console not available for fake hypervisor"},
         "oper_state": True},
        {"name": "web2.example.com", "hypervisor": "fake", "os": "busybox",
         "pnode": "node2.example.com", "status": "ADMIN_down", "tags": ["web"],
         "snodes": ["node1.example.com"], "disk.sizes": [], "console": None,
         "oper_state": False},
        {"name": "db1.example.com", "hypervisor": "kvm", "os": "debian+bookworm",
         "pnode": "node1.example.com", "status": "running", "oper_ram": 2048,
         "tags": [], "snodes": [], "disk.sizes": [10240],
         "console": {"instance": "db1.example.com", "kind": "ssh", "host": "node1",
                     "user": "root", "port": 22,
                     "command": ["socat", "STDIO,raw", "UNIX-CONNECT:/run/db1.serial"]},
         "oper_state": True},
    ]
    master.items["node"] = [
        {"name": "node1.example.com", "pinst_list": ["db1.example.com", "web1.example.com"],
         "sinst_list": ["web2.example.com"], "tags": ["rack1"]},
        {"name": "node2.example.com", "pinst_list": ["web2.example.com"], "sinst_list": [],
         "tags": ["rack2"]},
    ]
    return master


class GntInstanceTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.fake = cluster()
        self.questions: list[str] = []
        self.answer = True
        self.patch(jobs, "ask_user", self._ask)

    def _ask(self, question: str) -> bool:
        self.questions.append(question)
        return self.answer

    def inst(self, *argv: str, environ: dict[str, str] | None = None) -> Run:
        out, err = io.StringIO(), io.StringIO()
        code = gnt_instance.main(list(argv), stdout=out, stderr=err,
                                 environ=environ or {}, luxi_factory=lambda paths: self.fake)
        return Run(code, out.getvalue(), err.getvalue())

    def op(self, index: int = -1) -> dict[str, Any]:
        """A submitted opcode without the generic parameters."""
        op = dict(self.fake.ops()[index])
        for key in ("reason", "debug_level", "dry_run", "priority"):
            op.pop(key, None)
        return op

    def refuse(self, op_id: str, err: Exception) -> None:
        def fail(op: dict[str, Any]) -> Any:
            raise err
        self.fake.results[op_id] = fail


# --- add ---------------------------------------------------------------------------

class AddTest(GntInstanceTestCase):
    def test_typical_add(self):
        r = self.inst("add", "-t", "plain", "-n", "node1", "-o", "busybox", "--disk",
                      "0:size=1G", "--disk", "1:size=512M,mode=ro,vg=xenvg", "-B",
                      "maxmem=1G,vcpus=2", "-H", "fake:migration_mode=live",
                      "web3.example.com")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_CREATE", "instance_name": "web3.example.com",
            "mode": "create", "disk_template": "plain", "pnode": "node1",
            "os_type": "busybox", "hypervisor": "fake",
            "disks": [{"size": 1024}, {"size": 512, "mode": "ro", "vg": "xenvg"}],
            "nics": [{}], "beparams": {"maxmem": 1024, "vcpus": 2},
            "hvparams": {"migration_mode": "live"}, "osparams": {},
            "osparams_private": {}, "osparams_secret": {}, "start": True,
            "no_install": False, "force_variant": False, "ip_check": True,
            "name_check": True, "conflicts_check": True, "wait_for_sync": True,
            "ignore_ipolicy": False, "opportunistic_locking": False,
            "identify_defaults": False, "tags": []})
        reason = self.fake.ops()[-1]["reason"]
        self.assertEqual(reason[-1][:2], ["gnt:client:gnt-instance", "add"])

    def test_every_flag(self):
        r = self.inst("add", "-t", "drbd", "-n", "node1:node2", "-s", "2.5G", "--net",
                      "0:mac=aa:00:00:11:22:33,ip=pool,network=net1", "--net",
                      "2:mode=routed,link=br1,vlan=.100", "-O", "dhcp=yes,no_swap",
                      "--os-parameters-private", "pw=x\\,y", "--os-parameters-secret",
                      "key=k", "--file-storage-dir", "d", "--file-driver", "loop",
                      "--no-start", "--no-install", "--no-ip-check", "--no-name-check",
                      "--no-conflicts-check", "--no-wait-for-sync", "--force-variant",
                      "--ignore-ipolicy", "--tags", "a,b", "-g", "default",
                      "--opportunistic-locking", "-o", "debian+bookworm", "--dry-run",
                      "--priority", "high", "inst")
        self.assertEqual(r.code, 0, r.err)
        op = self.fake.ops()[-1]
        self.assertEqual((op["dry_run"], op["priority"]), (True, c.OP_PRIO_HIGH))
        op = self.op()
        self.assertEqual((op["pnode"], op["snode"]), ("node1", "node2"))
        self.assertEqual(op["disks"], [{"size": 2560}])
        self.assertEqual(op["nics"], [
            {"mac": "aa:00:00:11:22:33", "ip": "pool", "network": "net1"}, {},
            {"mode": "routed", "link": "br1", "vlan": ".100"}])
        self.assertEqual(op["osparams"], {"dhcp": "yes", "swap": False})
        self.assertEqual(op["osparams_private"], {"pw": "x,y"})
        self.assertEqual(op["osparams_secret"], {"key": "k"})
        for key, value in {"start": False, "no_install": True, "ip_check": False,
                           "name_check": False, "conflicts_check": False,
                           "wait_for_sync": False, "force_variant": True,
                           "ignore_ipolicy": True, "tags": ["a", "b"],
                           "group_name": "default", "opportunistic_locking": True,
                           "file_storage_dir": "d", "file_driver": "loop"}.items():
            self.assertEqual(op[key], value, key)

    def test_disk_indices_adoption_and_no_nics(self):
        r = self.inst("add", "-t", "blockdev", "-n", "node1", "--disk", "1:adopt=/dev/sdb",
                      "--disk", "0:size=10,spindles=2", "--no-nics", "i1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op()["disks"], [{"size": 12, "spindles": 2},
                                              {"adopt": "/dev/sdb", "size": 0}])
        self.assertEqual(self.op()["nics"], [])

    def test_diskless(self):
        r = self.inst("add", "-t", "diskless", "-n", "node1", "i1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op()["disks"], [])

    def assertRefused(self, r: Run, message: str, code: str = "wrong_input") -> None:
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                f"{message} (error type: {code})\n")

    def test_disk_errors(self):
        cases = [
            (["-t", "diskless", "-s", "1G"], "Diskless instance but disk information passed"),
            (["-t", "plain"], "No disk information specified"),
            (["-t", "plain", "-s", "1G", "--disk", "0:size=1G"],
             "Please use either the '--disk' or '-s' option"),
            (["--disk", "0:size=1G,adopt=lv"], "Only one of 'size' and 'adopt' allowed "
                                               "(disk 0)"),
            (["--disk", "0:mode=rw"], "Missing size or adoption source for disk 0"),
            (["--disk", "x:size=1G"],
             "Invalid disk index passed: invalid literal for int() with base 10: 'x'"),
            (["--disk", "0:adopt=lv,spindles=1"],
             "spindles is not a valid option when adopting a disk"),
            (["-s", "1G", "--net", "a:ip=1.2.3.4"],
             "Invalid NIC index passed: invalid literal for int() with base 10: 'a'"),
            (["--disk", "-1:size=1G"], "Invalid disk index passed: -1 (the indices are 0 "
                                       "to 15)"),
            (["--disk", "1000000000:size=1G"], "Invalid disk index passed: 1000000000 (the "
                                               "indices are 0 to 15)"),
            (["-s", "1G", "--net", "8:ip=pool"], "Invalid NIC index passed: 8 (the indices "
                                                 "are 0 to 7)"),
        ]
        for argv, message in cases:
            self.assertRefused(self.inst("add", "-n", "node1", *argv, "i1"), message)
        self.assertEqual(self.fake.ops(), [])

    def test_bad_sizes_as_ganeti(self):
        # Ganeti's client lets these unit errors through unhandled
        for argv in (["add", "--disk", "0:size=1Q", "i1"],
                     ["modify", "--disk", "0:size=big", "i1"],
                     ["recreate-disks", "--disk", "0:size=1Q", "i1"]):
            r = self.inst(*argv)
            self.assertEqual(r.code, 1)
            self.assertRegex(r.err, r"^Unhandled Ganeti error: (Unknown unit: Q|Invalid "
                                    r"format)\n$")
        r = self.inst("add", "-H", "no_fake", "-s", "1G", "i1")
        self.assertEqual(r.err, "Parameter Error: Expected dictionary, got 'False'\n")
        self.assertEqual(self.fake.ops(), [])

    def test_bad_parameters(self):
        r = self.inst("add", "-s", "1G", "-B", "colour=red", "i1")
        self.assertEqual((r.code, r.err), (1, "Parameter Error: Unknown parameter 'colour'\n"))
        r = self.inst("add", "-s", "1G", "-B", "vcpus=many", "i1")
        self.assertEqual(r.err, "Parameter Error: 'vcpus' (value many) is not a valid "
                                "integer\n")
        r = self.inst("add", "-s", "1G", "-O", "a=1,a=2", "i1")
        self.assertEqual(r.err, "Failure: unknown/wrong parameter name 'Duplicate key 'a' "
                                "in option -O'\n")
        r = self.inst("add", "-s", "1G", "--net", "0:colour=red", "i1")
        self.assertEqual(r.err, "Parameter Error: Unknown parameter 'colour'\n")
        r = self.inst("add", "-s", "lots", "i1")
        self.assertEqual(r.code, 1)
        self.assertIn("argument -s/--os-size: Invalid format", r.err)
        r = self.inst("add", "-t", "nonsense", "-s", "1G", "i1")
        self.assertIn("invalid choice: 'nonsense'", r.err)
        self.assertEqual(self.fake.ops(), [])

    def test_master_refusal_is_shown(self):
        self.refuse("OP_INSTANCE_CREATE", errors.OpPrereqError(
            "Instance allocators are not supported yet", errors.ECODE_INVAL))
        r = self.inst("add", "-I", "hail", "-s", "1G", "i1")
        self.assertEqual(self.op()["iallocator"], "hail")
        self.assertEqual((r.code, r.err), (1, "Failure: prerequisites not met for this "
                                              "operation: Instance allocators are not "
                                              "supported yet (error type: wrong_input)\n"))

    def test_submit_and_job_log(self):
        r = self.inst("add", "--submit", "--print-jobid", "-s", "1G", "-n", "n", "i1")
        self.assertEqual((r.code, r.out, r.err), (0, "1\n", "JobID: 1\n"))
        self.fake.logs[2] = [[1, [1700000000, 0], "message", "* creating instance disks..."]]
        r = self.inst("add", "-s", "1G", "-n", "n", "i2")
        self.assertEqual(r.code, 0)
        self.assertTrue(r.out.endswith(" * creating instance disks...\n"), r.out)


# --- remove, rename --------------------------------------------------------------------

class RemoveRenameTest(GntInstanceTestCase):
    def test_remove_asks_first(self):
        self.answer = False
        r = self.inst("remove", "web1")
        self.assertEqual((r.code, r.out, r.err), (1, "", ""))
        self.assertEqual(self.questions, [
            "This will remove the volumes of the instance web1 (including mirrors), thus "
            "removing all the data of the instance. Continue?"])
        self.assertEqual(self.fake.ops(), [])
        self.answer = True
        r = self.inst("remove", "--shutdown-timeout", "30", "--ignore-failures", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_REMOVE", "instance_name": "web1",
                                     "ignore_failures": True, "shutdown_timeout": 30})

    def test_remove_unknown_and_forced(self):
        r = self.inst("remove", "nosuch")
        self.assertEqual(r.code, 1)
        self.assertIn("Instance name 'nosuch' not found (error type: unknown_entity)", r.err)
        self.assertEqual(self.questions, [])
        r = self.inst("remove", "-f", "--submit", "nosuch")
        self.assertEqual((r.code, r.err), (0, "JobID: 1\n"))
        self.assertEqual(self.questions, [])
        self.assertEqual(self.op()["shutdown_timeout"], c.DEFAULT_SHUTDOWN_TIMEOUT)

    def test_rename(self):
        self.fake.results["OP_INSTANCE_RENAME"] = lambda op: "web9.example.com"
        r = self.inst("rename", "web1", "web9")
        self.assertEqual((r.code, r.out), (0, "Instance 'web1' renamed to "
                                              "'web9.example.com'\n"))
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_RENAME", "instance_name": "web1",
                                     "new_name": "web9", "ip_check": True,
                                     "name_check": True})

    def test_rename_without_name_check_asks(self):
        self.answer = False
        r = self.inst("rename", "--no-name-check", "--no-ip-check", "web1", "web9")
        self.assertEqual(r.code, 1)
        self.assertEqual(self.questions, ["As you disabled the check of the DNS entry, please "
                                          "verify that 'web9' is a FQDN. Continue?"])
        r = self.inst("rename", "-f", "--no-name-check", "--no-ip-check", "web1", "web9")
        self.assertEqual(r.code, 0)
        self.assertEqual((self.op()["name_check"], self.op()["ip_check"]), (False, False))


# --- startup, shutdown, reboot, reinstall ----------------------------------------------

class MultiTest(GntInstanceTestCase):
    def test_start_one_instance(self):
        r = self.inst("startup", "web1")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "Waiting for job 1 for web1.example.com ...\n")
        self.assertEqual(self.questions, [])
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_STARTUP",
                                     "instance_name": "web1.example.com", "force": False,
                                     "ignore_offline_nodes": False, "no_remember": False,
                                     "startup_paused": False})
        self.assertIn(("SubmitManyJobs", ([[self.fake.ops()[-1]]],)), self.fake.calls)

    def test_start_options_and_alias(self):
        r = self.inst("start", "-H", "kernel_path=/k", "-B", "maxmem=1G", "--paused",
                      "--no-remember", "--ignore-offline", "-f", "web1")
        self.assertEqual(r.code, 0, r.err)
        op = self.op()
        self.assertEqual((op["hvparams"], op["beparams"]),
                         ({"kernel_path": "/k"}, {"maxmem": "1G"}))
        self.assertTrue(op["startup_paused"] and op["no_remember"]
                        and op["ignore_offline_nodes"] and op["force"])

    def test_shutdown_and_reboot_opcodes(self):
        r = self.inst("stop", "--timeout", "5", "--no-remember", "web2")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_SHUTDOWN",
                                     "instance_name": "web2.example.com", "force": False,
                                     "timeout": 5, "ignore_offline_nodes": False,
                                     "no_remember": True})
        r = self.inst("reboot", "-t", "full", "--shutdown-timeout", "7",
                      "--ignore-secondaries", "web2")
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_REBOOT",
                                     "instance_name": "web2.example.com",
                                     "reboot_type": "full", "ignore_secondaries": True,
                                     "shutdown_timeout": 7})
        r = self.inst("reboot", "web2")
        self.assertEqual(self.op()["reboot_type"], "hard")
        r = self.inst("reboot", "-t", "warm", "web2")
        self.assertIn("invalid choice: 'warm'", r.err)

    def test_several_instances_need_confirmation(self):
        self.answer = False
        r = self.inst("shutdown", "web1", "web2")
        self.assertEqual(r.code, 1)
        self.assertEqual(self.questions, [
            "The shutdown will operate on 2 instances.\nDo you want to continue?\n"
            "Affected instances:\n  web1.example.com\n  web2.example.com"])
        self.assertEqual(self.fake.ops(), [])
        self.answer = True
        r = self.inst("shutdown", "web1", "web2")
        self.assertEqual(r.code, 0)
        self.assertEqual(r.out, "Submitted jobs 1, 2\n"
                                "Waiting for job 1 for web1.example.com ...\n"
                                "Waiting for job 2 for web2.example.com ...\n")
        self.questions.clear()
        r = self.inst("shutdown", "--force-multiple", "web1", "web2")
        self.assertEqual((r.code, self.questions), (0, []))

    def test_selection_modes(self):
        cases = {
            ("--node", "node1"): ["db1.example.com", "web1.example.com", "web2.example.com"],
            ("--primary", "node1"): ["db1.example.com", "web1.example.com"],
            ("--secondary", "node1"): ["web2.example.com"],
            ("--all",): ["web1.example.com", "web2.example.com", "db1.example.com"],
            ("--tags", "web"): ["web1.example.com", "web2.example.com"],
            ("--node-tags", "rack2"): ["web2.example.com"],
            ("--pri-node-tags", "rack1", "rack2"): ["db1.example.com", "web1.example.com",
                                                    "web2.example.com"],
            ("--sec-node-tags", "rack1"): ["web2.example.com"],
            ("--instance", "db1"): ["db1.example.com"],
        }
        for argv, names in cases.items():
            first = self.fake.next_id
            r = self.inst("reboot", "--force-multiple", *argv)
            self.assertEqual(r.code, 0, (argv, r.err))
            started = [op["instance_name"] for op in self.fake.ops()[first - 1:]]
            self.assertEqual(started, names, argv)

    def test_selection_errors(self):
        cases = [
            (("--all", "web1"), "Cluster filter mode takes no arguments"),
            (("--node",), "No node names passed"),
            (("--node-tags",), "No node tags passed"),
            (("--tags",), "No instance tags passed"),
            ((), "No instance names passed"),
            (("--tags", "nosuchtag"), "Selection filter does not match any instances"),
        ]
        for argv, message in cases:
            r = self.inst("startup", *argv)
            self.assertEqual(r.code, 1)
            self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                    f"{message} (error type: wrong_input)\n", argv)
        r = self.inst("startup", "web1", "nosuch")
        self.assertIn("Instance name 'nosuch' not found", r.err)
        self.assertEqual(self.fake.ops(), [])

    def test_empty_cluster(self):
        self.fake.items["instance"] = []
        r = self.inst("stop", "--all")
        self.assertEqual((r.code, r.out), (0, "Cluster is empty, no instances to shutdown\n"))

    def test_failed_job_means_exit_1(self):
        def refuse_web2(op: dict[str, Any]) -> Any:
            if op["instance_name"].startswith("web2"):
                raise errors.OpPrereqError("Instance web2.example.com is marked to be down",
                                           errors.ECODE_STATE)
        self.fake.results["OP_INSTANCE_STARTUP"] = refuse_web2
        r = self.inst("startup", "--tags", "web", "--force-multiple")
        self.assertEqual(r.code, 1)
        self.assertEqual(r.err, "Job 2 for web2.example.com has failed: Failure: "
                                "prerequisites not met for this operation: Instance "
                                "web2.example.com is marked to be down (error type: "
                                "wrong_state)\n")

    def test_submit_prints_job_and_name(self):
        r = self.inst("stop", "--submit", "--force-multiple", "--primary", "node1")
        self.assertEqual((r.code, r.err), (0, ""))
        self.assertEqual(r.out, "1: db1.example.com\n2: web1.example.com\n")

    def test_reinstall_one(self):
        self.answer = False
        r = self.inst("reinstall", "web2")
        self.assertEqual(r.code, 1)
        self.assertEqual(self.questions, [
            "This will reinstall the instance 'web2.example.com' (and keep the same OS) "
            "which removes all data. Continue?"])
        r = self.inst("reinstall", "-f", "-o", "debian+bookworm", "-O", "a=1",
                      "--os-parameters-secret", "s=2", "--force-variant", "web2")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_REINSTALL",
                                     "instance_name": "web2.example.com",
                                     "force_variant": True, "os_type": "debian+bookworm",
                                     "osparams": {"a": "1"}, "osparams_secret": {"s": "2"}})

    def test_reinstall_several(self):
        self.answer = False
        r = self.inst("reinstall", "-f", "-o", "x", "--tags", "web")
        self.assertEqual(r.code, 1)
        self.assertEqual(self.questions, [
            "The reinstall will operate on 2 instances.\nNote: this will remove *all* data "
            "for the below instances! It will change the OS to 'x'.\nDo you want to "
            "continue?\nAffected instances:\n  web1.example.com\n  web2.example.com"])
        r = self.inst("reinstall", "--force-multiple", "--tags", "web")
        self.assertEqual(r.code, 0)
        self.assertEqual([op["instance_name"] for op in self.fake.ops()],
                         ["web1.example.com", "web2.example.com"])


class SelectOsTest(GntInstanceTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake.results["OP_OS_DIAGNOSE"] = lambda op: [["busybox", []],
                                                          ["debian", ["bookworm", "trixie"]]]
        self.offered: list[Any] = []

    def pick(self, key: str) -> None:
        def choose(question: str, choices: Any) -> Any:
            self.offered.append((question, [k for k, _, _ in choices]))
            return dict((k, v) for k, v, _ in choices)[key]
        self.patch(jobs, "ask_choice", choose)

    def test_select_os(self):
        self.pick("2")
        r = self.inst("reinstall", "-f", "--select-os", "web2")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out.splitlines()[:4], ["Available OS templates:", "  0: busybox",
                                                  "  1: debian+bookworm",
                                                  "  2: debian+trixie"])
        self.assertEqual(self.offered, [("Enter OS template number (or x to abort):",
                                         ["0", "1", "2", "x"])])
        self.assertEqual(self.fake.ops()[0]["OP_ID"], "OP_OS_DIAGNOSE")
        self.assertEqual(self.op()["os_type"], "debian+trixie")

    def test_abort(self):
        self.pick("x")
        r = self.inst("reinstall", "-f", "--select-os", "web2")
        self.assertEqual((r.code, r.err), (1, "User aborted reinstall, exiting\n"))
        self.assertEqual([op["OP_ID"] for op in self.fake.ops()], ["OP_OS_DIAGNOSE"])

    def test_no_os(self):
        self.fake.results["OP_OS_DIAGNOSE"] = lambda op: []
        r = self.inst("reinstall", "-f", "--select-os", "web2")
        self.assertEqual((r.code, r.out.splitlines()[-1]), (1, "Can't get the OS list"))


# --- modify ------------------------------------------------------------------------

class ModifyTest(GntInstanceTestCase):
    def test_parameters_and_report(self):
        self.fake.results["OP_INSTANCE_SET_PARAMS"] = lambda op: [["be/maxmem", 1024],
                                                                  ["hv/acpi", False]]
        r = self.inst("modify", "-B", "maxmem=1G,vcpus=default", "-H", "acpi=false",
                      "-O", "a=b", "--os-parameters-private", "p=q", "-o", "deb+x",
                      "--force-variant", "-m", "512M", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {
            "OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "web1", "nics": [],
            "disks": [], "hvparams": {"acpi": False},
            "beparams": {"maxmem": 1024, "vcpus": "default"}, "osparams": {"a": "b"},
            "osparams_private": {"p": "q"}, "os_name": "deb+x", "runtime_mem": 512,
            "force": False, "force_variant": True, "wait_for_sync": True,
            "conflicts_check": True, "ignore_ipolicy": False, "hotplug": False,
            "hotplug_if_possible": False})
        self.assertEqual(r.out.splitlines(), [
            "Modified instance web1",
            " - be/maxmem -> 1024",
            " - hv/acpi -> False",
            "Please don't forget that most parameters take effect only at the next "
            "(re)start of the instance initiated by ganeti; restarting from within the "
            "instance will not be enough.",
            "Note that changing hypervisor parameters without performing a restart might "
            "lead to a crash while performing a live migration. This will be addressed in "
            "future Ganeti versions."])

    def test_disk_and_nic_changes(self):
        r = self.inst("modify", "--disk", "add:size=2G,mode=ro", "--disk", "1:remove",
                      "--disk", "0:mode=ro", "--disk", "2:add,size=1G",
                      "--disk", "data:modify,name=new", "--disk", "-1:remove",
                      "--net", "add:ip=pool,network=n1",
                      "--net", "remove", "--net", "0:mac=generate", "web1")
        self.assertEqual(r.code, 0, r.err)
        op = self.op()
        self.assertEqual(op["disks"], [["add", -1, {"size": 2048, "mode": "ro"}],
                                       ["remove", "1", {}], ["modify", "0", {"mode": "ro"}],
                                       ["add", "2", {"size": 1024}],
                                       ["modify", "data", {"name": "new"}],
                                       ["remove", "-1", {}]])
        self.assertEqual(op["nics"], [["add", -1, {"ip": "pool", "network": "n1"}],
                                      ["remove", -1, {}], ["modify", "0",
                                                           {"mac": "generate"}]])

    def test_change_errors(self):
        cases = [
            (["--disk", "add:mode=rw"], "Missing required parameter 'size'"),
            (["--disk", "0:remove,size=1G"], "Not accepting parameters on removal/detach"),
            (["--net", "0:add,remove"], "Cannot do more than one of the following "
                                        "operations at the same time: add, attach, remove, "
                                        "detach, modify"),
        ]
        for argv, message in cases:
            r = self.inst("modify", *argv, "web1")
            self.assertEqual(r.err, "Failure: prerequisites not met for this operation: "
                                    f"{message} (error type: wrong_input)\n", argv)
        self.assertEqual(self.fake.ops(), [])

    def test_nothing_given(self):
        r = self.inst("modify", "-f", "web1")
        self.assertEqual((r.code, r.out, r.err),
                         (1, "", "Please give at least one of the parameters.\n"))

    def test_offline_online_conversion_and_submit(self):
        r = self.inst("modify", "--offline", "--submit", "web2")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 1\n"))
        self.assertIs(self.op()["offline"], True)
        self.inst("modify", "--online", "--new-primary", "node1", "web2")
        self.assertIs(self.op()["offline"], False)
        self.assertEqual(self.op()["pnode"], "node1")
        self.inst("modify", "-t", "file", "--file-driver", "loop", "--file-storage-dir",
                  "x", "web2")
        self.assertEqual([self.op()[k] for k in ("disk_template", "file_driver",
                                                  "file_storage_dir")], ["file", "loop", "x"])
        self.inst("modify", "-t", "drbd", "-n", "node2", "--no-wait-for-sync", "web2")
        self.assertEqual((self.op()["remote_node"], self.op()["wait_for_sync"]),
                         ("node2", False))
        r = self.inst("modify", "-t", "plain", "--file-driver", "loop", "web2")
        self.assertEqual((r.code, r.err), (1, "Specifying file-based configuration "
                                              "arguments requires converting to a file-based "
                                              "disk template\n"))

    def test_hotplug_is_sent_and_nic_modify_asks(self):
        self.answer = False
        r = self.inst("modify", "--hotplug", "--net", "0:ip=1.2.3.4", "web1")
        self.assertEqual(r.code, 1)
        self.assertIn("You are about to hot-modify a NIC.", self.questions[0])
        self.refuse("OP_INSTANCE_SET_PARAMS", errors.OpPrereqError(
            "Hotplug is not supported", errors.ECODE_INVAL))
        r = self.inst("modify", "--hotplug", "-f", "--net", "0:ip=1.2.3.4", "web1")
        self.assertTrue(self.op()["hotplug"])
        self.assertIn("Hotplug is not supported", r.err)


# --- list, list-fields -----------------------------------------------------------------

class ListTest(GntInstanceTestCase):
    def test_default_fields(self):
        r = self.inst("list")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out.splitlines(), [
            "Instance         Hypervisor OS              Primary_node      Status     Memory",
            "web1.example.com fake       busybox         node1.example.com running      512M",
            "web2.example.com fake       busybox         node2.example.com ADMIN_down      -",
            "db1.example.com  kvm        debian+bookworm node1.example.com running      2.0G",
        ])
        self.assertEqual(self.fake.calls, [("Query", ("instance", gnt_instance.LIST_DEFAULT_FIELDS,
                                                      None))])

    def test_fields_separator_units_and_lists(self):
        r = self.inst("list", "--no-headers", "--separator", "|", "-o",
                      "name,tags,disk.sizes,snodes", "web*")
        self.assertEqual(r.out, "web1.example.com|web,prod|1024,512|\n"
                                "web2.example.com|web||node1.example.com\n")
        r = self.inst("list", "--units", "g", "-o", "+tags", "-v", "--no-headers", "db1")
        self.assertEqual(r.out.split(), ["db1.example.com", "kvm", "debian+bookworm",
                                         "node1.example.com", "running", "2.0"])
        self.assertEqual(self.fake.calls[-1][1][2], ["|", ["==", "name", "db1"]])

    def test_filter_and_unknown_field(self):
        r = self.inst("list", "-o", "name", "--no-headers", 'status == "running"')
        self.assertEqual(r.out, "web1.example.com\ndb1.example.com\n")
        r = self.inst("list", "-F", "-o", "name", "--no-headers", "oper_state")
        self.assertEqual(r.out, "web1.example.com\ndb1.example.com\n")
        r = self.inst("list", "-o", "name,colour", "db1")
        self.assertEqual(r.code, table.EXIT_UNKNOWN_FIELD)
        self.assertEqual(r.err, "Warning: Queried for unknown fields colour\n")

    def test_options_from_the_environment(self):
        r = self.inst("list", "db1", environ={"GNT_INSTANCE_LIST": "--no-headers -o name"})
        self.assertEqual(r.out, "db1.example.com\n")

    def test_list_fields(self):
        r = self.inst("list-fields", "name", "oper_ram")
        self.assertEqual(r.out.splitlines(), [
            "Name     Type         Title    Description",
            "name     Text         Instance Instance name",
            "oper_ram Storage size Memory   Actual memory usage as seen by hypervisor"])


# --- info, console -------------------------------------------------------------------------

QUERY_DATA = {
    "name": "web1.example.com", "uuid": "u-1", "serial_no": 3, "ctime": None,
    "mtime": None, "config_state": "up", "run_state": "up",
    "pnode": "node1.example.com", "pnode_group_name": "default",
    "pnode_group_uuid": "g-1", "snodes": ["node2.example.com"],
    "snodes_group_names": ["default"], "snodes_group_uuids": ["g-1"], "os": "busybox",
    "os_instance": {"dhcp": "yes"}, "os_actual": {"dhcp": "yes", "root": "/dev/vda"},
    "network_port": None, "hypervisor": "fake", "hv_instance": {},
    "hv_actual": {"migration_mode": "live"}, "be_instance": {"maxmem": 512},
    "be_actual": {"maxmem": 512, "minmem": 128},
    "nics": [["eth0", "n-1", None, "aa:00:00:11:22:33", "bridged", "br0", "", None,
              None]],
    "disk_template": "plain",
    "disks": [{"iv_name": "disk/0", "dev_type": "plain", "logical_id": ["xenvg", "d0"],
               "drbd_info": None, "pstatus": ["/dev/xenvg/d0", 253, 0, None, None, False, 1],
               "sstatus": None, "children": [], "mode": "rw", "size": 1024,
               "spindles": None, "name": None, "uuid": "d-1"}],
}


class InfoConsoleTest(GntInstanceTestCase):
    def test_info_layout(self):
        self.fake.results["OP_INSTANCE_QUERY_DATA"] = lambda op: {
            "web1.example.com": QUERY_DATA}
        r = self.inst("info", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_QUERY_DATA",
                                     "instances": ["web1"], "static": False,
                                     "use_locking": True})
        self.assertEqual(r.out.splitlines(), [
            "- Instance name: web1.example.com",
            "  UUID: u-1",
            "  Serial number: 3",
            "  Creation time: N/A",
            "  Modification time: N/A",
            "  State: configured to be up, actual state is up",
            "  Nodes: ",
            "    - primary: node1.example.com",
            "      group: default (UUID g-1)",
            "    - secondaries: node2.example.com (group default, group UUID g-1)",
            "  Operating system: busybox",
            "  Operating system parameters: ",
            "    dhcp: yes",
            "    root: default (/dev/vda)",
            "  Allocated network port: None",
            "  Hypervisor: fake",
            "  Hypervisor parameters: ",
            "    migration_mode: default (live)",
            "  Back-end parameters: ",
            "    maxmem: 512",
            "    memory: default (512)",
            "    minmem: default (128)",
            "  NICs: ",
            "    - nic/0: ",
            "      MAC: aa:00:00:11:22:33",
            "      IP: None",
            "      mode: bridged",
            "      link: br0",
            "      vlan: ",
            "      network: None",
            "      UUID: n-1",
            "      name: eth0",
            "  Disk template: plain",
            "  Disks: ",
            "    - disk/0: plain, size 1.0G",
            "      access mode: rw",
            "      logical_id: xenvg/d0",
            "      on primary: /dev/xenvg/d0 (253:0)",
            "      name: None",
            "      UUID: d-1",
        ])

    def test_info_static_all_and_errors(self):
        self.fake.results["OP_INSTANCE_QUERY_DATA"] = lambda op: {}
        r = self.inst("info", "-s", "--all")
        self.assertEqual((r.code, r.out), (1, "No instances.\n"))
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_QUERY_DATA", "instances": [],
                                     "static": True, "use_locking": False})
        r = self.inst("info")
        self.assertEqual((r.code, r.err), (1, "No instance selected. Please pass in --all "
                                              "if you want to query all instances.\nNote "
                                              "that this can take a long time on a big "
                                              "cluster.\n"))
        r = self.inst("info", "--all", "web1")
        self.assertEqual((r.code, r.err), (1, "Cannot use --all if you specify instance "
                                              "names.\n"))

    def test_drbd_disk_with_children(self):
        disk = {"iv_name": "disk/0", "dev_type": "drbd", "logical_id": ["a"],
                "drbd_info": {"primary_node": "n1", "primary_minor": 0,
                              "secondary_node": "n2", "secondary_minor": 1, "port": 11000},
                "pstatus": ["/dev/drbd0", 147, 0, 45.5, 30, True, 4],
                "sstatus": ["/dev/drbd1", 147, 1, None, None, False, 1],
                "children": [{"iv_name": None, "dev_type": "plain",
                              "logical_id": ["vg", "d0_data"], "pstatus": None,
                              "sstatus": None, "children": [], "mode": "rw", "size": 100,
                              "spindles": 1, "name": None, "uuid": "c-1"}],
                "mode": "rw", "size": 100, "spindles": 2, "name": "d", "uuid": "d-1"}
        lines = table.format_generic_info(gnt_instance_info.block_device_info(0, True, disk))
        self.assertEqual(lines.splitlines(), [
            "disk/0: drbd, size 100M",
            "spindles: 2",
            "access mode: rw",
            "nodeA: n1, minor=0",
            "nodeB: n2, minor=1",
            "port: 11000",
            "on primary: /dev/drbd0 (147:0) *RECOVERING* 45.50%, ETA 30s, status "
            "*DEGRADED* *MISSING DISK*",
            "on secondary: /dev/drbd1 (147:1) in sync, status ok",
            "name: d",
            "UUID: d-1",
            "child devices: ",
            "  - child 0: plain, size 100M",
            "    logical_id: vg/d0_data",
            "    name: None",
            "    UUID: c-1"])

    def test_console_message(self):
        r = self.inst("console", "web1")
        self.assertEqual((r.code, r.out), (0, "Console not available for fake hypervisor\n"))
        self.assertEqual(self.fake.methods(), ["QueryConfigValues", "Query"])

    def test_console_not_running(self):
        r = self.inst("console", "web2")
        self.assertEqual((r.code, r.err), (1, "Failure: command execution error: Instance "
                                              "web2 is not running, can't get console\n"))

    def test_console_ssh_command(self):
        r = self.inst("console", "--show-cmd", "db1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(r.out, "ssh -oEscapeChar=none -oHashKnownHosts=no "
                                "-oGlobalKnownHostsFile=/var/lib/ganeti/known_hosts "
                                "-oUserKnownHostsFile=/dev/null -oCheckHostIp=no "
                                "-oConnectTimeout=10 -oHostKeyAlias=cluster.example.com "
                                "-oPort=22 -oBatchMode=yes -oStrictHostKeyChecking=yes -t -t "
                                "root@node1 'socat STDIO,raw "
                                "UNIX-CONNECT:/run/db1.serial'\n")

    def test_console_kinds(self):
        ctx_out = io.StringIO()
        from ganeti.cli.framework import Context
        ctx = Context("gnt-instance", ctx_out, io.StringIO(), {}, lambda p: None)
        gnt_instance_info.show_console(ctx, {"kind": "vnc", "instance": "i", "host": "h",
                                             "port": 5901, "display": 1}, False, "cl")
        gnt_instance_info.show_console(ctx, {"kind": "spice", "instance": "i", "host": "h",
                                             "port": 6000}, False, "cl")
        self.assertEqual(ctx_out.getvalue().splitlines(), [
            "Instance i has VNC listening on h:5901 (display 1), URL <vnc://h:5901/>",
            "Instance i has SPICE listening on h:6000"])
        ran: list[list[str]] = []
        ssh = {"kind": "ssh", "instance": "i", "host": "h", "user": "root", "command": "x"}
        gnt_instance_info.show_console(ctx, ssh, False, "cl", run=lambda a: ran.append(a) or 0)
        self.assertEqual(ran[0][-2:], ["root@h", "x"])
        with self.assertRaises(errors.OpExecError):
            gnt_instance_info.show_console(ctx, ssh, False, "cl", run=lambda a: 255)
        with self.assertRaises(errors.GenericError):
            gnt_instance_info.show_console(ctx, {"kind": "telepathy"}, False, "cl")


# --- disks, tags -----------------------------------------------------------------------

class DisksTagsTest(GntInstanceTestCase):
    def test_activate_disks(self):
        self.fake.results["OP_INSTANCE_ACTIVATE_DISKS"] = lambda op: [
            ["node1.example.com", "disk/0", "/dev/xenvg/d0"]]
        r = self.inst("activate-disks", "--ignore-size", "--wait-for-sync", "web1")
        self.assertEqual((r.code, r.out), (0, "node1.example.com:disk/0:/dev/xenvg/d0\n"))
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_ACTIVATE_DISKS",
                                     "instance_name": "web1", "ignore_size": True,
                                     "wait_for_sync": True})
        r = self.inst("activate-disks", "--submit", "web1")
        self.assertEqual((r.code, r.out, r.err), (0, "", "JobID: 2\n"))

    def test_deactivate_disks(self):
        r = self.inst("deactivate-disks", "-f", "web1")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_DEACTIVATE_DISKS",
                                     "instance_name": "web1", "force": True})

    def test_grow_disk(self):
        r = self.inst("grow-disk", "--absolute", "--no-wait-for-sync", "--ignore-ipolicy",
                      "web1", "0", "1.5G")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_GROW_DISK",
                                     "instance_name": "web1", "disk": 0, "amount": 1536,
                                     "wait_for_sync": False, "absolute": True,
                                     "ignore_ipolicy": True})
        r = self.inst("grow-disk", "web1", "1", "1T")
        self.assertEqual((self.op()["amount"], self.op()["absolute"]), (1024 * 1024, False))
        r = self.inst("grow-disk", "web1", "one", "1G")
        self.assertIn("Invalid disk index: invalid literal for int()", r.err)
        r = self.inst("grow-disk", "web1", "0", "1X")
        self.assertIn("Can't parse the given amount '1X' (error type: wrong_input)", r.err)
        self.assertEqual(len(self.fake.ops()), 2)

    def test_recreate_disks(self):
        r = self.inst("recreate-disks", "--disk", "0:size=2G", "--disk", "2",
                      "-n", "node1:node2", "web1")
        self.assertEqual(r.code, 0, r.err)
        self.assertEqual(self.op(), {"OP_ID": "OP_INSTANCE_RECREATE_DISKS",
                                     "instance_name": "web1",
                                     "disks": [[0, {"size": 2048}], [2, {}]],
                                     "nodes": ["node1", "node2"]})
        r = self.inst("recreate-disks", "-n", "node1", "-I", "hail", "web1")
        self.assertIn("At most one of either --nodes or --iallocator can be passed", r.err)
        r = self.inst("recreate-disks", "web1")
        self.assertEqual((self.op()["disks"], self.op()["nodes"]), ([], []))

    def test_tags(self):
        self.fake.tags[(c.TAG_INSTANCE, "web1")] = ["b", "a"]
        r = self.inst("list-tags", "web1")
        self.assertEqual(r.out, "a\nb\n")
        r = self.inst("add-tags", "web1", "x", "y")
        self.assertEqual(r.code, 0)
        self.assertEqual(self.op(), {"OP_ID": "OP_TAGS_SET", "kind": "instance",
                                     "name": "web1", "tags": ["x", "y"]})
        r = self.inst("remove-tags", "web1", "x")
        self.assertEqual(self.op()["OP_ID"], "OP_TAGS_DEL")
        r = self.inst("add-tags", "web1")
        self.assertIn("No tags to be added", r.err)


# --- option parsing --------------------------------------------------------------------

class OptionParsingTest(SynchronousTestCase):
    def test_keyval_rules(self):
        split = gnt_instance_opts.split_keyval
        self.assertEqual(split("-B", "a=1,b,no_c,-d,e=x\\,y,f=g=h"),
                         {"a": "1", "b": True, "c": False, "d": None, "e": "x,y",
                          "f": "g=h"})
        self.assertEqual(split("-B", ""), {})
        with self.assertRaises(errors.ParameterError):
            split("-B", "a", parse_prefixes=False)

    def test_ident_keyval(self):
        ident = gnt_instance_opts.split_ident_keyval
        self.assertEqual(ident("--disk", "0:size=1G"), ("0", {"size": "1G"}))
        self.assertEqual(ident("--disk", "add"), ("add", {}))
        self.assertEqual(ident("--disk", "-1:add,size=1"), ("-1", {"add": True, "size": "1"}))
        self.assertEqual(ident("-H", "no_kvm"), ("kvm", False))
        self.assertEqual(ident("-H", "-kvm"), ("kvm", None))
        with self.assertRaises(errors.ParameterError):
            ident("-H", "no_kvm:a=b")

    def test_unescape(self):
        self.assertEqual(gnt_instance_opts.unescape_and_split("a\\,b,c\\\\,d"),
                         ["a,b", "c\\", "d"])

    def test_units(self):
        unit = gnt_instance_opts.unit_type
        self.assertEqual([unit(v) for v in ("512", "512M", "1G", "1.5g", "1T", "1023")],
                         [512, 512, 1024, 1536, 1048576, 1024])
