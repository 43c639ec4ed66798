"""Live migration of a real kvm guest (QEMU in TCG mode) between two nodes' libvirtds.

A namespaced 2-node virtual cluster (``ganeti-vcluster create --namespaces``: each
node its own network namespace and libvirtd) gets one kvm instance with the busybox
OS and a ``--template`` disk (``sharedfile``: the cluster's shared directory, so only
the memory moves; ``drbd``: each node's volume group, the qemu mirror engine keeping
both copies, migrated to its secondary); once it has booted it is migrated ``--count``
times back and forth with ``gnt-instance migrate -f [-n NODE]`` while the client
namespace pings it every 0.1 s.  For each migration the destination libvirtd's statistics of the
completed incoming job give the guest's downtime and the migration's duration; the
job's wall time is measured around the command.

Printed: downtime p50/p95/max (ms), libvirt's migration time and the job's wall time
(p50/p95, s), the memory moved, the disk libvirt copied (its storage migration), for
drbd what the mirror engine copied when each mirror started (from the node daemons'
logs), the pings lost over the whole run, and the
migration bandwidth used (``--bandwidth`` MiB/s, the cluster's kvm
``migration_bandwidth``; Ganeti's default is 32).

Run (root, ``make guest`` done): .venv/bin/python bench/bench_migration.py
     [--count 20] [--memory 256] [--bandwidth 1000] [--template sharedfile] [--keep DIR]
Never part of the test run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.cli import vcluster, vcluster_ns
from ganeti.cli.vcluster_demo_kvm import READY_MARKER, wait_ready

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VCLUSTER = [sys.executable, os.path.join(ROOT, "bin", "ganeti-vcluster")]
DOMAIN = "vcluster.test"
NODES = [f"node{k}.{DOMAIN}" for k in (1, 2)]
NAME = f"mig1.{DOMAIN}"


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def sh(directory: str, *argv: str, client: bool = False, check: bool = True,
       timeout: float = 600) -> subprocess.CompletedProcess:
    where = ["--client"] if client else []
    proc = subprocess.run([*VCLUSTER, "exec", directory, *where, "--", *argv],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n"
                         f"{proc.stdout}{proc.stderr}")
    return proc


def job_stats(root: str) -> dict[str, str]:
    """The destination libvirtd's statistics of its completed incoming migration."""
    out = subprocess.run(["virsh", "-c", vcluster_ns.libvirt_uri(root), "domjobinfo", NAME,
                          "--completed"], capture_output=True, text=True, check=True).stdout
    stats = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        stats[key.strip()] = value.strip()
    return stats


def number(text: str) -> float:
    got = re.match(r"[-0-9.]+", text)
    return float(got.group(0)) if got else float("nan")


def size_bytes(text: str) -> float:
    """libvirt's ``1.500 MiB`` as bytes."""
    got = re.match(r"([-0-9.]+)\s*([KMGT]?i?B)?", text.strip())
    if not got:
        return float("nan")
    scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
    return float(got.group(1)) * scale.get(got.group(2) or "B", 1)


