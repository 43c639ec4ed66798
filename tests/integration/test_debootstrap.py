"""Debian's real OS definition, unchanged: ganeti-instance-debootstrap installs a
Debian system on a file disk of our one-node virtual cluster (fake hypervisor).

The cluster's daemons run in a private mount namespace with the test's own
defaults file and cache over the package's (see ``debootstrap_env``): the suite
and mirror apt uses, ``PARTITION_STYLE=none``, a cache outside system directories
shared with the other debootstrap tests of the process.  The first install of
the process runs debootstrap (about 100 s); a reinstall is made from the cache.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

from tests.integration import debootstrap_env
from tests.integration.clustercase import ClusterCase, needs_debian_tool
from tests.integration.debootstrap_env import CACHE
from tests.integration.helpers import ROOT, run
from tests.integration.kvmcluster import KvmClusterCase

DEBIAN_GNT_INSTANCE = "/usr/share/ganeti/3.0/gnt-instance"
GNT_JOB = os.path.join(ROOT, "bin", "gnt-job")
INSTALL_TIMEOUT = 600


def debugfs_cat(image: str, path: str) -> str:
    return subprocess.run(["debugfs", "-R", f"cat {path}", image], capture_output=True,
                          check=True, text=True).stdout


class DebootstrapTest(ClusterCase):
    PREFIX = "ganeti-debootstrap-"
    REQUIRES = (debootstrap_env.unavailable, needs_debian_tool("gnt-instance"))
    START_TIMEOUT = 120

    @classmethod
    def prepareCluster(cls, cluster):
        cls.node = cluster.nodes[0]
        debootstrap_env.link_os(cluster.node_root(cls.node))
        cls.cache = debootstrap_env.shared_cache()
        cls.suite, mirror = debootstrap_env.apt_source()
        cls.defaults = os.path.join(cluster.tmp, "ganeti-instance-debootstrap")
        debootstrap_env.write_defaults(cls.defaults, cls.suite, mirror)

    @classmethod
    def startCluster(cls, cluster):
        # every daemon of the cluster runs in the namespace with these two mounts
        cluster.start(prefix=debootstrap_env.mount_wrapper(cls.defaults, cls.cache))

    def gnt_instance(self, *argv, timeout=INSTALL_TIMEOUT):
        r = run([DEBIAN_GNT_INSTANCE, *argv], env=self.env, check=False, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def test_install_and_reinstall_from_the_cache(self):
        name = f"deb1.{self.cluster.domain}"
        self.gnt_instance("add", "-t", "file", "--disk", "0:size=1G", "-n", self.node,
                          "-o", "debootstrap+default", "--no-name-check", "--no-ip-check",
                          "--no-start", "-B", "maxmem=256M,minmem=256M", name)
        images = glob.glob(os.path.join(self.cluster.node_root(self.node), "srv", "ganeti",
                                        "file-storage", name, "*"))
        self.assertEqual(len(images), 1, images)
        with open("/etc/debian_version", encoding="ascii") as f:
            host_major = f.read().split(".")[0]
        self.assertEqual(debugfs_cat(images[0], "/etc/debian_version").split(".")[0],
                         host_major)
        self.assertIn("/bin/bash", debugfs_cat(images[0], "/etc/shells"))
        # the package's cache went to the test's directory, not the system's
        self.assertTrue(glob.glob(os.path.join(self.cache, f"cache-{self.suite}-*.tar")))
        self.assertEqual(os.listdir(CACHE), [])
        # the script's output reached the job's log while it ran, and its log file
        jobs = run([sys.executable, GNT_JOB, "list", "--no-headers", "--separator=|", "-o",
                    "id,summary"], env=self.env).stdout.splitlines()
        create = [line.split("|")[0] for line in jobs if "INSTANCE_CREATE" in line]
        self.assertEqual(len(create), 1, jobs)
        info = run([sys.executable, GNT_JOB, "info", create[0]], env=self.env).stdout
        self.assertIn("OS create:", info)
        logs = glob.glob(os.path.join(self.cluster.node_root(self.node), "var", "log",
                                      "ganeti", "os", f"add-debootstrap+default-{name}-*"))
        self.assertTrue(logs)
        # a reinstall unpacks the cache (seconds) onto a fresh file system
        self.gnt_instance("reinstall", "-f", name, timeout=180)
        self.assertEqual(debugfs_cat(images[0], "/etc/debian_version").split(".")[0],
                         host_major)
        self.gnt_instance("remove", "-f", name, timeout=120)
        self.assertFalse(os.path.exists(images[0]))


class KvmDebootstrapTest(KvmClusterCase):
    """The same package on a namespaced one-node cluster with a real guest: the
    Debian system it installs boots (QEMU through the node's libvirtd, our guest
    kernel and initramfs, the installed system's own systemd) to a ``login:``
    prompt on its serial console.  The node's network namespace cannot reach the
    mirror: the install comes from the package's cache, filled on this host first
    when no earlier test of the process did (see ``debootstrap_env.fill_cache``)."""

    NODES = 1
    REQUIRES = (*KvmClusterCase.REQUIRES, debootstrap_env.unavailable)
    #: A Debian system with systemd under TCG: ~20 s alone with 512 MiB.
    LOGIN_TIMEOUT = 300.0

    @classmethod
    def start_prefix(cls) -> list[str]:
        cls.suite, mirror = debootstrap_env.apt_source()
        cls.cache = debootstrap_env.shared_cache()
        cls.defaults = os.path.join(cls.tmp, "ganeti-instance-debootstrap")
        debootstrap_env.write_defaults(cls.defaults, cls.suite, mirror)
        debootstrap_env.fill_cache(cls.defaults, cls.cache, cls.suite)
        return debootstrap_env.mount_wrapper(cls.defaults, cls.cache)

    @classmethod
    def setUpCluster(cls) -> None:
        super().setUpCluster()
        for node in cls.state["nodes"]:
            debootstrap_env.link_os(node["root"])

    def test_debian_instance_boots_to_a_login_prompt(self) -> None:
        short = "deb1"
        name = self.instance_name(short)
        log = self.follow(1, name)
        start = time.monotonic()
        self.gnt("gnt-instance", "add", "-t", "file", "--disk", "0:size=1G", "-H", "kvm",
                 "-o", "debootstrap+default", "--no-name-check", "--no-ip-check",
                 "-B", "maxmem=512M,minmem=512M,vcpus=1", "-n", self.node_name(1), name,
                 timeout=INSTALL_TIMEOUT)
        created = time.monotonic()
        # the installed system's own init, not our initramfs's shell
        log.wait_for(r"systemd\[1\]|Welcome to .*Debian", timeout=self.LOGIN_TIMEOUT)
        prompt = log.wait_for(rf"^{short}(\.\S+)? login: ?$", timeout=self.LOGIN_TIMEOUT,
                              partial=True)
        print(f"\n  debootstrap create (from the cache) {created - start:.1f}s, "
              f"boot to {prompt.strip()!r} {time.monotonic() - created:.1f}s")
        self.assertNotIn("guest-initrd: no root file system", log.seen)
        status = self.gnt("gnt-instance", "list", "--no-headers", "-o", "status",
                          name).stdout.strip()
        self.assertEqual(status, "running")
        self.gnt("gnt-instance", "remove", "-f", name, timeout=180)
        self.assertNotIn(name, self.domains(1))
        self.assertFalse(self.qemu_pids(name))
