"""A volume group per node of a virtual cluster (root: loop devices and LVM metadata;
no device-mapper): ``plain`` instances through our gnt-* and Debian's, the volume on
its node's group only, the machine's LVM undisturbed, teardown that leaves no loop
device, and a start that re-attaches what a reboot (or a crash) left detached."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys

from tests.integration.clustercase import ClusterCase, needs_debian_tool, needs_root
from tests.integration.helpers import BIN, VCLUSTER, node_env, run

DEBIAN = "/usr/share/ganeti/3.0"
VG = "xenvg"
INSTANCE = "lv1.vcluster.test"
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def needs_lvm() -> str | None:
    """A ``REQUIRES`` check: lvm2 and losetup."""
    missing = [t for t in ("lvm", "losetup") if not shutil.which(t, path=SBIN)]
    return f"missing {', '.join(missing)} (packages lvm2, mount)" if missing else None


def lvm_env(root: str) -> dict[str, str]:
    return {"LVM_SYSTEM_DIR": os.path.join(root, "etc", "lvm"), "LVM_SUPPRESS_FD_WARNINGS": "1",
            "LC_ALL": "C"}


def lvm_rows(root: str | None, command: str, fields: str) -> list[dict[str, str]]:
    """An LVM report as the node at ``root`` sees it (None: the machine's own LVM)."""
    env = lvm_env(root) if root else {"LVM_SUPPRESS_FD_WARNINGS": "1", "LC_ALL": "C"}
    proc = run([shutil.which("lvm", path=SBIN) or "lvm", command, "--reportformat", "json",
                "--units", "m", "--nosuffix", "-o", fields], env=env)
    return [row for part in json.loads(proc.stdout)["report"] for rows in part.values()
            for row in rows]


def loops_backed_by(path: str) -> list[str]:
    """Loop devices whose backing file lies below directory ``path`` (deleted or not),
    or is the device ``path``."""
    out = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE"],
                         capture_output=True, text=True, check=False).stdout
    devices = json.loads(out)["loopdevices"] if out.strip() else []
    real = os.path.realpath(path)
    return [d["name"] for d in devices
            if (d.get("back-file") or "").startswith(real + "/")
            or (d.get("back-file") or "") == real]


