"""What the busybox OS definition (share/os/busybox) puts on a root disk for a real
guest: /sbin/init and its marker line, the NIC configuration from the OS
environment, busybox init's inittab, the ACPI power button handler and the shell
prompt.  The scripts run directly with Ganeti's OS environment; the image is read
with debugfs (no mount, no root).  Booting it is tests/integration/test_guest_boot.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import unittest

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import paths as pathsmod

BUSYBOX_OS = pathsmod.shipped_os_dir("busybox")
ENV_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"


def debugfs(image: str, request: str) -> str:
    out = subprocess.run(["debugfs", "-R", request, image], capture_output=True, check=True,
                         text=True)
    return out.stdout


@pytest.mark.subprocess
class BusyboxGuestTreeTest(SynchronousTestCase):
    def setUp(self) -> None:
        if not shutil.which("busybox", path=ENV_PATH) or not shutil.which("debugfs",
                                                                           path=ENV_PATH):
            raise unittest.SkipTest("busybox-static or e2fsprogs missing (make install-os)")
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)

    def run_script(self, script: str, disk: str, stdin: bytes = b"", **env: str) -> str:
        full = {"PATH": ENV_PATH, "INSTANCE_NAME": "vm1.example.com", "OS_API_VERSION": "20",
                "OS_VARIANT": "default", "DISK_COUNT": "1", "DISK_0_PATH": disk,
                "HYPERVISOR": "kvm", "NIC_COUNT": "1", **env}
        done = subprocess.run([os.path.join(BUSYBOX_OS, script)], env=full, input=stdin,
                              capture_output=True, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stderr.decode()

    def create(self, **env: str) -> tuple[str, str]:
        disk = os.path.join(self.dir, "disk.raw")
        with open(disk, "wb") as f:
            f.truncate(32 << 20)
        return disk, self.run_script("create", disk, **env)

    def test_init_marker_shell_and_power_button(self):
        disk, _ = self.create(NIC_0_IP="10.9.0.5", NIC_0_NETWORK_SUBNET="10.9.0.0/26",
                              NIC_0_NETWORK_GATEWAY="10.9.0.1")
        init = debugfs(disk, "cat /sbin/init")
        self.assertTrue(init.startswith("#!/bin/sh\n"))
        for needed in ('echo "GANETI-GUEST-READY $(cat /etc/hostname)" > "$out"',
                       "cat /etc/ganeti-marker", "out=/dev/ttyS0", "hostname -F /etc/hostname",
                       'ip addr add "$NIC_IP/$NIC_PREFIX" dev eth0', "ip link set lo up",
                       "acpid -c /etc/acpi", "exec /bin/busybox init"):
            self.assertIn(needed, init)
        subprocess.run(["sh", "-n"], input=init.encode(), check=True)
        self.assertEqual(debugfs(disk, "cat /etc/ganeti-network"),
                         "NIC_IP=10.9.0.5\nNIC_PREFIX=26\nNIC_GATEWAY=10.9.0.1\n")
        self.assertIn("ttyS0::respawn:-/bin/sh\n", debugfs(disk, "cat /etc/inittab"))
        self.assertEqual(debugfs(disk, "cat /etc/profile"), "PS1='# '\nexport PS1\n")
        handler = debugfs(disk, "cat /etc/acpi/PWRF/00000080")
        self.assertIn("poweroff -f", handler)
        mode = debugfs(disk, "stat /etc/acpi/PWRF/00000080").split("Mode:")[1].split()[0]
        self.assertEqual(mode, "0755")
        # every applet the init and the handler run is there
        for applet in ("/sbin/acpid", "/sbin/ip", "/bin/hostname", "/sbin/poweroff",
                       "/bin/grep", "/bin/mount", "/bin/ping", "/bin/sh"):
            self.assertIn("Type: symlink", debugfs(disk, f"stat {applet}"), applet)
        self.assertIn("Type: regular", debugfs(disk, "stat /sbin/init"))

    def test_netmask_defaults_and_bad_input(self):
        disk, _ = self.create(NIC_0_IP="10.1.2.3")
        self.assertEqual(debugfs(disk, "cat /etc/ganeti-network"),
                         "NIC_IP=10.1.2.3\nNIC_PREFIX=24\nNIC_GATEWAY=\n")
        for bad in ("10.1.2", "10.1.2.300", "10.1.2.3; reboot", "fe80::1", "1.2.3.4.5",
                    "10..2.3"):
            disk, err = self.create(NIC_0_IP=bad, NIC_0_NETWORK_SUBNET="10.1.0.0/99",
                                    NIC_0_NETWORK_GATEWAY="$(reboot)")
            self.assertEqual(debugfs(disk, "cat /etc/ganeti-network"),
                             "NIC_IP=\nNIC_PREFIX=24\nNIC_GATEWAY=\n", bad)
            self.assertIn("NIC 0: ignored IP", err)
        disk, _ = self.create()  # no NIC address at all
        self.assertEqual(debugfs(disk, "cat /etc/ganeti-network"),
                         "NIC_IP=\nNIC_PREFIX=24\nNIC_GATEWAY=\n")

    def test_rename_changes_the_ready_line(self):
        disk, _ = self.create(NIC_0_IP="10.1.2.3")
        self.run_script("rename", disk, INSTANCE_NAME="vm2.example.com",
                        OLD_INSTANCE_NAME="vm1.example.com")
        # the marker line names /etc/hostname, which rename rewrote
        self.assertEqual(debugfs(disk, "cat /etc/hostname"), "vm2.example.com\n")
        self.assertIn("GANETI-GUEST-READY $(cat /etc/hostname)", debugfs(disk, "cat /sbin/init"))

    def test_import_takes_the_new_nic(self):
        disk, _ = self.create(NIC_0_IP="10.1.2.3")
        stream = subprocess.run([os.path.join(BUSYBOX_OS, "export")], env={
            "PATH": ENV_PATH, "EXPORT_DISK_PATH": disk, "EXPORT_INDEX": "0"},
            capture_output=True, check=True).stdout
        target = os.path.join(self.dir, "target.raw")
        with open(target, "wb") as f:
            f.truncate(32 << 20)
        self.run_script("import", target, stdin=stream, IMPORT_DISK_PATH=target,
                        IMPORT_INDEX="0", INSTANCE_NAME="vm3.example.com", NIC_0_IP="10.1.2.4")
        self.assertEqual(debugfs(target, "cat /etc/ganeti-network"),
                         "NIC_IP=10.1.2.4\nNIC_PREFIX=24\nNIC_GATEWAY=\n")
        self.assertEqual(debugfs(target, "cat /etc/hostname"), "vm3.example.com\n")
        self.assertIn("poweroff -f", debugfs(target, "cat /etc/acpi/PWRF/00000080"))
