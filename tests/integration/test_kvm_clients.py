"""Debian's real clients drive a real VM through our daemons on a namespaced cluster:
the RAPI client, run in the cluster's client namespace, reaches RAPI at the live
master IP (on the master node's br0) and creates, shuts down, starts and removes a
kvm instance (a ``sharedfile`` disk in the cluster's shared directory); Debian's
gnt-instance live-migrates it to another node and the RAPI client migrates it back,
the guest answering pings all along (two real migrations between two nodes'
libvirtds); Debian's gnt-instance reboots and stops it and shows its console
command.  Three or four TCG boots."""

from __future__ import annotations

import json
import os
import re
import subprocess

from tests.integration.clustercase import needs_debian_tool, needs_rapi_client
from tests.integration.helpers import VCLUSTER, run
from tests.integration.kvmcluster import MARKER, SLOWDOWN, KvmClusterCase
from tests.integration.test_rapi_compat import DRIVER, SYSTEM_PYTHON, call

DEBIAN = "/usr/share/ganeti/3.0"
TEMPLATES = "file,diskless,sharedfile"
#: Pings to the guest while it migrates (every 0.1 s): a reboot would miss ~40.
PINGS, PINGS_MISSED_AT_MOST = 40, 5


class RealClientsKvmTest(KvmClusterCase):
    """Tests run in name order on one cluster."""

    NODE = 3
    REQUIRES = (needs_rapi_client, needs_debian_tool("gnt-instance"),
                *KvmClusterCase.REQUIRES)

    @classmethod
    def setUpCluster(cls) -> None:
        super().setUpCluster()
        cls.driver = os.path.join(cls.tmp, "driver.py")
        with open(cls.driver, "w", encoding="utf-8") as f:
            f.write(DRIVER)
        cls.user, cls.password = cls.cluster.rapi_credentials()
        cls.name = cls.instance_name(cls, "rvm1")
        run([VCLUSTER, "exec", cls.dir, "--", "gnt-cluster", "modify",
             "--enabled-disk-templates", TEMPLATES, "--ipolicy-disk-templates", TEMPLATES,
             "-H", "kvm:migration_bandwidth=1000"], timeout=120)

    def rapi(self, *calls: list) -> list:
        """The calls by Debian's RAPI client from the client namespace, at the master IP."""
        opts = {"host": self.plan.master_ip, "port": 5080, "user": self.user,
                "password": self.password}
        request = json.dumps({"client": opts, "calls": list(calls)})
        proc = subprocess.run([VCLUSTER, "exec", self.dir, "--client", "--",
                               SYSTEM_PYTHON, "-I", self.driver], input=request,
                              capture_output=True, text=True, timeout=300, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        for value in out:
            self.assertIn("ok", value, value)
        return [v["ok"] for v in out]

    def job_ok(self, job_id: int) -> None:
        (status,) = self.rapi(call("wait_job", job_id, 240))
        self.assertEqual(status, "success")

    def debian(self, *argv: str) -> subprocess.CompletedProcess:
        proc = self.exec_in(os.path.join(DEBIAN, "gnt-instance"), *argv, check=False)
        self.assertEqual(proc.returncode, 0, f"{argv}: {proc.stdout}{proc.stderr}")
        return proc

    def test_1_master_ip_is_live_and_rapi_answers_there(self) -> None:
        out = subprocess.run(["ip", "-n", self.plan.node_ns(1), "-o", "-4", "address", "show",
                              "dev", "br0"], capture_output=True, text=True, check=True).stdout
        self.assertIn(f"{self.plan.master_ip}/", out)
        (info,) = self.rapi(call("GetInfo"))
        self.assertEqual(info["master"], self.node_name(1))
        self.assertIn("kvm", info["enabled_hypervisors"])

    def test_2_rapi_creates_a_kvm_instance_that_boots(self) -> None:
        log = self.follow(self.NODE, self.name)
        (job,) = self.rapi(call(
            "CreateInstance", "create", self.name, "sharedfile", [{"size": 1024}],
            [{"ip": self.plan.instance_ip(20)}], os="busybox", pnode=self.node_name(self.NODE),
            hypervisor="kvm", beparams={"maxmem": 128, "minmem": 128}, name_check=False,
            ip_check=False))
        self.job_ok(job)
        log.wait_for(rf"^{MARKER} {self.name}$")
        (inst,) = self.rapi(call("GetInstance", self.name))
        self.assertEqual(inst["status"], "running")
        self.assertEqual(inst["hvparams"]["kernel_path"][-7:], "vmlinux")

    def test_3_rapi_shutdown_and_startup(self) -> None:
        (job,) = self.rapi(call("ShutdownInstance", self.name))
        self.job_ok(job)
        self.assertNotIn(self.name, self.domains(self.NODE))
        log = self.follow(self.NODE, self.name)
        (job,) = self.rapi(call("StartupInstance", self.name))
        self.job_ok(job)
        log.wait_for(rf"^{MARKER} {self.name}$")

    def migrate_while_pinging(self, migrate, source: int, target: int) -> None:
        """Run ``migrate()`` while the client namespace pings the guest; the guest then
        runs on ``target`` only, the config says so, and it kept answering."""
        ip = self.plan.instance_ip(20)
        ping = subprocess.Popen(
            [VCLUSTER, "exec", self.dir, "--client", "--", "busybox", "ping", "-q", "-i",
             "0.1", "-c", str(PINGS), ip], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        try:
            migrate()
            out, _ = ping.communicate(timeout=60 * SLOWDOWN)
        finally:
            if ping.poll() is None:
                ping.kill()
                ping.wait()
        self.assertIn(self.name, self.domains(target))
        self.assertNotIn(self.name, self.domains(source))
        (inst,) = self.rapi(call("GetInstance", self.name))
        self.assertEqual((inst["pnode"], inst["status"]), (self.node_name(target), "running"))
        got = re.search(r"(\d+) packets transmitted, (\d+) (?:packets )?received", out)
        self.assertIsNotNone(got, out)
        sent, received = int(got.group(1)), int(got.group(2))
        self.assertGreaterEqual(received, sent - PINGS_MISSED_AT_MOST, out)
        job = self.virsh(target, "domjobinfo", self.name, "--completed")
        self.assertIn("Incoming migration", job)

    def test_3b_live_migration_there_by_debian_client_and_back_by_rapi(self) -> None:
        log = self.follow(self.NODE, self.name)
        log.wait_for(rf"^{MARKER} {self.name}$", timeout=30)  # the boot so far
        self.migrate_while_pinging(
            lambda: self.debian("migrate", "-f", "-n", self.node_name(2), self.name),
            self.NODE, 2)
        self.migrate_while_pinging(
            lambda: self.job_ok(self.rapi(call("MigrateInstance", self.name,
                                               target_node=self.node_name(self.NODE)))[0]),
            2, self.NODE)

    def test_4_debian_gnt_instance_reboot_console_stop(self) -> None:
        # booted (test 2/3); migrated back here, its console log on this node holds
        # only what the guest printed since it arrived
        log = self.follow(self.NODE, self.name)
        self.debian("reboot", "--type", "hard", self.name)
        log.wait_for(rf"^{MARKER} {self.name}$")
        out = self.debian("list", "--no-headers", "-o", "name,hypervisor,status,pnode",
                          self.name).stdout.split()
        self.assertEqual(out, [self.name, "kvm", "running", self.node_name(self.NODE)])
        shown = self.debian("console", "--show-cmd", self.name).stdout
        self.assertIn(self.node_name(self.NODE), shown)
        self.assertIn(f"{self.name}.serial", shown)
        self.debian("stop", self.name)
        self.assertNotIn(self.name, self.domains(self.NODE))

    def test_5_rapi_removes_it(self) -> None:
        (job,) = self.rapi(call("DeleteInstance", self.name))
        self.job_ok(job)
        self.assertEqual(self.qemu_pids(self.name), [])
        (names,) = self.rapi(call("GetInstances"))
        self.assertNotIn(self.name, names)

