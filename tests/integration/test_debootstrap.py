"""Debian's real OS definition, unchanged: ganeti-instance-debootstrap installs a
Debian system on a file disk of our one-node virtual cluster (fake hypervisor).

The package reads its settings from ``/etc/default/ganeti-instance-debootstrap``
and keeps its cache in ``/var/cache/ganeti-instance-debootstrap``.  The cluster's
daemons are started in a private mount namespace in which both are this test's
own (bind mounts): the suite and mirror apt uses (the only place packages come
from), ``PARTITION_STYLE=none`` (a partition table needs device-mapper, missing
here) and a cache in the test's directory; nothing outside it is written.  The
first install runs debootstrap (about 100 s); a reinstall is made from the cache.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import unittest

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.helpers import ROOT, VCLUSTER, node_env, run
from tests.integration.jobtools import VirtualCluster

PACKAGE_DIR = "/usr/share/ganeti/os/debootstrap"
DEFAULTS = "/etc/default/ganeti-instance-debootstrap"
CACHE = "/var/cache/ganeti-instance-debootstrap"
DEBIAN_GNT_INSTANCE = "/usr/share/ganeti/3.0/gnt-instance"
GNT_JOB = os.path.join(ROOT, "bin", "gnt-job")
INSTALL_TIMEOUT = 600


def apt_source() -> tuple[str, str]:
    """The suite and mirror apt installs this machine's packages from."""
    with open("/etc/os-release", encoding="utf-8") as f:
        release = dict(line.strip().split("=", 1) for line in f if "=" in line)
    suite = release["VERSION_CODENAME"].strip('"')
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path, encoding="utf-8") as f:
            for stanza in f.read().split("\n\n"):
                fields = dict(line.split(":", 1) for line in stanza.splitlines()
                              if ":" in line and not line.startswith("#"))
                if suite in fields.get("Suites", "").split():
                    return suite, fields["URIs"].split()[0]
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list", encoding="utf-8") as f:
            for line in f:
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                    return suite, words[1]
    raise AssertionError(f"no apt source for {suite}")


def debugfs_cat(image: str, path: str) -> str:
    return subprocess.run(["debugfs", "-R", f"cat {path}", image], capture_output=True,
                          check=True, text=True).stdout


class DebootstrapTest(SynchronousTestCase):
    @classmethod
    def setUpClass(cls):
        if not (os.path.isdir(PACKAGE_DIR) and shutil.which("debootstrap")
                and os.path.exists(DEBIAN_GNT_INSTANCE)):
            raise unittest.SkipTest("ganeti-instance-debootstrap, debootstrap and ganeti-3.0 "
                                    "are not installed (make test installs them)")
        if os.geteuid() != 0:
            raise unittest.SkipTest("debootstrap, mount and losetup need root")
        cls.cluster = VirtualCluster(prefix="ganeti-debootstrap-", nodes=1)
        try:
            cls.cluster.create(start=False)
            cls.node = cls.cluster.nodes[0]
            os_dir = os.path.join(cls.cluster.node_root(cls.node), "srv", "ganeti", "os")
            os.makedirs(os_dir, exist_ok=True)
            os.symlink(PACKAGE_DIR, os.path.join(os_dir, "debootstrap"))
            cls.cache = os.path.join(cls.cluster.tmp, "debootstrap-cache")
            os.makedirs(cls.cache)
            cls.suite, mirror = apt_source()
            defaults = os.path.join(cls.cluster.tmp, "ganeti-instance-debootstrap")
            with open(defaults, "w", encoding="ascii") as f:
                f.write(f'SUITE="{cls.suite}"\nMIRROR="{mirror}"\nPARTITION_STYLE="none"\n'
                        'GENERATE_CACHE="yes"\nCLEAN_CACHE=""\n')
            # every daemon of the cluster runs in the namespace with these two mounts
            script = ('mount --bind "$1" "$2" && mount --bind "$3" "$4" && shift 4 && '
                      'exec "$@"')
            run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                 defaults, DEFAULTS, cls.cache, CACHE, VCLUSTER, "start", cls.cluster.dir],
                timeout=120)
        except BaseException:
            cls.cluster.destroy()
            raise
        cls.env = node_env(cls.cluster.dir, cls.cluster.master)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.destroy()

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
