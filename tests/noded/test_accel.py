"""Choosing KVM or TCG for guests: kvm_flag, the kept answer, the probe."""

from __future__ import annotations

import json
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.noded.hypervisors import accel


class AccelTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.run_dir = self.mktemp()
        os.makedirs(self.run_dir)
        self.kernel = os.path.join(self.run_dir, "vmlinux")
        with open(self.kernel, "wb") as f:
            f.write(b"\x7fELF")
        self.probes: list[str] = []

    def probe(self, booted: bool):
        def run(kernel, initrd):
            self.probes.append(kernel)
            return booted, "probed"
        return run

    def test_kvm_flag_forces_the_answer(self) -> None:
        self.assertEqual(accel.choose(self.run_dir, "enabled", None)[0], "kvm")
        self.assertEqual(accel.choose(self.run_dir, "disabled", self.kernel,
                                      probe=self.probe(True))[0], "qemu")
        self.assertEqual(self.probes, [])

    def test_probe_once_and_keep_the_answer(self) -> None:
        choose = dict(probe=self.probe(True), usable=lambda: True)
        self.assertEqual(accel.choose(self.run_dir, None, self.kernel, **choose),
                         ("kvm", "probed"))
        self.assertEqual(accel.choose(self.run_dir, None, self.kernel, **choose)[0], "kvm")
        self.assertEqual(self.probes, [self.kernel])
        with open(accel.cache_file(self.run_dir)) as f:
            self.assertEqual(json.load(f)["kernel"], accel.kernel_identity())

    def test_a_kept_answer_of_another_host_kernel_is_ignored(self) -> None:
        os.makedirs(os.path.dirname(accel.cache_file(self.run_dir)))
        with open(accel.cache_file(self.run_dir), "w") as f:
            json.dump({"accel": "kvm", "kernel": "2.6.32 old"}, f)
        self.assertEqual(accel.choose(self.run_dir, None, self.kernel,
                                      probe=self.probe(False), usable=lambda: True)[0], "qemu")
        self.assertEqual(len(self.probes), 1)

    def test_tcg_without_kvm_or_guest_kernel(self) -> None:
        self.assertEqual(accel.choose(self.run_dir, None, self.kernel, probe=self.probe(True),
                                      usable=lambda: False),
                         ("qemu", "/dev/kvm is not usable"))
        self.assertEqual(accel.choose(self.run_dir, None, None, probe=self.probe(True),
                                      usable=lambda: True)[0], "qemu")
        self.assertEqual(self.probes, [])
        self.assertEqual(accel.describe("qemu"), "qemu (TCG)")
