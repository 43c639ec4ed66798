"""Reservations (forthcoming instances) seen through Debian's Ganeti 3.0 clients, on
our two-node virtual cluster: Debian's ``gnt-instance add --forthcoming`` / list /
info / startup / ``add --commit``, and Debian's RAPI client creating a reservation
with ``forthcoming=True``, reading it back, renaming a nameless one by its UUID and
committing it.  The expected outputs are those of a real Ganeti 3.0.2 cluster
(recorded in docs/compat.md, "Forthcoming instances"): a reservation is shown as a
stopped instance (``ADMIN_down``, not running, admin state ``down``), only the query
field ``forthcoming`` tells it apart, and every operation but rename, remove,
modify and commit refuses it with "forthcoming instances not supported for this
operation".

Instances are diskless and not installed (the virtual cluster has no file storage
paths), on the fake hypervisor.  Tests run in name order on one cluster.
"""

from __future__ import annotations

import os
import re
import sys

from tests.integration.clustercase import needs_debian_tool, needs_rapi_client
from tests.integration.helpers import ROOT, node_env, run
from tests.integration.test_rapi_compat import RapiClientCase, call

DEBIAN = "/usr/share/ganeti/3.0"
NOT_SUPPORTED = "forthcoming instances not supported for this operation"
CHECKS = ("--no-name-check", "--no-ip-check")


