"""The migration fault matrix on real daemons: a kvm guest on ``drbd`` disks (the qemu
mirror engine) is live-migrated, and while libvirt moves its memory one fault strikes:
the source's or the destination's node daemon killed, the source's libvirtd killed,
the migration stream cut (its TCP connections reset at the destination), the master
daemon killed.  The daemons that died are started again (what the watcher does); a
restarted master submits the interrupted migration's cleanup itself.
Every case must end with the guest running on exactly one node, the config naming
that node, and the next migration working with no ``--cleanup`` run by anyone (which
also needs the mirror reconnected and in sync: a migration checks it).

Slow (one TCG boot, then two real migrations per case, the faulty ones slowed down
to last a few seconds), so not part of ``make test`` (whose budget allows about ten
real migrations): ``make test-migration-faults`` runs it.  The same matrix over every
step of the migration runs on the fake hypervisor in
tests/master/test_lu_migration_faults.py and test_lu_migration_drbd_faults.py.
"""

from __future__ import annotations

import os
import re
import signal
import time

from ganeti.cli import daemons, vcluster_ns
from ganeti.core.paths import Paths
from tests.integration.helpers import run
from tests.integration.kvmcluster import KvmClusterCase
from tests.integration.test_kvm_plain import needs_lvm

#: MiB/s of the faulty migrations (the guest moves tens of MiB: a few seconds).
SLOW = 8
FAST = 1000
MIGRATION_PORT = 8102


