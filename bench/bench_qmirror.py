"""The qemu mirror engine: write cost of the synchronous mirror, resync and role-swap bytes.

Two "nodes" on 127.0.32.1/2, each a qemu-storage-daemon over a file of SIZE
MiB, driven by the engine (ganeti.noded.bdev.qmirror*).  Printed:

- writes through the primary's NBD export while it is not connected (the same
  daemon and export, no mirror: the "plain" baseline) and while it mirrors
  synchronously (copy-mode=write-blocking) to the secondary: 4 KiB writes one
  at a time (mean latency) and 1 MiB writes 16 in flight (throughput), each the
  median of RUNS runs of ``qemu-img bench``; the ratio mirror/plain;
- the bytes the resync copies after DIRTY MiB were written while the secondary
  was dead, against the disk's size;
- the bytes a role swap copies (the old primary stops its ready mirror, the new
  one mirrors back with sync=none).

With META=1 each side also has a 128 MiB metadata volume: the disk is then qcow2
metadata there over the raw data file (persistent bitmaps), in both columns.

Run: .venv/bin/python bench/bench_qmirror.py [SIZE_MIB] [DIRTY_MIB] [RUNS] [META]
"""

import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

from twisted.internet import defer, task

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ganeti.noded.bdev.qmirror import MirrorDaemon, Volume
from ganeti.noded.bdev.qmirror_roles import QemuMirror
from ganeti.noded.procs import ChildProcesses
from tests.noded.qmirrorhelpers import free_port

MIB = 1024 * 1024
IPS = ("127.0.32.1", "127.0.32.2")


async def qemu_img_bench(children, ip, port, count, size, depth, offset=0):
    """Seconds one ``qemu-img bench`` write run takes (its own figure)."""
    argv = [shutil.which("qemu-img"), "bench", "-w", "-f", "raw", "-c", str(count),
            "-d", str(depth), "-s", str(size), "-o", str(offset),
            f"nbd://{ip}:{port}/disk"]
    out = await children.run(argv, timeout=600)
    if not out.ok:
        raise RuntimeError(f"qemu-img bench failed: {out.stdout!r} {out.stderr!r}")
    return float(re.search(rb"completed in ([\d.]+) seconds", out.stdout).group(1))


async def writes(children, ip, port, runs):
    """(mean 4 KiB latency in ms at depth 1, MiB/s of 1 MiB writes at depth 16)."""
    lat, tput = [], []
    for _ in range(runs):
        n = 2000
        lat.append(await qemu_img_bench(children, ip, port, n, 4096, 1) / n * 1000)
        n = 256
        tput.append(n / await qemu_img_bench(children, ip, port, n, MIB, 16))
    return statistics.median(lat), statistics.median(tput)


async def main(reactor, size_mib=256, dirty_mib=32, runs=3, meta=0, writethrough=0):
    size_mib, dirty_mib, runs, meta = int(size_mib), int(dirty_mib), int(runs), int(meta)
    writethrough = bool(int(writethrough))
    base = tempfile.mkdtemp(prefix="qmb", dir="/tmp")
    children = ChildProcesses(reactor, reactor)
    port = free_port(IPS)
    daemons = []
    files = []
    for i, ip in enumerate(IPS):
        path = os.path.join(base, f"data{i}.img")
        with open(path, "wb") as f:
            f.truncate(size_mib * MIB)
        files.append(path)
        meta_volume = None
        if meta:
            with open(os.path.join(base, f"meta{i}.img"), "wb") as f:
                f.truncate(128 * MIB)
            meta_volume = Volume(os.path.join(base, f"meta{i}.img"))
        daemons.append(MirrorDaemon(reactor, reactor, children, os.path.join(base, f"run{i}"),
                                    "bench", Volume(path), ip, port, meta=meta_volume,
                                    peer_writethrough=writethrough))
    a, b = (QemuMirror(d) for d in daemons)
    try:
        for d in daemons:
            await d.start()
        plain = await writes(children, IPS[0], port, runs)
        await a.connect_peer(IPS[1], port, sync="none")
        await a.wait_in_sync(60)
        mirrored = await writes(children, IPS[0], port, runs)
        print(f"4 KiB write latency (depth 1): plain {plain[0]:.3f} ms, mirrored "
              f"{mirrored[0]:.3f} ms, ratio {mirrored[0] / plain[0]:.2f}")
        print(f"1 MiB write throughput (depth 16): plain {plain[1]:.0f} MiB/s, mirrored "
              f"{mirrored[1]:.0f} MiB/s, ratio {mirrored[1] / plain[1]:.2f}")

        await a.rotate()
        os.kill(daemons[1].pid(), signal.SIGKILL)
        await qemu_img_bench(children, IPS[0], port, dirty_mib, MIB, 16,
                             offset=(size_mib - dirty_mib) // 2 * MIB)
        st = await a.status()
        assert not st.connected, st
        await daemons[1].start()
        t0 = time.monotonic()
        copied = await a.connect_peer(IPS[1], port)
        st = await a.wait_in_sync(60)
        took = time.monotonic() - t0
        assert st.in_sync, st
        same = open(files[0], "rb").read() == open(files[1], "rb").read()
        print(f"resync after {dirty_mib} MiB dirty: copied {copied / MIB:.1f} MiB of a "
              f"{size_mib} MiB disk ({100.0 * copied / (size_mib * MIB):.1f} %) in "
              f"{took:.2f} s, contents equal: {same}")

        await a.make_secondary()
        swapped = await b.connect_peer(IPS[0], port, sync="none")
        st = await b.wait_in_sync(60)
        print(f"role swap: copied {swapped} bytes, new primary in sync: {st.in_sync}")
        print(f"SUMMARY qmirror{'-meta' if meta else ''} lat_ratio={mirrored[0] / plain[0]:.2f} "
              f"tput_ratio={mirrored[1] / plain[1]:.2f} resync_mib={copied / MIB:.1f}/"
              f"{size_mib} swap_bytes={swapped}")
    finally:
        a.close()
        b.close()
        for d in daemons:
            pid = d.pid()
            if d.qmp is not None:
                d.qmp.close()
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
        await children.stop_all()
        shutil.rmtree(base, True)


if __name__ == "__main__":
    task.react(lambda reactor, *args: defer.ensureDeferred(main(reactor, *args)),
               sys.argv[1:])
