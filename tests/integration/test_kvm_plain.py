"""A ``plain`` disk under a real guest, without device-mapper: on a one-node namespaced
cluster (its node's volume group on a loop device, ganeti.cli.vcluster_lvm) a kvm
instance's disk is its logical volume's extent on the physical volume; what the guest
writes to ``/dev/vda`` lands there.  One TCG boot (no OS install: an OS script would
need the volume's device, which only device-mapper makes; the guest's initramfs
finds no root file system and opens a shell on the serial console)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time

from tests.integration.helpers import run
from tests.integration.kvmcluster import KvmClusterCase

SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DATA = "GANETI-PLAIN-VOLUME-DATA"
SIZE = 1024 * 1024 * 1024


def needs_lvm() -> str | None:
    """A ``REQUIRES`` check: lvm2 and losetup."""
    missing = [t for t in ("lvm", "losetup") if not shutil.which(t, path=SBIN)]
    return f"missing {', '.join(missing)} (packages lvm2, mount)" if missing else None


class KvmPlainDiskTest(KvmClusterCase):
    LVM = True
    NODES = 1
    PREFIX = "ganeti-kvm-plain-"
    REQUIRES = (*KvmClusterCase.REQUIRES, needs_lvm)

    def lvm_report(self, command: str, fields: str, *names: str) -> list[dict[str, str]]:
        """A report in bytes, as the node's own LVM sees it."""
        env = {"LVM_SYSTEM_DIR": os.path.join(self.node(1)["root"], "etc", "lvm"),
               "LVM_SUPPRESS_FD_WARNINGS": "1", "LC_ALL": "C"}
        out = run([shutil.which("lvm", path=SBIN) or "lvm", command, "--reportformat", "json",
                   "--units", "b", "--nosuffix", "-o", fields, *names], env=env).stdout
        return [r for part in json.loads(out)["report"] for rows in part.values() for r in rows]

    def test_guest_writes_reach_the_volume_extent(self) -> None:
        name = self.instance_name("lv1")
        self.assertIn("lvm", self.state)
        log = self.follow(1, name)
        self.gnt("gnt-instance", "add", "-t", "plain", "-s", "1G", "-o", "busybox",
                 "--no-install", "-H", "kvm", "--no-name-check", "--no-ip-check",
                 "-B", "maxmem=128M,minmem=128M,vcpus=1", "-n", self.node_name(1), name)
        # the initramfs's shell ignores ACPI: no shutdown timeout to wait for
        remove = ("gnt-instance", "remove", "-f", "--shutdown-timeout=0", name)
        self.addCleanup(self.gnt, *remove, check=False)
        start = time.monotonic()
        self.gnt("gnt-instance", "start", name)  # --no-install leaves it stopped
        log.wait_for(r"no root file system")
        print(f"\n  start + boot to the initramfs shell: {time.monotonic() - start:.1f}s")
        (lv,) = self.lvm_report("lvs", "lv_name,lv_size,devices,vg_extent_size")
        self.assertEqual(int(lv["lv_size"]), SIZE)
        match = re.fullmatch(r"(/dev/loop\d+)\((\d+)\)", lv["devices"])
        self.assertIsNotNone(match, lv)
        pv, first_pe = match.group(1), int(match.group(2))
        (pvrow,) = self.lvm_report("pvs", "pv_name,pe_start", pv)
        offset = int(pvrow["pe_start"]) + first_pe * int(lv["vg_extent_size"])
        xml = self.virsh(1, "dumpxml", name)
        self.assertIn(f"<source dev='{pv}'", xml)
        self.assertRegex(xml, rf"<slice type='storage' offset='{offset}' "
                              rf"size='{SIZE}'/>")
        sh = self.shell(1, name)
        self.assertEqual(int(sh.run("cat /sys/block/vda/size")) * 512, SIZE)
        sh.run(f"echo {DATA} > /tmp/d && dd if=/tmp/d of=/dev/vda bs=512 seek=1 "
               "conv=notrunc,fsync 2>/dev/null; sync; echo done")
        sh.close()
        with open(pv, "rb") as f:
            f.seek(offset + 512)
            self.assertEqual(f.read(len(DATA)), DATA.encode())
        self.gnt(*remove)
        self.assertEqual(self.lvm_report("lvs", "lv_name"), [])