class KvmMigrationFaultsTest(KvmClusterCase):
    LVM = True
    NODES = 2
    PREFIX = "ganeti-kvm-migfault-"
    REQUIRES = (*KvmClusterCase.REQUIRES, needs_lvm)

    @classmethod
    def setUpCluster(cls) -> None:
        super().setUpCluster()
        cls.name = f"mf1.{cls.state.get('domain', 'vcluster.test')}"

    # --- helpers ---------------------------------------------------------------------

    def paths(self, k: int) -> Paths:
        return Paths.for_node(self.node(k)["root"], self.node_name(k))

    def kill_daemon(self, k: int, daemon: str) -> None:
        st = daemons.state(self.paths(k), daemon)
        self.assertIsNotNone(st.pid, (k, daemon, st))
        os.kill(st.pid, signal.SIGKILL)

    def kill_libvirtd(self, k: int) -> None:
        (st,) = [s for s in vcluster_ns.libvirt_states(self.node(k)["root"])
                 if s.daemon == "libvirtd"]
        self.assertIsNotNone(st.pid, st)
        os.kill(st.pid, signal.SIGKILL)

    def cut_stream(self, k: int) -> None:
        """Reset every TCP connection of the migration port at node ``k`` (and refuse
        new ones) until :meth:`heal_stream`."""
        run(["ip", "netns", "exec", self.plan.node_ns(k), "iptables", "-I", "INPUT", "-p",
             "tcp", "--dport", str(MIGRATION_PORT), "-j", "REJECT", "--reject-with",
             "tcp-reset"])
        self.addCleanup(self.heal_stream, k)

    def heal_stream(self, k: int) -> None:
        run(["ip", "netns", "exec", self.plan.node_ns(k), "iptables", "-D", "INPUT", "-p",
             "tcp", "--dport", str(MIGRATION_PORT), "-j", "REJECT", "--reject-with",
             "tcp-reset"], check=False)

    def restart_dead_daemons(self) -> None:
        self.cluster.start(prefix=self.start_prefix())

    def running_on(self) -> list[int]:
        return [k for k in (1, 2)
                if self.name in self.virsh(k, "list", "--state-running", "--name").split()]

    def primary(self) -> int:
        pnode = self.gnt("gnt-instance", "list", "--no-headers", "-o", "pnode",
                         self.name).stdout.strip()
        return 1 if pnode == self.node_name(1) else 2

    def job_status(self, job: str) -> str:
        out = self.gnt("gnt-job", "list", "--no-headers", "-o", "status", job, check=False)
        return out.stdout.strip()

    def job_log(self, job: str) -> str:
        return self.gnt("gnt-job", "info", job, check=False).stdout

    def wait(self, predicate, what: str, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.2)

    def bandwidth(self, mib: int) -> None:
        self.gnt("gnt-cluster", "modify", "-H", f"kvm:migration_bandwidth={mib}")

    def assert_one_copy(self, why: str) -> int:
        """Exactly one node runs the guest, and the config names it; that node."""
        running = self.running_on()
        self.assertEqual(len(running), 1, (why, running))
        self.assertEqual(self.primary(), running[0], why)
        return running[0]

    # --- the matrix ------------------------------------------------------------------

    def one_case(self, fault: str) -> str:
        src = self.assert_one_copy(f"before {fault}")
        dst = 3 - src
        self.bandwidth(SLOW)
        proc = self.gnt("gnt-instance", "migrate", "-f", "--submit", self.name)
        out = proc.stdout + proc.stderr  # "JobID: N" on stderr, as Ganeti
        job = re.search(r"(\d+)", out)
        self.assertIsNotNone(job, out)
        assert job is not None
        job_id = job.group(1)
        self.wait(lambda: "* starting memory transfer" in self.job_log(job_id),
                  f"{fault}: the memory transfer")
        time.sleep(1)  # into the transfer
        if fault == "source noded killed":
            self.kill_daemon(src, "ganeti-noded")
        elif fault == "destination noded killed":
            self.kill_daemon(dst, "ganeti-noded")
        elif fault == "source libvirtd killed":
            self.kill_libvirtd(src)
        elif fault == "stream cut":
            self.cut_stream(dst)
        elif fault == "masterd killed":
            self.kill_daemon(src if self.node_name(src) == self.cluster.master else 1,
                             "ganeti-masterd")
        time.sleep(2)
        self.restart_dead_daemons()
        self.wait(lambda: self.job_status(job_id) in ("success", "error", "canceled"),
                  f"{fault}: the job's end")
        status = self.job_status(job_id)
        # and whatever the master submitted meanwhile (a restarted master's cleanup)
        self.wait(lambda: not set(self.gnt("gnt-job", "list", "--no-headers", "-o",
                                           "status").stdout.split())
                  & {"queued", "waiting", "running", "canceling"}, f"{fault}: the jobs")
        if fault == "stream cut":
            self.heal_stream(dst)
        where = self.assert_one_copy(f"after {fault} (job {status})")
        # no cleanup: the next migration works from where the guest is
        self.bandwidth(FAST)
        self.gnt("gnt-instance", "migrate", "-f", self.name, timeout=300)
        self.assertEqual(self.assert_one_copy(f"migrated again after {fault}"), 3 - where)
        return f"{fault}: job {status}, guest on node{where}, then migrated to node{3 - where}"

    def test_faults_during_the_memory_transfer(self) -> None:
        n1, n2 = self.node_name(1), self.node_name(2)
        self.gnt("gnt-instance", "add", "-t", "drbd", "-s", "1024M", "-o", "busybox",
                 "--no-install", "-H", "kvm", "--no-name-check", "--no-ip-check",
                 "-B", "maxmem=128M,minmem=128M,vcpus=1", "-n", f"{n1}:{n2}", self.name)
        self.addCleanup(self.gnt, "gnt-instance", "remove", "-f", "--shutdown-timeout=0",
                        self.name, check=False)
        self.gnt("gnt-instance", "start", self.name)
        self.follow(1, self.name).wait_for(r"no root file system")
        results = []
        for fault in ("source noded killed", "destination noded killed",
                      "source libvirtd killed", "stream cut", "masterd killed"):
            with self.subTest(fault=fault):
                results.append(self.one_case(fault))
        print("\n  " + "\n  ".join(results))
