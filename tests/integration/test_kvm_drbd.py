"""A ``drbd`` disk under a real guest: the qemu mirror engine carries its data.

A two-node namespaced cluster with a volume group per node (loop devices, no
device-mapper).  The guest (no OS install: its initramfs finds no root file
system and opens a shell on the serial console) writes to ``/dev/vda``, which is
its node's qemu-storage-daemon's NBD export; what it writes, with ``fsync``, is
on both nodes' data volumes before the write returns.  Then the instance
fails over while a writer in the guest logs each sequence number it wrote with
``fsync`` (its QEMU stopped at once): none of the acknowledged numbers is
missing on the node it comes back on, whose writes are mirrored back; then it
live-migrates to its secondary (no disk copy: the destination opens its own
node's export), where its writes are mirrored the other way.  Two TCG boots, one
live migration.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET

from tests.integration.helpers import run
from tests.integration.kvmcluster import KvmClusterCase, SerialShell
from tests.integration.test_kvm_plain import SBIN, needs_lvm

SIZE_MIB = 1024
SECTOR = 512


class KvmDrbdTest(KvmClusterCase):
    LVM = True
    NODES = 2
    PREFIX = "ganeti-kvm-drbd-"
    REQUIRES = (*KvmClusterCase.REQUIRES, needs_lvm)

    def lvm_report(self, k: int, command: str, fields: str, *names: str
                   ) -> list[dict[str, str]]:
        env = {"LVM_SYSTEM_DIR": os.path.join(self.node(k)["root"], "etc", "lvm"),
               "LVM_SUPPRESS_FD_WARNINGS": "1", "LC_ALL": "C"}
        out = run([shutil.which("lvm", path=SBIN) or "lvm", command, "--reportformat", "json",
                   "--units", "b", "--nosuffix", "-o", fields, *names], env=env).stdout
        return [r for part in json.loads(out)["report"] for rows in part.values() for r in rows]

    def data_extent(self, k: int) -> tuple[str, int]:
        """(physical volume, byte offset) of node k's drbd data volume."""
        rows = [r for r in self.lvm_report(k, "lvs", "lv_name,devices,vg_extent_size")
                if r["lv_name"].endswith("_data")]
        self.assertEqual(len(rows), 1, rows)
        match = re.fullmatch(r"(/dev/loop\d+)\((\d+)\)", rows[0]["devices"])
        self.assertIsNotNone(match, rows)
        assert match is not None
        pv, first_pe = match.group(1), int(match.group(2))
        (pvrow,) = self.lvm_report(k, "pvs", "pv_name,pe_start", pv)
        return pv, int(pvrow["pe_start"]) + first_pe * int(rows[0]["vg_extent_size"])

    def on_volume(self, k: int, sector: int, length: int) -> bytes:
        pv, offset = self.data_extent(k)
        with open(pv, "rb") as f:
            f.seek(offset + sector * SECTOR)
            return f.read(length)

    def migrated_shell(self, k: int, name: str) -> SerialShell:
        """The guest's shell on node k after a migration: its serial socket is where the
        source's domain document put it (below the source node's root in a virtual
        cluster; on real nodes the same path everywhere)."""
        xml = ET.fromstring(self.virsh(k, "dumpxml", name))
        (path,) = [s.get("path") for s in xml.findall("devices/serial/source")]
        sh = SerialShell(path)
        self.addCleanup(sh.close)
        return sh

    def write(self, sh, text: str, sector: int) -> None:
        out = sh.run(f"echo {text} > /tmp/d && dd if=/tmp/d of=/dev/vda bs=512 "
                     f"seek={sector} conv=notrunc,fsync 2>/dev/null && echo written")
        self.assertIn("written", out)

    def wait_acks(self, sh: SerialShell, count: int) -> int:
        deadline = time.monotonic() + 60
        acked = 0
        while acked < count and time.monotonic() < deadline:
            sh.data += sh.sock.recv(65536)
            found = re.findall(rb"ACK-(\d+)", sh.data)
            acked = int(found[-1]) if found else 0
        self.assertGreaterEqual(acked, count, sh.data[-500:])
        return acked

    def test_data_mirrored_kept_across_a_failover_and_migrated(self) -> None:
        name = self.instance_name("mirror1")
        n1, n2 = self.node_name(1), self.node_name(2)
        log = self.follow(1, name)
        self.gnt("gnt-instance", "add", "-t", "drbd", "-s", f"{SIZE_MIB}M", "-o", "busybox",
                 "--no-install", "-H", "kvm", "--no-name-check", "--no-ip-check",
                 "-B", "maxmem=128M,minmem=128M,vcpus=1", "-n", f"{n1}:{n2}", name)
        remove = ("gnt-instance", "remove", "-f", "--shutdown-timeout=0", name)
        self.addCleanup(self.gnt, *remove, check=False)
        self.gnt("gnt-instance", "start", name)
        log.wait_for(r"no root file system")
        xml = self.virsh(1, "dumpxml", name)
        self.assertIn(f"<host name='{self.node(1)['ip']}'", xml)  # its node's export
        sh = self.shell(1, name)
        self.write(sh, "GANETI-DRBD-ONE", 1)
        for k in (1, 2):  # protocol C: on both sides once the write returned
            self.assertEqual(self.on_volume(k, 1, 15), b"GANETI-DRBD-ONE", k)

        # a writer logging each fsync'd sequence number; the instance fails over under
        # it (its QEMU stopped at once)
        sh.send("i=0; while true; do i=$((i+1)); echo SEQ-$i > /tmp/s; dd if=/tmp/s "
                "of=/dev/vda bs=512 seek=3 conv=notrunc,fsync 2>/dev/null && "
                "echo ACK-$i; done\n")
        self.wait_acks(sh, 20)
        log2 = self.follow(2, name)
        self.gnt("gnt-instance", "failover", "-f", "--shutdown-timeout=0", name)
        try:  # whatever the console printed before the guest stopped
            sh.sock.settimeout(0.5)
            while chunk := sh.sock.recv(65536):
                sh.data += chunk
        except OSError:
            pass
        last_ack = int(re.findall(rb"ACK-(\d+)", sh.data)[-1])
        sh.close()
        self.assertEqual((self.domains(1), self.domains(2)), ([], [name]))
        on_disk = self.on_volume(2, 3, 16).split(b"\n")[0]
        match = re.fullmatch(rb"SEQ-(\d+)", on_disk)
        self.assertIsNotNone(match, on_disk)
        assert match is not None
        print(f"\n  failover under a writer: last acknowledged {last_ack}, on the new "
              f"primary's disk {int(match.group(1))}")
        self.assertGreaterEqual(int(match.group(1)), last_ack)  # nothing acknowledged lost
        self.assertEqual(self.on_volume(2, 1, 15), b"GANETI-DRBD-ONE")

        log2.wait_for(r"no root file system")
        sh = self.shell(2, name)
        self.write(sh, "GANETI-DRBD-TWO", 2)
        for k in (1, 2):  # mirrored the other way now
            self.assertEqual(self.on_volume(k, 2, 15), b"GANETI-DRBD-TWO", k)
        sh.close()

        # the new primary's mirror resyncs the old one (a full copy: its daemon started
        # without a bitmap); a migration wants the target in sync
        self.gnt("gnt-instance", "activate-disks", "--wait-for-sync", name)
        start = time.monotonic()
        self.gnt("gnt-instance", "migrate", "-f", name)
        print(f"  live migration of the drbd guest (the whole job): "
              f"{time.monotonic() - start:.1f}s")
        self.assertEqual((self.domains(1), self.domains(2)), ([name], []))
        # the destination opened its own node's export, and what the guest's QEMU writes
        # now is mirrored to the new secondary (a write through its block layer: after a
        # migration inside one machine the serial socket is the source's path)
        self.assertIn(f"<host name='{self.node(1)['ip']}'", self.virsh(1, "dumpxml", name))
        device = "/machine/peripheral/virtio-disk0/virtio-backend"
        out = self.virsh(1, "qemu-monitor-command", name, "--hmp",
                         f'qemu-io -d {device} "write -P 0x5a {4 * SECTOR} {SECTOR}"')
        self.assertNotIn("rror", out)
        for k in (1, 2):
            self.assertEqual(self.on_volume(k, 4, SECTOR), b"\x5a" * SECTOR, k)
        self.assertEqual(self.on_volume(2, 2, 15), b"GANETI-DRBD-TWO")
        self.gnt(*remove)
        for k in (1, 2):
            self.assertEqual(self.lvm_report(k, "lvs", "lv_name"), [])
