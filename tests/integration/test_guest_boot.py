"""One real boot: the guest kernel and initramfs (``make guest``) boot a root disk
made by the busybox OS definition, under plain QEMU in TCG mode (no libvirt, no
network), to its marker line and shell; the ACPI power button powers it off.

Needs root, qemu-system-x86_64 and the built guest files; skipped otherwise.
The boot time (QEMU start to the marker line) is printed: run with ``-s`` to see it.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import guestfiles
from ganeti.core import paths as pathsmod

BUSYBOX_OS = pathsmod.shipped_os_dir("busybox")
ENV_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
QEMU = "qemu-system-x86_64"
BOOT_TIMEOUT = 60.0
NAME = "guest1.example.com"
#: busybox's shell prompt; its line editing then asks the terminal for the cursor (ESC [6n).
PROMPT = re.compile(rb"\n# (\x1b\[6n)?$")


class ConsoleReader:
    """The QEMU process's serial console on its standard output, read with timeouts."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.output = b""
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()

    def wait_for(self, pattern: re.Pattern[bytes], timeout: float, since: int = 0) -> float:
        """Read until ``pattern`` matches the output after offset ``since``; the time it
        took.  Fails with the output so far if QEMU exits or time runs out."""
        start = time.monotonic()
        deadline = start + timeout
        while not pattern.search(self.output, since):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern.pattern!r} within {timeout} s; console:\n"
                                     + self.output.decode(errors="replace")[-3000:])
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                data = os.read(self.fd, 65536)
                if not data:
                    raise AssertionError("QEMU exited; console:\n"
                                         + self.output.decode(errors="replace")[-3000:])
                self.output += data
        return time.monotonic() - start

    def send(self, text: bytes) -> int:
        """Type ``text`` on the console; the output offset before it."""
        assert self.proc.stdin is not None
        mark = len(self.output)
        self.proc.stdin.write(text)
        self.proc.stdin.flush()
        return mark


class GuestBootTest(SynchronousTestCase):
    def setUp(self) -> None:
        if os.geteuid() != 0:
            raise unittest.SkipTest("not root")
        if not shutil.which(QEMU):
            raise unittest.SkipTest(f"{QEMU} is not installed (make install-vm)")
        for tool in ("busybox", "mkfs.ext4"):
            if not shutil.which(tool, path=ENV_PATH):
                raise unittest.SkipTest(f"{tool} is not installed (make install-os)")
        guest = guestfiles.find_guest()
        if guest is None:
            raise unittest.SkipTest(f"no guest files in {guestfiles.guest_dir()} (make guest)")
        self.guest = guest
        self.dir = os.path.abspath(self.mktemp())
        os.makedirs(self.dir)

    def make_disk(self) -> str:
        disk = os.path.join(self.dir, "disk0.raw")
        with open(disk, "wb") as f:
            f.truncate(64 << 20)
        env = {"PATH": ENV_PATH, "INSTANCE_NAME": NAME, "OS_API_VERSION": "20",
               "OS_VARIANT": "default", "DISK_COUNT": "1", "DISK_0_PATH": disk,
               "NIC_COUNT": "0", "HYPERVISOR": "kvm"}
        done = subprocess.run([os.path.join(BUSYBOX_OS, "create")], env=env,
                              capture_output=True, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        return disk

    def start(self, disk: str, monitor: str) -> subprocess.Popen[bytes]:
        argv = [QEMU, "-accel", "tcg", "-m", "256", "-nographic", "-nic", "none",
                "-no-reboot", "-kernel", self.guest.kernel, "-initrd", self.guest.initrd,
                "-append", f"{self.guest.kernel_args} root={self.guest.root_path}",
                "-drive", f"file={disk},if=virtio,format=raw",
                "-monitor", f"unix:{monitor},server=on,wait=off"]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)

        def stop() -> None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        self.addCleanup(stop)
        return proc

    def test_boot_marker_shell_and_acpi_poweroff(self):
        disk = self.make_disk()
        sockets = tempfile.mkdtemp(prefix="guest-boot-")  # a socket path is short
        self.addCleanup(shutil.rmtree, sockets, True)
        monitor = os.path.join(sockets, "monitor")
        proc = self.start(disk, monitor)
        console = ConsoleReader(proc)
        boot = console.wait_for(re.compile(rb"GANETI-GUEST-READY " + re.escape(NAME.encode())
                                           + rb"\r?\n"), BOOT_TIMEOUT)
        print(f"\nguest boot (QEMU TCG start to GANETI-GUEST-READY): {boot:.2f} s")
        self.assertIn(b"ganeti-busybox: guest1.example.com is up", console.output)
        console.wait_for(PROMPT, 20)

        # the shell is root's, on ttyS0, with the instance's host name
        mark = console.send(b"echo host=$(hostname) tty=$(tty) uid=$(id -u)\n")
        console.wait_for(re.compile(rb"host=guest1\.example\.com tty=/dev/ttyS0 uid=0"), 20,
                         since=mark)
        mark = console.send(b"pidof acpid >/dev/null && echo acpid-runs\n")
        console.wait_for(re.compile(rb"\nacpid-runs"), 20, since=mark)

        # the ACPI power button (what libvirt's shutdown presses) powers it off
        start = time.monotonic()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mon:
            mon.settimeout(10)
            mon.connect(monitor)
            mon.sendall(b"system_powerdown\n")
            self.assertEqual(proc.wait(timeout=30), 0)
        print(f"ACPI power button to QEMU exit: {time.monotonic() - start:.2f} s")
        # the handler remounted / read-only first: the journal needs no recovery
        header = subprocess.run(["dumpe2fs", "-h", disk], capture_output=True, text=True,
                                check=True).stdout
        self.assertIn("Filesystem state:         clean", header)
        self.assertNotIn("needs_recovery", header)
