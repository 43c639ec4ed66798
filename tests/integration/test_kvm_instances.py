"""Real guests (QEMU through each node's libvirtd) on a namespaced 3-node cluster: the
lifecycle of one kvm instance with the busybox OS, a file disk and a bridged NIC, end
to end through our gnt-instance, in name order on one cluster: it boots and prints its
marker on the serial console, answers a ping from its node, survives reboot, stop
(ACPI; destroy once the timeout passes for a guest that ignores ACPI), start,
grow-disk (the guest sees the new size), modify of memory and vcpus (applied at the
next boot), rename, reinstall, and remove leaves no QEMU process, tap, disk or
libvirt domain.  About eight TCG boots."""

from __future__ import annotations

import os
import re
import signal
import time

from ganeti.core import constants as c
from ganeti.core.paths import Paths
from ganeti.luxi.client import LuxiClient
from tests.integration.kvmcluster import MARKER, SLOWDOWN, KvmClusterCase


class KvmLifecycleTest(KvmClusterCase):

    NODE = 2
    INSTANCE_NO = 1

    @classmethod
    def setUpCluster(cls) -> None:
        super().setUpCluster()
        cls.name = cls.instance_name(cls, "vm1")
        cls.ip = cls.plan.instance_ip(cls.INSTANCE_NO)

    def master_paths(self) -> Paths:
        return Paths.for_node(self.node(1)["root"], self.node_name(1))

    def boot_marker(self, name: str | None = None) -> str:
        return rf"^{MARKER} {name or self.name}$"

    def disk_files(self) -> list[str]:
        root = os.path.join(self.node(self.NODE)["root"], "srv", "ganeti", "file-storage")
        found = []
        for base, _dirs, files in os.walk(root):
            found.extend(os.path.join(base, f) for f in files)
        return found

    def oper_state(self, name: str) -> str:
        """The instance's status field (running, ADMIN_down, ERROR_down, ...)."""
        return self.gnt("gnt-instance", "list", "--no-headers", "-o", "status",
                        name).stdout.strip()

    def test_1_create_boots_prints_marker_and_answers_ping(self) -> None:
        log = self.follow(self.NODE, self.name)
        start = time.monotonic()
        self.gnt("gnt-instance", "add", "-t", "file", "-o", "busybox", "-H", "kvm",
                 "--disk", "0:size=1G", "--net", f"0:ip={self.ip}", "--no-name-check",
                 "--no-ip-check", "-B", "maxmem=128M,minmem=128M,vcpus=1",
                 "-n", self.node_name(self.NODE), self.name)
        log.wait_for(self.boot_marker())
        print(f"\n  create + boot to the marker: {time.monotonic() - start:.1f}s")
        self.assertEqual(self.oper_state(self.name), "running")
        self.assertIn(self.name, self.domains(self.NODE))
        # from its node, and from another: one L2 network for all nodes' guests
        for k in (self.NODE, 3):
            ping = self.exec_in("busybox", "ping", "-c", "1", "-W", "10", self.ip,
                                node=self.node_name(k), check=False)
            self.assertEqual(ping.returncode, 0, ping.stdout + ping.stderr)
        # the node says what its guests run under (the domain type libvirt was given)
        accel = self.gnt("gnt-node", "list", "--no-headers", "-o", "hv_accel",
                         self.node_name(self.NODE)).stdout.strip()
        self.assertIn(accel, ("kvm", "qemu (TCG)"))
        info = self.gnt("gnt-node", "info", self.node_name(self.NODE)).stdout
        self.assertIn(f"  kvm guests run under: {accel}\n", info)
        domain_type = "kvm" if accel == "kvm" else "qemu"
        self.assertIn(f"<domain type='{domain_type}'", self.virsh(self.NODE, "dumpxml",
                                                                  self.name))

    def test_2_reboot(self) -> None:
        log = self.follow(self.NODE, self.name)
        log.wait_for(self.boot_marker(), timeout=30)  # the boot so far (already written)
        self.gnt("gnt-instance", "reboot", self.name)
        log.wait_for(self.boot_marker())
        self.assertEqual(self.oper_state(self.name), "running")

    def test_3_stop_acpi_then_destroy_after_timeout_then_start(self) -> None:
        start = time.monotonic()
        self.gnt("gnt-instance", "stop", self.name)
        print(f"\n  stop by ACPI: {time.monotonic() - start:.1f}s")
        self.assertEqual(self.oper_state(self.name), "ADMIN_down")
        self.assertNotIn(self.name, self.domains(self.NODE))
        self.assertEqual(self.qemu_pids(self.name), [])
        log = self.follow(self.NODE, self.name)
        self.gnt("gnt-instance", "start", self.name)
        log.wait_for(self.boot_marker())
        # a guest that ignores the power button: destroyed once the timeout passes
        sh = self.shell(self.NODE, self.name)
        sh.run("killall acpid")
        sh.close()
        start = time.monotonic()
        self.gnt("gnt-instance", "stop", "--timeout", "3", self.name)
        took = time.monotonic() - start
        print(f"  stop of a guest ignoring ACPI (--timeout 3): {took:.1f}s")
        self.assertGreaterEqual(took, 3.0)
        self.assertEqual(self.qemu_pids(self.name), [])
        log = self.follow(self.NODE, self.name)
        self.gnt("gnt-instance", "start", self.name)
        log.wait_for(self.boot_marker())

    def test_4_grow_disk_seen_by_the_guest(self) -> None:
        sh = self.shell(self.NODE, self.name)
        before = int(sh.run("cat /sys/block/vda/size"))
        self.assertEqual(before * 512, 1024 * 1024 * 1024)
        sh.close()
        self.gnt("gnt-instance", "grow-disk", self.name, "0", "64M")
        sh = self.shell(self.NODE, self.name)
        after = int(sh.run("cat /sys/block/vda/size"))
        self.assertEqual(after * 512, 1088 * 1024 * 1024)

    def test_5_modify_memory_and_vcpus_at_next_boot(self) -> None:
        self.gnt("gnt-instance", "modify", "-B", "maxmem=192M,minmem=192M,vcpus=2", self.name)
        sh = self.shell(self.NODE, self.name)
        self.assertEqual(sh.run("grep -c ^processor /proc/cpuinfo"), "1")
        sh.close()
        log = self.follow(self.NODE, self.name)
        self.gnt("gnt-instance", "stop", self.name)
        self.gnt("gnt-instance", "start", self.name)
        log.wait_for(self.boot_marker())
        sh = self.shell(self.NODE, self.name)
        self.assertEqual(sh.run("grep -c ^processor /proc/cpuinfo"), "2")
        mem_kib = int(sh.run("grep ^MemTotal /proc/meminfo").split()[1])
        self.assertGreater(mem_kib, 140 * 1024)  # 192 MiB less what the kernel keeps
        self.assertLessEqual(mem_kib, 192 * 1024)
        out = self.virsh(self.NODE, "dominfo", self.name)
        self.assertIn("196608 KiB", out)

    def test_6_rename(self) -> None:
        new = self.instance_name("vm1b")
        self.gnt("gnt-instance", "stop", self.name)
        self.gnt("gnt-instance", "rename", "-f", "--no-ip-check", "--no-name-check", self.name, new)
        type(self).name = new
        log = self.follow(self.NODE, new)
        self.gnt("gnt-instance", "start", new)
        log.wait_for(self.boot_marker(new))
        self.assertIn(new, self.domains(self.NODE))

    def master_saw(self, after: float) -> float | None:
        """When (epoch seconds) masterd logged a crash event of this instance, at or
        after ``after``; None if it has not."""
        path = self.master_paths().log_file(c.MASTERD)
        pattern = re.compile(rf"Instance event: {re.escape(self.name)} crashed on node "
                             rf".*seen by the master at ([0-9.]+),")
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                found = pattern.search(line)
                if found and float(found.group(1)) >= after:
                    return float(found.group(1))
        return None

    def test_7_kill9_heals_within_seconds(self) -> None:
        """The issue's figures: the master sees the crash within 2 s (its log line
        of the node's event, stamped when the master read it) and the instance runs
        again within 15 s; the watcher's restart job follows the event at once."""
        (pid,) = self.qemu_pids(self.name)
        log = self.follow(self.NODE, self.name)
        log.wait_for(self.boot_marker(), timeout=30)  # the current boot (already written)
        client = LuxiClient(self.master_paths().luxi_socket)
        last_job = max((j[0] for j in client.call("QueryJobs", None, ["id"])), default=0)
        killed = time.time()
        os.kill(pid, signal.SIGKILL)
        log.wait_for(self.boot_marker())
        back = time.time() - killed
        jobs = client.call("QueryJobs", None, ["id", "summary", "received_ts", "status"])
        restarts = [j for j in jobs if int(j[0]) > int(last_job)
                    and j[1] and j[1][0].startswith("INSTANCE_STARTUP")]
        self.assertTrue(restarts, jobs[-5:])
        job = restarts[0][2][0] + restarts[0][2][1] / 1e6 - killed
        saw = self.master_saw(killed)
        self.assertIsNotNone(saw, "masterd logged no crash event of the instance")
        assert saw is not None
        seen = saw - killed
        print(f"\n  kill -9 of QEMU: the master saw it after {seen:.2f}s, restart job "
              f"received after {job:.2f}s, marker again after {back:.1f}s")
        self.assertLess(seen, 2.0 * SLOWDOWN)  # 2 s alone; CI shares the cores
        self.assertLess(job, 2.0 * SLOWDOWN)
        self.assertLess(back, 15.0 * SLOWDOWN)
        self.assertEqual(self.oper_state(self.name), "running")

    def test_8_reinstall(self) -> None:
        sh = self.shell(self.NODE, self.name)
        sh.run("echo scribble > /root/mark; sync")
        self.assertEqual(sh.run("cat /root/mark"), "scribble")
        sh.close()
        self.gnt("gnt-instance", "stop", self.name)
        self.gnt("gnt-instance", "reinstall", "-f", self.name)
        log = self.follow(self.NODE, self.name)
        self.gnt("gnt-instance", "start", self.name)
        log.wait_for(self.boot_marker())
        sh = self.shell(self.NODE, self.name)
        self.assertEqual(sh.run("cat /root/mark 2>/dev/null || echo none"), "none")

    def test_9_remove_leaves_nothing(self) -> None:
        links_before = self.node_links(self.NODE)
        self.assertTrue(any(link.startswith(("tap", "gnt", "vnet")) for link in links_before),
                        links_before)
        self.assertTrue(self.disk_files())
        self.gnt("gnt-instance", "remove", "-f", self.name)
        self.assertEqual(self.qemu_pids(self.name), [])
        self.assertNotIn(self.name, self.domains(self.NODE))
        links = self.node_links(self.NODE)
        self.assertFalse([link for link in links if link.startswith(("tap", "gnt", "vnet"))],
                         links)
        self.assertEqual(self.disk_files(), [])
        out = self.gnt("gnt-instance", "list", "--no-headers", "-o", "name").stdout
        self.assertNotIn(self.name, out)
