"""The kvm hypervisor against a real, private libvirtd: a guest boots under TCG, its
serial console is logged, ``kill -9`` of its QEMU is a "crashed" event, a stop leaves
no domain; a bad kernel path fails with libvirt's reason; a paused domain is told
that its disk grew, survives a libvirtd restart and is found again.  Two real boots
(one libvirtd for all).  A last test reports (never fails) whether KVM can boot the
guest kernel on this machine.

Skips without root, libvirtd/virtlogd/QEMU, libvirt-python or the guest files
(``make guest``).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli.guestfiles import find_guest
from ganeti.noded.backend.context import inline_runner
from ganeti.noded.hypervisors import accel
from ganeti.noded.hypervisors import domainxml as dx
from ganeti.noded.hypervisors.kvm import KvmHypervisor, LibvirtDown
from ganeti.noded.hypervisors.virt import VirtConnection
from ganeti.noded.instevents import InstanceEvents
from tests.integration.libvirtd import PrivateLibvirtd, unavailable_reason
from tests.noded.virthelpers import ThreadReactor, settle

BOOT_TIMEOUT = 60.0
NAME = "smoke1.example.com"


class RealLibvirtTest(SynchronousTestCase):
    libvirtd: PrivateLibvirtd | None = None

    @classmethod
    def setUpClass(cls) -> None:
        # one libvirtd for the class: its first QEMU probe costs ~8 s, its stop ~4 s
        if unavailable_reason() is None and find_guest() is not None:
            cls.libvirtd = PrivateLibvirtd().start()

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.libvirtd is not None:
            cls.libvirtd.stop()
            cls.libvirtd = None

    def setUp(self) -> None:
        why = unavailable_reason()
        if why is not None:
            raise self.skipTest(why)
        guest = find_guest()
        if guest is None or self.libvirtd is None:
            raise self.skipTest("no guest kernel/initrd (run `make guest`)")
        self.guest = guest
        self.addCleanup(self.libvirtd.destroy_domains)
        self.run_dir = tempfile.mkdtemp(prefix="gkvm", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.run_dir, True)
        self.reactor = ThreadReactor()
        self.clock = Clock()
        self.events = InstanceEvents(self.clock)
        self.virt = VirtConnection(self.libvirtd.uri, self.reactor)
        self.kvm = KvmHypervisor(self.virt, self.run_dir, self.clock, inline_runner,
                                 self.events, choose_accel=lambda *a: (dx.ACCEL_TCG, "test"))
        self.virt.start()
        self.addCleanup(lambda: settle(self.reactor, self.virt.stop()))

    def spec(self, disks: tuple[dx.DiskSpec, ...] = ()) -> dx.DomainSpec:
        from ganeti.core import constants as c
        hv: dict[str, Any] = dict(c.HVC_DEFAULTS[c.HT_KVM])
        hv.update(self.guest.hvparams(), serial_speed=115200)
        inst = {"name": NAME, "uuid": "5b7c1f1e-0f7e-4a53-9f0e-3d0f6c1d2e3f", "hvparams": hv,
                "beparams": {"vcpus": 1, "maxmem": 128}}
        return self.kvm.domain_spec(inst, disks, [], 128, dx.ACCEL_TCG, None)

    def pump_until(self, done: Any, what: str, timeout: float = BOOT_TIMEOUT) -> None:
        """Run the libvirt thread's hand-offs until ``done()`` (real time: a real VM)."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                self.fail(f"timed out waiting for {what}")
            self.reactor.run_pending()
            time.sleep(0.1)

    def console(self) -> str:
        try:
            with open(self.kvm.console_log(NAME), encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def qemu_pid(self) -> int:
        with open(self.libvirtd.path("run", "qemu", f"{NAME}.pid"), encoding="ascii") as f:
            return int(f.read().strip())

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events.answer(0)["events"]]

    def test_boot_console_crash_and_stop(self) -> None:
        settle(self.reactor, self.kvm.start_domain(self.spec()))
        self.assertTrue(os.path.exists(self.kvm.serial_socket(NAME)))
        self.pump_until(lambda: "Linux version" in self.console(), "the kernel's first line")
        info = settle(self.reactor, self.kvm.instance_info(NAME))
        self.assertEqual((info[0], info[2], info[4]), (NAME, 128, 0))
        # kill -9 of QEMU: libvirt says the domain failed -> "crashed"
        os.kill(self.qemu_pid(), signal.SIGKILL)
        self.pump_until(lambda: "crashed" in self.kinds(), "the crashed event", 30)
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(NAME)))
        # again, then a stop without waiting: destroyed, no domain left
        settle(self.reactor, self.kvm.start_domain(self.spec()))
        self.assertEqual(self.console(), "")  # the log starts afresh
        settle(self.reactor, self.kvm.stop(NAME, 0))
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(NAME)))
        self.pump_until(lambda: self.kinds().count("stopped") == 1, "the stopped event", 30)
        self.assertEqual(self.kinds(), ["started", "crashed", "started", "stopped"])

    def test_disk_growth_and_libvirtd_restart(self) -> None:
        assert self.libvirtd is not None
        disk = os.path.join(self.run_dir, "disk0")
        with open(disk, "wb") as f:
            f.truncate(1 << 20)
        # paused: no boot needed
        settle(self.reactor, self.kvm.start_domain(self.spec((dx.DiskSpec(disk),)), paused=True))
        pid = self.qemu_pid()
        # a grown disk: the running domain is told its new size
        with open(disk, "r+b") as f:
            f.truncate(2 << 20)
        self.assertEqual(settle(self.reactor, self.kvm.disk_grown(disk, 2 << 20)), [NAME])
        size = settle(self.reactor, self.virt.call(
            lambda conn: conn.lookupByName(NAME).blockInfo("vda")[0]))
        self.assertEqual(size, 2 << 20)
        self.libvirtd.stop_libvirtd()
        with self.assertRaises(LibvirtDown) as err:
            settle(self.reactor, self.kvm.instance_info(NAME))
        self.assertIn(f"libvirtd is not available at {self.libvirtd.uri}", str(err.exception))
        self.kvm.known.clear()
        self.libvirtd.start_libvirtd()
        self.pump_until(lambda: NAME in self.kvm.known, "the re-attach", 30)
        os.kill(pid, 0)  # the same QEMU still runs
        self.assertEqual(settle(self.reactor, self.kvm.instance_info(NAME))[0], NAME)
        settle(self.reactor, self.kvm.stop(NAME, 0))
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(NAME)))

    def test_a_byte_range_of_a_device_is_the_guests_disk(self) -> None:
        """How a plain volume is used without device-mapper: its extents on the PV."""
        import json
        import subprocess

        import libvirt_qemu
        image = os.path.join(self.run_dir, "pv.img")
        with open(image, "wb") as f:
            f.truncate(32 << 20)
        loop = subprocess.run(["losetup", "-f", "--show", image], check=True,
                              capture_output=True, text=True).stdout.strip()
        self.addCleanup(subprocess.run, ["losetup", "-d", loop], check=False)
        disk = dx.DiskSpec(loop, block=True, offset=9 << 20, size=12 << 20)
        settle(self.reactor, self.kvm.start_domain(self.spec((disk,)), paused=True))
        query = json.dumps({"execute": "query-block"})
        answer = settle(self.reactor, self.virt.call(
            lambda conn: libvirt_qemu.qemuMonitorCommand(conn.lookupByName(NAME), query, 0)))
        self.assertEqual(json.loads(answer)["return"][0]["inserted"]["image"]["virtual-size"],
                         12 << 20)
        settle(self.reactor, self.kvm.stop(NAME, 0))

    def test_a_pool_uid_runs_qemu_under_that_uid(self) -> None:
        uid = 64000 + os.getpid() % 1000
        spec = dx.DomainSpec(**{**self.spec().__dict__, "uid": uid})
        settle(self.reactor, self.kvm.start_domain(spec, paused=True))
        with open(f"/proc/{self.qemu_pid()}/status", encoding="ascii") as f:
            uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
        self.assertEqual(set(uids), {str(uid)})
        settle(self.reactor, self.kvm.stop(NAME, 0))
        self.assertEqual(os.stat(self.guest.kernel).st_uid, 0)  # given back

    def test_a_bad_kernel_path_fails_with_libvirts_reason(self) -> None:
        spec = self.spec()
        spec = dx.DomainSpec(**{**spec.__dict__,
                                "hvparams": {**spec.hvparams,
                                             "kernel_path": "/nonexistent/vmlinux"}})
        from ganeti.noded.hypervisors.base import HypervisorError
        with self.assertRaises(HypervisorError) as err:
            settle(self.reactor, self.kvm.start_domain(spec))
        self.assertIn("libvirt:", str(err.exception))
        self.assertIn("/nonexistent/vmlinux", str(err.exception))
        self.assertIsNone(settle(self.reactor, self.kvm.instance_info(NAME)))

    def test_report_whether_kvm_boots_a_guest_here(self) -> None:
        """Reports, never fails: the figure shows up in the test log."""
        if not accel.kvm_usable():
            print("KVM: /dev/kvm is not usable here; guests run under qemu (TCG)")
            return
        booted, why = accel.probe_kvm(self.guest.kernel, self.guest.initrd)
        print(f"KVM boots a guest here: {booted} ({why})")