class ForthcomingClientsTest(RapiClientCase):
    PREFIX = "ganeti-forth-clients-"
    NODES = 2
    REQUIRES = (needs_rapi_client, needs_debian_tool("gnt-instance"))

    # --- helpers --------------------------------------------------------------------

    def gnt(self, *argv, debian=True):
        env = node_env(self.cluster.dir, self.cluster.master)
        cmd = [os.path.join(DEBIAN, "gnt-instance")] if debian else [
            sys.executable, os.path.join(ROOT, "bin", "gnt-instance")]
        return run([*cmd, *argv], env=env, check=False, timeout=120)

    def ok(self, *argv, debian=True):
        r = self.gnt(*argv, debian=debian)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def row(self, name, fields, debian=True):
        out = self.ok("list", "--no-headers", "-o", fields, name, debian=debian)
        return out.split()

    def finished(self, job_id):
        """A job's final status and its opcode result."""
        status, job = self.rapi(call("wait_job", job_id, 120.0), call("GetJobStatus", job_id))
        return status, job["opresult"][0]

    # --- Debian's gnt-instance ------------------------------------------------------------

    def test_1_cli_reservation_shown_as_ganeti_shows_it(self):
        node = self.cluster.nodes[0]
        out = self.ok("add", "--forthcoming", "-t", "diskless", "-o", "busybox", "-n", node,
                      *CHECKS, "res1.vcluster.test")
        lines = [re.sub(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4} ", "", line)
                 for line in out.splitlines()]  # without the date
        self.assertEqual(lines, ["Instance is forthcoming, not creating disks",
                                 "adding instance res1.vcluster.test to cluster config",
                                 "adding disks to cluster config",
                                 "Instance is forthcoming; not creating the actual instance"])
        for debian in (True, False):  # Debian's tool and ours show the same
            self.assertEqual(
                self.row("res1.vcluster.test",
                         "name,forthcoming,status,pnode,oper_state,admin_state", debian),
                ["res1.vcluster.test", "Y", "ADMIN_down", node, "N", "down"])
            # the default fields: a stopped instance, memory "-"
            self.assertEqual(
                self.ok("list", "--no-headers", "res1.vcluster.test", debian=debian).split(),
                ["res1.vcluster.test", "fake", "busybox", node, "ADMIN_down", "-"])
            info = self.ok("info", "res1.vcluster.test", debian=debian)
            self.assertIn("State: configured to be down, actual state is down", info)
            self.assertIn(f"- primary: {node}", info)
            self.assertNotIn("orthcoming", info)  # Ganeti's info does not say it
            fields = self.ok("list-fields", "--no-headers", "forthcoming",
                             debian=debian).strip().split(None, 3)
            self.assertEqual(fields, ["forthcoming", "Boolean", "Forthcoming",
                                      "whether the Instance is forthcoming"])

    def test_2_cli_operations_refused_as_ganeti(self):
        for argv in (["startup"], ["reboot"], ["shutdown"], ["activate-disks"]):
            r = self.gnt(*argv, "res1.vcluster.test")
            self.assertEqual(r.returncode, 1, argv)
            self.assertIn("Failure: prerequisites not met for this operation:\n"
                          + NOT_SUPPORTED, r.stdout + r.stderr, argv)
        self.assertEqual(self.row("res1.vcluster.test", "forthcoming,status"),
                         ["Y", "ADMIN_down"])

    def test_3_cli_commit(self):
        # (Debian's client needs -t: without it, "No disk information specified")
        # ours: the reservation holds the OS (Ganeti 3.0.2 wants -o again)
        out = self.ok("add", "--commit", "-t", "diskless", "--no-install", *CHECKS,
                      "res1.vcluster.test")
        self.assertIn(f" - INFO: Nodes of instance res1.vcluster.test: "
                      f"['{self.cluster.nodes[0]}']", out)
        self.assertIn("adding instance res1.vcluster.test to cluster config", out)
        self.ok("startup", "res1.vcluster.test")
        self.assertEqual(self.row("res1.vcluster.test", "forthcoming,status,oper_state"),
                         ["N", "running", "Y"])
        # committing a real instance: Ganeti's wrong_state refusal
        r = self.gnt("add", "--commit", "-t", "diskless", "-o", "busybox", *CHECKS,
                     "res1.vcluster.test")
        self.assertEqual(r.returncode, 1)
        self.assertIn("not forthcoming but --commit was passed.", r.stdout + r.stderr)

    def test_4_our_cli_reserves_without_a_name_and_commits_by_name(self):
        out = self.ok("add", "--forthcoming", "-t", "diskless", "-n", self.cluster.nodes[1],
                      debian=False)
        self.assertIn("Forthcoming instance reserved with UUID ", out)
        uuid = out.split("with UUID ")[1].split()[0]
        self.assertIn(f" on {self.cluster.nodes[1]}", out)
        self.assertEqual(self.row(uuid, "name,forthcoming"), [uuid, "Y"])
        self.ok("rename", "-f", *CHECKS, uuid, "res4.vcluster.test", debian=False)
        self.ok("add", "--commit", "-o", "busybox", "--no-install", *CHECKS,
                "res4.vcluster.test", debian=False)
        self.assertEqual(self.row("res4.vcluster.test", "forthcoming,status,pnode,uuid"),
                         ["N", "ADMIN_down", self.cluster.nodes[1], uuid])

    # --- Debian's RAPI client ---------------------------------------------------------

    def test_5_rapi_reservation_read_back(self):
        node = self.cluster.nodes[1]
        (job,) = self.rapi(call("CreateInstance", "create", "res5.vcluster.test", "diskless",
                                [], [{}], os="busybox", pnode=node, forthcoming=True,
                                name_check=False, ip_check=False))
        status, result = self.finished(job)
        self.assertEqual(status, "success", result)
        self.assertEqual(result["nodes"], [node])  # ours: {"uuid", "nodes"}
        inst, bulk = self.rapi(call("GetInstance", "res5.vcluster.test"),
                               call("GetInstances", bulk=True))
        self.assertEqual(inst["uuid"], result["uuid"])
        # as Ganeti 3.0.2 shows one: a stopped instance, no "forthcoming" key
        self.assertEqual({k: inst[k] for k in ("status", "admin_state", "oper_state",
                                               "oper_ram", "pnode", "snodes")},
                         {"status": "ADMIN_down", "admin_state": "down",
                          "oper_state": False, "oper_ram": None, "pnode": node,
                          "snodes": []})
        self.assertNotIn("forthcoming", inst)
        (listed,) = [i for i in bulk if i["name"] == "res5.vcluster.test"]
        self.assertEqual(listed["status"], "ADMIN_down")
        self.assertNotIn("forthcoming", listed)
        (job,) = self.rapi(call("GetInstanceInfo", "res5.vcluster.test"))
        status, data = self.finished(job)
        self.assertEqual(status, "success")
        info = data["res5.vcluster.test"]
        self.assertEqual((info["config_state"], info["run_state"], info["pnode"]),
                         ("down", "down", node))
        (rows,) = self.rapi(call("Query", "instance", ["name", "forthcoming"],
                                 ["=", "name", "res5.vcluster.test"]))
        self.assertEqual(rows["data"], [[[0, "res5.vcluster.test"], [0, True]]])
        self.assertEqual(rows["fields"][1], {"doc": "whether the Instance is forthcoming",
                                             "kind": "bool", "name": "forthcoming",
                                             "title": "Forthcoming"})
        (job,) = self.rapi(call("ModifyInstance", "res5.vcluster.test",
                                beparams={"maxmem": 256}))
        self.assertEqual(self.finished(job)[0], "success")  # ours: seed 004's modify
        (job,) = self.rapi(call("StartupInstance", "res5.vcluster.test"))
        status, result = self.finished(job)
        self.assertEqual((status, result[0], result[1][0]),
                         ("error", "OpPrereqError", NOT_SUPPORTED))

    def test_6_rapi_nameless_reservation_renamed_by_uuid_and_committed(self):
        (job,) = self.rapi(call("CreateInstance", "create", None, "diskless", [], [{}],
                                forthcoming=True, hypervisor="fake"))
        status, result = self.finished(job)
        self.assertEqual(status, "success", result)
        uuid = result["uuid"]
        (inst,) = self.rapi(call("GetInstance", uuid))  # named by its UUID
        self.assertEqual((inst["name"], inst["status"]), (uuid, "ADMIN_down"))
        (job,) = self.rapi(call("RenameInstance", uuid, "res6.vcluster.test",
                                ip_check=False, name_check=False))
        self.assertEqual(self.finished(job), ("success", "res6.vcluster.test"))
        (inst,) = self.rapi(call("GetInstance", uuid))  # by UUID, as Ganeti 3.0.2 answers
        self.assertEqual(inst["name"], "res6.vcluster.test")
        # both flags: refused by the master
        (job,) = self.rapi(call("CreateInstance", "create", "res6.vcluster.test", "diskless",
                                [], [{}], os="busybox", forthcoming=True, commit=True))
        status, result = self.finished(job)
        self.assertEqual((status, result[0], result[1][1]),
                         ("error", "OpPrereqError", "wrong_input"))
        # a commit without an OS (the reservation has none): Ganeti's error, and the
        # reservation stays
        (job,) = self.rapi(call("CreateInstance", "create", "res6.vcluster.test", "diskless",
                                [], [{}], commit=True, no_install=True,
                                name_check=False, ip_check=False))
        status, result = self.finished(job)
        self.assertEqual((status, result), ("error", [
            "OpPrereqError", ["No guest OS or OS image specified", "wrong_input"]]))
        (rows,) = self.rapi(call("Query", "instance", ["forthcoming"],
                                 ["=", "name", "res6.vcluster.test"]))
        self.assertEqual(rows["data"], [[[0, True]]])
        # Ganeti's commit: OP_INSTANCE_CREATE with commit=True
        (job,) = self.rapi(call("CreateInstance", "create", "res6.vcluster.test", "diskless",
                                [], [{}], os="busybox", commit=True, no_install=True,
                                name_check=False, ip_check=False))
        status, result = self.finished(job)
        self.assertEqual((status, result), ("success", result), result)
        self.assertEqual(len(result), 1)
        self.assertIn(result[0], self.cluster.nodes)
        (inst,) = self.rapi(call("GetInstance", "res6.vcluster.test"))
        self.assertEqual((inst["uuid"], inst["pnode"], inst["status"]),
                         (uuid, result[0], "ADMIN_down"))
        (rows,) = self.rapi(call("Query", "instance", ["forthcoming"],
                                 ["=", "name", "res6.vcluster.test"]))
        self.assertEqual(rows["data"], [[[0, False]]])
