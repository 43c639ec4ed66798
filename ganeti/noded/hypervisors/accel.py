"""Does KVM really boot a guest on this node?  Else QEMU's TCG.

``/dev/kvm`` existing proves nothing (the project's machines have a
paravirtualised KVM that hangs or aborts stock guest kernels), so the node boots
the guest kernel once under ``-accel kvm`` for a few seconds and looks for output
on its serial port.  The answer is kept in ``RUN_DIR/kvm-hypervisor/accel.json``
with the kernel identity of the node (a new host kernel probes again) and the
guest kernel probed.  ``kvm_flag`` forces the answer: ``enabled`` -> kvm,
``disabled`` -> qemu.  Without a guest kernel or a usable ``/dev/kvm`` the answer
is qemu.  Every function here blocks (run it in a thread).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any

from ganeti.core import fileutil
from ganeti.noded.hypervisors.domainxml import ACCEL_KVM, ACCEL_TCG

#: How long the probe lets the guest run at most (a KVM guest prints its first line
#: well within a second; the probe ends as soon as it does), and what proves it ran.
PROBE_SECONDS = 4.0
PROBE_MARKERS = (b"Linux version", b"Booting paravirtualized kernel", b"Command line:")
QEMU = "qemu-system-x86_64"

Probe = Callable[[str, str | None], tuple[bool, str]]


def cache_file(run_dir: str) -> str:
    """Where the answer is kept."""
    return os.path.join(run_dir, "kvm-hypervisor", "accel.json")


def kernel_identity() -> str:
    """The running host kernel (release and build)."""
    u = os.uname()
    return f"{u.release} {u.version}"


def kvm_usable(dev: str = "/dev/kvm") -> bool:
    """Whether this process can open ``dev`` for reading and writing."""
    return os.access(dev, os.R_OK | os.W_OK)


def probe_kvm(kernel: str, initrd: str | None, seconds: float = PROBE_SECONDS,
              qemu: str = QEMU) -> tuple[bool, str]:
    """Boot ``kernel`` under ``-accel kvm`` for ``seconds``; (booted, why)."""
    binary = shutil.which(qemu)
    if binary is None:
        return False, f"{qemu} not found"
    argv = [binary, "-accel", "kvm", "-machine", "q35", "-m", "128", "-nodefaults",
            "-display", "none", "-no-reboot", "-serial", "stdio", "-kernel", kernel,
            "-append", "console=ttyS0 earlyprintk=ttyS0 panic=-1"]
    if initrd:
        argv += ["-initrd", initrd]
    try:
        output = _run_until_marker(argv, seconds)
    except OSError as err:
        return False, f"cannot run {qemu}: {err.strerror}"
    if any(marker in output for marker in PROBE_MARKERS):
        return True, "a guest kernel booted under KVM"
    tail = output.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    return False, f"the guest kernel did not boot under KVM ({tail[0][:120]})"


def _run_until_marker(argv: list[str], seconds: float) -> bytes:
    """Run ``argv`` until its output shows a marker, it exits or ``seconds`` pass;
    its output.  The process is killed and reaped either way."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = b""
    deadline = time.monotonic() + seconds
    try:
        while not any(marker in output for marker in PROBE_MARKERS):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if not ready:
                break
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break  # QEMU exited (KVM refused the guest)
            output += chunk
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    return output


def read_cache(run_dir: str) -> dict[str, Any] | None:
    """The kept answer if it was found under this host kernel."""
    try:
        with open(cache_file(run_dir), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kernel") != kernel_identity():
        return None
    if data.get("accel") not in (ACCEL_KVM, ACCEL_TCG):
        return None
    return data


def choose(run_dir: str, kvm_flag: str | None, guest_kernel: str | None,
           guest_initrd: str | None = None, probe: Probe = probe_kvm,
           usable: Callable[[], bool] = kvm_usable) -> tuple[str, str]:
    """(domain type, why) for a guest on this node."""
    if kvm_flag == "enabled":
        return ACCEL_KVM, "kvm_flag=enabled"
    if kvm_flag == "disabled":
        return ACCEL_TCG, "kvm_flag=disabled"
    kept = read_cache(run_dir)
    if kept is not None:
        return str(kept["accel"]), str(kept.get("reason", ""))
    if not usable():
        return ACCEL_TCG, "/dev/kvm is not usable"
    if not guest_kernel or not os.path.isfile(guest_kernel):
        return ACCEL_TCG, "no guest kernel to probe KVM with"
    booted, why = probe(guest_kernel, guest_initrd)
    accel = ACCEL_KVM if booted else ACCEL_TCG
    data = {"accel": accel, "reason": why, "kernel": kernel_identity(),
            "guest_kernel": guest_kernel}
    try:
        os.makedirs(os.path.dirname(cache_file(run_dir)), mode=0o755, exist_ok=True)
        fileutil.atomic_write(cache_file(run_dir), json.dumps(data).encode())
    except OSError:
        pass  # probed again next time
    return accel, why


def describe(accel: str) -> str:
    """How node info shows a domain type."""
    return "kvm" if accel == ACCEL_KVM else "qemu (TCG)"
