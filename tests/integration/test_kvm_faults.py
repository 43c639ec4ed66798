"""A kvm instance that cannot start, on a namespaced one-node cluster with its own
libvirtd: each refusal fails the job with the reason (libvirt's or QEMU's own
words, Ganeti's memory check, the node's "libvirtd is not available") and leaves
no QEMU process, libvirt domain or tap behind; the instance stays as it was
(``ADMIN_down``) and starts once the cause is gone.  One TCG boot."""

from __future__ import annotations

import time

from ganeti.cli import vcluster_ns
from tests.integration.kvmcluster import MARKER, KvmClusterCase


class KvmStartFaultsTest(KvmClusterCase):

    NODES = 1

    @classmethod
    def setUpCluster(cls) -> None:
        super().setUpCluster()
        cls.name = cls.instance_name(cls, "bad1")

    def taps(self) -> list[str]:
        return [link for link in self.node_links(1) if link.startswith(("tap", "vnet"))]

    def oper_state(self) -> str:
        return self.gnt("gnt-instance", "list", "--no-headers", "-o", "status",
                        self.name).stdout.strip()

    def start_fails(self, state: str, *argv: str, libvirtd: bool = True) -> str:
        """``gnt-instance start`` fails and leaves the instance in ``state``; its
        output.  Nothing of a guest is left (no domain: asked if ``libvirtd`` runs)."""
        r = self.gnt("gnt-instance", "start", *argv, self.name, check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertEqual(self.oper_state(), state)
        if libvirtd:
            self.assertNotIn(self.name, self.domains(1))
        self.assertEqual(self.qemu_pids(self.name), [])
        self.assertEqual(self.taps(), [])
        return r.stdout + r.stderr

    def test_1_create_without_start(self) -> None:
        self.gnt("gnt-instance", "add", "-t", "file", "-o", "busybox", "-H", "kvm",
                 "--disk", "0:size=1G", "--no-name-check", "--no-ip-check", "--no-start",
                 "-B", "maxmem=128M,minmem=128M,vcpus=1", "-n", self.node_name(1), self.name)
        self.assertEqual(self.oper_state(), "ADMIN_down")

    def test_2_a_cpu_model_qemu_does_not_know_fails_with_its_reason(self) -> None:
        self.gnt("gnt-instance", "modify", "-H", "cpu_type=nosuchcpu", self.name)
        # as Ganeti's: the start marked the instance up before the node failed it
        out = self.start_fails("ERROR_down")
        self.assertIn("Could not start instance", out)
        self.assertIn("libvirt", out)
        self.assertIn("nosuchcpu", out)
        self.gnt("gnt-instance", "stop", self.name)  # the watcher's retries end
        self.gnt("gnt-instance", "modify", "-H", "cpu_type=", self.name)
        self.assertEqual(self.oper_state(), "ADMIN_down")

    def test_3_not_enough_memory_is_refused_before_the_node_is_asked(self) -> None:
        # a prerequisite: the admin state is not touched
        out = self.start_fails("ADMIN_down", "-B", "maxmem=64T,minmem=64T")
        self.assertIn(f"Not enough memory on node {self.node_name(1)}", out)

    def test_4_libvirtd_down_is_a_clear_node_error_then_it_starts(self) -> None:
        root = self.node(1)["root"]
        vcluster_ns.stop_libvirt(root)
        try:
            # the node cannot say what runs: as Ganeti's, a node that fails the
            # instance query is counted down for its instances
            out = self.start_fails("ERROR_nodedown", libvirtd=False)
            self.assertIn("libvirtd is not available at", out)
        finally:
            vcluster_ns.start_libvirt(self.plan.node_ns(1), root, self.plan.node_ip(1))
        # noded reconnects by itself (back-off of at most 30 s); the instance is
        # admin up, so masterd's watcher may start it first: either way it runs
        log = self.follow(1, self.name)
        deadline = time.monotonic() + 90
        while self.oper_state() != "running":
            r = self.gnt("gnt-instance", "start", self.name, check=False)
            if r.returncode == 0:
                break
            self.assertLess(time.monotonic(), deadline,
                            f"not running 90 s after libvirtd's return: {r.stdout}")
            time.sleep(2)
        log.wait_for(rf"^{MARKER} {self.name}$")
        self.assertEqual(self.oper_state(), "running")
        self.gnt("gnt-instance", "remove", "-f", self.name)
        self.assertNotIn(self.name, self.domains(1))
        self.assertEqual(self.qemu_pids(self.name), [])