class VClusterLvmTest(ClusterCase):
    """Tests run in name order on one 3-node cluster."""

    LVM = True

    PREFIX = "ganeti-vcluster-lvm-"
    NODES = 3
    REQUIRES = (needs_root, needs_lvm, needs_debian_tool("gnt-instance", "gnt-node",
                                                              "gnt-cluster"))

    def node(self, k: int) -> str:
        return self.cluster.master.replace("node1", f"node{k}")

    def root(self, k: int) -> str:
        return self.cluster.node_root(self.node(k))

    def ours(self, tool: str, *argv: str) -> str:
        return self.tool(os.path.join(BIN, tool), *argv)

    def debian(self, tool: str, *argv: str) -> str:
        return self.tool(os.path.join(DEBIAN, tool), *argv, debian=True)

    def volumes(self, k: int) -> dict[str, float]:
        """``{lv: MiB}`` of node k's volume group, as its own LVM sees it."""
        return {r["lv_name"]: float(r["lv_size"])
                for r in lvm_rows(self.root(k), "lvs", "vg_name,lv_name,lv_size")
                if r["vg_name"] == VG}

    def verify_clean(self) -> None:
        """Our and Debian's ``gnt-cluster verify`` find nothing (but this machine's
        missing sysrq, if a container: ENODESETUP)."""
        for argv in ([sys.executable, os.path.join(BIN, "gnt-cluster")],
                     [os.path.join(DEBIAN, "gnt-cluster")]):
            r = run([*argv, "verify", "--error-codes", "-I", "ENODESETUP"], env=self.env,
                    check=False, timeout=180)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            findings = [line for line in (r.stdout + r.stderr).splitlines()
                        if ("ERROR" in line or "WARNING" in line) and "ENODESETUP" not in line]
            self.assertEqual(findings, [])

    def test_1_each_node_sees_its_own_group(self):
        state = self.cluster.state
        self.assertEqual(state["lvm"], {"vg": VG, "size_mib": 20480})
        devices = set()
        for k in (1, 2, 3):
            vgs = lvm_rows(self.root(k), "vgs", "vg_name,vg_size,pv_name")
            self.assertEqual([(r["vg_name"], float(r["vg_size"])) for r in vgs],
                             [(VG, 20480.0)])
            devices.add(vgs[0]["pv_name"])
            self.assertEqual(loops_backed_by(self.root(k)), [vgs[0]["pv_name"]])
        self.assertEqual(len(devices), 3)
        info = self.ours("gnt-cluster", "info")
        self.assertRegex(info, rf"lvm volume group: {VG}\b")
        enabled = info.split("enabled disk templates:")[1].splitlines()[0]
        self.assertEqual(enabled.split(), ["file,", "diskless,", "plain,", "drbd"])
        storage = self.debian("gnt-node", "list-storage", "-t", "lvm-vg", "--no-headers",
                              "-o", "node,name,size")
        rows = sorted(line.split() for line in storage.splitlines())
        self.assertEqual(rows, [[self.node(k), VG, "20.0G"] for k in (1, 2, 3)])
        self.verify_clean()

    def test_2_plain_instance_lifecycle(self):
        # the OS create script writes the volume through a loop device over its extent
        self.debian("gnt-instance", "add", "-t", "plain", "-s", "1G", "-o", "busybox",
                    "--no-name-check", "--no-ip-check", "-n", self.node(2),
                    "-B", "maxmem=128M,minmem=128M", INSTANCE)
        lvs = self.volumes(2)
        self.assertEqual(len(lvs), 1, lvs)
        (lv, size), = lvs.items()
        self.assertRegex(lv, r"^[0-9a-f-]{36}\.disk0$")
        self.assertEqual(size, 1024.0)
        (row,) = lvm_rows(self.root(2), "lvs", "devices")
        device, first_pe = re.fullmatch(r"(/dev/loop\d+)\((\d+)\)", row["devices"]).groups()
        (pv,) = lvm_rows(self.root(2), "pvs", "pe_start")
        with open(device, "rb") as f:  # ext4's magic in the volume's first extent
            f.seek(int(float(pv["pe_start"]) * 1024 * 1024) + int(first_pe) * 4 * 1024 * 1024
                   + 1080)
            self.assertEqual(f.read(2), b"\x53\xef")
        self.assertEqual(loops_backed_by(device), [])  # the script's loop is detached
        self.assertEqual((self.volumes(1), self.volumes(3)), ({}, {}))
        # the machine's own LVM (no system ID) takes the node's group for a foreign one:
        # its reports (and a real Ganeti beside, the oracle's) do not see it
        seen = lvm_rows(None, "lvs", "vg_name,lv_name")
        self.assertNotIn({"vg_name": VG, "lv_name": lv}, seen)
        foreign = run([shutil.which("lvm", path=SBIN) or "lvm", "lvs", "--foreign",
                       "--noheadings", "-o", "lv_name,vg_systemid"],
                      env={"LVM_SUPPRESS_FD_WARNINGS": "1", "LC_ALL": "C"}).stdout
        self.assertIn(lv, foreign)
        for volumes in (self.ours("gnt-node", "volumes", "--no-headers", "-o",
                                  "node,vg,name,size,instance"),
                        self.debian("gnt-node", "volumes", "--no-headers", "-o",
                                    "node,vg,name,size,instance")):
            self.assertEqual([line.split() for line in volumes.splitlines()],
                             [[self.node(2), VG, lv, "1.0G", INSTANCE]])
        info = self.debian("gnt-instance", "info", INSTANCE)
        self.assertIn("Disk template: plain", info)
        self.assertIn(f"logical_id: {VG}/{lv}", info)
        # conversions copy the data at the volume's extent (no device-mapper)
        self.debian("gnt-instance", "shutdown", "--timeout=0", INSTANCE)
        self.debian("gnt-instance", "modify", "-t", "file", INSTANCE)
        self.assertEqual(self.volumes(2), {})
        (image,) = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(
            self.root(2), "srv", "ganeti", "file-storage")) for f in files]
        with open(image, "rb") as f:
            f.seek(1080)
            self.assertEqual(f.read(2), b"\x53\xef")
        self.debian("gnt-instance", "modify", "-t", "plain", INSTANCE)
        ((lv, size),) = self.volumes(2).items()
        self.assertEqual(size, 1024.0)
        self.ours("gnt-instance", "grow-disk", INSTANCE, "0", "512M")
        self.assertEqual(self.volumes(2), {lv: 1536.0})
        self.debian("gnt-instance", "grow-disk", INSTANCE, "0", "512M")
        self.assertEqual(self.volumes(2), {lv: 2048.0})
        out = self.debian("gnt-instance", "list", "--no-headers", "-o", "disk.sizes", INSTANCE)
        self.assertEqual(out.strip(), "2048")  # a list field: MiB, unformatted (Ganeti)
        self.verify_clean()
        self.debian("gnt-instance", "remove", "-f", INSTANCE)
        self.assertEqual([self.volumes(k) for k in (1, 2, 3)], [{}, {}, {}])

    def test_3_drbd_instance_lifecycle(self):
        name = "dr1.vcluster.test"
        self.debian("gnt-instance", "add", "-t", "drbd", "-s", "1G", "-o", "busybox",
                    "--no-name-check", "--no-ip-check", "-n", f"{self.node(2)}:{self.node(3)}",
                    "-B", "maxmem=128M,minmem=128M", name)
        sides = [self.volumes(2), self.volumes(3)]
        self.assertEqual(sides[0], sides[1])
        self.assertEqual(sorted(sides[0].values()), [128.0, 1024.0])
        data = next(lv for lv in sides[0] if lv.endswith(".disk0_data"))
        self.assertIn(data.replace("_data", "_meta"), sides[0])
        self.assertEqual(self.volumes(1), {})
        info = self.debian("gnt-instance", "info", name)
        self.assertIn("disk/0: drbd, size 1.0G", info)
        self.assertRegex(info, r"on primary: /dev/drbd\d+ \(147:\d+\) in sync, status ok")
        self.assertRegex(info, r"on secondary: /dev/drbd\d+ \(147:\d+\) in sync, status ok")
        self.assertIn(f"logical_id: {VG}/{data}", info)
        self.verify_clean()
        self.debian("gnt-instance", "grow-disk", name, "0", "512M")
        self.assertEqual([self.volumes(k)[data] for k in (2, 3)], [1536.0, 1536.0])
        self.debian("gnt-instance", "remove", "-f", name)
        self.assertEqual([self.volumes(k) for k in (1, 2, 3)], [{}, {}, {}])

    def primary_secondary(self, name: str) -> list[str]:
        return self.debian("gnt-instance", "list", "--no-headers", "--separator=|", "-o",
                           "pnode,snodes", name).strip().split("|")

    def test_4_drbd_instance_moves_with_debian_clients(self):
        """Debian's gnt-instance migrates, fails over and replaces the secondary of a
        running drbd instance (fake hypervisor, the emulated mirror between the node
        daemons), and Debian's harep repairs it after its primary died, with its tags:
        a failover, then a new secondary."""
        name = "dm1.vcluster.test"
        # a new secondary resyncs the whole disk: at 1 GiB/s rather than DRBD's 60 MiB/s
        self.debian("gnt-cluster", "modify", "-D", "drbd:resync-rate=1048576")
        self.debian("gnt-instance", "add", "-t", "drbd", "-s", "1G", "-o", "busybox",
                    "--no-name-check", "--no-ip-check", "-n", f"{self.node(2)}:{self.node(3)}",
                    "-B", "maxmem=128M,minmem=128M", name)
        log = self.debian("gnt-instance", "migrate", "-f", name)
        self.assertIn("* changing disks into dual-master mode", log)
        self.assertEqual(self.primary_secondary(name), [self.node(3), self.node(2)])
        self.debian("gnt-instance", "failover", "-f", name)
        self.assertEqual(self.primary_secondary(name), [self.node(2), self.node(3)])
        info = self.debian("gnt-instance", "info", name)
        self.assertRegex(info, r"on secondary: /dev/drbd\d+ \(147:\d+\) in sync, status ok")
        # a new secondary: volumes made on node1, the mirror resynced, node3's gone
        self.debian("gnt-instance", "replace-disks", "-n", self.node(1), name)
        self.assertEqual(self.primary_secondary(name), [self.node(2), self.node(1)])
        self.assertEqual(self.volumes(3), {})
        self.assertEqual(sorted(self.volumes(1).values()), [128.0, 1024.0])
        self.verify_clean()
        # harep: the primary died (its node daemon stopped: its mirror's end is gone)
        # and is marked offline; the instance's tag allows a failover
        self.debian("gnt-instance", "add-tags", name, "ganeti:watcher:autorepair:failover")
        pid_file = os.path.join(self.root(2), "var", "run", "ganeti", "ganeti-noded.pid")
        with open(pid_file, encoding="ascii") as f:
            os.kill(int(f.read().split()[0]), signal.SIGTERM)
        self.debian("gnt-node", "modify", "-O", "yes", self.node(2))
        try:
            # run 1 fails it over (pending:failover); run 2 records that and, the
            # secondary being the offline node now, replaces it (pending:fix-storage,
            # hail chooses); run 3 records that
            harep = ["/usr/bin/harep", f"-L{self.cluster.socket}", "--job-delay=0"]
            jobs: list[str] = []
            for _ in range(4):
                r = run(harep, env=self.env, check=False, timeout=120)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                tags = self.debian("gnt-instance", "list-tags", name).split()
                pending = [t for t in tags if t.startswith("ganeti:watcher:autorepair:pending:")]
                if not pending:
                    break
                jobs.append(pending[0].rsplit(":", 1)[-1])
                self.debian("gnt-job", "watch", jobs[-1])
            self.assertEqual(self.primary_secondary(name), [self.node(1), self.node(3)])
            results = [t for t in tags if t.startswith("ganeti:watcher:autorepair:result:")]
            self.assertEqual(len(results), 1, tags)
            self.assertRegex(results[0],
                             r"^ganeti:watcher:autorepair:result:fix-storage:.*:success:\d+$",
                             self.debian("gnt-job", "info", results[0].rsplit(":", 1)[-1]))
            self.assertEqual(len(jobs), 2, tags)
            self.assertIn("OP_INSTANCE_FAILOVER", self.debian("gnt-job", "info", jobs[0]))
            self.assertIn("OP_INSTANCE_REPLACE_DISKS", self.debian("gnt-job", "info", jobs[1]))
        finally:
            started = run([VCLUSTER, "start", self.cluster.dir], check=False, timeout=120)
        self.assertEqual(started.returncode, 0, started.stdout + started.stderr)
        self.debian("gnt-node", "modify", "--force", "-O", "no", self.node(2))
        stale = self.volumes(2)  # left when its node was offline (Ganeti's orphans)
        self.assertEqual(sorted(stale.values()), [128.0, 1024.0])
        self.debian("gnt-instance", "remove", "-f", name)
        self.assertEqual([self.volumes(k) for k in (1, 2, 3)], [{}, stale, {}])
        r = run([os.path.join(DEBIAN, "gnt-cluster"), "verify", "--error-codes"],
                env=self.env, check=False, timeout=180)
        for lv in stale:
            self.assertRegex(r.stdout, rf"ENODEORPHANLV:node:{self.node(2)}:.*{VG}/{lv}")


