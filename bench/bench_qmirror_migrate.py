"""Live migration of a TCG guest whose disk is the qemu mirror engine: only memory moves.

Two network namespaces ("nodes" A and B, 10.231.<n>.1/.2 on a veth pair), each
with the engine's qemu-storage-daemon over a data file (A primary, mirroring
synchronously to B).  A QEMU (TCG, 256 MiB, the project's guest kernel and
initramfs, a busybox root disk made by the busybox OS definition) runs in A's
namespace with its disk opened over NBD from A's daemon.  Each run migrates it
to the other node with QEMU's own migration over QMP: the destination QEMU
(``-incoming``, ``-S``) opens *its* node's daemon, the source migrates memory
only; when the migration completes the engine swaps the roles (the old
primary stops its ready mirror, the new one mirrors back with ``sync=none``)
and the destination is resumed.  Printed per RUNS migrations: QEMU's
``downtime`` and ``total-time`` (query-migrate), the role swap, and the pause
the guest sees (downtime + swap + ``cont``), p50/p95/max; the bytes each swap
copied.  The guest writes all along (a counter to a file, ``sync`` after each
value); at the end it reports how many values it synced and both data files
must be equal.

Needs root, qemu-system-x86_64, the guest files (``make guest``; GANETI_GUEST_DIR)
and the busybox OS's tools.  Run:
GANETI_GUEST_DIR=/work/main/.cache/guest .venv/bin/python bench/bench_qmirror_migrate.py \
    [RUNS] [WRITETHROUGH]
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from twisted.internet import defer, endpoints, protocol, task

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.cli import guestfiles
from ganeti.core import paths as pathsmod
from ganeti.noded.bdev import qmp
from ganeti.noded.bdev.qmirror import MirrorDaemon, Volume
from ganeti.noded.bdev.qmirror_roles import QemuMirror
from ganeti.noded.procs import ChildProcesses

MIB = 1024 * 1024
PORT = 7789
MIGRATION_PORT = 8102  # Ganeti's kvm migration_port default
IP = shutil.which("ip")
#: busybox's shell prompt (its line editing then asks for the cursor: ESC [6n)
PROMPT = re.compile(rb"\n# (\x1b\[6n)?$")


def sh(*argv):
    subprocess.run(argv, check=True)


def namespaces(tag):
    names = [f"qmb{tag}a", f"qmb{tag}b"]
    ips = [f"10.231.{tag % 250}.1", f"10.231.{tag % 250}.2"]
    for ns in names:
        sh(IP, "netns", "add", ns)
        sh(IP, "-n", ns, "link", "set", "lo", "up")
    sh(IP, "link", "add", "va", "netns", names[0], "type", "veth", "peer", "name", "vb",
       "netns", names[1])
    for ns, dev, ip in zip(names, ("va", "vb"), ips, strict=True):
        sh(IP, "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
        sh(IP, "-n", ns, "link", "set", dev, "up")
    return names, ips


def boot_disk(path):
    with open(path, "wb") as f:
        f.truncate(64 * MIB)
    env = {"PATH": "/sbin:/bin:/usr/sbin:/usr/bin", "INSTANCE_NAME": "guest1.example.com",
           "OS_API_VERSION": "20", "OS_VARIANT": "default", "DISK_COUNT": "1",
           "DISK_0_PATH": path, "NIC_COUNT": "0", "HYPERVISOR": "kvm"}
    subprocess.run([os.path.join(pathsmod.shipped_os_dir("busybox"), "create")], env=env,
                   check=True, capture_output=True)


class Console(protocol.Protocol):
    """A guest's serial console (QEMU's UNIX socket): its output, and typing."""

    def __init__(self):
        self.output = b""
        self.waiters = []

    def dataReceived(self, data):
        self.output += data
        for item in list(self.waiters):
            pattern, since, d = item
            m = pattern.search(self.output, since)
            if m:
                self.waiters.remove(item)
                d.callback(m)

    def wait_for(self, reactor, pattern, timeout, since=0):
        d = defer.Deferred()
        m = pattern.search(self.output, since)
        if m:
            return defer.succeed(m)
        self.waiters.append((pattern, since, d))
        return d.addTimeout(timeout, reactor)

    def send(self, text):
        mark = len(self.output)
        self.transport.write(text)
        return mark


async def console_of(reactor, path):
    for _ in range(200):
        if os.path.exists(path):
            proto = Console()
            await endpoints.connectProtocol(endpoints.UNIXClientEndpoint(reactor, path), proto)
            return proto
        await task.deferLater(reactor, 0.05, lambda: None)
    raise RuntimeError(f"no console at {path}")


def start_qemu(guest, ns, ip, base, name, incoming=None):
    sock = os.path.join(base, f"{name}.qmp")
    console = os.path.join(base, f"{name}.serial")
    nbd = {"driver": "nbd", "node-name": "nbd0", "export": "disk", "reconnect-delay": 10,
           "server": {"type": "inet", "host": ip, "port": str(PORT)}}
    argv = [IP, "netns", "exec", ns, shutil.which("qemu-system-x86_64"), "-accel", "tcg",
            "-m", "256", "-display", "none", "-nic", "none", "-no-reboot",
            "-kernel", guest.kernel, "-initrd", guest.initrd,
            "-append", f"{guest.kernel_args} root={guest.root_path}",
            "-blockdev", json.dumps(nbd),
            "-blockdev", json.dumps({"driver": "raw", "file": "nbd0", "node-name": "vd0"}),
            "-device", "virtio-blk-pci,drive=vd0,id=vd0dev",
            "-serial", f"unix:{console},server=on,wait=on", "-monitor", "none",
            "-qmp", f"unix:{sock},server=on,wait=off"]
    if incoming:
        argv += ["-S", "-incoming", incoming]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    return proc, sock, console


async def qmp_of(reactor, sock):
    for _ in range(200):
        if os.path.exists(sock):
            try:
                return await qmp.connect(reactor, reactor, sock)
            except Exception:
                pass
        await task.deferLater(reactor, 0.05, lambda: None)
    raise RuntimeError(f"no QMP at {sock}")


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


async def main(reactor, runs=20, writethrough=0):
    runs, writethrough = int(runs), bool(int(writethrough))
    guest = guestfiles.find_guest()
    if guest is None or os.geteuid() != 0:
        raise SystemExit("needs root and the guest files (GANETI_GUEST_DIR, make guest)")
    base = tempfile.mkdtemp(prefix="qmm", dir="/tmp")
    tag = os.getpid() % 250
    names, ips = namespaces(tag)
    children = ChildProcesses(reactor, reactor)
    daemons, mirrors, procs = [], [], []
    try:
        for i in range(2):
            path = os.path.join(base, f"data{i}.img")
            if i == 0:
                boot_disk(path)
            else:
                shutil.copyfile(os.path.join(base, "data0.img"), path)
            d = MirrorDaemon(reactor, reactor, children, os.path.join(base, f"run{i}"), "m",
                             Volume(path), ips[i], PORT, peer_writethrough=writethrough,
                             prefix=[IP, "netns", "exec", names[i]])
            await d.start()
            daemons.append(d)
            mirrors.append(QemuMirror(d))
        await mirrors[0].connect_peer(ips[1], PORT, sync="none")  # identical copies
        await mirrors[0].wait_in_sync(60)
        proc, sock, serial = start_qemu(guest, names[0], ips[0], base, "vm0")
        procs.append(proc)
        t0 = time.monotonic()
        console = await console_of(reactor, serial)
        src = await qmp_of(reactor, sock)
        await console.wait_for(reactor, re.compile(rb"GANETI-GUEST-READY"), 120)
        print(f"guest booted from the mirrored NBD disk in {time.monotonic() - t0:.1f} s")
        # the guest writes all along: a counter to a file, each value synced to the disk
        mark = console.send(b"\n")
        await console.wait_for(reactor, PROMPT, 30, since=mark)
        console.send(b"(i=0; while true; do i=$((i+1)); echo $i > /c.new; mv /c.new /cnt; "
                     b"sync; done) &\n")
        down, total, swap, cont, pause, swapped = [], [], [], [], [], []
        cur = 0
        for run in range(runs):
            nxt = 1 - cur
            dproc, dsock, dserial = start_qemu(guest, names[nxt], ips[nxt], base,
                                               f"vm{run + 1}",
                                               incoming=f"tcp:{ips[nxt]}:{MIGRATION_PORT}")
            procs.append(dproc)
            dconsole = await console_of(reactor, dserial)
            dst = await qmp_of(reactor, dsock)
            await mirrors[nxt].prepare_peer(ips[cur], PORT)
            await src.execute("migrate-set-parameters",
                              {"downtime-limit": 30, "max-bandwidth": 1000 * MIB})
            await src.execute("migrate", {"uri": f"tcp:{ips[nxt]}:{MIGRATION_PORT}"})
            while True:
                info = await src.execute("query-migrate")
                if info.get("status") in ("completed", "failed", "cancelled"):
                    break
                await task.deferLater(reactor, 0.01, lambda: None)
            if info["status"] != "completed":
                raise RuntimeError(f"migration {run} failed: {info}")
            t0 = time.monotonic()
            # the old primary's job stops while the new one's starts; the destination
            # runs once both are done (no write may loop between the two mirrors)
            stopped = defer.ensureDeferred(mirrors[cur].stop_mirror())
            swapped.append(await mirrors[nxt].connect_peer(ips[cur], PORT, sync="none"))
            await stopped
            t1 = time.monotonic()
            # (while the destination still loads, ``cont`` only sets it to start when done)
            await dst.execute("cont")
            for _ in range(1000):
                status = await dst.execute("query-status")
                if status["status"] != "inmigrate":
                    break
                await task.deferLater(reactor, 0.002, lambda: None)
            t2 = time.monotonic()
            assert status["status"] == "running", status
            await mirrors[cur].make_secondary()  # tidy up, off the guest's pause
            down.append(info["downtime"])
            total.append(info["total-time"])
            swap.append((t1 - t0) * 1000)
            cont.append((t2 - t1) * 1000)
            pause.append(info["downtime"] + (t2 - t0) * 1000)
            await src.execute("quit")
            src, cur, console = dst, nxt, dconsole
        mark = console.send(b"kill $!; sync; echo CNT=$(cat /cnt)\n")
        try:
            count = int((await console.wait_for(reactor, re.compile(rb"CNT=(\d+)"), 60,
                                                since=mark)).group(1))
        except defer.TimeoutError:
            raise SystemExit("the guest did not answer; its console:\n"
                             + console.output[-2000:].decode(errors="replace")) from None
        st = await mirrors[cur].wait_in_sync(60)
        for label, vals in (("QEMU downtime", down), ("QEMU total-time", total),
                            ("role swap", swap), ("destination loaded and running", cont),
                            ("guest pause (downtime+swap+cont)", pause)):
            print(f"{label}: p50 {statistics.median(vals):.1f} ms, p95 {pct(vals, 0.95):.1f} ms,"
                  f" max {max(vals):.1f} ms ({runs} runs)")
        print(f"bytes copied by the role swaps: {sum(swapped)}; mirror in sync at the end: "
              f"{st.in_sync}")
        await src.execute("quit")
        await task.deferLater(reactor, 0.5, lambda: None)
        same = (open(os.path.join(base, "data0.img"), "rb").read()
                == open(os.path.join(base, "data1.img"), "rb").read())
        print(f"the guest synced {count} counter values to its disk meanwhile; data files "
              f"equal after it stopped: {same}")
        print(f"SUMMARY qmirror-migrate runs={runs} downtime_p95_ms={pct(down, 0.95):.1f} "
              f"pause_p95_ms={pct(pause, 0.95):.1f} swap_bytes={sum(swapped)}")
    finally:
        for m in mirrors:
            m.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for d in daemons:
            if d.qmp is not None:
                d.qmp.close()
            pid = d.pid()
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        await children.stop_all()
        for ns in names:
            subprocess.run([IP, "netns", "del", ns], check=False)
        shutil.rmtree(base, True)


if __name__ == "__main__":
    task.react(lambda reactor, *args: defer.ensureDeferred(main(reactor, *args)),
               sys.argv[1:])