def mirror_copies(logs: dict[str, str], offsets: dict[str, int]) -> tuple[list[int], int]:
    """From the node daemons' logs since ``offsets``: the bytes each start of a disk's
    mirror copied (its bitmap resync; 0 for a role swap), and the number of full syncs."""
    copied, full = [], 0
    for node, path in logs.items():
        with open(path, encoding="utf-8", errors="replace") as f:
            f.seek(offsets[node])
            for line in f:
                got = re.search(r"Mirror of \S+ to \S+ started \((\w+) sync\): (\d+) "
                                r"bytes (copied|to copy)", line)
                if got and got.group(1) == "full":
                    full += 1
                elif got:
                    copied.append(int(got.group(2)))
    return copied, full


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--memory", type=int, default=256, help="guest memory, MiB")
    ap.add_argument("--bandwidth", type=int, default=1000, help="migration MiB/s")
    ap.add_argument("--template", default="sharedfile")
    ap.add_argument("--keep", help="use (and keep) this cluster directory")
    opts = ap.parse_args()
    directory = opts.keep or tempfile.mkdtemp(prefix="bench-migration-")
    fresh = not os.path.exists(os.path.join(directory, "vcluster.json"))
    try:
        if fresh:
            lvm = ["--lvm"] if opts.template in ("plain", "drbd") else []
            subprocess.run([*VCLUSTER, "create", directory, "--namespaces", "--nodes", "2",
                            "--domain", DOMAIN, *lvm], check=True, capture_output=True)
        subprocess.run([*VCLUSTER, "start", directory], check=True, capture_output=True)
        templates = f"file,diskless,{opts.template}"
        sh(directory, "gnt-cluster", "modify", "--enabled-disk-templates", templates,
           "--ipolicy-disk-templates", templates, "-H",
           f"kvm:migration_bandwidth={opts.bandwidth}")
        roots = {n: os.path.realpath(os.path.join(directory, n)) for n in NODES}
        plan = vcluster_ns.plan_of(vcluster.VCluster.load(directory))
        assert plan is not None
        ip = plan.instance_ip(0)
        listed = sh(directory, "gnt-instance", "list", "--no-headers", "-o", "pnode", NAME,
                    check=False)
        if listed.returncode != 0:
            mem = f"{opts.memory}M"
            nodes = f"{NODES[1]}:{NODES[0]}" if opts.template == "drbd" else NODES[1]
            sh(directory, "gnt-instance", "add", "-t", opts.template, "-o", "busybox",
               "-H", "kvm", "--disk", "0:size=1G", "--net", f"0:ip={ip}",
               "--no-name-check", "--no-ip-check", "-B", f"maxmem={mem},minmem={mem}",
               "-n", nodes, NAME)
            node = NODES[1]
        else:
            node = listed.stdout.strip()
        log = os.path.join(roots[node], "var", "run", "ganeti", "kvm-hypervisor", "console",
                           f"{NAME}.log")
        if fresh and wait_ready(log, NAME) is None:
            raise SystemExit(f"no '{READY_MARKER} {NAME}' in {log}")
        if opts.template == "drbd":  # the initial resync ends before the first move
            sh(directory, "gnt-instance", "activate-disks", "--wait-for-sync", NAME)
        node_logs = {n: os.path.join(roots[n], "var", "log", "ganeti", "node-daemon.log")
                     for n in NODES}
        log_offsets = {n: os.path.getsize(p) if os.path.exists(p) else 0
                       for n, p in node_logs.items()}
        downtimes, libvirt_times, walls, moved, disk = [], [], [], [], []
        ping = subprocess.Popen([*VCLUSTER, "exec", directory, "--client", "--", "busybox",
                                 "ping", "-q", "-i", "0.1", ip], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            for _ in range(opts.count):
                target = NODES[0] if node == NODES[1] else NODES[1]
                began = time.monotonic()
                where = [] if opts.template == "drbd" else ["-n", target]  # to the secondary
                sh(directory, "gnt-instance", "migrate", "-f", *where, NAME)
                walls.append(time.monotonic() - began)
                stats = job_stats(roots[target])
                downtimes.append(number(stats.get("Total downtime", "nan")))
                libvirt_times.append(number(stats.get("Time elapsed", "nan")) / 1000)
                moved.append(number(stats.get("Memory processed", "nan")))
                # libvirt's storage migration (NBD copy of the disks) counts here
                disk.append(size_bytes(stats.get("File processed", "0 B")))
                node = target
        finally:
            os.killpg(ping.pid, signal.SIGINT)  # busybox ping prints its summary
            ping_out, _ = ping.communicate(timeout=30)
        print(f"kvm live migration, template {opts.template}, guest {opts.memory} MiB, "
              f"bandwidth {opts.bandwidth} MiB/s, {opts.count} migrations")
        print(f"  downtime ms     p50 {_pct(downtimes, .5):7.0f}  p95 {_pct(downtimes, .95):7.0f}"
              f"  max {max(downtimes):7.0f}")
        print(f"  libvirt time s  p50 {_pct(libvirt_times, .5):7.2f}  "
              f"p95 {_pct(libvirt_times, .95):7.2f}")
        print(f"  job wall s      p50 {_pct(walls, .5):7.2f}  p95 {_pct(walls, .95):7.2f}")
        print(f"  memory moved    p50 {_pct(moved, .5):7.1f} MiB")
        print(f"  disk copied by the migrations: {sum(disk):.0f} bytes (libvirt's storage "
              "migration)")
        if opts.template == "drbd":
            copied, full = mirror_copies(node_logs, log_offsets)
            print(f"  mirror engine: {len(copied)} mirror starts, {sum(copied)} bytes "
                  f"copied by their resyncs (max {max(copied, default=0)}), "
                  f"{full} full syncs")
        for line in ping_out.splitlines():
            if "packets" in line:
                print(f"  pings           {line.strip()}")
        return 0
    finally:
        if not opts.keep:
            subprocess.run([*VCLUSTER, "destroy", directory], capture_output=True, check=False)
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