class VClusterLvmTeardownTest(ClusterCase):
    """Clusters of the tests' own: destroy, a reboot's detached loop devices, a crash."""

    LVM = True

    PREFIX = "ganeti-vcluster-lvm-td-"
    NODES = 1
    CLUSTER = False
    REQUIRES = (needs_root, needs_lvm)

    def test_destroy_leaves_no_loop_device(self):
        cluster = self.new_cluster(start=False)
        self.assertEqual(len(loops_backed_by(cluster.dir)), 1)
        run([VCLUSTER, "destroy", cluster.dir], timeout=120)
        self.assertEqual(loops_backed_by(cluster.tmp), [])

    def test_start_reattaches_detached_loop_devices(self):
        cluster = self.new_cluster(start=False)
        root = cluster.node_root(cluster.nodes[0])
        (device,) = loops_backed_by(root)
        run(["losetup", "-d", device])  # what a reboot does
        cluster.start()
        (again,) = loops_backed_by(root)
        with open(os.path.join(root, "etc", "lvm", "lvm.conf"), encoding="utf-8") as f:
            self.assertIn(f'"a|^{again}$|"', f.read())
        self.assertEqual([r["vg_name"] for r in lvm_rows(root, "vgs", "vg_name")], [VG])
        env = node_env(cluster.dir, cluster.master)
        out = run([sys.executable, os.path.join(BIN, "gnt-node"), "list-storage", "-t",
                   "lvm-vg", "--no-headers", "-o", "node,name"], env=env).stdout
        self.assertEqual(sorted(line.split() for line in out.splitlines()),
                         [[n, VG] for n in cluster.nodes])

    def test_crashed_run_is_cleaned_up_by_the_next_create(self):
        crashed = self.new_cluster(start=False)
        left = loops_backed_by(crashed.dir)
        self.assertEqual(len(left), 1)
        shutil.rmtree(crashed.dir)  # the run died: no destroy, its directory removed
        self.assertEqual(loops_backed_by(crashed.dir), left)
        self.new_cluster(start=False)
        self.assertEqual(loops_backed_by(crashed.dir), [])

    def test_no_lvm(self):
        tmp = os.path.abspath(self.mktemp())
        run([VCLUSTER, "create", tmp, "--no-lvm", "--nodes", "1"])
        self.addCleanup(run, [VCLUSTER, "destroy", tmp], check=False)
        with open(os.path.join(tmp, "vcluster.json"), encoding="utf-8") as f:
            self.assertNotIn("lvm", json.load(f))
        self.assertEqual(loops_backed_by(tmp), [])
        self.assertFalse(os.path.exists(os.path.join(tmp, "node1.vcluster.test", "etc", "lvm")))
