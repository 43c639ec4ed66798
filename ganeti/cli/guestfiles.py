"""Where the guest kernel and initramfs of real VMs are (built by ``make guest``).

``ganeti/cli/guestbuild.py`` writes ``vmlinux`` (an uncompressed Debian kernel,
booted through QEMU's PVH entry) and ``initrd.img`` (busybox and the virtio/ext4
modules) into ``<project>/.cache/guest``; the virtual cluster points the kvm
hypervisor parameters at them.  ``GANETI_GUEST_DIR`` names another directory
(tests, installed copies) and wins over the project's cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

#: The environment variable naming a directory that holds ``vmlinux`` and ``initrd.img``.
GUEST_DIR_ENV = "GANETI_GUEST_DIR"
KERNEL_NAME = "vmlinux"
INITRD_NAME = "initrd.img"
#: What the guest kernel needs on its command line besides ``root=``: the serial
#: console (where the busybox OS prints its marker and runs its shell).
KERNEL_ARGS = "console=ttyS0,115200"
ROOT_PATH = "/dev/vda"


@dataclass(frozen=True)
class GuestFiles:
    """A guest kernel and initramfs, and how to boot them."""

    kernel: str
    initrd: str
    kernel_args: str = KERNEL_ARGS
    root_path: str = ROOT_PATH

    def hvparams(self) -> dict[str, object]:
        """The kvm hypervisor parameters that boot this guest (direct kernel boot,
        virtio disk and NIC, serial console)."""
        return {"kernel_path": self.kernel, "initrd_path": self.initrd,
                "kernel_args": self.kernel_args, "root_path": self.root_path,
                "serial_console": True, "disk_type": "paravirtual",
                "nic_type": "paravirtual"}


def project_guest_dir() -> str:
    """``<project>/.cache/guest``: where ``make guest`` writes in a source checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), ".cache", "guest")


def guest_dir(environ: Mapping[str, str] | None = None) -> str:
    """The directory to look in: ``GANETI_GUEST_DIR`` if set, else the project's cache."""
    env = os.environ if environ is None else environ
    return env.get(GUEST_DIR_ENV) or project_guest_dir()


def find_guest(environ: Mapping[str, str] | None = None) -> GuestFiles | None:
    """The guest files if both are there (regular files, possibly through links),
    else None (``make guest`` was not run, or not as root)."""
    base = os.path.abspath(guest_dir(environ))
    kernel = os.path.join(base, KERNEL_NAME)
    initrd = os.path.join(base, INITRD_NAME)
    if not (os.path.isfile(kernel) and os.path.isfile(initrd)):
        return None
    return GuestFiles(kernel=kernel, initrd=initrd)
